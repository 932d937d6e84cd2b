"""Tiles: array memory. The builtins that read or write arrays (``array_args``: their rules are
given the adjoint and tangent arrays of their array arguments): ``tile_load`` and
``tile_store``, ``tile_atomic_add`` (it returns the values it replaced), and the indexed forms
``tile_load_indexed``, ``tile_store_indexed`` and ``tile_atomic_add_indexed`` (a gather or
scatter along one axis through a tile of indices)."""
from __future__ import annotations

import ast
import itertools

from ...core import types as T
from ...core.errors import KernelTypeError, KernelValueError
from .. import ir
from ..exprs import Ex, _target, tile_const
from ..registry import builtin, lookup, special_form
from .common import (VOID, _emit, _fresh, _half, _int, _kw, _let, _not_none, _offsets,
                     _tile_arg, _tuple, _wk, static_shape)


# ----------------------------------------------------------------------------- memory
@builtin("tile_load_b", ["tile_load(a, shape, offset)"], lambda ts, a=None: None,
         public=False)
class _tile_load:
    array_args = True

    own_derivatives = True  # the derivative lives in the array's adjoint, not an argument

    def primal(a, *offs, shape, fn="tile_load"):
        t = T.TileType(a.type.dtype, shape)
        node = _wk(f"{fn}{len(shape)}", a.node, *[o.node for o in offs],
                   *[_int(d) for d in shape])
        return Ex(_wk("tile_h2f", node) if _half(a.type.dtype) else node, t)

    def adjoint(a, *offs, ret, adj, shape, adj_arrays=()):
        arr = adj_arrays[0] if adj_arrays else None
        if arr is not None:
            _load_adjoint(arr, offs, adj, a.type.dtype)
        return [None] * (1 + len(offs))

    def tangent(a, *rest, ret, shape, tan_arrays=()):
        offs = rest[:len(rest) // 2]
        arr = tan_arrays[0] if tan_arrays else None
        t = ret.type
        if arr is None:
            return tile_const(0, t)
        load = _tile_load.primal(Ex(arr.node, a.type), *offs, shape=shape).node
        return Ex(_either(arr, load, tile_const(0, t).node, "tt"), t)


def _either(arr, load, zeros, hint, then=()):
    """A new name bound to ``load`` (a tile read from optional array ``arr``) when ``arr`` is
    given, else to ``zeros``: one tile made either way (a tile of zeros made first and then
    replaced cost an allocation and its clearing per block). ``then``: statements run after
    the load, under the same test."""
    n = _fresh(hint)
    _emit(ast.If(_not_none(arr.node),
                 [ast.Assign([ast.Name(n, ast.Store())], load, lineno=0)] + list(then),
                 [ast.Assign([ast.Name(n, ast.Store())], zeros, lineno=0)]))
    return ast.Name(n, ast.Load())


def _load_adjoint(arr, offs, g, dtype):
    """``adj_a[region] += g`` (atomically), per component for vector and matrix arrays."""
    nd = len(offs)
    calls = []
    if _half(dtype):
        if nd > 2:
            raise NotImplementedError("gradients of float16 tile loads of more than 2 dimensions")
        calls.append(_wk(f"tile_load_adj_h{nd}", arr.node, *[o.node for o in offs], g.node))
    elif not T.is_composite(dtype):
        calls.append(_wk(f"tile_load_adj{nd}", arr.node, *[o.node for o in offs], g.node))
    else:
        for extra in itertools.product(*[range(d) for d in T.element_shape(dtype)]):
            sl = _tuple([ast.Constant(Ellipsis)] + [_int(x) for x in extra])
            calls.append(_wk(f"tile_load_adj{nd}", ast.Subscript(arr.node, sl, ast.Load()),
                             *[o.node for o in offs], ast.Subscript(g.node, sl, ast.Load())))
    _emit(ast.If(_not_none(arr.node), [ast.Expr(c) for c in calls], []))


@special_form("tile_load", "tile_load(a, shape, offset=0, storage='register', "
              "bounds_check=True): a tile read from array a (zeros outside it)")
def tile_load(ctx, node):
    kw0 = _kw(node)
    if not node.args and "a" not in kw0:
        raise ctx.fail(node, "tile_load(a, shape, offset) needs an array")
    a = ctx.expr(node.args[0] if node.args else kw0["a"])
    if not isinstance(getattr(a, "type", None), T.ArrayType):
        raise ctx.fail(node.args[0], "tile_load reads an array", KernelTypeError)
    kw = _kw(node)
    shape_node = node.args[1] if len(node.args) > 1 else kw.get("shape")
    if shape_node is None:
        raise ctx.fail(node, "tile_load needs shape=...")
    shape = static_shape(ctx, shape_node, "the tile's shape")
    if len(shape) != a.type.ndim:
        raise ctx.fail(shape_node, f"a tile of {len(shape)} dimensions from an array of "
                       f"{a.type.ndim}: give a shape per array dimension")
    if len(shape) > 4:
        raise ctx.fail(node, "tiles have at most 4 dimensions")
    offs = _offsets(ctx, node, len(shape), pos=2)
    t = T.TileType(a.type.dtype, shape)
    return ctx.emit(ir.Prim(lookup("tile_load_b"), [a] + offs, {"shape": shape}), t, node)


def _tile_store_tangent(args, tans, tan_arrays, **attrs):
    a, t, offs = args[0], args[1], args[2:]
    arr = tan_arrays[0] if tan_arrays else None
    tt = tans[1]
    if arr is None or tt is None:
        return
    call_ = _tile_store.primal(Ex(arr.node, a.type), tt, *offs).node
    _emit(ast.If(_not_none(arr.node), [ast.Expr(call_)], []))


@builtin("tile_store_b", ["tile_store(a, t, offset)"], lambda ts, a=None: None, public=False)
class _tile_store:
    array_args = True
    effect_tangent = _tile_store_tangent

    def primal(a, t, *offs):
        value = _wk("tile_f2h", t.node) if _half(a.type.dtype) else t.node
        return Ex(_wk(f"tile_store{len(offs)}", a.node, *[o.node for o in offs], value), VOID)

    def adjoint(a, t, *offs, adj_arrays=(), take=True):
        """``adj_t += adj_a[region]``, then the region's adjoint restarts from zero (``take``),
        as a scalar store's (and Warp 1.19's tile store): the values the region held before the
        store have no influence past it, and a region several threads or blocks store (the
        same tile) passes its adjoint on once, not once per store. An atomic add reads it
        without ``take``."""
        arr = adj_arrays[0] if adj_arrays else None
        if arr is None:
            return [None] * (2 + len(offs))
        shape = t.type.shape
        target = _target.get()
        # on a GPU the blocks storing one region run at once, and each would read the adjoint
        # before any reset it: there each element is exchanged with zero atomically, so that
        # exactly one block takes it (cuda_tiles.tile_load_reset*_into)
        atomic = take and target is not None and target.name == "cuda" and \
            not _half(a.type.dtype)
        load = _tile_load.primal(Ex(arr.node, a.type), *offs, shape=shape,
                                 fn="tile_load_reset" if atomic else "tile_load").node
        zeros = tile_const(0, t.type).node
        reset = [ast.Expr(_tile_store.primal(Ex(arr.node, a.type), tile_const(0, t.type),
                                             *offs).node)] if take and not atomic else []
        return [None, Ex(_either(arr, load, zeros, "ga", reset), t.type)] + [None] * len(offs)

    def tangent(*args, **kw):  # an effect: see effect_tangent
        return None


@special_form("tile_store", "tile_store(a, t, offset=0): writes tile t into array a (elements "
              "outside it are skipped)")
def tile_store(ctx, node):
    kw0 = _kw(node)
    a_node = node.args[0] if node.args else kw0.get("a")
    t_node = node.args[1] if len(node.args) > 1 else kw0.get("t")
    if a_node is None or t_node is None:
        raise ctx.fail(node, "tile_store(a, t, offset) needs an array and a tile")
    a = ctx.expr(a_node)
    if not isinstance(getattr(a, "type", None), T.ArrayType):
        raise ctx.fail(a_node, "tile_store writes an array", KernelTypeError)
    t = _tile_arg(ctx, ctx.expr(t_node), t_node, "tile_store's value")
    if len(t.type.shape) != a.type.ndim:
        raise ctx.fail(node, f"a tile of {len(t.type.shape)} dimensions stored into an array "
                       f"of {a.type.ndim}")
    if t.type.dtype != a.type.dtype:
        t = ctx.apply("tile_astype_b", [t], node, attrs={"dtype": a.type.dtype})
    offs = _offsets(ctx, node, a.type.ndim, pos=2)
    ctx.add(ir.Effect(lookup("tile_store_b"), [a, t] + offs, ctx.loc(node)))


# ----------------------------------------------------------------------------- atomics
@builtin("tile_atomic_add_b", ["tile_atomic_add(a, t, offset) -> the replaced values"],
         lambda ts, a=None: None, public=False)
class _tile_atomic_add:
    array_args = True
    accumulates = True  # (into its first array: analyze records the write)
    array_access = "accumulate"

    own_derivatives = False

    def primal(a, t, *offs):
        nd = len(offs)
        dt = a.type.dtype
        if not T.is_composite(dt):
            return Ex(_wk(f"tile_atomic_add{nd}", a.node, *[o.node for o in offs], t.node),
                      t.type)
        # per component of a vector or matrix array; the replaced values are read back
        for extra in itertools.product(*[range(d) for d in T.element_shape(dt)]):
            sl = _tuple([ast.Constant(Ellipsis)] + [_int(x) for x in extra])
            _emit(ast.Expr(_wk(f"tile_atomic_add{nd}", ast.Subscript(a.node, sl, ast.Load()),
                               *[o.node for o in offs], ast.Subscript(t.node, sl, ast.Load()))))
        return Ex(_wk(f"tile_load{nd}", a.node, *[o.node for o in offs],
                      *[_int(d) for d in t.type.shape]), t.type) - t

    def adjoint(a, t, *offs, ret, adj, adj_arrays=()):
        """``adj_t += adj_a[region]`` (left in ``adj_a``, as Warp)."""
        return [None] + _tile_store.adjoint(a, t, *offs, adj_arrays=adj_arrays, take=False)[1:]

    def tangent(a, t, *rest, ret, tan_arrays=()):
        n = (len(rest) - 2) // 2
        offs, tt = rest[:n], rest[n + 1]
        arr = tan_arrays[0] if tan_arrays else None
        if arr is not None and tt is not None:
            call_ = _tile_atomic_add.primal(Ex(arr.node, a.type), tt, *offs)
            _emit(ast.If(_not_none(arr.node), [ast.Expr(call_.node)], []))
        return tile_const(0, ret.type)


_ATOMIC_SCALARS = (T.int32, T.uint32, T.int64, T.uint64, T.float16, T.float32, T.float64)


def _atomic_dtype(ctx, node, dtype, what):
    """Warp's dtypes of tile atomics (those with a CUDA atomicAdd): [u]int32, [u]int64 and
    floats (structs elsewhere); a narrow integer or a bool is refused, as Warp."""
    if T.is_scalar(dtype) or T.is_composite(dtype):
        if T.scalar_of(dtype) not in _ATOMIC_SCALARS:
            raise ctx.fail(node, f"{what}() only supports tiles with [u]int32, [u]int64, "
                           f"float16, bfloat16, float32, or float64 as the underlying scalar "
                           f"type, but got {T.type_name(dtype)}", KernelTypeError)


@special_form("tile_atomic_add", "tile_atomic_add(a, t, offset=0): adds tile t into array a "
              "atomically; returns the values it replaced")
def tile_atomic_add(ctx, node):
    if len(node.args) < 2:
        raise ctx.fail(node, "tile_atomic_add(a, t, offset) needs an array and a tile")
    a = ctx.expr(node.args[0])
    if not isinstance(getattr(a, "type", None), T.ArrayType):
        raise ctx.fail(node.args[0], "tile_atomic_add adds into an array", KernelTypeError)
    t = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], "tile_atomic_add's value")
    _atomic_dtype(ctx, node, a.type.dtype, "tile_atomic_add")
    if len(t.type.shape) != a.type.ndim:
        raise ctx.fail(node, f"a tile of {len(t.type.shape)} dimensions added into an array "
                       f"of {a.type.ndim}")
    if t.type.dtype != a.type.dtype:
        t = ctx.apply("tile_astype_b", [t], node, attrs={"dtype": a.type.dtype})
    offs = _offsets(ctx, node, a.type.ndim)
    return ctx.emit(ir.Prim(lookup("tile_atomic_add_b"), [a, t] + offs), t.type, node)


# ----------------------------------------------------------------------------- indexed memory
def _ix_args(a, idx, offs, axis):
    """The leading arguments of the ``*_indexed<n>`` helpers."""
    nd = len(offs)
    return [a.node, idx.node] + ([_int(axis)] if nd > 1 else []) + [o.node for o in offs]


def _ix_load(a, idx, offs, shape, axis, t):
    return Ex(_wk(f"tile_load_indexed{len(offs)}", *_ix_args(a, idx, offs, axis),
                  *[_int(d) for d in shape]), t)


@builtin("tile_load_indexed_b", ["tile_load_indexed(a, indices, shape, offset, axis)"],
         lambda ts, a=None: None, public=False)
class _tile_load_indexed:
    array_args = True

    own_derivatives = True

    def primal(a, idx, *offs, shape, axis):
        return _ix_load(a, idx, offs, shape, axis, T.TileType(a.type.dtype, shape))

    def adjoint(a, idx, *offs, ret, adj, shape, axis, adj_arrays=()):
        arr = adj_arrays[0] if adj_arrays else None
        if arr is not None:
            call_ = _wk(f"tile_load_indexed_adj{len(offs)}", *_ix_args(arr, idx, offs, axis),
                        adj.node)
            _emit(ast.If(_not_none(arr.node), [ast.Expr(call_)], []))
        return [None] * (2 + len(offs))

    def tangent(a, idx, *rest, ret, shape, axis, tan_arrays=()):
        n = (len(rest) - 2) // 2
        offs = rest[:n]
        arr = tan_arrays[0] if tan_arrays else None
        if arr is None:
            return tile_const(0, ret.type)
        out = _let(tile_const(0, ret.type).node, "tt")
        _emit(ast.If(_not_none(arr.node), [ast.Assign([ast.Name(out.id, ast.Store())], _ix_load(
            arr, idx, offs, shape, axis, ret.type).node, lineno=0)], []))
        return Ex(out, ret.type)


def _store_indexed_tangent(args, tans, tan_arrays, axis, add=False):
    a, idx, t, offs = args[0], args[1], args[2], args[3:]
    arr = tan_arrays[0] if tan_arrays else None
    tt = tans[2]
    if arr is None or tt is None:
        return
    call_ = _wk(f"tile_store_indexed{len(offs)}", *_ix_args(arr, idx, offs, axis), tt.node,
                ast.Constant(bool(add)))
    _emit(ast.If(_not_none(arr.node), [ast.Expr(call_)], []))


@builtin("tile_store_indexed_b", ["tile_store_indexed(a, indices, t, offset, axis)"],
         lambda ts, a=None: None, public=False)
class _tile_store_indexed:
    array_args = True
    effect_tangent = _store_indexed_tangent

    def primal(a, idx, t, *offs, axis, add=False):
        return Ex(_wk(f"tile_store_indexed{len(offs)}", *_ix_args(a, idx, offs, axis), t.node,
                      ast.Constant(bool(add))), t.type)

    def adjoint(a, idx, t, *offs, axis, add=False, ret=None, adj=None, adj_arrays=()):
        arr = adj_arrays[0] if adj_arrays else None
        if arr is None:
            return [None] * (3 + len(offs))
        g = _let(tile_const(0, t.type).node, "ga")
        body = [ast.Assign([ast.Name(g.id, ast.Store())], _ix_load(
            arr, idx, offs, t.type.shape, axis, t.type).node, lineno=0)]
        if not add:  # a store takes its elements' adjoint (as tile_store's), an add reads it
            body.append(ast.Expr(_tile_store_indexed.primal(
                Ex(arr.node, a.type), idx, Ex(tile_const(0, t.type).node, t.type), *offs,
                axis=axis).node))
        _emit(ast.If(_not_none(arr.node), body, []))
        return [None, None, Ex(g, t.type)] + [None] * len(offs)

    def tangent(*args, **kw):
        return tile_const(0, kw["ret"].type) if kw.get("ret") is not None else None


@builtin("tile_atomic_add_indexed_b", ["tile_atomic_add_indexed(a, indices, t, offset, axis)"],
         lambda ts, a=None: None, public=False)
class _tile_atomic_add_indexed:
    array_args = True
    accumulates = True  # (into its first array: analyze records the write)
    array_access = "accumulate"

    def primal(a, idx, t, *offs, axis):
        return _tile_store_indexed.primal(a, idx, t, *offs, axis=axis, add=True)

    def adjoint(a, idx, t, *offs, ret, adj, axis, adj_arrays=()):
        return _tile_store_indexed.adjoint(a, idx, t, *offs, axis=axis, add=True,
                                           adj_arrays=adj_arrays)

    def tangent(a, idx, t, *rest, ret, axis, tan_arrays=()):
        n = (len(rest) - 3) // 2
        offs, tans = rest[:n], rest[n:]
        _store_indexed_tangent([a, idx, t] + list(offs), tans, tan_arrays, axis, add=True)
        return tile_const(0, ret.type)


def _indexed_parts(ctx, node, what, with_tile):
    kw = _kw(node)
    pos = list(node.args)
    a = ctx.expr(pos[0] if pos else kw["a"])
    if not isinstance(getattr(a, "type", None), T.ArrayType):
        raise ctx.fail(node, f"{what} takes an array", KernelTypeError)
    idx_node = pos[1] if len(pos) > 1 else kw.get("indices")
    idx = _tile_arg(ctx, ctx.expr(idx_node), idx_node, f"{what}'s indices")
    if not T.is_int(idx.type.dtype) or len(idx.type.shape) != 1:
        raise ctx.fail(idx_node, f"{what}'s indices must be a 1-D tile of integers",
                       KernelTypeError)
    t = None
    if with_tile:
        t_node = pos[2] if len(pos) > 2 else kw.get("t")
        t = _tile_arg(ctx, ctx.expr(t_node), t_node, f"{what}'s tile")
    axis = int(ctx.static_value(kw["axis"], "axis")) if "axis" in kw else 0
    nd = a.type.ndim
    if nd > 2:
        raise ctx.fail(node, f"{what} of arrays of more than 2 dimensions is not supported yet")
    if not 0 <= axis < nd:
        raise ctx.fail(node, f"{what}: axis {axis} is out of range for an array of {nd} "
                       "dimensions", KernelValueError)
    return a, idx, t, axis, _offsets(ctx, node, nd)


@special_form("tile_load_indexed", "tile_load_indexed(a, indices, shape, offset=0, axis=0): a "
              "tile gathered along axis through a tile of indices")
def tile_load_indexed(ctx, node):
    a, idx, _, axis, offs = _indexed_parts(ctx, node, "tile_load_indexed", False)
    kw = _kw(node)
    shape_node = kw.get("shape") or (node.args[2] if len(node.args) > 2 else None)
    shape = static_shape(ctx, shape_node, "the tile's shape")
    if len(shape) != a.type.ndim or shape[axis] != idx.type.shape[0]:
        raise ctx.fail(node, f"tile_load_indexed: shape {shape} needs one extent per array "
                       f"dimension and {idx.type.shape[0]} along axis {axis}", KernelValueError)
    t = T.TileType(a.type.dtype, shape)
    return ctx.emit(ir.Prim(lookup("tile_load_indexed_b"), [a, idx] + offs,
                            {"shape": shape, "axis": axis}), t, node)


@special_form("tile_store_indexed", "tile_store_indexed(a, indices, t, offset=0, axis=0): t "
              "scattered along axis through a tile of indices")
def tile_store_indexed(ctx, node):
    a, idx, t, axis, offs = _indexed_parts(ctx, node, "tile_store_indexed", True)
    if t.type.dtype != a.type.dtype:
        t = ctx.apply("tile_astype_b", [t], node, attrs={"dtype": a.type.dtype})
    ctx.add(ir.Effect(lookup("tile_store_indexed_b"), [a, idx, t] + offs, ctx.loc(node),
                      {"axis": axis}))


@special_form("tile_atomic_add_indexed", "tile_atomic_add_indexed(a, indices, t, offset=0, "
              "axis=0): t added atomically along axis through a tile of indices; returns the "
              "values it replaced")
def tile_atomic_add_indexed(ctx, node):
    a, idx, t, axis, offs = _indexed_parts(ctx, node, "tile_atomic_add_indexed", True)
    if t.type.dtype != a.type.dtype:
        t = ctx.apply("tile_astype_b", [t], node, attrs={"dtype": a.type.dtype})
    return ctx.emit(ir.Prim(lookup("tile_atomic_add_indexed_b"), [a, idx, t] + offs,
                            {"axis": axis}), t.type, node)
