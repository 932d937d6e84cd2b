"""Tiles: what the other modules of :mod:`weft.stdlib.tiles` share. The generated-code helpers
(statements and names emitted into the builder of the function being generated, a tile's flat
view and its elements, the loop of an elementwise operation, the sum of a tile's elements,
generated loops and blocks) and the lowering helpers (a call's keyword arguments, static shapes
and dtypes, tile load and store offsets, a tile argument checked, a tile name rebound and a
changed view written back into the tile it views)."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelTypeError
from .. import ir
from ..exprs import Builder, Ex, _builder, attr_path, name, tile_const, tile_dtype

VOID = T.TupleType(())


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


def _sum_all(adj, elem_t):
    """The sum of every element of tile ``adj`` as a value of ``elem_t``: the adjoint of a
    scalar a tile operation takes (broadcast to its elements). On CUDA it is one thread's
    (:func:`block_once`)."""
    if T.is_composite(elem_t):
        k = _elem_len(elem_t)
        s = _let(_wk("tile_sum_vec", adj.atom().node, _int(k)), "sv")
        return Ex(_tuple([block_once(ast.Subscript(s, _tuple([_int(0), _int(c)]), ast.Load()))
                          for c in range(k)]), elem_t)
    return Ex(block_once(ast.Subscript(_wk("tile_sum", adj.node), _int(0), ast.Load())), elem_t)


def block_once(node):
    """``node``, the adjoint of a scalar that a tile operation takes once per tile block: on
    CUDA, where every thread of the block holds the scalar (the same value) and runs the scalar
    code its adjoint goes on to, the adjoint is lane 0's and the other threads' zero, so that
    it counts once, not ``block_dim`` times (the adjoint of reading an element back adds every
    thread's part). Elsewhere a block is one thread: ``node`` as it is."""
    from ..lanes import CUDA
    if not CUDA.get():
        return node
    first = ast.Compare(_wk("tile_lane"), [ast.Eq()], [_int(0)])
    return ast.IfExp(first, node, _int(0))


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
    ctx.changed_in_place(target.id)
    old = ctx.env.get(target.id)
    ctx.bind(target.id, value, target)
    if old is None or not T.is_tile_type(getattr(value, "type", None)):
        return
    how = write_into_viewed(ctx, old, value, target)
    if how is not None:
        ctx.tile_views[id(ctx.env[target.id])] = how


def write_into_viewed(ctx, old, value, node):
    """Tile ``old`` changed in place into ``value``: where ``old`` is a view of a tile a local
    name holds, that tile changes too (its name rebound by :func:`store_back`); returns how
    ``value`` views the changed tile, or None."""
    how = ctx.tile_views.get(id(old))
    if how is None:
        return None
    base, spec, ops = how
    owner = next((n for n, v in ctx.env.items() if v is base), None)
    if owner is None:
        return None
    if all(s.kind == "int" for s in spec):  # a view of one element: never taken
        return None
    updated = ctx.apply("tile_index_set_b", [base, value] + list(ops), node,
                        attrs={"spec": tuple(spec)})
    store_back(ctx, ast.copy_location(ast.Name(owner, ast.Load()), node), updated)
    return (ctx.env[owner], spec, ops)


def _assign_assigned(node):
    return [node.args[0]] if node.args else []
