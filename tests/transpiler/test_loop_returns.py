"""``return`` inside loops (funcs and kernels) and the cache's sensitivity to weft's own code."""
import numpy as np

import weft as wp


@wp.func
def first_above(a: wp.array(dtype=wp.float64), n: int, t: wp.float64):
    acc = wp.float64(0.0)
    for k in range(n):
        acc = acc + a[k] * a[k]
        if acc > t:
            return acc * wp.float64(2.0)
    return acc


@wp.kernel
def use_first_above(a: wp.array(dtype=wp.float64), ts: wp.array(dtype=wp.float64),
                    out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = first_above(a, 4, ts[i])


@wp.kernel
def early_exit(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.float64(1.0)
    for k in range(5):
        s = s * a[i]
        if s > wp.float64(3.0):
            out[i] = s
            return
    out[i] = -s


def _first_above(a, t):
    acc = 0.0
    for k in range(4):
        acc += a[k] ** 2
        if acc > t:
            return 2 * acc
    return acc


def test_return_inside_a_loop_of_a_func():
    a0 = np.array([0.5, 1.0, 1.5, 2.0])
    ts0 = np.array([0.1, 1.0, 3.0, 100.0])
    a = wp.array(a0, dtype=wp.float64, requires_grad=True)
    ts = wp.array(ts0, dtype=wp.float64)
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(use_first_above, 4, inputs=[a, ts], outputs=[out])
    np.testing.assert_allclose(out.numpy(), [_first_above(a0, t) for t in ts0])
    tape.backward(grads={out: np.ones(4)})
    h = 1e-6
    fd = []
    for j in range(4):
        ap, am = a0.copy(), a0.copy()
        ap[j] += h
        am[j] -= h
        fd.append(sum(_first_above(ap, t) - _first_above(am, t) for t in ts0) / (2 * h))
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-6)
    t = wp.jvp(use_first_above, 4, inputs=[a, ts], outputs=[out], tangents={a: np.ones(4)})
    fd_t = [(_first_above(a0 + h, t) - _first_above(a0 - h, t)) / (2 * h) for t in ts0]
    np.testing.assert_allclose(t[out].numpy(), fd_t, rtol=1e-6)


def test_return_inside_a_loop_of_a_kernel():
    a0 = np.array([1.2, 2.0, 0.5])
    a = wp.array(a0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(early_exit, 3, inputs=[a], outputs=[out])
    # 1.2**5 never exceeds 3; 2**2 = 4 does at the second step; 0.5**5 never does
    np.testing.assert_allclose(out.numpy(), [-1.2 ** 5, 4.0, -0.5 ** 5])
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(a.grad.numpy(), [-5 * 1.2 ** 4, 2 * 2.0, -5 * 0.5 ** 4])
