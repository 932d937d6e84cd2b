"""The CUDA twins of :mod:`weft.native.helpers`: device functions generated CUDA modules call as
``_wk.<name>``.

Math goes through libdevice with the precision of the argument (``sqrt_f32`` ->
``libdevice.sqrtf``), because numba-cuda has no numpy ufuncs on scalars. Under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) libdevice does not exist, so the same names are bound to
numpy functions, which compute the same values in Python.
"""
from __future__ import annotations

import math

import numpy as np
from numba import config, cuda

from . import _portable

_dev = cuda.jit(device=True, inline="always")


def _shared_dtypes():
    """Numba's scalar types by numpy's names, as ``shared_<name>``: the dtypes of a block's
    dynamic shared memory (``cuda.shared.array(0, _wk.shared_float32)``: Numba's simulator
    sizes a dynamic array from a Numba type or a numpy dtype, not from numpy's classes)."""
    from numba import types
    ns = globals()
    for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64"):
        ns[f"shared_{n}"] = getattr(types, n)
    ns["shared_bool_"] = types.boolean


_shared_dtypes()

from .vocabulary import ARITY2 as _ARITY2, MATH  # noqa: E402


def _bind_math():
    ns = globals()
    if config.ENABLE_CUDASIM:
        for np_name in MATH:
            fn = getattr(np, np_name)
            ns[f"{np_name}_f32"] = fn
            ns[f"{np_name}_f64"] = fn
        return
    from numba.cuda import libdevice
    for np_name, base in MATH.items():
        for suffix, name in (("f32", base + "f"), ("f64", base)):
            target = getattr(libdevice, name)
            if np_name in _ARITY2:
                ns[f"{np_name}_{suffix}"] = _dev(_two(target))
            else:
                ns[f"{np_name}_{suffix}"] = _dev(_one(target))


def _one(f):
    def g(x):
        return f(x)
    return g


def _two(f):
    def g(x, y):
        return f(x, y)
    return g


_bind_math()

for _name in _portable.PORTABLE:
    globals()[_name] = _dev(getattr(_portable, _name))

if config.ENABLE_CUDASIM:
    from .atomics import cas_half_bits  # its pure-Python path: the simulator is serial
else:
    from .atomics import cas_half_word

    @_dev
    def cas_half_bits(arr, idx, compare, value):
        return cas_half_word(arr, idx, compare, value)
if config.ENABLE_CUDASIM:
    tuple_setitem = _portable.tuple_setitem_py
else:
    from numba.cuda.cpython.unsafe.tuple import tuple_setitem
_portable.bind_composed(globals(), _dev)  # float16 rounding and atomics, tuple_insert


def _bind_geometry():
    """The geometry queries by id (``_wk.geo_*``) as device functions (plain Python under the
    simulator, where the views find the registered arrays)."""
    from .geometry import kernel_api
    if config.ENABLE_CUDASIM:
        return kernel_api.bind(globals(), "python")
    # device functions called, not inlined at Numba's IR level (inlining the cores into every
    # entry made PTX compiles take minutes); NVVM still inlines what pays
    return kernel_api.bind(globals(), "cuda", cuda.jit(device=True))


_bind_geometry()


@_dev
def stack_slot(i, capacity, err):
    """Index ``i`` of a per-thread stack of ``capacity`` entries; flags ``err`` on overflow
    and returns a valid index so nothing is written out of bounds."""
    if i >= capacity:
        err[0] = 1
        return capacity - 1
    return i


@_dev
def round_half_away(x):
    return math.copysign(math.floor(abs(x) + 0.5), x)


def _atomic(name, call):
    """Device function ``name(arr, idx, value)`` returning ``call(arr, idx, value)`` (``call``
    as written in this module), generated: numba-cuda does not resolve a closure's captured
    stub, and the simulator binds ``cuda.atomic`` only while a kernel runs."""
    exec(f"def {name}(arr, idx, value):\n    return {call}(arr, idx, value)\n",  # noqa: S102
         globals())
    return _dev(globals()[name])


if not config.ENABLE_CUDASIM:
    from .atomics import RMW  # floats too (numba-cuda's exch takes integers only)

    _exch = RMW["exch"]

atomic_add = _atomic("atomic_add", "cuda.atomic.add")
atomic_sub = _atomic("atomic_sub", "cuda.atomic.sub")
atomic_min = _atomic("atomic_min", "cuda.atomic.min")
atomic_max = _atomic("atomic_max", "cuda.atomic.max")
atomic_exch = _atomic("atomic_exch", "cuda.atomic.exch" if config.ENABLE_CUDASIM else "_exch")
atomic_and = _atomic("atomic_and", "cuda.atomic.and_")
atomic_or = _atomic("atomic_or", "cuda.atomic.or_")
atomic_xor = _atomic("atomic_xor", "cuda.atomic.xor")


if config.ENABLE_CUDASIM:
    @_dev
    def atomic_cas(arr, idx, compare, value):
        return cuda.atomic.cas(arr, idx, compare, value)
else:
    from .atomics import _cas_intrinsic  # cmpxchg, floats through their bits (as the CPU)

    @_dev
    def atomic_cas(arr, idx, compare, value):
        return _cas_intrinsic(arr, idx, compare, value)


from . import cuda_tiles as _cuda_tiles  # noqa: E402 - the cooperative tile operations

for _n in ("h2f", "f2h", "atomic_add_f16", "atomic_exch"):  # the helpers bound above
    setattr(_cuda_tiles, _n, globals()[_n])


from . import cuda_tile_algebra as _cuda_tile_algebra  # noqa: E402
from . import cuda_tile_elements as _cuda_tile_elements  # noqa: E402
from . import cuda_tile_order as _cuda_tile_order  # noqa: E402

#: the modules of the cooperative tile operations
_TILE_MODULES = (_cuda_tiles, _cuda_tile_elements, _cuda_tile_algebra, _cuda_tile_order)

#: the pure ones among the calls the pass ``cuda_tiles`` writes (the others write their first
#: argument or its array, or synchronise the block)
_PURE_TILE_CALLS = ("tile_lane", "tile_lanes", "block_index", "tile_sum_scalar", "tile_sum_in_order",
                    "tile_max_scalar", "tile_min_scalar", "tile_view")


#: the calls the generators write into CUDA tile code that the pass ``cuda_tiles`` always
#: replaces (or refuses the function), with what it writes instead: each thread's element
#: writes (``t[i, j] += x``, ``&=``..., the scatters) and a tile stack's making. No module
#: defines them: generated code that runs never calls them.
PASS_FORMS = {"tile_add_at": "tile_add_at_into", "tile_set_at": "tile_set_at_into",
              "tile_zero_at_masked": "tile_zero_at_masked_into",
              "tile_and_at": "tile_and_at_into", "tile_or_at": "tile_or_at_into",
              "tile_xor_at": "tile_xor_at_into", "tile_stack_make": "tile_stack_init"}


def _register_tile_calls():
    """Every call the pass ``cuda_tiles`` writes into generated CUDA code (the functions of
    :data:`_TILE_MODULES`, and the shared buffers) joins :data:`weft.native.vocabulary.CALLS`
    here (the vocabulary itself, part of the shipped store's fingerprint, stays the CPU's)."""
    from . import vocabulary
    names = sorted({n for m in _TILE_MODULES
                    for n, v in vars(m).items()
                    if (n.startswith("tile_") or n == "block_index") and callable(v)})
    entries = [(f"_wk.{n}", n in _PURE_TILE_CALLS) for n in names]
    written = [(f"_wk.{n}", True) for n in PASS_FORMS]
    for spelled, pure in entries + written + [("cuda.shared.array", False)]:
        vocabulary.CALLS.setdefault(spelled, vocabulary.Entry(spelled, pure, None,
                                                              target="cuda"))


_register_tile_calls()

for _module in _TILE_MODULES:
    globals().update({_n: getattr(_module, _n) for _n in dir(_module)
                      if _n.startswith("tile_") or _n == "block_index"})
