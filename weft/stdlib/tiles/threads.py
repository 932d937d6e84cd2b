"""Tiles: a block's threads. ``wp.tile(x)`` (the block's values of ``x``; also the annotation
``wp.tile[dtype, M, N]``), ``untile``, ``tile_from_thread``, ``block_dim``, and the per-lane
writes into a tile ``tile_scatter_add`` and ``tile_scatter_masked``. On the CPU a block is one
thread, or ``block_dim`` lanes with cooperative CPU blocks (:mod:`weft.stdlib.lanes`)."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelTypeError, KernelValueError
from .. import ir, lanes
from ..exprs import Ex, attr_path, const, tile_const, tile_dtype
from ..registry import NAMESPACE, SpecialForm, builtin, lookup, special_form
from .common import (_assign_assigned, _emit, _int, _kw, _let, _tile_arg, _tuple, _wk,
                     static_shape, store_back)
from .elements import tile_extract


# ----------------------------------------------------------------------------- per thread
@builtin("tile_from_value", ["tile(x): a tile of the block's values of x"],
         lambda ts, a=None: T.TileType(ts[0], (1,)) if len(ts) == 1 and
         (T.is_scalar(ts[0]) or T.is_composite(ts[0])) else None, public=False)
class tile_from_value:
    """On the CPU a block is one thread: its tile has one element."""

    def primal(x):
        t = T.TileType(x.type, (1,))
        return Ex(_wk("tile_insert", tile_const(0, t).node, _tuple([_int(0)]), x.node), t)

    def adjoint(x, ret, adj):
        return [tile_extract.primal(adj, const(0, T.int32))]

    def tangent(x, tx, ret):
        return tile_from_value.primal(tx) if tx is not None else tile_const(0, ret.type)


def tile_form(ctx, node):
    if len(node.args) != 1:
        raise ctx.fail(node, "wp.tile(x) takes one value")
    x = ctx.expr(node.args[0])
    if T.is_tile_type(getattr(x, "type", None)):
        return x
    kw = _kw(node)
    keep = bool(ctx.static_value(kw["preserve_type"], "preserve_type")) \
        if "preserve_type" in kw else False
    cuda = lanes.cuda_block_mode(ctx, node, "wp.tile(x) of a value")
    if cuda is not None:  # each thread's value into its element of a tile in shared memory
        xt = getattr(x, "type", None)
        if not (T.is_scalar(xt) or T.is_composite(xt)):
            raise ctx.fail(node, "wp.tile(x) on CUDA takes a scalar, vector, matrix, "
                           "quaternion or transform")
        cuda.coupled.append("tile")
        if isinstance(x, ir.Const) and x.literal:
            x = ir.Const(x.value, x.type)
        B = cuda.block_dim
        t = T.TileType(T.scalar_of(xt), (xt._length_, B)) if T.is_vector(xt) and not keep \
            else T.TileType(xt, (B,))
        return ctx.emit(ir.Prim(lookup("tile_of_lanes"), [x], {"type": t}), t, node)
    mode = lanes.current()
    if mode is not None and (T.is_scalar(getattr(x, "type", None)) or
                             T.is_composite(getattr(x, "type", None))):
        # cooperative CPU blocks: every lane's value (replaced by the lane rewrite)
        mode.coupled.append("tile")
        if isinstance(x, ir.Const) and x.literal:
            x = ir.Const(x.value, x.type)
        if T.is_vector(x.type) and not keep:
            t = T.TileType(T.scalar_of(x.type), (x.type._length_, mode.block_dim))
            return ctx.emit(ir.Prim(lookup("lane_gather_vec"), [x], {"type": t}), t, node)
        t = T.TileType(x.type, (mode.block_dim,))
        return ctx.emit(ir.Prim(lookup("lane_gather"), [x], {"type": t}), t, node)
    if T.is_vector(getattr(x, "type", None)) and not keep:
        # Warp: a vector's components become a column per thread: shape (length, block_dim)
        return ctx.apply("tile_from_vector", [x], node)
    return ctx.apply("tile_from_value", [x], node)


@builtin("tile_from_vector", ["tile(v): the block's vectors as columns"],
         lambda ts, a=None: T.TileType(T.scalar_of(ts[0]), (ts[0]._length_, 1))
         if len(ts) == 1 and T.is_vector(ts[0]) else None, public=False)
class tile_from_vector:
    def primal(v):
        t = T.TileType(T.scalar_of(v.type), (v.type._length_, 1))
        arr = ast.Call(attr_path("np.array"), [v.node], [])
        return Ex(ast.Call(ast.Attribute(arr, "reshape", ast.Load()),
                           [_tuple([_int(v.type._length_), _int(1)])], []), t)

    def adjoint(v, ret, adj):
        g = adj.atom()
        return [Ex(_tuple([ast.Subscript(g.node, _tuple([_int(k), _int(0)]), ast.Load())
                           for k in range(v.type._length_)]), v.type)]

    def tangent(v, tv, ret):
        return tile_from_vector.primal(tv) if tv is not None else tile_const(0, ret.type)


class TileForm(SpecialForm):
    """``wp.tile``: in kernels, ``wp.tile(x)`` (the block's values of ``x`` as a tile); as an
    annotation, ``wp.tile[dtype, M, N]`` or ``wp.tile(dtype=..., shape=...)`` (a tile
    parameter of a func)."""

    def __call__(self, *args, **kwargs):
        if not args and set(kwargs) == {"dtype", "shape"}:  # Warp's tile type, by keywords
            shape = kwargs["shape"]
            return self[(kwargs["dtype"],) + (tuple(shape) if isinstance(shape, (tuple, list))
                                              else (shape,))]
        return super().__call__(*args, **kwargs)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) < 2:
            raise TypeError("wp.tile[dtype, M, ...] needs a dtype and a shape")
        shape = key[1] if len(key) == 2 and isinstance(key[1], tuple) else key[1:]
        return T.TileType(T.as_value_type(key[0]), tuple(int(d) for d in shape))


NAMESPACE["tile"] = TileForm("tile", "tile(x): a tile holding the value of x of every thread "
                             "of the block (on the CPU, one); wp.tile[dtype, M, N] annotates "
                             "a tile", tile_form)


@special_form("untile", "untile(t): this thread's element of a 1-D tile of the block's length")
def untile(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "untile's operand")
    cuda = lanes.cuda_block_mode(ctx, node, "wp.untile")
    if cuda is not None:  # each thread's element of the tile
        B, shape, dt = cuda.block_dim, t.type.shape, t.type.dtype
        if len(shape) == 2 and T.is_scalar(dt) and shape[1] == B:
            rt = T.vector(shape[0], dt)
        elif len(shape) == 1 and shape[0] == B and (T.is_scalar(dt) or T.is_composite(dt)):
            rt = dt
        else:
            raise ctx.fail(node, f"untile on CUDA takes a tile of shape ({B},), or (n, {B}) "
                           f"of scalars (the block's {B} threads), got "
                           f"{shape} of {T.type_name(dt)}", KernelValueError)
        cuda.coupled.append("untile")
        return ctx.emit(ir.Prim(lookup("tile_lane_value"), [t], {"type": rt}), rt, node)
    mode = lanes.current()
    if mode is not None:
        mode.coupled.append("untile")
        if len(t.type.shape) == 2 and T.is_scalar(t.type.dtype) and \
                t.type.shape[1] == mode.block_dim:
            rt = T.vector(t.type.shape[0], t.type.dtype)
        elif len(t.type.shape) == 1 and t.type.shape[0] == mode.block_dim:
            rt = t.type.dtype
        else:
            raise ctx.fail(node, f"untile takes a tile of shape ({mode.block_dim},) or (n, "
                           f"{mode.block_dim}) (the block's {mode.block_dim} lanes), got "
                           f"{t.type.shape}", KernelValueError)
        return ctx.emit(ir.Prim(lookup("lane_untile"), [t], {"type": rt}), rt, node)
    if len(t.type.shape) == 2 and t.type.shape[1] == 1 and T.is_scalar(t.type.dtype):
        # a column per thread (wp.tile of a vector): the thread's vector
        comps = [ctx.apply("tile_extract", [t, ir.Const(k, T.int32), ir.Const(0, T.int32)], node)
                 for k in range(t.type.shape[0])]
        vt = T.vector(t.type.shape[0], t.type.dtype)
        return ctx.apply("construct", comps, node, attrs={"type": vt})
    return ctx.apply("tile_extract", [t, ir.Const(0, T.int32)], node)


# ----------------------------------------------------------------------------- CUDA threads
def _lane_dtype(t):
    return tile_dtype(T.scalar_of(t.dtype))


@builtin("tile_of_lanes", ["tile(x) on CUDA: each thread's value in its element"],
         lambda ts, a=None: a.get("type") if a else None, public=False)
class tile_of_lanes:
    """``wp.tile(x)`` on CUDA (generated code the pass ``cuda_tiles`` makes cooperative): thread
    ``l``'s value ``x`` as element ``l`` of a tile of ``block_dim`` elements; a vector's
    components as column ``l`` of an ``(n, block_dim)`` tile, or (``preserve_type``) as
    element ``l`` of a tile of vectors."""

    def primal(x, type):
        if T.is_composite(x.type):
            x = x.atom()
            comps = _tuple([x.comp(k).node for k in range(x.type._length_)])
            if len(type.shape) == 2:  # a vector as a column
                kind, dims = "cols", type.shape
            else:  # a tile of composites: the buffer's axes are the tile's, then the element's
                kind, dims = "rows", type.shape + tuple(T.element_shape(x.type))
            return Ex(_wk(f"tile_of_lanes_{kind}", comps, *map(_int, dims), _lane_dtype(type)),
                      type)
        return Ex(_wk("tile_of_lanes", x.node, _int(type.shape[0]), _lane_dtype(type)), type)

    def adjoint(x, ret, adj, type):
        return [tile_lane_value.primal(adj, type=x.type)]

    def tangent(x, tx, ret, type):
        return tile_of_lanes.primal(tx, type=type) if tx is not None else tile_const(0, type)


@builtin("tile_lane_value", ["untile(t) on CUDA: the thread's element"],
         lambda ts, a=None: a.get("type") if a else None, public=False)
class tile_lane_value:
    """``wp.untile(t)`` on CUDA: thread ``l``'s element ``l`` of a tile of ``block_dim``
    scalars or vectors, or column ``l`` of an ``(n, block_dim)`` tile as a vector."""

    def primal(t, type):
        if not T.is_composite(type):
            return Ex(_wk("tile_lane_value", t.node), type)
        from ..exprs import tup
        fn = "tile_lane_at" if T.is_scalar(t.type.dtype) else "tile_lane_comp"
        return tup([Ex(_wk(fn, t.node, _int(k)), T.scalar_of(type))
                    for k in range(type._length_)], type)

    def adjoint(t, ret, adj, type):
        return [tile_of_lanes.primal(adj, type=t.type)]

    def tangent(t, tt, ret, type):
        return tile_lane_value.primal(tt, type=type) if tt is not None else const(0, type)


@builtin("tile_from_lane", ["tile_from_thread on CUDA: one thread's value, everywhere"],
         lambda ts, a=None: a.get("type") if a else None, public=False)
class tile_from_lane:
    """``tile_from_thread(shape, x, thread_idx)`` on CUDA: thread ``thread_idx`` fills the tile
    with its ``x``. The adjoint of ``x`` is that thread's: the sum of the tile's adjoint (the
    CPU's order), the other threads' zero."""

    def primal(x, idx, type):
        dims = tuple(type.shape)
        return Ex(_wk("tile_from_lane", x.node, idx.node, *map(_int, dims), _lane_dtype(type)),
                  type)

    def adjoint(x, idx, ret, adj, type):
        own = ast.Compare(_wk("tile_lane"), [ast.Eq()], [idx.node])
        g = ast.IfExp(own, _wk("tile_sum_in_order", adj.node), const(0, x.type).node)
        return [Ex(ast.Call(attr_path(x.type.__name__), [g], []), x.type), None]

    def tangent(x, idx, tx, tidx, ret, type):
        return tile_from_lane.primal(tx, idx, type=type) if tx is not None else \
            tile_const(0, type)


# ----------------------------------------------------------------------------- scatter-add
def _scatter_target(c, idx, k=None):
    items = [i.node for i in idx] + ([_int(k)] if k is not None else [])
    return ast.Subscript(c, _tuple(items), ast.Store())


@builtin("tile_scatter_add_b", ["tile_scatter_add(t, i, ..., value, has_value)"],
         lambda ts, a=None: ts[0] if T.is_tile_type(ts[0]) else None, public=False)
class _tile_scatter_add:
    """``t`` with ``value`` added at the index when ``has_value`` (a lane's add: on the CPU
    without cooperative blocks, the block's one lane)."""

    def primal(t, *rest):
        idx, value, has = rest[:-2], rest[-2], rest[-1]
        c = _let(ast.Call(ast.Attribute(t.node, "copy", ast.Load()), [], []), "sc")
        if T.is_composite(t.type.dtype):
            v = value.atom()
            adds = [ast.AugAssign(_scatter_target(c, idx, k), ast.Add(), v.comp(k).node)
                    for k in range(v.length)]
        else:
            adds = [ast.AugAssign(_scatter_target(c, idx), ast.Add(), value.node)]
        _emit(ast.If(has.node, adds, []))
        return Ex(c, t.type)

    def adjoint(t, *rest, ret, adj):
        idx, value, has = rest[:-2], rest[-2], rest[-1]
        g = tile_extract.primal(adj, *idx)
        g = Ex(ast.IfExp(has.node, g.node, const(0, value.type).node), value.type)
        return [adj] + [None] * len(idx) + [g, None]

    def tangent(t, *rest, ret):
        n = len(rest) // 2
        idx, value, has = rest[:n - 2], rest[n - 2], rest[n - 1]
        tt, tv = rest[n], rest[n + len(idx) + 1]
        if tt is None and tv is None:
            return tile_const(0, t.type)
        tt = tt if tt is not None else tile_const(0, t.type)
        tv = tv if tv is not None else const(0, value.type)
        return _tile_scatter_add.primal(tt, *idx, tv, has)


@special_form("tile_scatter_add", "tile_scatter_add(t, i, ..., value, has_value, atomic=True): "
              "adds each lane's value into tile t at its index (t a local name)")
def tile_scatter_add(ctx, node):
    kw = _kw(node)
    if not node.args or not isinstance(node.args[0], ast.Name):
        raise ctx.fail(node, "tile_scatter_add's tile must be a local name")
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_scatter_add's tile")
    nd = len(t.type.shape)
    rest = list(node.args[1:])
    for key in ("value", "has_value", "atomic"):
        if key in kw:
            rest.append(kw[key])
    if len(rest) not in (nd + 2, nd + 3):
        raise ctx.fail(node, f"tile_scatter_add(t, {', '.join('ijk'[:nd])}, value, has_value) "
                       f"takes {nd} indices for a tile of shape {t.type.shape}", KernelTypeError)
    idx = [ctx.expr(a) for a in rest[:nd]]
    idx = [ir.Const(int(i.value), T.int32) if isinstance(i, ir.Const) else i for i in idx]
    for a, i in zip(rest[:nd], idx):
        if not T.is_int(i.type):
            raise ctx.fail(a, "tile_scatter_add's indices must be integers", KernelTypeError)
    value = ctx.adapt_literal(ctx.expr(rest[nd]), t.type.dtype)
    if value.type != t.type.dtype:
        raise ctx.fail(rest[nd], f"tile_scatter_add: the value's type "
                       f"{T.type_name(value.type)} does not match the tile's "
                       f"{T.type_name(t.type.dtype)}", KernelTypeError)
    has = ctx.expr(rest[nd + 1])
    if isinstance(has, ir.Const):
        has = ir.Const(bool(has.value), T.bool)
    if has.type is not T.bool:
        raise ctx.fail(rest[nd + 1], "tile_scatter_add's has_value must be a bool",
                       KernelTypeError)
    if lanes.CUDA.get():  # each thread adds its value, atomically (atomic=False too)
        _cuda_element_dtype(ctx, t, node, "tile_scatter_add", atomic=True)
        new = ctx.emit(ir.Prim(lookup("tile_add_at"), [t] + idx + [value, has]), t.type, node)
        return store_back(ctx, node.args[0], new)
    mode = lanes.current()
    if mode is not None:
        mode.coupled.append("tile_scatter_add")
    new = ctx.emit(ir.Prim(lookup("tile_scatter_add_b"), [t] + idx + [value, has]), t.type,
                   node)
    store_back(ctx, node.args[0], new)


def _cuda_element_dtype(ctx, t, node, what, atomic=False):
    """On CUDA, ``what`` (each thread's write into a tile element) takes tiles of scalars, of a
    dtype CUDA adds atomically when ``atomic``."""
    from .elements import ATOMIC_ADD_DTYPES
    dt = t.type.dtype
    if T.is_composite(dt) or (atomic and dt not in ATOMIC_ADD_DTYPES):
        raise ctx.fail(node, f"{what} on CUDA takes a tile of "
                       f"{'float32, float64 or 32/64-bit integers' if atomic else 'scalars'}, "
                       f"not of {T.type_name(dt)} (launch the kernel with device='cpu')",
                       KernelTypeError)


@special_form("tile_scatter_masked", "tile_scatter_masked(t, i, ..., value, has_value): "
              "t[i, ...] = value where has_value (each thread's write; one lane on the CPU)",
              assigned=_assign_assigned)
def tile_scatter_masked(ctx, node):
    """Warp's ``tile_scatter_masked``: ``if has_value: t[i, ...] = value``, the tile's name
    rebound (weft's tiles are values). Every argument is evaluated, as Warp; the indices are
    used only where ``has_value`` holds. Its adjoint is the write's: ``value`` takes the tile's
    adjoint at the index, which is then cleared. On CUDA each thread writes its own element
    (:class:`.elements.tile_set_at`)."""
    if node.keywords or len(node.args) < 4:
        raise ctx.fail(node, "tile_scatter_masked(t, i, ..., value, has_value) takes the tile, "
                       "one index per dimension, the value and has_value, by position",
                       KernelTypeError)
    dst_node = node.args[0]
    t = _tile_arg(ctx, ctx.expr(dst_node), dst_node, "tile_scatter_masked's 'a' argument")
    n = len(node.args) - 3
    if n != len(t.type.shape):
        raise ctx.fail(node, f"tile_scatter_masked() incorrect number of indices ({n}) for "
                       f"tile shape {tuple(t.type.shape)}", KernelTypeError)
    if not isinstance(dst_node, ast.Name):
        raise ctx.fail(dst_node, "tile_scatter_masked's tile must be a local name (weft's "
                       "tiles are values: the name is given the result)", KernelTypeError)
    idx = [ctx.adapt_literal(ctx.expr(a), T.int32) for a in node.args[1:1 + n]]
    for a, i in zip(node.args[1:1 + n], idx):
        if not T.is_int(i.type):
            raise ctx.fail(a, f"tile_scatter_masked()'s indices must be integers, got "
                           f"{T.type_name(i.type)}", KernelTypeError)
    value = ctx.adapt_literal(ctx.expr(node.args[-2]), t.type.dtype)
    if value.type != t.type.dtype:
        raise ctx.fail(node.args[-2], f"tile_scatter_masked() 'value' type must match tile "
                       f"dtype, got {T.type_name(value.type)} and tile dtype "
                       f"{T.type_name(t.type.dtype)}", KernelTypeError)
    has = ctx.expr(node.args[-1])
    if lanes.CUDA.get():
        _cuda_element_dtype(ctx, t, node, "tile_scatter_masked")
        if isinstance(has, ir.Const):
            has = ir.Const(bool(has.value), T.bool)
        if has.type is not T.bool:
            has = ctx.apply("cast", [has], node, attrs={"type": T.bool})
        new = ctx.emit(ir.Prim(lookup("tile_set_at"), [t] + idx + [value, has]), t.type, node)
        return store_back(ctx, dst_node, new)
    tmp = f"_scatter{node.lineno}_{node.col_offset}_"
    names = [f"{tmp}i{k}" for k in range(n)] + [f"{tmp}v", f"{tmp}m"]
    for nm, v in zip(names, idx + [value, has]):
        ctx.bind(nm, v, node)
    load = [ast.Name(nm, ast.Load()) for nm in names]
    target = ast.Subscript(ast.Name(dst_node.id, ast.Load()),
                           load[0] if n == 1 else ast.Tuple(load[:n], ast.Load()), ast.Store())
    stmt = ast.Assign([target], load[-2])
    if isinstance(has, ir.Const):  # known at compile time: the write, or nothing
        if not has.value:
            return
    else:
        stmt = ast.If(load[-1], [stmt], [])
    for sub in ast.walk(stmt):
        ast.copy_location(sub, node)
    ctx.lower_stmt(stmt)


# ----------------------------------------------------------------------------- from one thread
@special_form("tile_from_thread", "tile_from_thread(shape, value, thread_idx=0): a tile "
              "filled with one thread's value")
def tile_from_thread(ctx, node):
    kw = _kw(node)
    shape_node = node.args[0] if node.args else kw.get("shape")
    value_node = node.args[1] if len(node.args) > 1 else kw.get("value")
    shape = static_shape(ctx, shape_node, "the tile's shape")
    value = ctx.expr(value_node)
    if isinstance(value, ir.Const) and value.literal:
        value = ir.Const(value.value, value.type)
    t = T.TileType(value.type, shape)
    if lanes.CUDA.get():  # thread thread_idx's value, filled by it into shared memory
        if not T.is_scalar(value.type):
            raise ctx.fail(node, "tile_from_thread on CUDA takes a scalar value")
        idx_node = node.args[2] if len(node.args) > 2 else kw.get("thread_idx")
        idx = ctx.expr(idx_node) if idx_node is not None else ir.Const(0, T.int32)
        if isinstance(idx, ir.Const):
            idx = ir.Const(int(idx.value), T.int32)
        return ctx.emit(ir.Prim(lookup("tile_from_lane"), [value, idx], {"type": t}), t, node)
    mode = lanes.current()
    if mode is not None:  # cooperative CPU blocks: lane thread_idx's value
        mode.coupled.append("tile_from_thread")
        idx_node = node.args[2] if len(node.args) > 2 else kw.get("thread_idx")
        idx = ctx.expr(idx_node) if idx_node is not None else ir.Const(0, T.int32)
        if isinstance(idx, ir.Const):
            idx = ir.Const(int(idx.value), T.int32)
        return ctx.emit(ir.Prim(lookup("lane_from_thread"), [value, idx], {"type": t}), t, node)
    return ctx.emit(ir.Prim(lookup("tile_const"), [value], {"type": t}), t, node)


@special_form("block_dim", "block_dim(): the number of threads of a tile block (1 on the CPU, "
              "block_dim with wp.config.enable_cpu_blocks)")
def block_dim(ctx, node):
    if lanes.CUDA.get():  # the threads of the launch's CUDA block
        return ctx.emit(ir.Prim(lookup("cuda_block_dim"), [], {}), T.int32, node)
    mode = lanes.current()
    if mode is not None:
        mode.coupled.append("block_dim")
        return ir.Const(mode.block_dim, T.int32)
    return ir.Const(1, T.int32)


@builtin("cuda_block_dim", ["block_dim() on CUDA"], lambda ts, a=None: T.int32 if not ts
         else None, differentiable=False, public=False)
class _cuda_block_dim:
    """The threads of the CUDA block running the kernel (``cuda.blockDim.x``)."""

    def primal():
        return Ex(ast.Call(attr_path("int32"), [_wk("tile_lanes")], []), T.int32)
