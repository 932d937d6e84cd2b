"""Shared machinery of the three code generators (forward, adjoint, tangent).

A generator turns IR statements into Python ``ast`` statements. Every emitted statement carries
``_weft_loc`` (the user's ``file:line``), which the emit step prints as a trailing comment.
"""
from __future__ import annotations

import ast

from .. import types as T
from ..errors import InternalError
from . import ir
from .exprs import Builder, Ex, const, name, zero


def assign(target, value_node, loc=None):
    s = ast.Assign([ast.Name(target, ast.Store())] if isinstance(target, str) else [target],
                   value_node, lineno=0)
    s._weft_loc = loc
    return s


def tag(stmts, loc):
    for s in stmts:
        if getattr(s, "_weft_loc", None) is None:
            s._weft_loc = loc
    return stmts


def is_none(n):
    return ast.Compare(name(n), [ast.Is()], [ast.Constant(None)])


def not_none(n):
    return ast.Compare(name(n), [ast.IsNot()], [ast.Constant(None)])


def index_node(parts):
    """Subscript slice for integer index nodes ``parts``."""
    if len(parts) == 1:
        return parts[0]
    return ast.Tuple(list(parts), ast.Load())


def component_indices(dtype):
    """Trailing numpy indices of each flat component of one element of ``dtype``."""
    shape = T.element_shape(dtype)
    if not shape:
        return [()]
    if len(shape) == 1:
        return [(i,) for i in range(shape[0])]
    return [(i, j) for i in range(shape[0]) for j in range(shape[1])]


class Gen:
    """Base: operands to expressions, statement dispatch, builders for temporaries."""

    def __init__(self, fir, names):
        self.fir = fir
        self.names = names
        self.private = set()   # arrays accumulated into per-thread copies (CPU kernels)
        self.copies = {}
        for s in ir.walk(fir.body):
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Copy) and isinstance(
                    s.expr.src, ir.Var):
                self.copies[s.dst] = s.expr.src

    def ex(self, o):
        if isinstance(o, ir.Var):
            return Ex(name(o.name), o.type)
        if isinstance(o, ir.Const):
            return const(o.value, o.type)
        raise InternalError(f"bad operand {o!r}")

    def idx_nodes(self, idx):
        out = []
        for i in idx:
            if isinstance(i, ir.Const):
                out.append(ast.Constant(int(i.value)))
            else:
                out.append(name(i.name))
        return out

    def build(self, fn, loc):
        """Run ``fn()`` (which builds Ex values) with a Builder; returns (stmts, result)."""
        b = Builder(self.names)
        with b.active():
            result = fn()
        return tag(b.stmts, loc), result

    def load_element(self, arr_name, idx_nodes, dtype):
        """Expression reading one element (scalar or composite) of ``arr_name``."""
        comps = []
        for extra in component_indices(dtype):
            sl = index_node(list(idx_nodes) + [ast.Constant(e) for e in extra])
            comps.append(ast.Subscript(name(arr_name), sl, ast.Load()))
        if not T.is_composite(dtype):
            return Ex(comps[0], dtype)
        return Ex(ast.Tuple(comps, ast.Load()), dtype)

    def store_element(self, arr_name, idx_nodes, value, loc, op=None):
        """Statements writing (or, with ``op=ast.Add()``, accumulating) one element."""
        out = []
        value = value if not T.is_composite(value.type) else value
        items = value.items() if T.is_composite(value.type) else [value]
        for extra, item in zip(component_indices(value.type), items):
            sl = index_node(list(idx_nodes) + [ast.Constant(e) for e in extra])
            target = ast.Subscript(name(arr_name), sl, ast.Store())
            if op is None:
                s = ast.Assign([target], item.node, lineno=0)
            else:
                s = ast.AugAssign(target, op, item.node)
            s._weft_loc = loc
            out.append(s)
        return out

    def atomic_element(self, fn, arr_name, idx_nodes, value, loc, dst=None, compare=None):
        """``_wk.atomic_<fn>`` per component; optionally bind the old value to ``dst``.

        Arrays in ``self.private`` (CPU kernels that only accumulate into them) add into the
        calling thread's private copy instead, when the launch allotted one."""
        if arr_name in self.private and fn in ("add", "sub") and dst is None:
            op = ast.Add() if fn == "add" else ast.Sub()
            own = self.store_element(f"_acc_{arr_name}", [name("_w")] + list(idx_nodes), value,
                                     loc, op=op)
            shared = self._atomics(fn, arr_name, idx_nodes, value, loc, dst)
            rows = ast.Subscript(ast.Attribute(name(f"_acc_{arr_name}"), "shape", ast.Load()),
                                 ast.Constant(0), ast.Load())
            cond = ast.BoolOp(ast.And(), [name(f"_pv_{arr_name}"), ast.Compare(
                name("_w"), [ast.Lt()], [rows])])
            st = ast.If(cond, own, shared)
            st._weft_loc = loc
            return [st]
        return self._atomics(fn, arr_name, idx_nodes, value, loc, dst, compare)

    def _atomics(self, fn, arr_name, idx_nodes, value, loc, dst, compare=None):
        out = []
        olds = []
        items = value.items() if T.is_composite(value.type) else [value]
        for extra, item in zip(component_indices(value.type), items):
            parts = list(idx_nodes) + [ast.Constant(e) for e in extra]
            idx = parts[0] if len(parts) == 1 else ast.Tuple(parts, ast.Load())
            args = [name(arr_name), idx, item.node] if compare is None else \
                [name(arr_name), idx, compare.node, item.node]
            call = ast.Call(ast.Attribute(name("_wk"), f"atomic_{fn}", ast.Load()), args, [])
            olds.append(call)
        if dst is None:
            for c in olds:
                s = ast.Expr(c)
                s._weft_loc = loc
                out.append(s)
        elif T.is_composite(value.type):
            out.append(assign(dst, ast.Tuple(olds, ast.Load()), loc))
        else:
            out.append(assign(dst, olds[0], loc))
        return out

    # ---------------------------------------------------------------------- own-index analysis
    def tid_axis(self, v):
        seen = 0
        while isinstance(v, ir.Var) and seen < 64:
            if v in self.fir.tid_vars:
                return ("tid", self.fir.tid_vars[v])
            v = self.copies.get(v)
            seen += 1
        return None

    def own_index(self, arr, idx):
        """True when ``arr[idx]`` is provably the calling thread's own element."""
        if self.fir.kind != "kernel" or arr not in self.fir.params:
            return False
        axes = [self.tid_axis(i) for i in idx]
        if any(a is None for a in axes):
            return False
        axes = [a[1] for a in axes]
        if axes == [None]:
            return arr.type.ndim == 1
        return (None not in axes and sorted(axes) == list(range(self.fir.tid_dims))
                and len(axes) == arr.type.ndim)


def zero_node(t):
    return zero(t).node


def adj_zero_node(t):
    """The initial value of an adjoint: -0.0, the exact identity of IEEE addition, so that
    LLVM folds the first accumulation ``-0.0 + x`` into ``x`` (``0.0 + x`` is not ``x`` for
    ``x = -0.0`` and stays an add without fast-math)."""
    from .exprs import const
    return const(-0.0, t).node
