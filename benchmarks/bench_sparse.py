"""Sparse matrix products: weft.sparse against SciPy and Warp's CPU backend (warp.sparse),
results checked equal first.

    python benchmarks/bench_sparse.py [--n 100] [--mm-n 40] [--repeat 5] [--no-warp] [--no-cg]
                                      [--cg-warp]

The matrix is the 3D 7-point Poisson operator on an ``n^3`` grid (CSR, float32; default
``n = 100``: 1M unknowns, 6.9M nonzeros):

- ``bsr_mv``: ``y = A x`` (SciPy: ``A @ x``);
- ``bsr_mv`` (3x3 blocks): the same operator with ``mat33`` blocks (``kron(A, ones(3,3))``, as
  an elasticity-like system) on ``n/2`` (SciPy: a ``bsr_matrix`` product);
- ``bsr_mm``: ``C = A @ A`` on an ``mm-n^3`` grid (default 40: 64k unknowns), the product
  topology rebuilt on each call (SciPy: ``A @ A``);
- ``cg``: Jacobi-preconditioned conjugate gradients on the ``n^3`` problem, float64, relative
  tolerance 1e-6 (the solvers of ``bench_linear.py``; Warp's only with ``--cg-warp``: its CPU
  solver is slow at this size).

Times are the best of ``--repeat`` runs after a warm-up (compiles excluded); the ratio columns
are weft's time over the other's (below 1: weft is faster). The issue's targets: at most 0.5x
Warp's time and at most 1x SciPy's.
"""
import argparse
import os
import sys

import numpy as np

os.environ.setdefault("WEFT_TIERED_COMPILE", "0")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402


def poisson(n):
    """The 7-point Laplacian on an n^3 grid as CSR arrays (offsets, columns, values)."""
    import scipy.sparse as sp
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    eye = sp.identity(n, format="csr")
    A = (sp.kron(sp.kron(one, eye), eye) + sp.kron(sp.kron(eye, one), eye) +
         sp.kron(sp.kron(eye, eye), one)).tocsr().astype(np.float32)
    A.sort_indices()
    return A


def as_bsr(mod, S, block=None):
    """A BsrMatrix of ``mod`` (weft.sparse or warp.sparse) holding the scipy matrix ``S``."""
    wp = mod.wp
    if block is None:
        A = mod.bsr_zeros(S.shape[0], S.shape[1], wp.float32)
        A.offsets = wp.array(S.indptr.astype(np.int32), dtype=wp.int32)
        A.columns = wp.array(S.indices.astype(np.int32), dtype=wp.int32)
        A.values = wp.array(S.data, dtype=wp.float32)
    else:
        B = S.tobsr(blocksize=block)
        A = mod.bsr_zeros(B.shape[0] // block[0], B.shape[1] // block[1],
                          wp.types.matrix(shape=block, dtype=wp.float32))
        A.offsets = wp.array(B.indptr.astype(np.int32), dtype=wp.int32)
        A.columns = wp.array(B.indices.astype(np.int32), dtype=wp.int32)
        A.values = wp.array(B.data, dtype=A.values.dtype)
    A.nnz = int(A.offsets.numpy()[-1])
    return A


class Impl:
    def __init__(self, name, wp, sparse):
        self.name, self.wp, self.sparse = name, wp, sparse
        sparse.wp = wp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--mm-n", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-warp", action="store_true")
    ap.add_argument("--no-cg", action="store_true")
    ap.add_argument("--cg-warp", action="store_true")
    args = ap.parse_args()

    import weft
    import weft.sparse
    impls = [Impl("weft", weft, weft.sparse)]
    if not args.no_warp:
        try:
            import warp
            import warp.sparse
            warp.config.quiet = True
            warp.init()
            impls.append(Impl("warp", warp, warp.sparse))
        except ImportError:
            pass

    rows = []
    rng = np.random.default_rng(0)

    def case(label, S, block, make_x, run_scipy, run_impl, check):
        ref = run_scipy()
        times = {"scipy": machine.best(run_scipy, args.repeat)}
        for im in impls:
            with im.wp.ScopedDevice("cpu"):
                A = as_bsr(im.sparse, S, block)
                state = run_impl(im, A)
                out = state()
                check(out, ref, im.name)
                times[im.name] = machine.best(state, args.repeat)
        rows.append((label, times))

    # mv, CSR
    S = poisson(args.n)
    xv = rng.standard_normal(S.shape[1]).astype(np.float32)

    def mv_impl(im, A):
        x = im.wp.array(xv, dtype=im.wp.float32)
        y = im.wp.zeros(S.shape[0], dtype=im.wp.float32)
        return lambda: (im.sparse.bsr_mv(A, x, y), y)[1]

    def close(out, ref, name):
        got = out.numpy().reshape(ref.shape) if hasattr(out, "numpy") else out
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4, err_msg=name)

    case(f"bsr_mv CSR, {S.shape[0] / 1e6:.2g}M rows, {S.nnz / 1e6:.2g}M nnz", S, None, None,
         lambda: S @ xv, mv_impl, close)

    # mv, 3x3 blocks
    nb = max(2, args.n // 2)
    P = poisson(nb)
    import scipy.sparse as sp
    S3 = sp.kron(P, np.ones((3, 3), np.float32)).tobsr(blocksize=(3, 3))
    S3.data *= (1.0 + 0.1 * rng.standard_normal(S3.data.shape)).astype(np.float32)
    x3 = rng.standard_normal(S3.shape[1]).astype(np.float32)

    def mv3_impl(im, A):
        vec3 = im.wp.types.vector(length=3, dtype=im.wp.float32)
        x = im.wp.array(x3.reshape(-1, 3), dtype=vec3)
        y = im.wp.zeros(S3.shape[0] // 3, dtype=vec3)
        return lambda: (im.sparse.bsr_mv(A, x, y), y)[1]

    case(f"bsr_mv 3x3 blocks, {S3.shape[0] // 3 / 1e6:.2g}M block rows", S3, (3, 3), None,
         lambda: S3 @ x3, mv3_impl, close)

    # mm
    M = poisson(args.mm_n)

    def mm_impl(im, A):
        return lambda: im.sparse.bsr_mm(A, A)

    def mm_check(out, ref, name):
        n = out.nnz_sync()
        got = sp.csr_matrix((out.values.numpy()[:n], out.columns.numpy()[:n],
                             out.offsets.numpy()[:out.nrow + 1]), shape=ref.shape)
        assert abs(got - ref).max() < 1e-3, name

    case(f"bsr_mm A@A, {M.shape[0] / 1e3:.3g}k rows", M, None, None, lambda: M @ M, mm_impl,
         mm_check)

    # preconditioned cg on the n^3 problem (bench_linear.py's solvers: Jacobi, tol 1e-6,
    # float64; Warp's CPU cg takes about 1 s per iteration at 125k unknowns: run with
    # --cg-warp only)
    if not args.no_cg:
        import bench_linear
        _, solve_w = bench_linear.weft_solver(args.n, 1e-6, "float64", "bsr")
        solvers = {"weft": solve_w, "scipy": bench_linear.scipy_solver(args.n, 1e-6,
                                                                        "float64")[1]}
        if args.cg_warp and any(im.name == "warp" for im in impls):
            solvers["warp"] = bench_linear.warp_solver(args.n, 1e-6, "float64")[1]
        ref = solvers["scipy"]()[1]
        times = {}
        for name, solve in solvers.items():
            x = solve()[1]
            assert np.linalg.norm(x - ref) <= 1e-5 * np.linalg.norm(ref), name
            times[name] = machine.best(lambda solve=solve: solve(), max(1, args.repeat // 5))
        rows.append((f"cg + Jacobi, {S.shape[0] / 1e6:.2g}M unknowns, float64", times))

    names = [im.name for im in impls]
    head = f"{'case':44s} {'scipy ms':>9s}" + "".join(f" {n + ' ms':>9s}" for n in names)
    head += f" {'weft/scipy':>10s}" + (" weft/warp" if "warp" in names else "")
    print(head)
    for label, t in rows:
        line = f"{label:44s} {t['scipy'] * 1e3:9.2f}" + \
            "".join(f" {t.get(n, float('nan')) * 1e3:9.2f}" for n in names)
        line += f" {t['weft'] / t['scipy']:10.2f}"
        if "warp" in t:
            line += f" {t['weft'] / t['warp']:9.2f}"
        print(line)


if __name__ == "__main__":
    main()
