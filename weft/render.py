"""Stands for ``warp.render``, which weft does not provide: importing it raises ImportError."""
from ._unsupported import refuse

refuse("render")
