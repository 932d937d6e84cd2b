"""Mutation fuzzer of weft's transpiler: every mutant of a corpus kernel must either transpile
into a module that imports, or be rejected with a located ``weft.KernelError`` (``file:line:col``,
the source line, a caret). Anything else is a bug of weft: an INTERNAL error (another exception,
or a KernelError without a location), a CRASH (the worker process died by a signal) or a HANG.

    python tools/fuzz_kernels.py --count 10000 --seed 1 --jobs 2 --out /tmp/fuzz

The corpus is every ``@wp.kernel`` in tests/transpiler/test_corpus*.py, golden_kernels.py and
examples/*.py, each with the funcs, structs and constants of its file. A mutant applies 1 to 3
operators (``MUTATORS``) to one kernel; mutants run in worker processes in batches, so a crash
or a hang costs one mutant. Prints a table of outcomes; each INTERNAL/CRASH/HANG mutant's source
and traceback is written to ``--out`` for triage.
"""
from __future__ import annotations

import argparse
import ast
import copy
import glob
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = ["tests/transpiler/test_corpus*.py", "tests/transpiler/golden_kernels.py",
          "examples/*.py"]
PRELUDE = "import math\nimport numpy as np\nfrom typing import Any\nimport weft as wp\n"


# ------------------------------------------------------------------------------ the corpus
def _decorated(node, names):
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr in names:
            return True
    return False


def corpus():
    """``[(file, context source, kernel FunctionDef)]``: each kernel with what it may use."""
    out = []
    for pattern in CORPUS:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            tree = ast.parse(open(path).read())
            context = []
            kernels = []
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and _decorated(node, ("kernel",)):
                    kernels.append(node)
                elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and _decorated(
                        node, ("func", "struct", "func_grad", "func_replay", "func_native")):
                    context.append(node)
                elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name)
                                                          for t in node.targets):
                    if all(isinstance(n, (ast.Constant, ast.Name, ast.Attribute, ast.Call,
                                          ast.BinOp, ast.UnaryOp, ast.Tuple))
                           for n in [node.value]) and _safe_value(node.value):
                        context.append(node)
            ctx_src = "\n\n".join(ast.unparse(n) for n in context)
            out += [(os.path.relpath(path, ROOT), ctx_src, k) for k in kernels]
    return out


def _safe_value(node):
    """Module constants the kernels read (numbers, wp.constant(...), wp types), nothing that
    runs code with effects."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and f.value.id in ("wp", "np")):
                return False
    return True


# ------------------------------------------------------------------------------ mutators
BINOPS = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod, ast.Pow, ast.FloorDiv, ast.BitAnd,
          ast.LShift, ast.MatMult]
CMPOPS = [ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq, ast.NotEq, ast.Is, ast.In]
CONSTANTS = [0, 1, -1, 2, 3.5, -0.0, 2 ** 31, 2 ** 40, -2 ** 63, 2 ** 64, 1e30, math.inf,
             math.nan, True, None, "s", 1j]
TYPES = ["float", "int", "wp.float64", "wp.vec3", "wp.mat33", "wp.quat", "wp.uint32",
         "wp.array(dtype=float)", "wp.array(dtype=wp.vec3)", "wp.array2d(dtype=float)",
         "wp.int8", "wp.float16", "wp.transform", "bool", "Any", "wp.vec2i", "str"]
NAMES = ["undefined_name", "wp", "i", "x", "tid", "range", "print", "len", "math", "np"]
ATTRS = ["x", "y", "z", "w", "p", "q", "shape", "dtype", "foo", "T"]


def _nodes(tree, cls):
    return [n for n in ast.walk(tree) if isinstance(n, cls)]


def _bodies(fn):
    """Every statement list in the function (the body, loop and branch bodies)."""
    out = [fn.body]
    for n in ast.walk(fn):
        if n is fn:
            continue
        for field in ("body", "orelse"):
            b = getattr(n, field, None)
            if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                out.append(b)
    return out


def m_binop(fn, rng):
    ops = _nodes(fn, (ast.BinOp, ast.AugAssign))
    if ops:
        rng.choice(ops).op = rng.choice(BINOPS)()
        return True


def m_compare(fn, rng):
    cs = _nodes(fn, ast.Compare)
    if cs:
        c = rng.choice(cs)
        c.ops[0] = rng.choice(CMPOPS)()
        return True


def m_delete(fn, rng):
    b = rng.choice(_bodies(fn))
    del b[rng.randrange(len(b))]
    if not b:
        b.append(ast.Pass())
    return True


def m_duplicate(fn, rng):
    b = rng.choice(_bodies(fn))
    k = rng.randrange(len(b))
    b.insert(rng.randrange(len(b) + 1), copy.deepcopy(b[k]))
    return True


def m_constant(fn, rng):
    cs = _nodes(fn, ast.Constant)
    if cs:
        rng.choice(cs).value = rng.choice(CONSTANTS)
        return True


def m_annotation(fn, rng):
    args = [a for a in fn.args.args]
    targets = [a for a in args] + _nodes(fn, ast.AnnAssign)
    if targets:
        t = rng.choice(targets)
        t.annotation = ast.parse(rng.choice(TYPES), mode="eval").body
        return True


def m_name(fn, rng):
    names = [n for n in _nodes(fn, ast.Name) if isinstance(n.ctx, ast.Load)]
    if names:
        rng.choice(names).id = rng.choice(NAMES + [a.arg for a in fn.args.args])
        return True


def m_arity(fn, rng):
    calls = _nodes(fn, ast.Call)
    if calls:
        c = rng.choice(calls)
        if c.args and rng.random() < 0.5:
            del c.args[rng.randrange(len(c.args))]
        else:
            c.args.append(copy.deepcopy(rng.choice(c.args)) if c.args else ast.Constant(1.0))
        return True


def m_swap_args(fn, rng):
    calls = [c for c in _nodes(fn, ast.Call) if len(c.args) >= 2]
    if calls:
        c = rng.choice(calls)
        i, j = rng.sample(range(len(c.args)), 2)
        c.args[i], c.args[j] = c.args[j], c.args[i]
        return True


def m_wrap(fn, rng):
    b = rng.choice(_bodies(fn))
    k = rng.randrange(len(b))
    inner = [b[k]]
    wrapper = rng.choice([
        ast.For(ast.Name("_k", ast.Store()), ast.parse("range(2)", mode="eval").body, inner, []),
        ast.If(ast.Constant(rng.choice([True, False])), inner, []),
        ast.While(ast.parse("_w < 2", mode="eval").body,
                  [ast.parse("_w += 1").body[0]] + inner, [])])
    b[k] = wrapper
    if isinstance(wrapper, ast.While):
        b.insert(k, ast.parse("_w = int(0)").body[0])
    return True


def m_jump(fn, rng):
    b = rng.choice(_bodies(fn))
    stmt = rng.choice([ast.Return(None), ast.Break(), ast.Continue(),
                       ast.Return(ast.Constant(1.0))])
    b.insert(rng.randrange(len(b) + 1), stmt)
    return True


def m_index(fn, rng):
    subs = _nodes(fn, ast.Subscript)
    if subs:
        s = rng.choice(subs)
        s.slice = ast.Constant(rng.choice([-1, 3, 5, 2 ** 31, 0]))
        return True


def m_expression(fn, rng):
    exprs = [n for n in _nodes(fn, (ast.BinOp, ast.Call, ast.Name, ast.Attribute))
             if isinstance(getattr(n, "ctx", ast.Load()), ast.Load)]
    if exprs:
        target = rng.choice(exprs)
        new = rng.choice([ast.Tuple([ast.Constant(1), ast.Constant(2)], ast.Load()),
                          ast.Constant("text"), ast.Constant(None), ast.List([], ast.Load()),
                          ast.Lambda(ast.arguments([], [], None, [], [], None, []),
                                     ast.Constant(0))])
        for parent in ast.walk(fn):
            for field, value in ast.iter_fields(parent):
                if value is target:
                    setattr(parent, field, new)
                    return True
                if isinstance(value, list) and target in value:
                    value[value.index(target)] = new
                    return True


def m_attribute(fn, rng):
    attrs = _nodes(fn, ast.Attribute)
    attrs = [a for a in attrs if not (isinstance(a.value, ast.Name) and a.value.id == "wp")]
    if attrs:
        rng.choice(attrs).attr = rng.choice(ATTRS)
        return True


MUTATORS = [m_binop, m_compare, m_delete, m_duplicate, m_constant, m_annotation, m_name,
            m_arity, m_swap_args, m_wrap, m_jump, m_index, m_expression, m_attribute]


def mutants(count, seed):
    """``[(id, kernel name, operators, module source)]``, reproducible from ``seed``."""
    rng = random.Random(seed)
    base = corpus()
    out = []
    while len(out) < count:
        path, ctx_src, kernel = rng.choice(base)
        fn = copy.deepcopy(kernel)
        ops = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            m = rng.choice(MUTATORS)
            if m(fn, rng):
                ops.append(m.__name__[2:])
        if not ops:
            continue
        ast.fix_missing_locations(fn)
        try:
            body = ast.unparse(fn)
        except Exception:  # noqa: BLE001 - an AST Python itself cannot print: not a mutant
            continue
        src = PRELUDE + "\n" + ctx_src + "\n\n\n" + body + "\n"
        out.append((len(out), fn.name, ops, src, path))
    return out


# ------------------------------------------------------------------------------ one mutant
def launch_args(kernel):
    """Small arguments for every parameter of ``kernel`` (arrays of 4 zeros, scalars 1)."""
    import weft as wp
    from weft.core import types as T
    args = []
    for _, t in kernel.declared:
        if isinstance(t, T.ArrayType):
            shape = (4,) * t.ndim
            args.append(wp.zeros(shape, dtype=t.dtype))
        elif T.is_struct(t):
            args.append(t())
        elif T.is_composite(t):
            args.append(t())
        else:
            args.append(t(1) if t is not T.bool else True)
    return args


def classify(src, name, index, launch=False):
    """Run one mutant in this process: ``(outcome, detail)``; with ``launch`` a mutant that
    transpiles is also compiled by Numba and launched on 4 threads with small arguments."""
    import linecache
    import traceback

    from weft.core.errors import KernelError, LaunchError
    fname = f"<mutant {index}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    try:
        code = compile(src, fname, "exec")
    except SyntaxError:
        return "python-syntax", ""
    ns = {"__name__": f"weft_mutant_{index}"}
    try:
        exec(code, ns)  # noqa: S102 - the mutant's own module (decorators only)
    except KernelError as e:
        return ("kernel-error", "") if _located(e) else ("INTERNAL", "unlocated: " + str(e))
    except (TypeError, ValueError, NameError, AttributeError) as e:
        return "python-error", f"{type(e).__name__}: {e}"  # the module itself is bad Python
    kernel = ns.get(name)
    try:
        if kernel.is_generic:  # Any-annotated: compiled per launch types, nothing to transpile
            return "generic", ""
        src_out = kernel.source("all")
        compile(src_out, "<generated>", "exec")
        if not launch:
            return "ok", ""
        import weft as wp
        from weft.core.errors import KernelFloatError, KernelIndexError
        try:
            wp.launch(kernel, 4, inputs=launch_args(kernel))
        except (KernelIndexError, KernelFloatError, ZeroDivisionError):
            return "runtime-error", ""
        return "ok-launched", ""
    except KernelError as e:
        if _located(e):
            return "kernel-error", ""
        return "INTERNAL", "unlocated KernelError: " + str(e)[:500]
    except LaunchError as e:
        return "launch-error", str(e)[:200]
    except RecursionError:
        return "INTERNAL", traceback.format_exc()[-3000:]
    except Exception:  # noqa: BLE001 - anything else is weft's bug: reported, not hidden
        return "INTERNAL", traceback.format_exc()[-3000:]


def _located(e):
    text = str(e)
    return e.filename is not None and e.lineno is not None and "^" in text and \
        f":{e.lineno}:" in text.splitlines()[0]


def worker(batch_file):
    """Classify the mutants of a batch, one JSON line each (a line before each mutant says
    which one starts, so the parent knows which one crashed or hung)."""
    items = json.load(open(batch_file))

    def on_alarm(signum, frame):
        raise TimeoutError

    signal.signal(signal.SIGALRM, on_alarm)
    launch = os.environ.get("WEFT_FUZZ_LAUNCH") == "1"
    for idx, name, src in items:
        print(json.dumps({"start": idx}), flush=True)
        signal.alarm(120 if launch else 20)
        try:
            outcome, detail = classify(src, name, idx, launch)
        except TimeoutError:
            outcome, detail = "HANG", "over 20 s"
        finally:
            signal.alarm(0)
        print(json.dumps({"done": idx, "outcome": outcome, "detail": detail}), flush=True)


# ------------------------------------------------------------------------------ driver
def run_batch(items, cache_dir, launch=False):
    """Results of a batch: ``{id: (outcome, detail)}``; a dead worker's current mutant is a
    CRASH (or HANG on timeout) and the rest of the batch runs again in a new worker."""
    results = {}
    todo = list(items)
    while todo:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump([(i, n, s) for i, n, _, s, _ in todo], f)
        env = dict(os.environ, WEFT_CACHE_DIR=cache_dir, PYTHONPATH=ROOT)
        if launch:
            env["WEFT_FUZZ_LAUNCH"] = "1"
        else:
            env["NUMBA_DISABLE_JIT"] = "1"
        try:
            p = subprocess.run([sys.executable, __file__, "--worker", f.name],
                               capture_output=True, text=True, env=env,
                               timeout=30 + (125 if launch else 25) * len(todo))
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else \
                (e.stdout or ""), "timeout"
        finally:
            os.unlink(f.name)
        current = None
        for line in out.splitlines():
            msg = json.loads(line) if line.startswith("{") else {}
            if "start" in msg:
                current = msg["start"]
            elif "done" in msg:
                results[msg["done"]] = (msg["outcome"], msg["detail"])
                current = None
        if current is not None:
            results[current] = ("HANG" if rc == "timeout" else "CRASH", f"exit {rc}")
        elif rc not in (0,) and len(results) < len(items):
            missing = [i for i, *_ in todo if i not in results]
            results[missing[0]] = ("CRASH", f"exit {rc} before the first mutant")
        todo = [t for t in todo if t[0] not in results]
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "weft-fuzz"))
    ap.add_argument("--launch", type=int, default=0,
                    help="also compile with Numba and launch this many of the mutants")
    ap.add_argument("--worker")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.perf_counter()
    items = mutants(args.count, args.seed)
    chosen = set(random.Random(args.seed).sample(range(len(items)), min(args.launch,
                                                                       len(items))))
    plain = [it for it in items if it[0] not in chosen]
    launched = [it for it in items if it[0] in chosen]
    batches = [(plain[k:k + args.batch], False) for k in range(0, len(plain), args.batch)]
    batches += [(launched[k:k + 20], True) for k in range(0, len(launched), 20)]
    os.makedirs(args.out, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="weft-fuzz-cache-")
    results = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(lambda b: run_batch(b[0], cache, b[1]), batches):
            results.update(r)
    counts = {}
    by_op = {}
    for idx, name, ops, src, path in items:
        outcome, detail = results[idx]
        counts[outcome] = counts.get(outcome, 0) + 1
        for op in ops:
            by_op.setdefault(op, {}).setdefault(outcome, 0)
            by_op[op][outcome] += 1
        if outcome in ("INTERNAL", "CRASH", "HANG"):
            with open(os.path.join(args.out, f"{outcome.lower()}_{idx}.py"), "w") as f:
                f.write(f"# {path}: {name}, operators {ops}\n" + src + "\n'''\n" + detail +
                        "\n'''\n")
    seconds = time.perf_counter() - t0
    print(f"{len(items)} mutants of {len(corpus())} corpus kernels, seed {args.seed}, "
          f"{seconds:.0f} s")
    print(f"{'outcome':16s} {'mutants':>8s}")
    for k in sorted(counts, key=lambda k: -counts[k]):
        print(f"{k:16s} {counts[k]:8d}")
    bad = sum(counts.get(k, 0) for k in ("INTERNAL", "CRASH", "HANG"))
    if bad:
        print(f"{bad} mutants need triage: {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
