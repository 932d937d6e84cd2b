"""Tiles: construction. Tiles made from constants and values (``tile_zeros``, ``tile_empty``,
``tile_ones``, ``tile_full``: the ``tile_const`` builtin), ``tile_arange`` (its element count
and bounds worked out at compile time, as Warp rounds them) and the random tiles
``tile_randi`` / ``tile_randf`` (each element drawn from a copy of the state, lane by lane under
cooperative CPU blocks)."""
from __future__ import annotations

import ast

import numpy as np

from ...core import types as T
from ...core.errors import KernelTypeError, KernelValueError
from .. import ir, lanes
from ..exprs import Ex, attr_path, const, name, tile_const
from ..registry import REGISTRY, builtin, lookup, special_form
from .common import (_assign_name, _block, _emit, _flat_view, _fresh, _int, _kw, _let, _loop,
                     _np_dtype, _sum_all, _tuple, _wk, _write, static_dtype, static_shape)


# ----------------------------------------------------------------------------- construction
@builtin("tile_const", ["tile_zeros(shape, dtype)", "tile_ones(shape, dtype)",
                        "tile_full(shape, value, dtype)"],
         lambda ts, a=None: None, differentiable=True, public=False)
class _tile_const:
    def primal(*args, type, value=None):
        if value is None:  # a run-time fill value
            return Ex(_wk("tile_fill", tile_const(0, type).node, _fill_value(args[0])), type)
        return tile_const(value, type)

    def adjoint(*args, ret, adj, type, value=None):
        if value is None:
            return [_sum_all(adj, args[0].type)]
        return []

    def tangent(*args, ret, type, value=None):
        if value is None:
            t = args[len(args) // 2]
            return Ex(_wk("tile_fill", tile_const(0, type).node, _fill_value(t)), type)
        return tile_const(0, type)


def _fill_value(x):
    """A fill value as ``tile_fill`` takes it: a scalar, or an array of a vector's or matrix's
    components (shaped as an element)."""
    if not T.is_composite(x.type):
        return x.node
    arr = ast.Call(attr_path("np.array"), [x.node], [])
    shape = T.element_shape(x.type)
    if len(shape) > 1:
        arr = ast.Call(ast.Attribute(arr, "reshape", ast.Load()),
                       [_tuple([_int(d) for d in shape])], [])
    return arr


def _const_form(fill):
    def lower(ctx, node):
        kw = _kw(node)
        shape_node = node.args[0] if node.args else kw.get("shape")
        if shape_node is None:
            raise ctx.fail(node, "a tile needs shape=...")
        shape = static_shape(ctx, shape_node, "the tile's shape")
        dtype_node = kw.get("dtype") or (node.args[1] if len(node.args) > 1 and fill != "full"
                                         else None)
        if fill == "full":
            value_node = node.args[1] if len(node.args) > 1 else kw.get("value")
            if value_node is None:
                raise ctx.fail(node, "tile_full(shape, value, dtype) needs a value")
            value = ctx.expr(value_node)
            default = value.type if T.is_scalar(value.type) or T.is_composite(value.type) \
                else T.float32
            if isinstance(value, ir.Const) and value.literal and dtype_node is None:
                default = T.float32 if isinstance(value.value, float) else T.int32
            dtype = static_dtype(ctx, dtype_node, default)
            if isinstance(value, ir.Const):
                t = T.TileType(dtype, shape)
                v = value.value
                if not T.is_composite(dtype):
                    return ctx.emit(ir.Prim(lookup("tile_const"), [],
                                            {"type": t, "value": v}), t, node)
            value = ctx.apply("cast", [value], node, attrs={"type": dtype}) \
                if value.type != dtype and T.is_scalar(dtype) else value
            t = T.TileType(dtype, shape)
            return ctx.emit(ir.Prim(lookup("tile_const"), [value], {"type": t}), t, node)
        dtype = static_dtype(ctx, dtype_node)
        t = T.TileType(dtype, shape)
        return ctx.emit(ir.Prim(lookup("tile_const"), [],
                                {"type": t, "value": 1 if fill == "ones" else 0}), t, node)
    return lower


special_form("tile_zeros", "tile_zeros(shape, dtype=float): a tile of zeros")(_const_form("zeros"))
special_form("tile_empty", "tile_empty(shape, dtype=float): a tile (of zeros on the CPU)")(
    _const_form("zeros"))
special_form("tile_ones", "tile_ones(shape, dtype=float): a tile of ones")(_const_form("ones"))
special_form("tile_full", "tile_full(shape, value, dtype=float): a tile filled with value")(
    _const_form("full"))


@builtin("tile_arange_b", ["tile_arange(start, stop, step, dtype)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_arange:
    def primal(type, start, step):
        """``start + k * step`` computed in the element type (as Warp), from the bounds as that
        type holds them."""
        st = T.scalar_of(type)
        n = type.shape[0]
        dt = _np_dtype(st)
        node = ast.Call(attr_path("np.arange"), [_int(n)], [])
        node = ast.Call(ast.Attribute(node, "astype", ast.Load()), [dt], [])
        return Ex(ast.BinOp(ast.BinOp(node, ast.Mult(), const(step, st).node), ast.Add(),
                            const(start, st).node), type)


def _round_int(v, npt):
    """Integer ``v`` rounded once, to nearest even, to float type ``npt`` (``np.float32(v)``
    goes through float64 and can round twice)."""
    bits = np.finfo(npt).nmant + 1
    shift = abs(v).bit_length() - bits
    if shift > 0:
        q, r = divmod(abs(v), 1 << shift)
        half = 1 << (shift - 1)
        q += 1 if r > half or (r == half and q & 1) else 0
        v = (q << shift) * (1 if v >= 0 else -1)
    return float(npt(float(v)))


def _arange_count(start, stop, step, st):
    """The number of elements of Warp's ``tile_arange(start, stop, step)`` at scalar type
    ``st``: ``ceil((stop - start) / step)``, exact for integers; for floats (Warp 1.19) from the
    bounds as ``st`` holds them (integers rounded once), the quotient computed in double and
    then rounded to ``st`` too, at least one element for a range in the step's direction (None:
    not countable)."""
    if T.is_int(st):
        q, r = divmod(stop - start, step)
        return q + (1 if r else 0)
    npt = st._np_
    a, b, c = (_round_int(v, npt) if isinstance(v, int) else float(npt(float(v)))
               for v in (start, stop, step))
    if (c > 0 and a >= b) or (c < 0 and a <= b):
        return 0
    q = float(npt((b - a) / c))
    if not np.isfinite(q):
        return None
    return max(1, int(np.ceil(q)))


@special_form("tile_arange", "tile_arange(start=0, stop, step=1, dtype=float): a 1-D tile")
def tile_arange(ctx, node):
    if len(node.args) > 3:
        raise ctx.fail(node, f"tile_arange() accepts at most 3 positional arguments, got "
                       f"{len(node.args)}", KernelTypeError)
    if not node.args:
        raise ctx.fail(node, "tile_arange() needs a stop", KernelTypeError)
    names = {1: ["stop"], 2: ["start", "stop"], 3: ["start", "stop", "step"]}[len(node.args)]
    vals = []
    for n_, a in zip(names, node.args):
        try:
            v = ctx.static_value(a, "a tile_arange() bound")
        except Exception:  # noqa: BLE001 - a run-time value
            raise ctx.fail(a, f"tile_arange() arguments must be compile time constants, but "
                           f"{n_} is not", KernelTypeError) from None
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ctx.fail(a, f"tile_arange() arguments must be numbers, got {v!r}",
                           KernelTypeError)
        vals.append(v.item() if isinstance(v, np.generic) else v)
    if len(vals) == 1:
        vals = [0] + vals
    if len(vals) == 2:
        vals = vals + [1]
    start, stop, step = vals
    kw = _kw(node)
    dtype = static_dtype(ctx, kw.get("dtype"), T.float32)
    if not T.is_scalar(dtype) or dtype is T.bool:
        raise ctx.fail(node, f"tile_arange() requires a numeric scalar dtype, got "
                       f"{T.type_name(dtype)}", KernelTypeError)
    st = dtype
    named = list(zip(("start", "stop", "step"), vals))
    if T.is_int(st):
        info = np.iinfo(st._np_)
        for n_, v in named:
            if isinstance(v, float) and not float(v).is_integer():
                raise ctx.fail(node, f"tile_arange(): {n_}={v} has a fractional part, which "
                               f"{T.type_name(st)} cannot hold", KernelValueError)
            if not info.min <= int(v) <= info.max:
                raise ctx.fail(node, f"tile_arange(): {n_}={v} is out of range for "
                               f"{T.type_name(st)}", KernelValueError)
        start, stop, step = (int(v) for v in vals)
    else:
        finfo = np.finfo(st._np_)
        for n_, v in named:
            if isinstance(v, int) and not -(1 << 63) <= v < 1 << 64:
                raise ctx.fail(node, f"tile_arange() {n_}={v} is too wide to use as an integer "
                               f"bound (no integer type holds it); write the bounds as floats, "
                               f"e.g. wp.{T.type_name(st)}({float(v)!r})", KernelValueError)
            if not np.isfinite(float(v)) or abs(float(v)) > finfo.max:
                raise ctx.fail(node, f"tile_arange(): {n_}={v} is out of range for "
                               f"{T.type_name(st)}", KernelValueError)
    if (float(st._np_(step)) if not T.is_int(st) else step) == 0:
        raise ctx.fail(node, "tile_arange(): step cannot be zero", KernelValueError)
    with np.errstate(all="ignore"):
        n = _arange_count(start, stop, step, st)
    if n is None or n > 1 << 24:
        raise ctx.fail(node, f"tile_arange({start}, {stop}, {step}) spans more elements than "
                       "can be counted in a tile", KernelValueError)
    if n <= 0:
        raise ctx.fail(node, f"tile_arange({start}, {stop}, {step}) spans no elements: "
                       "zero-length tiles are not supported", KernelValueError)
    t = T.TileType(dtype, (int(n),))
    if not T.is_int(st):  # integer bounds rounded once to the element type
        start, step = (_round_int(v, st._np_) if isinstance(v, int) else v for v in (start, step))
    return ctx.emit(ir.Prim(lookup("tile_arange_b"), [], {"type": t, "start": start,
                                                          "step": step}), t, node)


# ----------------------------------------------------------------------------- random tiles
@builtin("tile_rand_b", ["tile_randi/tile_randf(shape, rng, min, max)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_rand:
    """Each element drawn in turn from a copy of ``rng`` (as Warp's CPU tiles: the caller's
    state is not advanced)."""

    def primal(rng, *bounds, type, kind, block_dim=1, per_element=False):
        out = _let(tile_const(0, type).node, "rn")
        ov = _flat_view(out, type)
        st, e = _fresh("rs"), _fresh("e")
        per_element = per_element or block_dim > 1
        # Warp's CPU tiles draw from the state advanced once (the first element is the second
        # value of the stream)
        if not per_element:
            _emit(_assign_name(st, REGISTRY["rand_pcg"].primal(rng)))

        def body():
            stmts = []
            if per_element:
                # cooperative blocks (CPU lanes, CUDA threads): element e is lane e % B's draw
                # number e // B + 1 from its own stream, rand_pcg(lane + rng) (Warp's register
                # layout; with B = 1, the stream above); each element on its own, so CUDA's
                # threads share the loop
                lane_seed = ast.Call(attr_path("_wk.u32"), [ast.BinOp(ast.BinOp(
                    name(e), ast.Mod(), _int(block_dim)), ast.Add(), rng.node)], [])
                stmts.append(_assign_name(st, REGISTRY["rand_pcg"].primal(
                    Ex(lane_seed, T.uint32))))
                k = _fresh("k")
                stmts.append(_loop(k, _int(0), ast.BinOp(name(e), ast.FloorDiv(),
                                                         _int(block_dim)), [_assign_name(
                    st, REGISTRY["rand_pcg"].primal(Ex(name(st), T.uint32)))]))
            s = REGISTRY["rand_pcg"].primal(Ex(name(st), T.uint32))
            stmts.append(_assign_name(st, s))
            cur = Ex(name(st), T.uint32)
            if kind == "int":
                v = REGISTRY["rand_int_range"].primal(cur, *bounds) if bounds else \
                    REGISTRY["rand_int"].primal(cur)
            else:
                v = REGISTRY["rand_float"].primal(cur)
                if bounds:
                    lo, hi = bounds
                    v = (hi - lo) * v + lo
            return stmts + _write(ov, type, name(e), v)
        _emit(_loop(e, _int(0), _int(type.size), _block(body)))
        return Ex(out, type)


def _rand_form(kind):
    def lower(ctx, node):
        cuda = lanes.cuda_block_mode(ctx, node, f"tile_rand{kind[0]}")
        kw = _kw(node)
        shape = static_shape(ctx, node.args[0] if node.args else kw.get("shape"),
                             "the tile's shape")
        rng_node = node.args[1] if len(node.args) > 1 else kw.get("rng")
        rng = ctx.adapt_literal(ctx.expr(rng_node), T.uint32)
        if rng.type is not T.uint32:
            raise ctx.fail(rng_node, "the rng must be a state made by wp.rand_init (a uint32)",
                           KernelTypeError)
        st = T.int32 if kind == "int" else T.float32
        bounds = []
        if "min" in kw or "max" in kw:
            if not ("min" in kw and "max" in kw):
                raise ctx.fail(node, "give both min and max", KernelTypeError)
            for key in ("min", "max"):
                v = ctx.adapt_literal(ctx.expr(kw[key]), st)
                if v.type is not st:
                    v = ctx.apply("cast", [v], node, attrs={"type": st})
                bounds.append(v)
        t = T.TileType(st, shape)
        attrs = {"type": t, "kind": kind}
        mode = lanes.current()
        if mode is not None:  # cooperative blocks: each lane draws its elements
            mode.coupled.append("tile_rand")
            attrs["block_dim"] = mode.block_dim
        if cuda is not None:  # (the rng must be the block's: a launch index refused)
            attrs["per_element"] = True
        return ctx.emit(ir.Prim(lookup("tile_rand_b"), [rng] + bounds, attrs), t, node)
    return lower


special_form("tile_randi", "tile_randi(shape, rng, min=None, max=None): a tile of random "
             "integers")(_rand_form("int"))
special_form("tile_randf", "tile_randf(shape, rng, min=None, max=None): a tile of random "
             "floats in [0, 1) (or [min, max))")(_rand_form("float"))
