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
        (np.floor(v) != 0).astype(float) + (v - 0.5 < 0).astype(float),  # Warp's step
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


@wp.kernel
def inverse_erf(x: wp.array(dtype=wp.float64), z: wp.array(dtype=wp.float64),
                out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    out[i, 0] = wp.erfinv(x[i])
    out[i, 1] = wp.erfcinv(z[i])


@wp.kernel
def inverse_erf32(x: wp.array(dtype=wp.float32), out: wp.array2d(dtype=wp.float32)):
    i = wp.tid()
    out[i, 0] = wp.erfinv(x[i])
    out[i, 1] = wp.erfcinv(x[i] + 1.0)


def test_erfinv_and_erfcinv_against_mpmath():
    import mpmath
    mpmath.mp.dps = 40
    x = np.array([-0.999999999, -0.73, -0.5, -1e-12, 0.0, 0.2, 0.5, 0.93, 1.0 - 2.0 ** -52])
    z = np.array([1e-300, 1e-20, 0.04, 0.5, 1.0, 1.0 + 1e-13, 1.5, 1.99, 2.0 - 1e-15])
    out = wp.zeros((len(x), 2), dtype=wp.float64)
    wp.launch(inverse_erf, len(x), inputs=[wp.array(x, dtype=wp.float64),
                                           wp.array(z, dtype=wp.float64)], outputs=[out])
    ref_inv = [float(mpmath.erfinv(mpmath.mpf(v))) for v in x]
    # erfcinv(z) = erfinv(1 - z) loses the tail in mpmath too: solve erfc(w) = z instead
    ref_cinv = [float(mpmath.findroot(lambda w, v=v: mpmath.erfc(w) - mpmath.mpf(v), w0))
                for v, w0 in zip(z, out.numpy()[:, 1])]
    ulp = np.spacing(np.abs(np.array([ref_inv, ref_cinv]).T))
    err = np.abs(out.numpy() - np.array([ref_inv, ref_cinv]).T)
    assert (err <= np.maximum(ulp, 1e-300)).all(), err / ulp

    # float32: the float64 result rounded, as Warp's CPU builtins
    x32 = np.array([-0.9, -0.3, 0.0, 0.45, 0.99], dtype=np.float32)
    out32 = wp.zeros((5, 2), dtype=wp.float32)
    wp.launch(inverse_erf32, 5, inputs=[wp.array(x32, dtype=wp.float32)], outputs=[out32])
    want = np.array([[float(mpmath.erfinv(mpmath.mpf(float(v)))),
                      float(-mpmath.erfinv(mpmath.mpf(float(np.float32(v + np.float32(1))))
                                           - 1))] for v in x32], dtype=np.float32)
    np.testing.assert_array_max_ulp(out32.numpy(), want, maxulp=1)


def test_erfinv_edges_and_gradients():
    x = np.array([1.0, -1.0, 1.5, 0.3])
    z = np.array([0.0, 2.0, -0.1, 0.6])
    out = wp.zeros((4, 2), dtype=wp.float64)
    wp.launch(inverse_erf, 4, inputs=[wp.array(x, dtype=wp.float64),
                                      wp.array(z, dtype=wp.float64)], outputs=[out])
    o = out.numpy()
    assert o[0, 0] == np.inf and o[1, 0] == -np.inf and np.isnan(o[2, 0])
    assert o[0, 1] == np.inf and o[1, 1] == -np.inf and np.isnan(o[2, 1])

    # d erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2), d erfcinv(z) = -sqrt(pi)/2 exp(erfcinv(z)^2)
    from scipy.special import erfcinv, erfinv
    x = np.array([-0.8, -0.1, 0.35, 0.9])
    z = np.array([0.02, 0.7, 1.2, 1.9])
    xa = wp.array(x, dtype=wp.float64, requires_grad=True)
    za = wp.array(z, dtype=wp.float64, requires_grad=True)
    out = wp.zeros((4, 2), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(inverse_erf, 4, inputs=[xa, za], outputs=[out])
    tape.backward(grads={out: np.ones((4, 2))})
    k = math.sqrt(math.pi) / 2
    np.testing.assert_allclose(xa.grad.numpy(), k * np.exp(erfinv(x) ** 2), rtol=1e-13)
    np.testing.assert_allclose(za.grad.numpy(), -k * np.exp(erfcinv(z) ** 2), rtol=1e-13)
    t = wp.jvp(inverse_erf, 4, inputs=[xa, za], outputs=[out],
               tangents={xa: np.ones(4), za: np.zeros(4)})
    np.testing.assert_allclose(t[out].numpy()[:, 0], k * np.exp(erfinv(x) ** 2), rtol=1e-13)


@wp.kernel
def clamped(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.clamp(x[i], 0.0, 1.0)


def test_clamp_of_nan_is_the_low_bound_as_in_warp():
    # Warp 1.19 clamps floats as fmin(fmax(lo, x), hi), NaN counting as missing: its raymarch
    # example clamps pow(negative, 2.2) = NaN to 0 (values Warp gives on the CPU)
    x = np.array([np.nan, -0.5, 0.25, 3.0], dtype=np.float32)
    out = wp.zeros(4, dtype=float)
    wp.launch(clamped, 4, inputs=[wp.array(x, dtype=float)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 0.25, 1.0])
