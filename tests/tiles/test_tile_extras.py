"""Smaller tile features: ``tile_matmul``'s ``precision=`` and mixed dtypes, ``tile_scatter_add``
with one lane per block (values against numpy, the gradient against float64 central
differences or analytic values)."""
from typing import Any

import numpy as np
import pytest

import weft as wp


@wp.kernel
def mm_tf32(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    a = wp.tile_load(A, shape=(4, 3))
    b = wp.tile_load(B, shape=(3, 5))
    c = wp.tile_matmul(a, b, precision="tf32")
    wp.tile_store(C, c)


def test_matmul_precision_tf32_is_float32_on_the_cpu():
    rng = np.random.default_rng(7)
    A_np = rng.standard_normal((4, 3)).astype(np.float32)
    B_np = rng.standard_normal((3, 5)).astype(np.float32)
    C = wp.zeros((4, 5), dtype=float)
    wp.launch_tiled(mm_tf32, dim=[1], inputs=[wp.array(A_np), wp.array(B_np), C], block_dim=8)
    np.testing.assert_allclose(C.numpy(), A_np.astype(np.float64) @ B_np.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


@wp.kernel
def mm_fp8(A: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    a = wp.tile_load(A, shape=(2, 2))
    wp.tile_store(C, wp.tile_matmul(a, a, precision="fp8"))


@wp.kernel
def mm_tf32_half(A: wp.array2d(dtype=wp.float16), C: wp.array2d(dtype=wp.float16)):
    a = wp.tile_load(A, shape=(2, 2))
    wp.tile_store(C, wp.tile_matmul(a, a, precision="tf32"))


def test_matmul_precision_refusals():
    A = wp.zeros((2, 2), dtype=float)
    with pytest.raises(wp.KernelError, match="'default' or 'tf32'"):
        wp.launch_tiled(mm_fp8, dim=[1], inputs=[A, A], block_dim=8)
    H = wp.zeros((2, 2), dtype=wp.float16)
    with pytest.raises(TypeError, match="requires float32 tiles"):
        wp.launch_tiled(mm_tf32_half, dim=[1], inputs=[H, H], block_dim=8)


@wp.kernel
def scatter_one_lane(x: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x, shape=4, offset=i * 4)
    wp.tile_scatter_add(t, idx[i], x[i * 4 + 1] * x[i * 4 + 1], idx[i] >= 0)
    wp.tile_store(out, t, offset=i * 4)


def test_scatter_add_one_lane_values_and_gradient():
    rng = np.random.default_rng(8)
    x_np = rng.random(8).astype(np.float32)
    idx_np = np.array([2, -1], dtype=np.int32)   # the second block has nothing to add
    x = wp.array(x_np, requires_grad=True)
    out = wp.zeros(8, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(scatter_one_lane, dim=[2], inputs=[x, wp.array(idx_np), out],
                        block_dim=4)

    def f(xv):
        o = xv.copy()
        o[2] += xv[1] ** 2
        return o

    np.testing.assert_allclose(out.numpy(), f(x_np.astype(np.float64)), rtol=1e-6)
    w = rng.random(8)
    tape.backward(grads={out: wp.array(w.astype(np.float32))})
    x64, h = x_np.astype(np.float64), 1e-6
    fd = np.array([(np.dot(w, f(x64 + h * e)) - np.dot(w, f(x64 - h * e))) / (2 * h)
                   for e in np.eye(8)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5)


@wp.kernel
def axpy_into_broadcast(bias: wp.array(dtype=float), src: wp.array2d(dtype=float),
                        out: wp.array2d(dtype=float), out_bias: wp.array(dtype=float)):
    b = wp.tile_load(bias, shape=3)
    dest = wp.tile_broadcast(b, shape=(4, 3))      # every row aliases b's elements
    s = wp.tile_load(src, shape=(4, 3))
    wp.tile_axpy(2.0, s, dest)                      # each element of b takes its 4 adds
    wp.tile_store(out, dest)
    wp.tile_store(out_bias, b)


def test_axpy_into_a_broadcast_view_values_and_gradient():
    rng = np.random.default_rng(9)
    bias_np = rng.random(3).astype(np.float32)
    src_np = rng.random((4, 3)).astype(np.float32)
    bias = wp.array(bias_np, requires_grad=True)
    src = wp.array(src_np, requires_grad=True)
    out = wp.zeros((4, 3), dtype=float, requires_grad=True)
    out_bias = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(axpy_into_broadcast, dim=[1], inputs=[bias, src, out, out_bias],
                        block_dim=4)
    new_bias = bias_np + 2.0 * src_np.sum(axis=0)
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(new_bias, (4, 3)), rtol=1e-6)
    np.testing.assert_allclose(out_bias.numpy(), new_bias, rtol=1e-6)
    w = rng.random((4, 3))
    tape.backward(grads={out: wp.array(w.astype(np.float32))})
    # d/dbias = column sums of w; d/dsrc[i, j] = 2 * sum_i' w[i', j]
    np.testing.assert_allclose(bias.grad.numpy(), w.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(src.grad.numpy(), np.broadcast_to(2.0 * w.sum(axis=0), (4, 3)),
                               rtol=1e-5)


HALF = wp.constant(4)


@wp.kernel
def reshape_arith(a: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=HALF * 2)
    wp.tile_store(out, wp.tile_reshape(t, shape=(HALF // 2, (HALF + 4) // 2)))


def test_reshape_shape_of_constant_arithmetic():
    a_np = np.arange(8, dtype=np.float32)
    out = wp.zeros((2, 4), dtype=float)
    wp.launch_tiled(reshape_arith, dim=[1], inputs=[wp.array(a_np), out], block_dim=4)
    np.testing.assert_array_equal(out.numpy(), a_np.reshape(2, 4))


@wp.kernel
def reshape_strided(out: wp.array(dtype=float)):
    t = wp.tile_ones(shape=(4, 4), dtype=float)
    wp.tile_store(out, wp.tile_reshape(t[::2, ::2], shape=(4,)))


def test_reshape_of_a_strided_view_is_refused():
    with pytest.raises(wp.KernelError, match="requires a contiguous tile"):
        wp.launch_tiled(reshape_strided, dim=[1], inputs=[wp.zeros(4, dtype=float)],
                        block_dim=4)


@wp.func
def weighted_pair(terms: Any, x: wp.array(dtype=float), i: int, j: int):
    # a generic func given a tile (MuJoCo Warp's make_hessian_entry): its specialisation's
    # name is made from the tile's type
    return terms[0] * x[i] * x[j] + terms[1] * x[j]


@wp.kernel
def pair_sums(x: wp.array(dtype=float), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(w, shape=(2,))
    out[0] = weighted_pair(t, x, 0, 1)
    out[1] = weighted_pair(t, x, 1, 2)


def test_generic_func_given_a_tile_values_and_gradient():
    x0 = np.array([0.5, -1.5, 2.0], dtype=np.float32)
    w0 = np.array([3.0, 0.25], dtype=np.float32)
    x = wp.array(x0, dtype=float, requires_grad=True)
    w = wp.array(w0, dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(pair_sums, dim=[1], inputs=[x, w], outputs=[out], block_dim=1)
    want = [w0[0] * x0[0] * x0[1] + w0[1] * x0[1], w0[0] * x0[1] * x0[2] + w0[1] * x0[2]]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    tape.backward(grads={out: np.ones(2, dtype=np.float32)})
    # d/dx of the sum: x1 w0, x0 w0 + w1 + x2 w0, x1 w0 + w1
    gx = [w0[0] * x0[1], w0[0] * x0[0] + w0[1] + w0[0] * x0[2], w0[0] * x0[1] + w0[1]]
    gw = [x0[0] * x0[1] + x0[1] * x0[2], x0[1] + x0[2]]
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-6)


@wp.kernel
def mm_mixed(A: wp.array2d[float], B: wp.array2d[wp.float16], C: wp.array2d[wp.float64]):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(4, 2), dtype=wp.float64)
    for k in range(2):                                 # Warp's example_tile_matmul, smaller
        a = wp.tile_load(A, shape=(4, 3), offset=(i * 4, k * 3))
        b = wp.tile_load(B, shape=(3, 2), offset=(k * 3, j * 2))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * 4, j * 2))


def test_matmul_of_mixed_dtypes_accumulates_in_the_outputs_dtype():
    """float32 times float16 into float64, as Warp's example_tile_matmul: each operand element
    converted to float64 before its multiply-add (Warp's GEMM), and the gradients of both
    operands in their own dtypes."""
    rng = np.random.default_rng(8)
    a_np = rng.random((8, 6), dtype=np.float32)
    b_np = rng.random((6, 4)).astype(np.float16)
    A = wp.array(a_np, requires_grad=True)
    B = wp.array(b_np, dtype=wp.float16, requires_grad=True)
    C = wp.zeros((8, 4), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mm_mixed, dim=(2, 2), inputs=[A, B], outputs=[C], block_dim=8)
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    np.testing.assert_allclose(C.numpy(), a64 @ b64, rtol=1e-14)
    g = rng.random((8, 4))
    tape.backward(grads={C: wp.array(g, dtype=wp.float64)})
    np.testing.assert_allclose(A.grad.numpy(), (g @ b64.T).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(B.grad.numpy().astype(np.float64),
                               (a64.T @ g).astype(np.float16).astype(np.float64), rtol=2e-3)
    da = rng.random((8, 6), dtype=np.float32)        # forward mode: dC = dA @ B
    tan = tape.forward({A: da})
    dc = tan[C].numpy() if hasattr(tan[C], "numpy") else tan[C]
    np.testing.assert_allclose(dc, da.astype(np.float64) @ b64, rtol=1e-12)


@wp.kernel(enable_backward=False)
def arange_counts(a: wp.array(dtype=wp.float32), b: wp.array(dtype=wp.float32),
                  c: wp.array(dtype=wp.float64)):
    # float32 holds [0, 3) with step 1 exactly: three elements (counted in double: four)
    wp.tile_store(a, wp.tile_arange(0.0, 3.0000001, 0.99999999, dtype=wp.float32))
    # a nonempty range whose float32 quotient underflows keeps its start
    wp.tile_store(b, wp.tile_arange(0.0, 1.0e-30, 2.0, dtype=wp.float32))
    # float64 holds the bounds as written: (0.3 - 0.0) / 0.1 = 2.9999999999999996: three
    wp.tile_store(c, wp.tile_arange(0.0, 0.3, 0.1, dtype=wp.float64))


def test_tile_arange_counts_from_the_bounds_the_element_type_holds():
    """Warp 1.19's count: bounds and quotient at the element type, at least one element."""
    a = wp.full(4, -1.0, dtype=wp.float32)
    b = wp.full(2, -1.0, dtype=wp.float32)
    c = wp.full(4, -1.0, dtype=wp.float64)
    wp.launch_tiled(arange_counts, dim=1, inputs=[a, b, c], block_dim=8)
    np.testing.assert_array_equal(a.numpy(), [0.0, 1.0, 2.0, -1.0])
    np.testing.assert_array_equal(b.numpy(), [0.0, -1.0])
    np.testing.assert_allclose(c.numpy(), [0.0, 0.1, 0.2, -1.0])
