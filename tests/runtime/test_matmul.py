"""wp.matmul / batched_matmul / @ on arrays: values against numpy; on a tape, adjoints into
a.grad, b.grad, c.grad against the analytic ones and tangents against finite differences."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError

rng = np.random.default_rng(4)


def arr(x, grad=True):
    return wp.array(x, dtype=wp.float64, requires_grad=grad)


@pytest.mark.parametrize("shape", [((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5))])
def test_values_gradients_and_tangents(shape):
    A, B = rng.standard_normal(shape[0]), rng.standard_normal(shape[1])
    C = rng.standard_normal(A.shape[:-1] + B.shape[-1:])
    a, b, c = arr(A), arr(B), arr(C)
    d = arr(np.zeros(C.shape))
    tape = wp.Tape()
    with tape:
        (wp.matmul if A.ndim == 2 else wp.batched_matmul)(a, b, c, d, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(d.numpy(), 2.0 * A @ B + 0.5 * C, rtol=1e-12)
    G = rng.standard_normal(C.shape)
    tape.backward(grads={d: G})
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * G @ np.swapaxes(B, -1, -2), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * np.swapaxes(A, -1, -2) @ G, rtol=1e-12)
    np.testing.assert_allclose(c.grad.numpy(), 0.5 * G, rtol=1e-12)
    tA, tB = rng.standard_normal(A.shape), rng.standard_normal(B.shape)
    t = tape.forward({a: tA, b: tB})
    h = 1e-6
    fd = ((2.0 * (A + h * tA) @ (B + h * tB)) - (2.0 * (A - h * tA) @ (B - h * tB))) / (2 * h)
    np.testing.assert_allclose(t[d].numpy(), fd, rtol=1e-7, atol=1e-9)


def test_matmul_operator_and_errors():
    A, B = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    a, b = arr(A), arr(B)
    np.testing.assert_allclose((a @ b).numpy(), A @ B, rtol=1e-12)
    with pytest.raises(LaunchError, match="do not agree"):
        wp.matmul(a, a, arr(np.zeros((2, 3))), arr(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="2-D"):
        _ = wp.zeros(3, dtype=float) @ wp.zeros(3, dtype=float)
