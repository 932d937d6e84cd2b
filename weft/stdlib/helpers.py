"""Small runtime helpers that generated code calls as ``_wk.<name>``.

Each is a ``numba.njit`` function written in plain Python, so generated modules also run with
``NUMBA_DISABLE_JIT=1`` (for stepping through a kernel in pdb).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

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


#: per-thread accumulation buffers are used while they take at most this many bytes in all
PRIVATE_BUDGET = 64 << 20
# the size of Numba's thread pool (numba.get_num_threads() would make kernels uncacheable);
# kernels also check each thread id against the buffer's length
_POOL = numba.config.NUMBA_NUM_THREADS


def private_ok(a):
    """Whether per-thread copies of ``a`` fit the budget (see ``private_buffer``); False for
    an adjoint array that was not asked for (None)."""
    return a is not None and _POOL * a.size * a.itemsize <= PRIVATE_BUDGET


def private_buffer(a, ok):
    """Zeroed per-thread copies of ``a`` (shape ``(threads,) + a.shape``), or an empty array.

    Kernels that only accumulate into ``a`` add into their thread's copy with plain ``+=`` and
    the copies are summed into ``a`` after the launch: on x86 a float atomic add is a
    compare-and-swap loop, many times dearer than the reduction."""
    if a is None:
        return np.zeros((0, 0), np.float32)
    return np.zeros((_POOL if ok else 0,) + a.shape, a.dtype)


def reduce_private(a, acc):
    """``a += acc.sum(axis=0)``."""
    if a is not None:
        for w in range(acc.shape[0]):
            a += acc[w]


@overload(private_ok, jit_options={"cache": True})
def _private_ok(a):
    if isinstance(a, types.NoneType):
        return lambda a: False
    return lambda a: _POOL * a.size * a.itemsize <= PRIVATE_BUDGET


@overload(private_buffer, jit_options={"cache": True})
def _private_buffer(a, ok):
    if isinstance(a, types.NoneType):
        return lambda a, ok: np.zeros((0, 0), np.float32)
    return lambda a, ok: np.zeros((_POOL if ok else 0,) + a.shape, a.dtype)


@numba.njit(parallel=True, cache=True, nogil=True)
def _reduce(a, acc):
    for w in range(acc.shape[0]):
        a += acc[w]


@overload(reduce_private, jit_options={"cache": True})
def _reduce_private(a, acc):
    if isinstance(a, types.NoneType):
        return lambda a, acc: None
    return lambda a, acc: _reduce(a, acc)
