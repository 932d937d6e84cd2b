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


@numba.njit(error_model="numpy")
def _copy(dst, d0, src, s0, n):
    simd.copy_block(dst, d0, src, s0, n)


@numba.njit(error_model="numpy")
def _copy_typed_strided(dst, src):
    simd.copy_block(dst[:, 0:dst.shape[1]], 0, src[:, 0:src.shape[1]], 0, src.size)


def test_copy_block_and_the_whole_row_tile_copies():
    """copy_block's vector steps and tail, for C arrays and for arrays typed strided (numpy's
    slices then), and the tile loads and stores that use it for whole rows: equal to numpy's
    slicing, rows outside the array skipped."""
    from weft.native import tiles
    src = np.arange(60, dtype=np.float32).reshape(6, 10)
    for d0, s0, n in ((0, 0, 60), (3, 5, 37), (7, 0, 16), (0, 1, 15)):
        dst = np.zeros((7, 10), np.float32)
        _copy(dst, d0, src, s0, n)
        want = np.zeros(70, np.float32)
        want[d0:d0 + n] = src.reshape(-1)[s0:s0 + n]
        np.testing.assert_array_equal(dst.reshape(-1), want)
    wide = np.zeros((7, 10), np.float64)   # another dtype: each element converted
    _copy(wide, 3, src, 5, 37)
    want = np.zeros(70)
    want[3:40] = src.reshape(-1)[5:42]
    np.testing.assert_array_equal(wide.reshape(-1), want)
    dst = np.zeros((6, 10), np.float32)
    _copy_typed_strided(dst, src)   # slices typed 'A', contiguous at run time
    np.testing.assert_array_equal(dst, src)
    a = np.arange(48, dtype=np.float64).reshape(8, 6)
    np.testing.assert_array_equal(tiles.tile_load2(a, np.int32(2), np.int32(0), 4, 6), a[2:6])
    np.testing.assert_array_equal(tiles.tile_load2(a, np.int32(2), np.int32(1), 4, 5),
                                  a[2:6, 1:6])
    out = np.zeros((8, 6))
    t = np.arange(1, 25, dtype=np.float64).reshape(4, 6)
    tiles.tile_store2(out, np.int32(-1), np.int32(0), t)       # row 0 of t is outside
    want = np.zeros((8, 6))
    want[0:3] = t[1:]
    np.testing.assert_array_equal(out, want)
    tiles.tile_store2(out, np.int32(6), np.int32(0), t)        # rows 2 and 3 are outside
    want[6:8] = t[:2]
    np.testing.assert_array_equal(out, want)
