"""wp.atomic_min/atomic_max: the derivative goes to the values equal to the result, and threads
whose values tie share it equally (Warp gives every tied thread the whole gradient, so the
gradients sum to k times the derivative). Adjoint and tangent agree (dot-product test)."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def reduce_min(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_min(out, i // 4, x[i] * 2.0)


@wp.kernel
def reduce_max(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_max(out, i // 4, x[i] * 2.0)


X = np.array([2.0, 1.0, 1.0, 3.0,    # element 0: a tie of two for the min
              5.0, 4.0, 6.0, 7.0],   # element 1: one winner
             np.float32)


@pytest.mark.parametrize("kernel,init,expect", [
    (reduce_min, 100.0, [0, 1, 1, 0, 0, 2, 0, 0]),
    (reduce_max, -100.0, [0, 0, 0, 2, 0, 0, 0, 2]),
])
def test_ties_share_the_gradient_equally(kernel, init, expect):
    x = wp.array(X, requires_grad=True)
    out = wp.full(2, init, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, 8, inputs=[x], outputs=[out])
    tape.backward(grads={out: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), expect)
    # the tangent of the result is the mean of the tied values' tangents
    rng = np.random.default_rng(1)
    dx = rng.standard_normal(8).astype(np.float32)
    out2 = wp.full(2, init, dtype=float)
    t = wp.jvp(kernel, 8, inputs=[x], outputs=[out2], tangents={x: dx})
    w = rng.standard_normal(2).astype(np.float32)
    x.grad.zero_()
    tape.backward(grads={out: w})
    np.testing.assert_allclose(float(t[out2].numpy() @ w), float(x.grad.numpy() @ dx),
                               rtol=1e-5)
    np.testing.assert_allclose(t[out2].numpy(), [
        dx[:4][np.array(expect[:4]) > 0].mean() * 2, dx[4:][np.array(expect[4:]) > 0].mean() * 2],
        rtol=1e-6)
