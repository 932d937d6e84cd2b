"""The derivatives of second order (:mod:`.second_order`): the tangent of each math call the
generated code makes, rendered as Python AST from the derivative the vocabulary declares for it
(:mod:`weft.native.vocabulary`: the templates the first-order rules render too,
:mod:`weft.stdlib.derivatives`), and the small AST builders it and the tangent generator share;
also how it reads the calls of tile code (kinds with an argument position, array views) and
keeps a module's comments through the transform.

Rendering: a tangent is an expression or None (zero), and arithmetic on zeros folds (``t * x``
is zero, ``a - t`` is ``a``, a conditional between zeros is zero); a number is ``_w2.like(x, c)``
(the constant at the type of the first argument ``x``), the result ``r`` the call itself, a
``let`` written where used, a function spelled as the call's own target spells it
(``_wk.fm_sin``'s derivative calls ``_wk.fm_cos``); a conditional whose test is a constant
argument of the call (``complement``) is decided when written.
"""
from __future__ import annotations

import ast
import functools

from ..native.vocabulary import CALLS, spelling


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
    return _call("_w2.like", _c(x), ast.Constant(value))


def _c(node):
    """A fresh copy of expression ``node`` (generated trees share no node). Not
    ``copy.deepcopy``, whose generic protocol took a sixth of second order's time."""
    if isinstance(node, list):
        return [_c(n) for n in node]
    if not isinstance(node, ast.AST) or isinstance(node, ast.expr_context):
        return node
    new = node.__class__.__new__(node.__class__)
    for k, v in node.__dict__.items():
        setattr(new, k, _c(v) if isinstance(v, (ast.AST, list)) else v)
    return new


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



_OPS = {ast.Add: _add, ast.Sub: _sub}


@functools.lru_cache(maxsize=None)
def _template(text):
    return ast.parse(text, mode="eval").body


def tangent(name, prim, args, tans):
    """The tangent of ``prim``, a call of ``name`` (an entry of the vocabulary with a
    derivative) on argument nodes ``args`` whose tangents are ``tans`` (None: zero); None when
    it is zero."""
    e = CALLS[name]
    d = e.derivative
    env = dict(zip(d.args, args))
    env["r"] = prim
    render = _Render(env, dict(d.lets), args[0], e.target)
    if d.jvp is not None:
        env.update({f"t_{a}": t for a, t in zip(d.args, tans)})
        return render.ex(_template(d.jvp))
    out = None
    for part, t in zip(d.partials, tans):
        if part is not None and t is not None:
            env["g"] = t
            out = _add(out, render.ex(_template(part)))
    return out


class _Render:
    def __init__(self, env, lets, first, target):
        self.env = env
        self.lets = lets
        self.first = first      # the first argument: its type is the constants'
        self.target = target

    def ex(self, node):
        kind = type(node)
        if kind is ast.Name:
            if node.id in self.lets:
                return self.ex(_template(self.lets[node.id]))
            value = self.env[node.id]
            return None if value is None else _c(value)
        if kind is ast.Constant:
            return _like(self.first, node.value)
        if kind is ast.UnaryOp:
            if isinstance(node.operand, ast.Constant):
                return _like(self.first, -node.operand.value)
            value = self.ex(node.operand)
            return None if value is None else _neg(value)
        if kind is ast.BinOp:
            a, b = self.ex(node.left), self.ex(node.right)
            op = _OPS.get(type(node.op))
            if op is not None:
                return op(a, b)
            if a is None or (b is None and isinstance(node.op, ast.Mult)):
                return None  # zero times anything, zero over anything
            return _bin(a, node.op, b)
        if kind is ast.Call:
            return _call(spelling(node.func.id, self.target), *[self.ex(a) for a in node.args])
        if kind is ast.Compare:
            return ast.Compare(self.ex(node.left), node.ops,
                               [self.ex(c) for c in node.comparators])
        if kind is ast.IfExp:
            test = self.env.get(node.test.id) if isinstance(node.test, ast.Name) else None
            if isinstance(test, ast.Constant):  # a constant argument: decided here
                return self.ex(node.body if test.value else node.orelse)
            a, b = self.ex(node.body), self.ex(node.orelse)
            if a is None and b is None:
                return None
            return ast.IfExp(self.ex(node.test), a if a is not None else _like(self.first, 0.0),
                             b if b is not None else _like(self.first, 0.0))
        raise ValueError(f"derivative template: {ast.unparse(node)}")


# ---------------------------------------------------------------------- calls in tile code

def _kind_at(kind, default):
    """``(kind, argument position)`` of a kind written ``linear:2`` (``default`` without)."""
    if kind is not None and ":" in kind:
        k, at = kind.split(":")
        return k, int(at)
    return kind, default


#: the array methods generated tile code calls: ``x.reshape(shape)`` (a view of ``x``: the two
#: names are active together, and the tangent is the same view of the tangent)
_METHODS = ("reshape",)


def _method(e):
    """``(array expression, method)`` when call ``e`` is a method call of a local array
    (``_tm0.reshape(16)``), else None."""
    f = e.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
            f.value.id not in _MODULES:
        return f.value, f.attr
    return None


_MODULES = ("np", "_wk", "_w2", "math", "cuda", "numba")


def _root(t):
    """The name an array expression (``a``, ``a[i]``) writes into."""
    while isinstance(t, ast.Subscript):
        t = t.value
    return t


# ---------------------------------------------------------------------- module text

_COMMENT = "_weft_comment"


def _keep_comments(source):
    """The generated code's comments (``# file.py:12: the source line``) as marker statements,
    so they survive the transform; :func:`_restore_comments` turns them back."""
    out = []
    for line in source.splitlines():
        body = line.lstrip()
        if body.startswith("# ") and line.startswith(" "):
            line = line[:len(line) - len(body)] + f"{_COMMENT}({body[2:]!r})"
        out.append(line)
    return "\n".join(out) + "\n"


def _restore_comments(text):
    out = []
    for line in text.splitlines():
        body = line.lstrip()
        if body.startswith(_COMMENT + "("):
            line = line[:len(line) - len(body)] + "# " + ast.literal_eval(
                body[len(_COMMENT) + 1:-1])
        out.append(line)
    return "\n".join(out) + "\n"
