"""New-process start-up: cold compile and warm start of a differentiable program, and Warp's
``wave`` example with a warm cache (issue 18's start-up rows).

    python benchmarks/bench_startup.py [--markdown] [--repeat 3] [--frames 300]

Rows, each the wall time of a new Python process (the interpreter's start included):

1. cloth, cold: the cloth module (``benchmarks/cloth.py``: springs, integration, loss) run as a
   differentiable 16 x 16 cloth of 8 steps on a tape, to the first gradient, with an empty
   kernel cache (weft: a fresh ``WEFT_CACHE_DIR``; Warp: a fresh ``kernel_cache_dir``). weft
   as a user runs it (tiered compiles: serial twins first), then with tiering off (Warp's
   column repeats its cold time), then with ``wp.load_module(..., max_workers=2)`` first (weft
   compiles the module's kernels in two worker processes; Warp compiles its module as one).
   After each weft run the benchmark waits for its compile helper to finish.
2. cloth, warm: the same process again, with the cache the cold run filled (best of
   ``--repeat``).
3. Warp's ``core/example_wave.py`` run as a script (``--stage-path None``, ``--num-frames``),
   warm cache, best of ``--repeat``; weft's copy has only its import changed
   (``tools/warp_examples.py``'s rewrite).

The gradients of the two libraries are checked equal (to 1e-5 relative) before any timing is
reported. Warp's column appears when ``warp`` is importable (or with ``--warp-python``).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r'''
import json, os, sys, time
impl, ahead = sys.argv[1], sys.argv[2] == "1"
sys.path.insert(0, sys.argv[3])
import importlib
import numpy as np
wp = importlib.import_module(impl)
wp.config.quiet = True
if impl == "warp":
    wp.config.kernel_cache_dir = os.environ["BENCH_CACHE"]
    wp.init()
import cloth
k = cloth.build(wp)
if ahead:
    wp.load_module(cloth, device="cpu", max_workers=2)
n, steps = 16, 8
x, inv_mass, pairs, rest = cloth.make_cloth(n)
m = len(rest)
xs = [wp.array(x, dtype=wp.vec3, requires_grad=True) for _ in range(steps + 1)]
vs = [wp.zeros(n * n, dtype=wp.vec3, requires_grad=True) for _ in range(steps + 1)]
fs = [wp.zeros(n * n, dtype=wp.vec3, requires_grad=True) for _ in range(steps)]
pr = wp.array(pairs.reshape(-1), dtype=int)
rl = wp.array(rest, dtype=float)
im = wp.array(inv_mass, dtype=float)
loss = wp.zeros(1, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    for s in range(steps):
        wp.launch(k["eval_springs"], m, inputs=[xs[s], vs[s], pr, rl, cloth.KE, cloth.KD, fs[s]])
        wp.launch(k["integrate"], n * n, inputs=[xs[s], vs[s], fs[s], im,
                  wp.vec3(*cloth.GRAVITY), cloth.DT, xs[s + 1], vs[s + 1]])
    wp.launch(k["height_loss"], n * n, inputs=[xs[steps], loss])
tape.backward(loss)
g = vs[0].grad.numpy()
print(json.dumps({"loss": float(loss.numpy()[0]), "grad": np.asarray(g).ravel().tolist()}))
'''


def _run(python, args, env, cwd=None):
    t0 = time.perf_counter()
    out = subprocess.run([python, *args], env=env, capture_output=True, text=True, cwd=cwd)
    took = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return took, out.stdout


def _env(impl, cache):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package runs
    env["WEFT_CACHE_DIR" if impl == "weft" else "BENCH_CACHE"] = cache
    return env


def _wait_for_helpers(timeout=600):
    """Wait until no weft compile helper runs (a tiered program's helper finishes its queue
    after the program exits): the next measurement must not share the cores with it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = False
        for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    busy |= b"weft.runtime.ahead import compile_entry" in f.read()
            except OSError:
                pass
        if not busy:
            return
        time.sleep(0.2)


def cloth_rows(impl, python, repeat):
    """(cold s, cold untiered s, cold with load_module s, warm s, gradient) for one library."""
    child = os.path.join(tempfile.mkdtemp(), "child.py")
    with open(child, "w") as f:
        f.write(CHILD)
    res = {}
    runs = [("cold", "0", {}), ("cold, load_module", "1", {"WEFT_TIERED_COMPILE": "0"})]
    if impl == "weft":
        runs.insert(1, ("cold, untiered", "0", {"WEFT_TIERED_COMPILE": "0"}))
    for key, ahead, extra in runs:
        cache = tempfile.mkdtemp(prefix=f"bench-startup-{impl}-")
        took, out = _run(python, [child, impl, ahead, HERE], {**_env(impl, cache), **extra})
        _wait_for_helpers()
        res[key] = took
        res["grad"] = json.loads(out.strip().splitlines()[-1])["grad"]
        if ahead == "1":
            res["warm"] = min(_run(python, [child, impl, "0", HERE], _env(impl, cache))[0]
                              for _ in range(repeat))
        shutil.rmtree(cache, ignore_errors=True)
    return res


def wave_row(impl, python, repeat, frames, warp_dir):
    """Best-of-``repeat`` wall time of Warp's wave example (from ``warp_dir``) as a script,
    warm cache."""
    src = open(os.path.join(warp_dir, "examples", "core", "example_wave.py")).read()
    if impl == "weft":
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        from warp_examples import weftify
        src = weftify(src)
    d = tempfile.mkdtemp()
    path = os.path.join(d, "example_wave.py")
    with open(path, "w") as f:
        f.write(src)
    cache = tempfile.mkdtemp(prefix=f"bench-wave-{impl}-")
    env = _env(impl, cache)
    if impl == "warp":  # Warp reads its cache directory from the environment too
        env["WARP_CACHE_PATH"] = cache
    args = [path, "--stage-path", "None", "--num-frames", str(frames)]
    _run(python, args, {**env, "WEFT_TIERED_COMPILE": "0"}, cwd=d)  # fills the cache
    best = min(_run(python, args, env, cwd=d)[0] for _ in range(repeat))
    shutil.rmtree(cache, ignore_errors=True)
    return best


def _warp_dir(python):
    """Where ``python`` imports Warp from, or None."""
    out = subprocess.run([python, "-c", "import warp, os; print(os.path.dirname(warp.__file__))"],
                         capture_output=True, text=True)
    return out.stdout.strip() or None if out.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--warp-python")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    warp_python = a.warp_python or sys.executable
    warp_dir = _warp_dir(warp_python)
    if warp_dir is None:
        warp_python = None
    weft = cloth_rows("weft", sys.executable, a.repeat)
    warp = cloth_rows("warp", warp_python, a.repeat) if warp_python else None
    if warp is not None:
        import numpy as np
        g1, g2 = np.array(weft["grad"]), np.array(warp["grad"])
        err = float(np.abs(g1 - g2).max() / max(np.abs(g2).max(), 1e-30))
        print(f"gradients: max |weft - warp| / max |warp| = {err:.2e}")
        if err > 1e-5:
            sys.exit("the gradients differ: no timings reported")
    rows = [("cloth module, cold cache, new process to first gradient", "cold"),
            ("same, tiered compiles off (WEFT_TIERED_COMPILE=0)", "cold, untiered"),
            ("same, with wp.load_module(max_workers=2) first", "cold, load_module"),
            ("same program, warm cache", "warm")]
    table = [(label, weft[key], warp.get(key, warp["cold"]) if warp else None)
             for label, key in rows]
    if warp_dir is not None:  # the example ships with Warp
        wave = (wave_row("weft", sys.executable, a.repeat, a.frames, warp_dir),
                wave_row("warp", warp_python, a.repeat, a.frames, warp_dir))
        table.append((f"Warp's wave example, {a.frames} frames, warm cache", *wave))
    print("| what | weft (s) | Warp CPU (s) | weft/Warp |")
    print("|---|---|---|---|")
    for label, w, v in table:
        ratio = f"{w / v:.2f}" if v else ""
        print(f"| {label} | {w:.2f} | {'' if v is None else f'{v:.2f}'} | {ratio} |")


if __name__ == "__main__":
    main()
