"""The adjoint variables of the reverse sweep (``adj_<name>``): which IR values have one
(:func:`has_adjoint`), and where the sweep initialises each (:func:`initialised`: at its first
use, folded into the first accumulation where that is exact).
"""
from __future__ import annotations

import ast
import copy

from ..stdlib import ir
from .codegen import assign, diff
from .prune import names_in


def has_adjoint(v):
    """A variable (not a constant) that carries a derivative: it has an ``adj_`` variable."""
    return isinstance(v, ir.Var) and diff(v)


def initialised(inits, sweep):
    """The reverse sweep ``sweep`` with its adjoints initialised (``inits``: ``(name, zero
    node)`` pairs, the zero -0.0, see :func:`.codegen.adj_zero_node`) where each is first
    used: the first statement of the sweep's top level that names ``adj_x`` either becomes its
    initialisation (``adj_x = adj_x + c`` is ``adj_x = c``, exactly: -0.0 is the identity of
    IEEE addition; components it leaves alone take the zero) or, when it is anything else (a
    branch or loop accumulating it, a call reading it), is preceded by ``adj_x = -0.0``. An
    adjoint the sweep never names gets no initialisation."""
    wanted = {n for n, _ in inits}
    first = {}  # adjoint name -> index of the first statement of the sweep naming it
    for k, st in enumerate(sweep):
        for n in names_in(st) & wanted:
            first.setdefault(n, k)
    before = {}  # index in the sweep -> initialisations placed before that statement
    for n, zero_node in dict(inits).items():
        k = first.get(n)
        if k is None:
            continue
        st = sweep[k]
        value = None
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name) and st.targets[0].id == n:
            value = _from_zero(st.value, n, zero_node)
        if value is not None:
            st.value = value
        else:  # under the statement's source line
            before.setdefault(k, []).append(assign(n, zero_node, getattr(st, "_weft_loc", None)))
    out = []
    for k, st in enumerate(sweep):
        out += before.get(k, [])
        out.append(st)
    return out


def _zero_part(node, n, zero):
    """The part of ``n``'s zero value that ``node`` reads when it is ``n`` or a constant index
    path into it (``adj_x[1]``, ``adj_x[0][2]``), else None."""
    if isinstance(node, ast.Name):
        return zero if node.id == n else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, int):
        whole = _zero_part(node.value, n, zero)
        if isinstance(whole, ast.Tuple) and 0 <= node.slice.value < len(whole.elts):
            return whole.elts[node.slice.value]
    return None


def _from_zero(e, n, zero):
    """Accumulated value ``e`` of ``n`` computed from ``n``'s zero value: ``n + c`` is ``c``
    (-0.0 + c is c, bit for bit), a component ``n[i]`` left alone is the zero; None when ``n``
    is read otherwise."""
    part = _zero_part(e, n, zero)
    if part is not None:
        return copy.deepcopy(part)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and \
            _zero_part(e.left, n, zero) is not None and n not in names_in(e.right):
        return e.right
    if isinstance(e, ast.Tuple):
        elts = [_from_zero(x, n, zero) for x in e.elts]
        return None if None in elts else ast.Tuple(elts, ast.Load())
    return None if n in names_in(e) else e
