"""Pass ``analyze``: per-function facts that several generators need, computed once.

Invariant: ``state.facts[fir]`` holds a :class:`FuncFacts` for every function of
``state.funcs``, computed by one walk of its IR (callees first, so a call site sees what its
callee does to the arrays it passes). The generators and the kernel ABI read these facts; none
of them walks the IR to rediscover them:

- every access to each array parameter (load, view, store, accumulation, other atomic, or a
  func call it is passed to), whether it is at the calling thread's own element (``a[tid]``,
  ``a[i, j]`` from ``i, j = wp.tid()``), and its line;
- from those: arrays whose adjoint needs atomic accumulation, arrays some thread accesses at
  another thread's element, arrays a CPU kernel may accumulate into through per-thread buffers
  (forward and adjoint), arrays read and then overwritten, arrays stored into;
- the variables whose adjoint can be nonzero (static zero-skipping), the variables read at all;
- why a kernel has no derivative (a differentiable value stored into a thread-local buffer).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core import types as T
from ..stdlib import ir


@dataclass(frozen=True)
class Access:
    """One access to an array parameter: ``kind`` is ``load``, ``view`` (a sub-array taken),
    ``store``, ``accumulate`` (atomic add/sub whose old value is unused), ``atomic`` (any other
    atomic) or ``call`` (passed to a func, which accesses it as recorded in ``effects``)."""

    kind: str
    own: bool
    line: int
    effects: tuple = ()   # for "call": the kinds of access the callee makes
    seq: int = 0          # position in the function's statements (depth first)
    loops: tuple = ()     # ids of the dynamic loops around it


@dataclass
class FuncFacts:
    fir: object
    copies: dict = field(default_factory=dict)      # Var -> the Var it copies
    used: set = field(default_factory=set)          # ids of Vars read as operands
    accesses: dict = field(default_factory=dict)    # array param Var -> [Access]
    needed: set = field(default_factory=set)        # ids of Vars whose adjoint can be nonzero
    varied: set = field(default_factory=set)        # ids of Vars whose tangent can be nonzero
    no_derivative: object = None                    # kernels: why there is no adjoint, or None
    thread_indexed: list = field(default_factory=list)  # kernels: see unconditional_tid_accesses
    view_roots: dict = field(default_factory=dict)   # view Var name -> the array param it views
    tie_sites: list = field(default_factory=list)    # kernels: see atomic_tie_sites
    geometry_ids: dict = field(default_factory=dict)  # param Var -> geometry kind it is an id of
    const_indices: dict = field(default_factory=dict)  # (param Var, axis) -> (lo, hi, line)
    guarded_indices: dict = field(default_factory=dict)  # the same, for accesses that may not run

    def tie_index(self, stmt):
        """The index of atomic min/max ``stmt`` among the kernel's tie sites, or None."""
        for k, s in enumerate(self.tie_sites):
            if s is stmt:
                return k
        return None

    # ------------------------------------------------------------------ own-element accesses
    def tid_axis(self, v):
        seen = 0
        while isinstance(v, ir.Var) and seen < 64:
            if v in self.fir.tid_vars:
                return self.fir.tid_vars[v]
            v = self.copies.get(v)
            seen += 1
        return "none"

    def own_index(self, arr, idx):
        """True when ``arr[idx]`` is provably the calling thread's own element."""
        fir = self.fir
        if fir.kind != "kernel" or arr not in fir.params:
            return False
        axes = [self.tid_axis(i) for i in idx]
        if any(a == "none" for a in axes):
            return False
        if axes == [None]:
            return arr.type.ndim == 1
        return (None not in axes and sorted(axes) == list(range(fir.tid_dims))
                and len(axes) == arr.type.ndim)

    def kinds(self, arr):
        """Every kind of access to array param ``arr``, through funcs too."""
        out = set()
        for a in self.accesses.get(arr, ()):
            out.add(a.kind)
            out.update(a.effects)
        return out

    # ------------------------------------------------------------------ derived sets
    @property
    def atomic_adjoint_arrays(self):
        """Params whose adjoint accumulation must be atomic: read somewhere at an element that
        may be another thread's, viewed, or passed to a func."""
        return {p for p, acc in self.accesses.items()
                if any(a.kind in ("view", "call") or (a.kind == "load" and not a.own)
                       for a in acc)}

    def private_accumulators(self):
        """``(forward, adjoint)`` name lists of arrays a CPU kernel only accumulates into, which
        may get per-thread buffers: params only ``atomic_add``/``atomic_sub``-ed (old value
        unused), and ``adj_<p>`` for params only read directly (the adjoint then only
        accumulates into ``adj_p``; tile loads of the parameter itself count as reads,
        ``tile_views.private_tile_adds`` directing their adjoints' adds). float16 arrays are
        updated through their half bits and thread-local buffers are not shared: neither
        qualifies."""
        forward, adjoint = [], []
        for p in self.fir.params:
            if not isinstance(p.type, T.ArrayType) or p.type.local or \
                    T.scalar_of(p.type.dtype) is T.float16:
                continue
            kinds = {a.kind for a in self.accesses.get(p, ())}
            if kinds == {"accumulate"}:
                forward.append(p.name)
            if kinds in ({"load"}, {"load", "tile_load"}) and T.is_differentiable(p.type):
                adjoint.append(f"adj_{p.name}")
        return forward, adjoint

    def array_params(self, kinds):
        """Names of the array params with an access of one of ``kinds`` (funcs included)."""
        return tuple(p.name for p in self.fir.params if isinstance(p.type, T.ArrayType)
                     and self.kinds(p) & set(kinds))

    def first_line(self, arr, kinds):
        lines = [a.line for a in self.accesses.get(arr, ())
                 if a.kind in kinds or set(a.effects) & set(kinds)]
        return min(lines) if lines else None

    def atomic_reads(self):
        """``((name, line), ...)`` of the array params whose old value an atomic returns and
        the kernel (or a func it calls) uses."""
        return tuple((p.name, self.first_line(p, ("read_old",))) for p in self.fir.params
                     if isinstance(p.type, T.ArrayType) and "read_old" in self.kinds(p))

    def atomic_replays(self):
        """Integer array params whose atomics' old values the kernel uses and that it accesses
        only through atomics in its own body, outside dynamic loops (a counter handing out
        slots): the CPU adjoint's and tangent's replay performs those atomics on a copy of the
        array from before the launch, the threads in the forward's order (serial launches), so
        each thread gets the value it got (``weft.runtime.record``)."""
        out = []
        for p in self.fir.params:
            if not isinstance(p.type, T.ArrayType) or p.type.local or \
                    T.is_differentiable(p.type):
                continue
            acc = self.accesses.get(p, ())
            if any("read_old" in a.effects for a in acc) and all(
                    a.kind in ("atomic", "accumulate") and not a.loops for a in acc):
                out.append(p.name)
        return tuple(out)

    def overwritten(self):
        """Array params read and then written: ``[(name, read line, write line, every write
        at the thread's own element, and also every read before the writes: a copy from before
        the launch replays the reads exactly)]``. Pure accumulation is not a hazard."""
        found = []
        for p in self.fir.params:
            # integer arrays too: the replay reads them for indices and branches (their plain
            # reads: the old value an atomic returned is re-read, as it always was)
            if not isinstance(p.type, T.ArrayType) or p.type.local or (
                    not T.is_differentiable(p.type) and T.is_struct(p.type.dtype)):
                continue
            read = self.first_line(p, ("load", "read_old") if T.is_differentiable(p.type)
                                   else ("load",))
            write = self.first_line(p, ("store", "accumulate", "atomic"))
            if read is not None and write is not None:
                own = all(a.own for a in self.accesses[p] if a.kind == "store") and not any(
                    a.kind in ("accumulate", "atomic") or (a.kind == "call" and set(a.effects) &
                                                          {"store", "accumulate", "atomic"})
                    for a in self.accesses[p])
                found.append((p.name, read, write, own, own and self.reads_before_writes(p)))
        return found

    def shared_and_atomic(self, p):
        """Whether array param ``p`` is accessed at other threads' elements and also updated
        atomically (a store at one element and atomic adds into it by every thread): there a
        store's adjoint must not reset the element's gradient, which the other threads' atomic
        adds still read."""
        acc = self.accesses.get(p, ())
        return any(not a.own for a in acc) and any(
            a.kind in ("accumulate", "atomic") or set(a.effects) & {"accumulate", "atomic"}
            for a in acc)

    def replayed_arrays(self):
        """Array params whose stores the CPU adjoint replays (:mod:`.adjoint`): read and
        overwritten where a copy from before the launch cannot replay the reads (other
        threads' elements, reads after writes), accessed only by plain loads, stores and
        atomic adds of whole elements (no other atomics, views or funcs), not half precision."""
        if self.fir.kind != "kernel":
            return []
        names = {name for name, _r, _w, _own, exact in self.overwritten() if not exact}
        return [p for p in self.fir.params if p.name in names and not p.type.local and
                not T.is_struct(p.type.dtype) and T.scalar_of(p.type.dtype) is not T.float16
                and {a.kind for a in self.accesses[p]} <= {"load", "store", "accumulate"} and
                not any(a.effects for a in self.accesses[p])]

    def reads_before_writes(self, p):
        """Whether every read of array param ``p`` comes before its first write in each
        thread: all reads precede all writes in the function's statements, and no loop holds
        both (a later iteration would read what an earlier one wrote). Only then does a copy
        from before the launch replay its reads exactly."""
        acc = self.accesses[p]
        reads = [a for a in acc if a.kind in ("load", "view") or
                 (a.kind == "call" and set(a.effects) & {"load", "view", "read_old"})]
        writes = [a for a in acc if a.kind == "store"]
        if not reads or not writes:
            return True
        return max(a.seq for a in reads) < min(a.seq for a in writes) and not any(
            set(r.loops) & set(w.loops) for r in reads for w in writes)

    def stored(self):
        """Differentiable array params with plain stores ``a[i] = v``: ``[(name, the gradient
        is also accumulated into (the array is read or atomically updated))]``."""
        out = []
        for p in self.fir.params:
            if isinstance(p.type, T.ArrayType) and T.is_differentiable(p.type) and \
                    "store" in self.kinds(p):
                k = self.kinds(p)
                out.append((p.name, bool(k & {"load", "read_old", "accumulate", "atomic"})))
        return out


def analyze(fir, facts_of):
    """The :class:`FuncFacts` of ``fir``; ``facts_of(callee)`` gives each callee's."""
    facts = FuncFacts(fir)
    for s in ir.walk(fir.body):
        if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Copy) and \
                isinstance(s.expr.src, ir.Var):
            facts.copies[s.dst] = s.expr.src
    facts.used = ir.used_vars(fir.body)
    params = {p for p in fir.params if isinstance(p.type, T.ArrayType)}
    facts.accesses = {p: [] for p in params}
    root = {p: p for p in params}   # view Var -> the param it views

    where = {}  # id(statement) -> (position, the loops around it)

    def number(stmts, loops):
        for st in stmts:
            where[id(st)] = (len(where), loops)
            if isinstance(st, ir.If):
                number(st.body, loops)
                number(st.orelse, loops)
            elif isinstance(st, ir.Loop):
                number(st.body, loops + (id(st),))

    number(fir.body, ())
    s = None

    def record(arr, kind, line, own=False, effects=()):
        p = root.get(arr)
        if p is not None:
            seq, loops = where.get(id(s), (0, ()))
            facts.accesses[p].append(Access(kind, own and arr is p, line, tuple(effects), seq,
                                            loops))

    for s in ir.walk(fir.body):
        if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Load):
            e = s.expr
            if isinstance(s.dst.type, T.ArrayType):
                if e.array in root:
                    root[s.dst] = root[e.array]
                record(e.array, "view", s.loc.lineno)
            else:
                record(e.array, "load", s.loc.lineno, facts.own_index(e.array, e.index))
        elif isinstance(s, ir.Store):
            record(s.array, "store", s.loc.lineno, facts.own_index(s.array, s.index))
        elif isinstance(s, ir.AtomicRMW):
            old_used = s.dst is not None and id(s.dst) in facts.used
            plain = s.op in ("add", "sub") and not old_used
            record(s.array, "accumulate" if plain else "atomic", s.loc.lineno,
                   facts.own_index(s.array, s.index), ("read_old",) if old_used else ())
        elif _array_builtin(s):  # tile loads and stores: whole regions, any block's
            e = s.expr if isinstance(s, ir.Assign) else s
            first = True
            for a in e.args:
                if isinstance(a, ir.Var) and isinstance(a.type, T.ArrayType):
                    kinds = ("store",) if isinstance(s, ir.Effect) else \
                        ("tile_load", "load") if _plain_tile_load(e, a, params) else \
                        ("view", "load")
                    if first and e.builtin.accumulates:  # a tile atomic add: a write
                        kinds = ("atomic", "load") if isinstance(s, ir.Assign) and \
                            id(s.dst) in facts.used else ("accumulate",)
                    first = False
                    for kind in kinds:
                        record(a, kind, s.loc.lineno)
        elif isinstance(s, ir.Assign) and isinstance(s.expr, ir.Call):
            callee = facts_of(s.expr.func)
            for j, a in enumerate(s.expr.args):
                if isinstance(a, ir.Var) and isinstance(a.type, T.ArrayType):
                    cp = s.expr.func.params[j]
                    record(a, "call", s.loc.lineno, effects=sorted(callee.kinds(cp)))
    facts.view_roots = {v.name: p.name for v, p in root.items() if v is not p}
    facts.geometry_ids = geometry_ids(fir, facts, facts_of)
    facts.const_indices, facts.guarded_indices = constant_indices(fir, facts_of)
    facts.needed = adjoint_needed(fir)
    facts.varied = tangent_varied(fir)
    if fir.kind == "kernel":
        facts.no_derivative = local_buffer_gradient(fir, facts.varied)
        facts.thread_indexed = unconditional_tid_accesses(fir, facts)
        facts.tie_sites = atomic_tie_sites(fir)
    return facts


def _plain_tile_load(e, a, params):
    """Whether ``e`` is a ``tile_load`` of one or two dimensions of float scalars whose array
    ``a`` is the parameter itself (no view of it, no copy): its adjoint is one
    ``tile_load_adj1``/``tile_load_adj2`` call on the parameter's adjoint, which a CPU chunk
    can give per-thread copies (``tile_views.private_tile_adds``)."""
    return e.builtin.name == "tile_load_b" and a is e.args[0] and a in params and \
        len(e.attrs.get("shape", ())) <= 2 and T.is_scalar(a.type.dtype) and \
        T.scalar_of(a.type.dtype) in (T.float32, T.float64)


def _array_builtin(s):
    """Whether statement ``s`` applies a builtin that reads or writes whole arrays
    (``Builtin.array_args``: the tile loads and stores)."""
    e = s.expr if isinstance(s, ir.Assign) else s if isinstance(s, ir.Effect) else None
    b = getattr(e, "builtin", None)
    return b is not None and getattr(b, "array_args", False)


def geometry_ids(fir, facts, facts_of):
    """The parameters ``fir`` passes (possibly through copies and funcs) as the id of a
    geometry object to a query builtin (declared with ``geometry_kind``): the launch checks
    those arguments are live ids of that kind before anything runs."""
    params = set(fir.params)
    out = {}

    def param_of(v):
        seen = 0
        while isinstance(v, ir.Var) and v not in params and seen < 64:
            v = facts.copies.get(v)
            seen += 1
        return v if isinstance(v, ir.Var) and v in params else None

    for s in ir.walk(fir.body):
        if not isinstance(s, ir.Assign):
            continue
        e = s.expr
        if isinstance(e, ir.Prim) and getattr(e.builtin, "geometry_kind", None) and e.args:
            p = param_of(e.args[0])
            if p is not None:
                out[p] = e.builtin.geometry_kind
        elif isinstance(e, ir.Call):
            callee = facts_of(e.func)
            for cp, a in zip(e.func.params, e.args):
                kind = callee.geometry_ids.get(cp)
                p = param_of(a) if kind is not None else None
                if p is not None:
                    out[p] = kind
    return out


def constant_indices(fir, facts_of):
    """The constant indices ``fir`` uses on its array parameters (directly or through funcs):
    ``({(param, axis): (lowest, highest, line)}, the same for guarded ones)``. Release kernels
    do not bounds-check, so the launch checks these against the arguments' shapes (``a[5]`` on
    a 4-element array, or ``a[-1]``, is a LaunchError rather than a write outside the array).
    An access under a branch or in a loop (which may run no iteration) is *guarded*: it may
    never run (``if sparse: colind[0, k]`` with an empty ``colind``, as MuJoCo Warp), so one
    outside its array makes the launch run the bounds-checked build instead of failing."""
    params = {p for p in fir.params if isinstance(p.type, T.ArrayType) and not p.type.local}
    out, guarded = {}, {}
    root = {p: (p, 0) for p in params}  # array Var -> (the param it views, axes indexed away)

    def note(arr, index, line, into):
        if arr not in root:
            return
        param, depth = root[arr]
        for axis, ix in enumerate(index):
            if isinstance(ix, ir.Const) and T.is_int(ix.type):
                merge(into, (param, depth + axis), (int(ix.value), int(ix.value), line))

    def merge(into, key, new):
        lo, hi, line = into.get(key, new)
        into[key] = (min(lo, new[0]), max(hi, new[1]),
                     new[2] if new[0] < lo or new[1] > hi else line)

    def visit(stmts, cond):
        into = guarded if cond else out
        for s in stmts:
            if isinstance(s, ir.If):
                visit(s.body, True)
                visit(s.orelse, True)
            elif isinstance(s, ir.Loop):
                visit(s.body, True)
            elif isinstance(s, ir.Assign) and isinstance(s.expr, ir.Load):
                sliced = any(isinstance(i.type, T.SliceType) for i in s.expr.index)
                if sliced:  # a view a[1:3, j]: NumPy's indexing (negative j counts from the end)
                    continue
                note(s.expr.array, s.expr.index, s.loc.lineno, into)
                if isinstance(s.dst.type, T.ArrayType) and s.expr.array in root:  # a view a[i]
                    p, depth = root[s.expr.array]
                    root[s.dst] = (p, depth + len(s.expr.index))
            elif isinstance(s, ir.Assign) and isinstance(s.expr, ir.Copy) and \
                    s.expr.src in root and isinstance(s.dst.type, T.ArrayType):
                root[s.dst] = root[s.expr.src]
            elif isinstance(s, (ir.Store, ir.AtomicRMW)):
                note(s.array, s.index, s.loc.lineno, into)
            elif isinstance(s, ir.Assign) and isinstance(s.expr, ir.Call):
                callee = facts_of(s.expr.func)
                for found, target in ((callee.const_indices, into),
                                      (callee.guarded_indices, guarded)):
                    for (cp, axis), v in found.items():
                        a = s.expr.args[s.expr.func.params.index(cp)]
                        if a in root:
                            merge(target, (root[a][0], root[a][1] + axis),
                                  (v[0], v[1], s.loc.lineno))
    visit(fir.body, False)
    return out, guarded


def atomic_tie_sites(fir):
    """The kernel's ``wp.atomic_min``/``atomic_max`` on float array parameters. Their
    derivative goes to the values equal to the result; where several threads' values tie, they
    share it equally, which needs the number of ties: the adjoint and tangent kernels then run
    in two phases (count, then share) with a count array per site."""
    return [s for s in ir.walk(fir.body) if isinstance(s, ir.AtomicRMW)
            and s.op in ("min", "max") and s.array in fir.params
            and T.is_float(T.scalar_of(s.array.type.dtype))]  # vectors: per component


def unconditional_tid_accesses(fir, facts):
    """``[(array param name, launch axis per index)]`` of the accesses every thread makes (in
    the kernel's top-level block, not under a branch or loop) with indices that are all launch
    indices (axis None: the first index, ``i = wp.tid()``). The launch checks those arrays are
    at least as large as the launch along those axes."""
    out = []
    for s in fir.body:
        if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Load):
            arr, idx = s.expr.array, s.expr.index
        elif isinstance(s, (ir.Store, ir.AtomicRMW)):
            arr, idx = s.array, s.index
        else:
            continue
        if arr not in fir.params or arr.type.local:
            continue
        axes = tuple(facts.tid_axis(i) for i in idx)
        if axes and "none" not in axes and (arr.name, axes) not in out:
            out.append((arr.name, axes))
    return out


def adjoint_needed(fir):
    """Ids of the variables whose adjoint can be nonzero: those that flow, through
    differentiable operations, into an array store, an atomic, a returned value or a func
    call. The reverse sweep skips the others (zero-skipping done statically), which also keeps
    a NaN or inf that only feeds a non-differentiable test (``isnan(x / 0)``) out of the
    gradients: 0 * inf would be NaN."""
    needed = set()
    flows = {}   # id(var) -> the operands needed once it is
    seeds = []   # operands needed whatever else is
    for st in ir.walk(fir.body):
        if isinstance(st, (ir.Store, ir.AtomicRMW)) and T.is_differentiable(st.array.type):
            seeds.append(st.value)
        elif isinstance(st, ir.Return):
            seeds.append(st.value)
        elif isinstance(st, ir.Effect) and getattr(st.builtin, "array_args", False) and \
                st.builtin.differentiable:  # a tile stored into an array
            seeds += st.args
        elif isinstance(st, ir.Loop):
            for h, e in st.carried:
                flows.setdefault(id(h), []).append(e)
        elif isinstance(st, ir.Assign):
            e = st.expr
            if isinstance(e, ir.Call):
                if any(isinstance(p.type, T.ArrayType) for p in e.func.params):
                    seeds += e.args
                else:
                    flows.setdefault(id(st.dst), []).extend(e.args)
            elif isinstance(e, ir.Copy):
                flows.setdefault(id(st.dst), []).append(e.src)
            elif isinstance(e, ir.Prim) and e.builtin.differentiable:
                flows.setdefault(id(st.dst), []).extend(e.args)
                if getattr(e.builtin, "array_access", None) == "accumulate":
                    seeds += e.args  # a tile added into an array
    # one pass over the flows (a worklist), not a sweep of the body per step back
    work = seeds[::-1]
    while work:
        o = work.pop()
        if isinstance(o, ir.Var) and id(o) not in needed:
            needed.add(id(o))
            work += flows.get(id(o), ())[::-1]
    return needed


def reads_own_derivatives(fir, seen=None):
    """Whether func ``fir`` (or a func it calls) uses a builtin with derivatives of its own
    (``Builtin.own_derivatives``: a mesh's points), so its adjoint must run even when none of
    its arguments carries a gradient."""
    seen = set() if seen is None else seen
    if id(fir) in seen:
        return False
    seen.add(id(fir))
    for st in ir.walk(fir.body):
        e = getattr(st, "expr", None)
        if isinstance(e, ir.Prim) and e.builtin.own_derivatives:
            return True
        if isinstance(e, ir.Call) and reads_own_derivatives(e.func, seen):
            return True
    return False


def call_varies(e, varied):
    """Whether call ``e`` can have a nonzero tangent given ``varied`` (see
    :func:`tangent_varied`): an argument varies, it takes a differentiable array (whose tangent
    array it reads or writes), reads derivatives of its own (a mesh's points) or has a tangent
    rule of the user's."""
    f = e.func
    return any(isinstance(a, ir.Var) and id(a) in varied for a in e.args) or \
        "tangent" in f.custom or reads_own_derivatives(f) or any(
            isinstance(p.type, T.ArrayType) and T.is_differentiable(p.type) for p in f.params)


def tangent_varied(fir):
    """Ids of the variables whose tangent can be nonzero: those computed, through
    differentiable operations, from a differentiable parameter (a func's, or a kernel's
    non-array one) or from a read of a differentiable array. The tangent pass gives the others
    a constant zero tangent, so their rules, and the ``__jvp`` of a func none of whose
    arguments varies, are not generated (activity analysis, forward direction)."""
    varied = {id(p) for p in fir.params if not isinstance(p.type, T.ArrayType)
              and T.is_differentiable(p.type)}
    changed = True

    def mark(v):
        nonlocal changed
        if id(v) not in varied:
            varied.add(id(v))
            changed = True

    def any_varied(ops):
        return any(isinstance(o, ir.Var) and id(o) in varied for o in ops)

    while changed:
        changed = False
        for s in ir.walk(fir.body):
            if isinstance(s, ir.Loop):
                for h, e in s.carried:
                    if id(e) in varied:
                        mark(h)
                continue
            if not isinstance(s, ir.Assign) or not T.is_differentiable(s.dst.type) or \
                    id(s.dst) in varied:
                continue
            e = s.expr
            if isinstance(e, ir.Copy):
                hit = isinstance(e.src, ir.Var) and id(e.src) in varied
            elif isinstance(e, ir.Load):
                hit = not e.array.type.local and T.is_differentiable(e.array.type)
            elif isinstance(e, ir.Prim):
                hit = e.builtin.differentiable and (e.builtin.own_derivatives or
                                                    any_varied(e.args))
            elif isinstance(e, ir.Call):
                hit = call_varies(e, varied)
            else:  # GradCall: a constant along any direction
                hit = False
            if hit:
                mark(s.dst)
    return varied


def local_buffer_gradient(fir, varied):
    """A message when a gradient would have to flow through a thread-local buffer, else None.

    That is the case when a value that depends on the kernel's differentiable inputs (one in
    ``varied``, see :func:`tangent_varied`) is stored into a ``wp.alloc_local`` buffer: weft
    does not differentiate those buffers (as Dr.Jit), so the adjoint and tangent would be
    incomplete."""
    for s in ir.walk(fir.body):
        if isinstance(s, (ir.Store, ir.AtomicRMW)) and s.array.type.local and \
                isinstance(s.value, ir.Var) and id(s.value) in varied:
            return (f"line {s.loc.lineno} stores a value that depends on the kernel's "
                    "differentiable inputs into a wp.alloc_local buffer; weft does not "
                    "differentiate thread-local buffers, so this kernel has no adjoint or "
                    "tangent. Keep differentiable values out of the buffer.")
    return None


def run(state):
    """Facts of every function of ``state`` and of their custom rules (a callee's facts are
    computed before its callers', whatever the order of ``state.funcs``)."""
    facts = {}

    def facts_of(fir):
        if fir not in facts:
            facts[fir] = analyze(fir, facts_of)
        return facts[fir]

    for fir in state.funcs:
        facts_of(fir)
        for rule in fir.custom.values():
            facts_of(rule)
    state.facts = facts
    return state
