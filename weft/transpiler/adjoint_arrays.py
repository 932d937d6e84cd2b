"""Array adjoints of the adjoint generator: the reverse of loads (accumulating into the adjoint
array, by a plain ``+=`` at the thread's own elements, an atomic add otherwise), stores (read
the element's adjoint, then reset it) and atomic read-modify-writes (for min/max, the gradient
goes to the value that ended up in the array, shared among tied threads).
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..stdlib.exprs import Ex, const, name, zero
from .adjoint_vars import has_adjoint
from .codegen import assign, component_indices, index_node, is_half, located, not_none


class AdjointArrays:
    """Mixin of the adjoint generator: the reverse sweep's reads and writes of adjoint arrays."""

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
