"""Tiles: reductions. ``tile_sum``, ``tile_max`` / ``tile_min`` and ``tile_argmax`` /
``tile_argmin`` of a whole tile, and ``tile_reduce`` (a func or builtin folded over the rows of
a tile, its adjoint and tangent walking the fold; ``tile_sum`` along an axis is one), with the
axis to reduce moved last."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelValueError
from .. import ir
from ..exprs import Ex, attr_path, const, name, tile_const
from ..registry import REGISTRY, builtin, lookup, special_form
from .common import (_assign_name, _block, _elem_len, _element, _emit, _flat_view, _fresh, _int,
                     _kw, _let, _loop, _tile_arg, _tuple, _wk, _write)
from .elements import ElementFn


# ----------------------------------------------------------------------------- reductions
def _reduction(ts, attrs=None):
    if len(ts) == 1 and T.is_tile_type(ts[0]):
        return T.TileType(ts[0].dtype, (1,))
    return None


@builtin("tile_sum_b", ["tile_sum(t) -> a tile of one element"], _reduction, public=False)
class tile_sum:
    def primal(t):
        dt = t.type.dtype
        if T.is_composite(dt):
            return Ex(_wk("tile_sum_vec", t.node, _int(_elem_len(dt))),
                      T.TileType(dt, (1,)))
        return Ex(_wk("tile_sum", t.node), T.TileType(dt, (1,)))

    def adjoint(t, ret, adj):
        if T.is_composite(t.type.dtype):
            return [Ex(_wk("tile_sum_vec_adj", t.node,
                           ast.Call(ast.Attribute(adj.node, "reshape", ast.Load()),
                                    [_tuple([_int(1), _int(_elem_len(t.type.dtype))])], [])),
                       t.type)]
        return [Ex(_wk("tile_sum_adj", t.node, adj.node), t.type)]

    def tangent(t, tt, ret):
        return tile_sum.primal(tt) if tt is not None else tile_const(0, ret.type)


def _extreme(fn):
    @builtin(f"tile_{fn}", [f"tile_{fn}(t) -> a tile of one element"], _reduction)
    class rule:
        def primal(t):
            return Ex(_wk(f"tile_{fn}", t.node), T.TileType(t.type.dtype, (1,)))

        def adjoint(t, ret, adj):
            return [Ex(_wk("tile_extreme_adj", t.node, ret.node, adj.node), t.type)]

        def tangent(t, tt, ret):
            if tt is None:
                return tile_const(0, ret.type)
            g = Ex(_wk("tile_extreme_adj", t.node, ret.node, tile_const(1, ret.type).node),
                   t.type)
            return Ex(_wk("tile_sum", (g * tt).node), ret.type)
    return rule


tile_max = _extreme("max")
tile_min = _extreme("min")


def _arg_reduction(ts, attrs=None):
    if len(ts) == 1 and T.is_tile_type(ts[0]):
        return T.TileType(T.int32, (1,))
    return None


@builtin("tile_argmax", ["tile_argmax(t) -> a tile of one int32"], _arg_reduction,
         differentiable=False)
class tile_argmax:
    def primal(t):
        return Ex(_wk("tile_argmax", t.node), T.TileType(T.int32, (1,)))


@builtin("tile_argmin", ["tile_argmin(t) -> a tile of one int32"], _arg_reduction,
         differentiable=False)
class tile_argmin:
    def primal(t):
        return Ex(_wk("tile_argmin", t.node), T.TileType(T.int32, (1,)))


@special_form("tile_sum", "tile_sum(t, axis=None): the sum of the elements of t (a tile of one "
              "element), or along axis")
def tile_sum_form(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], "tile_sum's tile")
    axis = _axis(ctx, node, 1)
    if axis is None:
        return ctx.apply("tile_sum_b", [t], node)
    return reduce_tile(ctx, ElementFn(builtin_=REGISTRY["add"]), True, t, axis, node)


# ----------------------------------------------------------------------------- reduce
@builtin("tile_reduce_b", ["tile_reduce(op, t) -> the rows of t (R, L) folded: (R,)"],
         lambda ts, a=None: None, public=False)
class _tile_reduce:
    """Each row of an ``(R, L)`` tile folded from its first element by ``fn``: an ``(R,)``
    tile (a whole tile is one row; a reduction along an axis moves that axis last)."""

    def primal(t, fn):
        R, L = t.type.shape
        dt = t.type.dtype
        out_t = T.TileType(dt, (R,))
        out = _let(tile_const(0, out_t).node, "rd")
        ov, v = _flat_view(out, out_t), _flat_view(t.node, t.type)
        r, e, acc = _fresh("r"), _fresh("e"), _fresh("acc")
        base = ast.BinOp(name(r), ast.Mult(), _int(L))
        fold = _block(lambda: [_assign_name(acc, fn.value([
            Ex(name(acc), dt), _element(v, t.type, ast.BinOp(base, ast.Add(), name(e)))]))])
        body = _block(lambda: [_assign_name(acc, _element(v, t.type, base)),
                               _loop(e, _int(1), _int(L), fold)] +
                      _write(ov, out_t, name(r), Ex(name(acc), dt)))
        _emit(_loop(r, _int(0), _int(R), body))
        return Ex(out, out_t)

    def adjoint(t, ret, adj, fn):
        """The fold recomputed with every partial result kept, then walked backwards."""
        R, L = t.type.shape
        dt = t.type.dtype
        flat_t = T.TileType(dt, (R * L,))
        parts = _let(tile_const(0, flat_t).node, "pr")
        pv, v = _flat_view(parts, flat_t), _flat_view(t.node, t.type)
        grad = _let(tile_const(0, t.type).node, "rg")
        gv = _flat_view(grad, t.type)
        av = _flat_view(adj.node, adj.type)
        r, e, k, g = _fresh("r"), _fresh("e"), _fresh("k"), _fresh("gacc")
        base = ast.BinOp(name(r), ast.Mult(), _int(L))

        def at(i):
            return ast.BinOp(base, ast.Add(), i)
        def fold():
            nxt = fn.value([_element(pv, flat_t, at(ast.BinOp(name(e), ast.Sub(), _int(1)))),
                            _element(v, t.type, at(name(e)))])
            return _write(pv, flat_t, at(name(e)), nxt)

        def unfold():
            cs = fn.adjoint([_element(pv, flat_t, at(ast.BinOp(name(k), ast.Sub(), _int(1)))),
                             _element(v, t.type, at(name(k)))],
                            _element(pv, flat_t, at(name(k))), Ex(name(g), dt))
            ga = (cs[0] if cs[0] is not None else const(0, dt)).atom()
            gx = (cs[1] if cs[1] is not None else const(0, dt)).atom()
            return _write(gv, t.type, at(name(k)), gx) + [_assign_name(g, ga)]

        body = _block(lambda: _write(pv, flat_t, base, _element(v, t.type, base)) + [
            _loop(e, _int(1), _int(L), _block(fold)),
            _assign_name(g, _element(av, adj.type, name(r))),
            _loop(k, _int(L - 1), _int(0), _block(unfold), _int(-1))] +
            _write(gv, t.type, base, Ex(name(g), dt)))
        _emit(_loop(r, _int(0), _int(R), body))
        return [Ex(grad, t.type)]

    def tangent(t, tt, ret, fn):
        if tt is None:
            return tile_const(0, ret.type)
        R, L = t.type.shape
        dt = t.type.dtype
        out_t = T.TileType(dt, (R,))
        out = _let(tile_const(0, out_t).node, "rt")
        ov, v, tv = _flat_view(out, out_t), _flat_view(t.node, t.type), \
            _flat_view(tt.node, tt.type)
        r, e, acc, tacc = _fresh("r"), _fresh("e"), _fresh("acc"), _fresh("tacc")
        base = ast.BinOp(name(r), ast.Mult(), _int(L))

        def fold():
            i = ast.BinOp(base, ast.Add(), name(e))
            a0, x = Ex(name(acc), dt), _element(v, t.type, i)
            nxt = fn.value([a0, x]).atom()
            tn = fn.tangent([a0, x], [Ex(name(tacc), dt), _element(tv, tt.type, i)], nxt).atom()
            return [_assign_name(tacc, tn), _assign_name(acc, nxt)]
        body = _block(lambda: [_assign_name(acc, _element(v, t.type, base)),
                               _assign_name(tacc, _element(tv, tt.type, base)),
                               _loop(e, _int(1), _int(L), _block(fold))] +
                      _write(ov, out_t, name(r), Ex(name(tacc), dt)))
        _emit(_loop(r, _int(0), _int(R), body))
        return Ex(out, out_t)


@builtin("tile_reduce_nd", ["tile_reduce(op, t)"], lambda ts, a=None: None, public=False,
         differentiable=False)
class _tile_reduce_nd:
    primal = _tile_reduce.primal


@builtin("tile_moveaxis_b", ["(an axis of a tile moved last)"],
         lambda ts, a=None: a["out"] if a and "out" in a and len(ts) == 1 and
         T.is_tile_type(ts[0]) else None, public=False)
class _tile_moveaxis:
    def primal(t, perm, out):
        full = _tuple([_int(p) for p in perm] +
                      [_int(len(perm) + k) for k in range(len(T.element_shape(t.type.dtype)))])
        node = ast.Call(attr_path("np.transpose"), [t.node, full], [])
        return Ex(ast.Call(attr_path("np.ascontiguousarray"), [node], []), out)

    def adjoint(t, ret, adj, perm, out):
        inv = [0] * len(perm)
        for i, p in enumerate(perm):
            inv[p] = i
        return [_tile_moveaxis.primal(adj, tuple(inv), t.type)]

    def tangent(t, tt, ret, perm, out):
        return _tile_moveaxis.primal(tt, perm, out) if tt is not None else tile_const(0, out)


def reduce_tile(ctx, fn, diff, t, axis, node):
    """``fn`` folded over tile ``t`` (an ``(1,)`` tile), or along ``axis`` (its extent
    removed; a 1-D tile gives ``(1,)``)."""
    shape = t.type.shape
    nd = len(shape)
    prim = "tile_reduce_b" if diff and T.is_differentiable(t.type) else "tile_reduce_nd"
    if axis is None:
        rows = ctx.apply("tile_reshape_b", [t], node, attrs={"shape": (1, t.type.size)})
        return ctx.emit(ir.Prim(lookup(prim), [rows], {"fn": fn}),
                        T.TileType(t.type.dtype, (1,)), node)
    if not -nd <= axis < nd:
        raise ctx.fail(node, f"axis {axis} is out of range for a tile of {nd} dimensions",
                       KernelValueError)
    axis %= nd
    rest = tuple(d for k, d in enumerate(shape) if k != axis)
    if axis != nd - 1:
        perm = tuple(k for k in range(nd) if k != axis) + (axis,)
        t = ctx.apply("tile_moveaxis_b", [t], node, attrs={
            "perm": perm, "out": T.TileType(t.type.dtype, rest + (shape[axis],))})
    n_rows = 1
    for d in rest:
        n_rows *= d
    rows = ctx.apply("tile_reshape_b", [t], node, attrs={"shape": (n_rows, shape[axis])})
    red = ctx.emit(ir.Prim(lookup(prim), [rows], {"fn": fn}),
                   T.TileType(t.type.dtype, (n_rows,)), node)
    return ctx.apply("tile_reshape_b", [red], node, attrs={"shape": rest or (1,)})


def _axis(ctx, node, pos):
    kw = _kw(node)
    n = node.args[pos] if len(node.args) > pos else kw.get("axis")
    return None if n is None else int(ctx.static_value(n, "axis"))


@special_form("tile_reduce", "tile_reduce(op, t, axis=None): the elements of t combined by op "
              "(a tile of one element), or along axis")
def tile_reduce(ctx, node):
    if len(node.args) < 2:
        raise ctx.fail(node, "tile_reduce(op, t) takes an operator and a tile")
    t = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], "tile_reduce's tile")
    fn, rtype, diff = _element_fn(ctx, node.args[0], [t.type.dtype, t.type.dtype], node)
    if rtype != t.type.dtype:
        raise ctx.fail(node.args[0], f"tile_reduce's operator must return "
                       f"{T.type_name(t.type.dtype)}, not {T.type_name(rtype)}")
    return reduce_tile(ctx, fn, diff, t, _axis(ctx, node, 2), node)


def _element_fn(ctx, fnode, elem_types, node):
    """``(ElementFn, result type, differentiable)`` of a func or builtin applied to elements
    of ``elem_types``."""
    f = ctx.resolve(fnode)
    from ..funcs import Function
    if isinstance(f, Function):
        elem_args = [ir.Var(f"_x{k}", t) for k, t in enumerate(elem_types)]
        if getattr(f, "overloads", None) and len(f.overloads) > 1:
            f = ctx.choose_overload(f, elem_args, node)
        fir = ctx.specializer.specialize(f, elem_args, node, ctx)
        if fir.ret_type is None:
            raise ctx.fail(fnode, "the function must return a value")
        return ElementFn(fir=fir), fir.ret_type, True
    from ..constructors import declaration_of
    b = f if hasattr(f, "resolve") else declaration_of(f)
    if b is None or not hasattr(b, "resolve") or not hasattr(b, "primal"):
        raise ctx.fail(fnode, "expected a wp.func or a builtin")
    rtype = b.resolve(list(elem_types), {})
    if rtype is None:
        raise ctx.fail(node, f"{b.name} accepts no elements of types "
                       f"{[T.type_name(t) for t in elem_types]}")
    return ElementFn(builtin_=b), rtype, b.differentiable
