"""Pass ``index_wraps``: narrow integer temporaries that only index arrays are left in 64 bits.

Invariant: in every generated function, a temporary ``_tN`` assigned ``int32(a op b)`` (``op``
in + - *, the wrap :func:`weft.stdlib.exprs.wrap_int` writes) whose every use is an array index,
or an operand of + - * inside another wrap of the same width, is assigned ``a op b``: an index
differs from Warp's only where the 32-bit arithmetic overflowed, where Warp's index is out of
range. Every other integer keeps C's wrap-around. The functions are also tidied as
:class:`~.assemble.Tidy` does (an empty block gets ``pass``; the unparser splits long tuple
displays; marked ``weft_tidy`` so that ``assemble`` does not walk them again). Not run for
Python-scope calls (``pipeline.HOST``): plain Python has no LLVM to tell.
"""
from __future__ import annotations

import ast

from .assemble import BLOCKS
from .prune import _FIELDS, _LEAVES, _node_fields, _statements


_WRAPS = ("int32", "int16", "int8")
_MODULAR = (ast.Add, ast.Sub, ast.Mult)


def _wrap_of(e):
    """The wrap's name when ``e`` is ``int32(a op b)`` with ``op`` in + - * (see
    :func:`.exprs.wrap_int`), else None."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in _WRAPS and \
            len(e.args) == 1 and not e.keywords and isinstance(e.args[0], ast.BinOp) and \
            isinstance(e.args[0].op, _MODULAR):
        return e.func.id
    return None


def _index(fdef):
    """One walk of ``fdef``: the parent of each temporary (``_tN``), tuple and binary
    operation, and the stores and loads of temporaries. Separate passes (three ``ast.walk``, a
    ``NodeTransformer``, ``fix_missing_locations``) took half of a cold transpile; names and
    constants are met as children, not pushed (half of the nodes)."""
    parents, stores, loads = {}, [], []
    stack = [fdef]
    Name, Constant, Tuple, BinOp, AST = ast.Name, ast.Constant, ast.Tuple, ast.BinOp, ast.AST
    while stack:
        node = stack.pop()
        kind = type(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _node_fields(kind)
        for field in fields:   # ast.iter_child_nodes less contexts and operators
            v = getattr(node, field, None)
            if type(v) is not list:
                if not isinstance(v, AST) or isinstance(v, _LEAVES):
                    continue
                v = (v,)
            for child in v:
                ck = type(child)
                if ck is Name:
                    if child.id.startswith("_t") and child.id[2:].isdigit():
                        parents[child] = node
                        (stores if isinstance(child.ctx, ast.Store) else loads).append(child)
                elif ck is Constant:
                    continue
                elif isinstance(child, AST):
                    if ck is Tuple or ck is BinOp:
                        parents[child] = node
                    stack.append(child)
    return parents, stores, loads


def _wrapped_temporary(st):
    """Whether statement ``st`` is ``_tN = int32(a op b)`` (what the pass may narrow)."""
    if type(st) is not ast.Assign or len(st.targets) != 1:
        return False
    t = st.targets[0]
    return type(t) is ast.Name and t.id.startswith("_t") and _wrap_of(st.value) is not None


def drop_index_wraps(fdef):
    """Narrow integer results that only index arrays are left in 64 bits.

    ``i = tid * 2`` in an int32 kernel is generated as ``_t1 = int32(tid * int32(2))``: the wrap
    to 32 bits hides from LLVM that the index is ``2 * tid >= 0``, so every array access keeps
    Numba's negative-index test and the loop its 32-bit truncations (about 8% of the cloth
    spring kernel). A temporary ``_tN`` whose every use is an array index, or an operand of
    + - * inside another wrap of the same width (where the inner wrap changes nothing, arithmetic
    being modular), loses its wrap. An index then differs from Warp's only where the 32-bit
    arithmetic overflowed, where Warp's index is out of range. The same walk tidies ``fdef``
    as :class:`~.assemble.Tidy` would: an empty block gets ``pass`` (the unparser splits long
    tuple displays as it writes them). A function with no such temporary is not walked
    further than its statements."""
    statements = _statements(fdef.body)
    for st in [fdef] + statements:
        if isinstance(st, BLOCKS) and not st.body:
            st.body.append(ast.Pass())
    fdef.weft_tidy = True
    if not any(_wrapped_temporary(st) for st in statements):
        return fdef
    parents, stores, loads = _index(fdef)
    assigns, other = {}, set()
    for node in stores:
        st = parents[node]
        if isinstance(st, ast.Assign) and st.targets == [node] and _wrap_of(st.value):
            assigns.setdefault(node.id, []).append(st)
        else:
            other.add(node.id)

    def index_use(node):
        up = parents.get(node)
        if isinstance(up, ast.Tuple) and isinstance(parents.get(up), ast.Subscript):
            node, up = up, parents[up]
        return isinstance(up, ast.Subscript) and up.slice is node

    def modular_use(node, wrap):
        up = parents.get(node)
        while isinstance(up, ast.BinOp) and isinstance(up.op, _MODULAR):
            node, up = up, parents.get(up)
        return _wrap_of(up) == wrap and up.args[0] is node

    uses = {}
    for node in loads:
        if node.id in assigns:
            uses.setdefault(node.id, []).append(node)
    for name_, sts in assigns.items():
        wraps = {_wrap_of(st.value) for st in sts}
        if name_ in other or len(wraps) != 1 or name_ not in uses:
            continue
        wrap = wraps.pop()
        if all(index_use(u) or modular_use(u, wrap) for u in uses[name_]):
            for st in sts:
                st.value = st.value.args[0]
    return fdef


def run(state):
    state.defs = [drop_index_wraps(d) if isinstance(d, ast.FunctionDef) else d
                  for d in state.defs]
    return state
