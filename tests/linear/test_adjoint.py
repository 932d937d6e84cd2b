"""Implicit differentiation of solves recorded on a tape: the adjoint solves the transposed
system once (no unrolled iterations); gradients of the right-hand side and of the matrix (dense,
diagonal, BSR values) against float64 central differences; forward mode and tape.hvp through a
solve."""
import numpy as np
import pytest

import weft as wp
from weft.libs.optim import linear as L
from weft.optim.linear import bicgstab, cg, cr, gmres

from ._util import DuckBsr, fake_bsr_mv, nonsymmetric, spd


@wp.kernel
def _square(t: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64)):
    i = wp.tid()
    b[i] = t[i] * t[i]


@wp.kernel
def _loss(x: wp.array(dtype=wp.float64), w: wp.array(dtype=wp.float64),
          loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, w[i] * x[i] * x[i])


N = 7
W = np.random.default_rng(0).uniform(-1, 1, 16)
TH = np.random.default_rng(1).uniform(0.5, 1.5, N)


def _program(solver, make_A, th, grad):
    """loss = sum(w x^2), A x = t^2; returns loss (and t.grad, the matrix gradient, x.grad)."""
    n = len(th)
    A, grad_of_A = make_A(grad)
    t = wp.array(th, dtype=wp.float64, requires_grad=grad)
    b = wp.zeros(n, dtype=wp.float64, requires_grad=grad)
    x = wp.zeros(n, dtype=wp.float64, requires_grad=grad)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=grad)
    tape = wp.Tape()
    with tape:
        wp.launch(_square, dim=n, inputs=[t, b])
        solver(A, b, x, tol=1e-14, maxiter=300)
        wp.launch(_loss, dim=n, inputs=[x, wp.array(W[:n], dtype=wp.float64), loss])
    if not grad:
        return loss.numpy()[0]
    assert len(tape.launches) == 3  # the solve is one record, its iterations are not taped
    tape.backward(loss)
    return loss.numpy()[0], t.grad.numpy().copy(), grad_of_A(), x.grad.numpy().copy()


def _fd(f, x0, dirs, h=1e-6):
    return np.array([(f(x0 + h * d) - f(x0 - h * d)) / (2 * h) for d in dirs])


@pytest.mark.parametrize("solver", [cg, cr, bicgstab, gmres], ids=lambda s: s.__name__)
def test_dense_matrix_and_rhs(solver):
    symmetric = solver in (cg, cr)
    A0 = (spd if symmetric else nonsymmetric)(N, seed=3)[0]

    def dense(A_np):
        def make(grad):
            A = wp.array(A_np, dtype=wp.float64, requires_grad=grad)
            return A, (lambda: A.grad.numpy().copy())
        return make
    _, g_t, g_A, g_x = _program(solver, dense(A0), TH, True)
    assert not g_x.any()  # the initial guess does not matter
    rng = np.random.default_rng(4)
    dirs_t = [rng.standard_normal(N) for _ in range(2)]
    fd_t = _fd(lambda th: _program(solver, dense(A0), th, False), TH, dirs_t)
    np.testing.assert_allclose([g_t @ d for d in dirs_t], fd_t, rtol=1e-6, atol=1e-8)
    # the matrix: symmetric directions for the symmetric solvers (they assume A^T = A)
    dirs = [rng.standard_normal((N, N)) for _ in range(2)]
    if symmetric:
        dirs = [d + d.T for d in dirs]
    fd_A = _fd(lambda A_np: _program(solver, dense(A_np), TH, False), A0, dirs)
    np.testing.assert_allclose([np.sum(g_A * d) for d in dirs], fd_A, rtol=1e-6, atol=1e-8)


def test_diagonal_matrix():
    d0 = np.linspace(1.0, 3.0, N)

    def diag(d_np):
        def make(grad):
            A = wp.array(d_np, dtype=wp.float64, requires_grad=grad)
            return A, (lambda: A.grad.numpy().copy())
        return make
    _, g_t, g_d, _ = _program(cg, diag(d0), TH, True)
    dirs = list(np.random.default_rng(7).standard_normal((2, N)))
    np.testing.assert_allclose([g_t @ e for e in dirs], _fd(
        lambda th: _program(cg, diag(d0), th, False), TH, dirs), rtol=1e-6)
    np.testing.assert_allclose([g_d @ e for e in dirs], _fd(
        lambda d: _program(cg, diag(d), TH, False), d0, dirs), rtol=1e-6)


def test_bsr_values(monkeypatch):
    monkeypatch.setattr(L, "_bsr_mv", fake_bsr_mv)
    A0, _ = nonsymmetric(N + 1, seed=6)  # 4 x 4 blocks of 2 x 2, tridiagonal pattern
    pattern = [(i, j) for i in range(4) for j in range(4) if abs(i - j) <= 1]

    def bsr(A_np):
        def make(grad):
            B = DuckBsr(4, 4, {(i, j): A_np[2 * i:2 * i + 2, 2 * j:2 * j + 2] for i, j in pattern},
                        requires_grad=grad)
            return B, (lambda: B.values.grad.numpy().copy())
        return make
    th = np.r_[TH, 0.9]
    _, g_t, g_v, _ = _program(gmres, bsr(A0), th, True)
    masked = np.zeros_like(A0)
    for i, j in pattern:
        masked[2 * i:2 * i + 2, 2 * j:2 * j + 2] = A0[2 * i:2 * i + 2, 2 * j:2 * j + 2]
    dirs = list(np.random.default_rng(8).standard_normal((2, N + 1)))
    fd_t = _fd(lambda t: _program(gmres, bsr(masked), t, False), th, dirs)
    np.testing.assert_allclose([g_t @ e for e in dirs], fd_t, rtol=1e-6)
    for k, (r, c) in ((0, (0, 0)), (3, (1, 0)), (7, (0, 1))):
        i, j = pattern[k]
        E = np.zeros_like(A0)
        E[2 * i + r, 2 * j + c] = 1.0
        fd = _fd(lambda A_np: _program(gmres, bsr(A_np), th, False), masked, [E])[0]
        np.testing.assert_allclose(g_v[k, r, c], fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("solver", [cg, gmres], ids=lambda s: s.__name__)
def test_forward_mode_and_hvp_through_a_solve(solver):
    """tape.forward and tape.hvp through a recorded solve (tangents of b and of A): each one
    or two more solves, against central differences of the loss and of its gradients."""
    A0 = (spd if solver is cg else nonsymmetric)(N, seed=8)[0]
    rng = np.random.default_rng(9)
    v, VA = rng.uniform(-1, 1, N), rng.uniform(-1, 1, (N, N))
    if solver is cg:
        VA = VA + VA.T

    def record(A_np, th):
        A = wp.array(A_np, dtype=wp.float64, requires_grad=True)
        t = wp.array(th, dtype=wp.float64, requires_grad=True)
        b = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        x = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(_square, dim=N, inputs=[t, b])
            solver(A, b, x, tol=1e-14, maxiter=300)
            wp.launch(_loss, dim=N, inputs=[x, wp.array(W[:N], dtype=wp.float64), loss])
        return tape, A, t, loss

    def grads(s):
        tape, A, t, loss = record(A0 + s * VA, TH + s * v)
        tape.backward(loss)
        return loss.numpy()[0], t.grad.numpy().copy(), A.grad.numpy().copy()
    h = 1e-5
    (lp, gtp, gAp), (lm, gtm, gAm) = grads(h), grads(-h)
    tape, A, t, loss = record(A0, TH)
    tangent = tape.forward({t: v, A: VA})[loss].numpy()[0]
    np.testing.assert_allclose(tangent, (lp - lm) / (2 * h), rtol=1e-7)
    tape, A, t, loss = record(A0, TH)
    hv = tape.hvp(loss, {t: v, A: VA})
    np.testing.assert_allclose(hv[t].numpy(), (gtp - gtm) / (2 * h), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(hv[A].numpy(), (gAp - gAm) / (2 * h), rtol=1e-6, atol=1e-9)


def test_weft_sparse_bsr_adjoint():
    """A solve on a weft.sparse BSR matrix: b.grad and values.grad against the closed form
    (lam = A^-T x.grad, values.grad = -lam_i x_j^T on the pattern)."""
    import weft.sparse as sparse
    rng = np.random.default_rng(10)
    nb, bs = 4, 2
    keys = [(i, j) for i in range(nb) for j in range(nb) if abs(i - j) <= 1]
    vals = np.array([rng.uniform(-1, 1, (bs, bs)) + (4 * np.eye(bs) if i == j else 0)
                     for i, j in keys])
    mat = wp.types.matrix(shape=(bs, bs), dtype=wp.float64)
    A = sparse.bsr_from_triplets(nb, nb, wp.array([k[0] for k in keys], dtype=int),
                                 wp.array([k[1] for k in keys], dtype=int),
                                 wp.array(vals, dtype=mat))
    A.values.requires_grad = True
    b = wp.array(rng.uniform(-1, 1, nb * bs), dtype=wp.float64, requires_grad=True)
    x = wp.zeros_like(b)
    x.requires_grad = True
    seed = rng.uniform(-1, 1, nb * bs)
    tape = wp.Tape()
    with tape:
        bicgstab(A, b, x, tol=1e-13, maxiter=100)
    tape.backward(grads={x: seed})
    D = np.zeros((nb * bs, nb * bs))
    for (i, j), v in zip(keys, vals):
        D[i * bs:(i + 1) * bs, j * bs:(j + 1) * bs] = v
    lam, xs = np.linalg.solve(D.T, seed), np.linalg.solve(D, b.numpy())
    np.testing.assert_allclose(b.grad.numpy(), lam, rtol=1e-9, atol=1e-12)
    offsets, columns, g = A.offsets.numpy(), A.columns.numpy(), A.values.grad.numpy()
    for r in range(nb):
        for k in range(offsets[r], offsets[r + 1]):
            c = columns[k]
            np.testing.assert_allclose(g[k], -np.outer(lam[r * bs:(r + 1) * bs],
                                                       xs[c * bs:(c + 1) * bs]),
                                       rtol=1e-9, atol=1e-12)
