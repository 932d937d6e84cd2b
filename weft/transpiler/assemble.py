"""Pass ``assemble``: the generated functions as one module's source text.

Invariant: ``state.source`` is a complete, importable Python module whose text depends only on
the input (deterministic), importing only math, numpy, numba, weft's helper module of the
target and the ABI classes; every group of statements is preceded by the user's source line it
came from (``# file.py:LINE: text``); every block has a statement (an empty loop body becomes
``pass``). It ends with ``WEFT_ABI``, the :class:`~.abi.KernelABI` of each kernel. This is the
only place that calls ``ast.unparse``'s machinery.
"""
from __future__ import annotations

import ast
import linecache
import os

from ..core.version import __version__
from .targets import TARGETS

SCALARS = ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float32", "float64")


class _Unparser(ast._Unparser):
    """``ast.unparse`` writing, above each statement that starts a new source line, the line
    (``# spring.py:22: x_out[tid] = ...``)."""

    def __init__(self):
        super().__init__()
        self._loc = None

    def get_type_comment(self, node):
        """Generated code has no type comments (and statements made by rules may have no
        ``lineno``, which the base class reads)."""
        return None

    def traverse(self, node):
        loc = getattr(node, "_weft_loc", None) if isinstance(node, ast.stmt) else None
        if loc is not None and (loc.filename, loc.lineno) != self._loc:
            self._loc = (loc.filename, loc.lineno)
            text = linecache.getline(loc.filename, loc.lineno).strip()
            self.fill(f"# {loc.comment()}" + (f": {text}" if text else ""))
        if isinstance(node, ast.FunctionDef):
            self._loc = None
        super().traverse(node)


_BLOCKS = (ast.If, ast.For, ast.While, ast.FunctionDef)  # statements whose body may not be empty


class _Tidy(ast.NodeTransformer):
    """Every block gets a statement (``pass``), and tuple displays of more than 30 items become
    sums of tuples: CPython compiles a longer display through a list, and Numba's rewrite of
    that bytecode fails on a variable assigned twice (a 6x6 spatial matrix in an adjoint)."""

    LIMIT = 30

    def generic_visit(self, node):
        super().generic_visit(node)
        for fieldname in ("body", "orelse"):
            block = getattr(node, fieldname, None)
            if isinstance(block, list) and fieldname == "body" and not block and \
                    isinstance(node, _BLOCKS):
                block.append(ast.Pass())
        return node

    def visit_Tuple(self, node):
        self.generic_visit(node)
        if len(node.elts) <= self.LIMIT or not isinstance(node.ctx, ast.Load):
            return node
        return self.split(node)

    @classmethod
    def split(cls, node):
        chunks = [ast.Tuple(node.elts[i:i + cls.LIMIT], ast.Load())
                  for i in range(0, len(node.elts), cls.LIMIT)]
        out = chunks[0]
        for c in chunks[1:]:
            out = ast.BinOp(out, ast.Add(), c)
        return ast.copy_location(out, node)


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
    """One walk of ``fdef``: each node's parent, and the stores and loads of temporaries
    (``_tN``); on the way, what :class:`_Tidy` does (an empty block gets ``pass``, a long
    tuple display becomes a sum). Separate passes (three ``ast.walk``, a ``NodeTransformer``,
    ``fix_missing_locations``) took half of a cold transpile."""
    parents, stores, loads = {}, [], []
    stack = [fdef]
    tuples = []
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            stack.append(child)
        kind = type(node)
        if kind is ast.Name:
            if node.id.startswith("_t") and node.id[2:].isdigit():
                (stores if isinstance(node.ctx, ast.Store) else loads).append(node)
        elif kind is ast.Tuple:
            if len(node.elts) > _Tidy.LIMIT and isinstance(node.ctx, ast.Load):
                tuples.append(node)
        elif kind in _BLOCKS and not node.body:
            node.body.append(ast.Pass())
    for node in reversed(tuples):   # the walk meets a tuple before the tuples inside it
        up = parents[node]
        new = _Tidy.split(node)
        for name, value in ast.iter_fields(up):
            if value is node:
                setattr(up, name, new)
            elif isinstance(value, list):
                value[:] = [new if v is node else v for v in value]
        parents[new] = up
    return parents, stores, loads


def drop_index_wraps(fdef):
    """Narrow integer results that only index arrays are left in 64 bits.

    ``i = tid * 2`` in an int32 kernel is generated as ``_t1 = int32(tid * int32(2))``: the wrap
    to 32 bits hides from LLVM that the index is ``2 * tid >= 0``, so every array access keeps
    Numba's negative-index test and the loop its 32-bit truncations (about 8% of the cloth
    spring kernel). A temporary ``_tN`` whose every use is an array index, or an operand of
    + - * inside another wrap of the same width (where the inner wrap changes nothing, arithmetic
    being modular), loses its wrap. An index then differs from Warp's only where the 32-bit
    arithmetic overflowed, where Warp's index is out of range. The same walk tidies ``fdef``
    as :class:`_Tidy` would (see :func:`_index`)."""
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


def unparse(node):
    return _Unparser().visit(_Tidy().visit(node))


def header(origin, target):
    what = {"cpu": "the CPU (each kernel with threads, and as k__fwd_serial without)",
            "cuda": "CUDA", "host": "plain Python (a call at Python scope)"}[target.name]
    doc = ast.Expr(ast.Constant(
        f"Generated by weft {__version__} from {origin} for {what}.\n\n"
        "Do not edit: regenerate it with `weft transpile`. It needs numpy, numba and weft.\n"))
    # float16 values are float32 numbers rounded to half precision (Numba has no CPU float16)
    scalars = [ast.ImportFrom("numpy", [ast.alias(s) for s in SCALARS], 0),
               ast.ImportFrom("weft.transpiler.abi", [ast.alias("KernelABI"),
                                                      ast.alias("ParamABI")], 0),
               ast.Assign([ast.Name("bool", ast.Store())], ast.Name("bool_", ast.Load()),
                          lineno=0),
               ast.Assign([ast.Name("float16", ast.Store())], ast.Attribute(
                   ast.Name("_wk", ast.Load()), "round_f16", ast.Load()), lineno=0)]
    return [doc] + target.imports() + scalars


def _geometry_binding(target, text):
    """``_wk.use_geometry()`` for a CPU module that calls geometry queries (``text``: its
    definitions): the helpers bind them on first use, which must happen here, at the module's
    import, not while Numba types a kernel (bound from inside Numba's compile, the queries'
    globals were not found)."""
    if target.helpers_module != "helpers" or "_wk.geo_" not in text:
        return []
    return [ast.Expr(ast.Call(ast.Attribute(ast.Name("_wk", ast.Load()), "use_geometry",
                                            ast.Load()), [], []))]


def module_source(state):
    """The module's text. The definitions are changed in place (``drop_index_wraps``, the
    tidying of :func:`unparse`): nothing reads them after this pass."""
    origin = ", ".join(sorted({os.path.basename(k.parsed().filename) for k in state.roots}))
    target = TARGETS[state.options.targets[0]]
    defs = [drop_index_wraps(d) if isinstance(d, ast.FunctionDef) else _Tidy().visit(d)
            for d in state.defs]
    abis = ast.Dict([ast.Constant(k) for k in state.abis],
                    [ast.parse(repr(a), mode="eval").body for a in state.abis.values()])
    text = _text(defs + [ast.Assign([ast.Name("WEFT_ABI", ast.Store())], abis, lineno=0)])
    # the unparser's own junction: a blank line before a definition
    gap = "\n\n" if defs and isinstance(defs[0], (ast.FunctionDef, ast.ClassDef)) else "\n"
    return _text(header(origin, target) + _geometry_binding(target, text)) + gap + text + "\n"


def _text(statements):
    """Tidied statements as text (the unparser reads no locations)."""
    return _Unparser().visit(ast.Module(statements, []))


def run(state):
    state.source = module_source(state)
    return state
