"""Atomic read-modify-write on array elements for CPU kernels.

Numba has no CPU atomics, so these emit LLVM ``atomicrmw`` / ``cmpxchg`` through
``numba.extending.intrinsic``. On x86 a float ``atomicrmw fadd`` becomes a compare-and-swap loop,
which is why the transpiler uses plain ``+=`` wherever the index is provably the thread's own.

Each function returns the element's old value. ``idx`` is an integer (1-D arrays) or a tuple of
integers; bounds are not checked (as in Numba's default indexing). Without the JIT
(``NUMBA_DISABLE_JIT=1``) they are plain, non-atomic Python::

    @numba.njit(parallel=True)
    def count(bins, out):
        for i in numba.prange(bins.shape[0]):
            atomic_add(out, bins[i], 1)
"""
from __future__ import annotations

from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

_FLOAT_OPS = {"add": "fadd", "sub": "fsub", "exch": "xchg"}
_INT_OPS = {"add": "add", "sub": "sub", "exch": "xchg"}


def _element_pointer(context, builder, arrty, arr, idx_ty, idx):
    ary = context.make_array(arrty)(context, builder, arr)
    if isinstance(idx_ty, types.BaseTuple):
        indices = [context.cast(builder, builder.extract_value(idx, i), t, types.intp)
                   for i, t in enumerate(idx_ty)]
    else:
        indices = [context.cast(builder, idx, idx_ty, types.intp)]
    shapes = cgutils.unpack_tuple(builder, ary.shape, arrty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, arrty.ndim)
    return cgutils.get_item_pointer2(context, builder, ary.data, shapes, strides, arrty.layout,
                                     indices, wraparound=False)


def _check(arr, idx):
    if not isinstance(arr, types.Array):
        return False
    n = len(idx) if isinstance(idx, types.BaseTuple) else 1
    return n == arr.ndim


def _rmw_intrinsic(op):
    @intrinsic
    def rmw(typingctx, arr, idx, value):
        if not _check(arr, idx):
            return None
        dt = arr.dtype
        sig = dt(arr, idx, value)

        def codegen(context, builder, signature, args):
            a, i, v = args
            ptr = _element_pointer(context, builder, arr, a, idx, i)
            v = context.cast(builder, v, value, dt)
            if isinstance(dt, types.Float):
                if op in _FLOAT_OPS:
                    return builder.atomic_rmw(_FLOAT_OPS[op], ptr, v, "monotonic")
                return _float_minmax(builder, ptr, v, op)
            if op in _INT_OPS:
                return builder.atomic_rmw(_INT_OPS[op], ptr, v, "monotonic")
            kind = ("u" if not dt.signed else "") + op
            return builder.atomic_rmw(kind, ptr, v, "monotonic")

        return sig, codegen

    return rmw


def _float_minmax(builder, ptr, value, op):
    """min/max of floats: a compare-and-swap loop on the bit pattern (a NaN value is ignored)."""
    ity = llir.IntType(32 if value.type == llir.FloatType() else 64)
    iptr = builder.bitcast(ptr, ity.as_pointer())
    start = builder.load(ptr)
    entry = builder.block
    loop = builder.append_basic_block("minmax.loop")
    swap = builder.append_basic_block("minmax.swap")
    done = builder.append_basic_block("minmax.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    old = builder.phi(value.type)
    old.add_incoming(start, entry)
    better = builder.fcmp_ordered("<" if op == "min" else ">", value, old)
    builder.cbranch(better, swap, done)
    builder.position_at_end(swap)
    res = builder.cmpxchg(iptr, builder.bitcast(old, ity), builder.bitcast(value, ity),
                          "monotonic", "monotonic")
    old.add_incoming(builder.bitcast(builder.extract_value(res, 0), value.type), swap)
    builder.cbranch(builder.extract_value(res, 1), done, loop)
    builder.position_at_end(done)
    return old


@intrinsic
def _cas(typingctx, arr, idx, compare, value):
    if not _check(arr, idx):
        return None
    dt = arr.dtype
    sig = dt(arr, idx, compare, value)

    def codegen(context, builder, signature, args):
        a, i, c, v = args
        ptr = _element_pointer(context, builder, arr, a, idx, i)
        c = context.cast(builder, c, compare, dt)
        v = context.cast(builder, v, value, dt)
        if isinstance(dt, types.Float):
            ity = llir.IntType(dt.bitwidth)
            res = builder.cmpxchg(builder.bitcast(ptr, ity.as_pointer()), builder.bitcast(c, ity),
                                  builder.bitcast(v, ity), "monotonic", "monotonic")
            return builder.bitcast(builder.extract_value(res, 0), c.type)
        res = builder.cmpxchg(ptr, c, v, "monotonic", "monotonic")
        return builder.extract_value(res, 0)

    return sig, codegen


def _python(op):
    def fn(arr, idx, value):
        old = arr[idx]
        if op == "add":
            arr[idx] = old + value
        elif op == "sub":
            arr[idx] = old - value
        elif op == "min":
            arr[idx] = min(old, value)
        elif op == "max":
            arr[idx] = max(old, value)
        else:
            arr[idx] = value
        return old
    fn.__name__ = f"atomic_{op}"
    fn.__doc__ = f"Atomically ``arr[idx] = {op}(arr[idx], value)``; returns the old value."
    return fn


atomic_add = _python("add")
atomic_sub = _python("sub")
atomic_min = _python("min")
atomic_max = _python("max")
atomic_exch = _python("exch")


def atomic_cas(arr, idx, compare, value):
    """Atomically store ``value`` if ``arr[idx] == compare``; returns the old value."""
    old = arr[idx]
    if old == compare:
        arr[idx] = value
    return old


for _op, _fn in (("add", atomic_add), ("sub", atomic_sub), ("min", atomic_min),
                 ("max", atomic_max), ("exch", atomic_exch)):
    _impl = _rmw_intrinsic(_op)

    def _make(impl):
        def ov(arr, idx, value):
            if _check(arr, idx):
                return lambda arr, idx, value: impl(arr, idx, value)
        return ov

    overload(_fn, jit_options={"nogil": True})(_make(_impl))


@overload(atomic_cas, jit_options={"nogil": True})
def _ov_cas(arr, idx, compare, value):
    if _check(arr, idx):
        return lambda arr, idx, compare, value: _cas(arr, idx, compare, value)
