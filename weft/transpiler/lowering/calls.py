"""Calls: every callee is asked to lower its own call (see :mod:`weft.stdlib.registry`); here
are the two kinds of call the lowering itself knows, primitive builtins (typing by their
signatures, constant folding) and funcs (positional, keyword and default arguments as Warp,
signature checks of the stdlib's kernel-language builtins, Warp's output arguments)."""
from __future__ import annotations

import ast
import inspect
import math

from ...core import types as T
from ...core.errors import KernelNameError, KernelTypeError, KernelValueError
from ...stdlib import registry
from ...stdlib.constructors import declaration_of
from ...stdlib.tiles import tile_operator
from ...stdlib import ir
from . import literals, structs, tile_params
from .structs import StructVal


def expr_call(ctx, node):
    from ..statics import position
    if ctx.src is not None and hasattr(node, "end_col_offset") and \
            position(node) in ctx.src.statics:  # a wp.static(...) evaluated at declaration
        return literals.static_constant(ctx, ctx.src.statics[position(node)], node)
    callee = literals.resolve_global(ctx, node.func)
    if callee is None:
        root = node.func
        while isinstance(root, (ast.Attribute, ast.Call)):
            root = root.value if isinstance(root, ast.Attribute) else root.func
        if isinstance(root, ast.Name) and literals.is_undefined(ctx, root.id):
            raise ctx.fail(root, f"Referencing undefined symbol: {root.id}", KernelNameError)
        raise ctx.fail(node.func, f"'{ast.unparse(node.func)}' is not callable in kernels",
                       KernelTypeError)
    decl = declaration_of(callee)
    if decl is None and isinstance(getattr(callee, "snippet", None), str):  # wp.func_native
        first = next((ln.strip() for ln in callee.snippet.splitlines() if ln.strip()), "")
        raise ctx.fail(node.func, f"'{ast.unparse(node.func)}' is a wp.func_native C++/CUDA "
                       f"snippet ({first[:60]!r}...), which weft cannot compile; the snippets "
                       "weft supplies: WP_TILE_SYNC();", KernelTypeError)
    if decl is None:
        raise ctx.fail(node.func, f"'{ast.unparse(node.func)}' ({type(callee).__name__}) "
                       "cannot be called in kernels", KernelTypeError)
    return decl.lower_call(ctx, node)


# ---------------------------------------------------------------------------- primitives

_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "floordiv": "//",
              "pow": "**"}


def apply_builtin(ctx, b, args, node, attrs=None):
    """Apply primitive builtin ``b`` (the object, or an internal builtin's registry name):
    type the call by its signatures, letting number literals take the type of the other
    arguments, and emit it."""
    if isinstance(b, str):
        b = registry.lookup(b)
    folded = literals.fold(b.name, args)
    if folded is not None:
        return folded
    attrs = attrs or {}
    if b.name == "where" and len(args) == 3 and any(isinstance(a, StructVal) for a in args[1:]):
        return _where_structs(ctx, b, args, node)
    tile_op = tile_operator(b.name, [getattr(a, "type", None) for a in args])
    if tile_op is not None and not isinstance(tile_op, registry.Builtin):
        return tile_op(ctx, b, args, node)
    if tile_op is not None:
        b = tile_op
    if b.name == "cast" and T.is_int(attrs.get("type")) and len(args) == 1 and \
            isinstance(args[0], ir.Const) and isinstance(args[0].value, float) and \
            not math.isfinite(args[0].value):
        raise ctx.fail(node, f"{T.type_name(attrs['type'])}({args[0].value}): a non-finite "
                       "float has no integer value", KernelValueError)
    types = [a.type for a in args]
    rtype = b.resolve(types, attrs)
    if rtype is None and any(isinstance(a, ir.Const) and a.literal for a in args):
        anchor = next((a.type for a in args if not (isinstance(a, ir.Const) and a.literal)), None)
        if anchor is not None:
            args = [literals.adapt_literal(a, anchor) for a in args]
            rtype = b.resolve([a.type for a in args], attrs)
    if rtype is None:
        given = ", ".join(T.type_name(t) for t in types)
        sigs = "\n".join("    " + s for s in b.sigs)
        warp = ""
        if len(types) == 2 and all(T.is_scalar(t) for t in types) and types[0] != types[1]:
            warp = f"Input types must be the same, got {[T.type_name(t) for t in types]}: "
        raise ctx.fail(node, f"{warp}no signature of '{_OPERATORS.get(b.name, b.name)}' "
                       f"accepts ({given}); signatures:\n{sigs}", KernelTypeError)
    args = [literals.typed(a) for a in args]
    return ctx.emit(ir.Prim(b, args, dict(attrs)), rtype, node)


def _where_structs(ctx, b, args, node):
    """``wp.where(c, s1, s2)`` of two struct values: the select member by member."""
    c, x, y = args
    if not (isinstance(x, StructVal) and isinstance(y, StructVal)) or x.type is not y.type:
        raise ctx.fail(node, f"where(): both values must be of the same type, got "
                       f"{T.type_name(x.type)} and {T.type_name(y.type)}", KernelTypeError)
    members = {}
    for name, mx in x.members.items():
        my = y.members[name]
        if mx is None or my is None:  # an unset array member on either side
            members[name] = mx if mx is my else None
            continue
        members[name] = apply_builtin(ctx, b, [c, mx, my], node)
    return StructVal(x.type, members)


# ---------------------------------------------------------------------------- funcs

def call_func(ctx, func, node, args=None, n_given=None):
    """A call of ``func`` (a :class:`weft.stdlib.funcs.Function`): its result, or None for a func that
    returns nothing. ``args`` (already lowered, in parameter order) replaces the call's own."""
    if args is None:
        if func.outputs and len(node.args) > func.n_inputs():
            return call_with_outputs(ctx, func, node)
        args, n_given = func_call_args(ctx, func, node)
    if func.signatures is not None:
        from ...stdlib.signatures import check_call
        shown = args[:n_given]  # the signatures describe the arguments as written
        msg = check_call(func, [a.type for a in shown],
                         [isinstance(a, ir.Const) and a.literal for a in shown])
        if msg:
            raise ctx.fail(node, msg, KernelTypeError)
    if any(isinstance(a, structs.TupleVal) for a in args):
        raise ctx.fail(node, f"a tuple holding a struct cannot be passed to "
                       f"{func.__name__}(); pass its items", KernelTypeError)
    fir = ctx.specializer.specialize(func, args, node, ctx)
    given = args
    args = structs.flatten_call_args(ctx, args, node, func.__name__)
    args = [literals.typed(literals.adapt_literal(a, p.type)) for a, p in zip(args, fir.params)]
    if fir not in ctx.callees:
        ctx.callees.append(fir)
    if fir.ret_type is None:
        ctx.add(ir.Assign(ctx.new_temp(T.TupleType(()), "void"), ir.Call(fir, args),
                          ctx.loc(node)))
        return None
    out = ctx.emit(ir.Call(fir, args), fir.ret_type, node)
    if fir.writes_back:  # tile parameters changed in place: the caller's tiles change
        return tile_params.write_back(ctx, func, fir, node, given, out)
    if fir.ret_struct is not None:
        return structs.unpack_struct_return(ctx, fir.ret_struct, out, node, args)
    return out


def call_overloaded(ctx, func, node):
    """A call of a func with several overloads (Warp's): the one whose declared parameter types
    equal the arguments' types (a literal's own: ``17`` is int32), else the first they equal
    with number literals adapting, else the first whose generic ones fit."""
    args = [ctx.expr(a) for a in node.args]
    chosen = choose_overload(ctx, func, args, node)
    if node.keywords or len(args) < chosen.n_inputs():
        return call_func(ctx, chosen, node)
    return call_func(ctx, chosen, node, args, len(args))


def choose_overload(ctx, func, args, node):
    """The overload of ``func`` a call with operands ``args`` (and ``node``'s keywords) takes
    (see :func:`call_overloaded`)."""
    from ..abi import declared_params, fits
    exact, adapted, fitting = [], [], []  # in order of preference
    for f in func.overloads:
        params = declared_params(f.parsed(), generic_ok=True)
        names = [n for n, _, _ in params]
        if len(args) > len(params) or any(k.arg not in names[len(args):] for k in node.keywords):
            continue
        rest = [inspect.signature(f.func).parameters[n] for n in names[len(args):]]
        if any(p.default is inspect.Parameter.empty and p.name not in
               {k.arg for k in node.keywords} for p in rest):
            continue
        types = [t for _, t, _ in params[:len(args)]]
        if all(t is not None and a.type == t for a, t in zip(args, types)):
            exact.append(f)  # literals of their own type (17 is int32): Warp's first choice
            break
        if all(t is not None and literals.adapt_literal(a, t).type == t
               for a, t in zip(args, types)):
            adapted.append(f)  # number literals taking the declared types
            continue
        if all(fits(t, literals.adapt_literal(a, t).type if t is not None else a.type)
               for a, t in zip(args, types)):
            fitting.append(f)
    if not (exact or adapted or fitting):
        shown = ", ".join(T.type_name(a.type) for a in args)
        raise ctx.fail(node, f"no overload of {func.__name__}() accepts ({shown})",
                       KernelTypeError)
    return (exact + adapted + fitting)[0]


def func_call_args(ctx, func, node):
    """The lowered arguments of a func call in parameter order: the positional ones, then
    keyword arguments and the Python defaults of parameters not given (as Warp); and how many
    leading ones the call gives (up to the last one given)."""
    args = [ctx.expr(a) for a in node.args]
    params = inspect.signature(func.func).parameters
    names = list(params)
    if not node.keywords and len(args) >= len(names):
        return args, len(args)
    given = {}
    for k in node.keywords:
        if k.arg not in names[len(args):]:
            raise ctx.fail(k, f"{func.__name__}() got an unexpected keyword argument '{k.arg}'",
                           KernelTypeError)
        given[k.arg] = ctx.expr(k.value)
    for n in names[len(args):]:
        if n in given:
            args.append(given[n])
        elif params[n].default is not inspect.Parameter.empty:
            args.append(literals.python_constant(ctx, params[n].default, node))
        else:
            raise ctx.fail(node, f"{func.__name__}() takes {len(names)} arguments, got "
                           f"{len(node.args) + len(node.keywords)} (no '{n}')", KernelTypeError)
    return args, max([len(node.args)] + [names.index(n) + 1 for n in given])


def call_with_outputs(ctx, func, node):
    """Warp's output-argument builtins (``wp.svd3(A, U, sigma, V)``): the func returns the
    outputs, which are assigned to the trailing argument variables. (Called with the inputs
    only they return the outputs instead, ``U, sigma, V = wp.svd3(A)``, as Warp's
    value-returning overloads: that is an ordinary call.)"""
    n_inputs, nout = func.n_inputs(), func.outputs
    if node.keywords:
        raise ctx.fail(node, f"wp.{func.__name__}() takes positional arguments only")
    if len(node.args) != n_inputs + nout:
        raise ctx.fail(node, f"wp.{func.__name__}() takes {n_inputs} input(s), then either "
                       f"nothing (it returns its {nout} outputs) or {nout} output variables; "
                       f"got {len(node.args)} arguments")
    targets = node.args[-nout:]
    call = ast.copy_location(ast.Call(node.func, node.args[:-nout], []), node)
    result = call_func(ctx, func, call, [ctx.expr(a) for a in call.args], len(call.args))
    values = [result] if nout == 1 else [
        ctx.apply("tuple_get", [result], node, attrs={"index": k}) for k in range(nout)]
    for target, value in zip(targets, values):
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            raise ctx.fail(target, f"output argument of wp.{func.__name__}() must be a variable")
        if isinstance(target, ast.Name) and target.id in ctx.env and \
                ctx.env[target.id].type != value.type:
            raise ctx.fail(target, f"output argument '{target.id}' of wp.{func.__name__}() has "
                           f"type {T.type_name(ctx.env[target.id].type)}; it needs "
                           f"{T.type_name(value.type)}")
        ctx.assign(target, value, node)
    return None


def grad_call(ctx, func, node):
    """``wp.grad(func)(args)``: the derivatives of ``func``'s scalar float result with respect
    to each of its float inputs, one value or a tuple of them, in order."""
    from ...stdlib.registry import Builtin
    args, n_given = func_call_args(ctx, func, node) if not isinstance(func, Builtin) else \
        ([ctx.expr(a) for a in node.args], len(node.args))
    if isinstance(func, Builtin):
        return _grad_of_builtin(ctx, func, args, node)
    fir = ctx.specializer.specialize(func, args, node, ctx)
    if fir.ret_type is None or not T.is_float(fir.ret_type) or any(
            isinstance(p.type, T.ArrayType) for p in fir.params):
        raise ctx.fail(node, f"wp.grad({func.__name__}) needs a func of float inputs returning "
                       "a float scalar", KernelTypeError)
    args = [literals.typed(literals.adapt_literal(a, p.type)) for a, p in zip(args, fir.params)]
    if fir not in ctx.callees:
        ctx.callees.append(fir)
    outs = [p.type for p in fir.params if T.is_differentiable(p.type)]
    rtype = outs[0] if len(outs) == 1 else T.TupleType(tuple(outs))
    return ctx.emit(ir.GradCall(fir, args), rtype, node)


def _grad_of_builtin(ctx, b, args, node):
    """``wp.grad(wp.atan2)(y, x)``: the builtin's adjoint rule with the result's adjoint 1."""
    if not b.differentiable:
        raise ctx.fail(node, f"wp.grad(): wp.{b.name} has no derivative", KernelTypeError)
    from ...stdlib.registry import Builtin
    from ...stdlib.exprs import const, tup, zero

    def resolve(types, attrs=None):
        ret = b.resolve(types, attrs)
        if ret is None or not T.is_float(ret):
            return None
        return types[0] if len(types) == 1 else T.TupleType(tuple(types))

    class rules:
        def primal(*xs):
            ret = b.primal(*xs).atom()
            contribs = b.adjoint(*xs, ret=ret, adj=const(1.0, ret.type))
            parts = [c if c is not None else zero(x.type) for c, x in zip(contribs, xs)]
            return parts[0] if len(parts) == 1 else tup(parts, T.TupleType(
                tuple(x.type for x in xs)))

    grad_b = Builtin(f"grad({b.name})", rules, [f"grad({s})" for s in b.sigs], resolve,
                     differentiable=False, public=False, attrs_rule=None)
    return apply_builtin(ctx, grad_b, args, node)
