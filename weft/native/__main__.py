"""``python -m weft.native build|status``: weft's shipped machine code (see ``shipped``)."""
import sys

from .shipped import main

sys.exit(main())
