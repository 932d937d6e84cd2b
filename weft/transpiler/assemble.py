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
import builtins
import hashlib
import linecache
import os

from ..core.version import __version__
from ..native.vocabulary import SCALAR_CASTS
from .targets import TARGETS



_HOW = {}  # node class -> (the _Unparser method writing it, whether it is a statement)


class _Unparser(ast._Unparser):
    """``ast.unparse`` writing, above each statement that starts a new source line, the line
    (``# spring.py:22: x_out[tid] = ...``)."""

    def __init__(self, twins=()):
        super().__init__()
        self._loc = None
        self.twins = twins    # ids of the loop bodies held twice (link_twins)
        self._written = {}    # (body id, indent, location before) -> (body, text, location after)
        self._in_def = 0      # the depth of function definitions being written

    def get_type_comment(self, node):
        """Generated code has no type comments (and statements made by rules may have no
        ``lineno``, which the base class reads)."""
        return None

    def traverse(self, node):
        kind = type(node)
        if kind is ast.Name:  # half of the nodes: written here, not by a method
            self._source.append(node.id)
            return
        if kind is list:
            for item in node:
                self.traverse(item)
            return
        how = _HOW.get(kind)
        if how is None:
            how = _HOW[kind] = (getattr(_Unparser, "visit_" + kind.__name__,
                                        ast.NodeVisitor.generic_visit),
                                issubclass(kind, ast.stmt))
        if how[1]:
            loc = getattr(node, "_weft_loc", None)
            if loc is not None and (loc.filename, loc.lineno) != self._loc:
                self._loc = (loc.filename, loc.lineno)
                text = linecache.getline(loc.filename, loc.lineno).strip()
                self.fill(f"# {loc.comment()}" + (f": {text}" if text else ""))
            if kind is ast.FunctionDef:
                self._loc = None
                self._in_def += 1
                how[0](self, node)
                self._in_def -= 1
                return
        how[0](self, node)

    # The nodes generated code is made of, written as the base class writes them, without its
    # context managers and its lookups by operator name (they took half of the text's time).
    def fill(self, text=""):
        src = self._source
        if src:
            src.append("\n")
        src.append("    " * self._indent + text)

    def visit_Name(self, node):
        self._source.append(node.id)

    def visit_Constant(self, node):
        value = node.value
        kind = type(value)
        if kind is float:
            if node.kind == "u":
                self._source.append("u")
            self._source.append(repr(value).replace("inf", _INFSTR).replace("nan", _NANSTR))
        elif kind is int or kind is bool or value is None:
            if node.kind == "u":
                self._source.append("u")
            self._source.append(repr(value))
        else:
            super().visit_Constant(node)

    def visit_Assign(self, node):
        src = self._source
        if src:  # (fill)
            src.append("\n")
        src.append("    " * self._indent)
        for target in node.targets:
            if type(target) is ast.Name:
                src.append(target.id)
            else:
                self._precedences[target] = _P.TUPLE
                self.traverse(target)
            src.append(" = ")
        self.traverse(node.value)

    def _block(self, body):
        self._source.append(":")
        self._indent += 1
        key = id(body)
        if key in self.twins:  # a loop body two functions hold: its text, written once
            known = self._written.get((key, self._indent, self._loc))
            if known is not None:
                self._source.extend(known[1])
                self._loc = known[2]
            else:
                start, loc = len(self._source), self._loc
                self.traverse(body)
                self._written[(key, self._indent, loc)] = (body, self._source[start:],
                                                           self._loc)
        else:
            self.traverse(body)
        self._indent -= 1

    def visit_If(self, node):
        self.fill("if ")
        self.traverse(node.test)
        self._block(node.body)
        while node.orelse and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            self.fill("elif ")
            self.traverse(node.test)
            self._block(node.body)
        if node.orelse:
            self.fill("else")
            self._block(node.orelse)

    def visit_For(self, node):
        self.fill("for ")
        self._precedences[node.target] = _P.TUPLE
        self.traverse(node.target)
        self._source.append(" in ")
        self.traverse(node.iter)
        self._block(node.body)
        if node.orelse:
            self.fill("else")
            self._block(node.orelse)

    def visit_BinOp(self, node):
        op, prec, left, right = _BINOPS[node.op.__class__]
        precs = self._precedences
        parens = precs.get(node, _P.TEST) > prec
        if parens:
            self._source.append("(")
        precs[node.left] = left
        self.traverse(node.left)
        self._source.append(op)
        precs[node.right] = right
        self.traverse(node.right)
        if parens:
            self._source.append(")")

    def visit_UnaryOp(self, node):
        op = self.unop[node.op.__class__.__name__]
        prec = self.unop_precedence[op]
        parens = self._precedences.get(node, _P.TEST) > prec
        if parens:
            self._source.append("(")
        self._source.append(op)
        if prec is not _P.FACTOR:
            self._source.append(" ")
        self._precedences[node.operand] = prec
        self.traverse(node.operand)
        if parens:
            self._source.append(")")

    def visit_Compare(self, node):
        precs = self._precedences
        parens = precs.get(node, _P.TEST) > _P.CMP
        if parens:
            self._source.append("(")
        precs[node.left] = _CMP_NEXT
        for e in node.comparators:
            precs[e] = _CMP_NEXT
        self.traverse(node.left)
        for o, e in zip(node.ops, node.comparators):
            self._source.append(" " + self.cmpops[o.__class__.__name__] + " ")
            self.traverse(e)
        if parens:
            self._source.append(")")

    def _items(self, items):
        """The base class's ``items_view(self.traverse, items)``."""
        if len(items) == 1:
            self.traverse(items[0])
            self._source.append(",")
            return
        first = True
        for x in items:
            if not first:
                self._source.append(", ")
            first = False
            self.traverse(x)

    def visit_Tuple(self, node):
        if self._in_def and len(node.elts) > Tidy.LIMIT and isinstance(node.ctx, ast.Load):
            # in a generated function, a long display as Tidy.split writes it (the tree is not
            # walked again for that; index_wraps.drop_index_wraps)
            split = Tidy.split(node)
            self._precedences[split] = self._precedences.get(node, _P.TEST)
            self.traverse(split)
            return
        parens = len(node.elts) == 0 or self._precedences.get(node, _P.TEST) > _P.TUPLE
        if parens:
            self._source.append("(")
        self._items(node.elts)
        if parens:
            self._source.append(")")

    def visit_Attribute(self, node):
        self._precedences[node.value] = _P.ATOM
        self.traverse(node.value)
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
            self._source.append(" ")
        self._source.append(".")
        self._source.append(node.attr)

    def visit_Call(self, node):
        self._precedences[node.func] = _P.ATOM
        self.traverse(node.func)
        self._source.append("(")
        comma = False
        for e in node.args:
            if comma:
                self._source.append(", ")
            else:
                comma = True
            self.traverse(e)
        for e in node.keywords:
            if comma:
                self._source.append(", ")
            else:
                comma = True
            self.traverse(e)
        self._source.append(")")

    def visit_Subscript(self, node):
        self._precedences[node.value] = _P.ATOM
        self.traverse(node.value)
        self._source.append("[")
        if isinstance(node.slice, ast.Tuple) and node.slice.elts:
            self._items(node.slice.elts)
        else:
            self.traverse(node.slice)
        self._source.append("]")


_P = ast._Precedence
_INFSTR = ast._INFSTR
_NANSTR = f"({_INFSTR}-{_INFSTR})"
_CMP_NEXT = _P.CMP.next()


def _binops():
    out = {}
    for cls in ast.operator.__subclasses__():
        op = ast._Unparser.binop[cls.__name__]
        prec = ast._Unparser.binop_precedence[op]
        if op in ast._Unparser.binop_rassoc:
            out[cls] = (f" {op} ", prec, prec.next(), prec)
        else:
            out[cls] = (f" {op} ", prec, prec, prec.next())
    return out


_BINOPS = _binops()


BLOCKS = (ast.If, ast.For, ast.While, ast.FunctionDef)  # statements whose body may not be empty


class Tidy(ast.NodeTransformer):
    """Every block gets a statement (``pass``), and tuple displays of more than 30 items become
    sums of tuples: CPython compiles a longer display through a list, and Numba's rewrite of
    that bytecode fails on a variable assigned twice (a 6x6 spatial matrix in an adjoint)."""

    LIMIT = 30

    def generic_visit(self, node):
        super().generic_visit(node)
        for fieldname in ("body", "orelse"):
            block = getattr(node, fieldname, None)
            if isinstance(block, list) and fieldname == "body" and not block and \
                    isinstance(node, BLOCKS):
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


def unparse(node):
    return _Unparser().visit(Tidy().visit(node))


def header(origin, target, library=False):
    what = {"cpu": "the CPU (each kernel with threads, and as k__fwd_serial without)",
            "cuda": "CUDA", "host": "plain Python (a call at Python scope)"}[target.name]
    doc = ast.Expr(ast.Constant(
        f"Generated by weft {__version__} from {origin} for {what}.\n\n"
        "Do not edit: regenerate it with `weft transpile`. It needs numpy, numba and weft.\n"
        if not library else
        f"Generated by weft {__version__}: weft's own funcs, as the modules that call them hold "
        "them,\ncompiled once per cache (see weft.runtime.cache). Do not edit.\n"))
    # float16 values are float32 numbers rounded to half precision (Numba has no CPU float16)
    scalars = [ast.ImportFrom("numpy", [ast.alias(s) for s in SCALAR_CASTS], 0),
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


def link_twins(defs):
    """The functions ``generate`` left with a placeholder loop (``weft_twin``: the serial twin
    of a threaded chunk) get the loop body of the function they name, as the passes left it,
    shared, not copied; returns the ids of the bodies shared (their text is written once)."""
    loops = {}
    for d in defs:
        if isinstance(d, ast.FunctionDef) and not getattr(d, "weft_twin", None):
            loops[d.name] = d
    shared = set()
    for d in defs:
        twin = getattr(d, "weft_twin", None)
        if twin:
            mine, theirs = _loop_of(d), _loop_of(loops[twin])
            mine.body = theirs.body
            shared.add(id(theirs.body))
    return shared


def _loop_of(fdef):
    """The launch loop of a generated kernel function (its only top-level ``for``)."""
    loops = [s for s in fdef.body if isinstance(s, ast.For)]
    assert len(loops) == 1, fdef.name
    return loops[0]


def module_source(state):
    """The module's text. The definitions are tidied in place (:class:`Tidy`, unless the
    ``index_wraps`` pass did it on its walk): nothing reads them after this pass."""
    origin = ", ".join(sorted({os.path.basename(k.parsed().filename) for k in state.roots}))
    target = TARGETS[state.options.targets[0]]
    defs = [d if getattr(d, "weft_tidy", False) else Tidy().visit(d) for d in state.defs]
    twins = link_twins(defs)
    abis = ast.Dict([ast.Constant(k) for k in state.abis],
                    [ast.parse(repr(a), mode="eval").body for a in state.abis.values()])
    text = _text(defs + [ast.Assign([ast.Name("WEFT_ABI", ast.Store())], abis, lineno=0)],
                 twins)
    # the unparser's own junction: a blank line before a definition
    gap = "\n\n" if defs and isinstance(defs[0], (ast.FunctionDef, ast.ClassDef)) else "\n"
    if state.share_library:
        state.library = library_modules(state, defs, target)
    return _text(header(origin, target) + _geometry_binding(target, text)) + gap + text + "\n"


_WEFT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_BUILTINS = frozenset(dir(builtins))


def _is_library(fir):
    """Whether ``fir`` is one of weft's own funcs (declared in weft's package, in the kernel
    language: the quaternion and transform helpers, the decompositions, noise, the
    differentiable part of the mesh queries, ...)."""
    src = fir.source
    return src is not None and os.path.abspath(src.filename).startswith(_WEFT)


def _free_names(fdef):
    """The names ``fdef`` reads that it does not bind itself (its globals)."""
    bound = {a.arg for a in fdef.args.args}
    loads = set()
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    return loads - bound


def _callees_first(fir):
    """``fir`` and every func it calls, each after the funcs it calls (in the order it first
    calls them; its custom rules' callees with its own): an order that depends on ``fir``
    alone, not on the module around it."""
    order, seen = [], set()

    def visit(f):
        if f not in seen:
            seen.add(f)
            for c in f.callees + [c for rule in f.custom.values() for c in rule.callees]:
                visit(c)
            order.append(f)
    visit(fir)
    return order


def library_modules(state, defs, target):
    """weft's own funcs of the module, each with the funcs it calls, as modules of their own:
    ``{module name: (the names the module binds from it, its text)}``. The runtime compiles
    such a module once per cache (and :mod:`weft.native.shipped` may ship its machine code),
    and binds the names to it instead of to the module's own copies, which stay in the text,
    so the text (what ``source()`` shows and ``weft transpile`` writes) is unchanged. The text
    of each is the module's own definitions, tidied and written alike, so a func compiled
    there is the func compiled here. A func is left out when anything it calls is not weft's
    own, or when it reads a global its module would not define."""
    owned = {}
    texts, free = {}, {}  # per definition of weft's funcs (a callee joins each caller's group)
    for d in defs:
        fir = state.owners.get(getattr(d, "name", None))
        if fir is not None:
            owned.setdefault(fir, []).append(d)
            if _is_library(fir):
                texts[id(d)], free[id(d)] = _text([d]), _free_names(d)
    head = header("weft's library", target, library=True)
    known = set(_BUILTINS)
    for s in head:
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            known.update((a.asname or a.name).split(".")[0] for a in s.names)
        elif isinstance(s, ast.Assign):
            known.update(t.id for t in s.targets)
    out = {}
    for fir in owned:
        if not _is_library(fir):
            continue
        group = _callees_first(fir)
        if not all(f in owned and _is_library(f) for f in group):
            continue
        members = [d for f in group for d in owned[f]]
        names = {d.name for d in members}
        if any(free[id(d)] - known - names for d in members):
            continue
        body = "\n\n".join(texts[id(d)] for d in members)  # (= _text(members))
        text = _text(head + _geometry_binding(target, body)) + "\n\n" + body + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()[:20]
        out[f"{fir.name[:60]}_{digest}"] = (tuple(d.name for d in owned[fir]), text)
    return out


def _text(statements, twins=()):
    """Tidied statements as text (the unparser reads no locations); ``twins``: see
    :func:`link_twins`."""
    return _Unparser(twins).visit(ast.Module(statements, []))


def run(state):
    state.source = module_source(state)
    return state


def host_source(state):
    """The text of a Python-scope call's functions (:mod:`weft.runtime.host`): the header and
    the definitions, run as plain Python (no ``WEFT_ABI``: nothing launches them)."""
    header_text = "\n".join(unparse(s) for s in header("a Python-scope call", TARGETS["host"]))
    return header_text + "\n\n" + "\n\n".join(unparse(d) for d in state.defs) + "\n"


def run_host(state):
    """The ``assemble`` pass of the host pipeline (``pipeline.HOST``)."""
    state.source = host_source(state)
    return state
