"""Diagonally preconditioned conjugate gradients on a 3D Poisson problem: weft vs SciPy vs Warp.

The 7-point Laplacian with Dirichlet boundaries on an ``n^3`` grid (default ``n = 100``: one
million unknowns), right-hand side ``1``, Jacobi preconditioner, relative tolerance ``--tol``:

- weft: ``weft.optim.linear.cg`` on a BSR matrix from ``weft.sparse`` when it provides
  ``bsr_from_triplets`` (``--operator bsr``), else (or with ``--operator stencil``) on a
  matrix-free stencil operator, one weft kernel;
- SciPy: ``scipy.sparse.linalg.cg`` on the same matrix in CSR, the preconditioner a
  ``LinearOperator``;
- Warp (when ``import warp`` works, and for at most ``--warp-max`` unknowns, default 200k: its CPU
  solver is slow): ``warp.optim.linear.cg`` on a ``warp.sparse`` BSR matrix on Warp's CPU
  device.

Every solution is first checked against weft's (relative L2 difference below ``10 * tol``) and
against the residual; then each solve is timed ``--repeat`` times (the best is reported, after
one untimed warm-up that compiles; a solver whose warm-up takes over a minute reports that
run instead, marked ``*``). The table prints iterations, seconds, milliseconds per
iteration and the true relative residual.

    python benchmarks/bench_linear.py [--n 100] [--tol 1e-6] [--dtype float64]
                                      [--operator auto|bsr|stencil] [--repeat 2] [--threads N]
                                      [--no-warp]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

SLOW = 60.0  # seconds: a solver whose first run takes longer is not repeated


def poisson_csr(n):
    """The 7-point Laplacian on an n^3 grid (Dirichlet), as SciPy CSR."""
    import scipy.sparse as sp
    one = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    eye = sp.identity(n)
    A = (sp.kron(sp.kron(one, eye), eye) + sp.kron(sp.kron(eye, one), eye) +
         sp.kron(sp.kron(eye, eye), one))
    return A.tocsr()


def weft_solver(n, tol, dtype_name, operator):
    import weft as wp
    from weft.optim.linear import LinearOperator, aslinearoperator, cg, preconditioner
    dtype = getattr(wp, dtype_name)
    N = n ** 3
    b = wp.array(np.ones(N), dtype=dtype)
    sparse = None
    if operator in ("auto", "bsr"):
        try:
            from weft.sparse import bsr_from_triplets  # noqa: F401
            import weft.sparse as sparse
        except ImportError:
            if operator == "bsr":
                raise
    if sparse is not None:
        A_csr = poisson_csr(n).tocoo()
        A = sparse.bsr_from_triplets(N, N, wp.array(A_csr.row.astype(np.int32), dtype=wp.int32),
                                     wp.array(A_csr.col.astype(np.int32), dtype=wp.int32),
                                     wp.array(A_csr.data, dtype=dtype))
        M = preconditioner(A, "diag")
        label = "weft cg (BSR)"
    else:
        @wp.kernel
        def stencil(x: wp.array(dtype=dtype), y: wp.array(dtype=dtype),
                    z: wp.array(dtype=dtype), alpha: dtype, beta: dtype, n: int):
            t = wp.tid()
            i = t // (n * n)
            j = (t // n) % n
            k = t % n
            s = dtype(6.0) * x[t]
            if i > 0:
                s -= x[t - n * n]
            if i + 1 < n:
                s += -x[t + n * n]
            if j > 0:
                s -= x[t - n]
            if j + 1 < n:
                s -= x[t + n]
            if k > 0:
                s -= x[t - 1]
            if k + 1 < n:
                s -= x[t + 1]
            z[t] = alpha * s + beta * y[t]

        def mv(x, y, z, alpha, beta):
            wp.launch(stencil, dim=N, inputs=[x, y, z, dtype(alpha), dtype(beta), n])
        A = LinearOperator((N, N), dtype, wp.get_device("cpu"), mv)
        M = aslinearoperator(wp.full(N, 1.0 / 6.0, dtype=dtype))
        label = "weft cg (stencil)"

    def solve():
        x = wp.zeros(N, dtype=dtype)
        niter, _, _ = cg(A, b, x, tol=tol, atol=0.0, M=M, maxiter=10 * n, check_every=1)
        return int(niter), x.numpy().astype(np.float64)
    return label, solve


def scipy_solver(n, tol, dtype_name):
    import scipy.sparse.linalg as spla
    A = poisson_csr(n).astype(dtype_name)
    N = n ** 3
    b = np.ones(N, dtype=dtype_name)
    Minv = spla.LinearOperator((N, N), matvec=lambda r: r / 6.0, dtype=dtype_name)

    def solve():
        count = [0]
        x, info = spla.cg(A, b, rtol=tol, atol=0.0, M=Minv, maxiter=10 * n,
                          callback=lambda xk: count.__setitem__(0, count[0] + 1))
        return count[0], x.astype(np.float64)
    return "SciPy cg (CSR)", solve


def warp_solver(n, tol, dtype_name):
    import warp as wp
    import warp.sparse as wsp
    from warp.optim.linear import cg, preconditioner
    wp.config.quiet = True
    wp.init()
    dtype = getattr(wp, dtype_name)
    N = n ** 3
    coo = poisson_csr(n).tocoo()
    with wp.ScopedDevice("cpu"):
        A = wsp.bsr_from_triplets(N, N, wp.array(coo.row.astype(np.int32), dtype=int),
                                  wp.array(coo.col.astype(np.int32), dtype=int),
                                  wp.array(coo.data, dtype=dtype))
        M = preconditioner(A, "diag")
        b = wp.array(np.ones(N), dtype=dtype)

    def solve():
        with wp.ScopedDevice("cpu"):
            x = wp.zeros(N, dtype=dtype)
            niter, _, _ = cg(A, b, x, tol=tol, atol=0.0, M=M, maxiter=10 * n, check_every=1,
                             use_cuda_graph=False)
            return int(niter), x.numpy().astype(np.float64)
    return "Warp cg (BSR, CPU)", solve


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100, help="grid size per axis (n^3 unknowns)")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--operator", default="auto", choices=["auto", "bsr", "stencil"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-warp", action="store_true")
    ap.add_argument("--warp-max", type=int, default=200_000,
                    help="run Warp only up to this many unknowns (its CPU cg took about 1 s "
                         "per iteration at 125k unknowns on 2 cores)")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for weft's CPU launches (numba.set_num_threads; 0: all)")
    a = ap.parse_args(argv)
    if a.threads:
        import numba
        numba.set_num_threads(a.threads)

    A_check = poisson_csr(a.n)
    b_check = np.ones(a.n ** 3)
    solvers = [weft_solver(a.n, a.tol, a.dtype, a.operator), scipy_solver(a.n, a.tol, a.dtype)]
    if a.n ** 3 > a.warp_max and not a.no_warp:
        print(f"(Warp skipped: {a.n ** 3:,} unknowns > --warp-max {a.warp_max:,}; Warp's CPU cg "
              f"took about 1 s per iteration at 125k unknowns)")
    elif not a.no_warp:
        try:
            solvers.append(warp_solver(a.n, a.tol, a.dtype))
        except ImportError as e:
            print(f"(Warp not importable: {e})")

    print(f"3D Poisson, {a.n}^3 = {a.n ** 3:,} unknowns, {a.dtype}, Jacobi-preconditioned CG, "
          f"tol {a.tol:g} (best of {a.repeat}; * = a single run, the warm-up took over "
          f"{SLOW:g} s)")
    print(f"{'solver':22s} {'iters':>6s} {'seconds':>9s} {'ms/iter':>8s} {'residual':>9s} "
          f"{'vs weft':>8s}", flush=True)
    rows, reference = [], None
    for label, solve in solvers:
        t0 = time.perf_counter()
        niter, x = solve()  # warm-up (compiles), and the result check
        warm = time.perf_counter() - t0
        res = np.linalg.norm(A_check @ x - b_check) / np.linalg.norm(b_check)
        if reference is None:
            reference = x
        diff = np.linalg.norm(x - reference) / np.linalg.norm(reference)
        limit = 10 * a.tol if a.dtype == "float64" else max(10 * a.tol, 1e-4)
        if diff > limit:
            raise SystemExit(f"{label}: solution differs from weft's by {diff:.2e} (> {limit:g})")
        best, mark = warm, "*"
        if warm < SLOW:
            best, mark = float("inf"), " "
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                niter, _ = solve()
                best = min(best, time.perf_counter() - t0)
        rows.append((label, niter, best, res, diff))
        print(f"{label:22s} {niter:6d} {best:8.3f}{mark} {1e3 * best / max(niter, 1):8.2f} "
              f"{res:9.1e} {diff:8.1e}", flush=True)
    return rows


if __name__ == "__main__":
    main()
