"""weft's version (one place: setup.cfg reads it too)."""
__version__ = "0.1.0"
