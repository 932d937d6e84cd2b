"""Pass ``lanes``: a kernel of cooperative CPU blocks (``wp.config.enable_cpu_blocks``) as
loops over the block's lanes between barriers.

Invariant after it: a module compiled for cooperative blocks (``CompileOptions.lanes``; any
other module is untouched) has kernels whose body runs once per block, every lane-varying
statement inside a ``for lane in range(block_dim)`` loop of the IR, every tile operation of
the block outside them (or the pass raised :class:`Uncoupled`: the usual kernel is used).

Runs after ``verify`` (the loops it makes reassign the per-lane buffers' reads, which the SSA
checks of ``verify`` would not expect). Warp runs the ``block_dim`` lanes of a CPU block as fibers: each
lane runs until a tile operation's barrier, then the next lane; the tile operations themselves
(a load, a matmul, a reduction) are the block's. weft keeps one generated thread per block and
rewrites the kernel's body so that:

- the statements whose value differs between lanes (from the lane's launch index, a stack pop,
  ``wp.untile``, ...: the *lane-varying* values, found by a fixed point that follows data and
  control) run in a loop ``for lane in range(block_dim)``;
- the block's statements (tile operations on values every lane shares) run once, between those
  loops: each is a barrier, so a lane loop ends before it;
- ``wp.tile(x)`` of a lane-varying ``x`` (and ``tile_from_thread``) writes each lane's value
  into the tile in the loop, and the loop ends there (the tile is whole after it);
- lanes writing elements of one tile (``t[i] = x``, ``t[0] &= x``: a tile operation with a
  lane-varying operand) update it in turn, in the loop, then a barrier (as Warp's);
- a lane-varying value used in a later lane loop is kept in a per-lane buffer (a tile of
  ``block_dim`` elements written in place); the lane's launch indices are recomputed instead;
- a branch on a lane-varying condition that holds tile operations runs its lane statements
  in loops guarded by the condition (lanes that returned early leave later barriers);
- a loop with tile operations inside runs once for the block when its bounds are the block's;
  a lane-varying loop bound or value carried round it is refused (KernelError).

A kernel whose lanes never interact (no ``wp.tile`` of lane values, ``untile``, stacks,
``wp.block_dim()``, lane writes into tiles, nor the lane index of a tiled launch) is left as
it was: :class:`Uncoupled` tells the runtime to run it one lane per block, as without
cooperative blocks (the result is the same, the code is the usual one). The lane loops are
ordinary IR loops (the tiles lanes fill or write carried by them), so the adjoint and tangent
generators differentiate the rewritten kernel as any other; a kernel that needs per-lane buffers
(written in place) has none (the launch refuses it with a KernelError).
"""
from __future__ import annotations

import linecache
import math

from ..core import types as T
from ..core.errors import KernelError
from ..stdlib import ir
from ..stdlib.registry import lookup


class Uncoupled(Exception):
    """The kernel's lanes do not interact: compile it as usual (one lane per block)."""


#: builtins through which lanes change a shared stack (run per lane, a barrier before)
STACK_OPS = {"tile_stack_push_b", "tile_stack_pop_b"}
#: builtins that write one element of a tile: lanes writing it couple the block
ELEMENT_WRITES = {"tile_insert", "tile_assign_b", "tile_scatter_add_b"}
#: tile writes every lane makes, its operands uniform or not
PER_LANE_WRITES = {"tile_scatter_add_b"}
#: tile operations adding into arrays: the block's, once (run per lane, a lane loop would add
#: the tile ``block_dim`` times)
BLOCK_ACCUMULATES = {"tile_atomic_add_b", "tile_atomic_add_indexed_b"}


def run(state):
    mode = state.options.lanes
    if not mode:
        return state
    from ..stdlib.lanes import LaneMode
    lm = state.lane_mode if getattr(state, "lane_mode", None) is not None else \
        LaneMode(*mode)
    if state.options.targets[0] == "cuda":
        # CUDA's blocks are real threads: the lowering wrote wp.tile(x) and untile for them
        # (tile_of_lanes, tile_lane_value); nothing to rewrite, unless nothing needed the size
        if not lm.coupled:
            raise Uncoupled()
        return state
    for fir in state.funcs:
        if fir.kind != "kernel":
            for s in ir.walk(fir.body):
                if _bname(s) in PLACEHOLDERS:
                    raise _fail(fir, getattr(s, "loc", None), "wp.tile, wp.untile and "
                                "tile_from_thread gather or scatter the block's lanes: write "
                                "them in the kernel, not in a @wp.func", kind="func")
    for fir in state.funcs:
        if fir.kind == "kernel":
            Rewrite(fir, lm).run()
    return state


PLACEHOLDERS = {"lane_gather", "lane_gather_vec", "lane_untile", "lane_from_thread"}


def _fail(fir, loc, msg, kind="kernel"):
    line = linecache.getline(loc.filename, loc.lineno) if loc is not None else None
    return KernelError(f"cooperative CPU blocks (wp.config.enable_cpu_blocks): {msg}",
                       loc.filename if loc else None, loc.lineno if loc else None,
                       loc.col if loc else None, line or None, fir.name, kind)


def _operands(s):
    """The operand variables a simple statement reads."""
    if isinstance(s, ir.Assign):
        e = s.expr
        if isinstance(e, (ir.Prim, ir.Call, ir.GradCall)):
            ops = list(e.args)
        elif isinstance(e, ir.Load):
            ops = [e.array, *e.index]
        elif isinstance(e, ir.Copy):
            ops = [e.src]
        else:
            ops = []
    elif isinstance(s, (ir.Store, ir.AtomicRMW)):
        ops = [s.array, s.value, *s.index]
        if isinstance(s, ir.AtomicRMW) and s.compare is not None:
            ops.append(s.compare)
    elif isinstance(s, ir.Effect):
        ops = list(s.args)
    else:
        ops = []
    return [o for o in ops if isinstance(o, ir.Var)]


def _is_tile(t):
    return T.is_tile_type(t) or isinstance(t, T.TileStackType)


def _bname(s):
    e = getattr(s, "expr", None)
    if isinstance(e, ir.Prim):
        return e.builtin.name
    if isinstance(s, ir.Effect):
        return s.builtin.name
    return None


class Segment:
    """An open lane loop: its statements, the predicates its lanes need, what ends it."""

    def __init__(self, preds):
        self.preds = preds
        self.body = []
        self.writes = []     # (dst, src): lanes updating tile src into dst in turn
        self.gathers = []    # statements whose tile every lane fills
        self.posts = []      # statements after the loop (tile_from_thread's broadcast)
        self.pre = []        # statements before the loop (the tiles the lanes fill)
        self.hoisted = []    # uniform pure statements met while the segment was open
        self.carried = []    # (header, value at the end of a lane's turn)


class Rewrite:
    def __init__(self, fir, mode):
        self.fir = fir
        self.mode = mode
        self.B = mode.block_dim
        self.V = set()           # ids of lane-varying variables
        self.contested = set()   # ids of tiles lanes write elements of
        self.remat = {}          # id of a lane launch index -> its lane_tid attrs
        self.sentinel = ir.Var("_lane_sentinel", T.int32)
        self.V.add(id(self.sentinel))
        self.reads = set()       # ids of the buffer reads made (not written back)
        self.lane_writes = False  # lanes write elements of a tile
        self.buffered = False     # per-lane buffers (written in place: no adjoint)
        self.lane_adds = set()    # ids of tile atomic adds each lane makes of its elements
        self.loops = []          # (Loop, lane Var) of every lane loop made
        self.counter = 0
        self.coupled = list(mode.coupled)

    # ------------------------------------------------------------------------------ naming
    def fresh(self, hint, type_):
        self.counter += 1
        return ir.Var(f"_ln{self.counter}_{hint}", type_)

    # ---------------------------------------------------------------------- lane-varying set
    def tid_attrs(self, attrs):
        return {"axis": attrs.get("axis"), "tid_dims": self.fir.tid_dims,
                "block_dim": self.B, "tiled": self.mode.tiled, "ndim": self.mode.ndim}

    def rewrite_tids(self, stmts):
        """``wp.tid()`` as ``lane_tid`` of the lane (lane-varying) or of lane 0 (the block's
        indices of a tiled launch)."""
        for s in ir.walk(stmts):
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and \
                    s.expr.builtin.name == "tid":
                axis = s.expr.attrs.get("axis")
                attrs = self.tid_attrs(s.expr.attrs)
                varying = not self.mode.tiled or (axis is not None and
                                                  axis == self.mode.ndim)
                if varying:
                    s.expr = ir.Prim(lookup("lane_tid"), [self.sentinel], attrs)
                    self.V.add(id(s.dst))
                    self.remat[id(s.dst)] = attrs
                    if self.mode.tiled:
                        self.coupled.append("lane index")
                else:
                    s.expr = ir.Prim(lookup("lane_tid"), [ir.Const(0, T.int32)], attrs)

    def classify_simple(self, s, ctrl):
        """The kind of a simple statement: ``U`` the block's (once), ``F`` uniform and pure
        (anywhere), ``L`` per lane, ``S`` per lane after a barrier, ``W`` lanes writing a
        tile, ``G`` a gather."""
        V = self.V
        ops = _operands(s)
        varying = ctrl or any(id(o) in V for o in ops)
        b = _bname(s)
        if isinstance(s, ir.Assign):
            dt = s.dst.type
            if b in ("lane_gather", "lane_gather_vec", "lane_from_thread"):
                return "G"
            if b == "lane_untile":
                return "L"
            if b in STACK_OPS:
                return "S"
            if b == "tile_stack_count_b":  # the stack as the barrier left it
                return "S" if varying else "U"
            if isinstance(s.expr, ir.Call) and any(_is_tile(o.type) for o in ops):
                return "S" if varying else "U"
            if _is_tile(dt):
                if any(id(o) in V for o in ops) or b in PER_LANE_WRITES or \
                        (ctrl and b in ELEMENT_WRITES):
                    return "W"
                return "U"
            if any(id(o) in self.contested for o in ops):
                return "L"
            return "L" if varying else "F"
        if isinstance(s, ir.AtomicRMW):
            return "L"
        if isinstance(s, ir.Store):
            return "L" if varying else "F"
        if isinstance(s, ir.Effect):
            if any(_is_tile(o.type) for o in ops):
                return "S" if any(id(o) in V for o in ops) else "U"
            if b == "kernel_assert":
                return "L" if varying else "F"
            return "L"
        return "F"

    def find_varying(self, stmts, ctrl=False):
        """One sweep of the fixed point; True when something new became lane-varying."""
        changed = False
        V = self.V
        for s in stmts:
            if isinstance(s, ir.If):
                c = ctrl or (isinstance(s.cond, ir.Var) and id(s.cond) in V)
                changed |= self.find_varying(s.body, c)
                changed |= self.find_varying(s.orelse, c)
            elif isinstance(s, ir.Loop):
                c = ctrl or any(isinstance(x, ir.Var) and id(x) in V
                                for x in (s.start, s.stop, s.step, s.brk))
                changed |= self.find_varying(s.body, c)
                for h, e in s.carried:
                    if id(e) in V and id(h) not in V:
                        V.add(id(h))
                        changed = True
            else:
                k = self.classify_simple(s, ctrl)
                if k == "W":
                    if _bname(s) in ELEMENT_WRITES:
                        self.lane_writes = True
                    src = s.expr.args[0] if isinstance(s.expr, ir.Prim) and s.expr.args else None
                    if isinstance(src, ir.Var) and id(src) not in self.contested:
                        self.contested.add(id(src))
                        changed = True
                dst = getattr(s, "dst", None)
                if dst is not None and k in ("L", "S") and not _is_tile(dst.type) and \
                        id(dst) not in V:
                    V.add(id(dst))
                    changed = True
        return changed

    # ----------------------------------------------------------------------- classification
    def kinds_in(self, stmts, ctrl=False):
        """Every kind found in ``stmts`` (nested ones included)."""
        out = set()
        for s in stmts:
            if isinstance(s, ir.If):
                c = ctrl or (isinstance(s.cond, ir.Var) and id(s.cond) in self.V)
                out |= self.kinds_in(s.body, c) | self.kinds_in(s.orelse, c)
                out.add("IfV" if c else "IfU")
            elif isinstance(s, ir.Loop):
                out |= self.kinds_in(s.body, ctrl or self.loop_varying(s))
                out.add("Loop")
            else:
                k = self.classify_simple(s, ctrl)
                if k in ("F", "L") and isinstance(s, ir.Assign) and _is_tile(s.dst.type):
                    k = "U"
                out.add(k)
        return out

    def loop_varying(self, s):
        return any(isinstance(x, ir.Var) and id(x) in self.V
                   for x in (s.start, s.stop, s.step, s.brk))

    # ------------------------------------------------------------------------------ driver
    def run(self):
        fir = self.fir
        self.rewrite_tids(fir.body)
        while self.find_varying(fir.body):
            pass
        if self.lane_writes:
            self.coupled.append("lanes write a tile")
        used = ir.used_vars(fir.body)
        for s in ir.walk(fir.body):
            b = _bname(s)
            if b in STACK_OPS or b == "tile_stack_b":
                self.coupled.append("tile stack")
            elif b in BLOCK_ACCUMULATES:  # once per block, not once per lane
                if any(id(o) in self.V for o in _operands(s)):
                    if b != "tile_atomic_add_b" or id(s.dst) in used:
                        raise _fail(fir, s.loc, "a tile atomic add whose array or offset "
                                    "differs between the lanes of a block, and whose replaced "
                                    "values are read (or an indexed one), is not supported: "
                                    "add at the block's offset")
                    self.lane_adds.add(id(s))  # each lane adds its own elements (Warp's)
                self.coupled.append("tile atomic add")
            elif b == "tile_store_b" and any(isinstance(o, ir.Var) and id(o) in self.V
                                             for o in s.args[2:]):
                self.coupled.append("lanes store a tile at their own offsets")
        if not self.coupled:
            raise Uncoupled()
        self.out_top = []
        body = self.segment(fir.body, [])
        self.recompute_views()
        body = self.buffers() + body
        fir.body = body
        fir.tid_vars = {}
        fir.lanes = self.B
        fir.lanes_no_adjoint = self.buffered
        return fir

    # ------------------------------------------------------------------------ segmentation
    def segment(self, stmts, preds):
        out = []
        cur = [None]

        def close():
            seg = cur[0]
            if seg is None:
                return
            cur[0] = None
            out.extend(self.make_loop(seg))

        def open_(force_new=False):
            if cur[0] is None or force_new:
                close()
                cur[0] = Segment(preds)
            return cur[0]

        for s in stmts:
            if isinstance(s, ir.If):
                cv = isinstance(s.cond, ir.Var) and id(s.cond) in self.V
                ctrl = bool(preds) or cv
                inner = self.kinds_in(s.body, ctrl) | self.kinds_in(s.orelse, ctrl)
                if inner <= {"F", "L", "IfV", "IfU"} and "Loop" not in inner and \
                        not (not cv and inner <= {"F", "IfU"}):
                    open_().body.append(s)   # a per-lane branch
                    continue
                if inner <= {"F", "U", "IfU"} and not cv:
                    if inner <= {"F", "IfU"} and cur[0] is not None:
                        cur[0].hoisted.append(s)
                    else:
                        close()
                        out.append(s)
                    continue
                close()
                if not cv:
                    out.append(ir.If(s.cond, self.segment(s.body, preds),
                                     self.segment(s.orelse, preds), s.loc))
                else:
                    self.check_merges(s)
                    out.extend(self.segment(s.body, preds + [(s.cond, True)]))
                    out.extend(self.segment(s.orelse, preds + [(s.cond, False)]))
                continue
            if isinstance(s, ir.Loop):
                lv = self.loop_varying(s)
                inner = self.kinds_in(s.body, bool(preds) or lv)
                if inner <= {"F", "L", "IfV", "IfU", "Loop"} and (lv or "L" in inner):
                    open_().body.append(s)   # a per-lane loop
                    continue
                if inner <= {"F", "U", "IfU", "Loop"} and not lv and not preds:
                    close()
                    out.append(s)
                    continue
                if lv:
                    raise _fail(self.fir, s.loc, "a loop whose bounds differ between lanes "
                                "holds tile operations")
                for h, e in s.carried:
                    if id(h) in self.V or id(e) in self.V:
                        raise _fail(self.fir, s.loc, f"the loop carries '{h.name}', which "
                                    "differs between lanes, across tile operations")
                close()
                out.append(ir.Loop(s.kind, s.var, s.start, s.stop, s.step,
                                   self.segment(s.body, preds), s.carried, s.brk, s.loc))
                continue
            k = self.classify_simple(s, bool(preds))
            if (k == "S" and _bname(s) == "tile_store_b") or id(s) in self.lane_adds:
                # a store (or an add whose replaced values nothing reads) whose array or
                # offset differs between lanes: each lane writes its own elements (Warp's
                # layout), not the whole tile; in the open lane loop unless its lanes write or
                # gather a tile (its tiles are made before it)
                seg = cur[0]
                if seg is not None and (seg.writes or seg.gathers):
                    close()
                a, t, *offs = s.args if isinstance(s, ir.Effect) else s.expr.args
                open_().body.extend(self.lane_write(a, t, offs, s.loc,
                                                    add=id(s) in self.lane_adds))
                continue
            if k == "F" and preds and not isinstance(s, ir.Assign):
                k = "L"
            if k == "F":
                if cur[0] is not None:  # uniform and pure: before the lane loop
                    cur[0].hoisted.append(s)
                else:
                    out.append(s)
            elif k == "L":
                open_().body.append(s)
            elif k == "S":
                open_(force_new=True).body.append(s)
            elif k == "W":
                seg = cur[0]
                if seg is not None and (seg.writes or seg.gathers):
                    close()
                seg = open_()
                seg.body.append(s)
                seg.writes.append(s)
                close()
            elif k == "G":
                seg = cur[0]
                if seg is not None and (seg.writes or seg.gathers):
                    close()
                seg = open_()
                self.gather(seg, s)
                close()
            elif cur[0] is not None and isinstance(s, ir.Assign) and \
                    isinstance(s.expr, (ir.Prim, ir.Copy)) and \
                    not any(isinstance(o.type, (T.ArrayType, T.TileStackType))
                            for o in _operands(s)):
                # the block's, on tiles only (nothing the open loop's lanes change): before it
                cur[0].hoisted.append(s)
            else:  # U: the block's
                close()
                if preds and not (isinstance(s, ir.Assign) and
                                  isinstance(s.expr, (ir.Prim, ir.Copy, ir.Load)) and
                                  not (isinstance(s.expr, ir.Copy) and _is_tile(s.dst.type))):
                    raise _fail(self.fir, s.loc, "a tile operation with side effects runs "
                                "only in some lanes (after a branch on a lane's value)")
                out.append(s)
        close()
        return out

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

    def check_merges(self, s):
        """A tile merged at the end of a branch on a lane's value would differ between lanes:
        refused."""
        for b in (s.body, s.orelse):
            for x in ir.walk(b):
                if isinstance(x, ir.Assign) and isinstance(x.expr, ir.Copy) and \
                        _is_tile(x.dst.type):
                    raise _fail(self.fir, s.loc, "a tile is assigned differently in lanes "
                                "that take different branches")

    def gather(self, seg, s):
        """``wp.tile(x)`` (``tile_from_thread``): each lane's turn puts its value into the tile
        the loop carries; the tile is whole after the loop."""
        e = s.expr
        t = s.dst.type
        b = e.builtin.name
        seg.gathers.append(s)
        zeros = {"value": 0}
        if b in ("lane_gather", "lane_gather_vec"):
            h, new = self.fresh("tile", t), self.fresh("tile", t)
            seg.pre.append(ir.Assign(h, ir.Prim(lookup("tile_const"), [], {"type": t, **zeros}),
                                     s.loc))
            put = "tile_insert" if b == "lane_gather" else "tile_lane_put_col"
            seg.body.append(ir.Assign(new, ir.Prim(lookup(put), [h, self.sentinel, e.args[0]]),
                                      s.loc))
            seg.carried.append((h, new))
            seg.posts.append(ir.Assign(s.dst, ir.Copy(h), s.loc))
        else:  # lane_from_thread: lane idx's value, in every element
            value, idx = e.args
            bt = T.TileType(value.type, (self.B,))
            h, new = self.fresh("from", bt), self.fresh("from", bt)
            elem = self.fresh("elem", value.type)
            seg.pre.append(ir.Assign(h, ir.Prim(lookup("tile_const"), [], {"type": bt, **zeros}),
                                     s.loc))
            seg.body.append(ir.Assign(new, ir.Prim(lookup("tile_insert"),
                                                   [h, self.sentinel, value]), s.loc))
            seg.carried.append((h, new))
            seg.posts.append(ir.Assign(elem, ir.Prim(lookup("tile_extract"), [h, idx]), s.loc))
            seg.posts.append(ir.Assign(s.dst, ir.Prim(lookup("tile_const"), [elem],
                                                      {"type": t}), s.loc))

    def make_loop(self, seg):
        """The lane loop of a segment: a tile its lanes write in turn is carried by the loop
        (its reads in the segment read the carried value; its name is bound after the loop),
        the lanes outside the launch or the segment's predicates skipped."""
        body = seg.body
        for s in seg.writes:
            src, dst = s.expr.args[0], s.dst
            h, new = self.fresh("acc", dst.type), self.fresh("acc", dst.type)
            seg.pre.append(ir.Assign(h, ir.Copy(src), s.loc))
            body = _rename(body, src, h)
            s.dst = new
            seg.carried.append((h, new))
            seg.posts.append(ir.Assign(dst, ir.Copy(h), s.loc))
        loc = next((x.loc for x in body if hasattr(x, "loc")), None) or \
            ir.Loc(self.fir.source.filename if self.fir.source else "?", 0)
        lane = self.fresh("lane", T.int32)
        body = _rename(body, self.sentinel, lane)
        body = self.untiles(body, lane)
        pairs = list(seg.carried)   # (header, value after the lane's turn)
        conds = list(seg.preds)
        pre_guard = []
        if not self.mode.tiled:
            act = self.fresh("active", T.bool)
            pre_guard.append(ir.Assign(act, ir.Prim(lookup("lane_active"), [lane],
                                                    {"block_dim": self.B}), loc))
            conds = [(act, True)] + conds
        for c, want in reversed(conds):
            merged = []
            arm_in, arm_out = list(body), []
            for h, v in pairs:
                m = self.fresh("m", h.type)
                arm_in.append(ir.Assign(m, ir.Copy(v), loc))
                arm_out.append(ir.Assign(m, ir.Copy(h), loc))
                merged.append((h, m))
            body = [ir.If(c, arm_in, arm_out, loc) if want else ir.If(c, arm_out, arm_in, loc)]
            pairs = merged
        ends = []
        for h, v in pairs:
            e = self.fresh("end", h.type)
            ends.append(ir.Assign(e, ir.Copy(v), loc))
        loop = ir.Loop("for", lane, ir.Const(0, T.int32), ir.Const(self.B, T.int32),
                       ir.Const(1, T.int32), pre_guard + body + ends,
                       [(h, e.dst) for (h, _), e in zip(pairs, ends)], None, loc)
        self.loops.append((loop, lane))
        return seg.hoisted + seg.pre + [loop] + seg.posts

    def untiles(self, stmts, lane):
        """``wp.untile(t)``: the lane's element (or column) of ``t``."""
        out = []
        for s in stmts:
            if isinstance(s, ir.If):
                out.append(ir.If(s.cond, self.untiles(s.body, lane),
                                 self.untiles(s.orelse, lane), s.loc))
                continue
            if isinstance(s, ir.Loop):
                s.body = self.untiles(s.body, lane)
                out.append(s)
                continue
            if _bname(s) == "lane_untile":
                t = s.expr.args[0]
                if len(t.type.shape) == 1:
                    out.append(ir.Assign(s.dst, ir.Prim(lookup("tile_extract"), [t, lane]),
                                         s.loc))
                else:
                    comps = []
                    for k in range(t.type.shape[0]):
                        c = self.fresh("c", t.type.dtype)
                        out.append(ir.Assign(c, ir.Prim(lookup("tile_extract"),
                                                        [t, ir.Const(k, T.int32), lane]), s.loc))
                        comps.append(c)
                    out.append(ir.Assign(s.dst, ir.Prim(lookup("construct"), comps,
                                                        {"type": s.dst.type}), s.loc))
                continue
            out.append(s)
        return out

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
