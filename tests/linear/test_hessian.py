"""hessian_operator: tape.hvp as a LinearOperator (products against finite differences of
gradients), and Newton-Krylov steps with cg converging superlinearly."""
import numpy as np

import weft as wp
from weft.optim.linear import cg, hessian_operator


@wp.kernel
def _energy(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if i + 1 < x.shape[0]:
        d = x[i + 1] - x[i] - 0.5
        wp.atomic_add(loss, 0, d * d * d * d + d * d)
    wp.atomic_add(loss, 0, wp.cosh(x[i] - 0.1 * wp.float64(i)))


N = 9


def _record(xv):
    x = wp.array(xv, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_energy, dim=N, inputs=[x, loss])
    tape.backward(loss)
    return tape, x, loss


def test_products_match_gradient_differences():
    rng = np.random.default_rng(2)
    x0 = rng.uniform(-1, 1, N)
    tape, x, loss = _record(x0)
    H = hessian_operator(tape, loss, x, damping=0.25)
    assert H.shape == (N, N) and H.rmatvec is not None
    v = rng.uniform(-1, 1, N)
    z = wp.array(np.ones(N), dtype=wp.float64)
    H.matvec(wp.array(v, dtype=wp.float64), z, z, 2.0, 3.0)
    h = 1e-5
    fd = (_record(x0 + h * v)[1].grad.numpy() - _record(x0 - h * v)[1].grad.numpy()) / (2 * h)
    np.testing.assert_allclose(z.numpy(), 2.0 * (fd + 0.25 * v) + 3.0, rtol=1e-7, atol=1e-7)


def test_newton_krylov_converges():
    xv = np.zeros(N)
    norms = []
    for _ in range(8):
        tape, x, loss = _record(xv)
        g = x.grad.numpy().copy()
        norms.append(np.linalg.norm(g))
        if norms[-1] < 1e-11:
            break
        step = wp.zeros(N, dtype=wp.float64)
        _, err, atol = cg(hessian_operator(tape, loss, x), wp.array(-g, dtype=wp.float64),
                          step, tol=1e-12, maxiter=50)
        assert err <= atol
        xv = xv + step.numpy()
    assert norms[-1] < 1e-11 and len(norms) <= 7
    ratios = [b / a for a, b in zip(norms, norms[1:])]
    assert ratios[-1] < 1e-2 and ratios[-1] < ratios[0]  # superlinear, as Newton's method
