"""Scalar builtins and operators: arithmetic, comparisons, math functions, casts.

Operators (``+``, ``*``, ``<``, ...) are builtins too (``add``, ``mul``, ``lt``, ...); the
arithmetic ones accept vectors and matrices as well, see :mod:`weft.stdlib.arith`.
"""
from __future__ import annotations

import ast

from ..core import types as T
from . import derivatives
from .exprs import Ex, call, cast, const, mapc, select, tup, wrap_int, zero
from .registry import all_same, builtin, float_scalar, numeric_scalar, same_float

# ----------------------------------------------------------------------------- comparisons

_CMP = {"lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE, "eq": ast.Eq, "ne": ast.NotEq}


def _comparison(name, op):
    def resolve(types, attrs=None):
        a, b = types
        if a == b and (T.is_scalar(a) or (name in ("eq", "ne") and T.is_composite(a))):
            return T.bool
        return None

    class rules:
        def primal(a, b):
            if T.is_composite(a.type) and a.type._length_ == 0:  # vector(0): nothing differs
                return Ex(ast.Constant(name == "eq"), T.bool)
            if T.is_composite(a.type):
                return call("_wk.tuple_eq" if name == "eq" else "_wk.tuple_ne", a, b,
                            type_=T.bool)
            return Ex(ast.Compare(a.node, [op()], [b.node]), T.bool)

    builtin(name, [f"{name}(a: Scalar, b: Scalar) -> bool  (both of one type)"], resolve,
            differentiable=False, public=False)(rules)


for _n, _op in _CMP.items():
    _comparison(_n, _op)


def _bool_op(name, op):
    class rules:
        def primal(a, b):
            return Ex(ast.BinOp(a.node, op(), b.node), T.bool)

    builtin(name, [f"{name}(a: bool, b: bool) -> bool"], all_same(lambda t: t is T.bool),
            differentiable=False, public=False)(rules)


_bool_op("bool_and", ast.BitAnd)
_bool_op("bool_or", ast.BitOr)


@builtin("bool_not", ["not x: bool -> bool"], all_same(lambda t: t is T.bool, arity=1),
         differentiable=False, public=False)
class bool_not:
    def primal(x):
        return Ex(ast.UnaryOp(ast.Not(), x.node), T.bool)


@builtin("unot", ["unot(a: bool) -> bool  (Warp's name of `not a`)"],
         all_same(lambda t: t is T.bool, arity=1), differentiable=False)
class unot:
    def primal(a):
        return Ex(ast.UnaryOp(ast.Not(), a.node), T.bool)


# ----------------------------------------------------------------------------- integer ops

def _int_like(t):
    """An integer scalar, or a vector or matrix of integers (bitwise operators work on each
    component, as Warp's)."""
    return T.is_int(t) or (T.is_composite(t) and T.is_int(T.scalar_of(t)))


def _int_binop(name, helper_or_op, sig):
    def scalar(a, b):
        if isinstance(helper_or_op, str):
            return cast(call(helper_or_op, a, b), a.type)
        return Ex(wrap_int(ast.BinOp(a.node, helper_or_op(), b.node), a.type), a.type)

    class rules:
        def primal(a, b):
            return mapc(scalar, a, b)

    builtin(name, [sig, sig.replace("integers", "integer vectors or matrices")],
            all_same(_int_like), differentiable=False)(rules)


_int_binop("bit_and", ast.BitAnd, "a & b (integers of one type)")
_int_binop("bit_or", ast.BitOr, "a | b (integers of one type)")
_int_binop("bit_xor", ast.BitXor, "a ^ b (integers of one type)")
_int_binop("lshift", ast.LShift, "a << b (integers of one type)")
_int_binop("rshift", ast.RShift, "a >> b (integers of one type)")


@builtin("bit_count", ["bit_count(x: Int) -> int32  (set bits of the two's complement form)"],
         lambda ts, a=None: T.int32 if len(ts) == 1 and T.is_int(ts[0]) else None,
         differentiable=False)
class bit_count:
    def primal(x):
        width = 8 * T.numpy_dtype(x.type).itemsize
        return call("_wk.bit_count", cast(x, T.int64), const(width, T.int64), type_=T.int32)


@builtin("invert", ["~a (integer, or integer vector or matrix)"], all_same(_int_like, arity=1),
         differentiable=False)
class invert:
    def primal(a):
        return mapc(lambda x: Ex(wrap_int(ast.UnaryOp(ast.Invert(), x.node), x.type), x.type),
                    a)


def _mod_types(ts, attrs=None):
    """Scalars, or vectors per component (Warp's ``%`` on vectors), all of one type."""
    if len(ts) == 2 and ts[0] == ts[1] and (numeric_scalar(ts[0]) or T.is_vector(ts[0]) and
                                            numeric_scalar(T.scalar_of(ts[0]))):
        return ts[0]
    return None


def _int_result(ex, t):
    """``t(ex)``: the integer helpers compute in 64 bits (Numba's integers), so a result of a
    narrower type is cast back (a vec4i built of ``(d + 1) % n`` keeps int32 components)."""
    return Ex(ast.Call(ast.Name(t.__name__, ast.Load()), [ex.node], []), t)


def _mod1(a, b):
    if T.is_int(a.type):
        return _int_result(call("_wk.int_mod", a, b), a.type)
    return cast(call("np.fmod", a, b), a.type)


@builtin("mod", ["mod(a: Scalar, b: Scalar) -> Scalar  (C fmod semantics: sign of a)",
                 "mod(a: Vector, b: Vector) -> Vector  (per component)"], _mod_types)
class mod:
    def primal(a, b):
        return mapc(_mod1, a, b)

    def adjoint(a, b, ret, adj):
        if T.is_int(T.scalar_of(a.type)):
            return [None, None]
        return derivatives.adjoint("np.fmod", [a, b], ret, adj)

    def tangent(a, b, ta, tb, ret):
        if T.is_int(T.scalar_of(a.type)):
            return None
        return derivatives.tangent("np.fmod", [a, b], [ta, tb], ret)


@builtin("floordiv", ["floordiv(a: Scalar, b: Scalar) -> Scalar"], all_same(numeric_scalar),
         differentiable=False)
class floordiv:
    def primal(a, b):
        if T.is_int(a.type):
            return _int_result(call("_wk.int_floor_div", a, b), a.type)
        return cast(call("np.floor", a / b), a.type)


@builtin("pow", ["pow(x: Float, y: Float) -> Float"], all_same(float_scalar))
class pow:
    def primal(x, y):
        return call("np.power", x, y)

    def adjoint(x, y, ret, adj):  # in y: log(x) where x > 0, else 0 (guarded as Warp)
        return derivatives.adjoint("np.power", [x, y], ret, adj)

    def tangent(x, y, tx, ty, ret):
        return derivatives.tangent("np.power", [x, y], [tx, ty], ret)


# ----------------------------------------------------------------------------- math functions

def _unary(name, prim, doc="", sig=None, call_name=None, **consts):
    """A float-scalar (and componentwise on float vectors) function calling ``prim`` (the
    path of the function, or a function building the call), whose derivative is the
    vocabulary's of ``call_name`` (default ``prim``) with constant arguments ``consts``."""
    build = prim if callable(prim) else (lambda c: call(prim, c))
    call_name = call_name or prim

    class rules:
        def primal(x):
            return mapc(build, x)

        def adjoint(x, ret, adj):
            return derivatives.adjoint(call_name, [x], ret, adj, **consts)

        def tangent(x, tx, ret):
            return derivatives.tangent(call_name, [x], [tx], ret, **consts)

    rules.__doc__ = doc
    builtin(name, [sig or f"{name}(x: Float) -> Float"], _float_scalar_only)(rules)


def _float_scalar_only(types, attrs=None):
    if len(types) == 1 and T.is_float(types[0]):
        return types[0]
    return None


# the derivatives: weft/native/vocabulary.py
for _name, _np in (("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("exp", "exp"),
                   ("log", "log"), ("log2", "log2"), ("log10", "log10"), ("sqrt", "sqrt"),
                   ("tanh", "tanh"), ("sinh", "sinh"), ("cosh", "cosh"), ("asin", "arcsin"),
                   ("acos", "arccos"), ("atan", "arctan")):
    _unary(_name, "np." + _np)


def _flat(name, prim):
    """Piecewise-constant functions: the derivative is zero almost everywhere."""

    class rules:
        def primal(x):
            return mapc(lambda c: cast(call(prim, c), c.type), x)

        def adjoint(x, ret, adj):
            return [None]

        def tangent(x, tx, ret):
            return zero(x.type)

    builtin(name, [f"{name}(x: Float) -> Float"], same_float)(rules)


_flat("floor", "np.floor")
_flat("ceil", "np.ceil")
_flat("trunc", "np.trunc")
_flat("round", "_wk.round_half_away")  # C round(): halves away from zero
_flat("rint", "np.rint")


@builtin("abs", ["abs(x: Scalar) -> Scalar", "abs(x: Vector) -> Vector"],
         lambda ts, a=None: ts[0] if len(ts) == 1 and (numeric_scalar(ts[0]) or T.is_vector(ts[0]))
         else None)
class abs_:
    def primal(x):
        return mapc(lambda c: Ex(ast.Call(ast.Name("abs", ast.Load()), [c.node], []), c.type), x)

    def adjoint(x, ret, adj):
        if not T.is_float(T.scalar_of(x.type)):
            return [None]
        return derivatives.adjoint("abs", [x], ret, adj)

    def tangent(x, tx, ret):
        if tx is None:
            return None
        return derivatives.tangent("abs", [x], [tx], ret)


def _minmax(name, op):
    def resolve(types, attrs=None):
        if len(types) == 2 and types[0] == types[1] and (
                numeric_scalar(types[0]) or T.is_vector(types[0])):
            return types[0]
        if len(types) == 1 and T.is_vector(types[0]):  # Warp: the extreme component
            return T.scalar_of(types[0])
        return None

    def pick(a, b):  # True where ``a`` is the result
        return Ex(ast.Compare(a.node, [op()], [b.node]), T.bool)

    def first_extreme(v):
        """(the extreme component of vector ``v``, its index: the first, as Warp)."""
        v = v.atom()
        best, idx = v.comp(0), Ex(ast.Constant(0), T.int32)
        for i in range(1, v.type._length_):
            c = v.comp(i)
            better = Ex(ast.Compare(c.node, [{ast.GtE: ast.Gt, ast.LtE: ast.Lt}[op]()],
                                    [best.node]), T.bool)
            best = select(better, c, best).atom()
            idx = select(better, Ex(ast.Constant(i), T.int32), idx).atom()
        return best, idx

    def at_extreme(v, g):
        """The vector of ``v``'s type holding ``g`` at ``v``'s extreme component, else 0."""
        _, idx = first_extreme(v)
        st = T.scalar_of(v.type)
        comps = [select(Ex(ast.Compare(idx.node, [ast.Eq()], [ast.Constant(i)]), T.bool),
                        g, zero(st)) for i in range(v.type._length_)]
        return tup(comps, v.type)

    class rules:
        def primal(a, b=None):
            if b is None:
                return first_extreme(a)[0]
            return mapc(lambda x, y: select(pick(x, y), x, y), a.atom(), b.atom())

        def adjoint(a, b=None, ret=None, adj=None):
            if not T.is_float(T.scalar_of(a.type)):
                return [None] * (1 if b is None else 2)
            if b is None:
                return [at_extreme(a, adj.atom())]
            return derivatives.adjoint(name, [a, b], ret, adj)

        def tangent(*args, ret):
            if len(args) == 2:  # (a, ta): the tangent of the extreme component
                a, ta = args
                if ta is None:
                    return None
                _, idx = first_extreme(a)
                ta = ta.atom()
                out = ta.comp(0)
                for i in range(1, a.type._length_):
                    out = select(Ex(ast.Compare(idx.node, [ast.Eq()], [ast.Constant(i)]),
                                    T.bool), ta.comp(i), out).atom()
                return out
            a, b, ta, tb = args
            if ta is None:
                return None
            return derivatives.tangent(name, [a, b], [ta, tb], ret)

    builtin(name, [f"{name}(a: Scalar, b: Scalar) -> Scalar", f"{name}(a: Vector, b: Vector)"
                   f" -> Vector (componentwise)", f"{name}(a: Vector) -> Scalar (its "
                   f"{name}imum component)"], resolve)(rules)


_minmax("min", ast.LtE)
_minmax("max", ast.GtE)


@builtin("clamp", ["clamp(x: Scalar, low: Scalar, high: Scalar) -> Scalar"],
         all_same(numeric_scalar, arity=3))
class clamp:
    def primal(x, lo, hi):
        x, lo, hi = x.atom(), lo.atom(), hi.atom()
        below, above = _sides(x, lo, hi)
        return select(below, lo, select(above, hi, x))

    def adjoint(x, lo, hi, ret, adj):
        if not T.is_float(x.type):
            return [None, None, None]
        x, lo, hi, adj = x.atom(), lo.atom(), hi.atom(), adj.atom()
        z = zero(x.type)
        below, _ = _sides(x, lo, hi)
        # as the primal: below wins when lo > hi
        above = Ex(ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), below.node), ast.Compare(
            x.node, [ast.Gt()], [hi.node])]), T.bool)
        inside = Ex(ast.BoolOp(ast.And(), [ast.UnaryOp(ast.Not(), below.node),
                                           ast.UnaryOp(ast.Not(), above.node)]), T.bool)
        return [select(inside, adj, z), select(below, adj, z), select(above, adj, z)]

    def tangent(x, lo, hi, tx, tlo, thi, ret):
        if tx is None:
            return None
        x, lo, hi = x.atom(), lo.atom(), hi.atom()
        below, above = _sides(x, lo, hi)
        return select(below, tlo, select(above, thi, tx))


def _sides(x, lo, hi):
    """``clamp``'s cases: ``not x >= lo`` (a NaN ``x`` clamps to ``lo``, as Warp's float clamp
    ``fmin(fmax(lo, x), hi)``) and ``x > hi``."""
    below = Ex(ast.UnaryOp(ast.Not(), ast.Compare(x.node, [ast.GtE()], [lo.node])), T.bool)
    return below, Ex(ast.Compare(x.node, [ast.Gt()], [hi.node]), T.bool)


def _sign_of(x):
    x = x.atom()
    neg = Ex(ast.Compare(x.node, [ast.Lt()], [zero(x.type).node]), T.bool)
    return select(neg, const(-1, x.type), const(1, x.type))


@builtin("sign", ["sign(x: Scalar) -> Scalar", "sign(v: Vector) -> Vector  (per component)"],
         lambda ts, a=None: ts[0] if len(ts) == 1 and (numeric_scalar(ts[0]) or T.is_vector(
             ts[0]) and numeric_scalar(T.scalar_of(ts[0]))) else None)
class sign:
    def primal(x):
        if T.is_vector(x.type):
            return mapc(_sign_of, x)
        return _sign_of(x)

    def adjoint(x, ret, adj):
        return [None]

    def tangent(x, tx, ret):
        return None if tx is None else zero(x.type)


@builtin("atan2", ["atan2(y: Float, x: Float) -> Float"], all_same(float_scalar))
class atan2:
    def primal(y, x):
        return call("np.arctan2", y, x)

    def adjoint(y, x, ret, adj):
        return derivatives.adjoint("np.arctan2", [y, x], ret, adj)

    def tangent(y, x, ty, tx, ret):
        return derivatives.tangent("np.arctan2", [y, x], [ty, tx], ret)


@builtin("select", ["select(cond: bool|int, value_if_false: T, value_if_true: T) -> T"],
         lambda ts, a=None: ts[1] if len(ts) == 3 and ts[1] == ts[2] and T.is_scalar(ts[0])
         else None)
class select_:
    """Warp's ``select(cond, a, b)``: returns ``b`` when ``cond`` is true, else ``a``."""

    def primal(c, a, b):
        return select(_truth(c), b, a)

    def adjoint(c, a, b, ret, adj):
        if not T.is_differentiable(a.type):
            return [None, None, None]
        z = zero(a.type).atom()
        cond = _truth(c)
        return [None, select(cond, z, adj), select(cond, adj, z)]

    def tangent(c, a, b, tc, ta, tb, ret):
        if ta is None:
            return None
        return select(_truth(c), tb, ta)


@builtin("where", ["where(cond: bool|int, value_if_true: T, value_if_false: T) -> T"],
         lambda ts, a=None: ts[1] if len(ts) == 3 and ts[1] == ts[2] and T.is_scalar(ts[0])
         else None)
class where:
    # ``select`` with the two values swapped
    def primal(c, a, b):
        return select_.primal(c, b, a)

    def adjoint(c, a, b, ret, adj):
        _, adj_b, adj_a = select_.adjoint(c, b, a, ret, adj)
        return [None, adj_a, adj_b]

    def tangent(c, a, b, tc, ta, tb, ret):
        return None if ta is None else select_.primal(c, tb, ta)


def _truth(c):
    if c.type is T.bool:
        return c
    return Ex(ast.Compare(c.node, [ast.NotEq()], [zero(c.type).node]), T.bool)


# ----------------------------------------------------------------------------- casts

def _cast_resolve(types, attrs):
    target = attrs["type"]
    if len(types) == 1 and T.is_scalar(types[0]):
        return target
    return None


@builtin("cast", ["float32(x: Scalar) (any scalar type name converts any scalar)"],
         _cast_resolve, public=False)
class cast_:
    def primal(x, type):
        if type is T.bool:
            return Ex(ast.Compare(x.node, [ast.NotEq()], [zero(x.type).node]), T.bool)
        if T.is_int(type) and T.is_float(x.type):
            return cast(call("np.trunc", x), type)
        return cast(x, type)

    def adjoint(x, ret, adj, type):
        if not (T.is_float(x.type) and T.is_float(type)):
            return [None]
        return [cast(adj, x.type)]

    def tangent(x, tx, ret, type):
        if tx is None or not T.is_float(type):
            return None
        return cast(tx, type)


# ----------------------------------------------------------------------------- more math

_unary("cbrt", "np.cbrt")


def _erf_like(name):
    _unary(name, lambda c: cast(call(f"math.{name}", c), c.type), call_name=f"math.{name}")


_erf_like("erf")
_erf_like("erfc")


def _erf_inverse(name, complement):
    """erfinv / erfcinv: computed in float64 and rounded to the argument's precision (as
    Warp's CPU builtins); the derivative is -+sqrt(pi)/2 exp(ret^2)."""
    domain = "0 <= x <= 2" if complement else "-1 <= x <= 1"
    _unary(name, lambda c: cast(call("_wk.erf_inverse", cast(c, T.float64),
                                     Ex(ast.Constant(complement), T.bool), type_=T.float64),
                                c.type),
           doc=_erf_inverse.__doc__, sig=f"{name}(x: Float) -> Float  ({domain})",
           call_name="_wk.erf_inverse", complement=complement)


_erf_inverse("erfinv", False)
_erf_inverse("erfcinv", True)


def _scaled(name, factor):
    class rules:
        def primal(x):
            return x * factor

        def adjoint(x, ret, adj):
            return [adj * factor]

        def tangent(x, tx, ret):
            return tx * factor

    builtin(name, [f"{name}(x: Float) -> Float"], same_float)(rules)


_scaled("degrees", 57.29577951308232)
_scaled("radians", 0.017453292519943295)


@builtin("frac", ["frac(x: Float) -> Float  (x - trunc(x))"], same_float)
class frac:
    def primal(x):
        x = x.atom()
        return mapc(lambda c: c - cast(call("np.trunc", c), c.type), x)

    def adjoint(x, ret, adj):
        return [adj]

    def tangent(x, tx, ret):
        return tx


@builtin("copysign", ["copysign(x: Float, y: Float) -> Float"], all_same(float_scalar))
class copysign:
    def primal(x, y):
        return call("np.copysign", x, y)

    def adjoint(x, y, ret, adj):
        return derivatives.adjoint("np.copysign", [x, y], ret, adj)

    def tangent(x, y, tx, ty, ret):
        return derivatives.tangent("np.copysign", [x, y], [tx, ty], ret)


def _predicate(name, test):
    class rules:
        def primal(x):
            x = x.atom()
            return Ex(test(x), T.bool)

    builtin(name, [f"{name}(a: Float) -> bool"],
            lambda ts, a=None: T.bool if len(ts) == 1 and T.is_float(ts[0]) else None,
            differentiable=False)(rules)


def _inf(x):
    return const(float("inf"), x.type).node


# comparisons only, so the same code runs on every target
_predicate("isnan", lambda x: ast.Compare(x.node, [ast.NotEq()], [x.node]))
_predicate("isinf", lambda x: ast.Compare(ast.Call(ast.Name("abs", ast.Load()), [x.node], []),
                                          [ast.Eq()], [_inf(x)]))
_predicate("isfinite", lambda x: ast.Compare(ast.BinOp(x.node, ast.Sub(), x.node), [ast.Eq()],
                                             [zero(x.type).node]))


def _indicator(op):
    """The rules of the 0/1 indicator of ``x op 0`` (no derivative)."""
    class rules:
        def primal(x):
            x = x.atom()
            return select(Ex(ast.Compare(x.node, [op()], [zero(x.type).node]), T.bool),
                          const(1, x.type), zero(x.type))

        def adjoint(x, ret, adj):
            return [None]

        def tangent(x, tx, ret):
            return None if tx is None else zero(x.type)
    return rules


def _numeric_unary(ts, a=None):
    return ts[0] if len(ts) == 1 and numeric_scalar(ts[0]) else None


nonzero = builtin("nonzero", ["nonzero(x: Scalar) -> Scalar  (1 where x != 0, else 0)"],
                  _numeric_unary)(_indicator(ast.NotEq))
step = builtin("step", ["step(x: Scalar) -> Scalar  (1 where x < 0, else 0: Warp's definition)"],
               _numeric_unary)(_indicator(ast.Lt))
