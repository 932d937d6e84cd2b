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

from ..core import types as T
from ..stdlib import ir
from ..stdlib.registry import lookup
from .lane_values import LaneValues, _fail, _rename


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


class Rewrite(LaneValues):
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
