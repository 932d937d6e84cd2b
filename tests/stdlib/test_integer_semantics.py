"""Integer and float ``%``, ``//`` and ``/`` with negative operands, as NVIDIA Warp 1.19 computes
them on the CPU (values printed by Warp for this kernel): ``%`` keeps the sign of the dividend
(C), ``//`` floors, integer ``/`` truncates toward zero."""
import numpy as np

import weft as wp


@wp.kernel
def ops(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array2d(dtype=int),
        fa: wp.array(dtype=float), fb: wp.array(dtype=float), fout: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = a[i] % b[i]
    out[i, 1] = a[i] // b[i]
    out[i, 2] = a[i] / b[i]
    fout[i, 0] = fa[i] % fb[i]
    fout[i, 1] = fa[i] // fb[i]


def test_matches_warp():
    a = np.array([-7, 7, -7, 7, 0], np.int32)
    b = np.array([2, -2, -2, 2, 3], np.int32)
    out = wp.zeros((5, 3), dtype=int)
    fout = wp.zeros((5, 2), dtype=float)
    wp.launch(ops, 5, inputs=[wp.array(a), wp.array(b), out, wp.array(a.astype(np.float32)),
                              wp.array(b.astype(np.float32)), fout])
    warp_int = [[-1, -4, -3], [1, -4, -3], [-1, 3, 3], [1, 3, 3], [0, 0, 0]]
    warp_float = [[-1.0, -4.0], [1.0, -4.0], [-1.0, 3.0], [1.0, 3.0], [0.0, 0.0]]
    np.testing.assert_array_equal(out.numpy(), warp_int)
    np.testing.assert_array_equal(fout.numpy(), warp_float)


@wp.kernel
def counts(a8: wp.array(dtype=wp.int8), a32: wp.array(dtype=wp.int32),
           u64: wp.array(dtype=wp.uint64), i64: wp.array(dtype=wp.int64),
           out: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    out[i, 0] = wp.bit_count(a8[i])
    out[i, 1] = wp.bit_count(a32[i])
    out[i, 2] = wp.bit_count(u64[i])
    out[i, 3] = wp.bit_count(i64[i])
    out[i, 4] = wp.bit_count(45)


def test_bit_count_of_the_twos_complement_form_as_warp():
    a8 = np.array([-1, 0, 7, -128], np.int8)
    a32 = np.array([-1, 0, 45, -2147483648], np.int32)
    u64 = np.array([2 ** 64 - 1, 0, 2 ** 63, 12345], np.uint64)
    i64 = np.array([-1, 0, -(2 ** 63), 2 ** 40 + 3], np.int64)
    out = wp.zeros((4, 5), dtype=wp.int32)
    wp.launch(counts, 4, inputs=[wp.array(a8, dtype=wp.int8), wp.array(a32, dtype=wp.int32),
                                 wp.array(u64, dtype=wp.uint64), wp.array(i64, dtype=wp.int64)],
              outputs=[out])

    def ones(values, bits):
        return [bin(int(v) & ((1 << bits) - 1)).count("1") for v in values]

    # Warp's documented examples: bit_count(45) == 4, bit_count(int8(-1)) == 8
    want = np.array([ones(a8, 8), ones(a32, 32), ones(u64, 64), ones(i64, 64), [4] * 4]).T
    np.testing.assert_array_equal(out.numpy(), want)
    assert out.numpy()[0, 0] == 8 and out.numpy()[0, 4] == 4


@wp.kernel
def narrow(u: wp.array(dtype=wp.uint32), s: wp.array(dtype=wp.int32),
           b: wp.array(dtype=wp.int8), out: wp.array(dtype=wp.int64)):
    x = u[0] - u[1]                      # wraps to 2**32 - 12
    out[0] = wp.int64(x % wp.uint32(1000))
    out[1] = wp.int64(x >> wp.uint32(4))
    out[2] = wp.int64((u[0] * u[2]) % wp.uint32(1000))
    y = s[0] + s[1]                      # int32 overflow wraps negative
    out[3] = wp.int64(wp.where(y < 0, 1, 0))
    out[4] = wp.int64(wp.uint32(0) - u[0])  # unsigned: 2**32 - 5
    out[5] = wp.int64(b[0] * b[1])       # int8: 100 * 3 = 300 wraps to 44
    out[6] = wp.int64(~u[1] >> wp.uint32(28))
    out[7] = wp.int64(s[1] << 30)


def test_narrow_integer_arithmetic_wraps_before_it_is_used():
    # the values Warp 1.19 computes for the same kernel (C's fixed-width arithmetic; signed
    # overflow is undefined in C++, so only the wrap Warp shows in practice, y < 0, is pinned)
    u = wp.array(np.array([5, 17, 4000000000], np.uint32), dtype=wp.uint32)
    s = wp.array(np.array([2 ** 31 - 1, 3, -2 ** 31], np.int32), dtype=wp.int32)
    b = wp.array(np.array([100, 3], np.int8), dtype=wp.int8)
    out = wp.zeros(8, dtype=wp.int64)
    wp.launch(narrow, 1, inputs=[u, s, b, out])
    np.testing.assert_array_equal(out.numpy(), [284, 268435455, 816, 1, 2 ** 32 - 5, 44, 15,
                                                -2 ** 30])
