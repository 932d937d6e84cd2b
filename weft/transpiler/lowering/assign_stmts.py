"""Assignment statements: ``x = v`` (and ``a, b = b, a``, ``f = square``, the forms that bind
their targets themselves), ``x: T = v`` and ``x += v``; :mod:`.binding` binds the targets."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelSyntaxError, KernelTypeError
from ...stdlib import ir, tiles
from ...stdlib.lanes import CUDA as CUDA_LOWERING
from . import exprs, literals
from .binding import assign, bind, callable_rebound, coerce_store


def stmt_assign(ctx, s):
    if isinstance(s.value, ast.Call):
        form = _assigning_form(ctx, s.value)
        if form is not None:  # ``i, j = wp.tid()``: the form binds its targets itself
            if len(s.targets) != 1:
                raise ctx.fail(s, f"assign wp.{form.name}() to one target", KernelSyntaxError)
            return form.lower_assign(ctx, s.targets[0], s.value)
    if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
            _binds_callable(ctx, s.targets[0], s.value):
        return
    if (len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple)
            and isinstance(s.value, ast.Tuple)):
        # a, b = b, a: evaluate every value before binding any name
        tgt = s.targets[0]
        if len(tgt.elts) != len(s.value.elts):
            raise ctx.fail(s, f"cannot unpack {len(s.value.elts)} values into "
                           f"{len(tgt.elts)} names", KernelSyntaxError)
        values = [exprs.lower_expr(ctx, v) for v in s.value.elts]
        for t, v in zip(tgt.elts, values):
            assign(ctx, t, v, s)
        return
    value = exprs.lower_expr(ctx, s.value)
    for t in s.targets:
        assign(ctx, t, value, s)


def _binds_callable(ctx, target, value_node):
    """``f = square``, ``g = wp.grad(f)``: a local name for a func (there are no function
    values at run time: the name is resolved while compiling, and cannot be rebound)."""
    value = None
    if isinstance(value_node, (ast.Name, ast.Attribute, ast.Call)):
        try:
            value = ctx.resolve(value_node)
        except Exception:  # noqa: BLE001 - lowered as an expression, with its error
            value = None
    is_func = value is not None and hasattr(value, "lower_call") and not isinstance(value, type)
    name = target.id
    if name in ctx.callables:
        raise callable_rebound(ctx, name, target, is_func)
    if not is_func:
        return False
    if name in ctx.env:
        raise ctx.fail(target, f"rebinding local '{name}' to a function is not supported",
                       KernelTypeError)
    ctx.callables[name] = value
    return True


def _assigning_form(ctx, call):
    callee = ctx.resolve(call.func)
    return callee if getattr(callee, "lower_assign", None) is not None else None


def stmt_ann_assign(ctx, s):
    if s.value is None:
        raise ctx.fail(s, "a declaration needs a value", KernelSyntaxError)
    value = exprs.lower_expr(ctx, s.value)
    want = literals.annotation_type(ctx, s.annotation)
    if want is not None and value.type != want:
        value = literals.adapt_literal(value, want)
        if value.type != want:
            raise ctx.fail(s.value, f"value of type {T.type_name(value.type)} does not match "
                           f"the annotation {T.type_name(want)}", KernelTypeError)
    assign(ctx, s.target, value, s)


#: the augmented assignments into a tile element a CUDA block's threads combine atomically
_ATOMIC_OPS = {ast.Add: "add", ast.Sub: "sub", ast.BitAnd: "and", ast.BitOr: "or",
               ast.BitXor: "xor"}


def stmt_aug_assign(ctx, s):
    op_name = exprs.BINOPS.get(type(s.op))
    t = s.target
    if isinstance(t, ast.Name) and t.id in ctx.callables:
        raise callable_rebound(ctx, t.id, t)
    if isinstance(t, ast.Subscript) and exprs.is_array_expr(ctx, t.value):
        arr, idx = exprs.lower_array_index(ctx, t)
        value = exprs.lower_expr(ctx, s.value)
        if isinstance(s.op, (ast.Add, ast.Sub)) and not arr.type.local:
            value = coerce_store(ctx, arr, value, s.value)
            op = "add" if isinstance(s.op, ast.Add) else "sub"
            ctx.add(ir.AtomicRMW(op, arr, idx, value, None, ctx.loc(s)))
            return
        old = ctx.emit(ir.Load(arr, idx), arr.type.dtype, s)
        new = ctx.apply(op_name, [old, value], s)
        ctx.add(ir.Store(arr, idx, new, ctx.loc(s)))
        return
    t = _evaluated_once(ctx, t, s)
    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
            T.is_tile_type(getattr(ctx.env.get(t.value.id), "type", None)):
        tiles.check_augmented(ctx, ctx.env[t.value.id], t.slice, t)
        atomic = _ATOMIC_OPS.get(type(s.op))
        if CUDA_LOWERING.get() and atomic:  # (each thread's value, as Warp's shared tiles)
            new = tiles.atomic_subscript(ctx, exprs.lower_expr(ctx, t.value), t.slice,
                                         exprs.lower_expr(ctx, s.value), atomic, s)
            return tiles.store_back(ctx, t.value, new)
    current = exprs.lower_expr(ctx, t)
    value = exprs.lower_expr(ctx, s.value)
    new = ctx.apply(op_name, [current, value], s)
    if isinstance(t, ast.Name) and T.is_tile_type(getattr(new, "type", None)):
        return tiles.store_back(ctx, t, new)  # Warp's tiles change in place: views write back
    assign(ctx, t, new, s)


def _evaluated_once(ctx, t, s):
    """The target of ``a[f(i)].x += v`` with its computed indices evaluated now, once, into
    hidden names: reading and writing it back must not call ``f`` twice (as Python)."""
    if isinstance(t, ast.Attribute):
        inner = _evaluated_once(ctx, t.value, s)
        return t if inner is t.value else ast.copy_location(ast.Attribute(inner, t.attr, t.ctx), t)
    if not isinstance(t, ast.Subscript):
        return t
    base = _evaluated_once(ctx, t.value, s)
    elts = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]

    def computed(e):  # calls or reads: evaluated once (constants such as -5 stay constants)
        return any(isinstance(n, (ast.Call, ast.Subscript)) for n in ast.walk(e))
    if base is t.value and not any(computed(e) for e in elts):
        return t
    frozen = []
    for k, e in enumerate(elts):
        if not computed(e):
            frozen.append(e)
            continue
        hidden = f"_aug{e.lineno}_{e.col_offset}_{k}"
        bind(ctx, hidden, literals.typed(exprs.lower_expr(ctx, e)), e)
        frozen.append(ast.copy_location(ast.Name(hidden, ast.Load()), e))
    sl = frozen[0] if not isinstance(t.slice, ast.Tuple) else \
        ast.copy_location(ast.Tuple(frozen, ast.Load()), t.slice)
    return ast.copy_location(ast.Subscript(base, sl, t.ctx), t)
