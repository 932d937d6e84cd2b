"""weft.native.simd: the vector cores behind tile_matmul and tile_sum, compiled against the
same order written as scalar loops."""
import numba
import numpy as np
import pytest

from weft.native import simd


@numba.njit(fastmath={"contract"}, error_model="numpy")
def _scalar_gemm(a, b):
    # each element summed over k in increasing order, each step fused (LLVM contracts the
    # multiply-add): the order and rounding Warp's CPU GEMM has, and weft's before simd
    c = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            p = a[i, k]
            for j in range(b.shape[1]):
                c[i, j] += p * b[k, j]
    return c


@numba.njit(error_model="numpy")
def _gemm(a, b):
    return simd.gemm(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_bits_every_block_and_tail(dtype):
    """Shapes that reach every path: 4-row blocks and single rows, 16- and 8-column panels
    and scalar columns, K of 0 and 1, a transposed (non-contiguous) operand."""
    r = np.random.default_rng(3)
    for m, k, n in ((16, 16, 16), (4, 1, 8), (5, 7, 25), (1, 3, 1), (13, 0, 9), (7, 33, 40),
                    (64, 64, 64), (3, 5, 17)):
        a = r.standard_normal((m, k)).astype(dtype)
        b = r.standard_normal((k, n)).astype(dtype)
        got = _gemm(a, b)
        assert got.dtype == dtype and got.shape == (m, n)
        np.testing.assert_array_equal(got, _scalar_gemm(a, b), err_msg=str((m, k, n)))
        # uncompiled, each step rounds twice: close, not equal
        np.testing.assert_allclose(simd.gemm(a, b), got, rtol=1e-5, atol=1e-5)
    a = r.standard_normal((9, 6)).astype(dtype)
    b = r.standard_normal((11, 9)).astype(dtype)
    np.testing.assert_array_equal(_gemm(a.T, b.T), _scalar_gemm(a.T.copy(), b.T.copy()))


def test_gemm_integers():
    r = np.random.default_rng(4)
    a = r.integers(-50, 50, (6, 9)).astype(np.int32)
    b = r.integers(-50, 50, (9, 21)).astype(np.int32)
    np.testing.assert_array_equal(_gemm(a, b), a @ b)


@numba.njit(error_model="numpy")
def _lanes(x):
    return simd.vsum(simd.vfma(simd.vload(x, 0, 8), simd.vsplat(x[8], 8),
                               simd.vload(x, 9, 8)))


def test_vector_primitives_compiled_and_not():
    x = np.arange(1, 18, dtype=np.float64)
    want = float(np.sum(x[:8] * x[8] + x[9:17]))
    assert _lanes(x) == want
    assert simd.vsum(simd.vfma(simd.vload(x, 0, 8), simd.vsplat(x[8], 8),
                               simd.vload(x, 9, 8))) == want
