"""One declaration per name a kernel can call.

Every callable a kernel can name is an object that answers two questions itself:
``lower_call(ctx, node)`` lowers a call of it (``ctx``: the lowering context, see
:mod:`weft.transpiler.lowering`), and ``assigned_args(node)`` lists the argument expressions the
call assigns (a random draw advances its state variable; Warp's output-argument builtins assign
their trailing arguments), which loops then carry. The lowering asks the object, never its name,
so a user func named ``svd3`` or ``sample_scale`` is an ordinary func. The forms are:

- :class:`Builtin`: a primitive with typing and derivative rules (below);
- :class:`SpecialForm`: a name whose lowering is written beside it in its stdlib module
  (``wp.tid``, the atomics, random draws, ``wp.alloc_local``, transform setters, ...);
- :class:`weft.stdlib.funcs.Function`: a func in the kernel language, user-written or a stdlib builtin
  (``@builtin_func(sigs, outputs=...)``, which declares its signatures and output arguments);
- Python's own callables and weft's types (``abs``, ``float``, ``wp.vec3``, ``wp.vector``, a
  struct class), declared in :mod:`weft.stdlib.constructors`, whose
  :func:`~weft.stdlib.constructors.declaration_of` finds the declaration behind any object.

Primitive builtins
------------------

A builtin is declared as a class used as a namespace::

    @builtin("sin", sigs=["sin(x: Float) -> Float"], resolve=same_float)
    class sin:
        def primal(x):            return call("math.sin", x)
        def adjoint(x, ret, adj): return [adj * call("math.cos", x)]
        def tangent(x, tx, ret):  return tx * call("math.cos", x)

Rules take and return :class:`weft.stdlib.exprs.Ex` values. ``adjoint`` returns one
contribution per argument (``None`` where an argument carries no gradient); the transpiler owns
accumulation. ``tangent`` receives the tangents of the arguments (``None`` for arguments that
carry none) and returns the tangent of the result. A builtin with ``differentiable=False``
has neither rule and passes no gradient.

``resolve(types, attrs)`` returns the result type, or ``None`` when no signature accepts the
argument types; the ``sigs`` strings are shown to the user in that case.
"""
from __future__ import annotations

import re

from ..core import types as T

REGISTRY = {}     # name -> Builtin, every builtin including operators
HOST_CALL = None  # set by weft.runtime.host: runs a declaration called at Python scope
NAMESPACE = {}    # name visible as ``wp.<name>`` inside kernels -> Builtin
ITERATORS = {}    # query value type -> the form ``step(query, index) -> bool`` of ``for`` loops
ITERATOR_STARTS = set()  # declarations whose calls make such queries (``for j in <call>:``)


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
        # derivatives of state the builtin reads besides its arguments (a mesh's points): the
        # adjoint rule runs, for its statements, whenever the result's adjoint is needed and
        # the tangent rule whenever the result has a tangent, even with no derivative in
        # the arguments
        self.own_derivatives = getattr(rules, "own_derivatives", False)
        # builtins that read or write whole arrays (the tile loads and stores): their rules take
        # the adjoint/tangent arrays of their array arguments (``adj_arrays``, ``tan_arrays``),
        # and the analysis records their accesses; ``array_access`` "accumulate" marks an add
        # into an array (not replayed by the adjoint); an effect's tangent writes go through
        # ``effect_tangent(args, tangents, tan_arrays, **attrs)``
        self.array_args = getattr(rules, "array_args", False)
        # (array_args builtins that add into their first array: the tile atomic adds)
        self.accumulates = getattr(rules, "accumulates", False)
        self.array_access = getattr(rules, "array_access", None)
        self.effect_tangent = getattr(rules, "effect_tangent", None)
        self.doc = (rules.__doc__ or "").strip()
        if differentiable and (self.adjoint is None or self.tangent is None):
            raise TypeError(f"builtin {name}: differentiable builtins need adjoint and tangent")
        self.public = public

    def __repr__(self):
        return f"<weft builtin {self.name}>"

    def __call__(self, *args, **kwargs):
        """At Python scope: the builtin applied to weft values (``wp.normalize(v)``)."""
        if not self.public or HOST_CALL is None:
            raise TypeError(f"wp.{self.name}() can only be called inside a kernel or func")
        return HOST_CALL(self, args, kwargs)

    def lower_call(self, ctx, node):
        attrs, named = {}, {}
        for kw in node.keywords:
            if self.attrs_rule is not None and kw.arg in self.attrs_rule:
                attrs[kw.arg] = ctx.static_value(kw.value, f"{self.name}({kw.arg}=...)")
            else:
                named[kw.arg] = kw
        nodes = self.place_keywords(ctx, list(node.args), named) if named else node.args
        return ctx.apply(self, [ctx.expr(a) for a in nodes], node, attrs)

    def param_names(self):
        """The parameter names of each signature (Warp's names: ``pow(x, y)``)."""
        out = []
        for sig in self.sigs:
            m = re.match(r"\s*[\w.]+\((.*?)\)\s*(->|$|\s)", sig)
            if m is not None:
                parts = m.group(1).replace("[", "").replace("]", "").split(",")
                out.append([p.split(":")[0].strip() for p in parts if ":" in p])
        return out

    def place_keywords(self, ctx, args, named):
        """``pow(2.0, y=4.0)``: the keyword arguments put in their positions by the names of
        a signature that has them all right after the positional ones."""
        for names in self.param_names():
            rest = names[len(args):len(args) + len(named)]
            if set(rest) == set(named):
                return args + [named[n].value for n in rest]
        k = next(iter(named.values()))
        raise ctx.fail(k, f"{self.name}() got an unexpected keyword argument '{k.arg}' "
                       f"(signatures: {'; '.join(self.sigs)})")

    def assigned_args(self, node):
        return []


class SpecialForm:
    """A name whose calls its own stdlib module lowers (``lower(ctx, node)``).

    ``assigned(node)`` returns the argument expressions a call assigns; ``lower_assign(ctx,
    target, node)``, when given, lowers ``target = <call>`` as a whole (``i, j = wp.tid()``).
    """

    def __init__(self, name, doc="", lower=None, assigned=None, lower_assign=None, host=False):
        self.name = name
        self.__doc__ = doc
        self._lower = lower
        self._assigned = assigned
        self.lower_assign = lower_assign
        self.host = host  # callable at Python scope (it only computes a value), or a function
        # giving its meaning there

    def __repr__(self):
        return f"<weft special form {self.name}>"

    def __call__(self, *args, **kwargs):
        if callable(self.host):  # its own Python-scope meaning (``wp.static(x)`` is ``x``)
            return self.host(*args, **kwargs)
        if not self.host or HOST_CALL is None:
            raise TypeError(f"wp.{self.name}() can only be called inside a kernel or func")
        return HOST_CALL(self, args, kwargs)

    def lower_call(self, ctx, node):
        if self._lower is None:
            raise ctx.fail(node, f"wp.{self.name} cannot be called here")
        return self._lower(ctx, node)

    def assigned_args(self, node):
        return list(self._assigned(node)) if self._assigned is not None else []


def special_form(name, doc, assigned=None, lower_assign=None, host=False):
    """Declare a special form by decorating its lowering function::

        @special_form("alloc_local", "alloc_local(dtype, size, value=0): a per-thread buffer")
        def alloc_local(ctx, node): ...
    """
    def deco(lower):
        form = SpecialForm(name, doc, lower, assigned, lower_assign, host)
        NAMESPACE[name] = form
        return form
    return deco


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


def numeric_vector(t):
    """Vectors (and quaternions) of any numeric scalar type: Warp's dot, outer, cw_div take
    integer vectors too."""
    return (T.is_vector(t) or T.is_composite(t) and t._wp_kind_ == "quaternion") and \
        numeric_scalar(T.scalar_of(t))


def float_vector(t):
    """Float vectors, and quaternions where vector algebra applies (dot, length, normalize)."""
    return (T.is_vector(t) or T.is_composite(t) and t._wp_kind_ == "quaternion") and \
        T.is_float(T.scalar_of(t))


