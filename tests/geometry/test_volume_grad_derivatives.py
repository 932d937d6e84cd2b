"""Derivatives through the gradient that ``wp.volume_sample_grad_f`` / ``volume_sample_grad``
assign to their output argument: a loss built from ``g`` differentiates with respect to the
sample point through the trilinear interpolation's mixed second derivatives, in reverse and
forward mode, against float64 central differences (issue 33). Points lie inside cells (at least
0.2 voxel from every face), where the interpolation is a polynomial, so the differences are
exact up to the samples' float32 rounding."""
import numpy as np
import pytest

import weft as wp

from .conftest import path

H = 5e-2  # the finite-difference step (index space); points stay inside their cell


@wp.kernel
def grad_loss_f(v: wp.uint64, uvw: wp.array(dtype=wp.vec3), mode: int,
                loss: wp.array(dtype=float), gout: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    g = wp.vec3()
    s = wp.volume_sample_grad_f(v, uvw[i], mode, g)
    gout[i] = g
    loss[i] = 0.5 * s + g[0] - 0.5 * g[1] + 0.25 * g[2]


@wp.kernel
def grad_loss_d(v: wp.uint64, uvw: wp.array(dtype=wp.vec3), mode: int,
                loss: wp.array(dtype=wp.float64), gout: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    g = wp.vec3d()
    s = wp.volume_sample_grad(v, uvw[i], mode, g, dtype=wp.float64)
    gout[i] = g
    loss[i] = wp.float64(0.5) * s + g[0] - wp.float64(0.5) * g[1] + wp.float64(0.25) * g[2]


def cell_points(lo, hi, n, seed, frac=(0.2, 0.8)):
    """``n`` index-space points in the cells between ``lo`` and ``hi``, with every fraction in
    ``frac`` (away from the cell's faces)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(lo, hi, size=(n, 3))
    return (base + rng.uniform(*frac, size=(n, 3))).astype(np.float32)


def central_differences(kernel, vol, p, mode, out_dtype):
    """d loss_i / d uvw_i (n x 3) in float64 from the kernel's values at p +- H e_c."""
    jac = np.zeros(p.shape)
    for c in range(3):
        vals = []
        for s in (1.0, -1.0):
            q = p.copy()
            q[:, c] += np.float32(s * H)
            out = wp.zeros(len(p), dtype=out_dtype)
            wp.launch(kernel, len(p), inputs=[vol.id, wp.array(q, dtype=wp.vec3), mode, out,
                                              gvec(out_dtype, len(p))])
            vals.append(out.numpy().astype(np.float64))
        step = (p[:, c] + np.float32(H)).astype(np.float64) - \
            (p[:, c] - np.float32(H)).astype(np.float64)  # the steps taken, in float32
        jac[:, c] = (vals[0] - vals[1]) / step
    return jac


def gvec(dtype, n):
    return wp.zeros(n, dtype=wp.vec3d if dtype is wp.float64 else wp.vec3)


def gout_of(kernel, vol, p, dtype):
    g = gvec(dtype, len(p))
    wp.launch(kernel, len(p), inputs=[vol.id, wp.array(p, dtype=wp.vec3), wp.Volume.LINEAR,
                                      wp.zeros(len(p), dtype=dtype), g])
    return g.numpy().astype(np.float64)


def double_grid():
    """A float64 grid (16^3 voxels) with nonzero mixed second derivatives (the shipped double
    grid's values are a sum of one-axis terms, whose mixed derivatives vanish)."""
    vol = wp.Volume.allocate((0, 0, 0), (15, 15, 15), 1.0, bg_value=np.float64(0.0))
    i, j, k = np.meshgrid(*[np.arange(16.0)] * 3, indexing="ij")
    vol._store_dense(3.0 * np.sin(0.7 * i) * np.cos(0.4 * j) * (k - 4.0))
    return vol


CASES = {  # kernel, grid, loss dtype, cells sampled (index space)
    "float32": (grad_loss_f, lambda: wp.Volume.load_from_nvdb(path("torus.nvdb")), wp.float32,
                (-15, 14)),
    "float64": (grad_loss_d, double_grid, wp.float64, (0, 14)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_output_differentiates_through_second_derivatives(case):
    kernel, grid, dtype, (lo, hi) = CASES[case]
    vol = grid()
    n = 64
    p = cell_points(lo, hi, n, seed=3)
    want = central_differences(kernel, vol, p, wp.Volume.LINEAR, dtype)
    scale = np.abs(want).max()
    assert scale > 0.01
    # reverse mode
    pts = wp.array(p, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(n, dtype=dtype, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[vol.id, pts, wp.Volume.LINEAR, loss, gvec(dtype, n)])
    tape.backward(grads={loss: np.ones(n)})
    np.testing.assert_allclose(pts.grad.numpy(), want, rtol=0, atol=1e-3 * scale)
    # most of it comes through the gradient output (the mixed second derivatives): the
    # sample's own part, 0.5 g, is far from the whole
    first_order = 0.5 * gout_of(kernel, vol, p, dtype)
    assert np.abs(want - first_order).max() > 0.3 * scale
    # forward mode, along a random direction per point
    d = np.random.default_rng(5).uniform(-1, 1, size=(n, 3)).astype(np.float32)
    pts3 = wp.array(p, dtype=wp.vec3)
    out3 = wp.zeros(n, dtype=dtype)
    t = wp.jvp(kernel, n, inputs=[vol.id, pts3, wp.Volume.LINEAR], outputs=[out3, gvec(dtype, n)],
               tangents={pts3: d})
    np.testing.assert_allclose(t[out3].numpy(), np.sum(want * d, axis=1), rtol=0,
                               atol=1e-3 * scale)


@pytest.mark.parametrize("case", sorted(CASES))
def test_closest_sampling_has_zero_derivatives(case):
    """CLOSEST reads one voxel: its value and gradient output (zero) are constant inside the
    rounding cell, so every derivative is zero (points 0.1-0.35 voxel from a voxel centre)."""
    kernel, grid, dtype, (lo, hi) = CASES[case]
    vol = grid()
    n = 32
    p = cell_points(lo, hi, n, seed=4, frac=(0.1, 0.35))
    assert np.all(central_differences(kernel, vol, p, wp.Volume.CLOSEST, dtype) == 0.0)
    pts = wp.array(p, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(n, dtype=dtype, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[vol.id, pts, wp.Volume.CLOSEST, loss, gvec(dtype, n)])
    assert np.any(loss.numpy() != 0)
    tape.backward(grads={loss: np.ones(n)})
    assert np.all(pts.grad.numpy() == 0.0)
    pts2 = wp.array(p, dtype=wp.vec3)
    out2 = wp.zeros(n, dtype=dtype)
    t = wp.jvp(kernel, n, inputs=[vol.id, pts2, wp.Volume.CLOSEST], outputs=[out2, gvec(dtype, n)],
               tangents={pts2: np.ones((n, 3), np.float32)})
    assert np.all(t[out2].numpy() == 0.0)
