"""Tiles: Warp's block-level values (``wp.tile_load``, ``wp.tile_matmul``, ``wp.tile_map``, ...).

A tile is a value of :class:`weft.core.typecore.TileType` (a dtype and a static shape). On the
CPU a tile block is one thread, as in Warp (``block_dim`` resolves to 1 there), and a tile is a
numpy array in generated code (:mod:`weft.native.tiles`): operators on tiles are numpy's
elementwise arithmetic, so the derivative rules of the scalar builtins apply to whole tiles,
and ``tile_map`` runs a func or builtin per element in a loop the generated code spells out.

Tile operations that read or write arrays (``tile_load``, ``tile_store``) are builtins with
``array_args``: the adjoint and tangent generators hand their rules the adjoint (tangent)
arrays of their array arguments (``adj_arrays`` / ``tan_arrays``, None where an array has
none), and the analysis records their accesses (a load may read another block's elements, so
its adjoint adds atomically).
"""
from __future__ import annotations

import ast
import itertools

import numpy as np

from ..core import types as T
from ..core.errors import KernelTypeError, KernelValueError
from . import ir, lanes
from .exprs import Builder, Ex, _builder, attr_path, const, name, tile_const, tile_dtype
from .registry import NAMESPACE, REGISTRY, SpecialForm, builtin, lookup, special_form

VOID = T.TupleType(())

#: operators on tiles: the builtin an operator's name becomes when an operand is a tile
TILE_OPERATORS = {}


# ----------------------------------------------------------------------------- generated code
def _emit(stmt):
    _builder.get().stmts.append(stmt)


def _fresh(hint):
    return _builder.get().names.fresh(hint)


def _let(node, hint="tl"):
    n = _fresh(hint)
    _emit(ast.Assign([ast.Name(n, ast.Store())], node, lineno=0))
    return name(n)


def _int(v):
    return ast.Constant(int(v))


def _tuple(nodes):
    return ast.Tuple(list(nodes), ast.Load())


def _wk(fn, *nodes):
    return ast.Call(attr_path(f"_wk.{fn}"), list(nodes), [])


def _not_none(n):
    return ast.Compare(n, [ast.IsNot()], [ast.Constant(None)])


def _np_dtype(st):
    """``np.<type>`` of the arrays holding tiles of scalar type ``st`` (float16: float32)."""
    return tile_dtype(st)


def _half(dtype):
    return not T.is_composite(dtype) and dtype is T.float16


def _elem_len(dtype):
    n = 1
    for d in T.element_shape(dtype):
        n *= d
    return n


def _flat_view(tile_node, t):
    """A name for ``tile.reshape(size)`` (scalars) or ``(size, components)``."""
    k = _elem_len(t.dtype)
    shape = _int(t.size) if not T.is_composite(t.dtype) else _tuple([_int(t.size), _int(k)])
    return _let(ast.Call(ast.Attribute(tile_node, "reshape", ast.Load()), [shape], []), "fv")


def _element(view, t, e):
    """Element ``e`` of flat view ``view`` of a tile of type ``t`` as a value (a tuple for
    vectors and matrices)."""
    if not T.is_composite(t.dtype):
        return Ex(ast.Subscript(view, e, ast.Load()), t.dtype)
    comps = [ast.Subscript(view, _tuple([e, _int(c)]), ast.Load())
             for c in range(_elem_len(t.dtype))]
    return Ex(_tuple(comps), t.dtype)


def _write(view, t, e, value):
    """Statements: element ``e`` of flat view ``view`` (of tile type ``t``) = ``value``."""
    if not T.is_composite(t.dtype):
        return [ast.Assign([ast.Subscript(view, e, ast.Store())], value.node, lineno=0)]
    value = value.atom()
    return [ast.Assign([ast.Subscript(view, _tuple([e, _int(c)]), ast.Store())],
                       value.comp(c).node, lineno=0) for c in range(_elem_len(t.dtype))]


def elementwise(out_t, operands, body):
    """A new tile of type ``out_t`` whose element ``e`` is ``body(elements)`` (an Ex), the
    elements those of the tiles ``operands`` at ``e`` (scalars pass through): a loop in the
    generated code. Returns the Ex of the new tile."""
    outer = _builder.get()
    res = _let(tile_const(0, out_t).node, "tm")
    rv = _flat_view(res, out_t)
    views = [_flat_view(o.atom().node, o.type) if T.is_tile_type(o.type) else None for o in operands]
    e = name(outer.names.fresh("e"))
    inner = Builder(outer.names)
    with inner.active():
        elems = [_element(v, o.type, e) if v is not None else o for v, o in zip(views, operands)]
        value = body(*elems)
        writes = _write(rv, out_t, e, value)
    loop = ast.For(ast.Name(e.id, ast.Store()), ast.Call(name("range"), [_int(out_t.size)], []),
                   inner.stmts + writes, [])
    _emit(loop)
    return Ex(res, out_t)


# ----------------------------------------------------------------------------- lowering helpers
def _kw(node):
    return {k.arg: k.value for k in node.keywords}


def static_shape(ctx, node, what):
    v = ctx.static_value(node, what)
    if isinstance(v, (int,)) and not isinstance(v, bool):
        v = (v,)
    try:
        shape = tuple(int(d) for d in v)
    except TypeError:
        raise ctx.fail(node, f"{what} must be an integer or a tuple of integer constants") from None
    if not shape or any(d <= 0 for d in shape):
        raise ctx.fail(node, f"{what} must be positive integer constants, got {v}")
    return shape


def static_dtype(ctx, node, default=T.float32):
    if node is None:
        return default
    if isinstance(node, ast.Attribute) and node.attr == "dtype":
        try:
            base = ctx.expr(node.value)
        except Exception:  # noqa: BLE001 - not a kernel value: resolved below
            base = None
        t = getattr(base, "type", None)
        if isinstance(t, (T.ArrayType, T.TileType)):
            return t.dtype
    try:
        return T.as_value_type(ctx.resolve(node))
    except (TypeError, Exception):  # noqa: BLE001
        raise ctx.fail(node, "dtype must be a scalar, vector or matrix type") from None


def _offsets(ctx, node, ndim, pos=None):
    """The offset operands of a tile load or store: ``offset=(i, j)`` (or positional argument
    ``pos``; int32), zeros when not given."""
    kw = _kw(node)
    off = kw.get("offset")
    if off is None and pos is not None and len(node.args) > pos:
        off = node.args[pos]
    if off is None:
        return [ir.Const(0, T.int32)] * ndim
    items = off.elts if isinstance(off, ast.Tuple) else [off]
    if len(items) != ndim:
        raise ctx.fail(off, f"the offset needs {ndim} indices, got {len(items)}")
    out = []
    for it in items:
        v = ctx.expr(it)
        if isinstance(v, ir.Const) and v.literal:
            v = ir.Const(int(v.value), T.int32)
        if not T.is_int(getattr(v, "type", None)):
            raise ctx.fail(it, "tile offsets must be integers")
        out.append(v)
    return out


def _tile_arg(ctx, v, node, what):
    if not T.is_tile_type(getattr(v, "type", None)):
        raise ctx.fail(node, f"{what} must be a tile, got {T.type_name(v.type)}", KernelTypeError)
    return v


def _rebind(ctx, target, value, what):
    """An in-place tile operation of Warp's: ``target`` (a local name) now names ``value``
    (and a view writes it back into the tile it views)."""
    if not isinstance(target, ast.Name):
        raise ctx.fail(target, f"{what}'s tile must be a local name (weft's tiles are values: "
                       "the name is given the result)")
    store_back(ctx, target, value)

def store_back(ctx, target, value):
    """``target`` (a Name) now names tile ``value``, changed in place from what it named. Where
    that was a view of another tile (``row = t[i]``, ``wp.tile_view``), the change is written
    back into the tile it views, as Warp's views alias their tile: the name of that tile is
    rebound to a copy with the view replaced (recursively, for views of views)."""
    old = ctx.env.get(target.id)
    ctx.bind(target.id, value, target)
    how = ctx.tile_views.get(id(old)) if old is not None else None
    if how is None or not T.is_tile_type(getattr(value, "type", None)):
        return
    base, spec, ops = how
    owner = next((n for n, v in ctx.env.items() if v is base), None)
    if owner is None:
        return
    if all(s.kind == "int" for s in spec):  # a view of one element: never taken
        return
    updated = ctx.apply("tile_index_set_b", [base, value] + list(ops), target,
                        attrs={"spec": tuple(spec)})
    store_back(ctx, ast.copy_location(ast.Name(owner, ast.Load()), target), updated)
    ctx.tile_views[id(ctx.env[target.id])] = (ctx.env[owner], spec, ops)


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


def _sum_all(adj, elem_t):
    """The sum of every element of tile ``adj`` as a value of ``elem_t``."""
    if T.is_composite(elem_t):
        k = _elem_len(elem_t)
        s = _let(_wk("tile_sum_vec", adj.atom().node, _int(k)), "sv")
        return Ex(_tuple([ast.Subscript(s, _tuple([_int(0), _int(c)]), ast.Load())
                          for c in range(k)]), elem_t)
    return Ex(ast.Subscript(_wk("tile_sum", adj.node), _int(0), ast.Load()), elem_t)


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
    ``st``: ``ceil((stop - start) / step)``, exact for integers; for floats in double precision,
    from float bounds as given and integer bounds rounded to ``st`` (None: not countable)."""
    if T.is_int(st):
        q, r = divmod(stop - start, step)
        return q + (1 if r else 0)
    a, b, c = (_round_int(v, st._np_) if isinstance(v, int) else float(v)
               for v in (start, stop, step))
    q = (b - a) / c
    if not np.isfinite(q):
        return None
    return int(np.ceil(q))


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


# ----------------------------------------------------------------------------- memory
@builtin("tile_load_b", ["tile_load(a, shape, offset)"], lambda ts, a=None: None,
         public=False)
class _tile_load:
    array_args = True

    own_derivatives = True  # the derivative lives in the array's adjoint, not an argument

    def primal(a, *offs, shape):
        t = T.TileType(a.type.dtype, shape)
        node = _wk(f"tile_load{len(shape)}", a.node, *[o.node for o in offs],
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
        out = _let(tile_const(0, t).node, "tt")
        load = _tile_load.primal(Ex(arr.node, a.type), *offs, shape=shape).node
        _emit(ast.If(_not_none(arr.node), [ast.Assign([ast.Name(out.id, ast.Store())], load,
                                                      lineno=0)], []))
        return Ex(out, t)


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

    def adjoint(a, t, *offs, adj_arrays=()):
        """``adj_t += adj_a[region]`` (Warp's adjoint store reads the array's adjoint)."""
        arr = adj_arrays[0] if adj_arrays else None
        if arr is None:
            return [None] * (2 + len(offs))
        shape = t.type.shape
        g = _let(tile_const(0, t.type).node, "ga")
        load = _tile_load.primal(Ex(arr.node, a.type), *offs, shape=shape).node
        _emit(ast.If(_not_none(arr.node), [ast.Assign([ast.Name(g.id, ast.Store())], load,
                                                      lineno=0)], []))
        return [None, Ex(g, t.type)] + [None] * len(offs)

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


# ----------------------------------------------------------------------------- elements
@builtin("tile_extract", ["t[i, j]"], lambda ts, a=None: ts[0].dtype if T.is_tile_type(ts[0]) and
         len(ts) - 1 == len(ts[0].shape) and all(T.is_int(x) for x in ts[1:]) else None,
         public=False)
class tile_extract:
    def primal(t, *idx):
        sl = _tuple([i.node for i in idx])
        dt = t.type.dtype
        if not T.is_composite(dt):
            return Ex(ast.Subscript(t.node, sl, ast.Load()), dt)
        v = _let(_wk("tile_get_vec", t.node, sl), "ev")
        return Ex(_tuple([ast.Subscript(v, _int(c), ast.Load())
                          for c in range(_elem_len(dt))]), dt)

    def adjoint(t, *idx, ret, adj):
        sl = _tuple([i.node for i in idx])
        return [Ex(_wk("tile_onehot", t.node, sl, adj.node), t.type)] + [None] * len(idx)

    def tangent(t, *rest, ret):
        n = len(rest) // 2
        idx, tt = rest[:n], rest[n]
        return tile_extract.primal(tt, *idx) if tt is not None else const(0, ret.type)


@builtin("tile_insert", ["t[i, j] = x"], lambda ts, a=None: ts[0] if T.is_tile_type(ts[0]) and
         len(ts) - 2 == len(ts[0].shape) else None, public=False)
class tile_insert:
    def primal(t, *rest):
        idx, x = rest[:-1], rest[-1]
        return Ex(_wk("tile_insert", t.node, _tuple([i.node for i in idx]), x.node), t.type)

    def adjoint(t, *rest, ret, adj):
        idx = rest[:-1]
        sl = _tuple([i.node for i in idx])
        g = tile_extract.primal(adj, *idx)
        return [Ex(_wk("tile_zero_at", adj.node, sl), t.type)] + [None] * len(idx) + [g]

    def tangent(t, *rest, ret):
        n = len(rest) // 2
        idx, x = rest[:n - 1], rest[n - 1]
        tt, tx = rest[n], rest[-1]
        if tt is None and tx is None:
            return tile_const(0, t.type)
        tt = tt if tt is not None else tile_const(0, t.type)
        tx = tx if tx is not None else const(0, x.type)
        return Ex(_wk("tile_insert", tt.node, _tuple([i.node for i in idx]), tx.node), t.type)


TILE_OPERATORS.update({"extract": "tile_extract", "insert": "tile_insert"})


# ----------------------------------------------------------------------------- arithmetic
_VERBS = {"mul": "multiply", "div": "divide", "add": "add", "sub": "subtract"}


def lower_operator(ctx, b, args, node):
    """An operator with a tile operand (``a + b``, ``2.0 * t``, ``-t``): the scalar builtin
    applied per element (a tile operand's elements; any other operand as it is), with that
    builtin's typing and derivative rules."""
    tiles = [a for a in args if T.is_tile_type(getattr(a, "type", None))]
    shape = tiles[0].type.shape
    for a in tiles[1:]:
        if a.type.shape != shape:
            raise ctx.fail(node, f"tile shapes {shape} and {a.type.shape} do not match "
                           f"for '{b.name}'", KernelTypeError)
    elems = [a.type.dtype if T.is_tile_type(getattr(a, "type", None)) else a.type for a in args]
    literal = [isinstance(a, ir.Const) and a.literal for a in args]
    if any(literal):  # a number literal takes the elements' scalar type
        anchor = next(T.scalar_of(t) for t, lit in zip(elems, literal) if not lit)
        args = [ir.Const(float(a.value) if T.is_float(anchor) else int(a.value), anchor)
                if lit else a for a, lit in zip(args, literal)]
        elems = [a.type.dtype if T.is_tile_type(a.type) else a.type for a in args]
    rtype = b.resolve(elems, {})
    if b.name in ("mul", "div") and len(tiles) == 2 and not any(T.is_scalar(t) for t in elems):
        raise ctx.fail(node, f"tile {_VERBS[b.name]}: the element type must be scalar for one "
                       f"of two tile operands, got {_shown(args[0].type)} and "
                       f"{_shown(args[1].type)}", KernelTypeError)
    if rtype is None or (b.name in ("mul", "div") and len(args) == 2 and
                         not any(T.is_scalar(t) for t in elems)):
        names = [_shown(a.type) for a in args]
        verb = _VERBS.get(b.name)
        if verb is not None and len(names) == 2:
            msg = (f"Cannot {verb} {names[0]} by {names[1]}: at least one operand must be a "
                   "scalar type") if b.name in ("mul", "div") else \
                f"Cannot {verb} {names[0]} and {names[1]}"
        else:
            msg = f"'{b.name}' does not apply to ({', '.join(names)})"
        raise ctx.fail(node, msg, KernelTypeError)
    t = T.TileType(rtype, shape)
    return ctx.emit(ir.Prim(lookup("tile_map_b"), list(args),
                            {"fn": ElementFn(builtin_=b), "type": t}), t, node)


def _tsum(*parts, t):
    """The sum of tangent contributions of tile type ``t`` (None: none; zeros when all are)."""
    out = None
    for p in parts:
        if p is not None:
            out = p if out is None else out + p
    return out if out is not None else tile_const(0, t)


def _shown(t):
    if T.is_tile_type(t):
        return f"tile<{T.type_name(t.dtype)}, {t.shape}>"
    return T.type_name(t)


# ----------------------------------------------------------------------------- map
class ElementFn:
    """What ``tile_map`` applies per element: a builtin (its rules on elements) or a
    specialised func (its generated forward, adjoint and tangent functions)."""

    def __init__(self, builtin_=None, fir=None, attrs=None):
        self.builtin = builtin_
        self.fir = fir
        self.attrs = attrs or {}

    def __repr__(self):  # part of the IR dump
        return self.fir.name if self.fir is not None else self.builtin.name

    def value(self, elems):
        if self.builtin is not None:
            return self.builtin.primal(*elems, **self.attrs)
        return Ex(ast.Call(name(self.fir.name), [e.node for e in elems], []),
                  self.fir.ret_type)

    def adjoint(self, elems, ret, adj):
        if self.builtin is not None:
            return self.builtin.adjoint(*elems, ret=ret, adj=adj, **self.attrs)
        diffp = [k for k, p in enumerate(self.fir.params) if T.is_differentiable(p.type)]
        c = _let(ast.Call(name(f"{self.fir.name}__adj"), [e.node for e in elems] + [adj.node],
                          []), "ca")
        out = [None] * len(elems)
        for j, k in enumerate(diffp):
            out[k] = Ex(ast.Subscript(c, _int(j), ast.Load()), elems[k].type)
        return out

    def tangent(self, elems, tans, ret):
        if self.builtin is not None:
            return self.builtin.tangent(*elems, *tans, ret=ret, **self.attrs)
        args = [e.node for e in elems]
        for p, t, e in zip(self.fir.params, tans, elems):
            if T.is_differentiable(p.type):
                args.append(t.node if t is not None else const(0, e.type).node)
        c = ast.Call(name(f"{self.fir.name}__jvp"), args, [])
        return Ex(ast.Subscript(c, _int(1), ast.Load()), ret.type)


@builtin("tile_map_b", ["tile_map(f, a, ...)"], lambda ts, a=None: None, public=False)
class _tile_map:
    def primal(*tiles, fn, type):
        return elementwise(type, list(tiles), lambda *el: fn.value(list(el)))

    def adjoint(*tiles, ret, adj, fn, type):
        outs = []
        for k, t in enumerate(tiles):
            if not T.is_differentiable(t.type):
                outs.append(None)
                continue
            elem = t.type.dtype if T.is_tile_type(t.type) else t.type
            et = T.TileType(elem, type.shape)

            def body(*el, k=k, elem=elem):
                elems, r, g = list(el[:len(tiles)]), el[len(tiles)], el[len(tiles) + 1]
                c = fn.adjoint(elems, r, g)[k]
                return c if c is not None else const(0, elem)
            c = elementwise(et, list(tiles) + [ret, adj], body)
            outs.append(c if T.is_tile_type(t.type) else _sum_all(c, elem))
        return outs

    def tangent(*rest, ret, fn, type):
        n = len(rest) // 2
        tiles, tans = list(rest[:n]), list(rest[n:])
        if all(t is None for t in tans):
            return tile_const(0, type)
        given = [k for k, t in enumerate(tans) if t is not None]

        def body(*el):
            elems = list(el[:n])
            ts = [None] * n
            for j, k in enumerate(given):
                ts[k] = el[n + j]
            return fn.tangent(elems, ts, fn.value(elems).atom())
        return elementwise(type, tiles + [tans[k] for k in given], body)


@special_form("tile_map", "tile_map(f, a, b=None): f applied to each element of the tiles")
def tile_map(ctx, node):
    if len(node.args) < 2:
        raise ctx.fail(node, "tile_map(f, a, ...) needs a function and a tile")
    f = ctx.resolve(node.args[0])
    args = [ctx.expr(a) for a in node.args[1:]]
    tiles = [a for a in args if T.is_tile_type(getattr(a, "type", None))]
    if not tiles:
        raise ctx.fail(node, "tile_map needs a tile operand", KernelTypeError)
    shape = tiles[0].type.shape
    for a, t in zip(node.args[1:], args):
        if T.is_tile_type(t.type) and t.type.shape != shape:
            raise ctx.fail(a, f"tile_map's tiles must have one shape: {shape} and "
                           f"{t.type.shape}")
    elem_types = [a.type.dtype if T.is_tile_type(a.type) else a.type for a in args]
    elem_args = [a if not T.is_tile_type(a.type) else ir.Var(f"_x{k}", a.type.dtype)
                 for k, a in enumerate(args)]
    from .funcs import Function
    if isinstance(f, Function):
        if getattr(f, "overloads", None) and len(f.overloads) > 1:
            f = ctx.choose_overload(f, elem_args, node)
        fir = ctx.specializer.specialize(f, elem_args, node, ctx)
        if fir.ret_type is None:
            raise ctx.fail(node.args[0], "tile_map's function must return a value")
        fn, rtype = ElementFn(fir=fir), fir.ret_type
    else:
        from .constructors import declaration_of
        b = f if hasattr(f, "resolve") else declaration_of(f)
        if b is None or not hasattr(b, "resolve") or not hasattr(b, "primal"):
            raise ctx.fail(node.args[0], "tile_map applies a wp.func or a builtin")
        literal = [isinstance(a, ir.Const) and a.literal for a in args]
        if any(literal):
            anchor = next((T.scalar_of(t) for t, lit in zip(elem_types, literal) if not lit),
                          None)
            if anchor is not None:
                args = [ir.Const(float(a.value) if T.is_float(anchor) else int(a.value), anchor)
                        if lit else a for a, lit in zip(args, literal)]
                elem_types = [a.type.dtype if T.is_tile_type(a.type) else a.type for a in args]
        rtype = b.resolve(elem_types, {})
        if rtype is None:
            raise ctx.fail(node, f"{b.name} accepts no elements of types "
                           f"{[T.type_name(t) for t in elem_types]}")
        fn = ElementFn(builtin_=b)
    tiles = args
    t = T.TileType(rtype, shape)
    diff = fn.builtin.differentiable if fn.builtin is not None else True
    prim = "tile_map_b" if diff else "tile_map_nd"
    return ctx.emit(ir.Prim(lookup(prim), tiles, {"fn": fn, "type": t}), t, node)


@builtin("tile_map_nd", ["tile_map(f, a, ...)"], lambda ts, a=None: None, public=False,
         differentiable=False)
class _tile_map_nd:
    primal = _tile_map.primal


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
    annotation, ``wp.tile[dtype, M, N]`` (a tile parameter of a func)."""

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


@special_form("tile_extract", "tile_extract(t, i, j): an element of a tile")
def tile_extract_form(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_extract's tile")
    idx = [ctx.expr(a) for a in node.args[1:]]
    idx = [ir.Const(int(i.value), T.int32) if isinstance(i, ir.Const) and i.literal else i
           for i in idx]
    return ctx.apply("tile_extract", [t] + idx, node)


def tile_operator(name_, types):
    """The tile builtin ``name_`` (``extract``/``insert``) becomes when an operand is a tile,
    ``lower_operator`` for the arithmetic operators, or None."""
    if not any(T.is_tile_type(t) for t in types):
        return None
    if name_ in TILE_OPERATORS:
        return REGISTRY[TILE_OPERATORS[name_]]
    if name_ in ARITHMETIC:
        return lower_operator
    return None


#: the operators a tile operand maps over its elements
ARITHMETIC = frozenset({"add", "sub", "mul", "div", "neg", "pos", "mod", "floordiv", "pow",
                        "min", "max", "bit_and", "bit_or", "bit_xor", "lshift", "rshift",
                        "invert"})


# ----------------------------------------------------------------------------- atomics
@builtin("tile_atomic_add_b", ["tile_atomic_add(a, t, offset) -> the replaced values"],
         lambda ts, a=None: None, public=False)
class _tile_atomic_add:
    array_args = True
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
        return [None] + _tile_store.adjoint(a, t, *offs, adj_arrays=adj_arrays)[1:]

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


@special_form("tile_sum", "tile_sum(t, axis=None): the sum of the elements of t (a tile of one "
              "element), or along axis")
def tile_sum_form(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], "tile_sum's tile")
    axis = _axis(ctx, node, 1)
    if axis is None:
        return ctx.apply("tile_sum_b", [t], node)
    return reduce_tile(ctx, ElementFn(builtin_=REGISTRY["add"]), True, t, axis, node)


# ----------------------------------------------------------------------------- shape
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


def _assign_assigned(node):
    return [node.args[0]] if node.args else []


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
    mode = lanes.current()
    if mode is not None:
        mode.coupled.append("tile_scatter_add")
    new = ctx.emit(ir.Prim(lookup("tile_scatter_add_b"), [t] + idx + [value, has]), t.type,
                   node)
    store_back(ctx, node.args[0], new)


@special_form("tile_scatter_masked", "tile_scatter_masked(t, i, ..., value, has_value): "
              "t[i, ...] = value where has_value (each thread's write; one lane on the CPU)",
              assigned=_assign_assigned)
def tile_scatter_masked(ctx, node):
    """Warp's ``tile_scatter_masked``: ``if has_value: t[i, ...] = value``, the tile's name
    rebound (weft's tiles are values). Every argument is evaluated, as Warp; the indices are
    used only where ``has_value`` holds. Its adjoint is the write's: ``value`` takes the tile's
    adjoint at the index, which is then cleared."""
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


# ----------------------------------------------------------------------------- per thread
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
    mode = lanes.current()
    if mode is not None:
        mode.coupled.append("block_dim")
        return ir.Const(mode.block_dim, T.int32)
    return ir.Const(1, T.int32)


# ----------------------------------------------------------------------------- reduce
def _block(build):
    """The statements ``build()`` returns, after the temporaries it bound (built under a
    builder of their own: the body of a generated loop)."""
    inner = Builder(_builder.get().names)
    with inner.active():
        stmts = build()
    return inner.stmts + stmts


def _loop(var, lo, hi, body, step=None):
    args = [lo, hi] + ([step] if step is not None else [])
    return ast.For(ast.Name(var, ast.Store()), ast.Call(name("range"), args, []), body, [])


def _assign_name(n, ex):
    return ast.Assign([ast.Name(n, ast.Store())], ex.node, lineno=0)


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
    from .funcs import Function
    if isinstance(f, Function):
        elem_args = [ir.Var(f"_x{k}", t) for k, t in enumerate(elem_types)]
        if getattr(f, "overloads", None) and len(f.overloads) > 1:
            f = ctx.choose_overload(f, elem_args, node)
        fir = ctx.specializer.specialize(f, elem_args, node, ctx)
        if fir.ret_type is None:
            raise ctx.fail(fnode, "the function must return a value")
        return ElementFn(fir=fir), fir.ret_type, True
    from .constructors import declaration_of
    b = f if hasattr(f, "resolve") else declaration_of(f)
    if b is None or not hasattr(b, "resolve") or not hasattr(b, "primal"):
        raise ctx.fail(fnode, "expected a wp.func or a builtin")
    rtype = b.resolve(list(elem_types), {})
    if rtype is None:
        raise ctx.fail(node, f"{b.name} accepts no elements of types "
                       f"{[T.type_name(t) for t in elem_types]}")
    return ElementFn(builtin_=b), rtype, b.differentiable


# ----------------------------------------------------------------------------- tile stacks
def _stack_type(capacity, dtype):
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise ValueError(f"tile_stack capacity must be a positive integer constant, got "
                         f"{capacity!r}")
    return T.TileStackType(T.as_value_type(dtype), int(capacity))


@builtin("tile_stack_b", ["tile_stack(capacity, dtype)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack:
    def primal(type):
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
        return Ex(_tuple([value.node, slot]), T.TupleType((s.type.dtype, T.int32)))


@builtin("tile_stack_count_b", ["tile_stack_count(s) -> int"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack_count:
    def primal(s):
        return Ex(ast.Subscript(_stack_count(s), _int(0), ast.Load()), T.int32)


@builtin("tile_stack_clear_b", ["tile_stack_clear(s)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_stack_clear:
    def primal(s):
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
    return ctx.emit(ir.Prim(lookup("tile_stack_b"), [], {"type": t}), t, node)


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
    ctx.add(ir.Effect(lookup("tile_stack_clear_b"), [s], ctx.loc(node)))


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


def check_augmented(ctx, current, sl, node):
    """``t[...] += u``: only on an element (Warp refuses it on a view)."""
    spec = _parse_subscript(ctx, current.type, sl, node)
    if not all(s.kind == "int" for s in spec):
        raise ctx.fail(node, "Compound assignment to a tile view is not supported: assign the "
                       "result instead (t[a:b] = t[a:b] + u)", KernelValueError)


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
        _emit(ast.If(_not_none(arr.node), [ast.Assign([ast.Name(g.id, ast.Store())], _ix_load(
            arr, idx, offs, t.type.shape, axis, t.type).node, lineno=0)], []))
        return [None, None, Ex(g, t.type)] + [None] * len(offs)

    def tangent(*args, **kw):
        return tile_const(0, kw["ret"].type) if kw.get("ret") is not None else None


@builtin("tile_atomic_add_indexed_b", ["tile_atomic_add_indexed(a, indices, t, offset, axis)"],
         lambda ts, a=None: None, public=False)
class _tile_atomic_add_indexed:
    array_args = True
    array_access = "accumulate"

    def primal(a, idx, t, *offs, axis):
        return _tile_store_indexed.primal(a, idx, t, *offs, axis=axis, add=True)

    def adjoint(a, idx, t, *offs, ret, adj, axis, adj_arrays=()):
        return _tile_store_indexed.adjoint(a, idx, t, *offs, axis=axis, adj_arrays=adj_arrays)

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


# ----------------------------------------------------------------------------- random tiles
@builtin("tile_rand_b", ["tile_randi/tile_randf(shape, rng, min, max)"], lambda ts, a=None: None,
         differentiable=False, public=False)
class _tile_rand:
    """Each element drawn in turn from a copy of ``rng`` (as Warp's CPU tiles: the caller's
    state is not advanced)."""

    def primal(rng, *bounds, type, kind, block_dim=1):
        out = _let(tile_const(0, type).node, "rn")
        ov = _flat_view(out, type)
        st, e = _fresh("rs"), _fresh("e")
        # Warp's CPU tiles draw from the state advanced once (the first element is the second
        # value of the stream)
        if block_dim == 1:
            _emit(_assign_name(st, REGISTRY["rand_pcg"].primal(rng)))

        def body():
            stmts = []
            if block_dim > 1:
                # cooperative CPU blocks: element e is lane e % B's draw number e // B + 1 from
                # its own stream, rand_pcg(lane + rng) (Warp's register layout)
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
        if mode is not None:  # cooperative CPU blocks: each lane draws its elements
            mode.coupled.append("tile_rand")
            attrs["block_dim"] = mode.block_dim
        return ctx.emit(ir.Prim(lookup("tile_rand_b"), [rng] + bounds, attrs), t, node)
    return lower


special_form("tile_randi", "tile_randi(shape, rng, min=None, max=None): a tile of random "
             "integers")(_rand_form("int"))
special_form("tile_randf", "tile_randf(shape, rng, min=None, max=None): a tile of random "
             "floats in [0, 1) (or [min, max))")(_rand_form("float"))
