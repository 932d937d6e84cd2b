"""Tile kernels: weft against Warp's CPU backend and NumPy, results checked equal first.

    python benchmarks/bench_tiles.py [--repeat 20] [--no-warp]

Cases (each a tiled launch, one block per tile problem, the blocks over every core):

- batched ``tile_matmul`` of square tiles at 16, 64 and 128 (NumPy: batched ``a @ b``);
- Cholesky factor and solve of 32 x 32 SPD tiles (NumPy: ``linalg.cholesky`` + ``solve``);
- ``tile_reduce`` (``tile_sum``) of 256-element tiles (NumPy: ``sum(axis=1)``);
- a tile MLP layer, forward and backward (``tanh(W x)``; Warp's ``example_tile_mlp`` pattern;
  NumPy: the same forward and hand-written backward), as written and with Warp's ``fast_math``
  module option (weft and Warp alike).

Times are the best of ``--repeat`` runs after a warm-up launch (compiles excluded) and after
weft's compile helpers have finished (one left running by the previous run of this script made a
case of the next run 12x slower); ratios are weft's time over the other's (below 1: weft is
faster).

Why 20 runs: on this 2-core virtual machine the first 2-4 threaded launches after the process
idles (or after NumPy's OpenBLAS threads have run) take 4-8 ms each instead of 0.2-0.4 ms, the
woken OpenMP worker waiting for a core; a plain ``numba.prange`` loop does the same
(docs/performance.md, stop 69). Warp's CPU launches are serial and do not wake a worker. With 5
runs the best could be one of those; with 20 it is the steady state.
"""
import argparse
import os

import numpy as np

import machine  # the benchmarks folder (run as a script)
from bench_startup import _wait_for_helpers

os.environ.setdefault("WEFT_TIERED_COMPILE", "0")


def kernels(wp):
    """The benchmark kernels, written once, declared for the module ``wp`` (weft or Warp)."""
    out = {}

    def make_matmul(n):
        # a scope of its own per size: a kernel reads its closure's N when it is built (at
        # its first launch, in weft as in Warp), so kernels defined in one loop over the sizes
        # would all multiply 128x128 tiles (the 16 and 64 rows' figures before this fix)
        N = wp.constant(n)

        @wp.kernel(module="unique")
        def matmul(A: wp.array3d(dtype=float), B: wp.array3d(dtype=float),
                   C: wp.array3d(dtype=float)):
            i, _lane = wp.tid()
            a = wp.tile_load(A[i], shape=(N, N))
            b = wp.tile_load(B[i], shape=(N, N))
            c = wp.tile_zeros(shape=(N, N), dtype=float)
            wp.tile_matmul(a, b, c)
            wp.tile_store(C[i], c)
        return matmul

    for n in (16, 64, 128):
        out[f"matmul{n}"] = make_matmul(n)

    S = wp.constant(32)

    @wp.kernel(module="unique")
    def chol(A: wp.array3d(dtype=float), y: wp.array2d(dtype=float), x: wp.array2d(dtype=float)):
        i, _lane = wp.tid()
        a = wp.tile_load(A[i], shape=(S, S))
        L = wp.tile_cholesky(a)
        b = wp.tile_load(y[i], shape=S)
        wp.tile_store(x[i], wp.tile_cholesky_solve(L, b))
    out["cholesky"] = chol

    R = wp.constant(256)

    @wp.kernel(module="unique")
    def reduce(v: wp.array2d(dtype=float), s: wp.array(dtype=float)):
        i, _lane = wp.tid()
        t = wp.tile_load(v[i], shape=R)
        wp.tile_store(s, wp.tile_sum(t), offset=i)
    out["reduce"] = reduce

    H = wp.constant(32)
    BATCH = wp.constant(64)

    def make_mlp(options):
        @wp.kernel(module="unique", module_options=options)
        def mlp(W: wp.array2d(dtype=float), X: wp.array2d(dtype=float),
                Y: wp.array2d(dtype=float)):
            i, _lane = wp.tid()
            w = wp.tile_load(W, shape=(H, H))
            x = wp.tile_load(X, shape=(H, BATCH), offset=(0, i * BATCH))
            y = wp.tile_map(wp.tanh, wp.tile_matmul(w, x))
            wp.tile_store(Y, y, offset=(0, i * BATCH))
        return mlp
    out["mlp"] = make_mlp({})
    # Warp's fast_math module option: in weft, float32 tanh becomes weft's vectorisable
    # arithmetic (native/fastmath.py) instead of libm's tanhf, which most of the row above is
    out["mlp fast_math"] = make_mlp({"fast_math": True})
    return out


def cases(wp, ks, rng):
    """``{case: (run, result, numpy_run, numpy_result)}`` for module ``wp``."""
    out = {}
    for n, batch in ((16, 2048), (64, 64), (128, 16)):
        a = rng.random((batch, n, n), dtype=np.float32)
        b = rng.random((batch, n, n), dtype=np.float32)
        A, B = wp.array(a), wp.array(b)
        C = wp.zeros((batch, n, n), dtype=float)
        k = ks[f"matmul{n}"]
        out[f"tile_matmul {n}x{n} x{batch}"] = (
            lambda k=k, A=A, B=B, C=C, batch=batch: (
                wp.launch_tiled(k, dim=[batch], inputs=[A, B, C], block_dim=64),
                wp.synchronize()),
            lambda C=C: C.numpy(), lambda a=a, b=b: a @ b, None)
    batch, s = 256, 32
    m = rng.random((batch, s, s), dtype=np.float32)
    spd = (m @ m.transpose(0, 2, 1) + s * np.eye(s, dtype=np.float32)).astype(np.float32)
    y = rng.random((batch, s), dtype=np.float32)
    A, Yv, X = wp.array(spd), wp.array(y), wp.zeros((batch, s), dtype=float)
    out[f"cholesky+solve {s}x{s} x{batch}"] = (
        lambda batch=batch: (wp.launch_tiled(ks["cholesky"], dim=[batch], inputs=[A, Yv, X],
                                             block_dim=64), wp.synchronize()),
        lambda: X.numpy(),
        lambda: np.linalg.solve(spd, y[..., None])[..., 0], None)
    batch = 4096
    v = rng.random((batch, 256), dtype=np.float32)
    V, Sm = wp.array(v), wp.zeros(batch, dtype=float)
    out[f"tile_sum 256 x{batch}"] = (  # batch bound now: the name is reused below
        lambda batch=batch: (wp.launch_tiled(ks["reduce"], dim=[batch], inputs=[V, Sm],
                                             block_dim=64), wp.synchronize()),
        lambda: Sm.numpy(), lambda: v.sum(axis=1), None)
    h, nb, batch = 32, 64, 256
    w = (rng.random((h, h), dtype=np.float32) - 0.5) * 0.3
    x = rng.random((h, nb * batch), dtype=np.float32)
    W, Xa = wp.array(w, requires_grad=True), wp.array(x, requires_grad=True)
    Ya = wp.zeros((h, nb * batch), dtype=float, requires_grad=True)
    g = rng.random((h, nb * batch), dtype=np.float32)
    # the seed in the module's own array, made once, as NumPy's g is (a new 2 MB array each run
    # cost weft 3 ms of fresh pages, the C library's mmap and munmap: docs/performance.md, stop
    # 68); copied in each run
    G = wp.array(g)

    def mlp_run(kernel):
        W.grad.zero_()
        Xa.grad.zero_()
        G.assign(g)
        with wp.Tape() as tape:
            wp.launch_tiled(kernel, dim=[batch], inputs=[W, Xa, Ya], block_dim=64)
        tape.backward(grads={Ya: G})
        wp.synchronize()

    def mlp_numpy():
        yy = np.tanh(w @ x)
        d = g * (1.0 - yy * yy)
        return yy, d @ x.T, w.T @ d
    for key, label in (("mlp", ""), ("mlp fast_math", ", fast_math")):
        out[f"tile MLP fwd+bwd {h}x{h}, {nb * batch} samples{label}"] = (
            lambda k=ks[key]: mlp_run(k), lambda: (Ya.numpy(), W.grad.numpy(), Xa.grad.numpy()),
            mlp_numpy, None)
    return out


def close(a, b):
    if isinstance(a, tuple):
        return all(close(x, y) for x, y in zip(a, b))
    return np.allclose(a, b, rtol=2e-3, atol=2e-3)


def measure(wp, repeat):
    rng = np.random.default_rng(0)
    ks = kernels(wp)
    rows = {}
    settle = None
    if wp.__name__ == "weft":
        from weft.runtime import background
        settle = background.finish
    for name, (run, result, np_run, _) in cases(wp, ks, rng).items():
        run()
        if settle is not None:  # weft's compile helper (a tape's launch asks it for the
            settle()            # adjoint) has answered every request
        ok = close(result(), np_run())
        rows[name] = (machine.best(run, repeat), machine.best(np_run, repeat), ok)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-warp", action="store_true")
    args = ap.parse_args()
    _wait_for_helpers()  # a helper left by an earlier run finishes its queue after that exits
    import weft
    mine = measure(weft, args.repeat)
    theirs = {}
    if not args.no_warp:
        try:
            import warp
            warp.config.quiet = True
            warp.init()
            theirs = measure(warp, args.repeat)
        except ImportError:
            pass
    print(f"{'case':56s} {'weft ms':>9s} {'Warp ms':>9s} {'NumPy ms':>9s} {'weft/Warp':>9s} "
          f"{'weft/NumPy':>10s}  equal to NumPy (weft, Warp)")
    for name, (t, tn, ok) in mine.items():
        tw, _, okw = theirs.get(name, (float("nan"), None, None))
        print(f"{name:56s} {t * 1e3:9.2f} {tw * 1e3:9.2f} {tn * 1e3:9.2f} {t / tw:9.2f} "
              f"{t / tn:10.2f}  {'yes' if ok else 'NO'}, "
              f"{'-' if okw is None else 'yes' if okw else 'NO'}")


if __name__ == "__main__":
    main()
