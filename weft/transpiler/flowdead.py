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
import collections

from .prune import _binding, _bound_names, _reads, drop_dead, pure

_ALLOCS = ("np.empty", "np.zeros", "cuda.local.array")


def _fresh_arrays(fdef):
    """``name -> root`` for the fresh local arrays whose elements the generated code writes
    through views of them: a root is bound only to ``np.zeros``/``np.empty``, a view only to
    ``root.reshape(...)``; in the one statement list that mentions them, the root is made,
    then written (through its views, or itself), and only then read otherwise (an alias, an
    argument): so no alias made before a write sees it, and a write is dead when the root is
    (``X = R`` made after it reads the root). Anything else: not a fresh array."""
    binds, other = {}, set()
    for st in ast.walk(fdef):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name):
            binds.setdefault(st.targets[0].id, []).append(st.value)
        elif isinstance(st, (ast.Assign, ast.AugAssign, ast.For, ast.AnnAssign)):
            for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                other.update(_bound_names(t))
    roots = {n for n, vs in binds.items() if n not in other and all(
        isinstance(v, ast.Call) and ast.unparse(v.func) in ("np.zeros", "np.empty") for v in vs)}
    fam = {r: r for r in roots}
    for n, vs in binds.items():
        bases = {v.func.value.id for v in vs if isinstance(v, ast.Call) and
                 isinstance(v.func, ast.Attribute) and v.func.attr == "reshape" and
                 isinstance(v.func.value, ast.Name)}
        if n not in other and n not in roots and len(bases) == 1 and len(vs) == len([
                v for v in vs if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                and v.func.attr == "reshape"]) and next(iter(bases)) in roots:
            fam[n] = next(iter(bases))
    bad = set()
    total = collections.Counter(n.id for n in ast.walk(fdef) if isinstance(n, ast.Name))
    homes, counted = {}, {}  # root -> the statement lists making it; statement -> its names
    for body in _blocks(fdef.body):
        for st in body:
            if _is_alloc(st, None) and st.targets[0].id in fam:
                homes.setdefault(st.targets[0].id, {})[id(body)] = body

    def names(st):
        if id(st) not in counted:
            counted[id(st)] = collections.Counter(
                n.id for n in ast.walk(st) if isinstance(n, ast.Name))
        return counted[id(st)]

    for r in set(fam.values()):
        members = {n for n, rr in fam.items() if rr == r}
        made_in = list(homes.get(r, {}).values())
        # made in one statement list, and named nowhere outside it (its nested lists count)
        if len(made_in) != 1 or sum(names(st)[m] for st in made_in[0] for m in members) != \
                sum(total[m] for m in members):
            bad.add(r)
            continue
        escaped = False
        for st in made_in[0]:
            if not any(names(st)[m] for m in members):
                continue
            if _is_alloc(st, r):
                escaped = False  # a fresh array again
                continue
            if _is_view_of(st, r, members):
                continue
            writes = _stores_into(st, members)
            passed = _passed_on(st, members)
            if writes and (escaped or passed):
                bad.add(r)  # a write an alias made before it (or with it) might see
                break
            escaped = escaped or passed
    return {n: r for n, r in fam.items() if r not in bad}


def _blocks(body):
    """Every statement list of ``body`` (itself, then those nested in it)."""
    out = [body]
    for st in body:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                out += _blocks(sub)
    return out


def _is_alloc(st, r):
    """Whether ``st`` binds name ``r`` alone (any name: ``r`` None)."""
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and \
        isinstance(st.targets[0], ast.Name) and (r is None or st.targets[0].id == r)


def _is_view_of(st, r, members):
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and \
        isinstance(st.targets[0], ast.Name) and st.targets[0].id in members and \
        isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) and \
        st.value.func.attr == "reshape" and isinstance(st.value.func.value, ast.Name) and \
        st.value.func.value.id == r


def _stores_into(st, members):
    """Whether statement ``st`` (or one nested in it) stores into an element of ``members``."""
    for n in ast.walk(st):
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                for leaf in ast.walk(t):
                    if isinstance(leaf, ast.Subscript) and isinstance(leaf.value, ast.Name) \
                            and leaf.value.id in members:
                        return True
    return False


def _passed_on(st, members):
    """Whether ``st`` uses the array otherwise than by element (an alias, an argument, a view
    made of it: a slice too): what it makes may see later writes."""
    bases = {id(p.value) for p in ast.walk(st) if isinstance(p, ast.Subscript) and not any(
        isinstance(x, ast.Slice) or isinstance(x, ast.Constant) and x.value is Ellipsis
        for x in ast.walk(p.slice))}
    return any(isinstance(n, ast.Name) and n.id in members and id(n) not in bases
               for n in ast.walk(st))


class _Flow:
    def __init__(self, pure_funcs, fresh=None):
        self.pure_funcs = pure_funcs
        self.dead = set()
        self.heads = []  # the live sets of the enclosing loops' heads (break, continue)
        self.fresh = fresh or {}  # a fresh array's name or view's -> its root

    def reads(self, node):
        out = _reads(node)
        return out | {self.fresh[n] for n in out if n in self.fresh}

    def block(self, stmts, live, mark):
        for st in reversed(stmts):
            live = self.stmt(st, live, mark)
        return live

    def stmt(self, st, live, mark):
        kind = type(st)
        if kind is ast.If:
            return self.reads(st.test) | self.block(st.body, live, mark) | \
                self.block(st.orelse, live, mark)
        if kind is ast.For or kind is ast.While:
            return self.loop(st, live, mark)
        if kind is ast.Break or kind is ast.Continue:
            return set(self.heads[-1]) if self.heads else set(live)
        if kind is ast.Return:
            return self.reads(st.value) if st.value is not None else set()
        if kind is ast.Pass:
            return live
        root = self.stored_root(st)
        if root is not None:  # an element of a fresh array written: dead with the array
            if root not in live:
                if mark:
                    self.dead.add(id(st))
                return live
            return live | self.reads(st) | {root}
        b = _binding(st, self.pure_funcs) or _stack_read(st) or self.view(st)
        if b is not None:
            names, reads = b
            if not live.intersection(names):
                if mark:
                    self.dead.add(id(st))
                return live  # (dead: it adds nothing)
            return (live - set(names)) | reads | {self.fresh[n] for n in reads
                                                   if n in self.fresh}
        if kind is ast.Assign:
            bound = {n for t in st.targets for n in _bound_names(t)}
            return (live - bound) | self.reads(st)
        return live | self.reads(st)  # (With, Try: not written by the generators)

    def stored_root(self, st):
        """The fresh array whose element statement ``st`` writes (``_fv0[e] = x``), or None."""
        if isinstance(st, (ast.Assign, ast.AugAssign)):
            ts = st.targets if isinstance(st, ast.Assign) else [st.target]
            if len(ts) == 1 and isinstance(ts[0], ast.Subscript) and \
                    isinstance(ts[0].value, ast.Name) and ts[0].value.id in self.fresh:
                return self.fresh[ts[0].value.id]
        return None

    def view(self, st):
        """``(names, reads)`` of ``v = x.reshape(...)`` (a view: generated code reshapes to the
        static size of the array, so it cannot fail)."""
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name) and \
                isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
                and st.value.func.attr == "reshape" and \
                isinstance(st.value.func.value, ast.Name):
            return [st.targets[0].id], self.reads(st.value)
        return None

    def loop(self, st, after, mark):
        targets = set(_bound_names(st.target)) if type(st) is ast.For else set()
        test = self.reads(st.test) if type(st) is ast.While else set()
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
        return live | (self.reads(st.iter) if type(st) is ast.For else set())


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
    def idle(st):  # ``for _e0 in range(4): pass``: what a dead elementwise loop leaves
        return isinstance(st, ast.For) and not st.orelse and isinstance(st.target, ast.Name) \
            and all(isinstance(b, ast.Pass) for b in st.body) and \
            pure(st.iter, pure_funcs) and mentions.get(st.target.id, 0) == 1

    for _ in range(8):  # (a stack gone frees what was pushed on it: again, a few times)
        flow = _Flow(pure_funcs, _fresh_arrays(fdef))
        flow.block(fdef.body, set(), True)
        if flow.dead:
            fdef.body = _sweep(fdef.body, flow.dead) or [ast.Pass()]
        unread = _unread_arrays(fdef)
        if unread:
            fdef.body = _sweep(fdef.body, unread) or [ast.Pass()]
        mentions = {}
        for n in ast.walk(fdef):
            if isinstance(n, ast.Name):
                mentions[n.id] = mentions.get(n.id, 0) + 1
        idle_loops = {id(st) for st in ast.walk(fdef) if idle(st)}
        if idle_loops:
            fdef.body = _sweep(fdef.body, idle_loops) or [ast.Pass()]
        if not flow.dead and not unread and not idle_loops:
            break
    return drop_dead(fdef, pure_funcs)
