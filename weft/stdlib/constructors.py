"""Declarations for the Python objects kernels call that are not weft builtins: Python's own
callables (``abs``, ``min``, ``max``, ``round``, ``pow``, ``len``, ``float``, ``int``, ``bool``)
and weft's types used as constructors (``wp.float64(x)``, ``wp.vec3(...)``, Warp's generic
``wp.vector(...)``/``wp.matrix(...)``/``wp.quaternion(...)``/``wp.transformation(...)``, a
``@wp.struct`` class), found by :func:`python_declaration`."""
from __future__ import annotations

import builtins as py
import math

from ..core import types as T
from ..core.errors import KernelValueError
from . import ir
from .effects import print_form
from .registry import lookup


class Form:
    """A declaration made of a lowering function (``lower(ctx, node)``)."""

    def __init__(self, name, lower):
        self.name = name
        self._lower = lower

    def lower_call(self, ctx, node):
        return self._lower(ctx, node)

    def assigned_args(self, node):
        return []


def _alias(builtin_name):
    """A Python builtin that is a weft builtin under another name (``abs`` -> ``abs``)."""
    def lower(ctx, node):
        return lookup(builtin_name).lower_call(ctx, node)
    return Form(builtin_name, lower)


def _cast(t):
    """``float32(x)``, ``float(x)``, ``int(x)``: a conversion (a literal just takes the type)."""
    def lower(ctx, node):
        if len(node.args) != 1 or node.keywords:
            raise ctx.fail(node, f"{T.type_name(t)}() takes one argument")
        x = ctx.expr(node.args[0])
        if isinstance(x, ir.Const) and x.literal:
            v = x.value
            if T.is_int(t) and isinstance(v, float):
                if not math.isfinite(v):
                    raise ctx.fail(node, f"{T.type_name(t)}({v}): a non-finite float has no "
                                   "integer value", KernelValueError)
                v = int(v)  # C's truncation toward zero
            return ir.Const(v, t)
        return ctx.apply("cast", [x], node, {"type": t})
    return Form(T.type_name(t), lower)


def _warp_mismatch(ctx, t, args, node):
    """Warp's messages for a composite constructed from the wrong number or kind of values
    (checked before the signatures, whose message is weft's own)."""
    kind = t._wp_kind_
    if kind == "transformation" and args and all(T.is_scalar(a.type) for a in args) and \
            len(args) not in (1, 7):
        raise ctx.fail(node, f"incompatible number of values given ({len(args)}) when "
                       "constructing a transform; expected 0, 1, or 7")
    if kind not in ("vector", "matrix") or not args:
        return
    noun = f"vector of length {t._length_}" if kind == "vector" else \
        f"matrix of shape {tuple(t._shape_)}"
    if len(args) == 1 and T.is_composite(args[0].type):
        src = args[0].type
        if src._wp_kind_ == kind and src._shape_ != t._shape_:
            got = f"vector of length {src._length_}" if kind == "vector" else \
                f"matrix of shape {tuple(src._shape_)}"
            raise ctx.fail(node, f"incompatible {noun.split(' of ')[0]} of "
                           f"{noun.split(' of ')[1]} given when copy constructing a {got}")
        return
    scalars = [a for a in args if T.is_scalar(a.type)]
    if len(scalars) != len(args):
        return
    if len(args) == 1:
        if kind == "matrix" and args[0].type != T.scalar_of(t) and not (
                isinstance(args[0], ir.Const) and args[0].literal):
            raise ctx.fail(node, "the value used to fill this matrix is expected to be of the "
                           f"type `{T.scalar_of(t).__name__}`")
        return
    n = len(args)
    rows_ok = kind == "matrix" and n == t._shape_[0]
    if n != t._length_ and not rows_ok:
        raise ctx.fail(node, f"incompatible number of values given ({n}) when constructing a "
                       f"{noun}")
    st = T.scalar_of(t)
    if any(a.type != st and not (isinstance(a, ir.Const) and a.literal) for a in args):
        raise ctx.fail(node, f"all values used to initialize this {kind} are expected to be of "
                       f"the type `{st.__name__}`")


def _construct(t):
    """``wp.vec3(x, y, z)``, ``wp.mat22(...)``, ``wp.quat(...)``, ``wp.transform(p=, q=)``: a
    composite value."""
    is_tf = t._wp_kind_ == "transformation"

    def lower(ctx, node):
        nodes = list(node.args)
        parts = {}
        for k in node.keywords:
            if k.arg in ("shape", "length", "dtype"):  # Warp accepts them when they agree
                given = ctx.static_value(k.value, f"{T.type_name(t)}({k.arg}=...)")
                own = {"shape": tuple(t._shape_), "length": t._length_}.get(k.arg)
                ok = T.as_scalar_type(given) is T.scalar_of(t) if k.arg == "dtype" else \
                    (tuple(given) if isinstance(given, (tuple, list)) else given) == own
                if not ok:
                    raise ctx.fail(k, f"{T.type_name(t)}() has {k.arg} {own if own else ''}"
                                   f"{T.type_name(T.scalar_of(t)) if k.arg == 'dtype' else ''}"
                                   f", got {k.arg}={given!r}")
                continue
            if not (is_tf and k.arg in ("p", "q")):
                raise ctx.fail(k, f"{T.type_name(t)}() takes no keyword '{k.arg}'"
                               + (" (it takes p and q)" if is_tf else ""))
            parts[k.arg] = k.value
        args = [ctx.adapt_literal(ctx.expr(a), t) for a in nodes]
        if parts:  # p first, then q; a missing q is the identity rotation, as at Python scope
            if len(nodes) + len(parts) > 2 or (nodes and "p" in parts):
                raise ctx.fail(node, f"{T.type_name(t)}(p, q) takes a position and a rotation")
            st = T.scalar_of(t)
            if "p" in parts:
                args.append(ctx.adapt_literal(ctx.expr(parts["p"]), t))
            if "q" in parts:
                args.append(ctx.adapt_literal(ctx.expr(parts["q"]), t))
            else:
                args.append(ir.Const((0.0, 0.0, 0.0, 1.0), T.quaternion(st)))
        _warp_mismatch(ctx, t, args, node)
        return ctx.apply("construct", args, node, {"type": t})
    return Form(T.type_name(t), lower)


def _len(ctx, node):
    if len(node.args) != 1:
        raise ctx.fail(node, "len() takes one argument")
    x = ctx.expr(node.args[0])
    if isinstance(x.type, T.ArrayType):
        shape = ctx.emit(ir.Prim(lookup("array_shape"), [x]),
                         T.TupleType((T.int32,) * x.type.ndim), node)
        return ctx.apply("tuple_get", [shape], node, attrs={"index": 0})
    if T.is_composite(x.type):
        return ir.Const(x.type._shape_[0], T.int32)
    raise ctx.fail(node, f"len() of {T.type_name(x.type)} is not supported")


def _kernel_call(ctx, node):
    raise ctx.fail(node, "kernels cannot be called from kernels; use a wp.func")


# ---------------------------------------------------------------- Warp's generic constructors

_GENERIC_NAMES = {T.vector: "wp.vector", T.matrix: "wp.matrix", T.quaternion: "wp.quaternion",
                  T.transformation: "wp.transformation"}


def _generic(factory):
    """In-kernel ``wp.vector(x, y, z)``, ``wp.vector(s, length=3)``,
    ``wp.vector(length=3, dtype=float)``, ``wp.matrix(..., shape=(r, c))``,
    ``wp.quaternion(x, y, z, w)``, ``wp.quaternion(v, w)``, ``wp.transformation(p, q)``: the
    scalar type comes from the arguments, else from ``dtype=`` (float32 by default); with no
    components the value is zero, as in Warp."""
    what = _GENERIC_NAMES[factory]
    allowed = {T.vector: {"length", "dtype"}, T.matrix: {"shape", "dtype"},
               T.transformation: {"dtype", "p", "q"}}.get(factory, {"dtype"})

    def lower(ctx, node):
        for k in node.keywords:
            if k.arg not in allowed:
                raise ctx.fail(k, f"{what}() takes no keyword '{k.arg}' (it takes "
                               f"{', '.join(sorted(allowed))})")
        parts = {k.arg: k.value for k in node.keywords if k.arg in ("p", "q")}
        if parts and len(node.args) + len(parts) != 2:
            raise ctx.fail(node, f"{what}(p, q) takes a position and a rotation")
        # wp.transformation(p=..., q=...): the parts in their places, p first
        args = [ctx.expr(a) for a in list(node.args) + [parts[n] for n in ("p", "q")
                                                       if n in parts]]
        kw = {k.arg: ctx.static_value(k.value, f"{what}({k.arg}=...)") for k in node.keywords
              if k.arg not in parts}
        typed = [a for a in args if not (isinstance(a, ir.Const) and a.literal)]
        try:
            st = T.as_scalar_type(kw["dtype"]) if "dtype" in kw else (
                T.scalar_of(typed[0].type) if typed else T.float32)
        except TypeError:
            raise ctx.fail(node, f"{what}(dtype=...) needs a scalar type") from None
        n = sum(a.type._length_ if T.is_composite(a.type) else 1 for a in args)
        if factory is T.vector:
            if not args and "length" not in kw:
                raise ctx.fail(node, "the `length` argument must be specified when "
                               "zero-initializing a vector")
            length = kw.get("length", n)
            if not isinstance(length, int) or length < 1:
                raise ctx.fail(node, "wp.vector() needs its components or length=N")
            t = T.vector(length, st)
        elif factory is T.matrix:
            shape = kw.get("shape")
            if shape is None and args and not (len(args) == 1 and T.is_composite(args[0].type)):
                raise ctx.fail(node, "the `shape` argument must be specified when initializing "
                               "a matrix by value")
            if shape is None and len(args) == 1:
                shape = tuple(args[0].type._shape_)
            if not (isinstance(shape, tuple) and len(shape) == 2 and all(
                    isinstance(d, int) and d > 0 for d in shape)):
                raise ctx.fail(node, "wp.matrix(...) in a kernel needs shape=(rows, cols)")
            t = T.matrix(shape, st)
        else:
            t = factory(st)
        _warp_mismatch(ctx, t, [ctx.adapt_literal(a, t) for a in args], node)
        if n not in (0, t._length_) and not (n == 1 and factory in (T.vector, T.matrix)):
            raise ctx.fail(node, f"{what}() for {T.type_name(t)} takes 0, "
                           f"{'1 (a fill value) or ' if n == 1 else ''}{t._length_} "
                           f"components, got {n}")
        args = [ctx.adapt_literal(a, t) for a in args]
        return ctx.apply("construct", args, node, {"type": t})
    return Form(what, lower)


_PYTHON = {py.abs: _alias("abs"), py.min: _alias("min"), py.max: _alias("max"),
           py.round: _alias("round"), py.pow: _alias("pow"), py.len: Form("len", _len),
           py.float: _cast(T.float32), py.int: _cast(T.int32), py.bool: _cast(T.bool)}
_PYTHON.update({f: _generic(f) for f in _GENERIC_NAMES})
_PYTHON[py.print] = print_form
_BY_TYPE = {}


def declaration_of(obj):
    """The declaration behind a Python object a kernel calls, or None when it cannot be
    called in kernels."""
    if hasattr(obj, "lower_call"):
        return obj
    return python_declaration(obj)


def python_declaration(obj):
    """The declaration of Python object ``obj`` as a kernel callee, or None."""
    try:
        found = _PYTHON.get(obj)
    except TypeError:  # unhashable
        return None
    if found is not None:
        return found
    if getattr(obj, "_weft_kind", None) == "kernel":
        return Form("kernel", _kernel_call)
    if not isinstance(obj, type):
        return None
    form = _BY_TYPE.get(obj)
    if form is None:
        if T.is_scalar(obj):
            form = _cast(obj)
        elif T.is_composite(obj):
            form = _construct(obj)
        elif T.is_struct(obj):
            form = Form(obj.__name__, lambda ctx, node: ctx.construct_struct(obj, node))
        else:
            return None
        _BY_TYPE[obj] = form
    return form
