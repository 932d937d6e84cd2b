"""Names and constants: what a name outside the kernel denotes, Python values as typed
constants, and how number literals take the type of their context (weak typing, as JAX)."""
from __future__ import annotations

import ast
import builtins as py

import numpy as np

from ...core import types as T
from ...core.errors import KernelNameError, KernelTypeError
from ...stdlib import ir


def _bare_builtin(name):
    """Warp resolves a builtin's bare name (``dot(a, b)``, ``mat22(...)``, ``expect_eq(...)``
    without ``wp.``) when nothing else has that name."""
    from ...stdlib import kernel_scope
    from ...stdlib.constructors import declaration_of
    obj = getattr(kernel_scope, name, None) if not name.startswith("_") else None
    return obj if obj is not None and declaration_of(obj) is not None else None


def resolve_global(ctx, node):
    """The Python object a Name/Attribute chain denotes outside the kernel (or a
    ``wp.static(...)`` call evaluates to), or None (a local variable, or not a name)."""
    if isinstance(node, ast.Call):
        from ...stdlib.lang import static
        from ..statics import position, static_value
        if ctx.src is not None and hasattr(node, "end_col_offset") and \
                position(node) in ctx.src.statics:  # evaluated when the kernel was declared
            return ctx.src.statics[position(node)]
        callee = resolve_global(ctx, node.func)
        if callee is static:
            return static_value(ctx, node)
        if callee is type and len(node.args) == 1 and not node.keywords:
            return value_type_of(ctx, node.args[0])  # type(x)(y): Warp's generic casts
        if getattr(callee, "_weft_compile_time", False):  # wp.grad(f): made while compiling
            args = [resolve_global(ctx, a) for a in node.args]
            if any(a is None for a in args) or node.keywords:
                raise ctx.fail(node, f"{getattr(callee, '__name__', callee)}() takes names "
                               "of funcs or builtins")
            try:
                return callee(*args)
            except TypeError as exc:
                raise ctx.fail(node, str(exc)) from None
        return None
    if isinstance(node, ast.Name):
        if node.id in ctx.callables:
            return ctx.callables[node.id]
        if node.id in ctx.static_locals and node.id not in ctx.env:
            return ctx.static_locals[node.id]
        if node.id in ctx.env:
            return None
        if node.id in ctx.globals:
            return ctx.globals[node.id]
        found = getattr(py, node.id, None)
        if found is None:
            found = _bare_builtin(node.id)
        return found
    if isinstance(node, ast.Attribute):
        base = resolve_global(ctx, node.value)
        if base is None:
            if node.attr in TYPE_ATTRIBUTES and isinstance(node.value, ast.Name) and \
                    node.value.id in ctx.env:  # v.length, a.dtype of a local: its type's
                t = getattr(ctx.env[node.value.id], "type", None)
                return type_attribute(ctx, t, node) if t is not None else None
            return None
        if node.attr in TYPE_ATTRIBUTES and (isinstance(base, T.ArrayType)
                                             or T.is_composite(base)):
            return type_attribute(ctx, base, node)  # type(a).dtype
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if node.attr in ("float", "int", "bool") and getattr(base, "__name__", "") in (
                    "weft", "warp"):  # wp.float(0.0): Warp resolves Python's scalar types
                return getattr(py, node.attr)
            base_text = ast.unparse(node.value)
            raise ctx.fail(node, f"Could not find function {base_text}.{node.attr}: "
                           f"`{node.attr}` is not an attribute of '{base_text}'",
                           KernelNameError) from None
    return None


def is_undefined(ctx, name):
    """Whether ``name`` means nothing in the kernel: no local, global, closure or builtin."""
    return name not in ctx.env and name not in ctx.callables and \
        name not in ctx.static_locals and name not in ctx.globals and not hasattr(py, name)


TYPE_ATTRIBUTES = ("dtype", "length", "ndim")


def type_attribute(ctx, t, node):
    """``a.dtype``/``a.ndim`` of an array type, ``v.dtype``/``v.length`` of a vector, matrix,
    quaternion or transform type (Warp's generic code reads them); None when ``t`` has none."""
    attr = node.attr
    if isinstance(t, T.ArrayType):
        found = {"dtype": t.dtype, "ndim": t.ndim}.get(attr)
    elif T.is_composite(t):
        found = {"dtype": T.scalar_of(t), "length": t._length_}.get(attr)
    else:
        return None
    if found is None:
        raise ctx.fail(node, f"{T.type_name(t)} has no attribute '{attr}'", KernelTypeError)
    return found


def value_type_of(ctx, node):
    """The type of the value ``node`` denotes in the kernel (``type(a)``, for generic code)."""
    if isinstance(node, ast.Name) and node.id in ctx.env:
        value = ctx.env[node.id]
    else:
        value = ctx.expr(node)
    t = getattr(value, "type", None)
    if t is None or isinstance(t, T.TupleType):
        raise ctx.fail(node, "type() in a kernel takes a value: a scalar, vector, matrix, "
                       "struct or array")
    return t


def python_constant(ctx, value, node):
    """An operand for a Python value captured from the enclosing scope."""
    if isinstance(value, py.bool):
        return ir.Const(value, T.bool)
    if isinstance(value, int):
        for t in (T.int32, T.int64, T.uint64):  # the narrowest integer type that holds it
            info = np.iinfo(t._np_)
            if info.min <= value <= info.max:
                return ir.Const(value, t, literal=True)
        raise ctx.fail(node, f"the integer {value} does not fit any kernel integer type "
                       "(at most 64 bits)", KernelTypeError)
    if isinstance(value, float):
        return ir.Const(value, T.float32, literal=True)
    if T.is_scalar(type(value)) or (hasattr(value, "dtype") and getattr(value, "shape", 1) == ()):
        return ir.Const(value.item(), T.as_scalar_type(value.dtype))
    if isinstance(value, T.Composite):
        return ir.Const(tuple(value.reshape(-1).tolist()), type(value))
    if T.is_struct(type(value)):
        return _struct_constant(ctx, value, node)
    raise ctx.fail(node, f"'{ast.unparse(node)}' ({type(value).__name__}) cannot be used as a "
                   "value in a kernel", KernelTypeError)


def representable(value):
    """Whether :func:`python_constant` (or a callee lookup) can use ``value`` in a kernel."""
    from ...stdlib.constructors import declaration_of
    return isinstance(value, (py.bool, int, float, T.Composite, str)) or \
        T.is_scalar(type(value)) or (hasattr(value, "dtype") and getattr(value, "shape", 1) ==
                                     ()) or T.is_struct(type(value)) or isinstance(value, type) \
        or declaration_of(value) is not None or callable(value)


def static_constant(ctx, value, node):
    """The kernel operand of a static expression's value (Warp's message when it has none)."""
    if not representable(value):
        raise ctx.fail(node, "Static expression returns an unsupported value: value of type "
                       f"{type(value)} is not supported in kernels")
    return ctx.constant(value, node)


def _struct_constant(ctx, value, node):
    """A struct instance made in Python (``wp.static(make_params())``): its members as
    constants of their declared types."""
    members = {}
    for f, ft in T.struct_fields(type(value)).items():
        mv = getattr(value, f)
        if isinstance(ft, T.ArrayType):
            raise ctx.fail(node, f"struct {type(value).__name__} has an array member '{f}': "
                           "it cannot be a constant in a kernel", KernelTypeError)
        if T.is_struct(ft):
            members[f] = _struct_constant(ctx, mv, node)
        elif T.is_scalar(ft):
            members[f] = ir.Const(np.asarray(mv, dtype=ft._np_).item(), ft)
        else:
            flat = np.asarray(mv, dtype=T.scalar_of(ft)._np_).reshape(-1)
            members[f] = ir.Const(tuple(flat.tolist()), ft)
    return ctx.struct_value(type(value), members)


_STATIC_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
               ast.Mod: lambda a, b: a % b}


def static_value(ctx, node, what):
    """The compile-time value of ``node``: a literal (``3``, ``(3, 3)``, ``-1.0``) or a name
    outside the kernel (``wp.float64``, a global constant)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Tuple):  # (ROWS, COLS) of constants
        return tuple(static_value(ctx, e, what) for e in node.elts)
    if isinstance(node, ast.BinOp) and type(node.op) in _STATIC_OPS:  # (M // 2) * N
        a, b = static_value(ctx, node.left, what), static_value(ctx, node.right, what)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
                not isinstance(a, bool) and not isinstance(b, bool):
            try:
                return _STATIC_OPS[type(node.op)](a, b)
            except (ZeroDivisionError, OverflowError, ValueError):
                raise ctx.fail(node, f"{what}: {ast.unparse(node)} has no value") from None
        raise ctx.fail(node, f"{what} must be a constant")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = static_value(ctx, node.operand, what)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    if isinstance(node, ast.Name) and node.id in ctx.env:  # ``n = 3`` above, not rebound
        v = ctx.env[node.id]
        c = ctx.const_vars.get(id(v))
        if c is not None and c[0] is v:
            return c[1]
    value = resolve_global(ctx, node)
    if value is None:
        raise ctx.fail(node, f"{what} must be a constant")
    return value


def annotation_type(ctx, node):
    value = resolve_global(ctx, node)
    if value is None:
        raise ctx.fail(node, f"unknown type '{ast.unparse(node)}'", KernelNameError)
    from ..abi import value_type_of
    return value_type_of(value, lambda msg: ctx.fail(node, msg))


def adapt_literal(x, want):
    """A literal number takes the scalar type ``want`` when of the same kind."""
    if not (isinstance(x, ir.Const) and x.literal):
        return x
    st = T.scalar_of(want) if (T.is_scalar(want) or T.is_composite(want)) else None
    if st is None or st is T.bool:
        return x
    if T.is_float(st) and (T.is_float(x.type) or T.is_int(x.type)):
        return ir.Const(float(x.value), st, literal=True)
    if T.is_int(st) and T.is_int(x.type):
        info = np.iinfo(st._np_)
        if info.min <= int(x.value) <= info.max:  # else it keeps its type: a type error follows
            return ir.Const(int(x.value), st, literal=True)
    return x


def typed(x):
    """A literal fixed to its current type (once it is named or passed on)."""
    return ir.Const(x.value, x.type) if isinstance(x, ir.Const) and x.literal else x


# comparisons and boolean operators of constants fold, so that ``if`` on a compile-time value
# (len(v) == 3, a wp.constant flag) keeps only the branch taken, as in Warp
FOLD = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
        "bool_and": lambda a, b: a and b, "bool_or": lambda a, b: a or b,
        "bool_not": lambda a: not a}


def fold(name, args):
    """The folded constant of builtin ``name`` on constant ``args``, or None."""
    if name in FOLD and all(isinstance(a, ir.Const) and T.is_scalar(a.type) for a in args):
        return ir.Const(bool(FOLD[name](*[a.value for a in args])), T.bool)
    return None
