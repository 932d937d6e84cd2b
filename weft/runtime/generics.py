"""Generic kernels: parameters annotated ``Any``, ``wp.Float``, ``wp.array(dtype=Any)`` or
``vector(length=Any, ...)`` take the types of the arguments they are launched with, and the
kernel is compiled once per combination (as Warp's implicit overloads)::

    @wp.kernel
    def fill(a: wp.array(dtype=Any), value: Any):
        a[wp.tid()] = value

    wp.launch(fill, 4, inputs=[wp.zeros(4, dtype=wp.vec3), wp.vec3(1.0, 2.0, 3.0)])
"""
from __future__ import annotations

import numpy as np

from ..core import types as T
from ..core.errors import LaunchError
from .array import array


def argument_type(value):
    """The kernel type of a launch argument (None when it has none)."""
    if isinstance(value, array):
        return T.ArrayType(value.dtype, value.ndim)
    if isinstance(value, np.generic):  # before float: numpy.float64 is a float
        try:
            return T.as_scalar_type(value.dtype)
        except TypeError:
            return None
    if isinstance(value, bool):
        return T.bool
    if isinstance(value, int):
        return T.int32
    if isinstance(value, float):
        return T.float32
    if T.is_composite(type(value)) or T.is_struct(type(value)):
        return type(value)
    return None


def concrete_params(kernel_key, declared, args):
    """The concrete type of each parameter for a launch with ``args`` (a LaunchError when an
    argument does not fit its generic annotation)."""
    if len(args) != len(declared):
        raise LaunchError(f"kernel '{kernel_key}' takes {len(declared)} arguments "
                          f"({', '.join(n for n, _ in declared)}), got {len(args)}")
    out = []
    for (name, t), value in zip(declared, args):
        if t is not None and not _generic(t):
            out.append(t)
            continue
        actual = argument_type(value)
        if actual is None or not _fits(t, actual):
            raise LaunchError(f"kernel '{kernel_key}' argument '{name}': a "
                              f"{type(value).__name__} does not fit the generic parameter "
                              f"type {t if t is not None else 'Any'}")
        out.append(actual)
    return tuple(out)


def _generic(t):
    from ..transpiler.abi import is_generic
    return is_generic(t)


def _fits(t, actual):
    from ..transpiler.abi import fits
    return fits(t, actual)
