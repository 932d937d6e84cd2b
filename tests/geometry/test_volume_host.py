"""Volume construction on the host (``allocate``, ``load_from_numpy``): metadata, leaf order,
voxel-data indices, stored values and transforms against Warp 1.19's (``volume_reference``)."""
import numpy as np
import pytest

from tests.geometry import drivers as D
from tests.geometry import make_volume_reference as M
from tests.geometry import volume_reference as W
from tests.geometry.test_nanovdb import _info
from weft.native.geometry.volume import Volume

CASES = {
    "ALLOC_F": lambda: Volume.allocate(min=[-10, -5000, 3], max=[9, 20, 11], voxel_size=0.5,
                                       bg_value=2.5),
    "ALLOC_V": lambda: Volume.allocate(min=[0.1, 0.2, 0.3], max=[1.0, 2.0, 3.0], voxel_size=0.1,
                                       bg_value=(1.0, 2.0, 3.0), translation=(0.05, 0.0, -0.05),
                                       points_in_world_space=True),
    "ALLOC_I": lambda: Volume.allocate(min=[0, 0, 0], max=[3, 3, 3], voxel_size=1.0,
                                       bg_value=7),
    "ALLOC_INDEX": lambda: Volume.allocate(min=[-9, 0, 0], max=[3, 3, 3],
                                           voxel_size=(1.0, 2.0, 0.5), bg_value=None),
    "TILES_WORLD": lambda: Volume.allocate_by_tiles(
        M.world_tile_points(), voxel_size=(0.3, 0.2, 0.7), bg_value=1.25,
        translation=(0.5, -1.0, 2.0)),
    "NUMPY_F": lambda: Volume.load_from_numpy(
        np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7), min_world=(1.0, 2.0, 3.0),
        voxel_size=0.5, bg_value=-1.0),
    "NUMPY_V": lambda: Volume.load_from_numpy(
        np.arange(9 * 2 * 3 * 3, dtype=np.float32).reshape(9, 2, 3, 3),
        min_world=(-1.0, 0.0, 0.25), voxel_size=(0.5, 0.25, 2.0), bg_value=(1.0, 0.0, -1.0)),
    "NUMPY_I": lambda: Volume.load_from_numpy(
        np.arange(3 * 4 * 5, dtype=np.int32).reshape(3, 4, 5), voxel_size=2.0, bg_value=-7),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_built_volumes_match_warp(vq, key):
    v = CASES[key]()
    assert _info(v) == getattr(W, f"{key}_INFO")
    np.testing.assert_array_equal(v.get_tiles()[:12].ravel(), getattr(W, f"{key}_TILES_HEAD"))
    qijk = M.ijk_points(seed=5, lo=-12, hi=24, n=200)
    a = v.arrays()
    idx = np.empty(len(qijk), np.int32)
    D.jit_index(vq["volume_lookup_index"], v.tree, v.index_values, v.gtype, qijk, idx)
    assert D.digest(idx) == getattr(W, f"{key}_LOOKUP_INDEX_DIGEST")
    if v.type_str == "float":
        out = np.empty(len(qijk), np.float32)
        D.jit_lookup(vq["volume_lookup_f"], *a, v.gtype, qijk, out)
        np.testing.assert_array_equal(out[:40], np.float32(getattr(W, f"{key}_LOOKUP_HEAD")))
        assert D.digest(out) == getattr(W, f"{key}_LOOKUP_DIGEST")
    if v.type_str == "Vec3f":
        out = np.empty((len(qijk), 3), np.float32)
        D.jit_lookup3(vq["volume_lookup_v"], *a, v.gtype, qijk, out)
        assert D.digest(out) == getattr(W, f"{key}_LOOKUP_V_DIGEST")
    if v.type_str == "int32":
        out = np.empty(len(qijk), np.int32)
        D.jit_lookup(vq["volume_lookup_i"], *a, v.gtype, qijk, out)
        assert D.digest(out) == getattr(W, f"{key}_LOOKUP_I_DIGEST")
    pts = M.points()
    xf = np.empty((len(pts), 4, 3), np.float32)
    for c, fn in enumerate(("volume_index_to_world", "volume_world_to_index",
                            "volume_index_to_world_dir", "volume_world_to_index_dir")):
        o = np.empty((len(pts), 3), np.float32)
        D.jit_xform(vq[fn], v.xform_f, pts, o)
        xf[:, c] = o
    assert D.digest(xf) == getattr(W, f"{key}_XFORM_DIGEST")


def test_allocation_types_and_errors():
    assert Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=np.float64(1)).type_str == "double"
    assert Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=np.int64(1)).type_str == "int64"
    assert Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=np.uint32(1)).type_str == "uint32"
    assert Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=[1, 2, 3, 4]).type_str == "Vec4f"
    assert Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=0.0,
                           dtype="Vec3d").type_str == "Vec3d"
    import weft as wp
    v = Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value=wp.vec3d(1, 2, 3))
    assert v.type_str == "Vec3d" and v.values.dtype == np.float64
    np.testing.assert_array_equal(v.values[:6], [1, 2, 3, 1, 2, 3])
    for bad in (0.0, -1.0, float("nan"), (1.0, 2.0)):
        with pytest.raises(ValueError):
            Volume.allocate([0, 0, 0], [1, 1, 1], bad)
    with pytest.raises(TypeError):
        Volume.allocate([0, 0, 0], [1, 1, 1], "1")
    with pytest.raises(ValueError):
        Volume.allocate([0, 0, 0], [1, 1, 1], 1.0, bg_value="x")
    with pytest.raises(ValueError):
        Volume.allocate_by_tiles(np.zeros((2, 3), np.int32), voxel_size=1.0,
                                 transform=np.eye(3))


def test_allocate_by_tiles_world_points_and_double_grid(vq):
    pts = np.array([[0.05, 0.05, 0.05], [0.95, 0.05, 0.05], [-0.4, 2.0, 0.0]], np.float32)
    v = Volume.allocate_by_tiles(pts, voxel_size=0.1, bg_value=np.float64(-2.0))
    np.testing.assert_array_equal(v.get_tiles(), [[-8, 16, 0], [0, 0, 0], [8, 0, 0]])
    a = v.arrays()
    assert vq["volume_lookup_d"](*a, v.gtype, 3, 4, 5) == -2.0
    vq["volume_store_s"](*a, v.gtype, 2, 3, 4, 5, np.float64(0.1))
    assert vq["volume_sample_d"](*a, v.gtype, np.float32(3), np.float32(4), np.float32(5),
                                 1) == 0.1
    s = vq["volume_sample_d"](*a, v.gtype, np.float32(3.5), np.float32(4), np.float32(5), 1)
    assert s == np.float64(np.float32(0.5)) * 0.1 + np.float64(np.float32(0.5)) * -2.0


def test_load_from_numpy_round_trip(vq):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((13, 9, 17)).astype(np.float32)
    v = Volume.load_from_numpy(a, min_world=(-1.0, 0.5, 2.0), voxel_size=0.25, bg_value=9.0)
    ijk = np.stack(np.meshgrid(np.arange(-2, 19), np.arange(-2, 19), np.arange(-2, 19),
                               indexing="ij"), axis=-1).reshape(-1, 3).astype(np.int32)
    out = np.empty(len(ijk), np.float32)
    D.jit_lookup(vq["volume_lookup_f"], *v.arrays(), v.gtype, ijk, out)
    inside = np.all((ijk >= 0) & (ijk < a.shape), axis=1)
    np.testing.assert_array_equal(out[inside], a[tuple(ijk[inside].T)])
    assert np.all(out[~inside] == 9.0)
    assert v.get_active_voxel_count() == v.get_voxel_count() == 16 * 16 * 24
