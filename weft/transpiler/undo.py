"""Replayed stores (CPU adjoints): the undo stacks of :class:`~weft.transpiler.adjoint.Adjoint`.

Where a copy of an array from before the launch cannot replay a kernel's reads (writes at
other threads' elements, reads of the thread's own writes, loops reading what earlier
iterations wrote: ``analyze.replayed_arrays``), the adjoint's replay performs the kernel's
stores (and atomic adds) into a private copy of the array, saving each element it overwrites
on a per-thread undo stack; the reverse sweep puts the element back as it passes the store,
and reversing a loop first pops the stack to the height the iteration started at
(``docs/loops.md``).
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..stdlib import ir
from ..stdlib.exprs import name
from .codegen import index_node, located, storage_dtype_node


class UndoStacks:
    """Mixin of the adjoint generator: ``self.undo`` maps each replayed array param to the
    names of its stack (count, values, indices)."""

    def undo_init(self, facts, target):
        self.undo = {}
        if target.name != "cuda":
            for p in facts.replayed_arrays():
                self.undo[p] = (self.names.fresh("un"), self.names.fresh("uv"),
                                self.names.fresh("ui"))
        self.plain_buffers.update(n for _c, v, i in self.undo.values() for n in (v, i))
        if self.undo:
            self.fwd.replayed, self.fwd.replay_store = set(self.undo), self.replay_store
        if target.name != "cuda":  # counters handing out slots: their atomics run again
            self.fwd.atomic_replayed = set(facts.atomic_replays())

    def undo_alloc(self):
        """Each replayed array's undo stack: the elements its stores overwrote (values, and
        their indices as int64 rows), and the count of entries."""
        out = []
        for p, (count, vals, idxs) in self.undo.items():
            out += [ast.Assign([ast.Name(count, ast.Store())], ast.Constant(0)),
                    ast.Assign([ast.Name(vals, ast.Store())], self.target.stack_alloc(
                        ast.Constant(16), T.element_shape(p.type.dtype),
                        storage_dtype_node(p.type.dtype))),
                    ast.Assign([ast.Name(idxs, ast.Store())], self.target.stack_alloc(
                        ast.Constant(16), (p.type.ndim,),
                        ast.Name("int64", ast.Load())))]
        return [ast.fix_missing_locations(n) for n in out]

    def replay_store(self, s):
        """The replay of ``p[idx] = v`` (or ``wp.atomic_add(p, idx, v)``, its old value unused)
        for a replayed array: save the element, then store (add)."""
        count, vals, idxs = self.undo[s.array]
        idx = self.idx_nodes(s.index)
        out = self.target.stack_grow(vals, count) + self.target.stack_grow(idxs, count)
        out.append(ast.Assign([ast.Subscript(name(vals), name(count), ast.Store())],
                              ast.Subscript(name(s.array.name), index_node(idx), ast.Load())))
        for axis, i in enumerate(idx):
            out.append(ast.Assign([ast.Subscript(name(idxs), ast.Tuple(
                [name(count), ast.Constant(axis)], ast.Load()), ast.Store())], i))
        out.append(ast.AugAssign(ast.Name(count, ast.Store()), ast.Add(), ast.Constant(1)))
        out = [located(n, s.loc) for n in out]
        if isinstance(s, ir.AtomicRMW):
            return out + self._atomics(s.op, s.array.name, idx, self.ex(s.value), s.loc, None)
        return out + self.store_element(s.array.name, idx, self.ex(s.value), s.loc)

    def restore_store(self, s):
        """The reverse of a replayed store: the element it overwrote back in place."""
        count, vals, _ = self.undo[s.array]
        idx = self.idx_nodes(s.index)
        out = [ast.AugAssign(ast.Name(count, ast.Store()), ast.Sub(), ast.Constant(1)),
               ast.Assign([ast.Subscript(name(s.array.name), index_node(idx), ast.Store())],
                          ast.Subscript(name(vals), name(count), ast.Load()))]
        return [located(n, s.loc) for n in out]

    def undo_to(self, p, height, loc):
        """Pop ``p``'s undo stack down to ``height``, putting each element back."""
        count, vals, idxs = self.undo[p]
        target = ast.Subscript(name(p.name), index_node([
            ast.Subscript(name(idxs), ast.Tuple([name(count), ast.Constant(a)], ast.Load()),
                          ast.Load()) for a in range(p.type.ndim)]), ast.Store())
        body = [ast.AugAssign(ast.Name(count, ast.Store()), ast.Sub(), ast.Constant(1)),
                ast.Assign([target], ast.Subscript(name(vals), name(count), ast.Load()))]
        loop = ast.While(ast.Compare(name(count), [ast.Gt()], [height]), body, [])
        return [located(loop, loc)]
