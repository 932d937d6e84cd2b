"""``wp.Volume``'s Python API as Warp 1.19 has it: value dtype, Warp arrays from ``get_tiles``,
``get_voxels`` and ``feature_array``, ``GridInfo`` fields as Warp vector/matrix values, and
volumes made from a raw grid buffer (``wp.Volume(data)``, ``load_from_address``).

Expected values come from the host-level reader (``weft.native.geometry.volume``, itself checked against
Warp's output in test_nanovdb.py) and from Warp 1.19's output on the same files."""
import numpy as np
import pytest

import weft as wp
from tests.geometry.conftest import path, read
from weft.native.geometry import nanovdb as nv
from weft.native.geometry.volume import Volume as HostVolume

# Warp 1.19: Volume.dtype of the test files
DTYPES = {"test_grid.nvdb": wp.float32, "test_int32_grid.nvdb": wp.int32,
          "test_vec_grid.nvdb": wp.vec3f, "test_index_grid.nvdb": None, "torus.nvdb": wp.float32}


def _load(name):
    with open(path(name), "rb") as f:
        return wp.Volume.load_from_nvdb(f)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_dtype_tiles_voxels_and_grid_info_have_warps_types(name):
    v = _load(name)
    host = HostVolume.load_from_nvdb(read(name))
    assert v.dtype is DTYPES[name]
    tiles, voxels = v.get_tiles(), v.get_voxels()
    for got, want in ((tiles, host.get_tiles()), (voxels, host.get_voxels())):
        assert isinstance(got, wp.array) and got.dtype is wp.int32 and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    gi = v.get_grid_info()
    assert isinstance(gi.translation, wp.vec3f) and isinstance(gi.transform_matrix, wp.mat33f)
    hi = host.get_grid_info()
    np.testing.assert_array_equal(np.array(gi.translation), hi.translation)
    np.testing.assert_array_equal(np.array(gi.transform_matrix).reshape(3, 3),
                                  hi.transform_matrix)


def test_get_tiles_and_voxels_fill_an_out_array_of_either_layout():
    v = _load("test_grid.nvdb")
    want = v.get_tiles().numpy()
    as_vec = wp.empty(len(want), dtype=wp.vec3i)
    assert v.get_tiles(out=as_vec) is as_vec
    np.testing.assert_array_equal(as_vec.numpy(), want)
    rows = wp.zeros((len(want) + 2, 3), dtype=wp.int32)
    v.get_tiles(out=rows)
    np.testing.assert_array_equal(rows.numpy()[:len(want)], want)
    with pytest.raises(RuntimeError, match="at least 64 rows"):
        v.get_tiles(out=wp.empty(3, dtype=wp.vec3i))
    with pytest.raises(RuntimeError, match="vec3i"):
        v.get_tiles(out=wp.empty(64, dtype=wp.vec3f))


def test_feature_arrays_are_warp_arrays_over_the_blind_data():
    v = _load("test_index_grid.nvdb")
    grid = nv.read_nvdb(read("test_index_grid.nvdb"))[0]
    raw = grid.blind_data[0].data
    info = v.get_feature_array_info(0)
    # Warp 1.19: ('fvdb_jdatafloat32', value_size 1, 416 values, type '?')
    assert (info.name, info.value_size, info.value_count, info.type_str) == \
        ("fvdb_jdatafloat32", 1, 416, "?")
    assert info.ptr != 0
    data = v.feature_array(0)
    assert data.dtype is wp.uint8 and data.shape == (416,)
    np.testing.assert_array_equal(data.numpy(), raw)
    as_f32 = v.feature_array(0, dtype=wp.float32)
    assert as_f32.shape == (104,)
    np.testing.assert_array_equal(as_f32.numpy(), raw.view(np.float32))
    with pytest.raises(RuntimeError, match="Cannot cast"):
        v.feature_array(0, dtype=wp.vec3d)       # 24 bytes do not divide 416


def _raw_grid(name):
    """The first grid's raw buffer (no file header), as NanoVDB keeps it in memory."""
    return nv.split_grids(read(name))[0][0]


def test_a_volume_from_a_raw_grid_buffer_or_an_address_equals_the_loaded_file():
    want = _load("test_vec_grid.nvdb")
    raw = _raw_grid("test_vec_grid.nvdb")
    data = wp.array(np.frombuffer(raw, np.uint8), dtype=wp.uint8)
    keep = np.frombuffer(raw, np.uint8).copy()
    for v in (wp.Volume(data), wp.Volume.load_from_address(keep.ctypes.data),
              wp.Volume.load_from_address(keep.ctypes.data, len(raw))):
        assert v.dtype is wp.vec3f
        np.testing.assert_array_equal(v.get_voxels().numpy(), want.get_voxels().numpy())
        np.testing.assert_array_equal(v.values, want.values)
        np.testing.assert_array_equal(v.tree, want.tree)
    with pytest.raises(RuntimeError, match="Invalid grid buffer pointer"):
        wp.Volume.load_from_address(0)
    with pytest.raises(TypeError, match="NanoVDB grid buffer"):
        wp.Volume(None)
    with pytest.raises(ValueError):
        wp.Volume(wp.array(np.zeros(64, np.uint8), dtype=wp.uint8))


def test_the_public_constructors_take_warps_arguments():
    # load_from_numpy went through allocate without its dtype (a TypeError on every call)
    dense = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    v = wp.Volume.load_from_numpy(dense, min_world=(1.0, 2.0, 3.0), voxel_size=0.5, bg_value=-1.0,
                                  device="cpu")
    host = HostVolume.load_from_numpy(dense, (1.0, 2.0, 3.0), 0.5, -1.0)
    assert v.dtype is wp.float32
    np.testing.assert_array_equal(v.values, host.values)
    np.testing.assert_array_equal(v.tree, host.tree)
    tiles = wp.array(np.array([[0, 0, 0], [9, 0, 0]], np.int32), dtype=wp.int32)
    t = wp.Volume.allocate_by_tiles(tiles, voxel_size=0.1, bg_value=wp.vec4d(1.0, 2.0, 3.0, 4.0),
                                    device="cpu")
    assert t.dtype is wp.vec4d and t.get_grid_info().type_str == "Vec4d"
    np.testing.assert_array_equal(t.get_tiles().numpy(), [[0, 0, 0], [8, 0, 0]])
    a = wp.Volume.allocate([0, 0, 0], [3, 3, 3], 1.0, bg_value=2, device="cpu")
    assert a.dtype is wp.int32 and a.get_tile_count() == 1


def test_del_frees_the_id_once_and_is_harmless_on_a_bare_instance():
    from weft.native.geometry import descriptors as D
    wp.Volume.__new__(wp.Volume).__del__()
    v = _load("test_grid.nvdb")
    vid = v.id
    assert vid in D._LIVE
    v.__del__()
    assert vid not in D._LIVE
    v.__del__()


def test_a_rebuildable_volume_below_capacity_writes_only_its_voxels_and_tiles():
    """Warp 1.19: ``get_voxels(out)``/``get_tiles(out)`` write the rows of the voxels and tiles
    the volume has, not its capacity's (the test_volume_rebuildable pattern)."""
    v = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0,
                                     rebuildable=True, max_active_voxels=4, max_leaf_nodes=4,
                                     max_lower_nodes=4, max_upper_nodes=4)
    pts = wp.array([[1, 2, 3], [1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=wp.int32)
    v.rebuild(pts, point_mask=wp.array([1, 1, 0, 1], dtype=wp.int32))
    assert v.get_voxel_count() == 4
    out = wp.full((4, 3), -999, dtype=wp.int32)
    v.get_voxels(out=out)
    rows = out.numpy()
    written = rows[np.any(rows != -999, axis=1)]
    np.testing.assert_array_equal(written[np.lexsort(written.T[::-1])], [[1, 2, 3], [7, 8, 9]])
    assert v.get_voxels().shape == (4, 3)
    t = wp.Volume.allocate_by_tiles(wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0,
                                    bg_value=None, rebuildable=True, max_tiles=4,
                                    max_lower_nodes=4, max_upper_nodes=4)
    t.rebuild(wp.array([[8, 0, 0], [0, 16, 0]], dtype=wp.int32))
    out = wp.full((4, 3), -999, dtype=wp.int32)
    t.get_tiles(out=out)
    rows = out.numpy()
    written = rows[np.any(rows != -999, axis=1)]
    np.testing.assert_array_equal(written[np.lexsort(written.T[::-1])], [[0, 16, 0], [8, 0, 0]])


@wp.kernel
def _voxel_counts(a: wp.uint64, b: wp.uint64, c: wp.uint64, out: wp.array(dtype=wp.int32)):
    out[0] = wp.volume_voxel_count(a)
    out[1] = wp.volume_voxel_count(b)
    out[2] = wp.volume_voxel_count(c)


def test_volume_voxel_count_in_kernels_is_the_hosts_count():
    """Warp 1.19: the number of indexable voxels (active voxels of an OnIndex grid, 512 per
    leaf otherwise, the capacity of a rebuildable volume), also after a rebuild."""
    pts = wp.array([[1, 2, 3], [4, 5, 6], [40, 5, 6]], dtype=wp.int32)
    on_index = wp.Volume.allocate_by_voxels(pts, voxel_size=1.0)
    dense = _load("test_grid.nvdb")
    growing = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32),
                                           voxel_size=1.0, rebuildable=True,
                                           max_active_voxels=8, max_leaf_nodes=4,
                                           max_lower_nodes=4, max_upper_nodes=4)
    out = wp.zeros(3, dtype=wp.int32)
    wp.launch(_voxel_counts, 1, inputs=[on_index.id, dense.id, growing.id], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [3, 64 * 512, 8])
    assert [on_index.get_voxel_count(), dense.get_voxel_count()] == [3, 64 * 512]
    small = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0,
                                         rebuildable=True, max_active_voxels=2,
                                         max_leaf_nodes=2, max_lower_nodes=2, max_upper_nodes=2)
    small.rebuild(wp.array([[9, 9, 9]], dtype=wp.int32))
    wp.launch(_voxel_counts, 1, inputs=[small.id, small.id, small.id], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])
