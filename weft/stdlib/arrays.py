"""Kernel operations on array memory: the atomics and ``wp.alloc_local``.

``wp.atomic_add(a, i, ..., v)`` and friends update ``a[i, ...]`` and return the old value
(IR ``AtomicRMW``; the CPU runs them as LLVM ``atomicrmw`` through :mod:`.atomics`, CUDA through
``cuda.atomic``). Their adjoints and tangents are written by the generators (an atomic add's
adjoint reads the adjoint of the element; min/max pass it to the value that ended up there).
"""
from __future__ import annotations

import ast

from ..core import types as T
from . import ir
from .registry import lookup, special_form

ATOMICS = {"atomic_add": "add", "atomic_sub": "sub", "atomic_min": "min", "atomic_max": "max",
           "atomic_exch": "exch", "atomic_cas": "cas", "atomic_and": "and", "atomic_or": "or",
           "atomic_xor": "xor"}
_BITWISE_TYPES = (T.int32, T.uint32, T.int64, T.uint64)


_ADD_TYPES = (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.float32, T.float64)
_MINMAX_TYPES = (T.int32, T.uint32, T.int64, T.uint64, T.float32, T.float64)


def _check_scalar_type(ctx, node, name, op, dtype):
    """Warp's atomics work on 32- and 64-bit integers and floats (add and sub on float16 too,
    min and max not): anything else is Warp's error, word for word."""
    if op not in ("add", "sub", "min", "max") or T.is_struct(dtype):
        return
    scalar = T.scalar_of(dtype) if T.is_composite(dtype) else dtype
    allowed = _ADD_TYPES if op in ("add", "sub") else _MINMAX_TYPES
    if scalar in allowed:
        return
    from ..core.types import type_repr
    kinds = "[u]int32, [u]int64, float16, bfloat16, float32, or float64" if op in (
        "add", "sub") else "[u]int32, [u]int64, bfloat16, float32, or float64"
    raise ctx.fail(node, f"{name}() operations only work on arrays with {kinds} as the "
                   f"underlying scalar types, but got {type_repr(dtype)} (with scalar type "
                   f"{type_repr(scalar)})")


def _atomic(name, doc):
    op = ATOMICS[name]

    def lower(ctx, node):
        cas = op == "cas"
        if len(node.args) < (4 if cas else 3):
            raise ctx.fail(node, f"wp.{name}(array, index..., {'compare, ' if cas else ''}value)"
                           " needs an array, indices and a value")
        arr = ctx.expr(node.args[0])
        if not isinstance(arr.type, T.ArrayType):
            raise ctx.fail(node.args[0], f"wp.{name} needs an array as first argument")
        idx_nodes = node.args[1:-2] if cas else node.args[1:-1]
        idx = [ctx.adapt_literal(ctx.expr(a), T.int32) for a in idx_nodes]
        if len(idx) != arr.type.ndim or not all(T.is_int(i.type) for i in idx):
            raise ctx.fail(node, f"wp.{name} needs {arr.type.ndim} integer indices")
        if cas and not (T.is_int(arr.type.dtype) or T.is_float(arr.type.dtype)):
            raise ctx.fail(node, "wp.atomic_cas(array, index..., compare, value) needs an array "
                           f"of integers or floats, got one of {T.type_name(arr.type.dtype)}")
        if op in ("and", "or", "xor") and T.scalar_of(arr.type.dtype) not in _BITWISE_TYPES:
            raise ctx.fail(node, f"wp.{name} needs an array of int32, uint32, int64 or uint64 "
                           "(or vectors or matrices of them; as on CUDA), got one of "
                           f"{T.type_name(arr.type.dtype)}")
        _check_scalar_type(ctx, node, name, op, arr.type.dtype)
        value = ctx.store_coerced(arr, ctx.expr(node.args[-1]), node.args[-1])
        compare = ctx.store_coerced(arr, ctx.expr(node.args[-2]), node.args[-2]) if cas else None
        dst = ctx.new_temp(arr.type.dtype)
        ctx.add(ir.AtomicRMW(op, arr, idx, value, dst, ctx.loc(node), compare))
        return dst

    return special_form(name, doc)(lower)


atomic_add = _atomic("atomic_add", "atomic_add(array, index..., value) -> old value")
atomic_sub = _atomic("atomic_sub", "atomic_sub(array, index..., value) -> old value")
atomic_min = _atomic("atomic_min", "atomic_min(array, index..., value) -> old value")
atomic_max = _atomic("atomic_max", "atomic_max(array, index..., value) -> old value")
atomic_exch = _atomic("atomic_exch", "atomic_exch(array, index..., value) -> old value")
atomic_cas = _atomic("atomic_cas", "atomic_cas(array, index..., compare, value) -> old value; "
                     "stores value where the element equals compare (integers; floats compare bit "
                     "patterns)")
atomic_and = _atomic("atomic_and", "atomic_and(array, index..., value) -> old value "
                     "(int32/uint32/int64/uint64 arrays)")
atomic_or = _atomic("atomic_or", "atomic_or(array, index..., value) -> old value")
atomic_xor = _atomic("atomic_xor", "atomic_xor(array, index..., value) -> old value")


@special_form("alloc_local", "alloc_local(dtype, size, value=0): a per-thread buffer read and "
              "written with computed indices (as Dr.Jit's)")
def alloc_local(ctx, node):
    args = list(node.args)
    kw = {k.arg: k.value for k in node.keywords}
    if len(args) < 2 and "size" not in kw:
        raise ctx.fail(node, "wp.alloc_local(dtype, size, value=0) needs a dtype and a size")
    dtype_node = args[0] if args else kw.get("dtype")
    size_node = args[1] if len(args) > 1 else kw.get("size")
    try:
        dtype = T.as_value_type(ctx.resolve(dtype_node))
    except TypeError:
        raise ctx.fail(dtype_node, "wp.alloc_local needs a value type") from None
    size = ctx.resolve(size_node) if not isinstance(size_node, ast.Constant) else size_node.value
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ctx.fail(size_node, "the size of wp.alloc_local must be a positive integer "
                       "constant (a literal, or a global or wp.constant)")
    value_node = args[2] if len(args) > 2 else kw.get("value")
    value = 0 if value_node is None else ctx.static_value(value_node, "wp.alloc_local(value=...)")
    if not isinstance(value, (int, float)):
        raise ctx.fail(node, "the value of wp.alloc_local must be a number constant")
    return _local_buffer(ctx, dtype, size, value, node)


def _local_buffer(ctx, dtype, size, value, node):
    """A local buffer of ``dtype``; of a struct, one buffer per member (as struct arrays are
    split), each filled with ``value``."""
    t = T.ArrayType(dtype, 1, local=True, size=size)
    if T.is_struct(dtype):
        members = {}
        for f, ft in T.struct_fields(dtype).items():
            if isinstance(ft, T.ArrayType):
                raise ctx.fail(node, f"wp.alloc_local of struct {T.type_name(dtype)}: member "
                               f"'{f}' is an array, which a thread-local buffer cannot hold")
            members[f] = _local_buffer(ctx, ft, size, value, node)
        return ctx.struct_array(t, members)
    v = ctx.new_temp(t, "local")
    ctx.add(ir.Assign(v, ir.Prim(lookup("alloc_local"), [], {"value": value}), ctx.loc(node)))
    return v


@special_form("lower_bound", "lower_bound(arr, value) / lower_bound(arr, begin, end, value) -> "
              "int: the first index of sorted 1-D arr (in [begin, end)) whose element is not "
              "below value (the last index of the range when none is)")
def lower_bound(ctx, node):
    """Warp's binary search: ``_lower_bound`` in the kernel language, for any scalar dtype."""
    if node.keywords or len(node.args) not in (2, 4):
        raise ctx.fail(node, "wp.lower_bound takes (arr, value) or (arr, begin, end, value)")
    arr = ctx.expr(node.args[0])
    if not isinstance(arr.type, T.ArrayType) or arr.type.ndim != 1 or \
            not T.is_scalar(arr.type.dtype):
        raise ctx.fail(node.args[0], "wp.lower_bound needs a 1-D array of scalars, got "
                       f"{T.type_name(arr.type)}")
    value = ctx.store_coerced(arr, ctx.expr(node.args[-1]), node.args[-1])
    from .search import array_lower_bound, range_lower_bound
    if len(node.args) == 2:
        return ctx.call_func(array_lower_bound, node, [arr, value], 2)
    begin, end = (ctx.adapt_literal(ctx.expr(a), T.int32) for a in node.args[1:3])
    if not (T.is_int(begin.type) and T.is_int(end.type)):
        raise ctx.fail(node, "wp.lower_bound(arr, begin, end, value): begin and end are "
                       "integers")
    return ctx.call_func(range_lower_bound, node, [arr, begin, end, value], 4)
