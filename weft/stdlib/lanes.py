"""Cooperative CPU blocks (``wp.config.enable_cpu_blocks``): the builtins of the lane loops.

When a tile kernel is launched on the CPU with ``block_dim > 1`` and
``wp.config.enable_cpu_blocks``, Warp runs ``block_dim`` lanes per block (as fibers that switch
at the tile operations' barriers). weft compiles such a kernel once more with the block size
known (:data:`ACTIVE` holds it while the kernel is lowered) and, where the kernel's lanes
interact (``wp.tile(x)``, ``wp.untile``, tile stacks, ``wp.block_dim()``, lanes writing one
tile), rewrites it into loops over the lanes between those barriers
(:mod:`weft.transpiler.lanes`). The builtins here are what that rewrite emits; the
placeholders (``lane_gather``, ...) are what the lowering emits in place of the per-thread
builtins while :data:`ACTIVE` is set, for the rewrite to replace.

In generated code, ``_tid`` is the block's index (the kernel's loop runs over blocks) and the
flat launch index of lane ``l`` is ``_tid * block_dim + l``.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
from dataclasses import dataclass, field

from ..core import types as T
from ..core.errors import KernelError
from .exprs import Ex, name
from .registry import builtin

VOID = T.TupleType(())


@dataclass
class LaneMode:
    """The block size of a kernel compiled with cooperative CPU blocks, whether the launch is
    tiled (``wp.launch_tiled``: the lanes are the last launch dimension) and what the lowering
    saw that couples the lanes (``coupled``: reasons, for the rewrite's decision)."""

    block_dim: int
    tiled: bool
    ndim: int = 1
    coupled: list = field(default_factory=list)


ACTIVE: contextvars.ContextVar = contextvars.ContextVar("weft_lanes", default=None)


def current():
    """The :class:`LaneMode` of the kernel being lowered, or None (one lane per block)."""
    return ACTIVE.get()


#: True while a kernel is lowered for CUDA, whose tile blocks are blocks of real threads
CUDA: contextvars.ContextVar = contextvars.ContextVar("weft_cuda_lowering", default=False)


class NeedsBlockDim(KernelError):
    """On CUDA, an operation on the block's threads (``wp.tile(x)`` of a value, ``untile``)
    makes a tile of ``block_dim`` elements: the kernel compiles for the launch's block size
    (:func:`weft.runtime.dispatch.compiled_of` catches this and compiles it so)."""


def cuda_block_mode(ctx, node, what):
    """On CUDA, the :class:`LaneMode` of the block size the kernel is compiled for (raising
    :class:`NeedsBlockDim` when it is compiled without one); None off CUDA."""
    if not CUDA.get():
        return None
    mode = current()
    if mode is None:
        raise ctx.fail(node, f"{what} on CUDA needs the block size when compiling (launch the "
                       "kernel with wp.launch_tiled or wp.launch on a CUDA device)", NeedsBlockDim)
    return mode


@contextlib.contextmanager
def active(mode):
    token = ACTIVE.set(mode)
    try:
        yield mode
    finally:
        ACTIVE.reset(token)


def _int(v):
    return ast.Constant(int(v))


def _flat(lane, block_dim):
    """``_tid * block_dim + lane``: the flat launch index of a lane of this block."""
    return ast.BinOp(ast.BinOp(name("_tid"), ast.Mult(), _int(block_dim)), ast.Add(), lane.node)


def _dim(k):
    return ast.Subscript(name("_dim"), _int(k), ast.Load())


@builtin("lane_tid", ["lane_tid(lane): a launch index of a lane"], lambda ts, a=None: T.int32,
         differentiable=False, public=False)
class lane_tid:
    def primal(lane, axis, tid_dims, block_dim, tiled, ndim):
        if not tiled and axis is None:  # the first launch index of the lane's flat index
            return Ex(ast.Call(ast.Attribute(name("_wk"), "first_index", ast.Load()),
                               [_flat(lane, block_dim), name("_dim")], []), T.int32)
        if tiled:  # the block's indices from _tid over the grid _dim[:ndim]; then the lane
            if axis is not None and axis >= ndim:
                return Ex(lane.node, T.int32)
            node, dims = name("_tid"), ndim
        else:
            node, dims = _flat(lane, block_dim), tid_dims
        a = 0 if axis is None else axis
        stride = None
        for d in range(a + 1, dims):
            stride = _dim(d) if stride is None else ast.BinOp(stride, ast.Mult(), _dim(d))
        if stride is not None:
            node = ast.BinOp(node, ast.FloorDiv(), stride)
        if a > 0:
            node = ast.BinOp(node, ast.Mod(), _dim(a))
        return Ex(node, T.int32)


@builtin("lane_active", ["lane_active(lane): the lane is inside the launch"],
         lambda ts, a=None: T.bool, differentiable=False, public=False)
class lane_active:
    def primal(lane, block_dim):
        size = ast.Call(ast.Attribute(name("_wk"), "launch_size", ast.Load()), [name("_dim")], [])
        return Ex(ast.Compare(_flat(lane, block_dim), [ast.Lt()], [size]), T.bool)


@builtin("lane_set", ["lane_set(buf, lane, x): buf[lane] = x in place"],
         lambda ts, a=None: VOID, differentiable=False, public=False)
class lane_set:
    """Element ``lane`` of the per-lane buffer ``buf`` (a 1-D tile) set in place (the buffer
    is the rewrite's own: no tile operation sees it change)."""

    def primal(buf, lane, x):
        dt = buf.type.dtype
        if not T.is_composite(dt):
            _emit(ast.Assign([ast.Subscript(buf.node, lane.node, ast.Store())], x.node,
                             lineno=0))
            return Ex(ast.Constant(None), VOID)
        k = 1
        for d in T.element_shape(dt):
            k *= d
        flat = _let(ast.Call(ast.Attribute(buf.node, "reshape", ast.Load()),
                             [ast.Tuple([_int(buf.type.shape[0]), _int(k)], ast.Load())], []),
                    "lb")
        x = x.atom()
        for c in range(k):
            tgt = ast.Subscript(flat, ast.Tuple([lane.node, _int(c)], ast.Load()), ast.Store())
            _emit(ast.Assign([tgt], x.comp(c).node, lineno=0))
        return Ex(ast.Constant(None), VOID)


def _emit(stmt):
    from .exprs import _builder
    _builder.get().stmts.append(stmt)


def _let(node, hint):
    from .exprs import _builder
    b = _builder.get()
    n = b.names.fresh(hint)
    b.stmts.append(ast.Assign([ast.Name(n, ast.Store())], node, lineno=0))
    return name(n)


@builtin("tile_lane_put_col", ["lane_put_col(t, lane, v): t with column lane set to vector v"],
         lambda ts, a=None: ts[0], public=False)
class tile_lane_put_col:
    """``wp.tile(v)`` of vectors: lane ``lane``'s vector as column ``lane`` of an ``(n, B)``
    tile (a new tile, as every tile operation)."""

    def primal(t, lane, v):
        c = _let(ast.Call(ast.Attribute(t.node, "copy", ast.Load()), [], []), "pc")
        v = v.atom()
        for k in range(v.type._length_):
            tgt = ast.Subscript(c, ast.Tuple([_int(k), lane.node], ast.Load()), ast.Store())
            _emit(ast.Assign([tgt], v.comp(k).node, lineno=0))
        return Ex(c, t.type)

    def adjoint(t, lane, v, ret, adj):
        from .exprs import tup
        g = _let(ast.Call(ast.Attribute(adj.node, "copy", ast.Load()), [], []), "pg")
        comps = [Ex(ast.Subscript(adj.node, ast.Tuple([_int(k), lane.node], ast.Load()),
                                  ast.Load()), T.scalar_of(v.type))
                 for k in range(v.type._length_)]
        gv = tup(comps, v.type)
        for k in range(v.type._length_):
            tgt = ast.Subscript(g, ast.Tuple([_int(k), lane.node], ast.Load()), ast.Store())
            _emit(ast.Assign([tgt], ast.Constant(0.0), lineno=0))
        return [Ex(g, t.type), None, gv]

    def tangent(t, lane, v, tt, tl, tv, ret):
        from .exprs import const, tile_const
        if tt is None and tv is None:
            return tile_const(0, t.type)
        tt = tt if tt is not None else tile_const(0, t.type)
        tv = tv if tv is not None else const(0, v.type)
        return tile_lane_put_col.primal(tt, lane, tv)


def _placeholder(bname, doc):
    """A builtin only the lowering emits in lane mode and the lane rewrite replaces."""

    @builtin(bname, [doc], lambda ts, a=None: a.get("type") if a else None,
             differentiable=False, public=False)
    class _p:
        def primal(*args, **attrs):
            raise AssertionError(f"{bname} is replaced by the lane rewrite")

    return _p


lane_gather = _placeholder("lane_gather", "wp.tile(x) in a cooperative block")
lane_gather_vec = _placeholder("lane_gather_vec", "wp.tile(v) of vectors in a cooperative block")
lane_untile = _placeholder("lane_untile", "wp.untile(t) in a cooperative block")
lane_from_thread = _placeholder("lane_from_thread", "tile_from_thread in a cooperative block")
