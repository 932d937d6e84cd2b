"""tape.hvp through tile kernels: Hessian-vector products by forward over reverse (weft
differentiates the generated adjoint of a tile kernel once more), against central finite
differences of weft's own float64 gradients; and a clear error where a tile operation has no
second-order rule."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError
from tests.runtime.test_hvp import _fd_hvp, _grads, _hvp

N = 4
F64 = wp.float64


@wp.kernel
def mlp_energy(x: wp.array2d(dtype=F64), w: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    """A product, a map, a reduction and a max: each with a tangent of its adjoint."""
    a = wp.tile_load(x, shape=(N, N))
    b = wp.tile_load(w, shape=(N, N))
    c = wp.tile_matmul(a, b)
    d = wp.tile_map(wp.sin, c)
    s = wp.tile_sum(d * d) + wp.tile_max(wp.tile_map(wp.tanh, a)) * F64(2.0)
    wp.tile_atomic_add(out, s)


def _mlp_program(x, w):
    out = wp.zeros(1, dtype=F64, requires_grad=True)
    wp.launch_tiled(mlp_energy, dim=1, inputs=[x, w, out], block_dim=8)
    return out


def test_hvp_product_map_reduction_max():
    rng = np.random.default_rng(11)
    x0, w0 = rng.uniform(-1, 1, (N, N)), rng.uniform(-1, 1, (N, N))
    vs = [rng.normal(size=(N, N)), rng.normal(size=(N, N))]
    inputs = [(F64, None), (F64, None)]
    hv, g, _ = _hvp(_mlp_program, inputs, [x0, w0], vs)
    fd = _fd_hvp(_mlp_program, inputs, [x0, w0], vs)
    for h, f in zip(hv, fd):
        np.testing.assert_allclose(h, f, rtol=1e-6, atol=1e-7)
    for a, b in zip(g, _grads(_mlp_program, inputs, [x0, w0])):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@wp.kernel
def rows_store(x: wp.array2d(dtype=F64), y: wp.array2d(dtype=F64)):
    """Each block loads a row, squares it, broadcasts a transposed column into it, stores it."""
    i = wp.tid()
    r = wp.tile_load(x[i], shape=N)
    col = wp.tile_transpose(wp.tile_reshape(r, shape=(N, 1)))
    m = wp.tile_broadcast(col, shape=(2, N))
    e = m[1, 2] * r[0]
    q = wp.tile_map(wp.mul, r, r)
    wp.tile_store(y[i], wp.tile_map(wp.add, q, wp.tile_reshape(m[0], shape=N) * e))


@wp.kernel
def rows_loss(y: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    i = wp.tid()
    t = wp.tile_load(y[i], shape=N)
    wp.tile_atomic_add(out, wp.tile_sum(wp.tile_map(wp.exp, t * F64(0.5))) +
                       wp.tile_min(t) * wp.tile_min(t))


def _rows_program(x):
    y = wp.zeros((3, N), dtype=F64, requires_grad=True)
    out = wp.zeros(1, dtype=F64, requires_grad=True)
    wp.launch_tiled(rows_store, dim=3, inputs=[x, y], block_dim=4)
    wp.launch_tiled(rows_loss, dim=3, inputs=[y, out], block_dim=4)
    return out


def test_hvp_two_tile_launches_store_views_shapes():
    """A stored tile read by a second launch (the store's tangent), row views of arrays,
    reshape, transpose, broadcast, element reads and tile_min, on three blocks."""
    rng = np.random.default_rng(12)
    x0 = rng.uniform(-1, 1, (3, N))
    v = rng.normal(size=(3, N))
    inputs = [(F64, None)]
    (hv,), _, _ = _hvp(_rows_program, inputs, [x0], [v])
    (fd,) = _fd_hvp(_rows_program, inputs, [x0], [v])
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-7)


@wp.kernel
def acc_product(a: wp.array2d(dtype=F64), b: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    """The accumulating product (alpha, beta), a scan and a tile written from each thread's
    values, on a plain launch of N threads (each one's gradient in its own copy)."""
    i = wp.tid()
    ta = wp.tile_load(a, shape=(N, N))
    tb = wp.tile_load(b, shape=(N, N))
    c = wp.tile_ones(shape=(N, N), dtype=F64) * ta[0, 1]
    wp.tile_matmul(ta, tb, c, alpha=F64(0.5), beta=F64(2.0))
    s = wp.tile_scan_inclusive(wp.tile_reshape(c * c, shape=N * N))
    wp.tile_atomic_add(out, wp.tile_sum(s) * F64(0.01) + wp.tile_max(s) * F64(float(i)))


def _acc_program(a, b):
    out = wp.zeros(1, dtype=F64, requires_grad=True)
    wp.launch(acc_product, dim=N, inputs=[a, b, out])
    return out


def test_hvp_accumulating_product_scan_plain_launch():
    rng = np.random.default_rng(13)
    a0, b0 = rng.uniform(-1, 1, (N, N)), rng.uniform(-1, 1, (N, N))
    vs = [rng.normal(size=(N, N)), rng.normal(size=(N, N))]
    inputs = [(F64, None), (F64, None)]
    hv, _, _ = _hvp(_acc_program, inputs, [a0, b0], vs)
    fd = _fd_hvp(_acc_program, inputs, [a0, b0], vs)
    for h, f in zip(hv, fd):
        np.testing.assert_allclose(h, f, rtol=1e-6, atol=1e-7)


@wp.kernel
def chol_energy(a: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    t = wp.tile_load(a, shape=(N, N))
    L = wp.tile_cholesky(t)
    wp.tile_atomic_add(out, wp.tile_sum(L * L))


def test_hvp_through_an_operation_without_rule_is_a_clear_error():
    a = np.eye(N) * 3.0 + 0.1
    x = wp.array(a, dtype=F64, requires_grad=True)
    out = wp.zeros(1, dtype=F64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(chol_energy, dim=1, inputs=[x, out], block_dim=8)
    with pytest.raises(LaunchError, match="no second-order rule for '_wk.tile_cholesky_adj'"):
        tape.hvp(out, {x: np.ones((N, N))})
