"""The vocabulary's derivatives (:mod:`weft.native.vocabulary`) as first-order rules.

:func:`adjoint` and :func:`tangent` render the derivative templates of a call of the vocabulary
(``"np.sin"``) into typed expressions (:class:`~.exprs.Ex`) for a builtin's adjoint and tangent
rules; vectors and matrices componentwise. Second order renders the same templates
(:mod:`weft.transpiler.second_order_rules`), so each derivative is written once.

Rendering, with the arguments, the result and the seeds bound to names first: a number is a
constant of the first argument's type, ``cos(x)`` a call of ``np.cos`` (spelled for the
target by :func:`~.exprs.call`), arithmetic is :class:`~.exprs.Ex` arithmetic (structural zeros
fold), a ``let`` is bound to a name where first used, a conditional is :func:`~.exprs.select`
(a call in a branch bound to a name first), decided when written where its test is a constant
of the call (``complement=True``).
"""
from __future__ import annotations

import ast
import functools

from ..core import types as T
from ..native.vocabulary import CALLS
from .exprs import Ex, call, const, mapc, select

_OPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__"}


@functools.lru_cache(maxsize=None)
def template(text):
    """A derivative template's expression (parsed once)."""
    return ast.parse(text, mode="eval").body


def adjoint(name, args, ret, adj, **consts):
    """The adjoint contribution of each of ``args`` (None: none) to a call of ``name`` whose
    result ``ret`` has adjoint ``adj``; ``consts``: the call's constant arguments by name (not
    in ``args``, which are the others, in order)."""
    d = CALLS[name].derivative
    out, lets = [], {}
    for a, part in zip(d.args, d.partials):
        if a in consts:
            continue
        if part is None:
            out.append(None)
        elif part == "g":  # the seed itself
            out.append(adj)
        else:
            out.append(_each(d, part, args, ret, {"g": adj}, consts, lets))
    return out


def tangent(name, args, tans, ret, **consts):
    """The tangent of a call of ``name`` along ``tans``, the tangents of ``args``: the
    template ``jvp``, or the sum of the partials with the tangents as seeds."""
    d = CALLS[name].derivative
    variables = [a for a in d.args if a not in consts]
    if d.jvp is not None:
        return _each(d, d.jvp, args, ret, {f"t_{a}": t for a, t in zip(variables, tans)},
                     consts, {})
    total, lets = None, {}
    partials = [p for a, p in zip(d.args, d.partials) if a not in consts]
    for part, t in zip(partials, tans):
        if part is not None:
            term = t if part == "g" else _each(d, part, args, ret, {"g": t}, consts, lets)
            total = term if total is None else total + term
    return total


def _each(d, text, args, ret, seeds, consts, lets):
    """``text`` rendered per component (scalars broadcast) on the values bound to names;
    ``lets``: the lets bound so far, shared by the partials of one rule."""
    names = [a for a in d.args if a not in consts] + ["r"] + list(seeds)
    values = [v.atom() for v in list(args) + [ret] + list(seeds.values())]

    def one(*comps):
        env = dict(zip(names, comps))
        env.update(consts)
        key = tuple(ast.dump(c.node) for c in comps[:len(comps) - len(seeds)])
        return _Render(env, d.lets, lets.setdefault(key, {}), comps[0].type).ex(template(text))
    return mapc(one, *values)


class _Render:
    def __init__(self, env, lets, bound, scalar_type):
        self.env = env
        self.lets = dict(lets)
        self.bound = bound  # let name -> its value, bound to a name (for these components)
        self.type = scalar_type

    def ex(self, node):
        kind = type(node)
        if kind is ast.Name:
            if node.id in self.lets:
                if node.id not in self.bound:
                    self.bound[node.id] = self.ex(template(self.lets[node.id])).atom()
                return self.bound[node.id]
            return self.env[node.id]
        if kind is ast.Constant:
            return const(node.value, self.type)
        if kind is ast.UnaryOp:
            if isinstance(node.operand, ast.Constant):
                return const(-node.operand.value, self.type)
            return -self.ex(node.operand)
        if kind is ast.BinOp:
            return getattr(self.ex(node.left), _OPS[type(node.op)])(self.ex(node.right))
        if kind is ast.Call:
            return call("np." + node.func.id, *[self.ex(a) for a in node.args])
        if kind is ast.Compare:
            return Ex(ast.Compare(self.ex(node.left).node, node.ops,
                                  [self.ex(c).node for c in node.comparators]), T.bool)
        if kind is ast.IfExp:
            test = node.test
            if isinstance(test, ast.Name) and isinstance(self.env.get(test.id), bool):
                return self.ex(node.body if self.env[test.id] else node.orelse)
            return select(self.ex(test), self._branch(node.body), self._branch(node.orelse))
        raise ValueError(f"derivative template: {ast.unparse(node)}")

    def _branch(self, node):
        value = self.ex(node)
        return value.atom() if isinstance(node, ast.Call) else value
