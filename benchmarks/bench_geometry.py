"""Volumes, hash grids and meshes through kernels: the same Warp kernel source launched by weft
and by NVIDIA Warp (CPU), so launch, id lookup and generated code are all in the timing.

    python benchmarks/bench_geometry.py [--warp-python PY] [--points 200000]
                                        [--samples 1000000] [--grid 360] [--rays 1000000]
                                        [--closest 200000] [--repeat 5]

Workloads: hash-grid build of N uniform points in [0, 1)^3 (128^3 cells, width 0.02);
neighbour count within 0.02 per point (``for j in wp.hash_grid_query``); M LINEAR samples of
the torus level set (``tests/data/nvdb/torus.nvdb``) at random index-space points, and the same
with ``volume_sample_grad_f``. Meshes (``benchmarks/mesh_scene.py``, as ``bench_mesh.py``: a
``--grid`` g x g noisy torus, 2 g^2 triangles, 259,200 by default): ``wp.Mesh`` build (the
SAH BVH over the triangles, 4 per leaf), ``wp.Bvh`` build over the triangles' boxes (1 per
leaf), ``mesh.refit()``, ``--rays`` closest hits (``mesh_query_ray``: t and face) and
``--closest`` closest points (``mesh_query_point_no_sign`` and the distance to
``mesh_eval_position``): hit counts and faces must be identical, t and distances within 1e-5
(checked element by element when both run in this process). Times are the best of
``--repeat`` after a warm-up (compilation excluded). weft runs on every core; Warp's CPU
kernels on one. With ``--warp-python`` the Warp column comes from running this file under that
Python with ``--impl warp``; results (counts, sample sums) are printed so both sides can be
checked equal.
"""
import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import time

import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

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

    @wp.kernel
    def rays(mid: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
             t_out: wp.array(dtype=float), face_out: wp.array(dtype=int)):
        i = wp.tid()
        q = wp.mesh_query_ray(mid, o[i], d[i], 1.0e6)
        if q.result:
            t_out[i] = q.t
            face_out[i] = q.face
        else:
            t_out[i] = -1.0
            face_out[i] = -1

    @wp.kernel
    def closest(mid: wp.uint64, p: wp.array(dtype=wp.vec3), d_out: wp.array(dtype=float),
                face_out: wp.array(dtype=int)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mid, p[i], 1.0e6)
        if q.result:
            d_out[i] = wp.length(wp.mesh_eval_position(mid, q.face, q.u, q.v) - p[i])
            face_out[i] = q.face
        else:
            d_out[i] = -1.0
            face_out[i] = -1

    return count, sample, sample_grad, rays, closest


def best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def measure(impl, n_points, n_samples, repeat, mesh_args=None):
    wp = importlib.import_module(impl)
    if impl == "warp":
        wp.config.quiet = True
        wp.init()
    count, sample, sample_grad, rays, closest = kernels(wp)
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
    if mesh_args is not None:
        res.update(measure_mesh(wp, rays, closest, *mesh_args, repeat))
    return res


def measure_mesh(wp, rays, closest, grid, n_rays, n_closest, repeat):
    from mesh_scene import queries, torus, triangle_boxes
    pts, idx = torus(grid)
    o, d, q = queries(n_rays, n_closest)
    lo, up = triangle_boxes(pts, idx)
    points = wp.array(pts, dtype=wp.vec3, device="cpu")
    indices = wp.array(idx, dtype=wp.int32, device="cpu")
    lowers = wp.array(lo, dtype=wp.vec3, device="cpu")
    uppers = wp.array(up, dtype=wp.vec3, device="cpu")
    mesh = wp.Mesh(points=points, indices=indices)
    wo, wd, wq = (wp.array(x, dtype=wp.vec3, device="cpu") for x in (o, d, q))
    t = wp.zeros(n_rays, dtype=float, device="cpu")
    f = wp.zeros(n_rays, dtype=int, device="cpu")
    dist = wp.zeros(n_closest, dtype=float, device="cpu")
    pf = wp.zeros(n_closest, dtype=int, device="cpu")

    def cast():
        wp.launch(rays, n_rays, inputs=[mesh.id, wo, wd, t, f], device="cpu")
        wp.synchronize()

    def nearest():
        wp.launch(closest, n_closest, inputs=[mesh.id, wq, dist, pf], device="cpu")
        wp.synchronize()

    res = {f"mesh build ({len(idx) // 3} tris)": best(
        lambda: wp.Mesh(points=points, indices=indices), repeat),
        "BVH build (tri boxes)": best(lambda: wp.Bvh(lowers, uppers), repeat),
        "mesh refit": best(mesh.refit, repeat),
        f"{n_rays} rays": best(cast, repeat)}
    faces = f.numpy()
    res["check: ray hits"] = int((faces >= 0).sum())
    res[f"{n_closest} closest points"] = best(nearest, repeat)
    res["check: closest faces"] = int(pf.numpy().astype(np.int64).sum())
    res["_arrays"] = (t.numpy().copy(), faces.copy(), dist.numpy().copy(), pf.numpy().copy())
    return res


def compare_arrays(mine, theirs):
    """Element by element: identical hit counts and faces, t and distances within 1e-5."""
    t, f, dist, pf = mine
    wt, wf, wdist, wpf = theirs
    ok = (f >= 0).sum() == (wf >= 0).sum() and np.array_equal(f, wf) and \
        np.array_equal(pf, wpf)
    dt = float(np.abs(t - wt).max()) if len(t) else 0.0
    dd = float(np.abs(dist - wdist).max()) if len(dist) else 0.0
    ok = ok and dt <= 1e-5 and dd <= 1e-5
    return ok, (f"{'identical' if ok else 'DIFFERENT'}: {(f >= 0).sum()} ray hits (Warp "
                f"{(wf >= 0).sum()}), faces {'equal' if np.array_equal(f, wf) else 'differ'}, "
                f"max |dt| {dt:.1e}; closest faces "
                f"{'equal' if np.array_equal(pf, wpf) else 'differ'}, max |dd| {dd:.1e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", default="weft", choices=("weft", "warp"))
    ap.add_argument("--warp-python")
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--grid", type=int, default=360, help="torus grid (0: no mesh rows)")
    ap.add_argument("--rays", type=int, default=1_000_000)
    ap.add_argument("--closest", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="(accepted for run_all.py)")
    a = ap.parse_args()
    mesh_args = (a.grid, a.rays, a.closest) if a.grid > 0 else None
    mine = measure(a.impl, a.points, a.samples, a.repeat, mesh_args)
    arrays = mine.pop("_arrays", None)
    if a.json:
        print(json.dumps(mine))
        return
    theirs = {}
    if not a.warp_python and importlib.util.find_spec("warp") is not None:
        theirs = measure("warp", a.points, a.samples, a.repeat, mesh_args)  # in this Python
    elif a.warp_python:
        r = subprocess.run([a.warp_python, __file__, "--impl", "warp", "--json", "--points",
                            str(a.points), "--samples", str(a.samples), "--repeat",
                            str(a.repeat), "--grid", str(a.grid), "--rays", str(a.rays),
                            "--closest", str(a.closest)], capture_output=True, text=True)
        theirs = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
        if not theirs:
            print("Warp run failed:", r.stderr[-500:])
    their_arrays = theirs.pop("_arrays", None)
    print(f"{'workload':28s} {'weft (ms)':>10s} {'Warp (ms)':>10s} {'weft/Warp':>10s}")
    for k, v in mine.items():
        w = theirs.get(k)
        if k.startswith("check"):
            same = "" if w is None else ("equal" if abs(v - w) <= 1e-6 * max(1, abs(w))
                                         else f"DIFFERENT (Warp {w})")
            print(f"{k:28s} {v:>10} {'':>10s} {same:>10s}")
            continue
        ratio = f"{v / w:10.2f}" if w else f"{'-':>10s}"
        print(f"{k:28s} {v:10.2f} {w if w is not None else float('nan'):10.2f} {ratio}")
    if arrays is not None and their_arrays is not None:
        print("mesh results:", compare_arrays(arrays, their_arrays)[1])


if __name__ == "__main__":
    main()
