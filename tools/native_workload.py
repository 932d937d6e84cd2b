"""The second half of the workload whose compiles ``python -m weft.native build`` collects (the
first is the test suite): weft's own functions at sizes and thread counts the tests avoid
(the threaded BVH builds and refits above 4,096 items, run only with more than one thread),
then Warp's example programs when warp-lang is importable (``tools/warp_examples.py``'s
rewrite, 2 frames each), so that the programs people run first find everything shipped.

    python tools/native_workload.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import weft as wp  # noqa: E402


def grid_mesh(n, z=0.0):
    """An n x n grid of quads (2 n^2 triangles), float32 points, int32 indices."""
    x, y = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    pts = np.stack([x.ravel(), y.ravel(), z + 0.1 * np.sin(7 * x.ravel())], 1).astype(np.float32)
    i = np.arange(n * (n + 1)).reshape(n, n + 1)[:, :n].ravel()
    quads = np.stack([i, i + 1, i + n + 2, i, i + n + 2, i + n + 1], 1)
    return pts, quads.ravel().astype(np.int32)


@wp.kernel
def queries(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    q = wp.mesh_query_point(mesh, p, 10.0)
    s = float(0.0)
    if q.result:
        s += q.sign * wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p)
    q2 = wp.mesh_query_point_no_sign(mesh, p, 10.0)
    if q2.result:
        s += q2.u
    q3 = wp.mesh_query_point_sign_normal(mesh, p, 10.0)
    if q3.result:
        s += q3.sign
    q4 = wp.mesh_query_furthest_point_no_sign(mesh, p, 0.0)
    if q4.result:
        s += q4.v
    r = wp.mesh_query_ray(mesh, p, wp.vec3(0.0, 0.0, -1.0), 10.0)
    if r.result:
        s += r.t
    qa = wp.mesh_query_aabb(mesh, p - wp.vec3(0.1), p + wp.vec3(0.1))
    f = int(0)
    while wp.mesh_query_aabb_next(qa, f):
        s += 1.0
    out[i] = s


@wp.kernel
def winding(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_sign_winding_number(mesh, pts[i], 10.0)
    if q.result:
        out[i] = q.sign


@wp.kernel
def bvh_queries(bvh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_aabb(bvh, pts[i] - wp.vec3(0.05), pts[i] + wp.vec3(0.05))
    b = int(0)
    n = int(0)
    while wp.bvh_query_next(q, b):
        n += 1
    r = wp.bvh_query_ray(bvh, pts[i], wp.vec3(0.0, 0.0, 1.0))
    while wp.bvh_query_next(r, b):
        n += 1
    out[i] = n


@wp.kernel
def neighbours(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    n = int(0)
    for j in wp.hash_grid_query(grid, pts[i], 0.05):
        n += 1
    out[i] = n


def meshes():
    rng = np.random.default_rng(0)
    pts, idx = grid_mesh(120)                      # 28,800 triangles
    probe = wp.array(rng.uniform(-0.2, 1.2, (5000, 3)).astype(np.float32), dtype=wp.vec3)
    out = wp.zeros(5000, dtype=float)
    for ctor in ("sah", "median", "lbvh"):
        for idx_t in (np.int32, np.int64):
            m = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx.astype(idx_t),
                        dtype=int), velocities=wp.array(pts, dtype=wp.vec3),
                        bvh_constructor=ctor)
            m.refit()
            m.points = wp.array(pts * 1.01, dtype=wp.vec3)
            m.refit()
            wp.launch(queries, 5000, [m.id, probe, out])
    w = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=int),
                support_winding_number=True)
    w.refit()
    wp.launch(winding, 5000, [w.id, probe, out])
    lowers = rng.uniform(0, 1, (20000, 3)).astype(np.float32)
    for ctor in ("sah", "median", "lbvh"):
        b = wp.Bvh(wp.array(lowers, dtype=wp.vec3), wp.array(lowers + 0.01, dtype=wp.vec3),
                   constructor=ctor)
        b.refit()
        wp.launch(bvh_queries, 5000, [b.id, probe, wp.zeros(5000, dtype=int)])


def grids():
    rng = np.random.default_rng(1)
    for n in (1000, 100000):
        pts = wp.array(rng.uniform(0, 1, (n, 3)).astype(np.float32), dtype=wp.vec3)
        g = wp.HashGrid(128, 128, 128)
        g.build(pts, 0.05)
        g.reserve(2 * n)
        wp.launch(neighbours, n, [g.id, pts, wp.zeros(n, dtype=int)])


def examples():
    """Warp's examples (the list of ``benchmarks/bench_first_use.py``), weft's copies, 2 frames."""
    try:
        import warp
    except ImportError:
        print("native_workload: warp-lang is not importable; Warp's examples skipped")
        return
    from bench_first_use import EXAMPLES
    from warp_examples import DRIVER, weftify
    root = os.path.dirname(warp.__file__)
    env = dict(os.environ, WEFT_ASSET_DIR=os.path.join(root, "examples", "assets"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               WEFT_TIERED_COMPILE="0")
    with tempfile.TemporaryDirectory() as tmp:
        driver = os.path.join(tmp, "driver.py")
        with open(driver, "w") as f:
            f.write(DRIVER)
        for ex in EXAMPLES:
            copy = os.path.join(tmp, os.path.basename(ex) + ".py")
            with open(os.path.join(root, "examples", ex + ".py")) as f, open(copy, "w") as g:
                g.write(weftify(f.read()))
            r = subprocess.run([sys.executable, driver, copy, "2", "", "weft", "release"],
                               env=env, capture_output=True, text=True, timeout=3600)
            print(f"native_workload: {ex}: exit status {r.returncode}", flush=True)


if __name__ == "__main__":
    meshes()
    grids()
    examples()
