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
import copy

from ..core import types as T
from ..core.errors import KernelSyntaxError
from ..stdlib import ir
from .analyze import reads_own_derivatives
from .codegen import (Gen, adj_zero_node, assign, component_indices, diff, index_node, located,
                      is_half, not_none, storage_dtype_node, tag, wk_call)
from ..stdlib.exprs import Ex, const, name, zero
from .forward import Forward
from .prune import names_in
from .undo import UndoStacks


def has_adjoint(v):
    """A variable (not a constant) that carries a derivative: it has an ``adj_`` variable."""
    return isinstance(v, ir.Var) and diff(v)


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


class Adjoint(UndoStacks, Gen):
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

    def names_of(self, loop):
        key = id(loop)
        if key not in self.loop_names:
            n = self.names.fresh("n")
            # one stack per carried value; a tuple gets one per element (nested: per leaf)
            stacks = {id(h): [self.names.fresh("stk") for _ in _leaves(h.type)]
                      for h, _ in loop.carried}
            for p in self.undo:  # the undo stack's height at the start of each iteration
                stacks[id(p)] = [self.names.fresh("stkh")]
            self.plain_buffers.update(n for names in stacks.values() for n in names)
            self.loop_names[key] = (n, stacks)
        return self.loop_names[key]

    def stack_alloc(self, t, cap_node):
        if isinstance(t, T.ArrayType):
            raise KernelSyntaxError(f"{self.fir.name}: arrays inside a tuple carried through a "
                                    "loop are not supported")
        # one row per iteration, holding an element as arrays of that type hold it
        return self.target.stack_alloc(cap_node, T.element_shape(t), storage_dtype_node(t))

    def push(self, h, stacks, row, loc):
        """Store carried value ``h`` (a tuple: leaf by leaf) in row ``row`` of its stacks."""
        out = []
        for stk, (path, t) in zip(stacks, _leaves(h.type)):
            node = name(h.name)
            for k in path:
                node = ast.Subscript(node, ast.Constant(k), ast.Load())
            out += self.store_element(stk, [row], Ex(node, t), loc, checked=False)
        return out

    def pop(self, h, stacks, row):
        """The expression of carried value ``h`` read back from row ``row`` of its stacks."""
        loaded = iter([self.load_element(stk, [row], t).node
                       for stk, (_, t) in zip(stacks, _leaves(h.type))])

        def rebuild(t):
            if isinstance(t, T.TupleType):
                return ast.Tuple([rebuild(x) for x in t.types], ast.Load())
            return next(loaded)
        return rebuild(h.type)

    def record_loop(self, s):
        n, stacks = self.names_of(s)
        out = [assign(n, ast.Constant(0), s.loc)]
        if s.kind == "for":
            cap = wk_call("trip_count", self.ex(s.start).node, self.ex(s.stop).node,
                          self.ex(s.step).node)
        else:
            cap = ast.Constant(16)
        for h, _ in s.carried:
            for stk, (_, t) in zip(stacks[id(h)], _leaves(h.type)):
                out.append(assign(stk, self.stack_alloc(t, cap), s.loc))
        for p in self.undo:
            out.append(assign(stacks[id(p)][0], self.stack_alloc(T.int64, cap), s.loc))
        body = []
        if s.kind == "while":
            for h, _ in s.carried:
                for stk in stacks[id(h)]:
                    body += self.target.stack_grow(stk, n)
            for p in self.undo:
                body += self.target.stack_grow(stacks[id(p)][0], n)
        for h, _ in s.carried:
            body += self.push(h, stacks[id(h)], self.target.stack_row(name(n)), s.loc)
        for p, (count, _v, _i) in self.undo.items():
            body += self.store_element(stacks[id(p)][0], [self.target.stack_row(name(n))],
                                       Ex(name(count), T.int64), s.loc, checked=False)
        body.append(ast.AugAssign(ast.Name(n, ast.Store()), ast.Add(), ast.Constant(1)))
        body += self.fwd.block(s.body) + self.fwd.loop_tail(s)
        out.append(self.fwd.loop_header(s, tag(body, s.loc)))
        return tag(out, s.loc)

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

    def to_array(self, arr, index, value, loc):
        """Accumulate ``value`` into ``adj_arr[index]`` (atomically where needed)."""
        if not T.is_differentiable(arr.type):
            return []
        idx = self.idx_nodes(index)
        if arr in self.atomic_arrays or not self.own_index(arr, index):
            body = self.atomic_element("add", self.adj(arr), idx, value, loc)
        else:
            body = self.store_element(self.adj(arr), idx, value, loc, op=ast.Add())
        return [located(ast.If(not_none(self.adj(arr)), body, []), loc)]

    def from_array(self, arr, index, v, loc, scale=None, cond=None):
        """``adj_v += adj_arr[index]`` (times -1 for subtraction)."""
        if not has_adjoint(v) or not T.is_differentiable(arr.type) or \
                id(v) not in self.facts.varied:
            return []
        idx = self.idx_nodes(index)

        def build():
            g = self.load_element(self.adj(arr), idx, arr.type.dtype, loc)
            if scale is not None:
                g = g * scale
            if cond is not None:
                from ..stdlib.exprs import select, tup
                if T.is_composite(g.type):  # per component: min/max act componentwise
                    g = g.atom()
                    g = tup([select(cond(c), g.comp(c), zero(T.scalar_of(g.type)))
                             for c in range(g.length)], g.type)
                else:
                    g = select(cond(), g.atom(), zero(g.type))
            return Ex(name(self.adj(v)), v.type) + g

        stmts, result = self.build(build, loc)
        body = stmts + [assign(self.adj(v), result.node, loc)]
        return [located(ast.If(not_none(self.adj(arr)), body, []), loc)]

    def r_Store(self, s):
        """``a[i] = v`` reversed: ``adj_v += adj_a[i]``, then the element's adjoint restarts
        from zero (the value it held before the store has no influence past it, as Warp
        1.19's adj_array_store, at any index): exact for an array written twice, by a loop or
        by two launches, and for read-then-overwrite. Not where the array is also updated
        atomically at elements other threads access (a store at one element and atomic adds
        into it by every thread: their adjoints still read it).
        Read and reset are one block under one test of the adjoint array."""
        taken = self.take_adjoint(s)
        if taken is not None:
            return taken + (self.restore_store(s) if s.array in self.undo else [])
        out = self.from_array(s.array, s.index, s.value, s.loc)
        if T.is_differentiable(s.array.type) and not self.facts.shared_and_atomic(s.array):
            reset = self.store_element(self.adj(s.array), self.idx_nodes(s.index),
                                       zero(s.array.type.dtype), s.loc)
            if out:
                out[0].body += reset
            else:
                out = [located(ast.If(not_none(self.adj(s.array)), reset, []), s.loc)]
        if s.array in self.undo:
            out += self.restore_store(s)
        return out

    def take_adjoint(self, s):
        """``a[i] = v`` reversed in a CUDA tile kernel, or None elsewhere: every thread of the
        block ran the store (of the same value), and each takes the element's adjoint by an
        atomic exchange with zero, so one thread gets it and the others zero; read and reset
        apart, the threads of a warp would each read it before any reset it (the adjoint
        counted up to ``block_dim`` times, by the threads' timing). The threads' parts add up
        where they meet again (the adjoint of reading a tile's element sums them)."""
        dt = s.array.type.dtype
        if not self.block_threads or not T.is_differentiable(s.array.type) or \
                self.facts.shared_and_atomic(s.array) or is_half(T.scalar_of(dt)):
            return None
        arr = self.adj(s.array)
        takes = []
        for extra in component_indices(dt):
            parts = self.idx_nodes(s.index) + [ast.Constant(e) for e in extra]
            idx = parts[0] if len(parts) == 1 else ast.Tuple(parts, ast.Load())
            takes.append(self.target.atomic("atomic_exch", [name(arr), idx,
                                                            zero(T.scalar_of(dt)).node]))
        if has_adjoint(s.value) and id(s.value) in self.facts.varied:
            g = takes[0] if len(takes) == 1 else ast.Tuple(takes, ast.Load())
            stmts, total = self.build(lambda: Ex(name(self.adj(s.value)), s.value.type) +
                                      Ex(g, s.value.type), s.loc)
            body = stmts + [assign(self.adj(s.value), total.node, s.loc)]
        else:
            body = [located(ast.Expr(t), s.loc) for t in takes]
        return [located(ast.If(not_none(arr), body, []), s.loc)]

    def r_AtomicRMW(self, s):
        if s.array in self.undo and s.op in ("add", "sub"):
            return self.from_array(s.array, s.index, s.value, s.loc,
                                   scale=-1.0 if s.op == "sub" else None) + self.restore_store(s)
        if s.op in ("add", "sub"):
            return self.from_array(s.array, s.index, s.value, s.loc,
                                   scale=-1.0 if s.op == "sub" else None)
        # min/max: the gradient goes to the value that ended up in the array (per component
        # for vectors and matrices, whose atomics act componentwise)
        idx = self.idx_nodes(s.index)
        dtype = s.array.type.dtype

        def winner(c=None):
            cur = self.load_element(s.array.name, idx, dtype, s.loc)
            val = self.ex(s.value)
            if c is not None:
                cur, val = cur.comp(c), val.comp(c)
            return Ex(ast.Compare(cur.node, [ast.Eq()], [val.node]), T.bool)

        k = self.facts.tie_index(s)
        if k is None:
            return self.from_array(s.array, s.index, s.value, s.loc, cond=winner)
        # tied threads share it equally: phase 0 counts them, phase 1 shares
        ties = f"_ties{k}"
        st = T.scalar_of(dtype)
        comps = component_indices(dtype)
        count, stmts = [], []
        for c, extra in enumerate(comps):
            where = index_node(list(idx) + [ast.Constant(e) for e in extra])
            pre, tied = self.build(lambda c=c: winner(c if T.is_composite(dtype) else None),
                                   s.loc)
            stmts += pre
            count.append(located(ast.If(tied.node, [ast.Expr(self.target.atomic(
                "atomic_add", [name(ties), where, ast.Constant(1)]))], []), s.loc))

        def share(extra):
            where = index_node(list(idx) + [ast.Constant(e) for e in extra])
            return Ex(ast.BinOp(const(1.0, st).node, ast.Div(), ast.Call(
                name(st.__name__), [ast.Subscript(name(ties), where, ast.Load())], [])), st)

        if T.is_composite(dtype):
            spread = self.shared_components(s, idx, winner, share, comps)
        else:
            spread = self.from_array(s.array, s.index, s.value, s.loc, scale=share(()),
                                     cond=winner)
        phase = ast.Compare(name("_phase"), [ast.Eq()], [ast.Constant(0)])
        return stmts + [located(ast.If(phase, count, spread), s.loc)]

    def shared_components(self, s, idx, winner, share, comps):
        """Phase 1 of a vector/matrix atomic min/max: each component's adjoint goes to the
        threads whose component is the result, shared by their count."""
        v = s.value
        if not has_adjoint(v) or not T.is_differentiable(s.array.type):
            return []
        from ..stdlib.exprs import select, tup
        dtype = s.array.type.dtype

        def build():
            g = self.load_element(self.adj(s.array), idx, dtype, s.loc).atom()
            parts = [select(winner(c), g.comp(c) * share(extra), zero(T.scalar_of(dtype)))
                     for c, extra in enumerate(comps)]
            return Ex(name(self.adj(v)), v.type) + tup(parts, dtype)

        pre, result = self.build(build, s.loc)
        body = pre + [assign(self.adj(v), result.node, s.loc)]
        return [located(ast.If(not_none(self.adj(s.array)), body, []), s.loc)]

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

    def r_Loop(self, s):
        n, stacks = self.names_of(s)
        k = self.names.fresh("k")
        body = []
        for h, _ in s.carried:
            body.append(assign(h.name, self.pop(h, stacks[id(h)],
                                                self.target.stack_row(name(k))), s.loc))
        if s.kind == "for":  # the loop variable of iteration k: start + k * step
            i = name(k)
            if not (isinstance(s.step, ir.Const) and s.step.value == 1):
                i = ast.BinOp(i, ast.Mult(), self.ex(s.step).node)
            if not (isinstance(s.start, ir.Const) and s.start.value == 0):
                i = ast.BinOp(self.ex(s.start).node, ast.Add(), i)
            body.append(assign(s.var.name, i, s.loc))
        for p in self.undo:  # back to the arrays as iteration k found them
            height = self.load_element(stacks[id(p)][0], [self.target.stack_row(name(k))],
                                       T.int64).node
            body += self.undo_to(p, height, s.loc)
        self.depth += 1
        body += self.record(s.body)
        for h, e in s.carried:
            if has_adjoint(h):
                body += self.accumulate(e, Ex(name(self.adj(h)), h.type), s.loc)
                body.append(assign(self.adj(h), adj_zero_node(h.type), s.loc))
        body += self.reverse(s.body)
        self.depth -= 1
        rng = ast.Call(name("range"), [ast.BinOp(name(n), ast.Sub(), ast.Constant(1)),
                                       ast.Constant(-1), ast.Constant(-1)], [])
        return [located(ast.For(ast.Name(k, ast.Store()), rng, tag(body, s.loc), []), s.loc)]


class _Substitute(ast.NodeTransformer):
    """Replace the math calls a mapping names (by ``ast.dump``) with their variables."""

    def __init__(self, names):
        self.names = names

    def visit_Call(self, node):
        var = self.names.get(ast.dump(node)) if getattr(node, "weft_math", None) else None
        return name(var) if var is not None else self.generic_visit(node)


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


def _leaves(t, path=()):
    """``[(path, type)]`` of the values a loop stack row holds for type ``t``: itself, or each
    element of a tuple (nested tuples flattened; ``path`` indexes into the tuple)."""
    if not isinstance(t, T.TupleType):
        return [(path, t)]
    return [leaf for k, x in enumerate(t.types) for leaf in _leaves(x, path + (k,))]


def _is_zero(node):
    """A literal zero as the generators write it: ``float32(0.0)``."""
    return (isinstance(node, ast.Call) and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)


