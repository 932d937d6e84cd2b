"""Volumes and hash grids through kernels: the same Warp kernel source launched by weft and by
NVIDIA Warp (CPU), so launch, id lookup and generated code are all in the timing.

    python benchmarks/bench_geometry.py [--warp-python PY] [--points 200000]
                                                [--samples 1000000] [--repeat 5]

Workloads: hash-grid build of N uniform points in [0, 1)^3 (128^3 cells, width 0.02);
neighbour count within 0.02 per point (``for j in wp.hash_grid_query``); M LINEAR samples of
the torus level set (``tests/data/nvdb/torus.nvdb``) at random index-space points, and the same
with ``volume_sample_grad_f``. Times are the best of ``--repeat`` after a warm-up (compilation
excluded). weft runs on every core; Warp's CPU kernels on one. With ``--warp-python`` the Warp
column comes from running this file under that Python with ``--impl warp``; results (counts,
sample sums) are printed so both sides can be checked equal.
"""
import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TORUS = os.path.join(os.path.dirname(HERE), "tests", "data", "nvdb", "torus.nvdb")
RADIUS = 0.02


def kernels(wp):
    @wp.kernel
    def count(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float,
              out: wp.array(dtype=int)):
        i = wp.tid()
        x = pts[i]
        c = int(0)
        for j in wp.hash_grid_query(grid, x, r):
            if wp.length(pts[j] - x) <= r:
                c += 1
        out[i] = c

    @wp.kernel
    def sample(v: wp.uint64, uvw: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.volume_sample_f(v, uvw[i], wp.Volume.LINEAR)

    @wp.kernel
    def sample_grad(v: wp.uint64, uvw: wp.array(dtype=wp.vec3), out: wp.array(dtype=float),
                    grads: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        g = wp.vec3()
        out[i] = wp.volume_sample_grad_f(v, uvw[i], wp.Volume.LINEAR, g)
        grads[i] = g

    return count, sample, sample_grad


def best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def measure(impl, n_points, n_samples, repeat):
    wp = importlib.import_module(impl)
    if impl == "warp":
        wp.config.quiet = True
        wp.init()
    count, sample, sample_grad = kernels(wp)
    rng = np.random.default_rng(0)
    pts = wp.array(rng.random((n_points, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
    grid = wp.HashGrid(128, 128, 128, device="cpu")
    out_i = wp.zeros(n_points, dtype=int, device="cpu")
    vol = wp.Volume.load_from_nvdb(open(TORUS, "rb"), device="cpu")
    lo, hi = np.float32([-11, -6, -11]), np.float32([11, 6, 11])  # the torus's index box
    uvw = wp.array(rng.uniform(lo, hi, (n_samples, 3)).astype(np.float32), dtype=wp.vec3,
                   device="cpu")
    out_f = wp.zeros(n_samples, dtype=float, device="cpu")
    grads = wp.zeros(n_samples, dtype=wp.vec3, device="cpu")

    def build():
        grid.build(pts, RADIUS)

    def neighbours():
        wp.launch(count, n_points, inputs=[grid.id, pts, RADIUS, out_i], device="cpu")
        wp.synchronize()

    def samples():
        wp.launch(sample, n_samples, inputs=[vol.id, uvw, out_f], device="cpu")
        wp.synchronize()

    def samples_grad():
        wp.launch(sample_grad, n_samples, inputs=[vol.id, uvw, out_f, grads], device="cpu")
        wp.synchronize()

    res = {"hash-grid build": best(build, repeat), "neighbour count": best(neighbours, repeat)}
    res["check: neighbours"] = int(out_i.numpy().sum())
    res["volume samples"] = best(samples, repeat)
    res["check: sample sum"] = float(out_f.numpy().astype(np.float64).sum())
    res["samples + gradient"] = best(samples_grad, repeat)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", default="weft", choices=("weft", "warp"))
    ap.add_argument("--warp-python")
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="(accepted for run_all.py)")
    a = ap.parse_args()
    mine = measure(a.impl, a.points, a.samples, a.repeat)
    if a.json:
        print(json.dumps(mine))
        return
    theirs = {}
    if not a.warp_python and importlib.util.find_spec("warp") is not None:
        theirs = measure("warp", a.points, a.samples, a.repeat)  # Warp in this Python
    elif a.warp_python:
        r = subprocess.run([a.warp_python, __file__, "--impl", "warp", "--json", "--points",
                            str(a.points), "--samples", str(a.samples), "--repeat",
                            str(a.repeat)], capture_output=True, text=True)
        theirs = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
        if not theirs:
            print("Warp run failed:", r.stderr[-500:])
    print(f"{'workload':22s} {'weft (ms)':>10s} {'Warp (ms)':>10s} {'weft/Warp':>10s}")
    for k, v in mine.items():
        w = theirs.get(k)
        if k.startswith("check"):
            same = "" if w is None else ("equal" if abs(v - w) <= 1e-6 * max(1, abs(w))
                                         else f"DIFFERENT (Warp {w})")
            print(f"{k:22s} {v:>10} {'':>10s} {same:>10s}")
            continue
        ratio = f"{v / w:10.2f}" if w else f"{'-':>10s}"
        print(f"{k:22s} {v:10.2f} {w if w is not None else float('nan'):10.2f} {ratio}")


if __name__ == "__main__":
    main()
