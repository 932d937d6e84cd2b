"""Loops of the adjoint generator: the replay records, for every dynamic loop, the values of its
loop-carried variables (and the undo stacks' heights) at the start of each iteration on
per-thread stacks, one row per iteration; the reverse sweep walks the iterations backwards,
restoring iteration k from the stacks, recomputing its body and reversing it.
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..core.errors import KernelSyntaxError
from ..stdlib import ir
from ..stdlib.exprs import Ex, name
from .adjoint_vars import has_adjoint
from .codegen import adj_zero_node, assign, located, storage_dtype_node, tag, wk_call


class AdjointLoops:
    """Mixin of the adjoint generator: recording loops in the replay and reversing them."""

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


def _leaves(t, path=()):
    """``[(path, type)]`` of the values a loop stack row holds for type ``t``: itself, or each
    element of a tuple (nested tuples flattened; ``path`` indexes into the tuple)."""
    if not isinstance(t, T.TupleType):
        return [(path, t)]
    return [leaf for k, x in enumerate(t.types) for leaf in _leaves(x, path + (k,))]
