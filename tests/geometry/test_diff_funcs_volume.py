"""The differentiable trilinear interpolation (``diff_funcs_volume``) in small weft kernels:
gradients (adjoint and tangent) with respect to corner values and position against central
finite differences in float64, and float32 values bit for bit equal to the sampling core."""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check
from tests.geometry.conftest import path
from weft.native.geometry import volume_query as Q
from weft.stdlib.diff_funcs_volume import (trilinear_d, trilinear_f, trilinear_v, trilinear_vd,
    volume_frac_d, volume_frac_f)
from weft.native.geometry.volume import Volume

N = 5


@wp.kernel
def k_tri_d(c: wp.array(dtype=wp.float64), p: wp.array(dtype=wp.vec3d),
            out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    f = volume_frac_d(p[i])
    b = i * 8
    out[i] = trilinear_d(c[b], c[b + 1], c[b + 2], c[b + 3], c[b + 4], c[b + 5], c[b + 6],
                         c[b + 7], f[0], f[1], f[2])


@wp.kernel
def k_tri_vd(c: wp.array(dtype=wp.vec3d), p: wp.array(dtype=wp.vec3d),
             out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    f = volume_frac_d(p[i])
    b = i * 8
    out[i] = trilinear_vd(c[b], c[b + 1], c[b + 2], c[b + 3], c[b + 4], c[b + 5], c[b + 6],
                          c[b + 7], f[0], f[1], f[2])


def _points(rng, n):
    """Positions away from integer planes (the interpolant is not differentiable there)."""
    return rng.integers(-5, 5, (n, 3)) + rng.uniform(0.1, 0.9, (n, 3))


def _reference(c, p):
    """Trilinear interpolation written out independently (numpy, float64)."""
    c = np.asarray(c).reshape((len(p), 2, 2, 2) + np.shape(c)[1:])
    f = p - np.floor(p)
    out = 0.0
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                w = ((f[:, 0] if dx else 1 - f[:, 0]) * (f[:, 1] if dy else 1 - f[:, 1])
                     * (f[:, 2] if dz else 1 - f[:, 2]))
                w = w.reshape((-1,) + (1,) * (c.ndim - 4))
                out = out + w * c[:, dx, dy, dz]
    return out


def test_trilinear_scalar_gradients():
    rng = np.random.default_rng(0)
    c = rng.standard_normal(8 * N)
    p = _points(rng, N)
    check(k_tri_d, N, [Arr(c, wp.float64), Arr(p, wp.vec3d)], [Arr(np.zeros(N), wp.float64)],
          _reference, fwd_rtol=1e-12)


def test_trilinear_vec3_gradients():
    rng = np.random.default_rng(1)
    c = rng.standard_normal((8 * N, 3))
    p = _points(rng, N)
    check(k_tri_vd, N, [Arr(c, wp.vec3d), Arr(p, wp.vec3d)],
          [Arr(np.zeros((N, 3)), wp.vec3d)], _reference, fwd_rtol=1e-12)


@wp.kernel
def k_tri_f(c: wp.array(dtype=wp.float32), p: wp.array(dtype=wp.vec3f),
            out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    f = volume_frac_f(p[i])
    b = i * 8
    out[i] = trilinear_f(c[b], c[b + 1], c[b + 2], c[b + 3], c[b + 4], c[b + 5], c[b + 6],
                         c[b + 7], f[0], f[1], f[2])


@wp.kernel
def k_tri_v(c: wp.array(dtype=wp.vec3f), p: wp.array(dtype=wp.vec3f),
            out: wp.array(dtype=wp.vec3f)):
    i = wp.tid()
    f = volume_frac_f(p[i])
    b = i * 8
    out[i] = trilinear_v(c[b], c[b + 1], c[b + 2], c[b + 3], c[b + 4], c[b + 5], c[b + 6],
                         c[b + 7], f[0], f[1], f[2])


def test_float32_values_equal_the_sampling_core_and_gradients_agree():
    """On the torus (rotated map, level set) and the vector grid: the weft functions of the
    core's corner values give Warp's samples exactly, and their adjoint with respect to the
    position is the core's (Warp's) gradient up to rounding."""
    rng = np.random.default_rng(2)
    pts = rng.uniform(-12, 12, (64, 3)).astype(np.float32)
    v = Volume.load_from_nvdb(path("torus.nvdb"))
    a = v.arrays()
    corners = np.array([Q.volume_corners_s(*a, v.gtype, Q.GRID_FLOAT, np.float32(0), *p)
                        for p in pts], np.float32).ravel()
    want = np.array([Q.volume_sample_f(*a, v.gtype, *p, 1) for p in pts], np.float32)
    grad = np.array([Q.volume_sample_grad_f(*a, v.gtype, *p, 1)[1] for p in pts], np.float32)
    c = wp.array(corners, dtype=wp.float32)
    P = wp.array(pts, dtype=wp.vec3f, requires_grad=True)
    out = wp.zeros(len(pts), dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_tri_f, len(pts), inputs=[c, P], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), want)
    tape.backward(grads={out: np.ones(len(pts), np.float32)})
    np.testing.assert_allclose(P.grad.numpy(), grad, rtol=1e-5, atol=1e-6)

    v = Volume.load_from_nvdb(path("test_vec_grid.nvdb"))
    a = v.arrays()
    corners = np.array([Q.volume_corners_v3(*a, v.gtype, Q.GRID_VEC3F, np.float32(0), *p)
                        for p in pts], np.float32).reshape(-1, 3)
    want = np.array([Q.volume_sample_v(*a, v.gtype, *p, 1) for p in pts], np.float32)
    out = wp.zeros(len(pts), dtype=wp.vec3f)
    wp.launch(k_tri_v, len(pts), inputs=[wp.array(corners, dtype=wp.vec3f),
                                         wp.array(pts, dtype=wp.vec3f)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), want)
