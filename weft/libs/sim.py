"""Stands for ``warp.sim``, which weft does not provide: importing it raises ImportError."""
from .unsupported import refuse

refuse("sim")
