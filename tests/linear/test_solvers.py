"""The Krylov solvers of weft.optim.linear against numpy and SciPy solves: each solver with and
without preconditioner, float32, left preconditioning, callbacks and maxiter, Warp's array
returns (check_every=0), reusable states, matrix-free and vector-valued operators, batches,
preconditioners (diag, diag_abs, block Jacobi, FSAI) and argument errors."""
import numpy as np
import pytest
import scipy.sparse.linalg as spla

import weft as wp
from weft.optim.linear import (CG, GMRES, LinearOperator, aslinearoperator, bicgstab, cg, cr,
                               gmres, preconditioner)

from ._util import DuckBsr, nonsymmetric, spd

SOLVERS = {"cg": (cg, spd, spla.cg), "cr": (cr, spd, spla.minres),
           "bicgstab": (bicgstab, nonsymmetric, spla.bicgstab),
           "gmres": (gmres, nonsymmetric, spla.gmres)}


@pytest.mark.parametrize("name", list(SOLVERS))
@pytest.mark.parametrize("precond", [None, "diag"])
def test_solver_matches_numpy_and_scipy(name, precond):
    solver, make, scipy_solver = SOLVERS[name]
    A_np, b_np = make(24, seed=5)
    A, b = wp.array(A_np, dtype=wp.float64), wp.array(b_np, dtype=wp.float64)
    M = preconditioner(A, precond) if precond else None
    x = wp.zeros_like(b)
    niter, err, atol = solver(A, b, x, tol=1e-10, maxiter=500, M=M)
    assert 0 < niter <= 500 and err <= atol
    exact = np.linalg.solve(A_np, b_np)
    np.testing.assert_allclose(x.numpy(), exact, rtol=1e-7, atol=1e-8)
    ref, info = scipy_solver(A_np, b_np, rtol=1e-12, maxiter=2000)
    assert info == 0
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-6, atol=1e-7)
    assert np.linalg.norm(A_np @ x.numpy() - b_np) <= 2.0 * atol


@pytest.mark.parametrize("name", ["bicgstab", "gmres"])
def test_left_preconditioner(name):
    solver, make, _ = SOLVERS[name]
    A_np, b_np = make(20, seed=8)
    A, b = wp.array(A_np, dtype=wp.float64), wp.array(b_np, dtype=wp.float64)
    x = wp.zeros_like(b)
    _, err, atol = solver(A, b, x, tol=1e-10, maxiter=400, M=preconditioner(A, "diag"),
                          is_left_preconditioner=True)
    assert err <= atol
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(A_np, b_np), rtol=1e-7, atol=1e-8)


def test_float32_cg_and_gmres():
    A_np, b_np = spd(16, seed=3)
    A, b = wp.array(A_np, dtype=wp.float32), wp.array(b_np, dtype=wp.float32)
    for solver in (cg, gmres):
        x = wp.zeros_like(b)
        _, err, atol = solver(A, b, x, M=preconditioner(A, "diag"), maxiter=200)
        assert err <= atol and x.dtype is wp.float32
        r = A_np @ x.numpy().astype(np.float64) - b_np
        assert np.linalg.norm(r) <= 32 * atol


def test_callback_check_every_and_maxiter():
    A_np, b_np = spd(30, seed=2)
    A, b = wp.array(A_np, dtype=wp.float64), wp.array(b_np, dtype=wp.float64)
    seen = []
    x = wp.zeros_like(b)
    niter, err, atol = cg(A, b, x, tol=1e-12, maxiter=1000, check_every=4,
                          callback=lambda i, e, t: seen.append((i, e, t)))
    assert seen[0][0] == 0 and seen[-1][0] == niter and err <= atol
    assert all(i % 4 == 0 for i, _, _ in seen[:-1])
    assert all(t == atol for _, _, t in seen)
    # maxiter stops early: not converged, the residual reported honestly
    x.zero_()
    niter, err, atol = cg(A, b, x, tol=1e-12, maxiter=3, check_every=1)
    assert niter == 3 and err > atol
    assert np.isclose(err, np.linalg.norm(A_np @ x.numpy() - b_np), rtol=1e-6)
    # restart: iterations in whole cycles, checks at their ends
    x.zero_()
    seen.clear()
    niter, err, atol = cr(A, b, x, tol=1e-10, maxiter=300, check_every=1, restart=5,
                          callback=lambda i, e, t: seen.append(i))
    assert err <= atol and niter % 5 == 0 and all(i % 5 == 0 for i in seen)


def test_check_every_zero_returns_arrays():
    A_np, b_np = spd(12, seed=4)
    A, b = wp.array(A_np, dtype=wp.float64), wp.array(b_np, dtype=wp.float64)
    x = wp.zeros_like(b)
    state = cg(A, b, x, tol=1e-10, check_every=0, run=False)
    assert isinstance(state, CG)
    niter, r2, atol2 = state()
    assert isinstance(niter, wp.array) and niter.numpy()[0] > 0
    assert r2.numpy()[0] <= atol2.numpy()[0]
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(A_np, b_np), rtol=1e-7)


def test_state_reuse_with_new_operands():
    A_np, b_np = nonsymmetric(16, seed=6)
    A, b = wp.array(A_np, dtype=wp.float64), wp.array(b_np, dtype=wp.float64)
    x = wp.zeros_like(b)
    state = gmres(A, b, x, tol=1e-10, restart=8, maxiter=400, run=False)
    assert isinstance(state, GMRES)
    state()
    b2 = wp.array(np.arange(16.0), dtype=wp.float64)
    x2 = wp.zeros_like(b2)
    _, err, atol = state(b=b2, x=x2)
    assert err <= atol
    np.testing.assert_allclose(x2.numpy(), np.linalg.solve(A_np, np.arange(16.0)), rtol=1e-7,
                               atol=1e-8)
    with pytest.raises(ValueError):
        state(b=wp.zeros(8, dtype=wp.float64))


@wp.kernel
def _laplacian(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64),
               z: wp.array(dtype=wp.float64), alpha: wp.float64, beta: wp.float64):
    i = wp.tid()
    n = x.shape[0]
    s = 2.01 * x[i]
    if i > 0:
        s -= x[i - 1]
    if i + 1 < n:
        s -= x[i + 1]
    z[i] = alpha * s + beta * y[i]


def test_matrix_free_operator():
    n = 40
    A_np = 2.01 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)

    def mv(x, y, z, alpha, beta):
        wp.launch(_laplacian, dim=n, inputs=[x, y, z, float(alpha), float(beta)])
    A = LinearOperator((n, n), wp.float64, wp.get_device("cpu"), mv)
    b = wp.array(np.linspace(-1, 1, n), dtype=wp.float64)
    for solver in (cg, cr):
        x = wp.zeros_like(b)
        _, err, atol = solver(A, b, x, tol=1e-10)
        assert err <= atol
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(A_np, b.numpy()), rtol=1e-7)


def test_vector_valued_and_batched():
    d = np.array([[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]])
    diag = wp.array(d, dtype=wp.vec3d)
    b = wp.array(d * np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), dtype=wp.vec3d)
    for solver, kw in ((cg, {}), (cr, {}), (bicgstab, {}), (gmres, {"restart": 6})):
        x = wp.zeros_like(b)
        _, err, atol = solver(diag, b, x, tol=1e-12, maxiter=10, check_every=1, **kw)
        assert err <= atol
        np.testing.assert_allclose(x.numpy(), [[1, 2, 3], [4, 5, 6]], rtol=1e-10)
    # two independent systems and an inactive tail left alone
    A1, b1 = spd(6, seed=11)
    A2, b2 = spd(5, seed=12)
    A_np = np.zeros((13, 13))
    A_np[:6, :6], A_np[6:11, 6:11] = A1, A2
    A_np[11:, 11:] = np.eye(2)
    b_np = np.concatenate([b1, 1e3 * b2, [5.0, 5.0]])
    offsets = wp.array([0, 6, 11], dtype=wp.int32)
    A = aslinearoperator(wp.array(A_np, dtype=wp.float64), batch_offsets=offsets,
                         max_batch_length=6)
    assert A.batch_count == 2
    x = wp.array(np.r_[np.zeros(11), 7.0, 8.0], dtype=wp.float64)
    _, err, atol = cg(A, wp.array(b_np, dtype=wp.float64), x, tol=1e-10, maxiter=100)
    assert err <= atol
    np.testing.assert_allclose(x.numpy()[:6], np.linalg.solve(A1, b1), rtol=1e-7)
    np.testing.assert_allclose(x.numpy()[6:11], np.linalg.solve(A2, 1e3 * b2), rtol=1e-7)
    assert list(x.numpy()[11:]) == [7.0, 8.0]


def _apply(M, n):
    out = np.zeros((n, n))
    for j in range(n):
        e = wp.array(np.eye(n)[j], dtype=wp.float64)
        z = wp.zeros(n, dtype=wp.float64)
        M.matvec(e, z, z, 1.0, 0.0)
        out[:, j] = z.numpy()
    return out


def _block_system(nb=4, bs=3, seed=9):
    rng = np.random.default_rng(seed)
    blocks = {}
    for i in range(nb):
        C = rng.uniform(-1, 1, (bs, bs))
        blocks[(i, i)] = C @ C.T + bs * np.eye(bs)
        if i + 1 < nb:
            off = 0.1 * rng.uniform(-1, 1, (bs, bs))
            blocks[(i, i + 1)], blocks[(i + 1, i)] = off, off.T
    return DuckBsr(nb, nb, blocks)


def test_preconditioners():
    A_np, _ = nonsymmetric(8, seed=1)
    A_np[2, 2] = -A_np[2, 2]
    A = wp.array(A_np, dtype=wp.float64)
    np.testing.assert_allclose(_apply(preconditioner(A, "diag"), 8), np.diag(1 / np.diag(A_np)))
    np.testing.assert_allclose(_apply(preconditioner(A, "diag_abs"), 8),
                               np.diag(1 / np.abs(np.diag(A_np))))
    assert preconditioner(A, "id") is None
    B = _block_system()
    D = B.dense()
    block_inv = np.zeros_like(D)
    for i in range(4):
        s = slice(3 * i, 3 * i + 3)
        block_inv[s, s] = np.linalg.inv(D[s, s])
    for ptype in ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile"):
        np.testing.assert_allclose(_apply(preconditioner(B, ptype), 12), block_inv, atol=1e-12)
    G = _apply(preconditioner(B, "fsai"), 12)  # G^T G: symmetric positive-definite
    np.testing.assert_allclose(G, G.T, atol=1e-12)
    assert np.linalg.cond(G @ D) < np.linalg.cond(D)
    from weft.optim.linear import FSAI
    np.testing.assert_allclose(_apply(FSAI(B, max_row_size=1), 12), np.diag(1 / np.diag(D)),
                               rtol=1e-12)  # one entry per row: Jacobi
    # a singular diagonal block acts as the identity
    S = DuckBsr(2, 2, {(0, 0): np.zeros((2, 2)), (1, 1): 2 * np.eye(2)})
    np.testing.assert_allclose(_apply(preconditioner(S, "block_jacobi_direct"), 4),
                               np.diag([1, 1, 0.5, 0.5]))
    with pytest.raises(ValueError):
        preconditioner(A, "block_jacobi_direct")  # not a BSR matrix
    with pytest.raises(ValueError):
        preconditioner(A, "nope")


def test_argument_errors():
    A, b = wp.array(np.eye(3), dtype=wp.float64), wp.array(np.ones(3), dtype=wp.float64)
    x = wp.zeros_like(b)
    for bad in (True, 1.5):
        with pytest.raises(TypeError):
            cg(A, b, x, run=False, restart=bad)
    with pytest.raises(ValueError):
        cr(A, b, x, run=False, restart=0)
    with pytest.raises(ValueError, match="requires batch_offsets"):
        aslinearoperator(A, max_batch_length=3)
    with pytest.raises(ValueError):
        bicgstab(A, b, x, run=False)(M=preconditioner(A, "diag"))
