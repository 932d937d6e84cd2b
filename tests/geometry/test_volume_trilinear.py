"""The trilinear interpolation of weft's volume samples (``weft.stdlib.geometry_volume``:
the corners read by a non-differentiable call, the interpolation lowered to kernel arithmetic)
in small kernels, through ``volume_sample_index`` on an index grid whose voxel data are the
corner values: gradients (adjoint and tangent) with respect to the voxel data, the background
and the position against central finite differences of a numpy reference in float64, and
float32 values bit for bit equal to the sampling core's (Warp's) ``volume_sample_f`` /
``volume_sample_v`` of a float grid holding the same values."""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check
from weft.native.geometry import volume_query as Q

N = 5
SIZE = 8  # one 8^3 tile: voxels 0..7 on each axis, all active
LINEAR = 1


@wp.kernel
def k_index_d(vid: wp.uint64, c: wp.array(dtype=wp.float64), bg: wp.array(dtype=wp.float64),
              p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.volume_sample_index(vid, p[i], wp.Volume.LINEAR, c, bg[0])


@wp.kernel
def k_index_vd(vid: wp.uint64, c: wp.array(dtype=wp.vec3d), bg: wp.array(dtype=wp.vec3d),
               p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = wp.volume_sample_index(vid, p[i], wp.Volume.LINEAR, c, bg[0])


def _index_grid():
    """An index grid of one tile, and its voxels (the order of its voxel data)."""
    vol = wp.Volume.allocate((0, 0, 0), (SIZE - 1,) * 3, 1.0, bg_value=None)
    ijk = vol.get_voxels().numpy()
    assert len(ijk) == SIZE ** 3
    return vol, ijk


def _points(rng, n):
    """Positions away from integer planes (the interpolant is not differentiable there), some
    in the cells at the tile's faces, which mix in the background; float32 values."""
    p = rng.integers(-1, SIZE, (n, 3)) + rng.uniform(0.1, 0.9, (n, 3))
    return p.astype(np.float32).astype(np.float64)


def _reference(ijk):
    """Trilinear interpolation written out independently (numpy, float64) of voxel data ``c``
    at voxels ``ijk`` in a grid of background ``bg``."""
    def ref(vid, c, bg, p):
        c = np.asarray(c)
        dense = np.empty((SIZE + 2,) * 3 + c.shape[1:])
        dense[...] = np.asarray(bg)[0]
        dense[tuple((ijk + 1).T)] = c
        q = np.asarray(p) + 1.0
        b = np.floor(q).astype(int)
        f = q - b
        out = 0.0
        for dx in (0, 1):
            for dy in (0, 1):
                for dz in (0, 1):
                    w = ((f[:, 0] if dx else 1 - f[:, 0]) * (f[:, 1] if dy else 1 - f[:, 1])
                         * (f[:, 2] if dz else 1 - f[:, 2]))
                    w = w.reshape((-1,) + (1,) * (c.ndim - 1))
                    out = out + w * dense[b[:, 0] + dx, b[:, 1] + dy, b[:, 2] + dz]
        return out
    return ref


def test_trilinear_scalar_gradients():
    vol, ijk = _index_grid()
    rng = np.random.default_rng(0)
    c = rng.standard_normal(len(ijk))
    p = _points(rng, N)
    check(k_index_d, N, [vol.id, Arr(c, wp.float64), Arr([-0.5], wp.float64), Arr(p, wp.vec3)],
          [Arr(np.zeros(N), wp.float64)], _reference(ijk), fd="reference", atol=1e-6,
          fwd_rtol=1e-6, fwd_atol=1e-7)


def test_trilinear_vec3_gradients():
    vol, ijk = _index_grid()
    rng = np.random.default_rng(1)
    c = rng.standard_normal((len(ijk), 3))
    p = _points(rng, N)
    check(k_index_vd, N, [vol.id, Arr(c, wp.vec3d), Arr([(0.5, -1.0, 2.0)], wp.vec3d),
                          Arr(p, wp.vec3)],
          [Arr(np.zeros((N, 3)), wp.vec3d)], _reference(ijk), fd="reference", atol=1e-6,
          fwd_rtol=1e-6, fwd_atol=1e-7)


@wp.kernel
def k_index_f(vid: wp.uint64, c: wp.array(dtype=wp.float32), bg: wp.float32,
              p: wp.array(dtype=wp.vec3f), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.volume_sample_index(vid, p[i], wp.Volume.LINEAR, c, bg)


@wp.kernel
def k_index_v(vid: wp.uint64, c: wp.array(dtype=wp.vec3f), bg: wp.vec3f,
              p: wp.array(dtype=wp.vec3f), out: wp.array(dtype=wp.vec3f)):
    i = wp.tid()
    out[i] = wp.volume_sample_index(vid, p[i], wp.Volume.LINEAR, c, bg)


def test_float32_values_equal_the_sampling_core_and_gradients_agree():
    """A float grid and a vec3f grid of smooth non-linear values, and an index grid of the same
    voxels whose data are those values: the interpolation of the corners gives the core's
    (Warp's) samples exactly, and its adjoint with respect to the position is the core's
    gradient up to rounding."""
    vol, ijk = _index_grid()
    rng = np.random.default_rng(2)
    pts = (rng.uniform(-1.5, SIZE + 0.5, (64, 3))).astype(np.float32)
    x, y, z = (np.arange(SIZE, dtype=np.float64)[idx] for idx in np.ix_(*[range(SIZE)] * 3))
    values = np.sin(0.7 * x + 0.2) * np.cos(0.4 * y - 0.3) * (z - 3.5)
    values = np.broadcast_to(values, (SIZE,) * 3)

    f = wp.Volume.allocate((0, 0, 0), (SIZE - 1,) * 3, 1.0, bg_value=np.float32(0.25))
    f._store_dense(values.astype(np.float32))
    a = f.arrays()
    want = np.array([Q.volume_sample_f(*a, f.gtype, *p, LINEAR) for p in pts], np.float32)
    grad = np.array([Q.volume_sample_grad_f(*a, f.gtype, *p, LINEAR)[1] for p in pts],
                    np.float32)
    data = wp.array(values[tuple(ijk.T)].astype(np.float32), dtype=wp.float32)
    P = wp.array(pts, dtype=wp.vec3f, requires_grad=True)
    out = wp.zeros(len(pts), dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_index_f, len(pts), inputs=[vol.id, data, 0.25, P], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), want)
    tape.backward(grads={out: np.ones(len(pts), np.float32)})
    np.testing.assert_allclose(P.grad.numpy(), grad, rtol=1e-5, atol=1e-6)

    vvalues = np.stack([values, 2.0 * values - 1.0, np.cos(values)], -1)
    v = wp.Volume.allocate((0, 0, 0), (SIZE - 1,) * 3, 1.0, bg_value=(1.0, -2.0, 0.5))
    v._store_dense(vvalues.astype(np.float32))
    assert v.gtype == Q.GRID_VEC3F
    a = v.arrays()
    want = np.array([Q.volume_sample_v(*a, v.gtype, *p, LINEAR) for p in pts], np.float32)
    out = wp.zeros(len(pts), dtype=wp.vec3f)
    wp.launch(k_index_v, len(pts), inputs=[vol.id, wp.array(vvalues[tuple(ijk.T)].astype(
        np.float32), dtype=wp.vec3f), wp.vec3f(1.0, -2.0, 0.5), wp.array(pts, dtype=wp.vec3f)],
        outputs=[out])
    np.testing.assert_array_equal(out.numpy(), want)
