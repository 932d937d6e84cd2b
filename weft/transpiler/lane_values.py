"""The lane values of pass ``lanes`` (:mod:`weft.transpiler.lanes`) that outlive a lane loop or
that lanes write into arrays: per-lane buffers, lane views made again in a later loop, and the
tile stores and atomic adds each lane makes of its own elements (Warp's layout). A mixin of
``lanes.Rewrite`` (it uses the rewrite's ``loops``, lane-varying set ``V``, ``fresh`` names,
``sentinel`` lane and block size ``B``)."""
from __future__ import annotations

import linecache
import math

from ..core import types as T
from ..core.errors import KernelError
from ..stdlib import ir
from ..stdlib.registry import lookup


def _fail(fir, loc, msg, kind="kernel"):
    """The pass's refusal of ``fir`` at ``loc``: a KernelError with its source line."""
    line = linecache.getline(loc.filename, loc.lineno) if loc is not None else None
    return KernelError(f"cooperative CPU blocks (wp.config.enable_cpu_blocks): {msg}",
                       loc.filename if loc else None, loc.lineno if loc else None,
                       loc.col if loc else None, line or None, fir.name, kind)


class LaneValues:
    """The rewrite's lane writes, lane views and per-lane buffers."""

    def lane_write(self, a, t, offs, loc, add=False):
        """``tile_store(a, t, offset)`` (``tile_atomic_add`` with ``add``) whose array or
        offset differs between lanes, as Warp runs it: element ``e`` of ``t`` (row-major) is
        the lane ``e % block_dim``'s, which writes it at its own offset (elements outside
        ``a`` skipped). In the lane's turn::

            for e in range(lane, t.size, block_dim):
                i, j = offset + (e // cols, e % cols)
                if 0 <= i < a.shape[0] and 0 <= j < a.shape[1]:
                    a[i, j] = t[e // cols, e % cols]       # (an atomic add with add)

        (the block's tile is read, the lane's array written: ordinary IR, differentiated as
        any loop)."""
        shape = t.type.shape
        i32 = T.int32
        body = []

        def put(hint, type_, builtin, args, attrs=None):
            v = self.fresh(hint, type_)
            body.append(ir.Assign(v, ir.Prim(lookup(builtin), args, attrs or {}), loc))
            return v

        e = self.fresh("e", i32)
        if len(shape) == 1:
            comps = [e]
        else:
            cols = ir.Const(shape[1], i32)
            comps = [put("row", i32, "floordiv", [e, cols]), put("col", i32, "mod", [e, cols])]
        ext = put("shape", T.TupleType((i32,) * len(shape)), "array_shape", [a])
        where, ok = [], None
        for k, (o, c) in enumerate(zip(offs, comps)):
            if o.type != i32:
                o = put("off", i32, "cast", [o], {"type": i32})
            p = put("at", i32, "add", [o, c])
            n = put("n", i32, "tuple_get", [ext], {"index": k})
            inside = put("in", T.bool, "bool_and", [put("lo", T.bool, "ge", [p, ir.Const(0, i32)]),
                                                   put("hi", T.bool, "lt", [p, n])])
            ok = inside if ok is None else put("in", T.bool, "bool_and", [ok, inside])
            where.append(p)
        v = self.fresh("v", t.type.dtype)
        write = ir.AtomicRMW("add", a, where, v, None, loc) if add else \
            ir.Store(a, where, v, loc)
        inner = [ir.Assign(v, ir.Prim(lookup("tile_extract"), [t] + comps), loc), write]
        body.append(ir.If(ok, inner, [], loc))
        return [ir.Loop("for", e, self.sentinel, ir.Const(math.prod(shape), i32),
                        ir.Const(self.B, i32), body, [], None, loc)]

    # ------------------------------------------------------------------------------ buffers
    def recompute_views(self):
        """An array view a lane loop makes (``out[b]``, ``b`` the lane's block, or a name for
        one) and a later lane loop reads is made again at the top of that loop from its
        operands (which :meth:`buffers` then keeps or recomputes, as any lane value): a
        per-lane buffer holds values, not views."""
        while True:  # (a view of a view: its base is made again in the next round)
            made = {}
            for loop, _lane in self.loops:
                for s in ir.walk(loop.body):
                    if isinstance(s, ir.Assign) and isinstance(s.expr, (ir.Load, ir.Copy)) \
                            and isinstance(s.dst.type, T.ArrayType) and id(s.dst) in self.V:
                        made[id(s.dst)] = (s, loop)
            changed = False
            for loop, _lane in self.loops:
                uses = ir.used_vars(loop.body)
                own = {id(v) for v in ir.defined_vars(loop.body)}
                pre = []
                for vid, (s, where) in made.items():
                    if where is loop or vid not in uses or vid in own:
                        continue
                    mine = self.fresh(s.dst.name, s.dst.type)
                    self.V.add(id(mine))
                    e = s.expr
                    again = ir.Copy(e.src) if isinstance(e, ir.Copy) else \
                        ir.Load(e.array, list(e.index))
                    pre.append(ir.Assign(mine, again, s.loc))
                    loop.body = _rename(loop.body, s.dst, mine)
                if pre:
                    loop.body = pre + loop.body
                    changed = True
            if not changed:
                return

    def buffers(self):
        """Per-lane buffers of the lane-varying values one lane loop makes and another
        reads: written where the value is made, read (into a variable of the loop's own) at
        the top of the loop that reads it; a lane's launch index is recomputed instead.
        Returns the buffers' allocations. The buffers are written in place: a kernel that
        needs one has no adjoint (``self.buffered``)."""
        defs, uses = {}, {}
        for k, (loop, lane) in enumerate(self.loops):
            for v in ir.defined_vars(loop.body):
                defs.setdefault(id(v), (v, set()))[1].add(k)
            uses[k] = ir.used_vars(loop.body)
        allocs = []
        bufs = {}
        for k, (loop, lane) in enumerate(self.loops):
            reads = []
            for vid, (v, where) in defs.items():
                if vid not in uses[k] or where == {k} or vid not in self.V:
                    continue
                mine = self.fresh(v.name, v.type)
                if vid in self.remat:
                    reads.append(ir.Assign(mine, ir.Prim(lookup("lane_tid"), [lane],
                                                         self.remat[vid]), loop.loc))
                else:
                    if not (T.is_scalar(v.type) or T.is_composite(v.type)):
                        raise _fail(self.fir, loop.loc, f"the value '{v.name}' (a "
                                    f"{T.type_name(v.type)}) differs between lanes and lives "
                                    "across a tile operation")
                    if vid not in bufs:
                        buf = self.fresh(f"buf_{v.name}", T.TileType(v.type, (self.B,)))
                        bufs[vid] = buf
                        allocs.append(ir.Assign(buf, ir.Prim(lookup("tile_const"), [], {
                            "type": buf.type, "value": 0}), loop.loc))
                    rd = ir.Assign(mine, ir.Prim(lookup("tile_extract"), [bufs[vid], lane]),
                                   loop.loc)
                    self.reads.add(id(rd))
                    reads.append(rd)
                loop.body = _rename(loop.body, v, mine)
            loop.body = reads + loop.body
        # the writes, where each buffered value is made
        for k, (loop, lane) in enumerate(self.loops):
            loop.body = _after_defs(loop.body, {vid: b for vid, b in bufs.items()
                                                if vid not in self.remat}, lane, self.reads)
        self.buffered = bool(bufs)
        return allocs


def _rename(stmts, old, new):
    """``stmts`` with operand ``old`` read as ``new`` (in place; the list is returned)."""

    def sub(x):
        return new if x is old else x

    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign):
            e = s.expr
            if isinstance(e, (ir.Prim, ir.Call, ir.GradCall)):
                e.args = [sub(a) for a in e.args]
            elif isinstance(e, ir.Load):
                e.array = sub(e.array)
                e.index = [sub(i) for i in e.index]
            elif isinstance(e, ir.Copy):
                e.src = sub(e.src)
        elif isinstance(s, (ir.Store, ir.AtomicRMW)):
            s.array, s.value = sub(s.array), sub(s.value)
            s.index = [sub(i) for i in s.index]
            if isinstance(s, ir.AtomicRMW) and s.compare is not None:
                s.compare = sub(s.compare)
        elif isinstance(s, ir.Effect):
            s.args = [sub(a) for a in s.args]
        elif isinstance(s, ir.If):
            s.cond = sub(s.cond)
        elif isinstance(s, ir.Loop):
            s.start, s.stop, s.step = sub(s.start), sub(s.stop), sub(s.step)
            s.carried = [(h, sub(e)) for h, e in s.carried]
    return stmts


def _after_defs(stmts, bufs, lane, reads):
    out = []
    for s in stmts:
        if isinstance(s, ir.If):
            s.body = _after_defs(s.body, bufs, lane, reads)
            s.orelse = _after_defs(s.orelse, bufs, lane, reads)
            out.append(s)
            continue
        if isinstance(s, ir.Loop):
            s.body = _after_defs(s.body, bufs, lane, reads)
            out.append(s)
            for h, _ in s.carried:
                if id(h) in bufs:
                    out.append(ir.Effect(lookup("lane_set"), [bufs[id(h)], lane, h], s.loc))
            continue
        out.append(s)
        dst = getattr(s, "dst", None)
        if dst is not None and id(dst) in bufs and id(s) not in reads:
            out.append(ir.Effect(lookup("lane_set"), [bufs[id(dst)], lane, dst], s.loc))
    return out
