"""The forms of the generated code the pass ``cuda_tiles`` reads and writes: its refusal
(:class:`Unsupported`), a tile's static shape and dtype (:class:`Tile`), the calls it spells and
recognises, the static shapes of subscripts and slices, and the checks of a loop over a tile's
elements (:func:`independent`)."""
from __future__ import annotations

import ast
import copy
import dataclasses
import re

import numpy as np

from ..stdlib.exprs import attr_path

#: static shared memory a CUDA block may use without opting in (bytes)
SHARED_LIMIT = 48 * 1024
#: dynamic shared memory a CUDA block may opt in to on the largest GPUs (sm_90: 227 KiB)
SHARED_OPT_IN_MAX = 227 * 1024

_GENERATED_LOOP = re.compile(r"_(e|r|k)\d+(__i\d+)*$")  # (__i: inlined from a func)


class Unsupported(Exception):
    """A tile statement this pass cannot make cooperative (its message says what)."""


@dataclasses.dataclass(frozen=True)
class Tile:
    shape: tuple
    dtype: str  # "float32", ...


def _wk(fn, *args):
    return ast.Call(attr_path(f"_wk.{fn}"), list(args), [])


def _expr_stmt(node):
    return ast.Expr(node)


def _assign(target, value):
    return ast.Assign([ast.Name(target, ast.Store())], value, lineno=0)


def _wk_name(node):
    """``fn`` of a call ``_wk.fn(...)``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == "_wk":
        return node.func.attr
    return None


def _const_int(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _np_dtype(node):
    """``"float32"`` of ``np.float32`` (and ``np.bool_``), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "np":
        return node.attr
    return None


_SCALAR_RESULTS = {"tile_stack_push", "tile_stack_pop", "tile_stack_clear",
                   "tile_sum_scalar", "tile_sum_in_order", "tile_max_scalar", "tile_min_scalar",
                   "tile_lane", "tile_lanes", "tile_lane_value", "tile_lane_at", "tile_lane_comp"}
_EFFECTS = {f"tile_{op}{n}" for op in ("store", "load_adj") for n in (1, 2, 3, 4)} | {
    "tile_store_one", "tile_load_adj_h1", "tile_load_adj_h2", "tile_load_indexed_adj1",
    "tile_load_indexed_adj2"}
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}

def _static_index(node):
    """The index a subscript's slice node spells, when it is made of constants (ints,
    ``int32(c)``, ``...``, slices of them); else None."""
    def const(n):
        if n is None:
            return None
        if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords:
            n = n.args[0]
        v = _const_int(n)
        if v is None:
            raise ValueError
        return v
    try:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for it in items:
            if isinstance(it, ast.Constant) and it.value is Ellipsis:
                out.append(Ellipsis)
            elif isinstance(it, ast.Slice):
                out.append(slice(const(it.lower), const(it.upper), const(it.step)))
            else:
                out.append(const(it))
        return tuple(out)
    except ValueError:
        return None


def _zeros(elem):
    """Offsets 0 for an element's axes (a tile of vectors or matrices)."""
    return [ast.Constant(0) for _ in elem]


def _idx_len(node):
    return len(node.elts) if isinstance(node, ast.Tuple) else 1


def _slice_len(sl, dim):
    """The length of slice ``sl`` of an axis of ``dim`` elements, when the code fixes it:
    constant bounds, or ``lo:lo + n``."""
    lo, hi, step = (None if x is None else x for x in (sl.lower, sl.upper, sl.step))
    st = 1 if step is None else _const_int(step)
    if st is None or st == 0:
        return None
    lo_c = None if lo is None else _const_int(lo)
    hi_c = None if hi is None else _const_int(hi)
    if (lo is None or lo_c is not None) and (hi is None or hi_c is not None):
        return len(range(dim)[lo_c:hi_c:st])
    if st == 1 and isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add) and \
            lo is not None and ast.dump(hi.left) == ast.dump(lo) and \
            _const_int(hi.right) is not None:
        return _const_int(hi.right)
    return None


def _bytes(tile):
    return int(np.prod(tile.shape)) * np.dtype("bool" if tile.dtype == "bool_" else
                                               tile.dtype).itemsize


def _outside_loops(node):
    """The nodes of statement ``node``, not descending into loops inside it."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.For, ast.While)):
            yield from _outside_loops(child)


def _literal_shape(node):
    """The ints of a literal tuple (or int) node, else None."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    dims = tuple(_const_int(d) for d in items)
    return None if None in dims or not dims else dims


def _store(node):
    node = copy.copy(node)
    node.ctx = ast.Store()
    return node


def independent(body, env):
    """Raise :class:`Unsupported` unless each iteration of a loop with ``body`` only writes
    tile elements and names it assigns before reading them (no value carried from one
    iteration to the next, so the lanes may take the iterations in any order)."""
    stored = set()

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ast.For):
                visit_expr(s.iter)
                stored.add(s.target.id if isinstance(s.target, ast.Name) else None)
                visit(s.body)
                continue
            if isinstance(s, ast.If):
                visit_expr(s.test)
                visit(s.body)
                visit(s.orelse)
                continue
            if isinstance(s, ast.Assign):
                visit_expr(s.value)
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        stored.add(t.id)
                    elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                            t.value.id in env:
                        visit_expr(t.slice)
                    else:
                        raise Unsupported("a loop over a tile's elements that writes an array")
                continue
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                if s.target.id not in stored:
                    raise Unsupported("a loop over a tile's elements carrying a value")
                visit_expr(s.value)
                continue
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue
            raise Unsupported(f"the statement '{ast.unparse(s)}' in a loop over a tile's "
                              "elements")

    def visit_expr(node):
        for n in ast.walk(node):
            fn = _wk_name(n)
            if fn is not None and fn.startswith("tile_") and fn not in _SCALAR_RESULTS:
                raise Unsupported(f"'{fn[5:]}' inside a loop over a tile's elements")

    visit(body)
    _first_reads(body, {t.id for s in body for n in ast.walk(s) if isinstance(n, ast.Assign)
                        for t in n.targets if isinstance(t, ast.Name)})


def _first_reads(body, assigned):
    """Raise if a name of ``assigned`` is read before its first assignment, in program order
    (a value carried between iterations)."""
    seen = set()

    def expr(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in assigned \
                    and n.id not in seen:
                raise Unsupported("a loop over a tile's elements carrying a value")

    def stmts(ss):
        for s in ss:
            if isinstance(s, ast.Assign):
                expr(s.value)
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        seen.add(t.id)
                    else:
                        expr(t)
            elif isinstance(s, ast.AugAssign):
                expr(s.value)
                expr(s.target)
            elif isinstance(s, ast.For):
                expr(s.iter)
                if isinstance(s.target, ast.Name):
                    seen.add(s.target.id)
                stmts(s.body)
            elif isinstance(s, ast.If):
                expr(s.test)
                stmts(s.body)
                stmts(s.orelse)
    stmts(body)
