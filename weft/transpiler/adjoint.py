"""Pass ``adjoint``: IR -> Python statements of the reverse sweep.

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

from .. import types as T
from ..errors import KernelSyntaxError
from . import ir
from .codegen import Gen, adj_zero_node, assign, index_node, not_none, storage_dtype_node, tag
from .exprs import Ex, const, name, zero
from .forward import Forward


def diff(v):
    return isinstance(v, ir.Var) and not isinstance(v.type, T.ArrayType) and \
        T.is_differentiable(v.type)


def adj(v):
    return f"adj_{v.name}"


class Adjoint(Gen):
    def __init__(self, fir, names):
        super().__init__(fir, names)
        self.fwd = Forward(fir, names, replay=True)
        self.loop_names = {}
        self.depth = 0
        self.atomic_arrays = set()
        self.needed = adjoint_needed(fir)
        for s in ir.walk(fir.body):
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Load):
                e = s.expr
                if isinstance(s.dst.type, T.ArrayType) or not self.own_index(e.array, e.index):
                    self.atomic_arrays.add(e.array)
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Call):
                self.atomic_arrays.update(a for a in s.expr.args if isinstance(a, ir.Var)
                                          and isinstance(a.type, T.ArrayType))

    # ------------------------------------------------------------------------------ entry
    def body(self):
        """Replay + reverse sweep of the whole function body, with adjoint initialisation."""
        stmts = [s for s in self.fir.body if not isinstance(s, ir.Return)]
        rets = [s for s in self.fir.body if isinstance(s, ir.Return)]
        out = self.record(stmts)
        init = []
        for v in ir.defined_vars(self.fir.body) + [p for p in self.fir.params]:
            if diff(v):
                init.append(assign(adj(v), adj_zero_node(v.type)))
        out += init
        for r in rets:
            if diff(r.value):
                out += self.accumulate(r.value, Ex(name("adj_ret"), r.value.type), r.loc)
        out += self.reverse(stmts)
        return out

    # ------------------------------------------------------------------------------ record
    def record(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.Loop):
                out += self.record_loop(s)
            elif isinstance(s, ir.If):
                st = ast.If(self.ex(s.cond).node, self.record(s.body) or [ast.Pass()],
                            self.record(s.orelse))
                st._weft_loc = s.loc
                out.append(st)
            else:
                out += self.fwd.stmt(s)
        return out

    def names_of(self, loop):
        key = id(loop)
        if key not in self.loop_names:
            n = self.names.fresh("n")
            stacks = {id(h): self.names.fresh("stk") for h, _ in loop.carried}
            self.plain_buffers.update(stacks.values())
            self.loop_names[key] = (n, stacks)
        return self.loop_names[key]

    def stack_alloc(self, h, cap_node):
        t = h.type
        if isinstance(t, T.TupleType):
            raise KernelSyntaxError(f"{self.fir.name}: tuple values carried through a loop are "
                                    "not supported yet")
        dt = storage_dtype_node(t)
        # one row per iteration, holding an element as arrays of that type hold it
        shape = cap_node if not T.is_composite(t) else ast.Tuple(
            [cap_node] + [ast.Constant(d) for d in T.element_shape(t)], ast.Load())
        return ast.Call(ast.Attribute(name("np"), "empty", ast.Load()), [shape, dt], [])

    def record_loop(self, s):
        n, stacks = self.names_of(s)
        out = [assign(n, ast.Constant(0), s.loc)]
        if s.kind == "for":
            cap = ast.Call(ast.Attribute(name("_wk"), "trip_count", ast.Load()),
                           [self.ex(s.start).node, self.ex(s.stop).node, self.ex(s.step).node],
                           [])
        else:
            cap = ast.Constant(16)
        for h, _ in s.carried:
            out.append(assign(stacks[id(h)], self.stack_alloc(h, cap), s.loc))
        body = []
        if s.kind == "while":
            for h, _ in s.carried:
                stk = stacks[id(h)]
                grow = ast.If(ast.Compare(name(n), [ast.GtE()], [ast.Subscript(
                    ast.Attribute(name(stk), "shape", ast.Load()), ast.Constant(0), ast.Load())]),
                    [assign(stk, ast.Call(ast.Attribute(name("_wk"), "grow", ast.Load()),
                                          [name(stk)], []))], [])
                body.append(grow)
        for h, _ in s.carried:
            body += self.store_element(stacks[id(h)], [name(n)], Ex(name(h.name), h.type), s.loc)
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
        """``adj_v += contribution`` (componentwise; tuples item by item)."""
        if not diff(v) or contribution is None:
            return []
        target = Ex(name(adj(v)), v.type)

        def build():
            if T.is_composite(v.type) and isinstance(contribution.node, ast.Tuple):
                # leave components with a literal zero contribution alone (x + 0.0 is not
                # free: without fast-math LLVM must keep it for -0.0)
                from .exprs import tup
                c = contribution
                items = [target.comp(i) if _is_zero(c.comp(i).node) else
                         target.comp(i) + c.comp(i) for i in range(v.type._length_)]
                return tup(items, v.type)
            if isinstance(v.type, T.TupleType):
                c = contribution.atom()
                items = [target.comp(i) + c.comp(i) if T.is_differentiable(t) else target.comp(i)
                         for i, t in enumerate(v.type.types)]
                from .exprs import tup
                return tup(items, v.type)
            return target + contribution

        stmts, result = self.build(build, loc)
        return stmts + [assign(adj(v), result.node, loc)]

    def consumed(self, v, loc):
        """Reset ``adj_v`` after its definition was reversed (needed inside loops)."""
        if self.depth == 0 or not diff(v):
            return []
        return [assign(adj(v), adj_zero_node(v.type), loc)]

    def r_Assign(self, s):
        e = s.expr
        if isinstance(e, ir.Copy):
            if not diff(s.dst) or id(s.dst) not in self.needed:
                return []
            out = self.accumulate(e.src, Ex(name(adj(s.dst)), s.dst.type), s.loc) \
                if isinstance(e.src, ir.Var) else []
            return out + self.consumed(s.dst, s.loc)
        if isinstance(e, ir.Prim):
            return self.r_prim(s)
        if isinstance(e, ir.Load):
            if isinstance(s.dst.type, T.ArrayType) or not diff(s.dst):
                return []
            return self.to_array(e.array, e.index, Ex(name(adj(s.dst)), s.dst.type), s.loc) + \
                self.consumed(s.dst, s.loc)
        if isinstance(e, ir.Call):
            return self.r_call(s)
        raise TypeError(e)

    def r_prim(self, s):
        b = s.expr.builtin
        if not b.differentiable or not diff(s.dst) or not any(diff(a) for a in s.expr.args) \
                or id(s.dst) not in self.needed:
            return self.consumed(s.dst, s.loc)
        args = [self.ex(a) for a in s.expr.args]
        ret = Ex(name(s.dst.name), s.dst.type)
        adj_ret = Ex(name(adj(s.dst)), s.dst.type)
        stmts, contribs = self.build(
            lambda: [c.atom("a") if c is not None else None
                     for c in b.adjoint(*args, ret=ret, adj=adj_ret, **s.expr.attrs)], s.loc)
        out = stmts
        for a, c in zip(s.expr.args, contribs):
            if diff(a) and c is not None:
                out += self.accumulate(a, c, s.loc)
        return out + self.consumed(s.dst, s.loc)

    def r_call(self, s):
        f = s.expr.func
        args = s.expr.args
        diff_params = [i for i, p in enumerate(f.params) if diff(p)]
        array_params = [i for i, p in enumerate(f.params) if isinstance(p.type, T.ArrayType)
                        and T.is_differentiable(p.type)]
        has_ret = f.ret_type is not None and T.is_differentiable(f.ret_type)
        if not array_params and not any(diff(args[i]) for i in diff_params):
            return self.consumed(s.dst, s.loc)
        call_args = [self.ex(a).node for a in args]
        call_args += [name(adj(args[i])) for i in array_params]
        if has_ret:
            call_args.append(name(adj(s.dst)))
        call = ast.Call(name(f"{f.name}__adj"), call_args, [])
        if not diff_params:
            st = ast.Expr(call)
            st._weft_loc = s.loc
            return [st] + self.consumed(s.dst, s.loc)
        tmp = self.names.fresh("c")
        out = [assign(tmp, call, s.loc)]
        for k, i in enumerate(diff_params):
            if diff(args[i]):
                c = Ex(ast.Subscript(name(tmp), ast.Constant(k), ast.Load()), args[i].type)
                out += self.accumulate(args[i], c, s.loc)
        return out + self.consumed(s.dst, s.loc)

    def to_array(self, arr, index, value, loc):
        """Accumulate ``value`` into ``adj_arr[index]`` (atomically where needed)."""
        if not T.is_differentiable(arr.type):
            return []
        idx = self.idx_nodes(index)
        if arr in self.atomic_arrays or not self.own_index(arr, index):
            body = self.atomic_element("add", adj(arr), idx, value, loc)
        else:
            body = self.store_element(adj(arr), idx, value, loc, op=ast.Add())
        st = ast.If(not_none(adj(arr)), body, [])
        st._weft_loc = loc
        return [st]

    def from_array(self, arr, index, v, loc, scale=None, cond=None):
        """``adj_v += adj_arr[index]`` (times -1 for subtraction)."""
        if not diff(v) or not T.is_differentiable(arr.type):
            return []
        idx = self.idx_nodes(index)

        def build():
            g = self.load_element(adj(arr), idx, arr.type.dtype)
            if scale is not None:
                g = g * scale
            if cond is not None:
                from .exprs import select
                g = select(cond(), g.atom(), zero(g.type))
            return Ex(name(adj(v)), v.type) + g

        stmts, result = self.build(build, loc)
        st = ast.If(not_none(adj(arr)), stmts + [assign(adj(v), result.node, loc)], [])
        st._weft_loc = loc
        return [st]

    def r_Store(self, s):
        out = self.from_array(s.array, s.index, s.value, s.loc)
        if T.is_differentiable(s.array.type) and s.array not in self.shared_arrays():
            # the value the element held before this store has no influence past it, so the
            # element's adjoint restarts from zero (as Warp's adj_array_store): exact for an
            # array written twice, by a loop or by two launches, and for read-then-overwrite.
            # Only where every access to the array is at the thread's own element: else
            # another thread may still need that adjoint (Warp races there)
            reset = self.store_element(adj(s.array), self.idx_nodes(s.index),
                                       zero(s.array.type.dtype), s.loc)
            st = ast.If(not_none(adj(s.array)), reset, [])
            st._weft_loc = s.loc
            out.append(st)
        return out

    def shared_arrays(self):
        """Array params accessed somewhere at an element that may be another thread's (or
        passed to a func, or viewed)."""
        if getattr(self, "_shared", None) is None:
            shared = set()
            for st in ir.walk(self.fir.body):
                if isinstance(st, (ir.Store, ir.AtomicRMW)):
                    if not self.own_index(st.array, st.index):
                        shared.add(st.array)
                elif isinstance(st, ir.Assign) and isinstance(st.expr, ir.Load):
                    e = st.expr
                    if isinstance(st.dst.type, T.ArrayType) or not self.own_index(e.array,
                                                                                 e.index):
                        shared.add(e.array)
                elif isinstance(st, ir.Assign) and isinstance(st.expr, ir.Call):
                    shared.update(a for a in st.expr.args if isinstance(a, ir.Var) and
                                  isinstance(a.type, T.ArrayType))
            self._shared = shared
        return self._shared

    def r_AtomicRMW(self, s):
        if s.op in ("add", "sub"):
            return self.from_array(s.array, s.index, s.value, s.loc,
                                   scale=-1.0 if s.op == "sub" else None)
        # min/max: the gradient goes to the value that ended up in the array
        idx = self.idx_nodes(s.index)

        def winner():
            cur = self.load_element(s.array.name, idx, s.array.type.dtype)
            return Ex(ast.Compare(cur.node, [ast.Eq()], [self.ex(s.value).node]), T.bool)

        return self.from_array(s.array, s.index, s.value, s.loc, cond=winner)

    def r_If(self, s):
        body = self.reverse(s.body)
        orelse = self.reverse(s.orelse)
        if not body and not orelse:
            return []
        st = ast.If(self.ex(s.cond).node, body or [ast.Pass()], orelse)
        st._weft_loc = s.loc
        return [st]

    def r_Return(self, s):
        return []

    def r_Loop(self, s):
        n, stacks = self.names_of(s)
        k = self.names.fresh("k")
        body = []
        for h, _ in s.carried:
            body.append(assign(h.name, self.load_element(stacks[id(h)], [name(k)], h.type).node,
                               s.loc))
        if s.kind == "for":
            i = ast.BinOp(self.ex(s.start).node, ast.Add(), ast.BinOp(
                name(k), ast.Mult(), self.ex(s.step).node))
            body.append(assign(s.var.name, i, s.loc))
        self.depth += 1
        body += self.record(s.body)
        for h, e in s.carried:
            if diff(h):
                body += self.accumulate(e, Ex(name(adj(h)), h.type), s.loc)
                body.append(assign(adj(h), adj_zero_node(h.type), s.loc))
        body += self.reverse(s.body)
        self.depth -= 1
        rng = ast.Call(name("range"), [ast.BinOp(name(n), ast.Sub(), ast.Constant(1)),
                                       ast.Constant(-1), ast.Constant(-1)], [])
        st = ast.For(ast.Name(k, ast.Store()), rng, tag(body, s.loc), [])
        st._weft_loc = s.loc
        return [st]


def _is_zero(node):
    """A literal zero as the generators write it: ``float32(0.0)``."""
    return (isinstance(node, ast.Call) and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0)


def adjoint_needed(fir):
    """Ids of the variables whose adjoint can be nonzero: those that flow, through
    differentiable operations, into an array store, an atomic, a returned value or a func
    call. The reverse sweep skips the others (zero-skipping done statically), which also keeps
    a NaN or inf that only feeds a non-differentiable test (``isnan(x / 0)``) out of the
    gradients: 0 * inf would be NaN."""
    needed = set()

    def need(*ops):
        for o in ops:
            if isinstance(o, ir.Var) and id(o) not in needed:
                needed.add(id(o))
                changed[0] = True

    changed = [True]
    while changed[0]:
        changed[0] = False
        for st in ir.walk(fir.body):
            if isinstance(st, (ir.Store, ir.AtomicRMW)) and T.is_differentiable(st.array.type):
                need(st.value)
            elif isinstance(st, ir.Return):
                need(st.value)
            elif isinstance(st, ir.Loop):
                for h, e in st.carried:
                    if id(h) in needed:
                        need(e)
            elif isinstance(st, ir.Assign):
                e = st.expr
                if isinstance(e, ir.Call) and (id(st.dst) in needed or any(
                        isinstance(p.type, T.ArrayType) for p in e.func.params)):
                    need(*e.args)
                elif id(st.dst) not in needed:
                    continue
                elif isinstance(e, ir.Copy):
                    need(e.src)
                elif isinstance(e, ir.Prim) and e.builtin.differentiable:
                    need(*e.args)
    return needed


def func_signature(fir):
    """Parameter names of ``<func>__adj``: params, adjoint arrays, ``adj_ret``."""
    params = [p.name for p in fir.params]
    params += [adj(p) for p in fir.params
               if isinstance(p.type, T.ArrayType) and T.is_differentiable(p.type)]
    if fir.ret_type is not None and T.is_differentiable(fir.ret_type):
        params.append("adj_ret")
    return params


def func_returns(fir):
    """The ``return`` statement of ``<func>__adj``: adjoints of differentiable params."""
    items = [name(adj(p)) for p in fir.params if diff(p)]
    return ast.Return(ast.Tuple(items, ast.Load()))


__all__ = ["Adjoint", "func_signature", "func_returns", "const", "index_node"]
