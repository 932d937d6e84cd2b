"""Every call generated code makes has its entry in the vocabulary (``weft/native/vocabulary.py``),
with its number of arguments; the entries name helpers that exist and derivatives that render.

The corpus: the kernels of the golden files and of the corpus tests (operators, branches, loops,
funcs, vectors, loop-carried state, the kernel language's corners, atomics, float16, random
numbers, geometry queries, fast math), transpiled for the CPU (threads and serial), for CUDA
and, for some, in debug mode and with ``fast_math``, with the second-order module of each CPU
module (what ``tape.hvp`` runs); and the rules of every builtin of the registry, written for
each target. Transpiled only: nothing here is imported or compiled.
"""
import ast
import importlib

import pytest

from weft.core import types as T
from weft.core.errors import KernelError
from weft.native import cuda_helpers, helpers
from weft.native import vocabulary as V
from weft.runtime.kernel import Kernel
from weft.stdlib.exprs import Builder, Ex, NameGen, targeting
from weft.stdlib.registry import REGISTRY
from weft.transpiler import pipeline
from weft.transpiler.second_order import SecondOrderError
from weft.transpiler.state import CompileOptions, CompileState
from weft.transpiler.targets import TARGETS

pytestmark = pytest.mark.uncached  # transpiles only

CORPUS = ["tests.transpiler.golden_kernels", "tests.transpiler.test_corpus",
          "tests.transpiler.test_corpus_funcs", "tests.transpiler.test_corpus_vec",
          "tests.transpiler.test_loop_carried", "tests.transpiler.test_warp_language",
          "tests.transpiler.test_array_slices", "tests.runtime.test_hvp",
          "tests.runtime.fast_math_kernels", "tests.stdlib.test_atomics",
          "tests.stdlib.test_float16", "tests.stdlib.test_random",
          "tests.stdlib.test_spatial_funcs", "tests.geometry.test_geometry_kernels",
          "tests.geometry.test_mesh_kernels", "tests.geometry.test_volume_typed_kernels",
          "tests.geometry.test_hashgrid_api"]
#: modules whose kernels are also transpiled in debug mode and with fast math
EXTRA_MODES = {"tests.transpiler.golden_kernels", "tests.transpiler.test_corpus",
               "tests.runtime.fast_math_kernels"}


def _kernels(module):
    mod = importlib.import_module(module)
    return [k for _, k in sorted(vars(mod).items()) if isinstance(k, Kernel)]


def _transpile(kernel, options):
    try:
        return pipeline.run(CompileState(roots=[kernel], options=options))
    except (KernelError, TypeError):  # a generic kernel (typed at its launch), a refused one
        return None


def corpus_sources():
    """``(what, source)`` of every module of the corpus."""
    out = []
    for module in CORPUS:
        modes = [CompileOptions(("cpu", "serial")), CompileOptions(("cuda",))]
        if module in EXTRA_MODES:
            modes += [CompileOptions(("cpu", "serial"), "debug"),
                      CompileOptions(("cpu", "serial"), fast_math=True),
                      CompileOptions(("cuda",), fast_math=True)]
        for k in _kernels(module):
            for options in modes:
                state = _transpile(k, options)
                if state is None:
                    continue
                what = f"{module}.{k.key} ({options.targets[0]}, {options.mode})"
                out.append((what, state.source))
                if options.targets[0] == "cpu" and options.mode == "release":
                    for abi in state.abis.values():
                        try:
                            second = pipeline.second_order_source(state.source, abi)
                        except SecondOrderError:  # (float16 atomics have no second order)
                            continue
                        out.append((what + " second order", second))
    return out


def rule_sources():
    """``(what, source)`` of the primal, adjoint and tangent rules of every builtin the
    registry test walks (its float64 signatures, and float32 for the scalar ones), written for
    each target."""
    from tests.stdlib.test_registry import _func, _names, cases
    targets = {"cpu": None, "cuda": TARGETS["cuda"],
               "fast_math": TARGETS["cpu"].configured("release", [], True)}
    picked = list(cases())
    picked += [(n, tuple(T.float32 for _ in ts), T.float32) for n, ts, r in picked
               if all(t is T.float64 for t in ts) and r is T.float64]
    out = []
    for tname, target in targets.items():
        for name, types, ret_t in picked:
            b = REGISTRY[name]
            n = len(types)
            xs = [Ex(ast.Name(p, ast.Load()), t) for p, t in zip(_names(n, "x"), types)]
            ts = [Ex(ast.Name(p, ast.Load()), t) for p, t in zip(_names(n, "t"), types)]
            r, g = Ex(ast.Name("ret", ast.Load()), ret_t), Ex(ast.Name("g", ast.Load()), ret_t)
            with targeting(target):
                fns = [_func("primal", _names(n, "x"), lambda: b.primal(*xs)),
                       _func("tangent", [], lambda: b.tangent(*xs, *ts, ret=r)),
                       _func("adjoint", [], lambda: b.adjoint(*xs, ret=r, adj=g))]
            out.append((f"rules of {name} ({tname})", ast.unparse(ast.Module(fns, []))))
    return out


def _chunks(source):
    """The top-level pieces of ``source``: each function with its decorators, and what lies
    between them."""
    out, cur, decorated = [], [], False
    for line in source.splitlines(keepends=True):
        top = line.startswith(("@", "def ", "class "))
        if top and not decorated and cur:
            out.append("".join(cur))
            cur = []
        cur.append(line)
        if line.strip():
            decorated = line.startswith("@")
    if cur:
        out.append("".join(cur))
    return out


_CHUNK_CALLS = {}


def _chunk_calls(text):
    """``(names of the functions defined in text, [(called, args, keywords)] of the calls in
    their bodies)``, once per distinct text (the corpus repeats functions: a kernel's funcs in
    each of its modes, a module's functions in its second-order module)."""
    got = _CHUNK_CALLS.get(text)
    if got is None:
        defs = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)]
        calls = []
        for d in defs:
            for st in d.body:  # the body only: decorators are not calls generated code makes
                for node in ast.walk(st):
                    if isinstance(node, ast.Call):
                        calls.append((V.called_name(node.func), len(node.args),
                                      len(node.keywords)))
        got = _CHUNK_CALLS[text] = ({d.name for d in defs}, calls)
    return got


def _calls(source):
    """``(called name, number of arguments, keywords)`` of every call in the functions of
    ``source`` but calls of the module's own functions."""
    parts = [_chunk_calls(c) for c in _chunks(source)]
    own = set().union(*(names for names, _ in parts))
    for _, calls in parts:
        for called, nargs, nkw in calls:
            if called not in own:
                yield called, nargs, nkw


@pytest.fixture(scope="module")
def sources():
    return corpus_sources() + rule_sources()


def test_every_emitted_call_has_an_entry_with_its_arity(sources):
    missing, wrong = {}, {}
    seen = set()
    for what, source in sources:
        for called, nargs, nkw in _calls(source):
            e = V.entry(called)
            seen.add(called)
            if e is None:
                missing.setdefault(called, what)
            elif nkw or (e.arity is not None and e.arity != nargs):
                wrong.setdefault(called, f"{nargs} arguments ({nkw} keywords) in {what}")
    assert not missing, f"calls with no entry in weft/native/vocabulary.py: {missing}"
    assert not wrong, f"calls whose arguments differ from their entry: {wrong}"
    # the corpus is broad: math, casts, helpers, atomics, geometry and second order all appear
    assert {"np.sin", "float32", "_wk.atomic_add", "_wk.fm_sin", "_wk.sin_f32", "_wk.chk",
            "_w2.like", "math.erf", "_wk.erf_inverse", "_wk.h2f"} <= seen
    assert any(s.startswith("_wk.geo_mesh") for s in seen)
    assert any(s.startswith("_wk.geo_vol") for s in seen)
    assert len(seen) > 120, len(seen)


def test_helpers_named_exist():
    for name in V.CALLS:
        if name.startswith("_wk."):
            helper = name[len("_wk."):]
            if helper in cuda_helpers.PASS_FORMS:  # (the pass cuda_tiles replaces them)
                assert not hasattr(cuda_helpers, helper), name
                assert hasattr(cuda_helpers, cuda_helpers.PASS_FORMS[helper]), name
                continue
            assert hasattr(helpers, helper) or hasattr(cuda_helpers, helper), name
    # the pass's forms of each thread's element writes, and a tile stack's making
    from weft.transpiler.cuda_tile_exprs import ELEMENT_WRITES
    assert set(cuda_helpers.PASS_FORMS) == set(ELEMENT_WRITES) | {"tile_stack_make"}
    assert all(cuda_helpers.PASS_FORMS[f] == f"{f}_into" for f in ELEMENT_WRITES)


def test_geometry_queries_are_the_kernel_apis():
    from weft.native.geometry import kernel_api, kernel_api_volume
    typed = {f"{op}_{t}" for op in kernel_api_volume.TEMPLATES
             for t in kernel_api_volume.VALUE_TYPES} | {"geo_vol_index_corners"}
    assert set(V.GEOMETRY) == {n[len("geo_"):] for n in kernel_api.PORTABLE
                               if n.startswith("geo_")} | {n[len("geo_"):] for n in typed}


def test_math_spellings_and_the_cuda_helpers_agree():
    for fn in V.MATH:
        for target in V.TARGETS:
            e = V.entry(V.spelling(fn, target))
            assert e is not None and e.math == fn
            assert e.target == (target if e.name != f"np.{fn}" else "cpu")
        for suffix in ("f32", "f64"):
            assert hasattr(cuda_helpers, f"{fn}_{suffix}")
    assert {n for n in V.ARITY2} == {e.math for e in V.CALLS.values()
                                     if e.math and e.arity == 2}


@pytest.mark.parametrize("name", sorted(n for n, e in V.CALLS.items() if e.derivative))
def test_derivative_templates_render_in_both_orders(name):
    """Each derivative renders as first-order rules (typed expressions) and as second order
    (plain AST), from names the template may use."""
    from weft.stdlib import derivatives
    from weft.transpiler import second_order_rules
    e = V.CALLS[name]
    d = e.derivative
    assert e.second == "rule" and len(d.partials) == len(d.args) == e.arity
    known = set(d.args) | {"r", "g"} | {f"t_{a}" for a in d.args} | {a for a, _ in d.lets} | \
        set(V.MATH)
    for text in [p for p in d.partials if p] + [d.jvp or "x"] + [t for _, t in d.lets]:
        names = {n.id for n in ast.walk(ast.parse(text, mode="eval"))
                 if isinstance(n, ast.Name)}
        assert names <= known, (name, text)
    consts = {"complement": True} if "complement" in d.args else {}
    variables = [a for a in d.args if a not in consts]
    xs = [Ex(ast.Name(a, ast.Load()), T.float64) for a in variables]
    ts = [Ex(ast.Name("t_" + a, ast.Load()), T.float64) for a in variables]
    ret, adj = Ex(ast.Name("r", ast.Load()), T.float64), Ex(ast.Name("g", ast.Load()), T.float64)
    b = Builder(NameGen(set(variables)))
    with b.active():
        contribs = derivatives.adjoint(name, xs, ret, adj, **consts)
        tangent = derivatives.tangent(name, xs, ts, ret, **consts)
    assert len(contribs) == len(variables) and tangent is not None
    args = [ast.Name(a, ast.Load()) if a not in consts else ast.Constant(consts[a])
            for a in d.args]
    tans = [ast.Name("t_" + a, ast.Load()) if a not in consts else None for a in d.args]
    assert second_order_rules.tangent(name, ast.Name("r", ast.Load()), args, tans) is not None
    assert second_order_rules.tangent(name, ast.Name("r", ast.Load()), args,
                                      [None] * len(args)) is None
