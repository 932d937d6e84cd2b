"""Tiles: shape and element type. ``tile_transpose``, ``tile_astype``, ``tile_reshape``,
``tile_squeeze``, ``tile_broadcast`` (and its adjoint, the sum over the broadcast axes), and
:func:`broadcast_view` (a broadcast tile's base, for the algebra that reads it as Warp's
view)."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelValueError
from ..exprs import Ex, tile_const
from ..registry import builtin, special_form
from .common import _int, _kw, _np_dtype, _tile_arg, _tuple, _wk, static_dtype, static_shape


# ----------------------------------------------------------------------------- shape
@builtin("tile_transpose", ["tile_transpose(t) -> the transposed 2-D tile"],
         lambda ts, a=None: T.TileType(ts[0].dtype, tuple(reversed(ts[0].shape)))
         if len(ts) == 1 and T.is_tile_type(ts[0]) and len(ts[0].shape) == 2 else None)
class tile_transpose:
    def primal(t):
        s = t.type.shape
        return Ex(_wk("tile_transpose", t.node), T.TileType(t.type.dtype, (s[1], s[0])))

    def adjoint(t, ret, adj):
        return [Ex(_wk("tile_transpose", adj.node), t.type)]

    def tangent(t, tt, ret):
        return tile_transpose.primal(tt) if tt is not None else tile_const(0, ret.type)


@builtin("tile_astype_b", ["tile_astype(t, dtype)"],
         lambda ts, a=None: T.TileType(a["dtype"], ts[0].shape) if len(ts) == 1 and
         T.is_tile_type(ts[0]) and a and "dtype" in a else None, public=False)
class _tile_astype:
    def primal(t, dtype):
        st = T.scalar_of(dtype)
        node = ast.Call(ast.Attribute(t.node, "astype", ast.Load()), [_np_dtype(st)], [])
        if st is T.float16:  # float32 values rounded to half
            node = _wk("tile_round_f16", node)
        return Ex(node, T.TileType(dtype, t.type.shape))

    def adjoint(t, ret, adj, dtype):
        if not T.is_differentiable(t.type):
            return [None]
        return [_tile_astype.primal(adj, t.type.dtype)]

    def tangent(t, tt, ret, dtype):
        if tt is None or not T.is_differentiable(ret.type):
            return tile_const(0, ret.type)
        return _tile_astype.primal(tt, dtype)


@special_form("tile_astype", "tile_astype(t, dtype): the tile converted to dtype")
def tile_astype(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_astype's operand")
    kw = _kw(node)
    dtype = static_dtype(ctx, node.args[1] if len(node.args) > 1 else kw.get("dtype"))
    return ctx.apply("tile_astype_b", [t], node, attrs={"dtype": dtype})


# ----------------------------------------------------------------------------- reshape, broadcast
def _reshaped(ts, attrs=None):
    """One tile, given the shape of the result (``attrs["shape"]``): reshapes, broadcasts."""
    if len(ts) == 1 and T.is_tile_type(ts[0]) and attrs and "shape" in attrs:
        return T.TileType(ts[0].dtype, attrs["shape"])
    return None


@builtin("tile_reshape_b", ["tile_reshape(t, shape)"], _reshaped, public=False)
class _tile_reshape:
    def primal(t, shape):
        out = T.TileType(t.type.dtype, shape)
        return Ex(_wk("tile_reshape", t.node, _tuple([_int(d) for d in T.element_shape(out)])),
                  out)

    def adjoint(t, ret, adj, shape):
        return [Ex(_wk("tile_reshape", adj.node,
                       _tuple([_int(d) for d in T.element_shape(t.type)])), t.type)]

    def tangent(t, tt, ret, shape):
        return _tile_reshape.primal(tt, shape) if tt is not None else tile_const(0, ret.type)


def _new_shape(ctx, t, shape, node):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ctx.fail(node, "tile_reshape: at most one -1 in the shape")
    if -1 in shape:
        known = 1
        for d in shape:
            if d != -1:
                known *= d
        shape[shape.index(-1)] = t.size // known if known else 0
    n = 1
    for d in shape:
        n *= d
    if n != t.size or any(d <= 0 for d in shape):
        raise ctx.fail(node, f"cannot reshape a tile of shape {t.shape} to {tuple(shape)}")
    return tuple(shape)


@special_form("tile_reshape", "tile_reshape(t, shape): the tile's elements in a new shape")
def tile_reshape(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_reshape's tile")
    how = ctx.tile_views.get(id(t))
    if how is not None and any(sp.kind == "slice" and sp.step != 1 for sp in how[1]):
        raise ctx.fail(node.args[0], "tile_reshape requires a contiguous tile: a strided or "
                       "reversed view (a slice with a step other than 1) cannot be reshaped",
                       KernelValueError)
    kw = _kw(node)
    shape_node = node.args[1] if len(node.args) > 1 else kw.get("shape")
    v = ctx.static_value(shape_node, "tile_reshape's shape")
    v = (v,) if isinstance(v, int) else tuple(int(d) for d in v)
    shape = _new_shape(ctx, t.type, v, shape_node)
    return ctx.apply("tile_reshape_b", [t], node, attrs={"shape": shape})


@special_form("tile_squeeze", "tile_squeeze(t, axis=None): the tile without its dimensions "
              "of length one")
def tile_squeeze(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_squeeze's tile")
    kw = _kw(node)
    axis_node = node.args[1] if len(node.args) > 1 else kw.get("axis")
    shape = t.type.shape
    nd = len(shape)
    if axis_node is None:
        keep = [d for d in shape if d != 1]
    else:
        axes = ctx.static_value(axis_node, "tile_squeeze's axis")
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        norm = []
        for ax in axes:
            if not -nd <= ax < nd:
                raise ctx.fail(axis_node, f"tile_squeeze() axis {ax} is out of bounds for tile "
                               f"with {nd} dimensions", KernelValueError)
            ax = ax % nd
            if shape[ax] != 1:
                raise ctx.fail(axis_node, f"tile_squeeze: axis {ax} has extent {shape[ax]}, "
                               "not one", KernelValueError)
            norm.append(ax)
        keep = [d for k, d in enumerate(shape) if k not in norm]
    keep = tuple(keep) or (1,)
    return ctx.apply("tile_reshape_b", [t], node, attrs={"shape": keep})


@builtin("tile_broadcast_b", ["tile_broadcast(t, shape)"], _reshaped, public=False)
class _tile_broadcast:
    def primal(t, shape):
        out = T.TileType(t.type.dtype, shape)
        return Ex(_wk("tile_broadcast", t.node, _padded(t.type, shape),
                      _tuple([_int(d) for d in T.element_shape(out)])), out)

    def adjoint(t, ret, adj, shape):
        return [Ex(_wk("tile_unbroadcast", adj.node, _padded(t.type, shape),
                       _tuple([_int(d) for d in T.element_shape(t.type)])), t.type)]

    def tangent(t, tt, ret, shape):
        return _tile_broadcast.primal(tt, shape) if tt is not None else tile_const(0, ret.type)


def _padded(t, shape):
    """The shape of tile type ``t`` left-padded with ones to the rank of ``shape``, with its
    element's dimensions after it."""
    pad = (1,) * (len(shape) - len(t.shape)) + tuple(t.shape)
    return _tuple([_int(d) for d in pad + T.element_shape(t.dtype)])


@special_form("tile_broadcast", "tile_broadcast(t, shape): the tile broadcast to shape, as "
              "numpy.broadcast_to")
def tile_broadcast(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_broadcast's tile")
    kw = _kw(node)
    shape_node = node.args[1] if len(node.args) > 1 else kw.get("shape")
    shape = static_shape(ctx, shape_node, "tile_broadcast's shape")
    src = t.type.shape
    if not 1 <= len(shape) <= 4:
        raise ctx.fail(shape_node, f"tile_broadcast() output must have between one and four "
                       f"dimensions, got {len(shape)}", KernelValueError)
    if len(shape) < len(src):
        raise ctx.fail(shape_node, f"tile_broadcast: a tile of shape {src} cannot be broadcast "
                       f"to {shape} (fewer dimensions)", KernelValueError)
    for s, d in zip(reversed(src), reversed(shape)):
        if s != d and s != 1:
            raise ctx.fail(shape_node, f"tile_broadcast: a tile of shape {src} cannot be "
                           f"broadcast to {shape}", KernelValueError)
    out = ctx.apply("tile_broadcast_b", [t], node, attrs={"shape": shape})
    if tuple(shape) != tuple(src):  # a view whose broadcast elements alias t's (tile_axpy)
        ctx.__dict__.setdefault("tile_broadcasts", {})[id(out)] = (out, t, tuple(shape))
    return out


@builtin("tile_unbroadcast_b", ["the sum of a tile over the axes broadcast from shape"],
         lambda ts, a=None: a["type"] if a else None, public=False)
class _tile_unbroadcast:
    def primal(t, type):
        return Ex(_wk("tile_unbroadcast", t.node, _padded(type, t.type.shape),
                      _tuple([_int(d) for d in T.element_shape(type)])), type)

    def adjoint(t, ret, adj, type):
        return [_tile_broadcast.primal(adj, t.type.shape)]

    def tangent(t, tt, ret, type):
        return _tile_unbroadcast.primal(tt, type) if tt is not None else tile_const(0, ret.type)


def broadcast_view(ctx, y):
    """``(base, shape)`` when tile ``y`` is ``wp.tile_broadcast(base, shape)`` (its broadcast
    elements are base's, as Warp's views), else None."""
    got = ctx.__dict__.get("tile_broadcasts", {}).get(id(y))
    if got is None or got[0] is not y:
        return None
    return got[1], got[2]
