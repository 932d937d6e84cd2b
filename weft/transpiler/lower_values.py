"""Composite values for the ``lower`` pass: Warp's generic in-kernel constructors
(``wp.vector``, ``wp.matrix``, ``wp.quaternion``, ``wp.transformation``), the identities of
quaternions and transforms, and the parts ``t.p`` / ``t.q`` of transforms."""
from __future__ import annotations

import ast

from .. import types as T
from . import ir


TRANSFORM_PARTS = {"p": (0, 3), "q": (3, 4)}  # first component and length in a transform


def is_transform_part(t, attr):
    return T.is_composite(t) and t._wp_kind_ == "transformation" and attr in TRANSFORM_PARTS


def part_type(t, attr):
    """The type of ``t.p`` (a vec3) or ``t.q`` (a quaternion) of transform type ``t``."""
    st = T.scalar_of(t)
    return T.vector(3, st) if attr == "p" else T.quaternion(st)


class ValueLowering:
    """Mixin of :class:`weft.transpiler.lower_expr.ExprLowerer` (``self`` lowers expressions,
    applies builtins and assigns)."""

    def transform_set(self, name, node):
        """``wp.transform_set_translation(t, p)`` / ``transform_set_rotation(t, q)``: Warp's
        in-place setters, the same as ``t.p = p`` / ``t.q = q``."""
        if len(node.args) != 2 or node.keywords:
            raise self.fail(node, f"wp.{name}(xform, value) takes two arguments")
        target = node.args[0]
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) or (
                isinstance(target, ast.Subscript) and self.is_array_expr(target.value)):
            raise self.fail(target, f"wp.{name}() modifies a variable in place: pass a "
                            "variable (load an array element into one, or write "
                            "xforms[i].p = ... instead)")
        t = self.lower_expr(target)
        if not (T.is_composite(t.type) and t.type._wp_kind_ == "transformation"):
            raise self.fail(target, f"wp.{name}() needs a transform, got "
                            f"{T.type_name(t.type)}")
        attr = "p" if name.endswith("translation") else "q"
        self.assign(target, self.with_transform_part(t, attr, self.lower_expr(node.args[1]),
                                                     node), node)
        return None

    def transform_part(self, t, attr, node):
        """``t.p`` (the translation, a vec3) or ``t.q`` (the rotation, a quaternion)."""
        start, n = TRANSFORM_PARTS[attr]
        comps = [self.apply_builtin("extract", [t, ir.Const(start + k, T.int32)], node)
                 for k in range(n)]
        return self.apply_builtin("construct", comps, node, {"type": part_type(t.type, attr)})

    def with_transform_part(self, t, attr, value, node):
        """A copy of transform ``t`` with ``t.p`` or ``t.q`` replaced by ``value``."""
        start, n = TRANSFORM_PARTS[attr]
        want = part_type(t.type, attr)
        value = self.adapt_literal(value, want)
        if value.type != want:
            raise self.fail(node, f"t.{attr} of a {T.type_name(t.type)} takes a "
                            f"{T.type_name(want)}, got {T.type_name(value.type)}")
        for k in range(n):
            c = self.apply_builtin("extract", [value, ir.Const(k, T.int32)], node)
            t = self.apply_builtin("insert", [t, ir.Const(start + k, T.int32), c], node)
        return t

    def generic_constructor(self, factory, node):
        """In-kernel ``wp.vector(x, y, z)``, ``wp.vector(s, length=3)``,
        ``wp.vector(length=3, dtype=float)``, ``wp.matrix(..., shape=(r, c))``,
        ``wp.quaternion(x, y, z, w)``, ``wp.quaternion(v, w)``, ``wp.transformation(p, q)``:
        the scalar type comes from the arguments, else from ``dtype=`` (float32 by default);
        with no components the value is zero, as in Warp."""
        what = {T.vector: "wp.vector", T.matrix: "wp.matrix", T.quaternion: "wp.quaternion",
                T.transformation: "wp.transformation"}[factory]
        args = [self.lower_expr(a) for a in node.args]
        kw = {k.arg: self.static_keyword(k, what) for k in node.keywords}
        allowed = {T.vector: {"length", "dtype"}, T.matrix: {"shape", "dtype"}}.get(
            factory, {"dtype"})
        for k in node.keywords:
            if k.arg not in allowed:
                raise self.fail(k, f"{what}() takes no keyword '{k.arg}' (it takes "
                                f"{', '.join(sorted(allowed))})")
        typed = [a for a in args if not (isinstance(a, ir.Const) and a.literal)]
        try:
            st = T.as_scalar_type(kw["dtype"]) if "dtype" in kw else (
                T.scalar_of(typed[0].type) if typed else T.float32)
        except TypeError:
            raise self.fail(node, f"{what}(dtype=...) needs a scalar type") from None
        n = sum(a.type._length_ if T.is_composite(a.type) else 1 for a in args)
        if factory is T.vector:
            length = kw.get("length", n)
            if not isinstance(length, int) or length < 1:
                raise self.fail(node, "wp.vector() needs its components or length=N")
            t = T.vector(length, st)
        elif factory is T.matrix:
            shape = kw.get("shape")
            if not (isinstance(shape, tuple) and len(shape) == 2 and all(
                    isinstance(d, int) and d > 0 for d in shape)):
                raise self.fail(node, "wp.matrix(...) in a kernel needs shape=(rows, cols)")
            t = T.matrix(shape, st)
        elif factory is T.quaternion:
            t = T.quaternion(st)
        else:
            t = T.transformation(st)
        if n not in (0, t._length_) and not (n == 1 and factory in (T.vector, T.matrix)):
            raise self.fail(node, f"{what}() for {T.type_name(t)} takes 0, "
                            f"{'1 (a fill value) or ' if n == 1 else ''}{t._length_} "
                            f"components, got {n}")
        args = [self.adapt_literal(a, t) for a in args]
        return self.apply_builtin("construct", args, node, {"type": t})

    def static_keyword(self, kw, what):
        """The compile-time value of keyword argument ``kw`` (a literal or a global)."""
        try:
            return ast.literal_eval(kw.value)
        except ValueError:
            pass
        value = self.resolve_global(kw.value)
        if value is None:
            raise self.fail(kw.value, f"{what}({kw.arg}=...) must be a constant")
        return value

    def identity_of(self, name, node):
        """``wp.quat_identity(dtype=float32)``, ``wp.transform_identity(dtype=float32)``."""
        given = list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]
        if len(given) > 1 or any(k.arg != "dtype" for k in node.keywords):
            raise self.fail(node, f"wp.{name}() takes one argument, dtype")
        try:
            st = T.as_scalar_type(self.resolve_global(given[0])) if given else T.float32
        except TypeError:
            st = None
        if st is None or not T.is_float(st):
            raise self.fail(node, f"wp.{name}(dtype) needs a float type (float16, float32 or "
                            "float64)")
        if name == "quat_identity":
            return ir.Const((0.0, 0.0, 0.0, 1.0), T.quaternion(st))
        return ir.Const((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), T.transformation(st))
