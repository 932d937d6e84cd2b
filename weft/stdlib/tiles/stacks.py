"""Tiles: tile stacks. ``wp.tile_stack(capacity, dtype)`` (a block's stack of values: a buffer
and a count; also the annotation of a func parameter), ``tile_stack_push``, ``tile_stack_pop``,
``tile_stack_count`` and ``tile_stack_clear``."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelTypeError, KernelValueError
from .. import ir, lanes
from ..exprs import Ex, attr_path, const, name, tile_const, tile_dtype
from ..registry import NAMESPACE, SpecialForm, builtin, lookup, special_form
from .common import (VOID, _element, _emit, _flat_view, _int, _kw, _let, _tuple, _wk, _write,
                     static_dtype)


# ----------------------------------------------------------------------------- tile stacks
def _stack_type(capacity, dtype):
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise ValueError(f"tile_stack capacity must be a positive integer constant, got "
                         f"{capacity!r}")
    return T.TileStackType(T.as_value_type(dtype), int(capacity))


@builtin("tile_stack_b", ["tile_stack(capacity, dtype)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack:
    def primal(type, cuda=False):
        if cuda:  # the pass ``cuda_tiles`` makes its buffer and count in shared memory
            return Ex(_wk("tile_stack_make", _int(type.capacity),
                          tile_dtype(T.scalar_of(type.dtype)),
                          *[_int(d) for d in T.element_shape(type.dtype)]), type)
        buf = tile_const(0, T.TileType(type.dtype, (type.capacity,)))
        count = ast.Call(attr_path("np.zeros"), [_int(1), attr_path("np.int32")], [])
        return Ex(_tuple([buf.node, count]), type)


def _stack_buf(s):
    return ast.Subscript(s.node, _int(0), ast.Load())


def _stack_count(s):
    return ast.Subscript(s.node, _int(1), ast.Load())


@builtin("tile_stack_push_b", ["tile_stack_push(s, value, has_value=True) -> slot"],
         lambda ts, a=None: None, differentiable=False, public=False)
class _tile_stack_push:
    def primal(s, value, has):
        slot = _let(_wk("tile_stack_push", _stack_count(s), _int(s.type.capacity), has.node),
                    "slot")
        buf = _let(_stack_buf(s), "sb")
        write = _write(buf, T.TileType(s.type.dtype, (s.type.capacity,)), slot, value)
        _emit(ast.If(ast.Compare(slot, [ast.GtE()], [_int(0)]), write, []))
        return Ex(slot, T.int32)


@builtin("tile_stack_pop_b", ["tile_stack_pop(s) -> (value, slot)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack_pop:
    def primal(s):
        slot = _let(_wk("tile_stack_pop", _stack_count(s)), "slot")
        buf = _let(_stack_buf(s), "sb")
        at = ast.Call(name("max"), [slot, _int(0)], [])
        value = _element(_flat_view(buf, T.TileType(s.type.dtype, (s.type.capacity,))),
                         T.TileType(s.type.dtype, (s.type.capacity,)), at)
        # an empty stack gives the dtype's zero, as Warp (not what its first slot holds)
        value = ast.IfExp(ast.Compare(slot, [ast.GtE()], [_int(0)]), value.node,
                          const(0, s.type.dtype).node)
        return Ex(_tuple([value, slot]), T.TupleType((s.type.dtype, T.int32)))


@builtin("tile_stack_count_b", ["tile_stack_count(s) -> int"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack_count:
    def primal(s):
        return Ex(ast.Subscript(_stack_count(s), _int(0), ast.Load()), T.int32)


@builtin("tile_stack_clear_b", ["tile_stack_clear(s)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack_clear:
    def primal(s, cuda=False):
        if cuda:  # (between barriers: no thread still reads the count)
            _emit(ast.Expr(_wk("tile_stack_clear", _stack_count(s))))
            return Ex(ast.Constant(None), VOID)
        _emit(ast.Assign([ast.Subscript(_stack_count(s), _int(0), ast.Store())], _int(0),
                         lineno=0))
        return Ex(ast.Constant(None), VOID)


def _stack_arg(ctx, node, what):
    s = ctx.expr(node)
    if not isinstance(getattr(s, "type", None), T.TileStackType):
        raise ctx.fail(node, f"{what} takes a tile stack (wp.tile_stack(capacity, dtype))",
                       KernelTypeError)
    return s


def _lower_tile_stack(ctx, node):
    kw = _kw(node)
    cap_node = node.args[0] if node.args else kw.get("capacity")
    dtype_node = node.args[1] if len(node.args) > 1 else kw.get("dtype")
    if cap_node is None or dtype_node is None:
        raise ctx.fail(node, "tile_stack(capacity, dtype) needs a capacity and a dtype")
    cap = ctx.static_value(cap_node, "tile_stack's capacity")
    try:
        t = _stack_type(cap, static_dtype(ctx, dtype_node))
    except ValueError as e:
        raise ctx.fail(cap_node, str(e), KernelValueError) from None
    attrs = {"type": t, "cuda": True} if lanes.CUDA.get() else {"type": t}
    return ctx.emit(ir.Prim(lookup("tile_stack_b"), [], attrs), t, node)


NAMESPACE["tile_stack"] = SpecialForm(
    "tile_stack", "tile_stack(capacity, dtype): a block's stack (as an annotation: the type of "
    "a func parameter)", _lower_tile_stack,
    host=lambda capacity, dtype: _stack_type(capacity, dtype))


@special_form("tile_stack_push", "tile_stack_push(s, value, has_value=True): pushes value; "
              "returns its slot or -1")
def tile_stack_push(ctx, node):
    s = _stack_arg(ctx, node.args[0], "tile_stack_push")
    kw = _kw(node)
    value = ctx.expr(node.args[1] if len(node.args) > 1 else kw["value"])
    has_node = node.args[2] if len(node.args) > 2 else kw.get("has_value")
    has = ctx.expr(has_node) if has_node is not None else ir.Const(True, T.bool)
    if isinstance(value, ir.Const) and value.literal and T.is_scalar(s.type.dtype) and \
            T.is_int(value.type) == T.is_int(s.type.dtype):
        value = ir.Const(value.value, s.type.dtype)
    if value.type != s.type.dtype:
        raise ctx.fail(node, f"tile_stack_push: the value's type {T.type_name(value.type)} "
                       f"does not match the stack's {T.type_name(s.type.dtype)}",
                       KernelTypeError)
    return ctx.emit(ir.Prim(lookup("tile_stack_push_b"), [s, value, has]), T.int32, node)


@special_form("tile_stack_pop", "tile_stack_pop(s) -> (value, slot): slot -1 when empty")
def tile_stack_pop(ctx, node):
    s = _stack_arg(ctx, node.args[0], "tile_stack_pop")
    return ctx.emit(ir.Prim(lookup("tile_stack_pop_b"), [s]),
                    T.TupleType((s.type.dtype, T.int32)), node)


@special_form("tile_stack_count", "tile_stack_count(s) -> the number of values on the stack")
def tile_stack_count(ctx, node):
    s = _stack_arg(ctx, node.args[0], "tile_stack_count")
    return ctx.emit(ir.Prim(lookup("tile_stack_count_b"), [s]), T.int32, node)


@special_form("tile_stack_clear", "tile_stack_clear(s): empties the stack")
def tile_stack_clear(ctx, node):
    s = _stack_arg(ctx, node.args[0], "tile_stack_clear")
    ctx.add(ir.Effect(lookup("tile_stack_clear_b"), [s], ctx.loc(node),
                      {"cuda": True} if lanes.CUDA.get() else {}))
