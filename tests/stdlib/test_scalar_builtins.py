"""Scalar builtins inside a kernel: values against numpy/math, gradients against FD."""
import math

import numpy as np

import weft as wp


@wp.kernel
def many(x: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    v = x[i]
    out[i, 0] = wp.cbrt(v)
    out[i, 1] = wp.erf(v) + wp.erfc(v * 0.5)
    out[i, 2] = wp.degrees(v) + wp.radians(v)
    out[i, 3] = wp.frac(v * 3.0)
    out[i, 4] = wp.copysign(v, -1.0)
    out[i, 5] = wp.lerp(v, v * v, 0.25) + wp.smoothstep(-1.0, 2.0, v)
    out[i, 6] = wp.nonzero(wp.floor(v)) + wp.step(v - 0.5)
    out[i, 7] = wp.float64(wp.isnan(v / (v - v))) + 2.0 * wp.float64(wp.isinf(1.0 / v)) + \
        4.0 * wp.float64(wp.isfinite(v))


def _reference(v):
    t = np.clip((v + 1.0) / 3.0, 0, 1)
    return np.stack([
        np.cbrt(v),
        np.array([math.erf(a) + math.erfc(a * 0.5) for a in v]),
        np.degrees(v) + np.radians(v),
        v * 3.0 - np.trunc(v * 3.0),
        np.copysign(v, -1.0),
        v * 0.75 + v * v * 0.25 + t * t * (3 - 2 * t),
        (np.floor(v) != 0).astype(float) + (v - 0.5 >= 0).astype(float),
        np.isnan(v / (v - v)) + 2.0 * np.isinf(1.0 / v) + 4.0 * np.isfinite(v),
    ], 1)


def test_values():
    v = np.array([-1.7, -0.2, 0.0, 0.4, 0.9, 2.6])
    out = wp.zeros((6, 8), dtype=wp.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        wp.launch(many, 6, inputs=[wp.array(v, dtype=wp.float64)], outputs=[out])
        np.testing.assert_allclose(out.numpy(), _reference(v), rtol=1e-12, atol=1e-12)


def test_gradients_against_finite_differences():
    v = np.array([-1.7, -0.2, 0.4, 0.9, 1.3])  # away from 0 (cbrt) and kinks
    seed = np.random.default_rng(0).standard_normal((5, 8))
    seed[:, 6:] = 0.0  # piecewise-constant outputs
    x = wp.array(v, dtype=wp.float64, requires_grad=True)
    out = wp.zeros((5, 8), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with np.errstate(divide="ignore", invalid="ignore"):
        with tape:
            wp.launch(many, 5, inputs=[x], outputs=[out])
        tape.backward(grads={out: seed})
        h = 1e-6
        fd = ((_reference(v + h) - _reference(v - h)) / (2 * h) * seed).sum(1)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
