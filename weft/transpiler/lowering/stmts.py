"""Statements: blocks and their exits, branches, loops, and a function body (assignments in
:mod:`.assign_stmts`).

``break``, ``continue`` and ``return`` leave no trace in the IR: each block returns its
:class:`Exit` records, statements after an ``if`` that may leave early move into its branches,
joins merge differing variables with copies, loops carry every variable their body rebinds, and
a ``return`` inside a loop becomes a flag and a value carried out of it (see :mod:`..ir`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ...core import types as T
from ...core.errors import KernelNameError, KernelSyntaxError, KernelTypeError
from ...stdlib import ir
from ..abi import is_struct_array
from ..source import KERNEL_RETURN
from ...stdlib import registry
from . import exprs, literals, structs, tile_params
from .loop_locals import declare_loop_locals, restore, snapshot, zero_value
from .returns import check_return_annotation
from .assign_stmts import stmt_ann_assign, stmt_assign, stmt_aug_assign
from .astscan import (assigned_names, breaks_out, may_exit,  # noqa: F401
                      read_after, uses_static)
from .binding import bind


@dataclass
class Exit:
    """A way out of a block: ``fall`` (falls through), ``break``, ``continue`` or ``return``."""

    kind: str
    env: dict
    block: list
    value: object = None
    node: object = None


# ---------------------------------------------------------------------------- functions

def lower_function(ctx, params, prebound=None, epilogue=()):
    """Lower the body with ``params`` (list of (name, type)) bound, then ``prebound`` local
    names (name -> operand) and followed by the ``epilogue`` statements (AST)."""
    for pname, ptype in params:
        if T.is_struct(ptype) or is_struct_array(ptype):
            structs.bind_struct_param(ctx, pname, ptype)
            continue
        v = ir.Var(pname, ptype)
        ctx.versions[pname] = 0
        ctx.env[pname] = v
        ctx.params.append(v)
    if ctx.kind == "func":
        tile_params.bind_params(ctx, params)
    for name, value in (prebound or {}).items():
        ctx.versions[name] = 0
        ctx.names.taken.add(name)
        ctx.env[name] = value
    body = list(ctx.src.tree.body) + list(epilogue)
    exits = lower_block(ctx, body)
    finish_function(ctx, exits)
    _drop_unused_default_tiles(ctx)
    return ctx.block


def _drop_unused_default_tiles(ctx):
    """The zeros :func:`_default_tile` gave a tile missing on some branches, and its merged
    version, removed when nothing reads the merged version (the usual branch-local tile: the
    code is what it was without them)."""
    pending = ctx.__dict__.pop("default_tiles", None)
    if not pending:
        return
    used = ir.used_vars(ctx.block)
    drop = set()
    for m, zs in pending:
        if id(m) not in used:
            drop.add(id(m))
            drop.update(id(z) for z in zs)
    if not drop:
        return

    def clean(stmts):
        out = []
        for st in stmts:
            if isinstance(st, ir.Assign) and id(st.dst) in drop:
                continue
            if isinstance(st, ir.If):
                st.body[:] = clean(st.body)
                st.orelse[:] = clean(st.orelse)
            elif isinstance(st, ir.Loop):
                st.body[:] = clean(st.body)
            out.append(st)
        return out

    ctx.block[:] = clean(ctx.block)


def finish_function(ctx, exits):
    rets = [e for e in exits if e.kind == "return" and e.value is not None]
    for e in exits:
        if e.kind in ("break", "continue"):
            raise ctx.fail(e.node, f"'{e.kind}' outside a loop", KernelSyntaxError)
    if not rets:
        if ctx.kind == "func":
            ctx.ret_type = tile_params.returns_with_params(ctx, exits, rets)
        return
    missing = [e for e in exits if e.value is None]
    if missing:
        raise ctx.fail(missing[0].node or ctx.src.tree,
                       "this func returns a value on some paths but not on all of them",
                       KernelSyntaxError)
    rtype = rets[0].value.type
    for e in rets[1:]:
        if e.value.type != rtype:
            raise ctx.fail(e.node, f"returns {T.type_name(e.value.type)} here but "
                           f"{T.type_name(rtype)} elsewhere", KernelTypeError)
    check_return_annotation(ctx, rtype, rets[0].node)
    ctx.ret_type = rtype
    if ctx.kind == "func":  # tile parameters changed in place: returned too
        with_params = tile_params.returns_with_params(ctx, exits, rets)
        if with_params is not None:
            ctx.ret_type = with_params
            return
    if len(rets) == 1:
        ctx.add(ir.Return(rets[0].value, ctx.loc(rets[0].node)))
        return
    rv = ctx.new_temp(rtype, "ret")
    for e in rets:
        e.block.append(ir.Assign(rv, ir.Copy(e.value), ctx.loc(e.node)))
    ctx.add(ir.Return(rv, ctx.loc(rets[0].node)))


# ---------------------------------------------------------------------------- blocks

def lower_block(ctx, stmts):
    for i, s in enumerate(stmts):
        if isinstance(s, (ast.Break, ast.Continue)):
            return [Exit(type(s).__name__.lower(), dict(ctx.env), ctx.block, node=s)]
        if isinstance(s, ast.Return):
            value = None
            if s.value is not None and ctx.kind == "kernel":  # even ``return None``
                raise ctx.fail(s, KERNEL_RETURN, KernelTypeError)
            if s.value is not None:
                value = exprs.lower_return_value(ctx, s.value)
            return [Exit("return", dict(ctx.env), ctx.block, value, s)]
        if isinstance(s, ast.If):
            cond = static_condition(ctx, s.test)
            if cond is not None:  # a compile-time condition: only the branch taken exists
                return lower_block(ctx, list(s.body if cond else s.orelse) + list(stmts[i + 1:]))
        if isinstance(s, ast.If) and may_exit(s.body + s.orelse):
            return lower_if_tail(ctx, s, stmts[i + 1:])
        lower_stmt(ctx, s)
        if isinstance(s, (ast.For, ast.While)) and ctx.loop_returned is not None:
            # a return inside the loop left it through a flag: return after it
            has_value, ctx.loop_returned = ctx.loop_returned, None
            if is_endless(ctx, s):  # nothing leaves ``while True`` but its returns
                value = ctx.env["__retv"] if has_value else None
                return [Exit("return", dict(ctx.env), ctx.block, value, s)]
            check = ast.If(ast.Name("__retf", ast.Load()), [ast.Return(
                ast.Name("__retv", ast.Load()) if has_value else None)], [])
            for node in ast.walk(check):
                ast.copy_location(node, s)
            return lower_block(ctx, [check] + list(stmts[i + 1:]))
    return [Exit("fall", dict(ctx.env), ctx.block)]


def is_endless(ctx, s):
    """``while True:`` (or another constant true test) whose body has no ``break``."""
    return (isinstance(s, ast.While) and not breaks_out(s.body)
            and static_condition(ctx, s.test) is True)


def static_condition(ctx, test):
    """True/False when an ``if`` test is a compile-time constant, else None. Lowering the test
    has no side effects worth keeping when it folds to a constant."""
    saved = snapshot(ctx)
    try:
        c = exprs.lower_condition(ctx, test)
    except Exception:  # noqa: BLE001 - lowered again, for real, with its error
        c = None
    restore(ctx, saved)
    return bool(c.value) if isinstance(c, ir.Const) else None


def lower_if_tail(ctx, s, rest):
    """An ``if`` with an early exit: the statements after it move into its branches."""
    cond = exprs.lower_condition(ctx, s.test)
    env0 = dict(ctx.env)
    with ctx.in_block(env0) as body:
        exits = lower_block(ctx, list(s.body) + list(rest))
    with ctx.in_block(env0) as orelse:
        exits += lower_block(ctx, list(s.orelse) + list(rest))
    ctx.add(ir.If(cond, body, orelse, ctx.loc(s)))
    return exits


def merge(ctx, exits, node):
    """Join fall-through exits: variables that differ get a merged version."""
    envs = [e.env for e in exits]
    merged = {}
    for name in dict.fromkeys(n for env in envs for n in env):
        zs = None
        if not all(name in env for env in envs):
            zs = _default_tile(ctx, exits, name, node)
            if zs is None:
                done = _partial_array(ctx, exits, name, node)
                if done is not None:
                    merged[name] = done
                if done is not False:
                    continue
        vs = [env[name] for env in envs]
        if all(v is vs[0] for v in vs):
            merged[name] = vs[0]
            continue
        if any(v.type != vs[0].type for v in vs) or (
                isinstance(vs[0].type, T.ArrayType) and not _mergeable_array(vs[0].type)):
            raise ctx.fail(node, f"variable '{name}' has different types on the branches of "
                           "this statement", KernelTypeError)
        m = ctx.new_version(name, vs[0].type)
        for e, v in zip(exits, vs):
            e.block.append(ir.Assign(m, ir.Copy(v), ctx.loc(node)))
        merged[name] = m
        if zs is not None:
            ctx.__dict__.setdefault("default_tiles", []).append((m, zs))
    return merged


def _partial_array(ctx, exits, name, node):
    """An array bound on some paths only. Returns None: not one (the name stays undefined
    after the join); the value to merge as it is (an array member of a struct set on some
    paths only); False: Warp's null array was bound on the other paths, merge as usual."""
    envs = [e.env for e in exits]
    have = [env[name] for env in envs if name in env]
    if not (isinstance(have[0], ir.Var) and _mergeable_array(have[0].type)) or \
            any(v.type != have[0].type for v in have):
        return None
    root = next((env[name.split("__")[0]] for env in envs
                 if name.split("__")[0] in env), None)
    if isinstance(root, (structs.StructRef, structs.TupleRef)) and \
            all(v is have[0] for v in have):
        # an array member of a struct set on some paths only (Warp: null on the others,
        # where a valid program never reads it): the array set, so that a func can return
        # the struct (its arrays are its parameters)
        return have[0]
    # an array bound on some paths only: Warp's null array on the others
    for e in exits:
        if name not in e.env:
            null = ctx.new_temp(have[0].type, "null")
            e.block.append(ir.Assign(null, ir.Prim(registry.lookup("null_array"), [],
                                                   {"type": have[0].type}), ctx.loc(node)))
            e.env[name] = null
    return False


def _mergeable_array(t):
    """Arrays that joins merge (a copy of the array each path has, Warp's null array where a
    path has none): user arrays, not thread-local buffers or arrays of structs."""
    return isinstance(t, T.ArrayType) and not t.local and not T.is_struct(t.dtype)


def _default_tile(ctx, exits, name, node):
    """A tile assigned on some branches only (Warp declares every tile variable at the top of
    the function): the other branches get a tile of zeros of its type, so it is defined after
    the join (:func:`_drop_unused_default_tiles` removes them again when nothing reads it).
    Other values stay undefined there. Returns the zero tiles made, or None (not a tile)."""
    types = [e.env[name].type for e in exits if name in e.env]
    t = types[0]
    if any(u != t for u in types):
        return None
    if not T.is_tile_type(t):
        return None
    from ...stdlib.registry import lookup
    zs = []
    for e in exits:
        if name not in e.env:
            z = ctx.new_version(name, t)
            e.block.append(ir.Assign(z, ir.Prim(lookup("tile_const"), [], {"type": t,
                                                                             "value": 0}),
                                     ctx.loc(node)))
            e.env[name] = z
            zs.append(z)
    return zs


# ---------------------------------------------------------------------------- statements

def lower_stmt(ctx, s):
    handler = STATEMENTS.get(type(s))
    if handler is None:
        raise ctx.fail(s, f"'{type(s).__name__}' statements are not supported in kernels",
                       KernelSyntaxError)
    handler(ctx, s)


def stmt_pass(ctx, s):
    pass


def stmt_assert(ctx, s):
    from ...stdlib.effects import lower_assert
    lower_assert(ctx, s)


def stmt_expr(ctx, s):
    if isinstance(s.value, ast.Constant):
        return  # docstring or bare constant
    exprs.lower_expr(ctx, s.value, allow_void=True)


def stmt_if(ctx, s):
    cond = exprs.lower_condition(ctx, s.test)
    env0 = dict(ctx.env)
    with ctx.in_block(env0) as body:
        (e1,) = lower_block(ctx, s.body)
    with ctx.in_block(env0) as orelse:
        (e2,) = lower_block(ctx, s.orelse)
    ctx.add(ir.If(cond, body, orelse, ctx.loc(s)))
    _zero_missing(ctx, env0, [e1, e2], s)
    ctx.env = merge(ctx, [e1, e2], s)


def _zero_missing(ctx, env0, exits, node):
    """A value variable first assigned on one branch only is zero on the others, as in Warp
    (``if flag: x = 123`` then reading ``x``)."""
    names = {n for e in exits for n in e.env if n not in env0}
    for name in sorted(names):
        have = [e.env[name] for e in exits if name in e.env]
        t = have[0].type
        if not isinstance(have[0], ir.Var) or not (T.is_scalar(t) or T.is_composite(t) or
                                                   isinstance(t, T.TileType)) or \
                any(v.type != t for v in have):
            continue
        for e in exits:
            if name in e.env:
                continue
            saved = ctx.block, ctx.env
            ctx.block, ctx.env = e.block, e.env
            try:
                zero = zero_value(ctx, t, node)
                v = ctx.new_version(name, t)
                ctx.add(ir.Assign(v, ir.Copy(zero), ctx.loc(node)))
                e.env[name] = v
            finally:
                ctx.block, ctx.env = saved


def stmt_for(ctx, s):
    if s.orelse:
        raise ctx.fail(s, "'for ... else' is not supported", KernelSyntaxError)
    it = s.iter
    callee = ctx.resolve(it.func) if isinstance(it, ast.Call) else None
    if callee is reversed and len(it.args) == 1 and not it.keywords and \
            isinstance(it.args[0], ast.Call) and ctx.resolve(it.args[0].func) is range:
        return reversed_range(ctx, s, it.args[0])
    if isinstance(s.target, ast.Name) and (callee in registry.ITERATOR_STARTS or (
            isinstance(it, ast.Name) and it.id in ctx.env
            and getattr(ctx.env[it.id], "type", None) in registry.ITERATORS)):
        return query_loop(ctx, s)
    if not (isinstance(it, ast.Call) and callee is range):
        raise ctx.fail(it, "kernels can only loop over range(...)", KernelSyntaxError)
    if not isinstance(s.target, ast.Name):
        raise ctx.fail(s.target, "the loop variable must be a single name", KernelSyntaxError)
    args = [exprs.lower_expr(ctx, a) for a in it.args]
    if not 1 <= len(args) <= 3 or it.keywords:
        raise ctx.fail(it, "range() takes 1 to 3 integer arguments", KernelTypeError)
    args = [ir.Const(int(a.value), T.int32) if isinstance(a, ir.Const) and a.type is T.bool
            else literals.adapt_literal(a, T.int32) for a in args]  # range(True), as Python
    for a, node in zip(args, it.args):
        if not T.is_int(a.type):
            raise ctx.fail(node, f"range() needs integers, got {T.type_name(a.type)}",
                           KernelTypeError)
    if len(args) == 1:
        args = [ir.Const(0, T.int32)] + args
    if len(args) == 2:
        args.append(ir.Const(1, T.int32))
    start, stop, step = args
    if isinstance(step, ir.Const) and step.value == 0:
        raise ctx.fail(it, "range() step must not be zero", KernelTypeError)
    if all(isinstance(a, ir.Const) for a in args) and (
            uses_static(ctx, s.body) or s.target.id in ctx.static_locals):
        return unroll(ctx, s, range(int(start.value), int(stop.value), int(step.value)))
    loopvar = ctx.new_version(s.target.id, T.int32)
    body = list(s.body)
    name = s.target.id
    keep = read_after(ctx, s, name)
    if keep is not None:
        # ``i`` read after the loop keeps its last value, as in Python (Warp too); unchanged
        # (or ``start`` when new) if the loop runs no iteration
        before = ctx.env.get(name)
        bind(ctx, keep, before if getattr(before, "type", None) == T.int32 else start, s)
        body.insert(0, ast.copy_location(ast.Assign([ast.Name(keep, ast.Store())],
                                                    ast.Name(name, ast.Load())), s))
    lower_loop(ctx, "for", s, body, loopvar, start, stop, step, exclude=name)
    if keep is not None:
        bind(ctx, name, ctx.env.pop(keep), s)


def reversed_range(ctx, s, rng):
    """``for i in reversed(range(a, b, k))``, as Python: ``n`` = the range's length, then
    ``range(a + (n - 1) k, a - k, -k)`` (empty when ``n`` is 0)."""
    args = list(rng.args)
    if not 1 <= len(args) <= 3 or rng.keywords:
        raise ctx.fail(rng, "range() takes 1 to 3 integer arguments", KernelTypeError)
    args = ([ast.Constant(0)] + args if len(args) == 1 else args) + \
        ([ast.Constant(1)] if len(args) < 3 else [])
    tag = f"_rev{s.lineno}_{s.col_offset}"
    a, b, k, n = (f"{tag}_{x}" for x in "abkn")
    src = (f"{a} = int({{}})\n{b} = int({{}})\n{k} = int({{}})\n"
           f"{n} = max({b} - {a} + {k} - 1, 0) / {k} if {k} > 0 else "
           f"max({a} - {b} - {k} - 1, 0) / (0 - {k})\n")
    pre = ast.parse(src.format(*(["0"] * 3))).body
    for stmt, arg in zip(pre, args):
        stmt.value.args = [arg]
    loop = ast.parse(f"for _ in range({a} + ({n} - 1) * {k}, {a} - {k}, 0 - {k}):\n    pass"
                     ).body[0]
    loop.target, loop.body = s.target, list(s.body)
    for stmt in pre + [loop]:
        for node in ast.walk(stmt):
            if not hasattr(node, "lineno") or node in (s.target,) or node in s.body:
                ast.copy_location(node, s)
    for stmt in pre:
        lower_stmt(ctx, stmt)
    return stmt_for(ctx, loop)


def query_loop(ctx, s):
    """``for j in wp.hash_grid_query(...)`` (or over a query variable), as Warp: ``query =
    <iter>; j = int(0); while <next>(query, j): body`` with the stdlib's step form for the
    query's type (:data:`weft.stdlib.registry.ITERATORS`)."""
    pre = []
    if isinstance(s.iter, ast.Name):
        q = s.iter.id
    else:
        q = ctx.names.fresh("query")
        pre.append(ast.Assign([ast.Name(q, ast.Store())], s.iter))
    pre.append(ast.Assign([ast.Name(s.target.id, ast.Store())],
                          ast.Call(ast.Name("int", ast.Load()), [ast.Constant(0)], [])))
    for p in pre:
        lower_stmt(ctx, ast.fix_missing_locations(ast.copy_location(p, s)))
    step = ctx.names.fresh("query_next")
    ctx.callables[step] = registry.ITERATORS[ctx.env[q].type]
    test = ast.Call(ast.Name(step, ast.Load()), [ast.Name(q, ast.Load()),
                                                 ast.Name(s.target.id, ast.Load())], [])
    loop = ast.copy_location(ast.While(test, list(s.body), []), s)
    return stmt_while(ctx, ast.fix_missing_locations(loop))


def unroll(ctx, s, values):
    """A loop over a constant range whose body uses ``wp.static``: one copy of the body per
    value, the loop variable a constant there (``wp.static(i)`` sees it), as Warp."""
    name = s.target.id
    saved = ctx.static_locals.get(name, _MISSING)
    try:
        for v in values:
            ctx.static_locals[name] = v
            bind(ctx, name, ir.Const(v, T.int32), s)
            exits = lower_block(ctx, list(s.body))
            # ``if wp.static(...): continue`` leaves one way out of the copy; a break, a
            # return or a continue decided at run time would need the loop
            if len(exits) != 1 or exits[0].kind not in ("fall", "continue") or \
                    exits[0].block is not ctx.block:
                raise ctx.fail(s, "a loop unrolled for wp.static() cannot break, return or "
                               "continue other than under a wp.static() condition",
                               KernelSyntaxError)
            ctx.env = exits[0].env
    finally:
        if saved is _MISSING:
            ctx.static_locals.pop(name, None)
        elif len(values):  # inside another unrolled loop: the variable keeps its last value,
            ctx.static_locals[name] = values[-1]  # as in Python
        else:
            ctx.static_locals[name] = saved


_MISSING = object()


def stmt_while(ctx, s):
    if s.orelse:
        raise ctx.fail(s, "'while ... else' is not supported", KernelSyntaxError)
    stop = ast.If(test=ast.UnaryOp(ast.Not(), s.test), body=[ast.Break()], orelse=[])
    ast.copy_location(stop, s.test)
    ast.copy_location(stop.test, s.test)
    ast.copy_location(stop.body[0], s.test)
    lower_loop(ctx, "while", s, [stop] + list(s.body), None, None, None, None, exclude=None)


def lower_loop(ctx, kind, s, body_stmts, loopvar, start, stop, step, exclude):
    declare_loop_locals(ctx, s, body_stmts, {exclude: loopvar} if loopvar is not None else {})
    # arrays are never carried: ``a[i] = x`` stores into an array without rebinding it
    carried_names = [n for n in structs.expand_struct_names(ctx, assigned_names(ctx, body_stmts))
                     if n in ctx.env and n != exclude
                     and not isinstance(ctx.env[n].type, T.ArrayType)]
    env_after = dict(ctx.env)
    headers = {}
    for n in carried_names:
        pre = ctx.env[n]
        h = ctx.new_version(n, pre.type)
        ctx.add(ir.Assign(h, ir.Copy(pre), ctx.loc(s)))
        headers[n] = h
    env_body = dict(ctx.env)
    env_body.update(headers)
    if loopvar is not None:
        env_body[exclude] = loopvar
    with ctx.in_block(env_body) as body:
        exits = lower_block(ctx, body_stmts)
    ends = {n: ctx.new_version(n, headers[n].type) for n in carried_names}
    brk = None
    if any(e.kind == "break" for e in exits):
        brk = ctx.new_temp(T.bool, "brk")
    ret = loop_return_slots(ctx, exits, s)
    if ret and brk is None:
        brk = ctx.new_temp(T.bool, "brk")
    for e in exits:
        for h, end, value in ret:
            e.block.append(ir.Assign(end, ir.Copy(value(e)), ctx.loc(e.node or s)))
        for n in carried_names:
            v = e.env.get(n)
            if v is None:
                raise ctx.fail(s, f"variable '{n}' is not defined on every path through this "
                               "loop", KernelNameError)
            if v.type != headers[n].type:
                raise ctx.fail(s, f"variable '{n}' changes type inside this loop",
                               KernelTypeError)
            e.block.append(ir.Assign(ends[n], ir.Copy(v), ctx.loc(e.node or s)))
        if brk is not None:
            e.block.append(ir.Assign(brk, ir.Copy(ir.Const(e.kind in ("break", "return"),
                                                           T.bool)), ctx.loc(e.node or s)))
    carried = [(headers[n], ends[n]) for n in carried_names]
    carried += [(h, end) for h, end, _ in ret]
    ctx.add(ir.Loop(kind, loopvar, start, stop, step, body, carried, brk, ctx.loc(s)))
    env_after.update(headers)
    for (h, _, _), n in zip(ret, ("__retf", "__retv")):
        env_after[n] = h
    ctx.env = env_after
    ctx.defined_in_loops.update(n for n in assigned_names(ctx, body_stmts)
                                if n not in env_after)


def loop_return_slots(ctx, exits, s):
    """For ``return`` inside a loop: a flag and a value carried through the loop.

    Returns ``[(header, end, value_of_exit)]``; the headers are initialised before the loop
    (False, and a zero of the returned type) and ``lower_block`` returns after the loop when
    the flag is set."""
    rets = [e for e in exits if e.kind == "return"]
    if not rets:
        return []
    with_value = [e for e in rets if e.value is not None]
    if with_value and len(with_value) != len(rets):
        raise ctx.fail(rets[0].node, "this func returns a value on some paths but not on all "
                       "of them", KernelSyntaxError)
    slots = []
    hf = ctx.new_version("__retf", T.bool)
    ctx.add(ir.Assign(hf, ir.Copy(ir.Const(False, T.bool)), ctx.loc(s)))
    ef = ctx.new_version("__retf", T.bool)
    slots.append((hf, ef, lambda e: ir.Const(True, T.bool) if e in rets
                  else e.env.get("__retf", hf)))
    if with_value:
        rtype = with_value[0].value.type
        for e in with_value[1:]:
            if e.value.type != rtype:
                raise ctx.fail(e.node, f"returns {T.type_name(e.value.type)} here but "
                               f"{T.type_name(rtype)} elsewhere", KernelTypeError)
        hv = ctx.new_version("__retv", rtype)
        ctx.add(ir.Assign(hv, ir.Copy(ir.Const(0, rtype)), ctx.loc(s)))
        ev = ctx.new_version("__retv", rtype)
        slots.append((hv, ev, lambda e: e.value if e in rets else e.env.get("__retv", hv)))
    for e in rets:
        e.kind = "break"
    ctx.loop_returned = bool(with_value)
    return slots


STATEMENTS = {ast.Pass: stmt_pass, ast.Expr: stmt_expr, ast.Assert: stmt_assert, ast.If: stmt_if,
              ast.Assign: stmt_assign, ast.AnnAssign: stmt_ann_assign, ast.AugAssign: stmt_aug_assign, ast.For: stmt_for,
              ast.While: stmt_while}
