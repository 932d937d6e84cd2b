"""Tile loads and stores of scalar arrays at every kind of offset (``weft.native.tile_memory``):
inside the array, overhanging it on either side of either axis, and wholly outside. A load reads
zero where the tile overhangs its array and a store skips those elements, as Warp pads a tile;
both are checked element by element against loops written here, compiled and uncompiled
(the copies of rows index with unsigned integers, which only the offsets' bounds keep right),
and once end to end through a kernel storing at negative and overhanging offsets."""
import itertools

import numpy as np
import pytest

import weft as wp
from weft.native import tile_memory

OFFSETS = (-9, -3, -1, 0, 1, 4, 7, 30)


def _store2(a, o0, o1, t):
    for i, j in itertools.product(range(t.shape[0]), range(t.shape[1])):
        if 0 <= o0 + i < a.shape[0] and 0 <= o1 + j < a.shape[1]:
            a[o0 + i, o1 + j] = t[i, j]


def _load2(a, o0, o1, n0, n1):
    out = np.zeros((n0, n1), a.dtype)
    for i, j in itertools.product(range(n0), range(n1)):
        if 0 <= o0 + i < a.shape[0] and 0 <= o1 + j < a.shape[1]:
            out[i, j] = a[o0 + i, o1 + j]
    return out


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_loads_and_stores_at_offsets_in_and_outside_the_array(compiled, dtype):
    def fn(name):
        f = getattr(tile_memory, name)
        return f if compiled else f.py_func
    rng = np.random.default_rng(3)
    a = (rng.random((6, 7)) * 100).astype(dtype)
    t = (rng.random((3, 5)) * 100).astype(dtype) + 1
    for o0, o1 in itertools.product(OFFSETS, OFFSETS):
        got, want = a.copy(), a.copy()
        fn("tile_store2")(got, np.int32(o0), np.int32(o1), t)
        _store2(want, o0, o1, t)
        np.testing.assert_array_equal(got, want, err_msg=f"store2 at {o0, o1}")
        np.testing.assert_array_equal(fn("tile_load2")(a, np.int32(o0), np.int32(o1), 3, 5),
                                      _load2(a, o0, o1, 3, 5), err_msg=f"load2 at {o0, o1}")
        v, w = a[0].copy(), a[0].copy()
        fn("tile_store1")(v, np.int32(o0), t[0])
        _store2(w[None], 0, o0, t[:1])
        np.testing.assert_array_equal(v, w, err_msg=f"store1 at {o0}")
        np.testing.assert_array_equal(fn("tile_load1")(a[0], np.int32(o1), 5),
                                      _load2(a[:1], 0, o1, 1, 5)[0], err_msg=f"load1 at {o1}")


@wp.kernel
def shifted_copy(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float),
                 offs: wp.array2d(dtype=int)):
    i, _lane = wp.tid()
    t = wp.tile_load(src, shape=(3, 5), offset=(offs[i, 0], offs[i, 1]))
    wp.tile_store(dst, t + 1.0, offset=(offs[i, 2], offs[i, 3]))


def test_a_kernel_loads_and_stores_overhanging_tiles():
    rng = np.random.default_rng(4)
    a = rng.random((6, 7)).astype(np.float32)
    offs = np.array([[-2, 4, 3, -3], [1, -4, -1, 5], [4, 5, 8, 0]], np.int32)
    for row in offs:
        src, dst = wp.array(a), wp.zeros((6, 7), dtype=float)
        wp.launch_tiled(shifted_copy, dim=[1], inputs=[src, dst, wp.array(row[None])],
                        block_dim=1)
        want = np.zeros((6, 7), np.float32)
        _store2(want, row[2], row[3], _load2(a, row[0], row[1], 3, 5) + np.float32(1))
        np.testing.assert_array_equal(dst.numpy(), want)
