"""Pass ``generate``: the forward, adjoint and tangent functions of every kernel and func.

Invariant: ``state.defs`` holds, callees first, one ``ast.FunctionDef`` per generated function
of the module, each built by a generator (:mod:`.forward`, :mod:`.adjoint`, :mod:`.tangent`) for
a target object (:mod:`.targets`), and ``state.abis`` the :class:`~.abi.KernelABI` of every
kernel. A CPU module holds each kernel twice, with threads (``k__fwd``, which hands its loop,
the chunk ``k__fwd_chunk``, to the threads) and without (``k__fwd_serial``); its funcs are
shared. Nothing is compiled here: Numba compiles each
function the first time it is called, so an adjoint nobody asks for costs nothing.
"""
from __future__ import annotations

import ast
import dataclasses
import os

from ..core import types as T
from ..core.errors import KernelError
from ..stdlib import ir
from .abi import KernelABI, ParamABI
from .adjoint import Adjoint
from .codegen import assign, names_for, wk_call
from .cuda_lanes import lane_tiles
from ..stdlib.exprs import name, targeting
from .forward import Forward
from .tangent import Tangent
from .targets import TARGETS

SUFFIX = {"forward": "__fwd", "adjoint": "__adj", "tangent": "__jvp"}


def function_def(fname, params, body, decorator, doc=None, pass_kind=None):
    """A generated function; ``pass_kind`` (``"forward"``, ``"adjoint"``, ``"tangent"``) marks
    the ones whose dead assignments the ``prune`` pass removes (forward ones not in debug
    builds)."""
    if doc:
        body = [ast.Expr(ast.Constant(doc))] + body
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    fdef = ast.FunctionDef(fname, args, body or [ast.Pass()],
                           [decorator] if decorator is not None else [], lineno=0)
    fdef.weft_pass = pass_kind
    return fdef


def _where(fir):
    loc = fir.source and fir.source.filename
    return f"{os.path.basename(loc)}:{fir.source.first_line}" if loc else ""


def prologue(fir):
    """The launch indices of a kernel thread, from its flat index ``_tid``: ``_first`` (the
    first index, for ``i = wp.tid()``) and ``_i<axis>`` (for ``i, j = wp.tid()``)."""
    out = []
    if None in fir.tid_vars.values():
        out.append(assign("_first", wk_call("first_index", name("_tid"), name("_dim"))))
    for a in sorted({a for a in fir.tid_vars.values() if a is not None}):
        node = name("_tid")
        stride = None
        for d in range(a + 1, fir.tid_dims):
            term = ast.Subscript(name("_dim"), ast.Constant(d), ast.Load())
            stride = term if stride is None else ast.BinOp(stride, ast.Mult(), term)
        if stride is not None:
            node = ast.BinOp(node, ast.FloorDiv(), stride)
        if a > 0:
            node = ast.BinOp(node, ast.Mod(), ast.Subscript(name("_dim"), ast.Constant(a),
                                                             ast.Load()))
        out.append(assign(f"_i{a}", node))
    return out


def kernel_functions(fir, facts, target, shared=None, tangents=True):
    """The forward, adjoint and tangent kernels of ``fir`` for ``target`` (no tangent one when
    not ``tangents``: its ABI still names it), the names of its
    parameters' adjoints and tangents, and what another target may copy instead of generating
    them again (None when nothing: see :func:`_shareable`). ``shared``: that of a target of
    the same family that generated them before: its loops are not generated again (a third of
    a large kernel's transpile) nor copied, pruned and written again (a third of the rest):
    each function holding a loop names the maker's function holding the same loop
    (``weft_twin``), and ``assemble`` writes the maker's pruned loop body into it."""
    assert shared is None or (shared["family"] == target.body_family and _shareable(target))
    out = []
    params = [p.name for p in fir.params]
    private_fwd, private_adj = facts.private_accumulators() \
        if target.private_accumulators and shared is None else ([], [])
    deco = target.decorator(kernel=True)
    entry = {kind: f"{fir.name}{SUFFIX[kind]}{target.entry_suffix}" for kind in SUFFIX}

    lanes = getattr(fir, "lanes", None)  # cooperative CPU blocks: the body runs per block
    no_adj = getattr(fir, "lanes_no_adjoint", False)
    shapes = {p.name: T.element_shape(p.type.dtype) for p in fir.params
              if isinstance(p.type, T.ArrayType) and not p.type.local}

    loop_defs = {}  # kind -> the name of the function holding the kind's loop

    def kernel(kind, fparams, body, private, doc, shadows=None):
        params = ["_dim"] + fparams + target.extra_params(kind)
        arrays = dict(shapes)
        arrays.update({s: shapes[p] for p, s in (shadows or {}).items() if p in shapes})
        twin = shared["loop_defs"][kind] if shared is not None else None
        loop = target.array_facts(arrays) + target.thread_loop(
            prologue(fir), [] if twin else body, private, blocks=lanes)
        if not target.chunked:
            out.append(function_def(entry[kind], params, loop, deco, doc, kind))
            loop_defs[kind] = entry[kind]
            out[-1].weft_twin = twin
            return
        # the loop over [_lo, _hi) as a plain function, the entry hands it to the threads
        chunk = entry[kind] + "_chunk"
        fdef = function_def(chunk, ["_lo", "_hi"] + params + target.chunk_params(private),
                            loop, target.decorator(kernel=False),
                            f"Launch indices [_lo, _hi) of {entry[kind]}.", kind)
        fdef.decorator_list.insert(0, ast.Attribute(name("_wk"), "chunk", ast.Load()))
        fdef.weft_twin = twin
        out.append(fdef)
        loop_defs[kind] = chunk
        out.append(function_def(entry[kind], params,
                                target.launch(chunk, params, private, blocks=lanes),
                                deco, doc, kind))

    if shared is None:
        gen = Forward(fir, names_for(fir), facts, target)
        gen.private = set(private_fwd)
        fwd_body = gen.block(fir.body)
    else:
        fwd_body = None  # the loop is the maker's (``weft_twin``: see assemble.link_twins)
    kernel("forward", params, fwd_body, private_fwd,
           f"Forward kernel of '{fir.name}' ({_where(fir)}).")

    if shared is None:
        adj = Adjoint(fir, names_for(fir), facts, target)
        # per-thread buffers only pay off where accumulation would otherwise be atomic
        atomic = {f"adj_{p.name}" for p in adj.atomic_arrays}
        adj.private = {a for a in private_adj if a in atomic}
        adj_names = {p.name: adj.adj(p) for p in fir.params
                     if isinstance(p.type, T.ArrayType) and T.is_differentiable(p.type)}
        adj_body, adj_private = adj.body() if not no_adj else _no_derivative(fir), \
            sorted(adj.private)
    else:
        adj_names, adj_body, adj_private = shared["adj_names"], None, []
    ties = [f"_ties{k}" for k in range(len(facts.tie_sites))]
    phases = ["_phase"] + ties if ties else []  # two-phase entries (analyze.atomic_tie_sites)
    kernel("adjoint", params + list(adj_names.values()) + phases, adj_body, adj_private,
           f"Adjoint kernel of '{fir.name}': replays the forward body, then runs it "
           "backwards.", adj_names)

    if shared is None:
        tan = Tangent(fir, names_for(fir), facts, target)
        tan_names = {p.name: tan.tan(p) for p in fir.params if T.is_differentiable(p.type)}
        tan_body = None if not tangents else \
            tan.block(fir.body) if not no_adj else _no_derivative(fir)
    else:
        tan_names, tan_body = shared["tan_names"], None
    tsums = [f"_tsum{k}" for k in range(len(facts.tie_sites))]
    if tangents:
        kernel("tangent", params + list(tan_names.values()) + (phases + tsums if ties else []),
               tan_body, (), f"Tangent (forward-mode) kernel of '{fir.name}'.", tan_names)
    made = None
    if shared is None and _shareable(target) and not private_fwd and not adj_private:
        made = {"family": target.body_family, "loop_defs": loop_defs, "adj_names": adj_names,
                "tan_names": tan_names}
    return out, entry, adj_names, tan_names, made


_LANES_NO_DERIVATIVE = ("the kernel runs cooperative CPU blocks (wp.config.enable_cpu_blocks) "
                        "keeping lane values across tile operations in per-lane buffers: weft "
                        "builds no adjoint or tangent for it")


def _no_derivative(fir):
    """The body of the adjoint and tangent of a kernel of cooperative CPU blocks: refused
    (the launch refuses first, with a KernelError)."""
    msg = (f"kernel '{fir.name}' runs cooperative CPU blocks (wp.config.enable_cpu_blocks): "
           "weft builds no adjoint or tangent for it")
    return [ast.Raise(ast.Call(name("RuntimeError"), [ast.Constant(msg)], []), None)]


def _shareable(target):
    """Whether kernel bodies generated for ``target`` are what every target of its
    ``body_family`` would generate: the two CPU targets ask the generators the same (math,
    atomics, stacks, buffers), apart from per-thread accumulators (copied only when the
    kernel has none) and the debug sites each checked access adds (not in debug mode)."""
    return target.body_family is not None and not target.debug


def func_functions(fir, facts_of, target):
    """A func, its custom rules, its adjoint and its tangent (``facts_of(f)``: the facts of
    ``f``)."""
    out = []
    facts = facts_of(fir)
    fdeco = target.decorator(kernel=False)
    where = _where(fir)
    extra = target.extra_params
    out.append(function_def(fir.name, [p.name for p in fir.params] + extra("forward"),
                            Forward(fir, names_for(fir), facts, target).block(fir.body), fdeco,
                            f"Func '{fir.name}' ({where}).", "forward"))
    for kind in ("replay", "grad", "tangent"):
        rule = fir.custom.get(kind)
        if rule is not None:
            params = [p.name for p in rule.params] + extra(
                {"replay": "forward", "grad": "adjoint", "tangent": "tangent"}[kind])
            body = Forward(rule, names_for(rule), facts_of(rule), target).block(rule.body)
            out.append(function_def(rule.name, params, body, fdeco,
                                    f"The user's {kind} rule of '{fir.name}' ({where})."))
    if "grad" not in fir.custom:
        gen = Adjoint(fir, names_for(fir), facts, target)
        body = gen.body([gen.func_returns()])
        out.append(function_def(f"{fir.name}__adj", gen.func_signature(), body, fdeco,
                                f"Adjoint of '{fir.name}': returns the adjoints of its "
                                "differentiable parameters.", "adjoint"))
    tan = Tangent(fir, names_for(fir), facts, target)
    if "tangent" in fir.custom:
        rule = fir.custom["tangent"]
        call_f = ast.Call(name(fir.name), [name(p.name) for p in fir.params] +
                          [name(p) for p in extra("forward")], [])
        targs = [name(n) for n in tan.func_params()]
        body = []
        if rule.takes_ret:  # the rule reads the result instead of computing it again
            body.append(ast.Assign([ast.Name("_ret", ast.Store())], call_f, lineno=0))
            call_f = name("_ret")
            targs.insert(len(fir.params), name("_ret"))
        call_t = ast.Call(name(rule.name), targs, [])
        body.append(ast.Return(ast.Tuple([call_f, call_t], ast.Load())))
        out.append(function_def(f"{fir.name}__jvp", tan.func_params(), body, fdeco,
                                f"Tangent of '{fir.name}' from the user's tangent rule.",
                                "tangent"))
    else:
        body = tan.block(fir.body)
        if fir.ret_type is None:
            body.append(ast.Return(None))
        out.append(function_def(f"{fir.name}__jvp", tan.func_params(), body, fdeco,
                                f"Tangent of '{fir.name}': returns (value, tangent).",
                                "tangent"))
    return out


def _tile_work(fir, seen=None):
    """The element count of the largest tile ``fir`` or a func it calls makes (0: none): how
    much work one launch index of a tiled kernel stands for (``compiled.cpu_target``)."""
    seen = set() if seen is None else seen
    if id(fir) in seen:
        return 0
    seen.add(id(fir))
    work = 0
    for s in ir.walk(fir.body):
        v = getattr(s, "dst", None)
        if v is not None and isinstance(v.type, T.TileType):
            work = max(work, v.type.size)
        elif v is not None and isinstance(v.type, T.TileStackType):  # (a block's stack)
            work = max(work, v.type.capacity)
    return max([work] + [_tile_work(f, seen) for f in fir.callees])


def _live_nulls(fir):
    """The ``null_array`` assignments of ``fir`` whose value may be read: a join gives an array
    bound on some paths only Warp's null array on the others, then copies each path's array
    into the merged name; when nothing after the join reads that name (the array is read only
    where it was bound, ``if jnt: qpos = qpos_in[w]``), the null array is never read."""
    stmts = list(ir.walk(fir.body))
    nulls = [s for s in stmts if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and
             s.expr.builtin.name == "null_array"]
    if not nulls:
        return []
    sources, live = {}, set()
    for s in stmts:
        if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Copy):
            if isinstance(s.expr.src, ir.Var):
                sources.setdefault(id(s.dst), []).append(id(s.expr.src))
        elif isinstance(s, ir.If):
            if isinstance(s.cond, ir.Var):
                live.add(id(s.cond))
        elif isinstance(s, ir.Loop):
            live |= ir.used_vars([dataclasses.replace(s, body=[])])
        else:
            live |= ir.used_vars([s])
    todo = list(live)
    while todo:
        for src in sources.get(todo.pop(), ()):
            if src not in live:
                live.add(src)
                todo.append(src)
    return [s for s in nulls if id(s.dst) in live]


def _no_cuda_null_arrays(funcs):
    """Null arrays made in a kernel (numpy's empty arrays) exist on the CPU only for now."""
    for fir in funcs:
        for s in _live_nulls(fir):
            raise KernelError(f"{s.loc.filename}:{s.loc.lineno}: {fir.kind} '{fir.name}' "
                              "passes a struct whose array member is unset to a func, "
                              "which weft runs on the CPU only for now (launch it with "
                              "device='cpu')")


def _makes_null_arrays(fir, seen=None):
    """Whether ``fir`` or a func it calls makes a null array (``null_array``) that may be
    read (see :func:`_live_nulls`)."""
    seen = set() if seen is None else seen
    if id(fir) in seen:
        return False
    seen.add(id(fir))
    return bool(_live_nulls(fir)) or any(_makes_null_arrays(f, seen) for f in fir.callees)


def run(state):
    sites = []  # debug mode: the checked accesses of the module, shared by its targets
    targets = [TARGETS[t].configured(state.options.mode, sites, state.options.fast_math)
               for t in state.options.targets]
    defs, abis = [], {}
    if any(t.name == "cuda" for t in targets):
        _no_cuda_null_arrays(state.funcs)
    for fir in state.funcs:
        facts = state.facts[fir]
        if fir.kind != "kernel":
            with targeting(targets[0]):
                fdefs = func_functions(fir, state.facts.__getitem__, targets[0])
            state.owners.update((d.name, fir) for d in fdefs)
            defs += fdefs
            continue
        entries, adj_names, tan_names = {}, {}, {}
        shared = None
        for target in targets:
            reuse = shared if shared is not None and shared["family"] == target.body_family \
                else None
            with targeting(target):
                fdefs, entry, adj_names, tan_names, made = kernel_functions(
                    fir, facts, target, reuse, state.options.tangents)
            shared = shared or made
            defs += fdefs
            for kind, fname in entry.items():
                entries.setdefault(kind, {})[target.name] = fname
        abis[fir.name] = KernelABI(
            kernel=fir.name, tid_dims=fir.tid_dims,
            params=tuple(ParamABI(p.name, adj_names.get(p.name), tan_names.get(p.name))
                         for p in fir.params),
            entries=entries, overwrites=tuple(facts.overwritten()),
            stores=tuple(facts.stored()),
            no_derivative=facts.no_derivative or (_LANES_NO_DERIVATIVE if getattr(
                fir, "lanes_no_adjoint", False) else None),
            thread_indexed=tuple(facts.thread_indexed),
            reads=facts.array_params(("load", "view", "read_old")),
            writes=facts.array_params(("store", "accumulate", "atomic")),
            debug_sites=None, tie_arrays=tuple(t.array.name for t in facts.tie_sites),
            geometry_ids=tuple((p.name, k) for p, k in facts.geometry_ids.items()),
            const_indices=tuple((p.name, axis, lo, hi, line) for (p, axis), (lo, hi, line)
                                in facts.const_indices.items()),
            guarded_indices=tuple((p.name, axis, lo, hi, line) for (p, axis), (lo, hi, line)
                                  in facts.guarded_indices.items()),
            null_arrays=_makes_null_arrays(fir),
            replayed=tuple(p.name for p in facts.replayed_arrays()),
            atomic_reads=facts.atomic_reads(), atomic_replays=facts.atomic_replays(),
            tile_work=_tile_work(fir),
            lane_tiles=lane_tiles(fir) if any(t.name == "cuda" for t in targets) and
            _tile_work(fir) else ())
    if state.options.mode != "release":  # debug and guarded: the module's kernels share sites
        abis = {k: dataclasses.replace(a, debug_sites=tuple(sites)) for k, a in abis.items()}
    state.defs = defs  # the adjoint and tangent ones lose their dead assignments in ``prune``
    state.abis = abis
    return state
