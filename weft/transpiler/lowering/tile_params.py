"""Tile parameters a ``@wp.func`` changes in place: the caller sees the change, as in Warp.

Warp passes tiles to funcs by reference: ``t += x``, ``t[i] = v``, ``wp.tile_matmul(a, b, t)``
or any other in-place tile operation on a parameter ``t`` changes the caller's tile. weft's
tiles are values, and an in-place operation rebinds the name to the changed tile
(:func:`weft.stdlib.tiles.store_back`, which tells ``ctx.changed_in_place``). So a func that changes a tile parameter in place
returns the parameter's final value too (after its own result: ``(result, t)``, or a tuple's
items then ``t``; ``t`` alone for a func returning nothing), and the call gives it back to the caller's variable, by the same
:func:`store_back` (so a caller's view writes back into the tile it views). An argument that is
not a variable (``f(wp.tile_ones(...))``) is changed in Warp where nobody sees it: nothing is
written back.

A func that changes a tile parameter in place and also assigns that name a new tile
(``t = t * 2`` beside ``t += 1``) is refused: which tile the caller sees would depend on the
order, and weft does not track it. So is one returning a struct: its result is returned
field by field already.
"""
from __future__ import annotations

import ast
import inspect

from ...core import types as T
from ...core.errors import KernelTypeError
from ...stdlib import ir, registry


def bind_params(ctx, params):
    """Before lowering a func: its tile parameters (``params``: (name, type) pairs), whose
    in-place changes ``ctx.changed_in_place`` records."""
    ctx.tile_params = {n: t for n, t in params if T.is_tile_type(t)}


def _plain_assignment(tree, name):
    """A statement that assigns ``name`` a new value (not in place), or None."""
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.For)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                    return node
    return None


def returns_with_params(ctx, exits, rets):
    """At the end of a func changing tile parameters in place: every way out returns the
    result's items, then those parameters' final values. Returns the new returned type, or
    None when the func changes no tile parameter."""
    names = [n for n in ctx.tile_params if n in ctx.inplace_params]
    if not names:
        return None
    for n in names:
        node = _plain_assignment(ctx.src.tree, n)
        if node is not None:
            raise ctx.fail(node, f"this func changes its tile parameter '{n}' in place (the "
                           f"caller sees the change, as in Warp) and also assigns '{n}' a new "
                           "tile here: use another name for the new tile", KernelTypeError)
    if ctx.ret_struct is not None:
        raise ctx.fail(rets[0].node, "a func returning a struct cannot also change a tile "
                       f"parameter in place ('{names[0]}'): return the tile instead",
                       KernelTypeError)
    value_type = rets[0].value.type if rets else None
    items = list(value_type.types) if isinstance(value_type, T.TupleType) else \
        ([value_type] if value_type is not None else [])
    out_type = T.TupleType(tuple(items + [ctx.tile_params[n] for n in names]))
    if len(out_type.types) == 1:  # the one changed tile itself (CUDA's tiles take one tile)
        out_type = out_type.types[0]
    rv = ctx.new_temp(out_type, "ret")
    make = registry.lookup("make_tuple")
    get = registry.lookup("tuple_get")
    for e in exits:  # (returns and the fall off the end: breaks were refused before)
        loc = ctx.loc(e.node) if e.node is not None else ctx.loc(ctx.src.tree)
        parts = []
        if isinstance(value_type, T.TupleType):
            for k, t in enumerate(value_type.types):
                v = ctx.new_temp(t)
                e.block.append(ir.Assign(v, ir.Prim(get, [e.value], {"index": k}), loc))
                parts.append(v)
        elif value_type is not None:
            parts.append(e.value)
        for n in names:
            v = e.env[n]
            if v.type != ctx.tile_params[n]:
                raise ctx.fail(e.node or ctx.src.tree, f"tile parameter '{n}' changes type in "
                               "this func", KernelTypeError)
            parts.append(v)
        e.block.append(ir.Assign(rv, ir.Prim(make, parts) if len(parts) > 1 else
                                 ir.Copy(parts[0]), loc))
    ctx.add(ir.Return(rv, ctx.loc(rets[0].node if rets else ctx.src.tree)))
    ctx.writes_back = (tuple(names), len(items), isinstance(value_type, T.TupleType))
    return out_type


def write_back(ctx, func, fir, node, args, out):
    """After a call of ``fir`` (a func changing tile parameters in place) at ``node``, with
    lowered arguments ``args`` (in parameter order): give the changed tiles back to the
    caller's variables, or to the tiles the arguments view (``f(t[0])``); the call's own
    result (or None)."""
    from ...stdlib.tiles.common import store_back, write_into_viewed
    names, n_items, is_tuple = fir.writes_back
    parts = [out] if not isinstance(fir.ret_type, T.TupleType) else \
        [ctx.apply("tuple_get", [out], node, attrs={"index": k})
         for k in range(n_items + len(names))]
    params = list(inspect.signature(func.func).parameters)
    for name, value in zip(names, parts[n_items:]):
        k = params.index(name)
        arg = node.args[k] if k < len(node.args) else next(
            (kw.value for kw in node.keywords if kw.arg == name), None)
        if isinstance(arg, ast.Name) and arg.id in ctx.env and \
                T.is_tile_type(getattr(ctx.env[arg.id], "type", None)):
            store_back(ctx, arg, value)
        elif arg is not None:
            write_into_viewed(ctx, args[k], value, arg)
    if n_items == 0:
        return None
    if not is_tuple:
        return parts[0]
    return ctx.emit(ir.Prim(registry.lookup("make_tuple"), parts[:n_items]),
                    T.TupleType(tuple(p.type for p in parts[:n_items])), node)
