"""Dead assignments found by following the flow of a generated function, not its names (a step
of the pass ``cuda_tiles``, for CUDA tile kernels' adjoints).

:func:`weft.transpiler.prune.drop_dead` keeps an assignment when any statement of the function
reads its name. An adjoint's reverse loop replays the forward loop's body under the same names:
in ``for k in range(n): acc = tile_matmul(a, b, acc)`` the forward loop reads ``acc_1``, so the
reverse loop's replay ``acc_1 = _stk0[k]; acc_2 = tile_matmul_acc(x, y, acc_1); acc_3 = acc_2``
looks live by name, though nothing after it reads it (the product's adjoint reads ``x``, ``y``
and the adjoint of ``acc_2``). The replay keeps the stack of the loop's tiles alive, and on CUDA
that stack needs shared memory of a size known when compiling (``cuda_tiles.tile_stack``).

:func:`drop_dead_by_flow` computes which names are live after each statement, by the usual
backward analysis over the function's structured statements (a loop's head: what is live after
it, joined with what its body needs from the head, to a fixed point; ``break`` and ``continue``
as the head, a superset of both), drops each assignment of a pure value to names not live after
it, then drops the local arrays only ever stored into (a stack whose rows nothing reads back) with
their stores. It only removes code that cannot change anything the function writes or returns.
"""
from __future__ import annotations

import ast

from .prune import _binding, _bound_names, _reads, drop_dead

_ALLOCS = ("np.empty", "np.zeros", "cuda.local.array")


class _Flow:
    def __init__(self, pure_funcs):
        self.pure_funcs = pure_funcs
        self.dead = set()
        self.heads = []  # the live sets of the enclosing loops' heads (break, continue)

    def block(self, stmts, live, mark):
        for st in reversed(stmts):
            live = self.stmt(st, live, mark)
        return live

    def stmt(self, st, live, mark):
        kind = type(st)
        if kind is ast.If:
            return _reads(st.test) | self.block(st.body, live, mark) | \
                self.block(st.orelse, live, mark)
        if kind is ast.For or kind is ast.While:
            return self.loop(st, live, mark)
        if kind is ast.Break or kind is ast.Continue:
            return set(self.heads[-1]) if self.heads else set(live)
        if kind is ast.Return:
            return _reads(st.value) if st.value is not None else set()
        if kind is ast.Pass:
            return live
        b = _binding(st, self.pure_funcs) or _stack_read(st)
        if b is not None:
            names, reads = b
            if not live.intersection(names):
                if mark:
                    self.dead.add(id(st))
                return live  # (dead: it adds nothing)
            return (live - set(names)) | reads
        if kind is ast.Assign:
            bound = {n for t in st.targets for n in _bound_names(t)}
            return (live - bound) | _reads(st)
        if kind in (ast.With, ast.Try):
            return live | _reads(st)  # (not written by the generators: everything is read)
        return live | _reads(st)

    def loop(self, st, after, mark):
        targets = set(_bound_names(st.target)) if type(st) is ast.For else set()
        test = _reads(st.test) if type(st) is ast.While else set()
        head = set(after) | test
        while True:
            self.heads.append(head)
            body = self.block(st.body, head, False)
            self.heads.pop()
            new = set(after) | test | (body - targets)
            if new == head:
                break
            head = new
        if mark:
            self.heads.append(head)
            self.block(st.body, head, True)
            self.heads.pop()
        live = head | (self.block(st.orelse, after, mark) if st.orelse else set())
        return live | (_reads(st.iter) if type(st) is ast.For else set())


def _stack_read(st):
    """``(names, reads)`` of ``x = _stk[_wk.stack_slot(k, cap, _err)]``: a row read back from a
    loop's stack, whose index check guards only the read itself (gone with it)."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Subscript) and \
            isinstance(st.value.value, ast.Name) and isinstance(st.value.slice, ast.Call) and \
            ast.unparse(st.value.slice.func) == "_wk.stack_slot":
        return [st.targets[0].id], _reads(st.value)
    return None


def _sweep(body, dead):
    out = []
    for st in body:
        if id(st) in dead:
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list) and sub:
                setattr(st, field, _sweep(sub, dead) or ([ast.Pass()] if field == "body"
                                                          else []))
        out.append(st)
    return out


def _unread_arrays(fdef):
    """The statements making a local array (``_stk0 = cuda.local.array(...)``) that is only ever
    stored into (``_stk0[i] = v``, never read, nor named anywhere else), and those stores."""
    allocs, stores = {}, {}
    for st in ast.walk(fdef):
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t = st.targets[0]
            if isinstance(t, ast.Name) and isinstance(st.value, ast.Call) and \
                    ast.unparse(st.value.func) in _ALLOCS:
                allocs.setdefault(t.id, []).append(st)
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                stores.setdefault(t.value.id, []).append(st)
    mentions = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and node.id in allocs:
            mentions[node.id] = mentions.get(node.id, 0) + 1
    out = set()
    for n, made in allocs.items():
        mine = stores.get(n, [])
        if len(made) == 1 and mentions[n] == 1 + len(mine):  # its making and its stores only
            out |= {id(s) for s in made + mine}
    return out


def drop_dead_by_flow(fdef, pure_funcs=()):
    """``fdef`` (changed in place) without the assignments nothing after them reads, then
    without the local arrays nothing reads, then pruned by name again; returns it."""
    flow = _Flow(pure_funcs)
    flow.block(fdef.body, set(), True)
    if flow.dead:
        fdef.body = _sweep(fdef.body, flow.dead) or [ast.Pass()]
    unread = _unread_arrays(fdef)
    if unread:
        fdef.body = _sweep(fdef.body, unread) or [ast.Pass()]
    return drop_dead(fdef, pure_funcs)
