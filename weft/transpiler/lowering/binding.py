"""Assignment in the lowering: binding a name to a value (SSA versions), unpacking tuples,
stores into arrays and struct members, and component updates of vectors and matrices."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelSyntaxError, KernelTypeError
from ...stdlib import ir, tiles
from . import exprs, literals, structs
from .structs import STRUCTISH, StructArr, StructRef, TupleRef, TupleVal


def assign(ctx, target, value, stmt):
    if isinstance(target, ast.Name):
        if isinstance(value, STRUCTISH):
            return structs.bind_struct(ctx, target.id, value, target)
        if isinstance(value, TupleVal):
            return structs.bind_tuple(ctx, target.id, value, target)
        if isinstance(ctx.env.get(target.id), TupleRef):
            raise ctx.fail(target, f"cannot assign a value of type {T.type_name(value.type)} "
                           f"to '{target.id}', which holds a tuple", KernelTypeError)
        if isinstance(ctx.env.get(target.id), StructRef):
            raise ctx.fail(target, f"cannot assign a value of type {T.type_name(value.type)} "
                           f"to struct '{target.id}'", KernelTypeError)
        return bind(ctx, target.id, value, target)
    if isinstance(target, ast.Attribute) and structs.assign_struct_attr(ctx, target, value, stmt):
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, TupleVal):
            if len(value.items) != len(target.elts):
                raise ctx.fail(target, f"cannot unpack {len(value.items)} values into "
                               f"{len(target.elts)} names", KernelTypeError)
            for t, item in zip(target.elts, value.items):
                assign(ctx, t, item, stmt)
            return
        if not isinstance(value.type, T.TupleType):
            raise ctx.fail(target, f"cannot unpack a value of type {T.type_name(value.type)}",
                           KernelTypeError)
        if len(value.type.types) != len(target.elts):
            raise ctx.fail(target, f"cannot unpack {len(value.type.types)} values into "
                           f"{len(target.elts)} names", KernelTypeError)
        for i, t in enumerate(target.elts):
            item = ctx.apply("tuple_get", [value], stmt, attrs={"index": i})
            assign(ctx, t, item, stmt)
        return
    if isinstance(target, ast.Subscript):
        if exprs.is_array_expr(ctx, target.value):
            arr, idx = exprs.lower_array_index(ctx, target)
            if len(idx) != arr.type.ndim:
                raise ctx.fail(target, f"assignment to an array needs {arr.type.ndim} indices, "
                               f"got {len(idx)}", KernelTypeError)
            if isinstance(arr, StructArr):
                return structs.store_element(ctx, arr, idx, value, stmt)
            value = coerce_store(ctx, arr, value, stmt)
            ctx.add(ir.Store(arr, idx, value, ctx.loc(stmt)))
            return
        base = target.value
        current = exprs.lower_expr(ctx, base)
        if T.is_tile_type(getattr(current, "type", None)):
            new = tiles.assign_subscript(ctx, current, target.slice, value, target)
            if isinstance(base, ast.Name):
                return tiles.store_back(ctx, base, new)
            return assign(ctx, base, new, stmt)
        if T.is_composite(current.type) and exprs.has_slice(target.slice):
            return assign(ctx, base, exprs.write_components(ctx, current, target.slice, value,
                                                            target), stmt)
        idx = exprs.lower_indices(ctx, target.slice)
        idx = exprs.check_component_index(ctx, current.type, idx, target)
        new = ctx.apply("insert", [current] + idx + [value], stmt)
        return assign(ctx, base, new, stmt)
    if isinstance(target, ast.Attribute):
        current = exprs.lower_expr(ctx, target.value)
        new = exprs.with_component(ctx, current, target.attr, value, target)
        return assign(ctx, target.value, new, stmt)
    raise ctx.fail(target, "cannot assign to this expression", KernelSyntaxError)


def callable_rebound(ctx, name, node, is_func=False):
    """The error for rebinding a local that names a func (``f = square``) or a gradient
    (``g = wp.grad(f)``): such names are resolved while compiling."""
    what = "another function" if is_func else "a non-function value"
    text = f"rebinding function-valued local '{name}' to {what} is not supported"
    if type(ctx.callables[name]).__name__ == "GradOf":
        text = f"Cannot reassign local '{name}', which holds wp.grad(...): {text}"
    return ctx.fail(node, text, KernelTypeError)


def bind(ctx, name, value, node):
    if name in ctx.callables:
        raise callable_rebound(ctx, name, node)
    old = ctx.env.get(name)
    if old is not None and old.type != value.type and not (
            isinstance(old.type, T.ArrayType) and isinstance(value.type, T.ArrayType)):
        # (a name may be rebound to another view, as in Warp: ``sub = a[:2]; sub = a[0]``)
        value = literals.adapt_literal(value, old.type)
        if old.type != value.type:
            raise ctx.fail(node, f"cannot assign a value of type {T.type_name(value.type)} to "
                           f"'{name}' of type {T.type_name(old.type)}", KernelTypeError)
    literal = isinstance(value, ir.Const) and value.literal and T.is_scalar(value.type)
    if literal:
        value = ir.Const(value.value, value.type)  # a named literal has its type fixed
    if ctx.is_fresh_temp(value):
        value.name = ctx.version_name(name)
        ctx.env[name] = value
        return
    v = ctx.new_version(name, value.type)
    ctx.add(ir.Assign(v, ir.Copy(value), ctx.loc(node)))
    ctx.env[name] = v
    if isinstance(value, ir.Const):  # wp.static(...) may read it (``n = 3``)
        ctx.const_vars[id(v)] = (v, value.value)
        if literal:  # read as the literal until rebound (``x = 0.1; wp.vec3d(x, ...)``)
            ctx.literal_vars.add(id(v))


def coerce_store(ctx, arr, value, node):
    want = arr.type.dtype
    value = literals.adapt_literal(value, want)
    if value.type != want:
        raise ctx.fail(node, f"cannot store a value of type {T.type_name(value.type)} into an "
                       f"array of {T.type_name(want)}", KernelTypeError)
    return value
