"""Run Warp's own example programs under weft with only the import changed, and compare their
final state with Warp's (a differential check; Warp is never a dependency of weft).

    python tools/warp_examples.py --warp-python /path/to/venv-with-warp/bin/python \
        core/example_sph:x,v,rho core/example_nvdb:positions --frames 3

Each example is copied from the warp-lang wheel with ``warp`` replaced by ``weft`` in its
imports and module references (``import weft as wp``, ``import weft.render``,
``weft.examples.get_asset_directory()``), then both versions run ``Example(stage_path=None)``
(or ``Example()``) for ``--frames`` steps in their own processes; the listed attributes are
compared (sum, sum of absolute values, first values) to ``--rtol``. Assets are Warp's (passed
to weft with ``WEFT_ASSET_DIR``). An example without an ``Example`` class (``core/example_work_queue``,
``core/example_spin_lock``: test functions) runs its ``test_*(device="cpu")`` functions, which
check their own results; they take numpy from ``warp.tests.unittest_utils``, which weft's copy
imports instead. A script (no ``Example``, and test functions, if any, that need more than a
device: ``tile/example_tile_matmul``) runs as a program; the numbers it prints are compared.
``Example`` arguments without defaults get ``seed=42``, ``train_iters=3``; ``headless=True`` where
the example takes it (no window). ``--mode debug``
runs weft's copy with every array access checked.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

DRIVER = r'''
import importlib.util, inspect, json, sys, time
import numpy as np
path, frames, attrs = sys.argv[1], int(sys.argv[2]), [a for a in sys.argv[3].split(",") if a]
if sys.argv[4] == "warp":  # Warp's runtime starts on its first use; some examples need it first
    import warp
    warp.config.quiet = True
    warp.init()
else:
    import weft
    weft.config.mode = sys.argv[5]
spec = importlib.util.spec_from_file_location("example", path)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
t0 = time.perf_counter()
if hasattr(m, "Example"):
    params = inspect.signature(m.Example.__init__).parameters
    kw = {"stage_path": None} if "stage_path" in params else {}
    if "headless" in params:  # no window (example_tile_nbody plots with matplotlib otherwise)
        kw["headless"] = True
    kw.update({n: v for n, v in (("seed", 42), ("train_iters", 3))
               if n in params and params[n].default is inspect.Parameter.empty})
    ex = m.Example(**kw)
    t0 = time.perf_counter()
    # (example_raycast renders only; example_tile_mlp trains)
    advance = getattr(ex, "step", None) or getattr(ex, "render", None) or ex.train_warp
    indexed = bool(inspect.signature(advance).parameters)  # step(step_index): the checkpoints
    for i in range(frames):
        advance(i) if indexed else advance()
else:
    tests = [getattr(m, n) for n in sorted(vars(m)) if n.startswith("test_")
             and inspect.isfunction(getattr(m, n))]  # (not kernels named test_*)
    plain = tests and all(set(inspect.signature(f).parameters) <= {"device"} for f in tests)
    if plain:  # test functions, which check their results themselves
        for f in tests:
            f(device="cpu")
    else:  # a script: run as a program; the numbers it prints are its state
        import contextlib, io, re, runpy
        buf = io.StringIO()
        sys.argv = [path]
        with contextlib.redirect_stdout(buf):
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise
        text = "\n".join(line for line in buf.getvalue().splitlines()
                         if not line.startswith(("Module ", "Warp ", "   ", "weft:")))
        printed = [float(v) for v in re.findall(r"[-+]?\d+\.?\d*(?:[eE][-+]?\d+)?", text)]
seconds = time.perf_counter() - t0
out = {"seconds": seconds}
if "printed" in dir():
    x = np.asarray(printed, dtype=np.float64)
    out["printed"] = [float(x.sum()), float(np.abs(x).sum()), [float(v) for v in x[:8]]]
for a in attrs:
    obj = ex
    for part in a.split("."):
        obj = getattr(obj, part)
    x = np.asarray(obj.numpy() if hasattr(obj, "numpy") else obj, dtype=np.float64)
    out[a] = [float(x.sum()), float(np.abs(x).sum()), [float(v) for v in x.ravel()[:8]]]
print("\nRESULT " + json.dumps(out))  # (on a line of its own: examples print "\r..." lines)
'''


def weftify(source):
    """The example with ``warp`` replaced by ``weft`` in imports and module references (and
    Warp's test helpers, which examples import for numpy, by numpy)."""
    source = source.replace("from warp.tests.unittest_utils import *", "import numpy as np")
    return re.sub(r"\bwarp(?=[. \n])", "weft", source)


def run(python, script, frames, attrs, env, impl, mode="release"):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(DRIVER)
    try:
        r = subprocess.run([python, f.name, script, str(frames), attrs, impl, mode],
                           capture_output=True, text=True, env=env, timeout=1800)
    finally:
        os.unlink(f.name)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:]), None
    lines = r.stderr.strip().splitlines() or ["(no output)"]
    last = " ".join(x.strip() for x in lines[-2:]) if lines[-1].startswith("    at ") else lines[-1]
    return None, f"{impl}: {last} (exit status {r.returncode})"


def close(a, b, rtol):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", nargs="+", help="path/in/warp/examples[:attr1,attr2]")
    ap.add_argument("--warp-python", required=True)
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--mode", default="release", help="weft's wp.config.mode (debug: checked)")
    args = ap.parse_args(argv)
    root = subprocess.run([args.warp_python, "-c", "import os, warp; print(os.path.dirname("
                           "warp.__file__))"], capture_output=True, text=True).stdout.strip()
    examples = os.path.join(root, "examples")
    env = dict(os.environ, WEFT_ASSET_DIR=os.path.join(examples, "assets"))
    failures = 0
    print(f"{'example':40s} {'weft':>10s} {'Warp':>10s}  result")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.examples:
            name, _, attrs = spec.partition(":")
            original = os.path.join(examples, name + ".py")
            copy = os.path.join(tmp, os.path.basename(name) + ".py")
            with open(original) as f, open(copy, "w") as g:
                g.write(weftify(f.read()))
            mine, err = run(sys.executable, copy, args.frames, attrs, env, "weft", args.mode)
            theirs, err2 = run(args.warp_python, original, args.frames, attrs, env, "warp")
            if mine is None or theirs is None:
                failures += 1
                print(f"{name:40s} {'-':>10s} {'-':>10s}  FAILED: {err or err2}")
                continue
            keys = [a for a in attrs.split(",") if a] + (["printed"] if "printed" in mine else [])
            same = all(close(x, y, args.rtol) for a in keys
                       for x, y in zip(mine[a][:2] + mine[a][2], theirs[a][:2] + theirs[a][2]))
            failures += not same
            print(f"{name:40s} {mine['seconds']:9.2f}s {theirs['seconds']:9.2f}s  "
                  f"{'same state' if same else 'DIFFERENT: ' + json.dumps([mine, theirs])}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
