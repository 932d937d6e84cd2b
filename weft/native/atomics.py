"""Atomic read-modify-write on array elements for CPU kernels.

Why this module exists: Numba has no CPU atomics (``numba.cuda.atomic`` is CUDA-only), and Warp
kernels accumulate into shared arrays from many threads. These functions therefore emit LLVM
``atomicrmw`` / ``cmpxchg`` through ``numba.extending.intrinsic`` and are reachable from ``njit``
code (``parallel=True``, ``cache=True``) through ``numba.extending.overload``.

* ``atomic_add`` / ``atomic_sub`` / ``atomic_min`` / ``atomic_max`` / ``atomic_exch`` and, on
  integer arrays, ``atomic_and`` / ``atomic_or`` / ``atomic_xor``
  ``(arr, idx, value)`` and ``atomic_cas(arr, idx, compare, value)`` update ``arr[idx]`` and
  return its OLD value (``atomic_cas`` stores ``value`` only where the old value equals
  ``compare``).
* ``arr``: an array of any ndim and layout (C, F or strided views; the element address comes from
  the strides), of float32/float64 or any integer dtype. ``idx``: an integer for 1-D arrays, else
  a tuple of integers (any mix of widths), one per dimension. ``value`` / ``compare`` are cast to
  the array's dtype first (as a store ``arr[idx] = value`` would: floats truncate into ints, ints
  wrap).
* Bounds are not checked and negative indices do not wrap around, as with Numba's default
  indexing; with ``NUMBA_BOUNDSCHECK=1`` they raise ``IndexError`` (a caller's
  ``boundscheck=True`` option does not reach into overloads).
* Ordering is ``monotonic`` (C++ ``relaxed``, like CUDA's atomics): each element sees one total
  order of updates, nothing more. A prange loop joins its threads before it returns anyway.
* Cost: on x86 integer ops are single ``lock`` instructions, but LLVM expands a float
  ``atomicrmw fadd``/``fsub`` into a compare-and-swap loop, so contended float atomics are slow;
  the transpiler uses plain ``+=`` where an index is provably the thread's own.
* Float min/max are a ``cmpxchg`` loop on the bit pattern that stores ``value`` only while
  ``value < old`` (``>`` for max), exactly Warp's CUDA implementation: a NaN ``value`` is ignored,
  a NaN already in memory stays, and -0.0 does not replace 0.0 (nor the reverse). LLVM's own
  ``atomicrmw fmin``/``fmax`` would follow ``minnum`` instead and overwrite a stored NaN.
* Without the JIT (``NUMBA_DISABLE_JIT=1``) they are plain, NON-atomic Python with the same
  results for serial execution; that path is for stepping through kernels in a debugger.

Example::

    import numba, numpy as np
    from weft.native.atomics import atomic_add

    @numba.njit(parallel=True)
    def histogram(bins, out):
        for i in numba.prange(bins.shape[0]):
            atomic_add(out, bins[i], 1)

    out = np.zeros(4, np.int64)
    histogram(np.array([0, 1, 1, 3]), out)   # out == [1, 2, 0, 1]
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

ORDERING = "monotonic"

# op -> atomicrmw operation for (float, signed int, unsigned int); None: a cmpxchg loop
_RMW = {
    "add": ("fadd", "add", "add"),
    "sub": ("fsub", "sub", "sub"),
    "min": (None, "min", "umin"),
    "max": (None, "max", "umax"),
    "exch": ("xchg", "xchg", "xchg"),
    "and": (None, "and", "and"),   # bitwise: integer arrays only (see _register)
    "or": (None, "or", "or"),
    "xor": (None, "xor", "xor"),
}


# ------------------------------------------------------------------------------------- typing
def _supported(arr, idx, *values):
    """Whether these Numba types can take an atomic: a writable numeric array, one integer index
    per dimension and real-number operands."""
    if not isinstance(arr, types.Array) or not arr.mutable:
        return False
    dt = arr.dtype
    if not (isinstance(dt, types.Integer) or dt in (types.float32, types.float64)):
        return False
    parts = tuple(idx) if isinstance(idx, types.BaseTuple) else (idx,)
    return (len(parts) == arr.ndim and all(isinstance(t, types.Integer) for t in parts)
            and all(isinstance(v, (types.Integer, types.Float, types.Boolean)) for v in values))


# ------------------------------------------------------------------------------------ codegen
def _element_pointer(context, builder, arrty, arr, idx_ty, idx):
    """Address of ``arr[idx]`` (strides for non-contiguous layouts); no wraparound."""
    ary = context.make_array(arrty)(context, builder, arr)
    if isinstance(idx_ty, types.BaseTuple):
        indices = [context.cast(builder, builder.extract_value(idx, i), t, types.intp)
                   for i, t in enumerate(idx_ty)]
    else:
        indices = [context.cast(builder, idx, idx_ty, types.intp)]
    shapes = cgutils.unpack_tuple(builder, ary.shape, arrty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, arrty.ndim)
    return cgutils.get_item_pointer2(context, builder, ary.data, shapes, strides, arrty.layout,
                                     indices, wraparound=False,
                                     boundscheck=context.enable_boundscheck)


def _float_minmax(builder, ptr, value, op, bits):
    """``min``/``max`` of floats as a compare-and-swap loop on the integer bit pattern:

        old = atomic load *ptr
        while value < old:                      # '>' for max; false for NaNs
            old, ok = cmpxchg(*ptr, old, value)
            if ok: break
        return old
    """
    ity = llir.IntType(bits)
    iptr = builder.bitcast(ptr, ity.as_pointer())
    start = builder.load_atomic(iptr, ORDERING, bits // 8, typ=ity)
    entry = builder.block
    loop = builder.append_basic_block("atomic_minmax.loop")
    swap = builder.append_basic_block("atomic_minmax.swap")
    done = builder.append_basic_block("atomic_minmax.done")
    ivalue = builder.bitcast(value, ity)
    builder.branch(loop)

    builder.position_at_end(loop)
    old = builder.phi(ity)
    old.add_incoming(start, entry)
    better = builder.fcmp_ordered("<" if op == "min" else ">", value,
                                  builder.bitcast(old, value.type))
    builder.cbranch(better, swap, done)

    builder.position_at_end(swap)
    res = builder.cmpxchg(iptr, old, ivalue, ORDERING, ORDERING)
    old.add_incoming(builder.extract_value(res, 0), swap)
    builder.cbranch(builder.extract_value(res, 1), done, loop)

    builder.position_at_end(done)  # on success the value seen was `old` itself
    return builder.bitcast(old, value.type)


def _rmw_intrinsic(op):
    @intrinsic
    def rmw(typingctx, arr, idx, value):
        if not _supported(arr, idx, value):
            return None
        dt = arr.dtype

        def codegen(context, builder, signature, args):
            ptr = _element_pointer(context, builder, arr, args[0], idx, args[1])
            v = context.cast(builder, args[2], value, dt)
            fop, sop, uop = _RMW[op]
            if isinstance(dt, types.Float):
                if fop is None:
                    return _float_minmax(builder, ptr, v, op, dt.bitwidth)
                if op == "exch":  # through the integer bits (NVVM's xchg takes integers)
                    ity = llir.IntType(dt.bitwidth)
                    old = builder.atomic_rmw("xchg", builder.bitcast(ptr, ity.as_pointer()),
                                             builder.bitcast(v, ity), ORDERING)
                    return builder.bitcast(old, v.type)
                return builder.atomic_rmw(fop, ptr, v, ORDERING)
            return builder.atomic_rmw(sop if dt.signed else uop, ptr, v, ORDERING)

        return dt(arr, idx, value), codegen

    rmw.__name__ = f"_atomic_{op}_intrinsic"
    return rmw


@intrinsic
def _cas_intrinsic(typingctx, arr, idx, compare, value):
    if not _supported(arr, idx, compare, value):
        return None
    dt = arr.dtype

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, arr, args[0], idx, args[1])
        c = context.cast(builder, args[2], compare, dt)
        v = context.cast(builder, args[3], value, dt)
        if isinstance(dt, types.Float):  # cmpxchg takes integers: compare bit patterns
            ity = llir.IntType(dt.bitwidth)
            res = builder.cmpxchg(builder.bitcast(ptr, ity.as_pointer()), builder.bitcast(c, ity),
                                  builder.bitcast(v, ity), ORDERING, ORDERING)
            return builder.bitcast(builder.extract_value(res, 0), c.type)
        res = builder.cmpxchg(ptr, c, v, ORDERING, ORDERING)
        return builder.extract_value(res, 0)

    return dt(arr, idx, compare, value), codegen


@intrinsic
def cas_half_word(typingctx, arr, idx, compare, value):
    """Compare-and-swap of a 16-bit element (float16 arrays are uint16 views in kernels)
    through the aligned 32-bit word that holds it, since NVVM has no 16-bit ``cmpxchg``; the
    CPU uses the same code, so its tests cover the CUDA path. Returns the old element. The
    other half of the word is written back unchanged within the same atomic swap, so a
    concurrent update of the neighbouring element makes the swap fail and retry, never lost.
    Little-endian (x86, NVIDIA GPUs): the element at the lower address is the low half."""
    if not (_supported(arr, idx, compare, value) and arr.dtype.bitwidth == 16):
        return None
    dt = arr.dtype

    def codegen(context, builder, signature, args):
        i16, i32, i64 = llir.IntType(16), llir.IntType(32), llir.IntType(64)
        ptr = _element_pointer(context, builder, arr, args[0], idx, args[1])
        expected = context.cast(builder, args[2], compare, dt)
        new = builder.zext(context.cast(builder, args[3], value, dt), i32)
        addr = builder.ptrtoint(ptr, i64)
        word_ptr = builder.inttoptr(builder.and_(addr, i64(~3)), i32.as_pointer())
        shift = builder.trunc(builder.mul(builder.and_(addr, i64(2)), i64(8)), i32)
        keep = builder.xor(builder.shl(i32(0xFFFF), shift), i32(-1))
        # an atomic read of the word (NVVM rejects ``load atomic``; an ``or`` with 0 is one)
        start = builder.atomic_rmw("or", word_ptr, i32(0), ORDERING)
        entry = builder.block
        loop = builder.append_basic_block("cas_half.loop")
        swap = builder.append_basic_block("cas_half.swap")
        done = builder.append_basic_block("cas_half.done")
        builder.branch(loop)

        builder.position_at_end(loop)
        word = builder.phi(i32)
        word.add_incoming(start, entry)
        current = builder.trunc(builder.lshr(word, shift), i16)
        builder.cbranch(builder.icmp_unsigned("==", current, expected), swap, done)

        builder.position_at_end(swap)
        res = builder.cmpxchg(word_ptr, word, builder.or_(builder.and_(word, keep),
                                                          builder.shl(new, shift)),
                              ORDERING, ORDERING)
        word.add_incoming(builder.extract_value(res, 0), swap)
        builder.cbranch(builder.extract_value(res, 1), done, loop)

        builder.position_at_end(done)  # after a successful swap `current` is `expected`
        return current

    return dt(arr, idx, compare, value), codegen


# ----------------------------------------------------------------- pure-Python (no-JIT) path
def _as_dtype(arr, value):
    """``value`` as ``arr``'s scalar type, with the JIT's C-style cast (wrap, truncate)."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(arr.dtype)[()]


def _python(op):
    def fn(arr, idx, value):
        old = arr[idx]
        value = _as_dtype(arr, value)
        with np.errstate(over="ignore"):  # integers wrap silently, as compiled
            if op == "add":
                arr[idx] = old + value
            elif op == "sub":
                arr[idx] = old - value
            elif op == "min":
                arr[idx] = value if value < old else old
            elif op == "max":
                arr[idx] = value if value > old else old
            elif op == "and":
                arr[idx] = old & value
            elif op == "or":
                arr[idx] = old | value
            elif op == "xor":
                arr[idx] = old ^ value
            else:
                arr[idx] = value
        return old

    what = {"add": "arr[idx] + value", "sub": "arr[idx] - value", "exch": "value",
            "min": "min(arr[idx], value)", "max": "max(arr[idx], value)",
            "and": "arr[idx] & value", "or": "arr[idx] | value", "xor": "arr[idx] ^ value"}[op]
    fn.__name__ = fn.__qualname__ = f"atomic_{op}"
    fn.__doc__ = f"Atomically ``arr[idx] = {what}``; returns the old ``arr[idx]``."
    return fn


atomic_add = _python("add")
atomic_sub = _python("sub")
atomic_min = _python("min")
atomic_max = _python("max")
atomic_exch = _python("exch")
atomic_and = _python("and")
atomic_or = _python("or")
atomic_xor = _python("xor")


def atomic_cas(arr, idx, compare, value):
    """Atomically ``if arr[idx] == compare: arr[idx] = value``; returns the old ``arr[idx]``.

    Floats compare bit patterns (as compiled): a NaN matches the identical NaN, -0.0 not 0.0."""
    old = arr[idx]
    if np.asarray(old).tobytes() == np.asarray(_as_dtype(arr, compare)).tobytes():
        arr[idx] = _as_dtype(arr, value)
    return old


def cas_half_bits(arr, idx, compare, value):
    """Atomically ``if arr[idx] == compare: arr[idx] = value`` on a 16-bit integer array
    (through its 32-bit word when compiled, see ``cas_half_word``); returns the old value."""
    old = arr[idx]
    if old == compare:
        arr[idx] = value
    return old


# ------------------------------------------------------------------------ Numba registrations
def _register(fn, impl, integers_only=False):
    @overload(fn, jit_options={"nogil": True})
    def _ov(arr, idx, value):
        if _supported(arr, idx, value) and not (
                integers_only and not isinstance(arr.dtype, types.Integer)):
            return lambda arr, idx, value: impl(arr, idx, value)


RMW = {}  # op -> its intrinsic (the CUDA target uses "exch": floats through their bits)
for _op, _fn in (("add", atomic_add), ("sub", atomic_sub), ("min", atomic_min),
                 ("max", atomic_max), ("exch", atomic_exch), ("and", atomic_and),
                 ("or", atomic_or), ("xor", atomic_xor)):
    RMW[_op] = _rmw_intrinsic(_op)
    _register(_fn, RMW[_op], integers_only=_op in ("and", "or", "xor"))


@overload(atomic_cas, jit_options={"nogil": True})
def _ov_cas(arr, idx, compare, value):
    if _supported(arr, idx, compare, value):
        return lambda arr, idx, compare, value: _cas_intrinsic(arr, idx, compare, value)


@overload(cas_half_bits, jit_options={"nogil": True})
def _ov_cas_half(arr, idx, compare, value):
    if _supported(arr, idx, compare, value) and arr.dtype.bitwidth == 16:
        return lambda arr, idx, compare, value: cas_half_word(arr, idx, compare, value)


__all__ = ["atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_exch", "atomic_cas",
           "atomic_and", "atomic_or", "atomic_xor",
           "cas_half_bits"]
