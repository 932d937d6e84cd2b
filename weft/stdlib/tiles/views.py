"""Tiles: sub-tiles and subscripts. ``tile_view`` and ``tile_assign`` (a block of a tile read,
or replaced), and ``t[...]`` on a tile: an element, a view (a new tile, recorded so that a
change to it is written back into the tile it views) or a gather through a tile of indices;
``t[...] = u`` and the check of ``t[...] += u``."""
from __future__ import annotations

import ast

import numpy as np

from ...core import types as T
from ...core.errors import KernelTypeError, KernelValueError
from .. import ir
from ..exprs import Ex, attr_path, name, tile_const
from ..registry import builtin, special_form
from .common import (_assign_assigned, _emit, _fresh, _int, _kw, _let, _loop, _tile_arg, _tuple,
                     static_shape, store_back)
from .shape import _tile_astype


# ----------------------------------------------------------------------------- sub-tiles
def _view_resolve(ts, attrs=None):
    if ts and T.is_tile_type(ts[0]) and attrs and "out" in attrs:
        return attrs["out"]
    return None


@builtin("tile_view_b", ["tile_view(t, offset, shape)"], _view_resolve, public=False)
class _tile_view:
    """A copy of a block of ``t``: ``t[o0:o0 + s0, ...]``, with the dimensions given an
    integer offset and ``keep`` False removed."""

    def primal(t, *offs, out, extents, keep):
        sl = _view_slice(offs, extents, keep)
        node = ast.Subscript(t.node, sl, ast.Load())
        return Ex(ast.Call(attr_path("np.ascontiguousarray"), [node], []), out)

    def adjoint(t, *offs, ret, adj, out, extents, keep):
        c = _let(tile_const(0, t.type).node, "vw")
        sl = _view_slice(offs, extents, keep)
        _emit(ast.AugAssign(ast.Subscript(c, sl, ast.Store()), ast.Add(), adj.node))
        return [Ex(c, t.type)] + [None] * len(offs)

    def tangent(t, *rest, ret, out, extents, keep):
        n = len(rest) // 2
        tt = rest[n]
        if tt is None:
            return tile_const(0, out)
        return _tile_view.primal(tt, *rest[:n], out=out, extents=extents, keep=keep)


def _view_slice(offs, extents, keep):
    parts = []
    for o, e, k in zip(offs, extents, keep):
        if k:
            parts.append(ast.Slice(o.node, ast.BinOp(o.node, ast.Add(), _int(e)), None))
        else:
            parts.append(o.node)
    return _tuple(parts) if len(parts) > 1 else parts[0]


@special_form("tile_view", "tile_view(t, offset, shape=None): a block of a tile (a copy)")
def tile_view(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_view's tile")
    kw = _kw(node)
    off_node = node.args[1] if len(node.args) > 1 else kw.get("offset")
    shape_node = node.args[2] if len(node.args) > 2 else kw.get("shape")
    items = [] if off_node is None else (off_node.elts if isinstance(off_node, ast.Tuple)
                                         else [off_node])
    slices = [_as_slice(ctx, it) for it in items]
    if any(sl is not None for sl in slices):  # offset=(slice(0, 2), i): a subscript view
        if shape_node is not None:
            raise ctx.fail(shape_node, "tile_view: give 'shape' together with a slice offset "
                           "is not supported (the slices give the extents)", KernelValueError)
        sub = [sl if sl is not None else it for sl, it in zip(slices, items)]
        return subscript(ctx, t, ast.Tuple(sub, ast.Load()) if len(sub) > 1 else sub[0], node)
    offs = []
    src = t.type.shape
    for k, it in enumerate(items):
        v = ctx.expr(it)
        if isinstance(v, ir.Const):
            if isinstance(v.value, bool) or not isinstance(v.value, (int, np.integer)):
                raise ctx.fail(it, "tile_view offsets must be integers or slices",
                               KernelValueError)
            if k < len(src) and not 0 <= int(v.value) < src[k]:
                raise ctx.fail(it, f"tile_view offset {v.value} is out of bounds for axis {k} "
                               f"of a tile of shape {src}", KernelValueError)
            v = ir.Const(int(v.value), T.int32)
        elif not T.is_int(getattr(v, "type", None)):
            raise ctx.fail(it, "tile_view offsets must be integers or slices", KernelValueError)
        offs.append(v)
    if shape_node is not None:
        shape = static_shape(ctx, shape_node, "tile_view's shape")
        offs += [ir.Const(0, T.int32)] * (len(src) - len(offs))
        return _emit_view(ctx, t, offs, list(shape), [True] * len(src), node)
    keep = [False] * len(offs) + [True] * (len(src) - len(offs))
    extents = [1] * len(offs) + list(src[len(offs):])
    offs += [ir.Const(0, T.int32)] * (len(src) - len(offs))
    return _emit_view(ctx, t, offs, extents, keep, node)


def _as_slice(ctx, node):
    """An ``ast.Slice`` for ``slice(a, b[, c])`` written as a call, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
            node.func.id == "slice" and ctx.resolve(node.func) is slice):
        return None
    parts = list(node.args) + [None] * (3 - len(node.args))
    if len(node.args) == 1:
        parts = [None, node.args[0], None]
    for p in parts:
        if p is not None:
            try:
                ctx.static_value(p, "a slice bound")
            except Exception:  # noqa: BLE001 - a run-time bound
                raise ctx.fail(p, "tile_view slice bounds must be compile-time constants",
                               KernelValueError) from None
    return ast.copy_location(ast.Slice(*parts), node)


def _emit_view(ctx, t, offs, extents, keep, node):
    out_shape = tuple(e for e, k in zip(extents, keep) if k) or (1,)
    out = T.TileType(t.type.dtype, out_shape)
    return ctx.apply("tile_view_b", [t] + offs, node,
                     attrs={"out": out, "extents": tuple(extents), "keep": tuple(keep)})


@builtin("tile_assign_b", ["tile_assign(dst, src, offset)"],
         lambda ts, a=None: ts[0] if len(ts) >= 2 and T.is_tile_type(ts[0]) and
         T.is_tile_type(ts[1]) else None, public=False)
class _tile_assign:
    """``dst`` with the block at ``offset`` replaced by ``src`` (a new tile)."""

    def primal(dst, src, *offs):
        c = _let(ast.Call(ast.Attribute(dst.node, "copy", ast.Load()), [], []), "as")
        sl = _view_slice(offs, src.type.shape, [True] * len(offs))
        val = src.node if src.type.dtype == dst.type.dtype else _tile_astype.primal(
            src, dst.type.dtype).node
        _emit(ast.Assign([ast.Subscript(c, sl, ast.Store())], val, lineno=0))
        return Ex(c, dst.type)

    def adjoint(dst, src, *offs, ret, adj):
        sl = _view_slice(offs, src.type.shape, [True] * len(offs))
        g_src = Ex(ast.Call(attr_path("np.ascontiguousarray"),
                            [ast.Subscript(adj.node, sl, ast.Load())], []),
                   T.TileType(dst.type.dtype, src.type.shape))
        if src.type.dtype != dst.type.dtype:
            g_src = _tile_astype.primal(g_src, src.type.dtype)
        c = _let(ast.Call(ast.Attribute(adj.node, "copy", ast.Load()), [], []), "az")
        _emit(ast.Assign([ast.Subscript(c, sl, ast.Store())], _int(0), lineno=0))
        return [Ex(c, dst.type), g_src] + [None] * len(offs)

    def tangent(dst, src, *rest, ret):
        n = (len(rest) - 2) // 2
        offs, td, ts_ = rest[:n], rest[n], rest[n + 1]
        if td is None and ts_ is None:
            return tile_const(0, ret.type)
        td = td if td is not None else tile_const(0, dst.type)
        ts_ = ts_ if ts_ is not None else tile_const(0, src.type)
        return _tile_assign.primal(td, ts_, *offs)


@special_form("tile_assign", "tile_assign(dst, src, offset=0): writes tile src into dst at "
              "offset", assigned=_assign_assigned)
def tile_assign(ctx, node):
    dst_node = node.args[0]
    dst = _tile_arg(ctx, ctx.expr(dst_node), dst_node, "tile_assign's dst")
    src = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], "tile_assign's src")
    if len(src.type.shape) != len(dst.type.shape):
        raise ctx.fail(node, "tile_assign's tiles must have the same number of dimensions")
    kw = _kw(node)
    off_node = node.args[2] if len(node.args) > 2 else kw.get("offset")
    if off_node is None:
        offs = [ir.Const(0, T.int32)] * len(dst.type.shape)
    else:
        items = off_node.elts if isinstance(off_node, ast.Tuple) else [off_node]
        offs = [ctx.expr(i) for i in items]
        offs = [ir.Const(int(o.value), T.int32) if isinstance(o, ir.Const) else o for o in offs]
    if not isinstance(dst_node, ast.Name):
        raise ctx.fail(dst_node, "tile_assign's dst must be a local name")
    new = ctx.apply("tile_assign_b", [dst, src] + offs, node)
    store_back(ctx, dst_node, new)


# ----------------------------------------------------------------------------- subscripts
class _Index:
    """One axis of a tile subscript: an integer (``value`` an operand), a static slice
    (``start, stop, step`` resolved, ``n`` its length) or a tile of integers (a gather)."""

    def __init__(self, kind, value=None, start=0, stop=0, step=1, n=0):
        self.kind, self.value = kind, value
        self.start, self.stop, self.step, self.n = start, stop, step, n

    def key(self):
        return (self.kind, self.start, self.stop, self.step, self.n)


def _parse_subscript(ctx, t, sl, node):
    """The :class:`_Index` of every axis of tile type ``t`` that subscript ``sl`` selects
    (axes not written are full slices), as numpy reads it."""
    items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    shape = t.shape
    if len(items) > len(shape):
        raise ctx.fail(node, f"too many indices ({len(items)}) for a tile of shape {shape}",
                       KernelValueError)
    out = []
    for ax, it in enumerate(items):
        d = shape[ax]
        if isinstance(it, ast.Slice):
            parts = []
            for p in (it.lower, it.upper, it.step):
                if p is None:
                    parts.append(None)
                    continue
                try:
                    v = ctx.static_value(p, "a tile slice bound")
                except Exception:  # noqa: BLE001 - a run-time bound
                    raise ctx.fail(p, "tile slice bounds must be compile-time constants",
                                   KernelValueError) from None
                if isinstance(v, bool) or not isinstance(v, int):
                    raise ctx.fail(p, "tile indices must be integers or slices",
                                   KernelTypeError)
                parts.append(v)
            if parts[2] == 0:
                raise ctx.fail(it, "a tile slice step must not be zero", KernelValueError)
            start, stop, step = slice(*parts).indices(d)
            n = len(range(start, stop, step))
            if n == 0:
                raise ctx.fail(it, "a tile slice selecting a zero-length axis (an empty tile) "
                               "is not supported", KernelValueError)
            out.append(_Index("slice", None, start, stop, step, n))
            continue
        v = ctx.expr(it)
        vt = getattr(v, "type", None)
        if T.is_tile_type(vt):
            if not T.is_int(vt.dtype) or len(vt.shape) != 1:
                raise ctx.fail(it, "a tile index must be a 1-D integer index tile",
                               KernelValueError)
            out.append(_Index("gather", v, n=vt.shape[0]))
            continue
        if isinstance(v, ir.Const):
            if isinstance(v.value, bool) or not isinstance(v.value, (int, np.integer)):
                raise ctx.fail(it, "tile indices must be integers or slices", KernelTypeError)
            k = int(v.value)
            if not -d <= k < d:
                raise ctx.fail(it, f"index {k} is out of bounds for axis {ax} of a tile of "
                               f"shape {shape}", KernelValueError)
            v = ir.Const(k % d, T.int32)
        elif not T.is_int(vt):
            raise ctx.fail(it, "tile indices must be integers or slices", KernelTypeError)
        out.append(_Index("int", v))
    out += [_Index("slice", None, 0, d, 1, d) for d in shape[len(items):]]
    gathers = [i for i in out if i.kind == "gather"]
    if gathers and (len(gathers) > 1 or any(
            i.kind == "int" or (i.kind == "slice" and i.n != d)
            for i, d in zip(out, shape) if i.kind != "gather")):
        raise ctx.fail(node, "indexing a tile with an index tile requires ':' on all other "
                       "axes", KernelValueError)
    return out


def _sub_node(spec, operands, gather_at=None):
    """The numpy subscript of ``spec`` (operands: the Ex of each int/gather axis in order);
    ``gather_at``: the index expression replacing the gather axis (one element of it)."""
    parts, it = [], iter(operands)
    for s in spec:
        if s.kind == "slice":
            stop = None if s.stop < 0 else _int(s.stop)
            parts.append(ast.Slice(_int(s.start), stop, _int(s.step)))
        elif s.kind == "int":
            parts.append(next(it).node)
        else:
            g = next(it)
            parts.append(gather_at if gather_at is not None else g.node)
    return _tuple(parts) if len(parts) > 1 else parts[0]


def _out_shape(spec):
    return tuple(s.n for s in spec if s.kind != "int") or None


def _gather_loop(spec, operands, dst, src, dst_is_full):
    """Statements: for each k of the gather, ``dst[...idx[k]...] += src[...k...]`` (adjoint
    of a gather: repeated indices add) or, with ``dst_is_full`` False, the read."""
    g = next(o for s, o in zip([s for s in spec if s.kind != "slice"], operands)
             if s.kind == "gather")
    k = _fresh("k")
    full = _sub_node(spec, operands, ast.Subscript(g.node, name(k), ast.Load()))
    part = _sub_node(spec, operands, name(k))
    body = [ast.AugAssign(ast.Subscript(dst, full, ast.Store()), ast.Add(),
                          ast.Subscript(src, part, ast.Load()))]
    n = next(s.n for s in spec if s.kind == "gather")
    return _loop(k, _int(0), _int(n), body)


@builtin("tile_index_b", ["t[...] (a view or gather of a tile)"],
         lambda ts, a=None: a["out"] if a and "out" in a and ts and T.is_tile_type(ts[0])
         else None, public=False)
class _tile_index:
    """``t[spec]``: a new tile (the view copied); an integer on every axis reads an element
    (``tile_extract``)."""

    def primal(t, *ops, spec, out):
        node = ast.Subscript(t.node, _sub_node(spec, ops), ast.Load())
        return Ex(ast.Call(attr_path("np.ascontiguousarray"), [node], []), out)

    def adjoint(t, *ops, ret, adj, spec, out):
        c = _let(tile_const(0, t.type).node, "ix")
        if any(s.kind == "gather" for s in spec):
            _emit(_gather_loop(spec, ops, c, adj.node, True))
        else:
            _emit(ast.AugAssign(ast.Subscript(c, _sub_node(spec, ops), ast.Store()), ast.Add(),
                                adj.node))
        return [Ex(c, t.type)] + [None] * len(ops)

    def tangent(t, *rest, ret, spec, out):
        n = (len(rest) - 1) // 2
        tt = rest[n]
        if tt is None:
            return tile_const(0, out)
        return _tile_index.primal(tt, *rest[:n], spec=spec, out=out)


@builtin("tile_index_set_b", ["t[...] = u"],
         lambda ts, a=None: ts[0] if ts and T.is_tile_type(ts[0]) and a and "spec" in a
         else None, public=False)
class _tile_index_set:
    """A copy of ``t`` with the view ``t[spec]`` replaced by tile ``u``."""

    def primal(t, u, *ops, spec):
        c = _let(ast.Call(ast.Attribute(t.node, "copy", ast.Load()), [], []), "st")
        _emit(ast.Assign([ast.Subscript(c, _sub_node(spec, ops), ast.Store())], u.node,
                         lineno=0))
        return Ex(c, t.type)

    def adjoint(t, u, *ops, ret, adj, spec):
        view = T.TileType(t.type.dtype, _out_shape(spec))
        gu = Ex(ast.Call(attr_path("np.ascontiguousarray"), [
            ast.Subscript(adj.node, _sub_node(spec, ops), ast.Load())], []), view)
        c = _let(ast.Call(ast.Attribute(adj.node, "copy", ast.Load()), [], []), "sz")
        _emit(ast.Assign([ast.Subscript(c, _sub_node(spec, ops), ast.Store())], _int(0),
                         lineno=0))
        return [Ex(c, t.type), gu] + [None] * len(ops)

    def tangent(t, u, *rest, ret, spec):
        n = (len(rest) - 2) // 2
        ops, tt, tu = rest[:n], rest[n], rest[n + 1]
        if tt is None and tu is None:
            return tile_const(0, t.type)
        tt = tt if tt is not None else tile_const(0, t.type)
        tu = tu if tu is not None else tile_const(0, u.type)
        return _tile_index_set.primal(tt, tu, *ops, spec=spec)


def subscript(ctx, base, sl, node):
    """``t[...]`` on a tile: an element (an integer per axis), else a view (a new tile)."""
    spec = _parse_subscript(ctx, base.type, sl, node)
    ops = [s.value for s in spec if s.kind != "slice"]
    if all(s.kind == "int" for s in spec):
        return ctx.apply("tile_extract", [base] + ops, node)
    out = T.TileType(base.type.dtype, _out_shape(spec))
    view = ctx.apply("tile_index_b", [base] + ops, node, attrs={"spec": tuple(spec),
                                                                "out": out})
    if isinstance(base, ir.Var):
        ctx.tile_views[id(view)] = (base, tuple(spec), ops)
    return view


def assign_subscript(ctx, current, sl, value, node):
    """The tile ``current`` with ``current[sl] = value`` (a new tile): an element, or a view
    replaced by a tile of its shape."""
    spec = _parse_subscript(ctx, current.type, sl, node)
    ops = [s.value for s in spec if s.kind != "slice"]
    if all(s.kind == "int" for s in spec):
        dt = current.type.dtype
        if getattr(value, "type", None) != dt and T.is_scalar(dt):
            value = ctx.apply("cast", [value], node, attrs={"type": dt})
        return ctx.apply("tile_insert", [current] + ops + [value], node)
    if any(s.kind == "gather" for s in spec):
        raise ctx.fail(node, "assigning into a tile through an index tile is not supported",
                       KernelValueError)
    want = _out_shape(spec)
    vt = getattr(value, "type", None)
    if not T.is_tile_type(vt):
        raise ctx.fail(node, f"assigning into a tile slice requires a tile of matching shape "
                       f"{want}, got {T.type_name(vt)}", KernelValueError)
    if vt.shape != want:
        raise ctx.fail(node, f"shape mismatch: a tile of shape {vt.shape} does not fit the "
                       f"slice of shape {want}", KernelValueError)
    if vt.dtype != current.type.dtype:
        value = ctx.apply("tile_astype_b", [value], node, attrs={"dtype": current.type.dtype})
    return ctx.apply("tile_index_set_b", [current, value] + ops, node,
                     attrs={"spec": tuple(spec)})


def atomic_subscript(ctx, current, sl, value, op, node):
    """The tile ``current`` after ``current[i, j] op= value`` in a CUDA kernel (``op`` ``"add"``,
    ``"sub"``, ``"and"``, ``"or"``, ``"xor"``): every thread's value combined into the element
    atomically, as Warp's shared tiles (:class:`.elements.tile_add_at`, ``tile_bits_at``). A
    dtype CUDA cannot combine atomically is refused on ``node``'s line: the threads' reads and
    writes back would race."""
    from .elements import ATOMIC_ADD_DTYPES, ATOMIC_BITS_DTYPES
    spec = _parse_subscript(ctx, current.type, sl, node)
    dt = current.type.dtype
    adds = op in ("add", "sub")
    if adds and T.scalar_of(dt) not in ATOMIC_ADD_DTYPES:
        raise ctx.fail(node, "'+=' into a tile element on CUDA adds every thread's value "
                       "atomically, as Warp: tiles of float32, float64, 32- or 64-bit "
                       "integers, or vectors and matrices of them (launch the kernel with "
                       "device='cpu')", KernelTypeError)
    if not adds and dt not in ATOMIC_BITS_DTYPES:  # (a matrix's bits: not built)
        raise ctx.fail(node, "a bitwise '&=', '|=' or '^=' into a tile element on CUDA "
                       "combines every thread's value atomically, as Warp: tiles of 32- or "
                       "64-bit integers (launch the kernel with device='cpu')", KernelTypeError)
    ops = [s.value for s in spec]  # (all integers: check_augmented)
    if getattr(value, "type", None) != dt:
        value = ctx.apply("cast", [value], node, attrs={"type": dt})
    if not adds:
        return ctx.apply("tile_bits_at", [current] + ops + [value], node, attrs={"op": op})
    if op == "sub":
        value = ctx.apply("neg", [value], node)
    return ctx.apply("tile_add_at", [current] + ops + [value, ir.Const(True, T.bool)], node)


def check_augmented(ctx, current, sl, node):
    """``t[...] += u``: only on an element (Warp refuses it on a view)."""
    spec = _parse_subscript(ctx, current.type, sl, node)
    if not all(s.kind == "int" for s in spec):
        raise ctx.fail(node, "Compound assignment to a tile view is not supported: assign the "
                       "result instead (t[a:b] = t[a:b] + u)", KernelValueError)
