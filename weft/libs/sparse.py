"""Stands for ``warp.sparse``, which weft does not provide: importing it raises ImportError."""
from .unsupported import refuse

refuse("sparse")
