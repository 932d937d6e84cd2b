"""Builtins usable inside kernels, each declared once with its derivative rules.

Importing this package registers every builtin in :data:`registry.REGISTRY`.
"""
from . import registry  # noqa: F401
from . import arith, lang, random, scalar, vector  # noqa: F401  (registration side effects)
