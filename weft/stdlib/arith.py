"""Arithmetic operators on scalars, vectors and matrices: ``+ - * / @`` and unary ``-``.

Warp's typing is strict: both operands have the same scalar type (``vec3 * 2.0`` is fine since
``2.0`` is a float32 literal; ``float32 + float64`` is an error).
"""
from __future__ import annotations

import ast

from ..core import types as T
from .exprs import binop, cast, dot, tup
from .registry import builtin


def _same_kind(a, b):
    return a == b and (T.is_scalar(a) and a is not T.bool or T.is_composite(a))


def _add_resolve(types, attrs=None):
    return types[0] if len(types) == 2 and _same_kind(*types) else None


def _binary(name, op, sig):
    class rules:
        def primal(a, b):
            out = binop(op(), a, b)
            return cast(out, a.type) if T.is_int(a.type) else out

        def adjoint(a, b, ret, adj):
            if not T.is_differentiable(a.type):
                return [None, None]
            return [adj, adj if name == "add" else -adj]

        def tangent(a, b, ta, tb, ret):
            if ta is None:
                return None
            return ta + tb if name == "add" else ta - tb

    builtin(name, [sig], _add_resolve)(rules)


_binary("add", ast.Add, "add(a: T, b: T) -> T  (T a scalar, vector or matrix type)")
_binary("sub", ast.Sub, "sub(a: T, b: T) -> T  (T a scalar, vector or matrix type)")


@builtin("neg", ["neg(x: T) -> T"], lambda ts, a=None: ts[0] if len(ts) == 1 and (
    T.is_scalar(ts[0]) and ts[0] is not T.bool or T.is_composite(ts[0])) else None)
class neg:
    def primal(x):
        return cast(-x, x.type) if T.is_int(x.type) else -x

    def adjoint(x, ret, adj):
        return [-adj] if T.is_differentiable(x.type) else [None]

    def tangent(x, tx, ret):
        return None if tx is None else -tx


@builtin("pos", ["pos(x: T) -> T"], lambda ts, a=None: ts[0] if len(ts) == 1 else None)
class pos:
    def primal(x):
        return x

    def adjoint(x, ret, adj):
        return [adj] if T.is_differentiable(x.type) else [None]

    def tangent(x, tx, ret):
        return tx


# ----------------------------------------------------------------------------- multiplication

def _mul_kind(a, b):
    """Classify ``a * b``: returns (kind, result type) or None."""
    if a == b and T.is_composite(a) and a._wp_kind_ == "quaternion":
        return ("qq", a)
    if T.is_scalar(a) and T.is_scalar(b):
        return ("ss", a) if a == b and a is not T.bool else None
    if T.is_scalar(a) and T.is_composite(b) and T.scalar_of(b) is a:
        return ("sc", b)
    if T.is_composite(a) and T.is_scalar(b) and T.scalar_of(a) is b:
        return ("cs", a)
    if T.is_matrix(a) and T.is_vector(b) and T.scalar_of(a) is T.scalar_of(b):
        if a._shape_[1] == b._length_:
            return ("mv", T.vector(a._shape_[0], T.scalar_of(a)))
    if T.is_vector(a) and T.is_matrix(b) and T.scalar_of(a) is T.scalar_of(b):
        if b._shape_[0] == a._length_:
            return ("vm", T.vector(b._shape_[1], T.scalar_of(a)))
    if T.is_matrix(a) and T.is_matrix(b) and T.scalar_of(a) is T.scalar_of(b):
        if a._shape_[1] == b._shape_[0]:
            return ("mm", T.matrix((a._shape_[0], b._shape_[1]), T.scalar_of(a)))
    return None


def _mul_resolve(types, attrs=None):
    if len(types) != 2:
        return None
    k = _mul_kind(*types)
    return None if k is None else k[1]


def rows(m):
    """Rows of matrix Ex ``m`` as vector Ex values."""
    r, c = m.type._shape_
    m = m.atom()
    vt = T.vector(c, T.scalar_of(m.type))
    return [tup([m.comp(i * c + j) for j in range(c)], vt) for i in range(r)]


def cols(m):
    r, c = m.type._shape_
    m = m.atom()
    vt = T.vector(r, T.scalar_of(m.type))
    return [tup([m.comp(i * c + j) for i in range(r)], vt) for j in range(c)]


def transpose(m):
    r, c = m.type._shape_
    mt = T.matrix((c, r), T.scalar_of(m.type))
    m = m.atom()
    return tup([m.comp(i * c + j) for j in range(c) for i in range(r)], mt)


def matmul(a, b):
    """Matrix/vector products of Ex values (kinds mv, vm, mm)."""
    kind, out_t = _mul_kind(a.type, b.type)
    if kind == "mv":
        b = b.atom()
        return tup([dot(r, b) for r in rows(a)], out_t)
    if kind == "vm":
        a = a.atom()
        return tup([dot(a, c) for c in cols(b)], out_t)
    ra, cb = rows(a), cols(b)
    return tup([dot(r, c) for r in ra for c in cb], out_t)


def outer(a, b):
    a, b = a.atom(), b.atom()
    mt = T.matrix((a.length, b.length), T.scalar_of(a.type))
    return tup([x * y for x in a.items() for y in b.items()], mt)


def quat_mul(a, b):
    """Hamilton product of quaternions ``(x, y, z, w)``."""
    a, b = a.atom(), b.atom()
    x1, y1, z1, w1 = a.items()
    x2, y2, z2, w2 = b.items()
    return tup([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2], a.type)


def _conj(q):
    q = q.atom()
    x, y, z, w = q.items()
    return tup([-x, -y, -z, w], q.type)


def mul(a, b):
    kind, out_t = _mul_kind(a.type, b.type)
    if kind == "qq":
        return quat_mul(a, b)
    if kind in ("ss", "sc", "cs"):
        out = binop(ast.Mult(), a, b)
        return cast(out, out_t) if T.is_int(out_t) else out
    return matmul(a, b)


def _mul_adjoint(a, b, adj):
    kind, _ = _mul_kind(a.type, b.type)
    if kind == "qq":  # d(a b) = da b + a db: adjoints through conjugates
        return [quat_mul(adj, _conj(b)), quat_mul(_conj(a), adj)]
    if kind == "ss":
        return [adj * b, adj * a]
    if kind == "sc":
        return [dot(adj, b), adj * a]
    if kind == "cs":
        return [adj * b, dot(adj, a)]
    if kind == "mv":  # y = M v: dM = adj v^T, dv = M^T adj
        return [outer(adj, b), matmul(transpose(a), adj)]
    if kind == "vm":  # y = v M: dv = M adj, dM = v adj^T
        return [matmul(b, adj), outer(a, adj)]
    return [matmul(adj, transpose(b)), matmul(transpose(a), adj)]


@builtin("mul", ["mul(a: T, b: T) -> T", "mul(s: Scalar, x: Vector|Matrix)",
                 "mul(x: Vector|Matrix, s: Scalar)", "mul(m: Matrix, v: Vector) -> Vector",
                 "mul(v: Vector, m: Matrix) -> Vector", "mul(a: Matrix, b: Matrix) -> Matrix"],
         _mul_resolve)
class mul_:
    def primal(a, b):
        return mul(a, b)

    def adjoint(a, b, ret, adj):
        if not T.is_differentiable(a.type):
            return [None, None]
        return _mul_adjoint(a.atom(), b.atom(), adj.atom())

    def tangent(a, b, ta, tb, ret):
        if ta is None:
            return None
        return mul(ta, b) + mul(a, tb)


def _matmul_resolve(types, attrs=None):
    if len(types) == 2 and _mul_kind(*types) and _mul_kind(*types)[0] in ("mv", "vm", "mm"):
        return _mul_kind(*types)[1]
    return None


@builtin("matmul", ["matmul(a: Matrix, b: Matrix|Vector)  (the @ operator)"], _matmul_resolve,
         public=False)
class matmul_:
    def primal(a, b):
        return matmul(a, b)

    def adjoint(a, b, ret, adj):
        return _mul_adjoint(a.atom(), b.atom(), adj.atom())

    def tangent(a, b, ta, tb, ret):
        return matmul(ta, b) + matmul(a, tb)


def _div_resolve(types, attrs=None):
    if len(types) != 2:
        return None
    a, b = types
    if T.is_scalar(a) and a == b and a is not T.bool:
        return a
    if T.is_composite(a) and T.is_scalar(b) and T.scalar_of(a) is b:
        return a
    if T.is_scalar(a) and T.is_composite(b) and T.scalar_of(b) is a:
        return b
    return None


@builtin("div", ["div(a: Scalar, b: Scalar) -> Scalar  (integers: truncates toward zero)",
                 "div(x: Vector|Matrix, s: Scalar)", "div(s: Scalar, x: Vector|Matrix)"],
         _div_resolve)
class div:
    def primal(a, b):
        if T.is_int(a.type):
            from .exprs import call
            return cast(call("_wk.int_div_trunc", a, b), a.type)
        return a / b

    def adjoint(a, b, ret, adj):
        if not T.is_differentiable(a.type):
            return [None, None]
        a, b, ret, adj = a.atom(), b.atom(), ret.atom(), adj.atom()
        if T.is_composite(a.type):          # x / s
            return [adj / b, -dot(adj, ret) / b]
        if T.is_composite(b.type):          # s / x  (componentwise)
            from .exprs import mapc
            return [dot(adj, tup([1.0 / c for c in b.items()], b.type)),
                    mapc(lambda g, r, c: -g * r / c, adj, ret, b)]
        return [adj / b, -adj * ret / b]

    def tangent(a, b, ta, tb, ret):
        if ta is None:
            return None
        b, ret = b.atom(), ret.atom()
        if T.is_composite(b.type):
            from .exprs import mapc
            return mapc(lambda t, r, c, s: (t - r * s) / c, ta, ret, b, tb)
        return (ta - ret * tb) / b
