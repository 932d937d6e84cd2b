"""Small runtime helpers that generated code calls as ``_wk.<name>``.

Each is a ``numba.njit`` function written in plain Python, so generated modules also run with
``NUMBA_DISABLE_JIT=1`` (for stepping through a kernel in pdb).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from numba.np.ufunc.parallel import _launch_threads

from ..diskcache import njit
from . import _portable
from .atomics import (atomic_add, atomic_and, atomic_cas, atomic_exch,  # noqa: F401
                      atomic_max, atomic_min, atomic_or, atomic_sub, atomic_xor,
                      cas_half_bits)

# Numba registers its threading layer's entry points (``get_thread_id``, ``do_scheduling``, ...)
# with LLVM only when that layer is launched: at the compile of a ``parallel=True`` function, or
# at the load of a cached one. Cached code that reaches them otherwise (a serial kernel asking
# for its thread id, a cached function calling a parallel helper) is linked, in a new process,
# against symbols that do not exist yet and jumps to address 0. Every generated CPU module
# imports this module first, so launching the layer here (about 3 ms) makes those symbols
# exist before any cached kernel is loaded.
_launch_threads()

_jit = njit(error_model="numpy", nogil=True)  # cached in weft's verified cache

for _name in _portable.PORTABLE:
    globals()[_name] = _jit(getattr(_portable, _name))
_portable.bind_composed(globals(), _jit)  # float16 rounding and atomics


def _bind_geometry():
    """The geometry queries by id (``_wk.geo_*``): compiled lazily like every helper, without
    Numba's reference counting (measured 3x faster samples) and with the iterator steps
    inlined into kernels."""
    from ..geometry import kernel_api
    if numba.config.DISABLE_JIT:
        return kernel_api.bind(globals(), "python")
    return kernel_api.bind(globals(), "cpu", njit(error_model="numpy", nogil=True, _nrt=False),
                           njit(error_model="numpy", nogil=True, _nrt=False, inline="always"))


_bind_geometry()


@_jit
def grow(stack):
    """A stack twice as long holding the same first entries (for while-loop recording)."""
    out = np.empty((stack.shape[0] * 2,) + stack.shape[1:], stack.dtype)
    out[:stack.shape[0]] = stack
    return out


@_jit
def round_half_away(x):
    """C ``round``: halves round away from zero."""
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


#: per-thread accumulation buffers are used while they take at most this many bytes in all
PRIVATE_BUDGET = 64 << 20
# the size of Numba's thread pool (numba.get_num_threads() would make kernels uncacheable);
# kernels also check each thread id against the buffer's length
_POOL = numba.config.NUMBA_NUM_THREADS


def private_ok(a):
    """Whether per-thread copies of ``a`` fit the budget (see ``private_chunk``); False for
    an adjoint array that was not asked for (None)."""
    return a is not None and _POOL * a.size * a.itemsize <= PRIVATE_BUDGET


def private_chunk(a, ok, worker):
    """The rows a kernel chunk run by ``worker`` accumulates into (it adds into row 0): ``a``
    itself, viewed with a leading axis of one, for worker 0 when ``a`` is contiguous (no other
    worker writes it during the launch); otherwise a zeroed private copy of shape
    ``(1,) + a.shape``; no rows when ``not ok`` (the kernel then uses atomics).

    Kernels that only accumulate into ``a`` add with plain ``+=`` and the launcher sums the
    copies into ``a`` after the join (``add_private``): on x86 a float atomic add is a
    compare-and-swap loop, many times dearer than the sum."""
    if a is None:
        return np.zeros((0, 0), np.float32)
    if ok and worker == 0 and a.flags.c_contiguous:
        return a.reshape((1,) + a.shape)
    return np.zeros((1 if ok else 0,) + a.shape, a.dtype)


def private_result(a, acc, worker):
    """What the launcher adds into ``a`` from a chunk's ``acc``: nothing (no rows) when
    ``acc`` is ``a`` itself."""
    if a is None:
        return acc
    return acc[:0 if worker == 0 and a.flags.c_contiguous else acc.shape[0]]


def add_private(a, acc):
    """After a launch: ``a += acc[0]`` when the worker had a private copy (Python scope)."""
    if a is not None and acc.shape[0]:
        a += acc[0]


@overload(private_ok)
def _private_ok(a):
    if isinstance(a, types.NoneType):
        return lambda a: False
    return lambda a: _POOL * a.size * a.itemsize <= PRIVATE_BUDGET


@overload(private_chunk)
def _private_chunk(a, ok, worker):
    if isinstance(a, types.NoneType):
        return lambda a, ok, worker: np.zeros((0, 0), np.float32)
    if a.layout == "C":
        def impl(a, ok, worker):
            if ok and worker == 0:
                return a.reshape((1,) + a.shape)
            return np.zeros((1 if ok else 0,) + a.shape, a.dtype)
        return impl
    return lambda a, ok, worker: np.zeros((1 if ok else 0,) + a.shape, a.dtype)


@overload(private_result)
def _private_result(a, acc, worker):
    if isinstance(a, types.NoneType) or a.layout != "C":
        return lambda a, acc, worker: acc
    return lambda a, acc, worker: acc[:0 if worker == 0 else acc.shape[0]]


def threads(fn, dim, *args):
    """Run kernel chunk function ``fn`` over launch ``dim`` on every core (see
    :mod:`weft.stdlib.pool`); returns each worker's result."""
    from .pool import run
    return run(fn, dim, args)
