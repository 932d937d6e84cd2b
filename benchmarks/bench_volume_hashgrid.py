"""Hash-grid build and neighbour counting on 200k points, and 1M volume samples: weft's geometry
cores (compiled with Numba, ``prange`` over the queries) against NVIDIA Warp's CPU kernels.

    python benchmarks/bench_volume_hashgrid.py [--points 200000] [--samples 1000000]
                                               [--repeat 3] [--rounds 5] [--markdown]

Run it with a Python that has Warp 1.19 (and Numba) to get the Warp column, e.g.
``PYTHONPATH=. /work/venv-warp/bin/python benchmarks/bench_volume_hashgrid.py``; without Warp
only weft's times print. Each time is the best of ``--rounds`` rounds of ``--repeat`` runs
after a warm-up (so compilation is excluded; the best, not the median, because the benchmark
machine is shared and other jobs only ever add time; rounds interleave the workloads and
columns, so a burst of load spoils a round rather than a column). weft runs on all of Numba's
threads (and, in the "1 thread" column, on one); Warp's CPU kernels run on one thread.

Workloads:
- hash-grid build: N points uniform in [0, 1)^3, a 128^3 grid, cell width 0.02;
- neighbour count: per point, the number of points within 0.02 (a hash-grid query loop with a
  distance test), the sum checked equal between weft and Warp;
- volume samples: LINEAR samples (and LINEAR samples with gradient) at M random index-space
  points of a dense 128^3 float volume (``load_from_numpy``, all voxels in leaves), and of the
  sparse torus level set (``tests/data/nvdb/torus.nvdb``, mostly tiles and background), the
  results checked bit for bit equal between weft and Warp.
"""
import argparse
import os
import time

import numba
import numpy as np
from numba import prange

from weft.native.geometry import hashgrid as H
from weft.native.geometry import volume_query as Q
from weft.native.geometry.hashgrid import HashGrid
from weft.native.geometry.volume import Volume

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

HERE = os.path.dirname(os.path.abspath(__file__))
TORUS = os.path.join(os.path.dirname(HERE), "tests", "data", "nvdb", "torus.nvdb")
DIMS = (128, 128, 128)
RADIUS = 0.02

VQ = Q.compile_cpu()
HQ = H.compile_cpu()
_sample_f = VQ["volume_sample_f"]
_sample_grad_f = VQ["volume_sample_grad_f"]
_query = HQ["hash_grid_query"]
_next = HQ["hash_grid_query_next"]


@numba.njit(parallel=True, nogil=True, error_model="numpy")
def weft_sample(tree, vals, gt, pts, out):
    for i in prange(pts.shape[0]):
        out[i] = _sample_f(tree, vals, gt, pts[i, 0], pts[i, 1], pts[i, 2], 1)


@numba.njit(parallel=True, nogil=True, error_model="numpy")
def weft_sample_grad(tree, vals, gt, pts, out, grad):
    for i in prange(pts.shape[0]):
        v, g = _sample_grad_f(tree, vals, gt, pts[i, 0], pts[i, 1], pts[i, 2], 1)
        out[i] = v
        grad[i, 0] = g[0]
        grad[i, 1] = g[1]
        grad[i, 2] = g[2]


@numba.njit(parallel=True, nogil=True, error_model="numpy")
def weft_count(grid, keys, inv, pts, r, out):
    r2 = r * r
    for i in prange(pts.shape[0]):
        px = pts[i, 0]
        py = pts[i, 1]
        pz = pts[i, 2]
        state = _query(grid, keys, inv, px, py, pz, r, 0, 0)
        n = 0
        while True:
            ok, j, state = _next(grid, keys, state)
            if not ok:
                break
            ax = pts[j, 0] - px
            ay = pts[j, 1] - py
            az = pts[j, 2] - pz
            if ax * ax + ay * ay + az * az <= r2:
                n += 1
        out[i] = n


def best_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def with_threads(n, fn):
    """``fn`` run with Numba limited to ``n`` threads."""
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
    def count(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float, out: wp.array(dtype=int)):
        i = wp.tid()
        p = pts[i]
        n = int(0)
        for j in wp.hash_grid_query(grid, p, r):
            if wp.length_sq(pts[j] - p) <= r * r:
                n += 1
        out[i] = n

    @wp.kernel
    def sample(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.volume_sample_f(vid, pts[i], wp.Volume.LINEAR)

    @wp.kernel
    def sample_grad(vid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float),
                    grad: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        g = wp.vec3()
        out[i] = wp.volume_sample_grad_f(vid, pts[i], wp.Volume.LINEAR, g)
        grad[i] = g
    return count, sample, sample_grad


def cases(n_points, n_samples):
    """(label, weft function, Warp function or None, check) per workload; ``check`` compares
    the last results of both (bit for bit for samples)."""
    out = []
    wp = warp_module()
    wk = warp_kernels(wp) if wp else None
    rng = np.random.default_rng(0)

    pts = rng.uniform(0.0, 1.0, (n_points, 3)).astype(np.float32)
    grid = HashGrid(*DIMS)
    grid.build(pts, RADIUS)
    counts = np.zeros(n_points, np.int64)
    args = (*grid.arrays(), grid.cell_width_inv, pts, np.float32(RADIUS), counts)
    weft_count(*args)
    w_build = w_count = check = None
    if wp:
        wpts = wp.array(pts, dtype=wp.vec3, device="cpu")
        wgrid = wp.HashGrid(*DIMS, device="cpu")
        wout = wp.zeros(n_points, dtype=int, device="cpu")

        def w_build():
            wgrid.build(wpts, RADIUS)
            wp.synchronize_device("cpu")

        def w_count():
            wp.launch(wk[0], n_points, inputs=[wgrid.id, wpts, RADIUS, wout], device="cpu")
            wp.synchronize_device("cpu")

        def check():
            assert int(wout.numpy().sum()) == int(counts.sum()), "neighbour counts differ"
    out.append((f"hash-grid build, {n_points} points", lambda: grid.build(pts, RADIUS),
                w_build, None))
    out.append((f"neighbour count, {n_points} points (mean {counts.mean():.1f})",
                lambda: weft_count(*args), w_count, check))

    x = np.linspace(0, 4 * np.pi, 128, dtype=np.float32)
    dense = (np.sin(x)[:, None, None] * np.cos(x)[None, :, None]
             + np.sin(0.5 * x)[None, None, :]).astype(np.float32)
    vols = [("dense 128^3", Volume.load_from_numpy(dense, voxel_size=0.1, bg_value=0.0),
             rng.uniform(-1.0, 128.0, (n_samples, 3)).astype(np.float32),
             lambda w: w.Volume.load_from_numpy(dense, voxel_size=0.1, bg_value=0.0,
                                                device="cpu"))]
    if os.path.exists(TORUS):
        vols.append(("torus.nvdb", Volume.load_from_nvdb(TORUS),
                     rng.uniform(-12.0, 12.0, (n_samples, 3)).astype(np.float32),
                     lambda w: w.Volume.load_from_nvdb(open(TORUS, "rb"), device="cpu")))
    for label, vol, spts, wmake in vols:
        a = (*vol.arrays(), vol.gtype)
        res = np.zeros(n_samples, np.float32)
        grad = np.zeros((n_samples, 3), np.float32)
        w_s = w_g = c_s = c_g = None
        if wp:
            wvol = wmake(wp)
            wpts2 = wp.array(spts, dtype=wp.vec3, device="cpu")
            wres = wp.zeros(n_samples, dtype=float, device="cpu")
            wgrad = wp.zeros(n_samples, dtype=wp.vec3, device="cpu")

            def w_s(wvol=wvol, wpts2=wpts2, wres=wres):
                wp.launch(wk[1], n_samples, inputs=[wvol.id, wpts2, wres], device="cpu")
                wp.synchronize_device("cpu")

            def w_g(wvol=wvol, wpts2=wpts2, wres=wres, wgrad=wgrad):
                wp.launch(wk[2], n_samples, inputs=[wvol.id, wpts2, wres, wgrad], device="cpu")
                wp.synchronize_device("cpu")

            def c_s(a=a, spts=spts, res=res, wres=wres):
                weft_sample(*a, spts, res)
                w_s()
                assert np.array_equal(res, wres.numpy()), "samples differ from Warp's"

            def c_g(a=a, spts=spts, res=res, grad=grad, wgrad=wgrad):
                weft_sample_grad(*a, spts, res, grad)
                w_g()
                assert np.array_equal(grad, wgrad.numpy()), "gradients differ from Warp's"
        out.append((f"{n_samples} LINEAR samples, {label}",
                    lambda a=a, spts=spts, res=res: weft_sample(*a, spts, res), w_s, c_s))
        out.append((f"{n_samples} LINEAR samples + gradient, {label}",
                    lambda a=a, spts=spts, res=res, grad=grad: weft_sample_grad(*a, spts, res,
                                                                                grad),
                    w_g, c_g))
    return out


def run(n_points, n_samples, repeat, rounds):
    """Every workload's best time over ``rounds`` rounds of ``repeat`` runs each, the rounds
    interleaving the workloads and the three columns (so that a burst of load from other jobs
    spoils one round, not one column)."""
    work = cases(n_points, n_samples)
    best = {}
    threads = numba.get_num_threads()
    for _ in range(rounds):
        for label, weft_fn, warp_fn, _check in work:
            for col, fn in (("all", weft_fn), ("one", with_threads(1, weft_fn)),
                            ("warp", warp_fn)):
                if fn is None:
                    continue
                t = best_time(fn, repeat)
                best[label, col] = min(best.get((label, col), t), t)
    for _label, _w, _wp, check in work:
        if check is not None:
            check()
    assert numba.get_num_threads() == threads
    return [(label, (best[label, "all"], best[label, "one"]), best.get((label, "warp")))
            for label, *_ in work]


def table(rows, markdown):
    head = ("workload", f"weft ({numba.get_num_threads()} threads) ms", "weft (1 thread) ms",
            "Warp CPU ms", "weft / Warp")
    lines = []
    for label, (full, one), warp in rows:
        ratio = f"{full / warp:.2f}" if warp else "-"
        lines.append((label, f"{full * 1e3:.2f}", f"{one * 1e3:.2f}",
                      f"{warp * 1e3:.2f}" if warp else "-", ratio))
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
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(table(run(args.points, args.samples, args.repeat, args.rounds), args.markdown))


if __name__ == "__main__":
    main()
