"""Small runtime helpers that generated code calls as ``_wk.<name>``.

Each is a ``numba.njit`` function written in plain Python, so generated modules also run with
``NUMBA_DISABLE_JIT=1`` (for stepping through a kernel in pdb).
"""
from __future__ import annotations

import numba
import numpy as np

from .atomics import (atomic_add, atomic_cas, atomic_exch, atomic_max,  # noqa: F401
                      atomic_min, atomic_sub)

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def launch_size(dim):
    n = 1
    for d in dim:
        n *= d
    return n


@_jit
def trip_count(start, stop, step):
    """``len(range(start, stop, step))``."""
    if step > 0:
        n = (stop - start + step - 1) // step
    else:
        n = (start - stop - step - 1) // (-step)
    return max(n, 0)


@_jit
def grow(stack):
    """A stack twice as long holding the same first entries (for while-loop recording)."""
    out = np.empty((stack.shape[0] * 2,) + stack.shape[1:], stack.dtype)
    out[:stack.shape[0]] = stack
    return out


@_jit
def int_div_trunc(a, b):
    """C integer division (truncates toward zero); division by zero gives 0."""
    if b == 0:
        return a - a
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@_jit
def int_div(a, b):
    """Integer ``//``: C division, truncating toward zero, as Warp."""
    return int_div_trunc(a, b)


@_jit
def int_mod(a, b):
    """C integer remainder (sign of ``a``); remainder by zero gives 0."""
    if b == 0:
        return a - a
    return a - int_div_trunc(a, b) * b


@_jit
def round_half_away(x):
    """C ``round``: halves round away from zero."""
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


@_jit
def tuple_eq(a, b):
    for i in range(len(a)):
        if a[i] != b[i]:
            return False
    return True


@_jit
def tuple_ne(a, b):
    return not tuple_eq(a, b)
