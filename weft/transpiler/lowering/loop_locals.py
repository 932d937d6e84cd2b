"""Names first bound inside a loop body and read after the loop, as Python and Warp allow
(``for ...: d = sdf(p)`` then ``if d < eps:``), or read in the body where an iteration may not
have bound them yet (``if k == 0: v = ...`` then ``out[k] = v``: Warp reads what an earlier
iteration bound).

Such a name is declared before the loop with the zero of its type, then the loop carries it as
any variable it rebinds: after the loop it holds the value of its last binding, as in Python, and
zero when no iteration bound it (the loop ran no iteration, or left before binding it). Its type
is what the body binds it to, found by lowering the body once on trial (the lowering's state is
restored afterwards); nested loops find theirs the same way.
"""
from __future__ import annotations

from ...core import types as T
from ...stdlib import ir, registry
from ...stdlib.exprs import SetOverlay
from ..abi import flat_leaves, is_struct_array
from .astscan import _first_uses, assigned_names, live_after_many
from .structs import StructRef, struct_marker


def zero_value(ctx, t, node):
    """The zero of value type ``t`` (scalar, vector or matrix, tuple of those, tile) as an
    operand."""
    if isinstance(t, T.TileType):
        return ctx.emit(ir.Prim(registry.lookup("tile_const"), [zero_value(ctx, t.dtype, node)],
                                {"type": t}), t, node)
    if T.is_composite(t):
        return ctx.apply("construct", [], node, {"type": t})
    return ir.Const(0, t)


def declare_loop_locals(ctx, s, body_stmts, loop_env):
    """Bind, before loop ``s``, the zero of each name its body binds first and the function
    reads after it. ``loop_env`` adds the loop variable to the body's environment."""
    # (read after the loop, or in the body before an iteration binds it: the value an
    # earlier iteration bound, as Warp: ``if k == 0: v = ...`` then ``out[k] = v``)
    names = [n for n in assigned_names(ctx, body_stmts) if n not in ctx.env and n not in loop_env]
    early = {n for n, v in _first_uses(body_stmts, names, {}).items() if v}
    live = live_after_many(ctx, s, [n for n in names if n not in early])
    wanted = [n for n in names if n in early or n in live]
    if not wanted:
        return
    for n, t in _trial_types(ctx, body_stmts, loop_env, wanted).items():
        if T.is_struct(t):
            for key, lt in flat_leaves(t, n):
                _declare(ctx, key, lt, s)
            ctx.env[n] = struct_marker(ctx, n, t)
        else:
            _declare(ctx, n, t, s)


def _declare(ctx, n, t, node):
    v = ctx.new_version(n, t)
    ctx.add(ir.Assign(v, ir.Copy(zero_value(ctx, t, node)), ctx.loc(node)))
    ctx.env[n] = v


def _trial_types(ctx, body_stmts, loop_env, wanted):
    """``{name: type}`` of the ``wanted`` names that the body binds to a value a loop can
    carry (scalars, vectors, matrices, tuples of those, structs without array members) on
    some way out of it; nothing when the body does not lower (the real lowering reports
    why)."""
    saved = snapshot(ctx)
    try:
        with ctx.in_block({**ctx.env, **loop_env}):
            exits = ctx.lower_block(body_stmts)
    except Exception:  # noqa: BLE001 - lowered again, for real, with its error
        exits = []
    finally:
        restore(ctx, saved)
    found = {}
    for n in wanted:
        values = [e.env[n] for e in exits if n in e.env]
        if values and all(type(v) is type(values[0]) and v.type == values[0].type
                          for v in values) and _carriable(values[0]):
            found[n] = values[0].type
    return found


def _carriable(v):
    if isinstance(v, StructRef):
        return not is_struct_array(v.type) and not any(
            isinstance(t, T.ArrayType) for _, t in flat_leaves(v.type, ""))
    return isinstance(v, ir.Var) and _value_type(v.type)


def _value_type(t):
    if isinstance(t, T.TupleType):
        return all(_value_type(x) for x in t.types)
    return T.is_scalar(t) or T.is_composite(t) or isinstance(t, T.TileType)


def snapshot(ctx):
    """The lowering state that lowering statements changes, to lower them on trial; call
    :func:`restore` after, always. What grows with the function is not copied (that made
    lowering a chain of ``if`` statements quadratic: each test is lowered on trial): the block
    keeps its length (lowering only appends to it), the names taken are seen through an
    overlay that collects those the trial takes."""
    names = ctx.names
    taken = names.taken
    names.taken = SetOverlay(taken)
    return (ctx.block, len(ctx.block), dict(ctx.env), ctx.last_temp, dict(names.counts),
            taken, dict(names.bases), dict(ctx.versions), list(ctx.callees),
            set(ctx.defined_in_loops), ctx.loop_returned, dict(ctx.const_vars),
            set(ctx.literal_vars), dict(ctx.callables), dict(ctx.static_locals),
            ctx.tid_dims, dict(ctx.tid_vars))


def restore(ctx, saved):
    (ctx.block, n, ctx.env, ctx.last_temp, ctx.names.counts, ctx.names.taken, ctx.names.bases,
     ctx.versions, ctx.callees[:], ctx.defined_in_loops, ctx.loop_returned, ctx.const_vars,
     ctx.literal_vars, ctx.callables, ctx.static_locals, ctx.tid_dims, ctx.tid_vars) = saved
    del ctx.block[n:]
