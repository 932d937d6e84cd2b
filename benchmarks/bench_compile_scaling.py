"""Compile time against kernel size (issue 38): weft's transpiler should be linear in the number
of statements.

    python benchmarks/bench_compile_scaling.py [--sizes 100,1000,3000] [--shapes straight,...]
        [--numba] [--numba-big] [--repeat N] [--markdown]

Generates kernels of N statements in three shapes:

* ``straight``: ``x_k = a[i] * k + 1.0`` for k in 0..N-1, then ``out[i]`` = the sum of every
  hundredth ``x_k``;
* ``branches``: a chain of N ``if a[i] > k: x = x * 1.0001 + k`` statements;
* ``loop``: a ``for`` loop over ``n`` whose body is N statements (``y_k = x * k + 1.0``, then
  ``x`` updated from every hundredth ``y_k``);
* ``chain``: ``x_k = a[i] * x_{k-1} * 0.5 + k``, each statement reading the one before, the
  last one stored. In ``straight`` and ``loop`` only every hundredth value reaches the output,
  and weft drops the rest from the forward and the adjoint as dead code (Warp compiles them):
  ``chain`` is the shape whose every statement is compiled, forward and adjoint.

The transpile column is weft's transpiler alone (pure Python: lowering, analysis, the forward
and adjoint kernels, the module's source text), with a fresh cache so nothing is reused: the
module a launch builds. "with tangents" is the whole module, the tangent (forward-mode) kernel
too: what ``weft transpile`` writes and a first forward-mode launch builds (measured last in the
process, after the launches).
``--numba`` adds Numba's compilation plus a first launch of the forward and the adjoint for the
sizes up to 1,000 (``--numba-big``: 3,000 too, which takes minutes), and, when ``warp`` is
importable, Warp's first forward and adjoint launch with a fresh kernel cache (Warp builds a
module's forward and backward code together, at its first launch: its adjoint column is a launch
alone). With ``--numba`` the table adds weft's total, the first forward launch plus the first
adjoint launch (the forward's holds the transpile: the module is built there, not taken from the
transpile column's run, which is not cached; until stop 73 the total also added the transpile
column, counting it twice), and its growth between sizes, the issue's measure. ``--repeat N``
runs each weft row N times, each a new
process with an empty cache, and keeps the run of least total: this machine's speed moves by
10-20% between processes, more than the differences measured here.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import text_table  # noqa: E402

SHAPES = ("straight", "branches", "loop", "chain")
HEADER = "import {mod} as wp\n\n\n@wp.kernel\n"


def kernel_source(shape, n, module="weft"):
    """The text of a module holding one kernel, ``k_<shape>_<n>``, of ``n`` statements."""
    name = f"k_{shape}_{n}"
    lines = [HEADER.format(mod=module)]
    if shape == "straight":
        lines.append(f"def {name}(a: wp.array(dtype=float), out: wp.array(dtype=float)):\n")
        lines.append("    i = wp.tid()\n")
        lines += [f"    x_{k} = a[i] * {k}.0 + 1.0\n" for k in range(n)]
        lines.append("    out[i] = " + " + ".join(f"x_{k}" for k in range(0, n, 100)) + "\n")
    elif shape == "branches":
        lines.append(f"def {name}(a: wp.array(dtype=float), out: wp.array(dtype=float)):\n")
        lines.append("    i = wp.tid()\n    x = a[i]\n")
        lines += [f"    if a[i] > {k}.0:\n        x = x * 1.0001 + {k}.0\n" for k in range(n)]
        lines.append("    out[i] = x\n")
    elif shape == "loop":
        lines.append(f"def {name}(a: wp.array(dtype=float), m: int, "
                     "out: wp.array(dtype=float)):\n")
        lines.append("    i = wp.tid()\n    x = a[i]\n    for j in range(m):\n")
        lines += [f"        y_{k} = x * {k}.0 + 1.0\n" for k in range(n)]
        lines.append("        x = 0.001 * (" + " + ".join(f"y_{k}" for k in range(0, n, 100))
                     + ")\n")
        lines.append("    out[i] = x\n")
    elif shape == "chain":
        lines.append(f"def {name}(a: wp.array(dtype=float), out: wp.array(dtype=float)):\n")
        lines.append("    i = wp.tid()\n    x_0 = a[i]\n")
        lines += [f"    x_{k} = a[i] * x_{k - 1} * 0.5 + {k}.0\n" for k in range(1, n)]
        lines.append(f"    out[i] = x_{n - 1}\n")
    else:
        raise ValueError(shape)
    return name, "".join(lines)


def load_kernel(shape, n, directory, module="weft"):
    name, text = kernel_source(shape, n, module)
    path = os.path.join(directory, f"{module}_{name}.py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(f"{module}_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def transpile_seconds(kernel, tangents=False):
    """weft's transpiler alone on ``kernel``: the forward and adjoint source a launch builds
    (a CPU release module), or with ``tangents`` the tangent kernel's too (the whole module, as
    ``weft transpile`` writes it and a first forward-mode launch builds)."""
    import dataclasses

    from weft.transpiler import pipeline
    from weft.transpiler.state import CompileOptions, CompileState
    options = dataclasses.replace(CompileOptions.for_device("cpu", "release", False),
                                  tangents=tangents)
    t0 = time.perf_counter()
    state = pipeline.run(CompileState(roots=[kernel], options=options))
    took = time.perf_counter() - t0
    assert "__adj_chunk" in state.source and ("__jvp_chunk" in state.source) == tangents
    return took


def _arrays(wp, shape):
    import numpy as np
    a = wp.array(np.linspace(0.0, 1.0, 64, dtype=np.float32), requires_grad=True)
    out = wp.zeros(64, dtype=float, requires_grad=True)
    inputs = [a, 2] if shape == "loop" else [a]
    return inputs, out


def launch_seconds(wp, kernel, shape):
    """First forward launch, then first adjoint launch (compiling each on the way)."""
    inputs, out = _arrays(wp, shape)
    t0 = time.perf_counter()
    wp.launch(kernel, 64, inputs=inputs, outputs=[out])
    t1 = time.perf_counter()
    out.grad.fill_(1.0)
    wp.launch(kernel, 64, inputs=inputs, outputs=[out], adjoint=True,
              adj_inputs=[inputs[0].grad] + inputs[1:], adj_outputs=[out.grad])
    return t1 - t0, time.perf_counter() - t1


def measure_one(shape, n, numba, module):
    """One kernel in this process (a fresh one per measurement, so nothing is warm)."""
    with tempfile.TemporaryDirectory() as tmp:
        if module == "warp":
            import warp as wp
            wp.config.quiet = True
            wp.config.kernel_cache_dir = os.path.join(tmp, "warpcache")
            wp.init()
            kernel = load_kernel(shape, n, tmp, "warp")
            return launch_seconds(wp, kernel, shape)
        os.environ["WEFT_CACHE_DIR"] = os.path.join(tmp, "weftcache")
        import weft as wp
        wp.config.quiet = True
        kernel = load_kernel(shape, n, tmp)
        row = (transpile_seconds(kernel),)
        if numba:
            row += launch_seconds(wp, kernel, shape)
        return row + (transpile_seconds(kernel, tangents=True),)  # (last: the others as before)


def run_child(shape, n, numba, module):
    cmd = [sys.executable, __file__, "--child", f"{shape},{n},{int(numba)},{module}"]
    env = dict(os.environ, WEFT_TIERED_COMPILE="0")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return None, res.stderr.strip().splitlines()[-1:]
    last = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return tuple(float(v) for v in last.split()[1:]), None  # Warp prints its banner first


def warp_available():
    return importlib.util.find_spec("warp") is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,3000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--numba", action="store_true", help="Numba compile + first launch")
    ap.add_argument("--numba-big", action="store_true", help="--numba for 3,000 too")
    ap.add_argument("--no-warp", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="weft runs per row (least total kept)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        shape, n, numba, module = args.child.split(",")
        print("RESULT", *measure_one(shape, int(n), numba == "1", module))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    numba = args.numba or args.numba_big
    warp = numba and not args.no_warp and warp_available()
    cols = ["shape", "statements", "transpile (s)", "growth", "with tangents (s)"]
    if numba:
        cols += ["numba fwd (s)", "numba adj (s)", "weft total (s)", "total growth"]
    if warp:
        cols += ["warp fwd (s)", "warp adj (s)"]
    rows = []
    for shape in shapes:
        prev = prev_total = None
        for n in sizes:
            big = n > 1000 and not args.numba_big
            runs = [run_child(shape, n, numba and not big, "weft") for _ in range(args.repeat)]
            done = [vals for vals, _ in runs if vals is not None]
            if not done:
                rows.append([shape, str(n), f"failed: {runs[0][1]}"] + [""] * (len(cols) - 3))
                continue
            best = min(done, key=lambda v: sum(v[1:-1]) or v[0])  # (least total, or transpile)
            vals, whole = best[:-1], best[-1]
            growth = f"{vals[0] / prev[1]:.2f}x per {n / prev[0]:.0f}x" if prev else ""
            prev = (n, vals[0])
            row = [shape, str(n), f"{vals[0]:.3f}", growth, f"{whole:.3f}"]
            if numba:
                total = vals[1] + vals[2] if len(vals) == 3 else None
                total_growth = f"{total / prev_total[1]:.2f}x per {n / prev_total[0]:.0f}x" \
                    if total and prev_total else ""
                prev_total = (n, total) if total else prev_total
                row += ([f"{v:.2f}" for v in vals[1:]] or ["-", "-"]) + \
                    [f"{total:.2f}" if total else "-", total_growth]
            if warp:
                wvals = None if big else run_child(shape, n, True, "warp")[0]
                row += [f"{v:.2f}" for v in wvals] if wvals else ["-", "-"]
            rows.append(row)
            print(" ", " | ".join(row), file=sys.stderr, flush=True)
    print(text_table(cols, rows, args.markdown))

if __name__ == "__main__":
    main()
