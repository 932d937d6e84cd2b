"""The adjoint generator: IR -> Python statements of the reverse sweep.

Invariant: the statements (1) replay the forward body, recording for every dynamic loop the
values of its loop-carried variables at the start of each iteration on a per-thread stack, then
(2) run the reversed statements, which accumulate into ``adj_<name>`` variables and adjoint
arrays. Reversing a loop walks its iterations backwards: it restores the carried values of
iteration k from the stack, recomputes the body forward (recording nested loops the same way)
and reverses the body. Gradients through loops are therefore exact, whatever the loop
overwrites; memory is one stack entry per iteration and carried variable.

Accumulation into an adjoint array is a plain ``+=`` when every read of that array in the kernel
uses the thread's own index (``a[tid]``, ``a[i, j]`` from ``i, j = wp.tid()``), an atomic add
otherwise.
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..stdlib import ir
from .adjoint_arrays import AdjointArrays
from .adjoint_loops import AdjointLoops
from .adjoint_vars import has_adjoint, initialised
from .analyze import reads_own_derivatives
from .codegen import Gen, adj_zero_node, assign, located
from ..stdlib.exprs import Ex, name
from .forward import Forward
from .undo import UndoStacks


def _rule_key(s):
    """What decides whether the adjoint rule of Prim assignment ``s`` makes a math call on the
    primal's own arguments (:meth:`Adjoint.hoist_partials`), names aside: its builtin, static
    attributes, result type and per argument its type (and for a constant whether it is 0, 1,
    -1 or another value: rules fold zeros and ones); None when something of it cannot be a
    key. A rule that made no such call is then built once per key, not once per statement (a
    tenth of a large kernel's transpile). Were a rule to differ between two constants of one
    key, the second would only not be hoisted (the reverse sweep computes the call itself)."""
    e = s.expr
    key = (e.builtin, s.dst.type, repr(sorted(e.attrs.items())) if e.attrs else "",
           tuple((a.type, type(a.value), _const_class(a.value)) if isinstance(a, ir.Const)
                 else a.type for a in e.args))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _const_class(value):
    try:
        return value if value in (0, 1, -1) else "other"
    except (TypeError, ValueError):  # a value numbers do not compare with
        return repr(value)


class Adjoint(AdjointLoops, AdjointArrays, UndoStacks, Gen):
    def __init__(self, fir, names, facts, target):
        super().__init__(fir, names, facts, target)
        self.fwd = Forward(fir, names, facts, target, replay=True)
        self.loop_names = {}
        self.depth = 0
        self.atomic_arrays = facts.atomic_adjoint_arrays
        # a variable's adjoint matters where it can be nonzero (it flows into a result) and
        # where it reaches an input (it depends on one): the forward activity analysis
        self.needed = facts.needed & facts.varied
        self.pass_kind = "adjoint"
        self.hoisted = {}  # id(ir.Assign of a Prim) -> {dump of a math call: its variable}
        self.no_math = set()  # _rule_key of the rules found to make no math call
        self.undo_init(facts, target)
        # a CUDA tile kernel: every thread of a block runs the scalar code (see r_Store)
        self.block_threads = target.name == "cuda" and any(
            isinstance(getattr(getattr(st, "dst", None), "type", None), T.TileType)
            for st in ir.walk(fir.body))

    # ------------------------------------------------------------------------------ entry
    def body(self, tail=()):
        """Replay + reverse sweep of the whole function body, with adjoint initialisation;
        ``tail``: statements after the sweep (a func's ``return`` of its adjoints)."""
        stmts = [s for s in self.fir.body if not isinstance(s, ir.Return)]
        rets = [s for s in self.fir.body if isinstance(s, ir.Return)]
        out = self.undo_alloc() + self.record(stmts)
        sweep = []
        for r in rets:
            if has_adjoint(r.value):
                sweep += self.accumulate(r.value, Ex(name("adj_ret"), r.value.type), r.loc)
        sweep += self.reverse(stmts) + list(tail)
        inits = [(self.adj(v), adj_zero_node(v.type)) for v in
                 ir.defined_vars(self.fir.body) + list(self.fir.params) if has_adjoint(v)]
        return out + initialised(inits, sweep)

    def func_signature(self):
        """Parameter names of ``<func>__adj``: params, adjoint arrays, ``adj_ret``."""
        fir = self.fir
        params = [p.name for p in fir.params]
        params += [self.adj(p) for p in fir.params
                   if isinstance(p.type, T.ArrayType) and T.is_differentiable(p.type)]
        if fir.ret_type is not None and T.is_differentiable(fir.ret_type):
            params.append("adj_ret")
        return params + self.target.extra_params("adjoint")

    def func_returns(self):
        """The ``return`` statement of ``<func>__adj``: adjoints of differentiable params."""
        items = [name(self.adj(p)) for p in self.fir.params if has_adjoint(p)]
        return ast.Return(ast.Tuple(items, ast.Load()))

    # ------------------------------------------------------------------------------ record
    def record(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.Loop):
                out += self.record_loop(s)
            elif isinstance(s, ir.If):
                st = ast.If(self.ex(s.cond).node, self.record(s.body), self.record(s.orelse))
                out.append(located(st, s.loc))
            else:
                out += self.fwd.stmt(s)
                if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim):
                    out += self.hoist_partials(s)
        return out

    def hoist_partials(self, s):
        """The math calls of ``s``'s adjoint rule that take the primal call's own arguments
        (``cos(x)`` for ``sin(x)``), computed here beside the primal call, so that LLVM fuses
        the pair (``sincosf``) instead of calling libm twice; the reverse sweep then reads
        them (:meth:`r_prim`). Only for statements whose rule the reverse sweep runs anyway,
        so no work is added. The rule is built once more on a copy of the name generator to
        find those calls, so the reverse sweep's temporaries keep their names."""
        if not self.reverses_prim(s):
            return []
        rule = _rule_key(s)
        if rule is not None and rule in self.no_math:
            return []
        names, self.names = self.names, self.names.scratch()
        try:
            stmts, contribs = self.prim_rule(s)
        finally:
            self.names = names
        same = None  # the primal's arguments, dumped once a math call is met
        found = {}
        for node in ast.walk(ast.Module(stmts + [c.node for c in contribs if c is not None], [])):
            if not (isinstance(node, ast.Call) and getattr(node, "weft_math", None)):
                continue
            if same is None:
                same = [ast.dump(self.ex(a).node) for a in s.expr.args]
            if [ast.dump(a) for a in node.args] == same:
                found.setdefault(ast.dump(node), node)
        if not found:
            if rule is not None:
                self.no_math.add(rule)
            return []
        self.hoisted[id(s)] = {key: self.names.fresh("d") for key in found}
        return [assign(self.hoisted[id(s)][key], node, s.loc) for key, node in found.items()]

    # ------------------------------------------------------------------------------ reverse
    def reverse(self, stmts):
        out = []
        for s in reversed(stmts):
            out += getattr(self, "r_" + type(s).__name__)(s)
        return out

    def accumulate(self, v, contribution, loc):
        """``adj_v += contribution`` (componentwise; tuples item by item); nothing for a
        variable no input varies (its adjoint would reach no input)."""
        if not has_adjoint(v) or contribution is None or id(v) not in self.facts.varied:
            return []
        target = Ex(name(self.adj(v)), v.type)

        def build():
            if T.is_composite(v.type) and isinstance(contribution.node, ast.Tuple):
                # leave components with a literal zero contribution alone (x + 0.0 is not
                # free: without fast-math LLVM must keep it for -0.0)
                from ..stdlib.exprs import tup
                c = contribution
                items = [target.comp(i) if _is_zero(c.comp(i).node) else
                         target.comp(i) + c.comp(i) for i in range(v.type._length_)]
                return tup(items, v.type)
            if isinstance(v.type, T.TupleType):
                c = contribution.atom()
                items = [target.comp(i) + c.comp(i) if T.is_differentiable(t) else target.comp(i)
                         for i, t in enumerate(v.type.types)]
                from ..stdlib.exprs import tup
                return tup(items, v.type)
            return target + contribution

        stmts, result = self.build(build, loc)
        return stmts + [assign(self.adj(v), result.node, loc)]

    def consumed(self, v, loc):
        """Reset ``adj_v`` after its definition was reversed (needed inside loops)."""
        if self.depth == 0 or not has_adjoint(v):
            return []
        return [assign(self.adj(v), adj_zero_node(v.type), loc)]

    def r_Assign(self, s):
        e = s.expr
        if isinstance(e, ir.Copy):
            if not has_adjoint(s.dst) or id(s.dst) not in self.needed:
                return []
            out = self.accumulate(e.src, Ex(name(self.adj(s.dst)), s.dst.type), s.loc) \
                if isinstance(e.src, ir.Var) else []
            return out + self.consumed(s.dst, s.loc)
        if isinstance(e, ir.Prim):
            return self.r_prim(s)
        if isinstance(e, ir.Load):
            if isinstance(s.dst.type, T.ArrayType) or not has_adjoint(s.dst):
                return []
            return self.to_array(e.array, e.index, Ex(name(self.adj(s.dst)), s.dst.type), s.loc) + \
                self.consumed(s.dst, s.loc)
        if isinstance(e, ir.Call):
            return self.r_call(s)
        if isinstance(e, ir.GradCall):  # a derivative is a constant of the backward pass
            return self.consumed(s.dst, s.loc)
        raise TypeError(e)

    def reverses_prim(self, s):
        """Whether the reverse sweep runs the adjoint rule of Prim assignment ``s``."""
        b = s.expr.builtin
        if getattr(b, "array_access", None) == "accumulate":  # adds a tile into an array
            return b.differentiable and any(has_adjoint(a) and id(a) in self.needed
                                            for a in s.expr.args)
        return b.differentiable and has_adjoint(s.dst) and id(s.dst) in self.needed and \
            (b.own_derivatives or any(has_adjoint(a) for a in s.expr.args))

    def prim_rule(self, s):
        """(statements, contribution per argument) of the adjoint rule of ``s``."""
        b = s.expr.builtin
        args = [self.ex(a) for a in s.expr.args]
        ret = Ex(name(s.dst.name), s.dst.type)
        adj_ret = Ex(name(self.adj(s.dst)), s.dst.type)
        extra = {"adj_arrays": self.shadow_arrays(s.expr.args)} if getattr(
            b, "array_args", False) else {}
        return self.build(
            lambda: [c.atom("a") if c is not None else None
                     for c in b.adjoint(*args, ret=ret, adj=adj_ret, **s.expr.attrs, **extra)],
            s.loc)

    def shadow_arrays(self, args, prefix="adj"):
        """Per argument: the Ex of its adjoint (tangent) array where it is a differentiable
        array, else None (the rules of builtins with ``array_args`` write into them)."""
        return [Ex(name(self.shadow(prefix, a)), a.type)
                if isinstance(a, ir.Var) and isinstance(a.type, T.ArrayType) and
                T.is_differentiable(a.type) and not a.type.local else None for a in args]

    def r_prim(self, s):
        if not self.reverses_prim(s):
            return self.consumed(s.dst, s.loc)
        stmts, contribs = self.prim_rule(s)
        hoisted = self.hoisted.pop(id(s), None)
        if hoisted:  # read the math calls computed beside the primal call
            stmts = [_Substitute(hoisted).visit(st) for st in stmts]
            contribs = [Ex(_Substitute(hoisted).visit(c.node), c.type) if c is not None
                        else None for c in contribs]
        out = stmts
        for a, c in zip(s.expr.args, contribs):
            if has_adjoint(a) and c is not None:
                out += self.accumulate(a, c, s.loc)
        return out + self.consumed(s.dst, s.loc)

    def r_call(self, s):
        f = s.expr.func
        args = s.expr.args
        diff_params = [i for i, p in enumerate(f.params) if has_adjoint(p)]
        array_params = [i for i, p in enumerate(f.params) if isinstance(p.type, T.ArrayType)
                        and T.is_differentiable(p.type)]
        has_ret = f.ret_type is not None and T.is_differentiable(f.ret_type)
        if not array_params and not any(has_adjoint(args[i]) for i in diff_params) and \
                not (has_ret and id(s.dst) in self.needed and reads_own_derivatives(f)):
            return self.consumed(s.dst, s.loc)
        call_args = [self.ex(a).node for a in args]
        call_args += [name(self.adj(args[i])) for i in array_params]
        rule = f.custom.get("grad")
        if rule is not None and rule.takes_ret:  # the replayed result, not computed again
            call_args.append(self.ex(s.dst).node)
        if has_ret and rule is not None and isinstance(f.ret_type, T.TupleType) and \
                len(rule.params) == len(f.params) + rule.takes_ret + len(f.ret_type.types):
            # a user's rule takes one adjoint per returned value
            call_args += [ast.Subscript(name(self.adj(s.dst)), ast.Constant(k), ast.Load())
                          for k in range(len(f.ret_type.types))]
        elif has_ret:
            call_args.append(name(self.adj(s.dst)))
        call = self.call_generated(f"{f.name}__adj", call_args, "adjoint")
        if not diff_params:
            return [located(ast.Expr(call), s.loc)] + self.consumed(s.dst, s.loc)
        tmp = self.names.fresh("c")
        out = [assign(tmp, call, s.loc)]
        for k, i in enumerate(diff_params):
            if has_adjoint(args[i]):
                c = Ex(ast.Subscript(name(tmp), ast.Constant(k), ast.Load()), args[i].type)
                out += self.accumulate(args[i], c, s.loc)
        return out + self.consumed(s.dst, s.loc)

    def r_If(self, s):
        body = self.reverse(s.body)
        orelse = self.reverse(s.orelse)
        if not body and not orelse:
            return []
        return [located(ast.If(self.ex(s.cond).node, body, orelse), s.loc)]

    def r_Return(self, s):
        return []

    def r_Effect(self, s):
        b = s.builtin
        if not (getattr(b, "array_args", False) and b.differentiable) or \
                not any(has_adjoint(a) and id(a) in self.needed for a in s.args):
            return []
        args = [self.ex(a) for a in s.args]
        stmts, contribs = self.build(
            lambda: [c.atom("a") if c is not None else None for c in b.adjoint(
                *args, adj_arrays=self.shadow_arrays(s.args), **s.attrs)], s.loc)
        out = stmts
        for a, c in zip(s.args, contribs):
            if has_adjoint(a) and c is not None:
                out += self.accumulate(a, c, s.loc)
        return out


class _Substitute(ast.NodeTransformer):
    """Replace the math calls a mapping names (by ``ast.dump``) with their variables."""

    def __init__(self, names):
        self.names = names

    def visit_Call(self, node):
        var = self.names.get(ast.dump(node)) if getattr(node, "weft_math", None) else None
        return name(var) if var is not None else self.generic_visit(node)


def _is_zero(node):
    """A literal zero as the generators write it: ``float32(0.0)``."""
    return (isinstance(node, ast.Call) and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)


