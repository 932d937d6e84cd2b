"""Meshes and BVHs: weft's geometry cores (compiled with Numba, ``prange`` over the queries)
against NVIDIA Warp's CPU kernels, on a noisy torus of ~260k triangles.

    python benchmarks/bench_mesh.py [--grid 360] [--rays 1000000] [--points 200000]
                                    [--repeat 3] [--rounds 5] [--markdown]

Run it with a Python that has Warp 1.19 (and Numba) for the Warp column, e.g.
``PYTHONPATH=. /work/venv-warp/bin/python benchmarks/bench_mesh.py``; without Warp only weft's
times print. Each time is the best of ``--rounds`` rounds of ``--repeat`` runs after a warm-up
(compilation excluded; the best, because the machine is shared and other jobs only add time;
rounds interleave workloads and columns). weft runs on all of Numba's threads (and, in the
"1 thread" column, on one); Warp's CPU kernels run on one thread.

Workloads (``--grid`` g: a g x g torus, 2 g^2 triangles, radii 1 and 0.35, 2% radial noise):
- mesh build (triangle boxes, SAH tree with 4 triangles per leaf, weft's leaf-ordered
  triangle rows) and refit (same points, Warp's ``Mesh.refit``);
- BVH build over the triangles' boxes (``wp.Bvh``, one item per leaf);
- closest hits of random rays (origins in [-2, 2]^3, aimed at the torus' region):
  ``mesh_query_ray`` t and face; hit counts and faces must be identical, t within 1e-5;
- closest points (``mesh_query_point_no_sign``) of random points in [-1.6, 1.6]^3, with the
  distance ``|mesh_eval_position - p|``: faces identical, distances within 1e-5.
"""
import argparse

import numba
import numpy as np
from numba import prange

from mesh_scene import queries, torus
import machine  # noqa: E402
from weft.native.geometry import mesh_query as MQ
from weft.native.geometry.mesh import Bvh, Mesh

NS = MQ.compile_cpu()
_ray = NS["mesh_query_ray"]
_point = NS["mesh_query_point_no_sign"]
_eval = NS["mesh_eval_position"]
BIG = np.float32(1.0e6)


@numba.njit(parallel=True, nogil=True, error_model="numpy")
def weft_rays(bounds, links, prims, tris, o, d, t_out, face_out):
    for i in prange(o.shape[0]):
        r = _ray(bounds, links, prims, tris, o[i, 0], o[i, 1], o[i, 2], d[i, 0], d[i, 1],
                 d[i, 2], BIG)
        t_out[i] = r[1] if r[0] else np.float32(-1.0)
        face_out[i] = r[8] if r[0] else -1


@numba.njit(parallel=True, nogil=True, error_model="numpy")
def weft_points(bounds, links, prims, tris, points, indices, q, d_out, face_out):
    for i in prange(q.shape[0]):
        r = _point(bounds, links, prims, tris, q[i, 0], q[i, 1], q[i, 2], BIG)
        if r[0]:
            x, y, z = _eval(points, indices, r[1], r[2], r[3])
            dx = x - q[i, 0]
            dy = y - q[i, 1]
            dz = z - q[i, 2]
            d_out[i] = np.float32(np.sqrt(dx * dx + dy * dy + dz * dz))
            face_out[i] = r[1]
        else:
            d_out[i] = np.float32(-1.0)
            face_out[i] = -1


def with_threads(n, fn):
    def run():
        old = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            fn()
        finally:
            numba.set_num_threads(old)
    return run


def warp_module():
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()
    return wp


def warp_kernels(wp):
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
    def points(mid: wp.uint64, p: wp.array(dtype=wp.vec3), d_out: wp.array(dtype=float),
               face_out: wp.array(dtype=int)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mid, p[i], 1.0e6)
        if q.result:
            d_out[i] = wp.length(wp.mesh_eval_position(mid, q.face, q.u, q.v) - p[i])
            face_out[i] = q.face
        else:
            d_out[i] = -1.0
            face_out[i] = -1
    return rays, points


class Scene:
    """The weft and (when available) Warp objects of one run, and the result buffers."""

    def __init__(self, grid, n_rays, n_points):
        self.pts, self.idx = torus(grid)
        self.o, self.d, self.q = queries(n_rays, n_points)
        self.mesh = Mesh(self.pts, self.idx)
        self.t = np.zeros(n_rays, np.float32)
        self.f = np.zeros(n_rays, np.int32)
        self.dist = np.zeros(n_points, np.float32)
        self.pf = np.zeros(n_points, np.int32)
        self.wp = warp_module()
        if self.wp:
            wp = self.wp
            self.wk = warp_kernels(wp)
            self.wpts = wp.array(self.pts, dtype=wp.vec3, device="cpu")
            self.widx = wp.array(self.idx, dtype=wp.int32, device="cpu")
            self.wmesh = wp.Mesh(self.wpts, self.widx)
            self.wlo = wp.array(self.mesh.lowers, dtype=wp.vec3, device="cpu")
            self.wup = wp.array(self.mesh.uppers, dtype=wp.vec3, device="cpu")
            self.wo = wp.array(self.o, dtype=wp.vec3, device="cpu")
            self.wd = wp.array(self.d, dtype=wp.vec3, device="cpu")
            self.wq = wp.array(self.q, dtype=wp.vec3, device="cpu")
            self.wt = wp.zeros(n_rays, dtype=float, device="cpu")
            self.wf = wp.zeros(n_rays, dtype=int, device="cpu")
            self.wdist = wp.zeros(n_points, dtype=float, device="cpu")
            self.wpf = wp.zeros(n_points, dtype=int, device="cpu")

    def weft(self):
        m = self.mesh
        a = m.arrays()[:4]
        lo, up = m.lowers, m.uppers   # properties computed on access: not part of the timing
        return {
            "mesh build": lambda: Mesh(self.pts, self.idx),
            "mesh refit": m.refit,
            "BVH build (1 box per leaf)": lambda: Bvh(lo, up),
            "rays": lambda: weft_rays(*a, self.o, self.d, self.t, self.f),
            "closest points": lambda: weft_points(*a, self.pts, self.idx, self.q, self.dist,
                                                  self.pf),
        }

    def warp(self):
        if not self.wp:
            return {}
        wp = self.wp

        def launch(k, n, args):
            wp.launch(k, n, inputs=args, device="cpu")
            wp.synchronize_device("cpu")
        return {
            "mesh build": lambda: wp.Mesh(self.wpts, self.widx),
            "mesh refit": self.wmesh.refit,
            "BVH build (1 box per leaf)": lambda: wp.Bvh(self.wlo, self.wup),
            "rays": lambda: launch(self.wk[0], len(self.o),
                                   [self.wmesh.id, self.wo, self.wd, self.wt, self.wf]),
            "closest points": lambda: launch(self.wk[1], len(self.q),
                                             [self.wmesh.id, self.wq, self.wdist, self.wpf]),
        }

    def check(self):
        """Identical hit counts and faces, t and distances within 1e-5 (both ran last)."""
        if not self.wp:
            return "no Warp"
        wf, wt = self.wf.numpy(), self.wt.numpy()
        assert (self.f >= 0).sum() == (wf >= 0).sum(), "ray hit counts differ"
        assert np.array_equal(self.f, wf), "ray faces differ"
        assert np.abs(self.t - wt).max() <= 1e-5, "ray t differs"
        wpf, wdist = self.wpf.numpy(), self.wdist.numpy()
        assert np.array_equal(self.pf, wpf), "closest faces differ"
        assert np.abs(self.dist - wdist).max() <= 1e-5, "closest distances differ"
        return (f"{(wf >= 0).sum()} ray hits, identical faces, max |dt| "
                f"{np.abs(self.t - wt).max():.1e}; closest faces identical, max |dd| "
                f"{np.abs(self.dist - wdist).max():.1e}")


def run(grid, n_rays, n_points, repeat, rounds):
    sc = Scene(grid, n_rays, n_points)
    weft, warp = sc.weft(), sc.warp()
    best = {}
    for _ in range(rounds):
        for label, fn in weft.items():
            for col, f in (("all", fn), ("one", with_threads(1, fn)), ("warp", warp.get(label))):
                if f is None:
                    continue
                t = machine.best(f, repeat)
                best[label, col] = min(best.get((label, col), t), t)
    for k in ("rays", "closest points"):
        weft[k]()
        if k in warp:
            warp[k]()
    note = sc.check()
    rows = [(label, best[label, "all"], best[label, "one"], best.get((label, "warp")))
            for label in weft]
    return rows, note, sc.mesh.num_tris


def table(rows, markdown):
    head = ("workload", f"weft ({numba.get_num_threads()} threads) ms", "weft (1 thread) ms",
            "Warp CPU ms", "weft / Warp")
    lines = [(label, f"{a * 1e3:.2f}", f"{b * 1e3:.2f}", f"{w * 1e3:.2f}" if w else "-",
              f"{a / w:.2f}" if w else "-") for label, a, b, w in rows]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in lines]
    else:
        w = [max(len(r[c]) for r in [head] + lines) for c in range(len(head))]
        out = ["  ".join(h.ljust(w[c]) for c, h in enumerate(head))]
        out += ["  ".join(v.ljust(w[c]) for c, v in enumerate(r)) for r in lines]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=360)
    ap.add_argument("--rays", type=int, default=1_000_000)
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows, note, m = run(args.grid, args.rays, args.points, args.repeat, args.rounds)
    print(f"{m} triangles, {args.rays} rays, {args.points} closest points; {note}")
    print(table(rows, args.markdown))


if __name__ == "__main__":
    main()
