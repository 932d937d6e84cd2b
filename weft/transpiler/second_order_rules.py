"""The derivative rules of second order (:mod:`.second_order`): the tangent of each math call
the generated code makes, written as Python AST, and the small AST builders they and the
tangent generator share. A rule takes ``(prim, args, tans)`` (the call, its argument nodes and
their tangents, None for zero) and returns the tangent expression.
"""
from __future__ import annotations

import ast
import copy
import math

from ..native.vocabulary import FAST_MATH


def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else base + "." + node.attr
    return None


def _n(name):
    return ast.Name(name, ast.Load())


def _call(fname, *args):
    func = _n(fname) if "." not in fname else ast.Attribute(_n(fname.split(".")[0]),
                                                             fname.split(".", 1)[1], ast.Load())
    return ast.Call(func, list(args), [])


def _bin(a, op, b):
    return ast.BinOp(a, op, b)


def _neg(a):
    return ast.UnaryOp(ast.USub(), a)


def _like(x, value):
    return _call("_w2.like", copy.deepcopy(x), ast.Constant(value))


def _c(node):
    return copy.deepcopy(node)


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return _bin(a, ast.Add(), b)


def _sub(a, b):
    if b is None:
        return a
    if a is None:
        return _neg(b)
    return _bin(a, ast.Sub(), b)


def _mul(t, x):
    """``t * x`` for a tangent ``t`` (None: zero)."""
    return None if t is None else _bin(t, ast.Mult(), _c(x))



def _unary(f):
    """A rule for ``y = g(x)``: ``f(y, x)`` gives ``dy/dx`` as an expression."""
    def rule(prim, args, tans):
        return _mul(tans[0], f(prim, args[0]))
    return rule


def _sqrt(y, x):
    return _bin(_like(x, 1.0), ast.Div(), _bin(_c(y), ast.Add(), _c(y)))


def _fn(name):
    def make(x):
        return _call(name, _c(x))
    return make


def _unary_rules(ns):
    s, c, ex, lg, sq = (_fn(ns + n) for n in ("sin", "cos", "exp", "log", "sqrt"))
    one = _like
    return {
        "sqrt": _sqrt,
        "sin": lambda y, x: c(x),
        "cos": lambda y, x: _neg(s(x)),
        "tan": lambda y, x: _bin(one(x, 1.0), ast.Add(), _bin(_c(y), ast.Mult(), _c(y))),
        "exp": lambda y, x: _c(y),
        "log": lambda y, x: _bin(one(x, 1.0), ast.Div(), _c(x)),
        "log2": lambda y, x: _bin(one(x, 1.0 / math.log(2.0)), ast.Div(), _c(x)),
        "log10": lambda y, x: _bin(one(x, 1.0 / math.log(10.0)), ast.Div(), _c(x)),
        "tanh": lambda y, x: _bin(one(x, 1.0), ast.Sub(), _bin(_c(y), ast.Mult(), _c(y))),
        "sinh": lambda y, x: _fn(ns + "cosh")(x),
        "cosh": lambda y, x: _fn(ns + "sinh")(x),
        "arcsin": lambda y, x: _bin(one(x, 1.0), ast.Div(), sq(
            _bin(one(x, 1.0), ast.Sub(), _bin(_c(x), ast.Mult(), _c(x))))),
        "arccos": lambda y, x: _neg(_bin(one(x, 1.0), ast.Div(), sq(
            _bin(one(x, 1.0), ast.Sub(), _bin(_c(x), ast.Mult(), _c(x)))))),
        "arctan": lambda y, x: _bin(one(x, 1.0), ast.Div(), _bin(one(x, 1.0), ast.Add(),
                                                                 _bin(_c(x), ast.Mult(), _c(x)))),
        "cbrt": lambda y, x: _bin(one(x, 1.0), ast.Div(), _bin(one(x, 3.0), ast.Mult(),
                                                               _bin(_c(y), ast.Mult(), _c(y)))),
        "abs": lambda y, x: ast.IfExp(ast.Compare(_c(x), [ast.Lt()], [ast.Constant(0)]),
                                      one(x, -1.0), one(x, 1.0)),
        "fabs": lambda y, x: ast.IfExp(ast.Compare(_c(x), [ast.Lt()], [ast.Constant(0)]),
                                       one(x, -1.0), one(x, 1.0)),
        "exp2": lambda y, x: _bin(_c(y), ast.Mult(), one(x, math.log(2.0))),
        "expm1": lambda y, x: ex(x),
        "log1p": lambda y, x: _bin(one(x, 1.0), ast.Div(), _bin(one(x, 1.0), ast.Add(), _c(x))),
        "_lg": lg,
    }


def _power(prim, args, tans):
    a, b = args
    ta, tb = tans
    out = None
    if ta is not None:
        out = _bin(ta, ast.Mult(), _bin(_c(b), ast.Mult(), _call(
            "np.power", _c(a), _bin(_c(b), ast.Sub(), _like(b, 1.0)))))
    if tb is not None:
        log_a = ast.IfExp(ast.Compare(_c(a), [ast.Gt()], [ast.Constant(0)]),
                          _call("np.log", _c(a)), _like(a, 0.0))
        out = _add(out, _bin(tb, ast.Mult(), _bin(log_a, ast.Mult(), _c(prim))))
    return out


def _arctan2(prim, args, tans):
    y, x = args
    ty, tx = tans
    den = _bin(_bin(_c(x), ast.Mult(), _c(x)), ast.Add(), _bin(_c(y), ast.Mult(), _c(y)))
    num = _sub(_mul(ty, x), _mul(tx, y))
    return _bin(num, ast.Div(), den)


def _copysign(prim, args, tans):
    a, b = args
    if tans[0] is None:
        return None
    sign = _bin(_call("np.copysign", _like(a, 1.0), _c(a)), ast.Mult(),
                _call("np.copysign", _like(a, 1.0), _c(b)))
    return _bin(tans[0], ast.Mult(), sign)


def _minmax(pick_first_when):
    def rule(prim, args, tans):
        a, b = args
        ta, tb = tans
        return ast.IfExp(ast.Compare(_c(a), [pick_first_when], [_c(b)]),
                         ta if ta is not None else _like(a, 0.0),
                         tb if tb is not None else _like(b, 0.0))
    return rule


def _fmod(prim, args, tans):
    a, b = args
    ta, tb = tans
    if tb is None:
        return ta
    q = _call("np.trunc", _bin(_c(a), ast.Div(), _c(b)))
    return _sub(ta, _bin(q, ast.Mult(), tb))


def _erfinv(prim, args, tans):
    # d/dx erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2)
    return _mul(tans[0], _bin(_like(args[0], math.sqrt(math.pi) / 2.0), ast.Mult(),
                              _call("np.exp", _bin(_c(prim), ast.Mult(), _c(prim)))))


RULES = {}
for _ns in ("np.", "math."):
    for _k, _f in _unary_rules(_ns).items():
        if not _k.startswith("_"):
            RULES[_ns + _k] = _unary(_f)
for _k in FAST_MATH:  # a fast_math module's float32 functions (weft.native.fastmath)
    RULES["_wk.fm_" + _k] = _unary(_unary_rules("_wk.fm_")[_k])
RULES["abs"] = _unary(_unary_rules("np.")["abs"])
RULES["np.power"] = RULES["math.pow"] = _power
RULES["np.arctan2"] = RULES["math.atan2"] = _arctan2
RULES["np.copysign"] = RULES["math.copysign"] = _copysign
RULES["np.fmod"] = RULES["math.fmod"] = _fmod
RULES["np.minimum"] = RULES["min"] = _minmax(ast.LtE())
RULES["np.maximum"] = RULES["max"] = _minmax(ast.GtE())
RULES["_wk.erf_inverse"] = _erfinv
for _a, _b in (("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan")):
    RULES["math." + _a] = RULES["math." + _b]
