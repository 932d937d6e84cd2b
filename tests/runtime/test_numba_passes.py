"""weft's Numba passes for generated code (``weft/runtime/numba_passes.py``): each gives what
Numba's own passes give, in fewer statements and blocks, or in less time.

* The SSA reconstruction is compared with Numba's, function by function, on the generated code
  of kernels with branches, loops, loop-carried tuples and early returns: the same IR text.
  So is the live-variable map, before and after SSA (phis make variables live at the entry,
  the case where Numba's ``def_reach`` rule matters): the same sets.
* Constant casts fold to the values Numba's compiled casts compute, bit for bit.
* Tests of an argument against None are pruned by the argument's type; the values and every
  gradient of launches with and without gradient arrays are checked against analytic ones.
"""
import contextlib
import copy
import dis
import io
import operator

import numba
import numpy as np
import pytest
from numba.core import analysis, ir, ssa, types
from numba.core.compiler import run_frontend
from numba.core.registry import CPUDispatcher

import weft as wp
from weft.runtime import dominance, liveness, numba_lowering, numba_passes, numba_simplify


@wp.func
def clamp_step(x: float, lo: float):
    if x < lo:
        return lo
    return x * 0.5


@wp.kernel
def branches_and_loops(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), n: int,
                       out: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    acc = wp.vec3()
    k = int(0)
    while k < n:
        if x > 1.0:
            x = x * 0.75
        else:
            x = x + 0.25
        acc = acc + v[i] * x
        k += 1
    for j in range(n):
        x = clamp_step(x, 0.1) + float(j)
    if a[i] > 100.0:
        out[i] = 0.0
        return
    out[i] = x + wp.length(acc)


def _generated_functions(kernel):
    module = kernel.compiled("cpu").entry("forward", "serial").py_func.__globals__
    found = []
    for value in module.values():
        value = getattr(value, "weft_chunk_of", value)
        if isinstance(value, CPUDispatcher):
            found.append(value.py_func)
    return found


def _text(blocks):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for label, block in blocks.items():
            print("label", label)
            block.dump()
    return out.getvalue()


class _State(dict):
    __getattr__ = dict.__getitem__


def test_ssa_by_mentions_gives_numbas_ir_for_every_generated_function():
    functions = _generated_functions(branches_and_loops)
    assert len(functions) >= 8  # forward, adjoint, tangent (threaded and serial), the func's
    checked = 0
    for fn in functions:
        for simplified in (False, True):
            func_ir = run_frontend(fn)
            if simplified:  # as in the pipeline: after the simplifying pass, arrays as arguments
                args = tuple(types.Array(types.float32, 1, "C") if name.startswith(("a", "v",
                             "out", "adj_", "tan_")) else types.int64
                             for name in func_ir.arg_names)
                numba_simplify.SimplifyGeneratedCode().run_pass(
                    _State(func_ir=func_ir, args=args))
            numbas = ssa._run_ssa(copy.deepcopy(func_ir.blocks))
            ours = numba_passes.reconstruct_ssa_blocks(func_ir.blocks)
            assert _text(ours) == _text(numbas), fn.__name__
            checked += 1
    assert checked == 2 * len(functions)


@numba.njit
def _one_sided(flag, x):
    if flag:
        y = x * 2.0  # one definition, in a branch: the use after the join is a violator
    else:
        x = x + 1.0  # two definitions of x
    z = y + x
    return z


def test_ssa_violators_are_numbas_from_the_dominator_tree():
    """The variables SSA reconstruction renames (defined twice, or used where no definition
    dominates), found from the dominator tree's intervals: Numba's set in Numba's order, on the
    generated functions (as the pipeline sees them and simplified) and on a function whose
    single definition is in one branch; the intervals give Numba's dominator sets."""
    functions = _generated_functions(branches_and_loops) + [_one_sided]
    for fn in functions:
        func_ir = run_frontend(fn)
        blocks = func_ir.blocks
        cfg = analysis.compute_cfg_from_blocks(blocks)
        ours = list(dominance.defs_violators(ssa, blocks, cfg))
        assert ours == list(ssa._find_defs_violators(blocks, cfg)), fn.__name__
        span = dominance.dominator_intervals(cfg)
        for node, doms in cfg.dominators().items():
            assert doms == {d for d in span if span[d][0] <= span[node][0] <= span[d][1]}
    ours = list(dominance.defs_violators(ssa, run_frontend(_one_sided).blocks,
                                             analysis.compute_cfg_from_blocks(
                                                 run_frontend(_one_sided).blocks)))
    assert "x" in ours and "y" in ours and "z" not in ours


def _casts():
    return (np.float32(0.1), np.float32(-0.0), np.float32(1e-46), np.float32(1e39),
            np.float32(3.4028235e38), np.float32(16777216), np.float64(0.1),
            np.int32(-5), np.int32(2147483647), np.uint8(255), np.int64(-9007199254740993))


def test_constant_casts_fold_to_the_bits_numba_computes():
    compiled = _casts()
    folded = [numba_simplify._constant_cast(np.float32, 0.1),
              numba_simplify._constant_cast(np.float32, -0.0),
              numba_simplify._constant_cast(np.float32, 1e-46),
              numba_simplify._constant_cast(np.float32, 1e39),
              numba_simplify._constant_cast(np.float32, 3.4028235e38),
              numba_simplify._constant_cast(np.float32, 16777216),
              numba_simplify._constant_cast(np.float64, 0.1),
              numba_simplify._constant_cast(np.int32, -5),
              numba_simplify._constant_cast(np.int32, 2147483647),
              numba_simplify._constant_cast(np.uint8, 255),
              numba_simplify._constant_cast(np.int64, -9007199254740993)]
    kinds = [np.float32] * 6 + [np.float64, np.int32, np.int32, np.uint8, np.int64]
    for kind, want, got in zip(kinds, compiled, folded):  # (returned boxed: exact)
        assert type(got) is kind
        assert np.asarray(got).tobytes() == np.asarray(want, dtype=kind).tobytes()
    # left as calls: out of range, a big integer into a float, booleans, other kinds
    assert numba_simplify._constant_cast(np.int32, 2 ** 31) is None
    assert numba_simplify._constant_cast(np.uint8, -1) is None
    assert numba_simplify._constant_cast(np.float32, 16777217) is None
    assert numba_simplify._constant_cast(np.float32, True) is None
    assert numba_simplify._constant_cast(np.int32, 1.5) is None


@wp.kernel
def scaled_sum(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if a[i] > 0.5:
        out[i] = a[i] * b[i] * 3.0
    else:
        out[i] = a[i] * 2.0 + b[i]


def test_none_tests_on_arguments_are_pruned_by_type():
    adjoint = [fn for fn in _generated_functions(scaled_sum)
               if fn.__name__ == "scaled_sum__adj_serial"][0]
    func_ir = run_frontend(adjoint)
    array = types.Array(types.float32, 1, "C")
    args = tuple(types.none if name == "adj_b" else array if name != "_dim" else
                 types.UniTuple(types.int64, 1) for name in func_ir.arg_names)
    before = len(func_ir.blocks)
    assert numba_simplify.SimplifyGeneratedCode().run_pass(_State(func_ir=func_ir, args=args))
    assert len(func_ir.blocks) < before
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) \
                    and stmt.value.op == "binop":
                assert stmt.value.fn.__name__ not in ("is_", "is_not")
            assert not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                        and stmt.value.op == "call"
                        and getattr(func_ir.get_definition(stmt.value.func), "value", None)
                        is np.float32)


@pytest.mark.parametrize("with_b_grad", [True, False])
def test_adjoint_values_with_and_without_a_gradient_array(with_b_grad):
    a_np = np.array([0.2, 0.9, 0.4, 0.7], np.float32)
    b_np = np.array([1.5, -2.0, 3.0, 0.25], np.float32)
    a = wp.array(a_np, requires_grad=True)
    b = wp.array(b_np, requires_grad=with_b_grad)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scaled_sum, 4, inputs=[a, b, out])
    tape.backward(grads={out: np.ones(4, np.float32)})
    high = a_np > 0.5
    np.testing.assert_allclose(out.numpy(), np.where(high, a_np * b_np * 3.0, a_np * 2.0 + b_np),
                               rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), np.where(high, 3.0 * b_np, 2.0), rtol=1e-6)
    if with_b_grad:
        np.testing.assert_allclose(b.grad.numpy(), np.where(high, 3.0 * a_np, 1.0), rtol=1e-6)
    else:
        assert b.grad is None


def _live_maps(blocks):
    cfg = analysis.compute_cfg_from_blocks(blocks)
    usedefs = analysis.compute_use_defs(blocks)
    args = (cfg, blocks, usedefs.usemap, usedefs.defmap)
    return numba_passes._numba_live_map(*args), numba_passes.compute_live_map(*args)


def test_live_variable_map_gives_numbas_sets_before_and_after_ssa():
    leaky = 0
    for fn in _generated_functions(branches_and_loops):
        func_ir = run_frontend(fn)
        numbas, ours = _live_maps(func_ir.blocks)
        assert ours == numbas and list(ours) == list(numbas), fn.__name__
        blocks = numba_passes.reconstruct_ssa_blocks(func_ir.blocks)
        numbas, ours = _live_maps(blocks)
        assert ours == numbas and list(ours) == list(numbas), fn.__name__
        cfg = analysis.compute_cfg_from_blocks(blocks)
        usedefs = analysis.compute_use_defs(blocks)
        names = liveness.Bits()
        use = {label: names.of(usedefs.usemap[label]) for label in blocks}
        defs = {label: names.of(usedefs.defmap[label]) for label in blocks}
        plain = liveness.live_fixed_point(cfg, blocks, use, defs, cfg.topo_order(), {})
        leaky += {label: liveness.names_of(names, bits) for label, bits in plain.items()} \
            != ours
    assert leaky  # where the plain fixed point differs, the full rule was taken


float32 = np.float32  # as generated modules name it: a global, so its casts fold


def _scaled(a):
    b = a * float32(2.0) + float32(0.5)   # an array expression with folded casts
    return b, a[0] * float32(3.0)


def test_folded_casts_inside_array_expressions():
    from weft.runtime.numba_start import generated_code_compiler
    compiled = numba.njit(pipeline_class=generated_code_compiler())(_scaled)
    a = np.array([1.5, -0.25, 3.0], np.float32)
    b, s = compiled(a)
    assert b.dtype == np.float32
    np.testing.assert_array_equal(b, a * np.float32(2.0) + np.float32(0.5))
    assert s == np.float32(4.5)


def _long_chain(folder, n=80):
    """``x = x * float32(0.5) + a[k % 3]``, ``n`` times: one block of about 6n statements
    (written to a module in ``folder`` and imported)."""
    import importlib.util
    path = folder / "long_chain_module.py"
    path.write_text("from numpy import float32\n\n\ndef long_chain(a):\n    x = a[0]\n" + "".join(
        f"    x = x * float32(0.5) + a[{k % 3}]\n" for k in range(n)) + "    return x\n")
    spec = importlib.util.spec_from_file_location("long_chain_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.long_chain


def test_long_blocks_are_cut_and_compute_the_same(tmp_path):
    long_chain = _long_chain(tmp_path)
    func_ir = run_frontend(long_chain)
    assert max(len(b.body) for b in func_ir.blocks.values()) > numba_simplify.BLOCK_STATEMENTS
    numba_simplify.SimplifyGeneratedCode().run_pass(
        _State(func_ir=func_ir, args=(types.Array(types.float32, 1, "C"),)))
    assert len(func_ir.blocks) > 2
    assert max(len(b.body) for b in func_ir.blocks.values()) <= numba_simplify.BLOCK_STATEMENTS
    from weft.runtime.numba_start import generated_code_compiler
    a = np.array([0.5, -1.25, 2.0], np.float32)
    want = numba.njit(long_chain)(a)
    got = numba.njit(pipeline_class=generated_code_compiler())(long_chain)(a)
    assert np.float32(got).tobytes() == np.float32(want).tobytes()


def test_statement_variables_are_numbas_list():
    """``_collect_vars`` (the variables of a statement while generated code compiles) gives
    Numba's ``Inst._rec_list_vars`` list, in order, for every statement and expression."""
    compared = 0
    for fn in _generated_functions(branches_and_loops):
        for blocks in (run_frontend(fn, emit_dels=True).blocks,
                       numba_passes.reconstruct_ssa_blocks(run_frontend(fn).blocks)):
            for block in blocks.values():
                for stmt in block.body:
                    for node in [stmt] + [v for v in vars(stmt).values()
                                          if isinstance(v, ir.Inst)]:
                        of = vars(node) if not isinstance(node, ir.Expr) else node._kws
                        ours = []
                        numba_passes._collect_vars(of, ours)
                        numbas = numba_passes._numba_list_vars(node, of)
                        assert [v.name for v in ours] == [v.name for v in numbas], stmt
                        assert all(a is b for a, b in zip(ours, numbas))
                        compared += 1
    assert compared > 500


def _types_of(py_func, sig):
    """Every variable's type and every call's signature of ``py_func`` compiled for ``sig``
    by weft's pipeline, as text (temporary names are numbered the same way in each compile)."""
    from weft.runtime.numba_start import generated_code_compiler
    disp = numba.njit(error_model="numpy", pipeline_class=generated_code_compiler())(py_func)
    disp.compile(sig)
    fndesc = disp.overloads[sig].fndesc
    return (sorted((name, str(ty)) for name, ty in fndesc.typemap.items()),
            sorted((str(expr), str(s)) for expr, s in fndesc.calltypes.items()))


@pytest.mark.uncached  # compiles its own dispatchers on every run (no cache is involved)
def test_kept_typing_of_operators_gives_numbas_types():
    """Operators on plain values are typed once while generated code compiles
    (``numba_passes._resolve_function_type``): every variable's type and every call's signature
    are what Numba's own typing gives, in every function of a module (forward, adjoint, tangent,
    the func's), and the typing was kept and reused."""
    a = wp.array(np.array([0.5, 2.0, 1.5, 0.2], np.float32), requires_grad=True)
    v = wp.array(np.ones((4, 3), np.float32), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(branches_and_loops, 4, inputs=[a, v, 3, out])
    tape.backward(grads={out: np.ones(4, np.float32)})
    module = branches_and_loops.compiled("cpu").entry("forward", "serial").py_func.__globals__
    compiled = [(value, sig) for value in (getattr(v, "weft_chunk_of", v) for v in module.values())
                if isinstance(value, CPUDispatcher) and
                value.py_func.__module__ == module["__name__"]  # (not weft's helpers)
                for sig in value.overloads]
    assert len(compiled) >= 2  # the serial forward and adjoint (and the func's, when compiled
    #                            here rather than loaded with them from a warm cache)
    kept = 0
    items = set()  # kept typings of array elements read or written
    for disp, sig in compiled:
        numba_passes._resolved.clear()
        numba_passes.LEAN_TYPING = False
        try:
            numbas = _types_of(disp.py_func, sig)
        finally:
            numba_passes.LEAN_TYPING = True
        assert not numba_passes._resolved
        ours = _types_of(disp.py_func, sig)
        kept += len(numba_passes._resolved)  # (an entry that only calls another keeps none)
        items |= {getattr(func, "typing_key", func) for _, func, _ in numba_passes._resolved
                  if getattr(func, "typing_key", func) in numba_passes._ITEMS}
        assert ours == numbas, disp.py_func.__name__
    assert kept >= 10  # operators on plain values were typed once and kept
    assert operator.getitem in items  # and array elements read (``setitem``'s typing asks
    #                                   ``get_call_type``: the next test)


@pytest.mark.uncached  # compiles its own dispatchers on every run (no cache is involved)
def test_kept_call_types_of_lowering_are_numbas():
    """Lowering asks each operator's function type for its call type again
    (``numba_lowering._get_call_type``): the answers kept while generated code compiles are the
    signatures Numba's own ``get_call_type`` gives for the same questions; the array types whose
    ``__array__`` lookups were answered at once (``numba_lowering._get_function``) have none in
    Numba; and the compiled function computes what Numba's own pipeline's does."""
    from weft.runtime.numba_start import generated_code_compiler
    fns = _generated_functions(branches_and_loops)
    fn = next(f for f in fns if f.__name__ == "branches_and_loops__fwd_serial")
    sig = (types.UniTuple(types.int64, 1), types.Array(types.float32, 1, "C"),
           types.Array(types.float32, 2, "C"), types.int32, types.Array(types.float32, 1, "C"))
    numba_lowering._kept_calls.clear()
    numba_lowering._array_misses.clear()
    ours = numba.njit(error_model="numpy", pipeline_class=generated_code_compiler())(fn)
    ours.compile(sig)
    kept = dict(numba_lowering._kept_calls)
    assert len(kept) >= 5
    numbas = numba_lowering._numba_get_call_type
    for (context, fnty, args), answer in kept.items():
        assert answer == numbas(fnty, context, args, {}), (fnty, args)
    assert {fnty.typing_key for _, fnty, _ in kept} >= numba_passes._ITEMS
    # the array types answered at once have no __array__ implementation in Numba either
    assert numba_lowering._array_misses
    for context, args in numba_lowering._array_misses:
        with pytest.raises(NotImplementedError):
            numba_lowering._numba_get_function(context, "__array__",
                                             numba.core.typing.signature(args[0], *args))
    numba_passes.LEAN_TYPING = False
    try:
        theirs = numba.njit(error_model="numpy", pipeline_class=generated_code_compiler())(fn)
        theirs.compile(sig)
    finally:
        numba_passes.LEAN_TYPING = True
    a = np.array([0.5, 2.0, 1.5, 0.2], np.float32)
    v = np.linspace(0.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    out_ours, out_theirs = np.zeros(4, np.float32), np.zeros(4, np.float32)
    ours((4,), a, v, np.int32(3), out_ours)
    theirs((4,), a, v, np.int32(3), out_theirs)
    np.testing.assert_array_equal(out_ours, out_theirs)
    assert out_ours.any()


def _dead_maps(compute, blocks):
    cfg = analysis.compute_cfg_from_blocks(blocks)
    usedefs = analysis.compute_use_defs(blocks)
    live = numba_passes._numba_live_map(cfg, blocks, usedefs.usemap, usedefs.defmap)
    got = compute(cfg, blocks, live, usedefs.defmap)
    return tuple({k: set(v) for k, v in part.items()} for part in got)


def test_dead_variable_maps_are_numbas_before_and_after_ssa():
    checked = 0
    for fn in _generated_functions(branches_and_loops):
        func_ir = run_frontend(fn)
        for blocks in (func_ir.blocks, numba_passes.reconstruct_ssa_blocks(func_ir.blocks)):
            numbas = _dead_maps(numba_passes._numba_dead_maps, blocks)
            ours = _dead_maps(numba_passes.compute_dead_maps, blocks)
            assert ours == numbas, fn.__name__
            # the post-processor's lifetimes: dead maps from the live sets as bits
            lifetime = numba_passes._Lifetime(blocks)
            assert tuple({k: set(v) for k, v in part.items()}
                         for part in lifetime.deadmaps) == numbas, fn.__name__
            assert lifetime.livemap == numba_passes._numba_live_map(
                lifetime.cfg, blocks, lifetime.usedefs.usemap, lifetime.usedefs.defmap)
            checked += sum(len(v) for v in numbas[2].values())
    assert checked  # some variables die somewhere


def test_backbone_is_numbas_set():
    """``CFGraph.backbone`` from the immediate post-dominators above the entry: Numba's set,
    on the generated functions (before and after SSA), a long chain of ``if`` statements in a
    loop, and a function whose loop has no exit."""
    from numba.core import controlflow
    graphs = []
    for fn in _generated_functions(branches_and_loops):
        blocks = run_frontend(fn).blocks
        graphs.append(lambda blocks=blocks: analysis.compute_cfg_from_blocks(blocks))
        ssa_blocks = numba_passes.reconstruct_ssa_blocks(blocks)
        graphs.append(lambda blocks=ssa_blocks: analysis.compute_cfg_from_blocks(blocks))

    def chain(n, exit_loop=True):
        g = controlflow.CFGraph()
        for k in range(2 * n + 3):
            g.add_node(k)
        g.add_edge(0, 1)
        for k in range(n):  # 1 + 2k: a test (and the join before it), 2 + 2k: its branch
            g.add_edge(1 + 2 * k, 2 + 2 * k)
            g.add_edge(1 + 2 * k, 3 + 2 * k)
            g.add_edge(2 + 2 * k, 3 + 2 * k)
        g.add_edge(2 * n + 1, 1)  # back to the loop's head
        if exit_loop:
            g.add_edge(1, 2 * n + 2)
        g.set_entry_point(0)
        g.process()
        return g

    graphs += [lambda: chain(40), lambda: chain(5, exit_loop=False)]
    for make in graphs:
        ours, numbas = make(), make()
        assert numba_passes._backbone(ours) == numba_passes._numba_backbone(numbas)
        assert ours._succs == numbas._succs and ours._preds == numbas._preds
    assert numba_passes._backbone(chain(40)) == {0, 1, 82}  # entry, loop head, exit


def test_type_annotation_is_made_only_when_asked_for():
    """A generated function's type annotation prints a line, not the typed IR (what Numba's
    cache entry keeps), and ``annotate()`` still makes the whole text."""
    from weft.runtime.numba_start import generated_code_compiler
    compiled = numba.njit(pipeline_class=generated_code_compiler())(_scaled)
    compiled(np.array([1.5, -0.25], np.float32))
    annotation = compiled.overloads[compiled.signatures[0]].type_annotation
    assert isinstance(annotation, numba_passes.KernelTypeAnnotation)
    assert "_scaled" in str(annotation) and "annotate()" in str(annotation)
    assert len(str(annotation)) < 200
    text = annotation.annotate()
    assert "float32" in text and "array(float32, 1d, C)" in text
    reduced = compiled.overloads[compiled.signatures[0]]._replace()._reduce()
    assert reduced[6] == str(annotation)  # what the cache entry keeps


def test_bytecode_labels_are_numbas_list_with_set_membership():
    from numba.core import bytecode
    numba_passes.install_analyses()
    for fn in _generated_functions(branches_and_loops):
        bc = bytecode.ByteCode(bytecode.FunctionIdentity.from_function(fn))
        assert isinstance(bc.labels, numba_passes._Labels)
        expected = sorted({x + bytecode._FIXED_OFFSET for x in dis.findlabels(fn.__code__.co_code)}
                          | {0})
        assert list(bc.labels) == expected
        for inst in bc:
            assert (inst.offset in bc.labels) == (inst.offset in expected)


def test_generated_code_compiles_with_the_collector_paused_then_restored(tmp_path):
    import gc
    import threading

    from weft.core import startup
    from weft.runtime.numba_start import generated_code_compiler
    long_chain = _long_chain(tmp_path, n=150)
    a = np.array([1.0, 2.0, 3.0], np.float32)
    seen = []

    def note(phase, info):  # each collection, and whether generated code was compiling
        if phase == "start":
            seen.append(bool(getattr(numba_passes._compiling, "depth", 0)))

    gc.callbacks.append(note)
    try:
        numba.njit(long_chain)(a)  # Numba's own pipeline: the collector runs (the probe works)
        by_numba = len(seen)
        del seen[:]
        got = numba.njit(pipeline_class=generated_code_compiler())(long_chain)(a)
    finally:
        gc.callbacks.remove(note)
    assert by_numba > 0 and True not in seen and gc.isenabled()
    assert got == long_chain(a)
    # counted across threads: on again only when the last pause ends, and only if it was on
    entered, release = threading.Event(), threading.Event()

    def hold():
        with startup.collector_paused():
            entered.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    entered.wait(30)
    with startup.collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's pause is still open
    release.set()
    t.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with startup.collector_paused():
            pass
        assert not gc.isenabled()  # left off, as the program had it
    finally:
        gc.enable()


def test_entry_variables_are_numbas_when_read():
    """While generated code compiles, the post-processor leaves each block's entry variables
    to be computed when read (``numba_passes._EntryVars``): read, they are Numba's, before and
    after SSA."""
    from numba.core import postproc
    numba_passes.install_analyses()
    for fn in _generated_functions(branches_and_loops):
        for with_ssa in (False, True):
            numbas, ours = run_frontend(fn), run_frontend(fn)
            if with_ssa:
                numbas.blocks = numba_passes.reconstruct_ssa_blocks(numbas.blocks)
                ours.blocks = numba_passes.reconstruct_ssa_blocks(ours.blocks)
            postproc.PostProcessor(numbas).run()
            with numba_passes.compiling_generated_code():
                postproc.PostProcessor(ours).run()
            assert type(numbas.block_entry_vars) is dict
            entry = ours.block_entry_vars
            assert isinstance(entry, numba_passes._EntryVars) and entry._pending is not None
            assert list(ours.blocks) == list(numbas.blocks)
            got = {label: entry[block] for label, block in ours.blocks.items()}
            want = {label: numbas.block_entry_vars[block]
                    for label, block in numbas.blocks.items()}
            assert got == want and len(entry) == len(ours.blocks), fn.__name__
            assert ours.generator_info is None and ours.variable_lifetime is not None
