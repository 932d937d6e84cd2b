"""Small runtime helpers that generated code calls as ``_wk.<name>``.

Each is a ``numba.njit`` function written in plain Python, so generated modules also run with
``NUMBA_DISABLE_JIT=1`` (for stepping through a kernel in pdb).
"""
from __future__ import annotations

import threading

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from numba.np.ufunc.parallel import _launch_threads

from ..core.diskcache import njit
from . import _portable
from . import threads as _threads
from .threads import PRIVATE_BUDGET, _POOL, chunk  # noqa: F401
from .vectorise import assume_shape, nonneg  # noqa: F401
from .atomics import (atomic_add, atomic_and, atomic_cas, atomic_exch, atomic_max, atomic_min,  # noqa: F401
    atomic_or, atomic_sub, atomic_xor, cas_half_bits)

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
if numba.config.DISABLE_JIT:
    tuple_setitem = _portable.tuple_setitem_py
else:
    from numba.cpython.unsafe.tuple import tuple_setitem
_portable.bind_composed(globals(), _jit)  # float16 rounding and atomics, tuple_insert


def _bind_geometry():
    """The geometry queries by id (``_wk.geo_*``): compiled lazily like every helper, without
    Numba's reference counting (measured 3x faster samples) and with the iterator steps
    inlined into kernels. Each query's dispatcher is made at its first lookup here
    (:func:`__getattr__`), the cores it calls at theirs."""
    from .geometry import kernel_api
    if numba.config.DISABLE_JIT:
        return kernel_api.bind(globals(), "python")
    return kernel_api.bind(globals(), "cpu", njit(error_model="numpy", nogil=True, _nrt=False),
                           njit(error_model="numpy", nogil=True, _nrt=False, inline="always"),
                           lazy=True)


_geometry_lock = threading.Lock()
_geometry_bound = []  # [the queries' namespace] once bound


def use_geometry():
    """Bind the geometry queries (``_wk.geo_*``) if they are not yet (their namespace: the
    queries and the cores they call, each made at its first lookup). A generated module whose
    kernels call them calls this at its import (``assemble._geometry_binding``): binding
    from inside Numba's compile, at the first typing of ``_wk.geo_*``, left the queries'
    globals unresolved."""
    with _geometry_lock:
        if not _geometry_bound:
            _geometry_bound.append(_bind_geometry())
    return _geometry_bound[0]


def __getattr__(name):
    """The geometry queries (``_wk.geo_*``, made at their first lookup and kept here), and
    the fast-math functions (``_wk.fm_sin``, imported on first use)."""
    if name.startswith("fm_"):
        from .fastmath import FAST
        if name[3:] in FAST:
            globals()[name] = FAST[name[3:]]  # found here from now on
            return FAST[name[3:]]
    if name.startswith("tile_"):  # the tile helpers, imported by the first tile kernel
        from . import tiles
        if name in tiles.TILE_HELPERS:
            globals().update({n: getattr(tiles, n) for n in tiles.TILE_HELPERS})
            return globals()[name]
    from .geometry.kernel_api import PORTABLE
    if name in PORTABLE or name.startswith("geo_vol_"):
        api = use_geometry()
        if name in globals():  # (bound into this module: no compiler)
            return globals()[name]
        if name in api.exported:
            globals()[name] = value = api[name]
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def private_ok(a):
    """Whether per-thread copies of ``a`` fit the budget (see ``private_buffer``); False for
    an adjoint array that was not asked for (None)."""
    return a is not None and (_POOL - 1) * a.size * a.itemsize <= PRIVATE_BUDGET


def private_buffer(a, ok):
    """Zeroed per-thread copies of ``a`` for every thread but the first (shape
    ``(threads - 1,) + a.shape``), or an empty array.

    Kernels that only accumulate into ``a`` add with plain ``+=``: thread 0 into ``a`` itself,
    every other thread ``w`` into its copy ``acc[w - 1]``, and the copies are summed into ``a``
    after the launch. On x86 a float atomic add is a compare-and-swap loop, many times dearer
    than the reduction; with one thread there is nothing to copy or sum. (Compiled code calls
    :func:`weft.native.threads.private_buffer`.)"""
    if a is None:
        return np.zeros((0, 0), np.float32)
    return np.zeros((_POOL - 1 if ok else 0,) + a.shape, a.dtype)


def thread_id():
    """The calling thread's index in Numba's pool (0 outside a parallel region)."""
    return 0


@intrinsic
def _thread_id(typingctx):
    # numba.get_thread_id() declares the threading layer's get_thread_id as an ordinary external
    # function, called again for every launch index (about 15% of a short kernel body); the
    # value never changes within a thread, so declared without side effects LLVM hoists it out
    # of the loop
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(cgutils.intp_t, []),
                                            "get_thread_id")
        fn.attributes.add("readnone")
        fn.attributes.add("nounwind")
        return builder.call(fn, [])
    return types.intp(), codegen


def reduce_private(a, acc):
    """``a += acc.sum(axis=0)``."""
    if a is not None:
        for w in range(acc.shape[0]):
            a += acc[w]


# compiled code calls the intrinsics themselves (an overload compiles a function of its own for
# every signature); the Python functions above run the generated code under NUMBA_DISABLE_JIT
parallel_for = _threads.parallel_for_py
if not numba.config.DISABLE_JIT:
    thread_id = _thread_id  # noqa: F811
    private_ok = _threads.private_ok  # noqa: F811
    private_buffer = _threads.private_buffer  # noqa: F811
    parallel_for = _threads.parallel_for
    reduce_private = _threads.reduce_private  # noqa: F811
    launch_size = _threads.launch_size  # noqa: F811
    first_index = _threads.first_index  # noqa: F811
