"""``allocate_by_voxels``, rebuildable volumes, ``rebuild``, ``point_mask`` and the
``REBUILD_*`` status flags (``weft/geometry/volume_rebuild.py``), with the results Warp 1.19
gives on the CPU for the same calls (written out below; see the module docstring there)."""
import numpy as np
import pytest

import weft as wp
from weft.native.geometry import nanovdb as nv

V = wp.Volume


@wp.kernel
def _lookup(vol: wp.uint64, ijk: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.float32),
            idx: wp.array(dtype=wp.int32)):
    t = wp.tid()
    out[t] = wp.volume_lookup_f(vol, ijk[t, 0], ijk[t, 1], ijk[t, 2])
    idx[t] = wp.volume_lookup_index(vol, ijk[t, 0], ijk[t, 1], ijk[t, 2])


@wp.kernel
def _store(vol: wp.uint64, ijk: wp.array2d(dtype=wp.int32)):
    t = wp.tid()
    wp.volume_store_f(vol, ijk[t, 0], ijk[t, 1], ijk[t, 2], float(t + 1))


def test_allocate_by_voxels_as_warp():
    pts = np.array([[-1, -2, -3], [0, 0, 0], [1, 2, 3], [1, 2, 3], [4, 5, 6], [128, 0, 0]],
                   np.int32)
    v = V.allocate_by_voxels(wp.array(pts, dtype=wp.int32), voxel_size=1.0)
    assert v.get_grid_info().type_str == "OnIndex" and v.is_index
    assert not v.is_rebuildable and v.get_rebuild_info() == V.RebuildInfo(None, 0, 0, 0, 0)
    assert v.get_voxel_count() == 5
    assert v.get_active_stats() == V.ActiveStats(5, 3, 3, 2)
    # Warp's order: leaves (-8,-8,-8), (0,0,0), (128,0,0); in a leaf by i<<6|j<<3|k
    assert v.get_voxels().numpy().tolist() == [[-1, -2, -3], [0, 0, 0], [1, 2, 3], [4, 5, 6],
                                       [128, 0, 0]]
    assert v.get_tiles().numpy().tolist() == [[-8, -8, -8], [0, 0, 0], [128, 0, 0]]
    assert v.get_index_bounds() == ((-1, -2, -3), (128, 5, 6))
    # world-space points round to the nearest voxel through the inverse map
    w = V.allocate_by_voxels(pts.astype(np.float32) * 0.5 + np.float32([-1, 2, -3]),
                             voxel_size=0.5, translation=(-1.0, 2.0, -3.0))
    np.testing.assert_array_equal(w.get_voxels().numpy(), v.get_voxels().numpy())


def test_point_mask():
    pts = np.array([[0, 0, 0], [1, 2, 3], [1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int32)
    mask = wp.array(np.array([1, 1, 0, 0, 1], np.int32), dtype=wp.int32)
    v = V.allocate_by_voxels(pts, voxel_size=1.0, point_mask=mask)
    assert v.get_voxels().numpy().tolist() == [[0, 0, 0], [1, 2, 3], [7, 8, 9]]
    tiles = np.array([[0, 0, 0], [8, 0, 0], [16, 0, 0], [16, 0, 0]], np.int32)
    t = V.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=None,
                            point_mask=np.array([1, 0, 1, 0], np.int32))
    assert t.get_tiles().numpy().tolist() == [[0, 0, 0], [16, 0, 0]]
    none = V.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=1.0,
                               point_mask=np.zeros(4, np.int32))
    assert none.get_active_stats() == V.ActiveStats(0, 0, 0, 0)
    with pytest.raises(RuntimeError, match="point_mask"):
        V.allocate_by_voxels(pts, voxel_size=1.0, point_mask=np.ones(2, np.int32))


def test_rebuild_tiles_flags_and_values():
    status = np.zeros(1, np.uint32)
    v = V.allocate_by_tiles(np.array([[0, 0, 0]], np.int32), voxel_size=1.0, bg_value=2.5,
                            rebuildable=True, max_tiles=4, max_lower_nodes=4, max_upper_nodes=4,
                            status=status)
    assert status[0] == V.REBUILD_SUCCESS and v.is_rebuildable
    assert v.get_rebuild_info() == V.RebuildInfo("tiles", 2048, 4, 4, 4)
    assert (v.get_voxel_count(), v.get_tile_count()) == (2048, 4)      # capacities, as Warp
    assert v.get_active_stats() == V.ActiveStats(512, 1, 1, 1)
    vid = v.id
    ijk = np.array([[0, 0, 0], [3, 4, 5], [9, 1, 2], [1, 17, 0]], np.int32)
    wp.launch(_store, 4, inputs=[vid, wp.array(ijk, dtype=wp.int32)])
    out, idx = wp.zeros(4, dtype=wp.float32), wp.zeros(4, dtype=wp.int32)
    wp.launch(_lookup, 4, inputs=[vid, wp.array(ijk, dtype=wp.int32), out, idx])
    assert out.numpy().tolist() == [1.0, 2.0, 2.5, 2.5]
    v.rebuild(np.array([[8, 0, 0], [0, 0, 0], [0, 16, 0]], np.int32), status=status)
    assert status[0] == V.REBUILD_SUCCESS
    assert v.get_active_stats() == V.ActiveStats(1536, 3, 1, 1)
    assert v.get_tiles().numpy().tolist() == [[0, 0, 0], [0, 16, 0], [8, 0, 0]]
    assert v.id == vid                    # same id, now reading the rebuilt arrays
    wp.launch(_lookup, 4, inputs=[vid, wp.array(ijk, dtype=wp.int32), out, idx])
    assert out.numpy().tolist() == [2.5, 2.5, 2.5, 2.5]    # values reset to the background
    assert idx.numpy().tolist() == [0, 229, 1098, 584]     # leaf slots in the new order
    # over capacity: leaf and voxel flags (as Warp: 9), topology kept
    big = np.array([[8, 0, 0], [0, 0, 0], [0, 16, 0], [0, 0, 4096], [4096, 0, 0], [16, 0, 0]],
                   np.int32)
    v.rebuild(big, status=status)
    assert status[0] == V.REBUILD_LEAF_CAPACITY_EXCEEDED | V.REBUILD_VOXEL_CAPACITY_EXCEEDED
    assert v.get_active_stats() == V.ActiveStats(1536, 3, 1, 1)
    v.rebuild(np.array([[np.nan, 0, 0]], np.float32), status=status)
    assert status[0] == V.REBUILD_INVALID_INPUT
    # the saved grid is the rebuilt one
    back = nv.decode_grid(v.array().numpy().tobytes())
    np.testing.assert_array_equal(back.tree, v.tree)
    np.testing.assert_array_equal(back.values, v.values)


def test_rebuild_voxels():
    status = np.zeros(1, np.uint32)
    v = V.allocate_by_voxels(np.array([[0, 0, 0]], np.int32), voxel_size=1.0,
                             max_active_voxels=4, max_leaf_nodes=4, max_lower_nodes=4,
                             max_upper_nodes=4, status=status)
    assert v.get_rebuild_info() == V.RebuildInfo("voxels", 4, 4, 4, 4)
    assert v.get_voxel_count() == 4 and v.get_active_stats() == V.ActiveStats(1, 1, 1, 1)
    pts = np.array([[1, 2, 3], [1, 2, 3], [9, 9, 9], [7, 8, 9]], np.int32)
    v.rebuild(pts, status=status)
    assert status[0] == 0 and v.get_active_stats() == V.ActiveStats(3, 3, 1, 1)
    out, idx = wp.zeros(4, dtype=wp.float32), wp.zeros(4, dtype=wp.int32)
    wp.launch(_lookup, 4, inputs=[v.id, wp.array(pts, dtype=wp.int32), out, idx])
    assert idx.numpy().tolist() == [0, 0, 2, 1]                         # as Warp
    over = np.array([[1, 2, 3], [4, 5, 6], [9, 9, 9], [7, 8, 9], [100, 0, 0]], np.int32)
    v.rebuild(over, status=status)
    assert status[0] == V.REBUILD_VOXEL_CAPACITY_EXCEEDED                # as Warp: 8
    assert v.get_active_stats() == V.ActiveStats(3, 3, 1, 1)
    # an initial topology over capacity leaves the volume empty
    e = V.allocate_by_voxels(np.array([[1, 2, 3], [4, 5, 6]], np.int32), voxel_size=1.0,
                             max_active_voxels=1, max_leaf_nodes=1, max_lower_nodes=1,
                             max_upper_nodes=1, status=status)
    assert status[0] & V.REBUILD_VOXEL_CAPACITY_EXCEEDED
    assert e.get_active_stats() == V.ActiveStats(0, 0, 0, 0)


def test_rebuild_errors():
    v = V.allocate_by_voxels(np.array([[0, 0, 0]], np.int32), voxel_size=1.0)
    with pytest.raises(RuntimeError, match="not rebuildable"):
        v.rebuild(np.array([[1, 2, 3]], np.int32))
    with pytest.raises(ValueError, match="positive"):
        V.allocate_by_voxels(np.array([[0, 0, 0]], np.int32), voxel_size=1.0,
                             max_active_voxels=0)
    with pytest.raises(RuntimeError, match="status"):
        V.allocate_by_voxels(np.array([[0, 0, 0]], np.int32), voxel_size=1.0, rebuildable=True,
                             status=np.zeros(1, np.int32))
    with pytest.raises(RuntimeError, match="voxel_points"):
        V.allocate_by_voxels(np.zeros((3, 2), np.int32), voxel_size=1.0)
    with pytest.raises(ValueError, match="finite"):
        V.allocate_by_voxels(np.array([[np.inf, 0, 0]], np.float32), voxel_size=1.0)
