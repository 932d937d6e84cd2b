"""Stands for ``warp.fem``, which weft does not provide: importing it raises ImportError."""
from .unsupported import refuse

refuse("fem")
