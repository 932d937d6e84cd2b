"""One declaration per builtin: its signatures, primal, adjoint and tangent rules.

A builtin is declared as a class used as a namespace::

    @builtin("sin", sigs=["sin(x: Float) -> Float"], resolve=same_float)
    class sin:
        def primal(x):            return call("math.sin", x)
        def adjoint(x, ret, adj): return [adj * call("math.cos", x)]
        def tangent(x, tx, ret):  return tx * call("math.cos", x)

Rules take and return :class:`weft.transpiler.exprs.Ex` values. ``adjoint`` returns one
contribution per argument (``None`` where an argument carries no gradient); the transpiler owns
accumulation. ``tangent`` receives the tangents of the arguments (``None`` for arguments that
carry none) and returns the tangent of the result. A builtin with ``differentiable=False``
has neither rule and passes no gradient.

``resolve(types, attrs)`` returns the result type, or ``None`` when no signature accepts the
argument types; the ``sigs`` strings are shown to the user in that case.
"""
from __future__ import annotations

from .. import types as T

REGISTRY = {}     # name -> Builtin, every builtin including operators
NAMESPACE = {}    # name visible as ``wp.<name>`` inside kernels -> Builtin


class Builtin:
    def __init__(self, name, rules, sigs, resolve, differentiable, public, attrs_rule):
        self.name = name
        self.sigs = list(sigs)
        self.resolve = resolve
        self.differentiable = differentiable
        self.primal = rules.primal
        self.adjoint = getattr(rules, "adjoint", None)
        self.tangent = getattr(rules, "tangent", None)
        self.attrs_rule = attrs_rule
        self.doc = (rules.__doc__ or "").strip()
        if differentiable and (self.adjoint is None or self.tangent is None):
            raise TypeError(f"builtin {name}: differentiable builtins need adjoint and tangent")
        self.public = public

    def __repr__(self):
        return f"<weft builtin {self.name}>"


def builtin(name, sigs, resolve, differentiable=True, public=True, attrs=None):
    """Declare a builtin (see the module docstring)."""

    def deco(rules):
        b = Builtin(name, rules, sigs, resolve, differentiable, public, attrs)
        REGISTRY[name] = b
        if public:
            NAMESPACE[name] = b
        return b

    return deco


def lookup(name):
    return REGISTRY[name]


# ----------------------------------------------------------------------------- resolve helpers

def same_float(types, attrs=None):
    """One float scalar or float vector argument; the result has its type."""
    if len(types) == 1:
        t = types[0]
        if T.is_float(t) or (T.is_composite(t) and T.is_float(T.scalar_of(t))):
            return t
    return None


def same_float_scalar(types, attrs=None):
    if len(types) == 1 and T.is_float(types[0]):
        return types[0]
    return None


def all_same(pred, result=None, arity=2):
    """``arity`` arguments all of one type satisfying ``pred``; the result is that type (or
    ``result``)."""

    def resolve(types, attrs=None):
        if len(types) == arity and all(t == types[0] for t in types) and pred(types[0]):
            return types[0] if result is None else result
        return None

    return resolve


def float_scalar(t):
    return T.is_float(t)


def numeric_scalar(t):
    return T.is_scalar(t) and t is not T.bool


def float_vector(t):
    """Float vectors, and quaternions where vector algebra applies (dot, length, normalize)."""
    return (T.is_vector(t) or T.is_composite(t) and t._wp_kind_ == "quaternion") and \
        T.is_float(T.scalar_of(t))


def kernel_language_builtins(namespace):
    """The public ``@wp.func`` builtins of a stdlib module written in the kernel language
    (``FUNCS = kernel_language_builtins(globals())``); names starting with ``_`` are helpers."""
    return {n: v for n, v in dict(namespace).items()
            if getattr(v, "_weft_kind", None) == "func" and not n.startswith("_")}
