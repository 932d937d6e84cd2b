"""weft.utils (Warp's warp.utils array helpers); expected values from Warp 1.19."""
import numpy as np
import pytest

import weft as wp

U = wp.utils


def test_array_sum():
    a = wp.array([1.0, 2.0, 3.5], dtype=float)
    s = U.array_sum(a)
    assert s == np.float32(6.5) and s.dtype == np.float32
    assert U.array_sum(a, value_count=2) == np.float32(3.0)
    v = U.array_sum(wp.array([[1, 2, 3], [4, 5, 6]], dtype=wp.vec3))
    np.testing.assert_array_equal(v, np.array([5.0, 7.0, 9.0], np.float32))
    m = wp.array(np.arange(6, dtype=np.float64).reshape(2, 3), dtype=wp.float64)
    assert U.array_sum(m, axis=0).numpy().tolist() == [[3.0, 5.0, 7.0]]
    assert U.array_sum(m, axis=1).numpy().tolist() == [[3.0], [12.0]]
    assert U.array_sum(m, axis=-1, value_count=2).numpy().tolist() == [[1.0], [7.0]]
    out = wp.zeros(1, dtype=float)
    assert U.array_sum(a, out=out) is out and out.numpy().tolist() == [6.5]
    with pytest.raises(IndexError):
        U.array_sum(m, axis=2)


def test_array_inner():
    a = wp.array([1.0, 2.0, 3.5], dtype=float)
    assert U.array_inner(a, a) == np.float32(17.25)
    assert U.array_inner(wp.array([[1, 2, 3]], dtype=wp.vec3),
                         wp.array([[4, 5, 6]], dtype=wp.vec3)) == np.float32(32.0)
    m = wp.array(np.arange(6, dtype=np.float64).reshape(2, 3), dtype=wp.float64)
    assert U.array_inner(m, m, axis=1).numpy().tolist() == [[5.0], [50.0]]
    with pytest.raises(ValueError, match="same shape"):
        U.array_inner(a, wp.zeros(2))


def test_array_scan():
    for inclusive, expected in ((True, [1, 3, 6, 10]), (False, [0, 1, 3, 6])):
        out = wp.empty(4, dtype=int)
        U.array_scan(wp.array([1, 2, 3, 4], dtype=int), out, inclusive=inclusive)
        assert out.numpy().tolist() == expected
    ov = wp.empty(2, dtype=wp.vec2)
    U.array_scan(wp.array([[1, 2], [3, 4]], dtype=wp.vec2), ov)
    assert ov.numpy().tolist() == [[1.0, 2.0], [4.0, 6.0]]
    with pytest.raises(RuntimeError, match="sizes do not match"):
        U.array_scan(wp.zeros(3), wp.zeros(4))


def test_radix_sort_pairs():
    k = wp.array([5, -1, 3, -1, 0, 0, 0, 0], dtype=wp.int32)
    v = wp.array([0, 1, 2, 3, 0, 0, 0, 0], dtype=wp.int32)
    U.radix_sort_pairs(k, v, 4)
    assert k.numpy()[:4].tolist() == [-1, -1, 3, 5] and v.numpy()[:4].tolist() == [1, 3, 2, 0]
    kf = wp.array([0.5, -2.0, 1.5, -0.0, 0, 0, 0, 0], dtype=float)
    vf = wp.array(np.arange(8), dtype=wp.int32)
    U.radix_sort_pairs(kf, vf, 4)
    assert kf.numpy()[:4].tolist() == [-2.0, -0.0, 0.5, 1.5]
    assert vf.numpy()[:4].tolist() == [1, 3, 0, 2]
    ku = wp.array([7, 1, 6, 2, 0, 0, 0, 0], dtype=wp.uint32)
    vu = wp.array(np.arange(8), dtype=wp.int32)
    U.radix_sort_pairs(ku, vu, 4, begin_bit=1, end_bit=2)
    assert ku.numpy()[:4].tolist() == [1, 7, 6, 2] and vu.numpy()[:4].tolist() == [1, 0, 2, 3]
    with pytest.raises(RuntimeError, match="large enough to contain 2\\*count elements"):
        U.radix_sort_pairs(k, v, 5)


def test_segmented_sort_and_runlength_encode():
    ks = wp.array([3, 1, 2, 9, 8, 0, 0, 0, 0, 0], dtype=wp.int32)
    vs = wp.array(np.arange(10), dtype=wp.int32)
    U.segmented_sort_pairs(ks, vs, 5, wp.array([0, 3, 5], dtype=wp.int32))
    assert ks.numpy()[:5].tolist() == [1, 2, 3, 8, 9] and vs.numpy()[:5].tolist() == [1, 2, 0, 4, 3]
    rv, rl = wp.empty(6, dtype=int), wp.empty(6, dtype=int)
    n = U.runlength_encode(wp.array([1, 1, 1, 2, 2, 3], dtype=int), rv, rl)
    assert n == 3 and rv.numpy()[:3].tolist() == [1, 2, 3] and rl.numpy()[:3].tolist() == [3, 2, 1]
    rc = wp.zeros(1, dtype=int)
    assert U.runlength_encode(wp.array([4, 4, 5], dtype=int), rv, rl, run_count=rc) is rc
    assert rc.numpy().tolist() == [2]


def test_array_cast():
    out = wp.zeros(3, dtype=wp.int32)
    U.array_cast(wp.array([1.7, -2.7, 3.2], dtype=float), out)
    assert out.numpy().tolist() == [1, -2, 3]  # truncation, as Warp
