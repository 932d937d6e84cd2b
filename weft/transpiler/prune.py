"""Pass ``prune``: dead assignments out of generated adjoint and tangent functions.

Invariant: no assignment of a generated function of ``state.defs`` (forward code too, but in
debug builds) binds a name that nothing left reads to a value without side effects.

The adjoint replays the forward body and the tangent runs it beside the tangents, statement by
statement, so both carry values nobody reads: the old value of an atomic the kernel ignored, a
func's result that no adjoint rule reads (its ``__adj`` recomputes what it needs), the
adjoint of a kernel's scalar parameter (the launch has nowhere to put it), a tangent that is
zero and feeds nothing. Forward code carries them too: a variable that one branch of an ``if``
binds is given a value on every other path and merged after it (``x_3 = x_1`` in one branch,
``x_2 = float32(0.0); x_3 = x_2`` in the other), whether or not anything reads it later; in
MuJoCo Warp's actuator kernel these were 1,015 of the forward's 1,803 lines. Numba has no
dead-code pass before type inference, so each of them is typed and lowered. :func:`drop_dead` removes every assignment whose names are never read by
what remains and whose value has no side effect, until nothing more goes.

Which values are pure: names, constants, arithmetic, comparisons, tuples, subscripts and
attributes (reads), conditional expressions, calls the vocabulary of generated code calls pure
(:func:`weft.native.vocabulary.is_pure`: numpy's math, the casts, ``range``, most ``_wk``
helpers) and calls of generated functions named in ``pure_funcs``. Anything else (an atomic, a
debug check, a geometry query, a func that writes an array) keeps its statement and what it
reads.
"""
from __future__ import annotations

import ast
import math

from ..native.vocabulary import called_name, is_pure

_PURE_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
               ast.Tuple, ast.Subscript, ast.Attribute, ast.IfExp, ast.Slice, ast.Load,
               ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)


def _pure_call(node, pure_funcs):
    f = node.func
    if isinstance(f, ast.Name):
        return f.id in pure_funcs or is_pure(f.id)
    return is_pure(called_name(f))


def pure(expr, pure_funcs=()):
    """Whether evaluating ``expr`` has no effect besides its value."""
    return _pure_reads(expr, pure_funcs) is not None


def _pure_reads(expr, pure_funcs):
    """The names ``expr`` reads when it is pure, else None (one walk for both; by hand, not
    ``ast.walk``, which took a third of a large kernel's transpile here; names and constants
    are met as children, not pushed)."""
    reads = set()
    if type(expr) is ast.Name:
        if isinstance(expr.ctx, ast.Load):
            reads.add(expr.id)
        return reads
    stack = [expr]
    Name, Constant, BinOp, Call, Load = ast.Name, ast.Constant, ast.BinOp, ast.Call, ast.Load
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is BinOp or kind is Call:  # most nodes: their operands here, not by field
            if kind is Call:
                if node.keywords or not _pure_call(node, pure_funcs):
                    return None
                operands = [node.func] + node.args
            else:
                operands = (node.left, node.right)
            for x in operands:
                xk = type(x)
                if xk is Name:
                    if type(x.ctx) is Load:
                        reads.add(x.id)
                elif xk is not Constant:
                    stack.append(x)
            continue
        if kind is not ast.keyword and not isinstance(node, _PURE_NODES):
            return None
        _push_children(node, stack, reads)
    return reads


_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)

# fields that never hold a node worth visiting: names, constants, contexts, operators
_NOT_NODES = {"ctx", "op", "ops", "id", "attr", "kind", "type_comment", "arg", "level",
              "module", "names", "lineno", "col_offset", "end_lineno", "end_col_offset",
              "conversion", "is_async"}
_FIELDS = {}


def _node_fields(cls):
    """The fields of node class ``cls`` that may hold child nodes (cached per class)."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple(f for f in cls._fields if f not in _NOT_NODES and not (
            f in ("value", "name") and cls in (ast.Constant, ast.FunctionDef, ast.ClassDef,
                                                ast.AsyncFunctionDef, ast.alias)))
        _FIELDS[cls] = fields
    return fields


def _push_children(node, stack, reads, loads_only=True):
    """``node``'s child nodes onto ``stack`` (those of ``ast.iter_child_nodes``, less the
    contexts and operators, which hold nothing), but for names, whose ids are added to
    ``reads`` when they are read (``loads_only``; else always), and constants."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _node_fields(type(node))
    for field in fields:
        v = getattr(node, field, None)
        if type(v) is not list:
            if not isinstance(v, ast.AST) or isinstance(v, _LEAVES):
                continue
            v = (v,)
        for x in v:
            kind = type(x)
            if kind is ast.Name:
                if not loads_only or isinstance(x.ctx, ast.Load):
                    reads.add(x.id)
            elif kind is not ast.Constant and isinstance(x, ast.AST):
                stack.append(x)


def names_in(node):
    """The names ``node`` mentions (a walk by hand: ``ast.walk`` is slow on large sweeps)."""
    if type(node) is ast.Name:
        return {node.id}
    out, stack = set(), [node]
    while stack:
        _push_children(stack.pop(), stack, out, False)
    return out


def _target_leaves(t):
    """The innermost targets of assignment target ``t`` (names, subscripts, attributes)."""
    if isinstance(t, (ast.Tuple, ast.List)):
        return [leaf for e in t.elts for leaf in _target_leaves(e)]
    if isinstance(t, ast.Starred):
        return _target_leaves(t.value)
    return [t]


def _bound_names(t):
    """The names an assignment to target ``t`` binds (a subscript's or attribute's none)."""
    if type(t) is ast.Name:
        return [t.id]
    return [leaf.id for leaf in _target_leaves(t) if isinstance(leaf, ast.Name)]


def _target_names(t):
    """The names bound by assignment target ``t``; None when it is not a name or a tuple of
    names (nested)."""
    if type(t) is ast.Name:
        return [t.id]
    if any(isinstance(e, (ast.List, ast.Starred)) for e in ast.walk(t)):
        return None
    leaves = _target_leaves(t)
    if not all(isinstance(leaf, ast.Name) for leaf in leaves):
        return None
    return [leaf.id for leaf in leaves]


def _binding(st, pure_funcs):
    """``(names, reads)`` when ``st`` binds only names to a pure value (removable), else
    None. ``x += v`` counts as ``x = x + v``."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1:
        names = _target_names(st.targets[0])
        if names is not None:
            reads = _pure_reads(st.value, pure_funcs)
            if reads is not None:
                return names, reads
    if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
        reads = _pure_reads(st.value, pure_funcs)
        if reads is not None:
            return [st.target.id], reads | {st.target.id}
    return None


def _reads(node):
    out = set()
    if type(node) is ast.Name:
        if isinstance(node.ctx, ast.Load):
            out.add(node.id)
        return out
    stack = [node]
    while stack:
        _push_children(stack.pop(), stack, out)
    return out


_COMPOUND = frozenset(c for c in vars(ast).values() if isinstance(c, type) and
                      issubclass(c, ast.stmt) and {"body", "orelse", "finalbody"} & set(c._fields))


def _statements(body, out=None):
    """The statements of ``body`` and of the blocks in it, each before those of its blocks
    (a list: a generator's frames took a twentieth of a large kernel's prune)."""
    if out is None:
        out = []
    for st in body:
        out.append(st)
        if type(st) in _COMPOUND:
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(st, field, None)
                if isinstance(sub, list):
                    _statements(sub, out)
    return out


_FLOAT_CASTS = ("float16", "float32", "float64")


def _negative_zero(expr):
    """Whether ``expr`` is the constant -0.0 (``float32(-0.0)``, ``-0.0``) or a tuple of them."""
    if isinstance(expr, ast.Tuple):
        return bool(expr.elts) and all(_negative_zero(e) for e in expr.elts)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and \
            expr.func.id in _FLOAT_CASTS and len(expr.args) == 1 and not expr.keywords:
        expr = expr.args[0]
    sign = 1.0
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):  # -0.0 as parsed
        expr, sign = expr.operand, -1.0
    return isinstance(expr, ast.Constant) and type(expr.value) is float and \
        expr.value == 0.0 and sign * math.copysign(1.0, expr.value) < 0


def _adds_zero(st, zeros):
    """Whether ``a[...] += v`` statement ``st`` adds ``v``, a -0.0 of ``zeros`` (or a
    component of a tuple of them): adding -0.0 leaves every value as it was."""
    v = st.value
    if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant):
        v = v.value
    return isinstance(v, ast.Name) and v.id in zeros


_BINDERS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)


def _keep(st, live):
    """Statement ``st`` is kept whatever happens: what it reads goes into ``live`` (a compound
    statement's own parts only: its test, iterator or target; its body is visited on its
    own)."""
    if isinstance(st, (ast.If, ast.While)):
        live |= _reads(st.test)
    elif isinstance(st, ast.For):
        live |= _reads(st.iter) | _reads(st.target)
    elif isinstance(st, (ast.With, ast.Try)):
        live |= _reads(st)
    else:
        live |= _reads(st)
        if isinstance(st, ast.AugAssign):
            live |= {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}


def drop_dead(fdef, pure_funcs=()):
    """``fdef`` (an ``ast.FunctionDef``) without its dead assignments, in place; returns it.
    Additions of -0.0 into an array (an adjoint no rule added to, accumulated into a
    gradient) go too: they change no value."""
    bindings, live, removable = [], set(), {}
    # the names bound once, to -0.0 or a tuple of -0.0 (adjoints nothing was added to), found
    # on the same walk; an ``a[...] += v`` with a pure index waits until they are known
    count, zero, adds = {}, set(), []
    Assign, Name = ast.Assign, ast.Name
    for st in _statements(fdef.body):
        kind = type(st)
        if kind is Assign and len(st.targets) == 1 and type(st.targets[0]) is Name:
            n = st.targets[0].id  # most statements
            count[n] = count.get(n, 0) + 1
            if _negative_zero(st.value):
                zero.add(n)
            reads = _pure_reads(st.value, pure_funcs)
            if reads is not None:
                bindings.append(([n], reads))
                removable[id(st)] = [n]
            else:
                live |= _reads(st)
            continue
        if kind in _BINDERS:
            for t in (st.targets if kind is Assign else [st.target]):
                for n in _bound_names(t):
                    count[n] = count.get(n, 0) + 1
        if kind is ast.AugAssign and type(st.op) is ast.Add and \
                type(st.target) is ast.Subscript and \
                _pure_reads(st.target.slice, pure_funcs) is not None:
            adds.append(st)
            continue
        b = _binding(st, pure_funcs)
        if b is not None:
            bindings.append(b)
            removable[id(st)] = b[0]
            continue
        _keep(st, live)
    zeros = {n for n in zero if count[n] == 1} - {a.arg for a in fdef.args.args}
    for st in adds:
        if zeros and _adds_zero(st, zeros):
            removable[id(st)] = ()
        else:
            _keep(st, live)
    # a binding any of whose names is live makes what it reads live: a worklist over the
    # names, not rounds over every binding (a loop's uses precede their definitions)
    reads_of = {}   # name -> what the bindings of it read
    for names, reads in bindings:
        for n in names:
            reads_of.setdefault(n, []).append(reads)
    work = list(live)
    while work:
        for reads in reads_of.pop(work.pop(), ()):
            new = reads - live
            live |= new
            work += new

    def sweep(body):
        out = []
        for st in body:
            names = removable.get(id(st))
            if names is not None:
                if any(n in live for n in names):
                    out.append(st)
                continue
            if type(st) not in _COMPOUND:
                out.append(st)
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(st, field, None)
                if isinstance(sub, list) and sub:
                    setattr(st, field, sweep(sub) or ([ast.Pass()] if field == "body" else []))
            if isinstance(st, ast.If) and _empty(st.body) and _empty(st.orelse) and \
                    pure(st.test, pure_funcs):
                continue
            out.append(st)
        return out

    fdef.body = sweep(fdef.body) or [ast.Pass()]
    return fdef


def _empty(body):
    return all(isinstance(st, ast.Pass) for st in body)


def pure_body(body, pure_funcs):
    """Whether running statements ``body`` has no effect besides binding names (and
    returning): a function made of them can be called for its value alone."""
    for st in _statements(body):
        if isinstance(st, (ast.If, ast.While)):
            ok = pure(st.test, pure_funcs)
        elif isinstance(st, ast.For):
            ok = pure(st.iter, pure_funcs) and _target_names(st.target) is not None
        elif isinstance(st, ast.Return):
            ok = st.value is None or pure(st.value, pure_funcs)
        elif isinstance(st, ast.Expr):
            ok = isinstance(st.value, ast.Constant)  # a docstring
        else:
            ok = isinstance(st, (ast.Pass, ast.Break, ast.Continue)) or \
                _binding(st, pure_funcs) is not None
        if not ok:
            return False
    return True


def pure_functions(defs):
    """Names of the generated functions of ``defs`` (callees first) that are pure."""
    out = set()
    for d in defs:
        if isinstance(d, ast.FunctionDef) and pure_body(d.body, out):
            out.add(d.name)
    return out


def run(state):
    """Prune the generated functions (``weft_pass``, set by ``generate``) of ``state.defs``:
    adjoints and tangents always; forward kernels and funcs too but in debug builds (whose
    every array access, read or not, is checked as written); a generated function found pure
    may be dropped where its result is not read."""
    kinds = {"adjoint", "tangent"}
    if getattr(getattr(state, "options", None), "mode", "release") != "debug":
        kinds.add("forward")
    pure = pure_functions(state.defs)
    state.defs = [drop_dead(d, pure) if getattr(d, "weft_pass", None) in kinds else d
                  for d in state.defs]
    return state
