"""Tiles: elements and elementwise operations. An element read or written (``t[i, j]``:
``tile_extract`` / ``tile_insert``), the operators with a tile operand (the scalar builtin
applied per element, with its typing and derivative rules; ``tile_operator`` is how the
lowering of calls finds them), and ``tile_map`` (a func or builtin per element:
:class:`ElementFn`)."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelTypeError
from .. import ir
from ..exprs import Ex, _target, const, name, tile_const
from ..registry import REGISTRY, builtin, lookup, special_form
from .common import _elem_len, _int, _let, _sum_all, _tile_arg, _tuple, _wk, elementwise


#: operators on tiles: the builtin an operator's name becomes when an operand is a tile
TILE_OPERATORS = {}


# ----------------------------------------------------------------------------- elements
def _element_read(tile, index):
    """``tile[index]``, one scalar of the tile's array, tagged as such: pass ``tile_views`` lets
    a load that only such reads consume read its array in place."""
    node = ast.Subscript(tile, index, ast.Load())
    node.weft_element = True
    return node


@builtin("tile_extract", ["t[i, j]"], lambda ts, a=None: ts[0].dtype if T.is_tile_type(ts[0]) and
         len(ts) - 1 == len(ts[0].shape) and all(T.is_int(x) for x in ts[1:]) else None,
         public=False)
class tile_extract:
    def primal(t, *idx):
        sl = _tuple([i.node for i in idx])
        dt = t.type.dtype
        if not T.is_composite(dt):
            return Ex(_element_read(t.node, sl), dt)
        target = _target.get()
        if target is not None and target.name == "cuda" or len(T.element_shape(dt)) != 1:
            # CUDA's tile pass turns the helper into a view of the element in shared memory; a
            # matrix's components may be held flat (the lanes pass's per-lane buffers): the
            # helper reads either layout
            v = _let(_wk("tile_get_vec", t.node, sl), "ev")
            return Ex(_tuple([ast.Subscript(v, _int(c), ast.Load())
                              for c in range(_elem_len(dt))]), dt)
        # the CPU, vectors (quaternions, transforms): each component read where it is
        # (t[i, c]); a view of the element per read counted a reference on the tile,
        # atomically (an n-body loop over a tile's vec3s ran 12x slower than over the array)
        t, idx = t.atom("tl"), [i.atom("ix") for i in idx]   # each read once per component
        comps = [_element_read(t.node, _tuple([i.node for i in idx] + [_int(c)]))
                 for c in range(dt._length_)]
        return Ex(_tuple(comps), dt)

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


#: the dtypes CUDA adds into a shared element atomically (``cuda.atomic.add``)
ATOMIC_ADD_DTYPES = (T.float32, T.float64, T.int32, T.int64, T.uint32, T.uint64)


def _masked(has, g, dtype):
    """``g`` where ``has`` holds, else zero (``g`` itself when ``has`` is the constant True)."""
    if isinstance(has.node, ast.Constant) and has.node.value is True:
        return g
    return Ex(ast.IfExp(has.node, g.node, const(0, dtype).node), dtype)


def _tile_has_form(ts, a=None):  # (t, i, ..., x, has)
    return ts[0] if T.is_tile_type(ts[0]) and len(ts) - 3 == len(ts[0].shape) else None


@builtin("tile_add_at", ["t[i, j] += x (CUDA)", "tile_scatter_add (CUDA)"], _tile_has_form,
         public=False)
class tile_add_at:
    """``t`` with each CUDA thread's ``x`` added into its element ``(i, j)`` where its ``has``
    holds, atomically: Warp's ``tile_add_inplace`` (``t[i, j] += x``, every thread of the block
    adding its value; ``-=`` adds ``-x``) and ``tile_scatter_add``. A thread's ``x`` has the
    element's adjoint as its own (Warp's ``adj_add_inplace``); the tile's adjoint passes
    through. Only CUDA lowers them so: a CPU block is one thread (or lanes run in turn)."""

    def primal(t, *rest):
        idx, x, has = rest[:-2], rest[-2], rest[-1]
        return Ex(_wk("tile_add_at", t.node, _tuple([i.node for i in idx]), x.node, has.node),
                  t.type)

    def adjoint(t, *rest, ret, adj):
        idx, x, has = rest[:-2], rest[-2], rest[-1]
        return [adj] + [None] * len(idx) + [_masked(has, tile_extract.primal(adj, *idx),
                                                    x.type), None]

    def tangent(t, *rest, ret):
        n = len(rest) // 2
        idx, has = rest[:n - 2], rest[n - 1]
        tt, tx = rest[n], rest[-2]  # (then the indices' tangents, x's, has')
        if tt is None and tx is None:
            return tile_const(0, t.type)
        tt = tt if tt is not None else tile_const(0, t.type)
        if tx is None:
            return tt
        return tile_add_at.primal(tt, *idx, tx, has)


#: the integer dtypes CUDA combines into a shared element atomically (``cuda.atomic.and_``...)
ATOMIC_BITS_DTYPES = (T.int32, T.int64, T.uint32, T.uint64)


@builtin("tile_bits_at", ["t[i, j] &= x, |=, ^= (CUDA)"], lambda ts, a=None: ts[0] if
         T.is_tile_type(ts[0]) and len(ts) - 2 == len(ts[0].shape) else None,
         differentiable=False, public=False)
class tile_bits_at:
    """``t`` with each CUDA thread's ``x`` combined into its element ``(i, j)`` by ``op``
    (``and``, ``or``, ``xor``), atomically: Warp's ``tile_bit_and_inplace`` and its kin."""

    def primal(t, *rest, op):
        idx, x = rest[:-1], rest[-1]
        return Ex(_wk(f"tile_{op}_at", t.node, _tuple([i.node for i in idx]), x.node), t.type)


@builtin("tile_set_at", ["tile_scatter_masked (CUDA)"], _tile_has_form, public=False)
class tile_set_at:
    """``t`` with each CUDA thread's ``x`` written into its element ``(i, j)`` where its
    ``has`` holds: Warp's ``tile_scatter_masked`` on a block of threads. A writing thread's
    ``x`` takes the element's adjoint, and the tile's adjoint is cleared at every element
    written (``tile_zero_at_masked``)."""

    def primal(t, *rest):
        idx, x, has = rest[:-2], rest[-2], rest[-1]
        return Ex(_wk("tile_set_at", t.node, _tuple([i.node for i in idx]), x.node, has.node),
                  t.type)

    def adjoint(t, *rest, ret, adj):
        idx, x, has = rest[:-2], rest[-2], rest[-1]
        g = _masked(has, tile_extract.primal(adj, *idx), x.type)
        cleared = Ex(_wk("tile_zero_at_masked", adj.node, _tuple([i.node for i in idx]),
                         has.node), t.type)
        return [cleared] + [None] * len(idx) + [g, None]

    def tangent(t, *rest, ret):
        n = len(rest) // 2
        idx, x, has = rest[:n - 2], rest[n - 2], rest[n - 1]
        tt, tx = rest[n], rest[-2]  # (then the indices' tangents, x's, has')
        if tt is None and tx is None:
            return tile_const(0, t.type)
        tt = tt if tt is not None else tile_const(0, t.type)
        tx = tx if tx is not None else const(0, x.type)
        return tile_set_at.primal(tt, *idx, tx, has)


TILE_OPERATORS.update({"extract": "tile_extract", "insert": "tile_insert"})


@special_form("tile_extract", "tile_extract(t, i, j): an element of a tile")
def tile_extract_form(ctx, node):
    t = _tile_arg(ctx, ctx.expr(node.args[0]), node, "tile_extract's tile")
    idx = [ctx.expr(a) for a in node.args[1:]]
    idx = [ir.Const(int(i.value), T.int32) if isinstance(i, ir.Const) and i.literal else i
           for i in idx]
    return ctx.apply("tile_extract", [t] + idx, node)


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
        return Ex(ast.Call(name(self.fir.name), [e.node for e in elems] + _extra("forward"),
                           []), self.fir.ret_type)

    def adjoint(self, elems, ret, adj):
        if self.builtin is not None:
            return self.builtin.adjoint(*elems, ret=ret, adj=adj, **self.attrs)
        diffp = [k for k, p in enumerate(self.fir.params) if T.is_differentiable(p.type)]
        c = _let(ast.Call(name(f"{self.fir.name}__adj"), [e.node for e in elems] + [adj.node] +
                          _extra("adjoint"), []), "ca")
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
        c = ast.Call(name(f"{self.fir.name}__jvp"), args + _extra("tangent"), [])
        return Ex(ast.Subscript(c, _int(1), ast.Load()), ret.type)


def _extra(pass_kind):
    """The arguments every call of a generated function of ``pass_kind`` passes last on the
    target being generated for (CUDA adjoints' error word, debug builds' ``_dbg``)."""
    target = _target.get()
    return [name(p) for p in target.extra_params(pass_kind)] if target is not None else []


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
    from ..funcs import Function
    if isinstance(f, Function):
        if getattr(f, "overloads", None) and len(f.overloads) > 1:
            f = ctx.choose_overload(f, elem_args, node)
        fir = ctx.specializer.specialize(f, elem_args, node, ctx)
        if fir.ret_type is None:
            raise ctx.fail(node.args[0], "tile_map's function must return a value")
        fn, rtype = ElementFn(fir=fir), fir.ret_type
    else:
        from ..constructors import declaration_of
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
