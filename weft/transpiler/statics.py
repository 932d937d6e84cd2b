"""``wp.static(expr)`` while a kernel is built: the static expressions not evaluated when it was
declared (:mod:`weft.stdlib.static_exprs`), and the value of every ``wp.static`` call.

An expression that names a loop variable is evaluated while the loop is unrolled
(:func:`evaluate_deferred`), with the static expressions inside it already replaced by their
values; ``len(v)`` of a local vector, matrix, quaternion, transform or tile is its length there. A
name not defined yet when the kernel is declared defers the evaluation to the build as well.
"""
from __future__ import annotations

import ast

# definition_scope and position: also the runtime's (the cache key)
from ..stdlib.static_exprs import check_value, definition_scope, free_names, position  # noqa: F401

UNDEFINED_HINT = "Make sure all variables used in the static expression are constant."


def static_value(ctx, call):
    """The value of ``wp.static(expr)`` (``call`` is the Call node): evaluated when the kernel
    was declared, or now."""
    if len(call.args) != 1 or call.keywords:
        raise ctx.fail(call, "wp.static() takes one expression")
    if ctx.src is not None and hasattr(call, "end_col_offset"):
        key = position(call)
        if key in ctx.src.statics:
            return ctx.src.statics[key]
    return evaluate_deferred(ctx, call)


def evaluate_deferred(ctx, call):
    """The value of a static expression that names loop variables (or was not resolvable at
    declaration), evaluated while the kernel is built."""
    expr = call.args[0]
    scope = dict(ctx.globals)
    from ..stdlib import ir
    free = free_names(expr)
    for name, value in ctx.env.items():  # locals holding a compile-time constant
        if name not in free:
            continue
        if isinstance(value, ir.Const):
            scope[name] = value.value
        elif ctx.const_vars.get(id(value), (None,))[0] is value:
            scope[name] = ctx.const_vars[id(value)][1]
    scope.update(ctx.static_locals)
    statics = ctx.src.statics if ctx.src is not None else {}
    counter = [0]

    class Substitute(ast.NodeTransformer):
        def visit_Call(self, node):
            key = position(node) if hasattr(node, "end_col_offset") else None
            if key is not None and key in statics:
                name = f"__weft_static_{counter[0]}"
                counter[0] += 1
                scope[name] = statics[key]
                return ast.copy_location(ast.Name(name, ast.Load()), node)
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "len" and \
                    len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                length = _local_length(ctx, node.args[0].id)
                if length is not None:
                    return ast.copy_location(ast.Constant(length), node)
            return node

    import copy
    tree = Substitute().visit(ast.Expression(copy.deepcopy(expr)))
    code = compile(ast.fix_missing_locations(tree), ctx.src.filename, "eval")
    try:
        value = eval(code, scope)  # noqa: S307 - the user's own expression
    except NameError as exc:
        raise ctx.fail(call, f"Error evaluating static expression: {exc}. {UNDEFINED_HINT}") \
            from None
    except Exception as exc:  # noqa: BLE001 - reported where it is written
        raise ctx.fail(call, f"Error evaluating static expression: {exc}") from None
    try:
        check_value(value, call)
    except ValueError as exc:
        raise ctx.fail(call, str(exc)) from None
    return value


def _local_length(ctx, name):
    """``len()`` of a local variable of fixed length, or None."""
    from ..core import types as T
    if name in ctx.static_locals or name not in ctx.env:
        return None
    t = ctx.env[name].type
    if T.is_composite(t):
        from ..core.typeinfo import type_length
        return int(type_length(t))
    if isinstance(t, T.TileType):
        return int(t.shape[0])
    return None
