"""Volume query cores against Warp 1.19, bit for bit: values written by
``make_volume_reference.py`` into ``volume_reference.py`` (special points literally, 2048 random
points as SHA-256 digests of Warp's float32/int32 outputs). Every query runs compiled
(``numba.njit``) on all points and uncompiled (plain Python) on the special points."""
import numpy as np
import pytest

from tests.geometry import drivers as D
from tests.geometry import make_volume_reference as M
from tests.geometry import volume_reference as W
from tests.geometry.conftest import path, read
from weft.native.geometry import volume_query as Q
from weft.native.geometry.volume import Volume

PTS = M.points()
NSP = len(M.special_points())
PTS_NF = M.nonfinite_points()
IJK = M.ijk_points()


def run(vq, compiled, loop, fn, *args):
    """Run ``loop_<loop>`` of core ``fn`` compiled (``vq``) or as plain Python."""
    if compiled:
        getattr(D, "jit_" + loop)(vq[fn], *args)
    else:
        getattr(D, "loop_" + loop)(getattr(Q, fn), *args)


def lit(a):
    return np.array(a, dtype=np.float32)


def check(got, digest, head=None, n_head=None):
    if head is not None:
        np.testing.assert_array_equal(np.ravel(got[:n_head]), lit(head))
    assert D.digest(got) == digest


@pytest.fixture(scope="module")
def vols():
    return {name: Volume.load_from_nvdb(path(name)) for name in
            ("test_grid.nvdb", "torus.nvdb", "test_int32_grid.nvdb", "test_vec_grid.nvdb")}


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
@pytest.mark.parametrize("name,key", [("test_grid.nvdb", "FLOAT"), ("torus.nvdb", "TORUS")])
def test_sample_f_and_gradient(vq, vols, compiled, name, key):
    v = vols[name]
    pts = PTS if compiled else PTS[:NSP]
    for mode, mname in ((0, "CLOSEST"), (1, "LINEAR")):
        out = np.empty(len(pts), np.float32)
        grad = np.empty((len(pts), 3), np.float32)
        run(vq, compiled, "grad", "volume_sample_grad_f", *v.arrays(), v.gtype, pts, mode, out,
            grad)
        np.testing.assert_array_equal(out[:NSP], lit(getattr(W, f"{key}_{mname}_SPECIAL")))
        np.testing.assert_array_equal(grad[:NSP].ravel(),
                                      lit(getattr(W, f"{key}_{mname}_GRAD_SPECIAL")))
        out2 = np.empty(len(pts), np.float32)
        run(vq, compiled, "sample", "volume_sample_f", *v.arrays(), v.gtype, pts, mode, out2)
        np.testing.assert_array_equal(out, out2)
        if compiled:
            assert D.digest(out) == getattr(W, f"{key}_{mname}_DIGEST")
            assert D.digest(grad) == getattr(W, f"{key}_{mname}_GRAD_DIGEST")
        nf = np.empty(len(PTS_NF), np.float32)
        run(vq, compiled, "sample", "volume_sample_f", *v.arrays(), v.gtype, PTS_NF, mode, nf)
        np.testing.assert_array_equal(nf, lit(getattr(W, f"{key}_{mname}_NONFINITE")))


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
@pytest.mark.parametrize("name,key", [("test_grid.nvdb", "FLOAT"), ("torus.nvdb", "TORUS")])
def test_lookup_f_index_and_transforms(vq, vols, compiled, name, key):
    v = vols[name]
    ijk = IJK if compiled else IJK[:60]
    out = np.empty(len(ijk), np.float32)
    run(vq, compiled, "lookup", "volume_lookup_f", *v.arrays(), v.gtype, ijk, out)
    idx = np.empty(len(ijk), np.int32)
    run(vq, compiled, "index", "volume_lookup_index", v.tree, v.index_values, v.gtype,
        ijk, idx)
    np.testing.assert_array_equal(out[:40], lit(getattr(W, f"{key}_LOOKUP_HEAD")))
    np.testing.assert_array_equal(idx[:40], getattr(W, f"{key}_LOOKUP_INDEX_HEAD"))
    if compiled:
        assert D.digest(out) == getattr(W, f"{key}_LOOKUP_DIGEST")
        assert D.digest(idx) == getattr(W, f"{key}_LOOKUP_INDEX_DIGEST")
    pts = PTS if compiled else PTS[:NSP]
    xf = np.empty((len(pts), 4, 3), np.float32)
    xd = np.empty((len(pts), 4, 3), np.float64)
    for c, fn in enumerate(("volume_index_to_world", "volume_world_to_index",
                            "volume_index_to_world_dir", "volume_world_to_index_dir")):
        o = np.empty((len(pts), 3), np.float32)
        run(vq, compiled, "xform", fn, v.xform_f, pts, o)
        xf[:, c] = o
        o = np.empty((len(pts), 3), np.float64)
        run(vq, compiled, "xform", fn + "_d", v.xform_d, pts.astype(np.float64), o)
        xd[:, c] = o
    np.testing.assert_array_equal(xf[:8].ravel(), lit(getattr(W, f"{key}_XFORM_HEAD")))
    np.testing.assert_array_equal(xd[:2].ravel(), getattr(W, f"{key}_XFORM_D_HEAD"))
    if compiled:
        assert D.digest(xf) == getattr(W, f"{key}_XFORM_DIGEST")
        assert D.digest(xd) == getattr(W, f"{key}_XFORM_D_DIGEST")


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
def test_int32_grid(vq, vols, compiled):
    v = vols["test_int32_grid.nvdb"]
    ijk = IJK if compiled else IJK[:60]
    pts = PTS[:len(ijk)]
    look, samp, lin = (np.empty(len(ijk), np.int32) for _ in range(3))
    run(vq, compiled, "lookup", "volume_lookup_i", *v.arrays(), v.gtype, ijk, look)
    run(vq, compiled, "sample_i", "volume_sample_i", *v.arrays(), v.gtype, pts, samp)
    run(vq, compiled, "sample_generic", "volume_sample_int", *v.arrays(), v.gtype, Q.GRID_INT32,
        np.int32(0), pts, 1, lin)
    for nm, a in (("LOOKUP", look), ("SAMPLE", samp), ("LINEAR", lin)):
        np.testing.assert_array_equal(a[:40], getattr(W, f"INT_{nm}_HEAD"))
        if compiled:
            assert D.digest(a) == getattr(W, f"INT_{nm}_DIGEST")


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
def test_vec3_grid(vq, vols, compiled):
    v = vols["test_vec_grid.nvdb"]
    pts = PTS if compiled else PTS[:NSP]
    for mode, mname in ((0, "CLOSEST"), (1, "LINEAR")):
        out = np.empty((len(pts), 3), np.float32)
        run(vq, compiled, "sample3", "volume_sample_v", *v.arrays(), v.gtype, pts, mode, out)
        val = np.empty((len(pts), 3), np.float32)
        jac = np.empty((len(pts), 9), np.float32)
        run(vq, compiled, "grad3", "volume_sample_grad_v3", *v.arrays(), v.gtype, Q.GRID_VEC3F,
            np.float32(0), pts, mode, val, jac)
        np.testing.assert_array_equal(out, val)
        np.testing.assert_array_equal(out[:NSP].ravel(), lit(getattr(W, f"VEC_{mname}_SPECIAL")))
        np.testing.assert_array_equal(jac[:6].ravel(), lit(getattr(W, f"VEC_{mname}_JAC_SPECIAL")))
        if compiled:
            assert D.digest(out) == getattr(W, f"VEC_{mname}_DIGEST")
            assert D.digest(jac) == getattr(W, f"VEC_{mname}_JAC_DIGEST")
    if compiled:
        out = np.empty((len(IJK), 3), np.float32)
        run(vq, compiled, "lookup3", "volume_lookup_v", *v.arrays(), v.gtype, IJK, out)
        assert D.digest(out) == W.VEC_LOOKUP_DIGEST


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
def test_index_grids_sample_voxel_data(vq, compiled):
    v = Volume.load_from_nvdb(read("test_index_grid.nvdb"))
    ipts = M.points(seed=3, lo=-17.0, hi=17.0)
    if not compiled:
        ipts = ipts[:200]
    for gi, g in enumerate((v, v.load_next_grid())):
        n = g.get_voxel_count()
        data = np.arange(n, dtype=np.float32) * np.float32(1.5) + np.float32(1.0)
        datav = np.arange(3 * n, dtype=np.float32).reshape(n, 3) - np.float32(5.0)
        a = (g.tree, g.index_values, g.gtype)
        ijk = M.ijk_points(lo=-17, hi=17)
        idx = np.empty(len(ijk), np.int32)
        run(vq, True, "index", "volume_lookup_index", *a, ijk, idx)
        assert D.digest(idx) == getattr(W, f"INDEX{gi}_LOOKUP_INDEX_DIGEST")
        look = np.empty(len(ijk), np.float32)
        run(vq, compiled, "lookup", "volume_lookup_f", *g.arrays(), g.gtype, ijk[:50], look[:50])
        assert np.all(look[:50] == 0)                        # wrong type: Warp returns 0
        for mode, mname in ((0, "CLOSEST"), (1, "LINEAR")):
            out = np.empty(len(ipts), np.float32)
            run(vq, compiled, "sample_index", "volume_sample_index_s", *a, data, np.float32(7.5),
                np.float32(0), ipts, mode, out)
            np.testing.assert_array_equal(out[:30], lit(getattr(W, f"INDEX{gi}_{mname}_HEAD")))
            outv = np.empty((len(ipts), 3), np.float32)
            run(vq, compiled, "sample_index3", "volume_sample_index_v3", *a, datav,
                (np.float32(1), np.float32(-2), np.float32(0.5)), np.float32(0), ipts, mode, outv)
            if compiled:
                assert D.digest(out) == getattr(W, f"INDEX{gi}_{mname}_DIGEST")
                assert D.digest(outv) == getattr(W, f"INDEX{gi}_{mname}_V_DIGEST")
        out = np.empty(len(ipts), np.float32)
        grad = np.empty((len(ipts), 3), np.float32)
        run(vq, compiled, "grad_index", "volume_sample_grad_index_s", *a, data, np.float32(7.5),
            np.float32(0), ipts, 1, out, grad)
        if compiled:
            assert (D.digest(out), D.digest(grad)) == getattr(W, f"INDEX{gi}_GRAD_DIGEST")


def test_sample_index_on_a_regular_grid(vq, vols):
    v = vols["test_grid.nvdb"]
    data = np.sin(np.arange(v.get_voxel_count(), dtype=np.float32))
    out = np.empty(len(PTS), np.float32)
    run(vq, True, "sample_index", "volume_sample_index_s", v.tree, v.index_values,
        v.gtype, data, np.float32(-3), np.float32(0), PTS, 1, out)
    assert D.digest(out) == W.FLOAT_SAMPLE_INDEX_DIGEST


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
def test_store_writes_leaf_voxels_only(vq, compiled):
    ijk = np.array(W.STORE_IJK, np.int32).reshape(-1, 3)
    v = Volume.load_from_nvdb(path("test_grid.nvdb"))
    new = np.arange(len(ijk), dtype=np.float32) * np.float32(10) + np.float32(0.5)
    run(vq, compiled, "store", "volume_store_f", *v.arrays(), v.gtype, ijk, new)
    out = np.empty(len(ijk), np.float32)
    run(vq, compiled, "lookup", "volume_lookup_f", *v.arrays(), v.gtype, ijk, out)
    np.testing.assert_array_equal(out, lit(W.STORE_AFTER))
    # a store of the wrong type writes nothing
    before = v.values.copy()
    run(vq, compiled, "store", "volume_store_i", *v.arrays(), v.gtype, ijk,
        np.arange(len(ijk), dtype=np.int32))
    np.testing.assert_array_equal(before, v.values)
    v = Volume.load_from_nvdb(path("test_vec_grid.nvdb"))
    newv = np.arange(3 * len(ijk), dtype=np.float32).reshape(-1, 3)
    run(vq, compiled, "store3", "volume_store_v", *v.arrays(), v.gtype, ijk, newv)
    outv = np.empty((len(ijk), 3), np.float32)
    run(vq, compiled, "lookup3", "volume_lookup_v", *v.arrays(), v.gtype, ijk, outv)
    np.testing.assert_array_equal(outv.ravel(), lit(W.STORE_V_AFTER))


def test_wrong_grid_type_and_mode_read_zero(vq, vols):
    v = vols["test_grid.nvdb"]
    a = v.arrays()
    for fn in (Q.volume_sample_v, vq["volume_sample_v"]):
        assert fn(*a, v.gtype, 1.0, 2.0, 3.0, 1) == (0.0, 0.0, 0.0)
    for fn in (Q.volume_sample_f, vq["volume_sample_f"]):
        assert fn(*a, v.gtype, 1.5, 2.0, 3.0, 2) == 0.0          # unknown sampling mode
        assert fn(*a, 2, 1.5, 2.0, 3.0, 1) == 0.0                # a double grid
    assert Q.volume_sample_grad_f(*a, v.gtype, 1.5, 2, 3, 7) == (0, (0, 0, 0))
    assert Q.volume_lookup_i(*a, v.gtype, 1, 2, 3) == 0


def test_corner_helpers_agree_with_sampling(vq, vols):
    """``volume_corners_*`` (for the differentiable path) return the values LINEAR weights."""
    v = vols["test_vec_grid.nvdb"]
    f = vols["torus.nvdb"]
    for p in PTS[:NSP + 40]:
        c = Q.volume_corners_s(*f.arrays(), f.gtype, Q.GRID_FLOAT, np.float32(0), *p)
        _, fx, fy, fz = Q.volume_cell(f.tree, *p)
        w = Q.vdb_weights(fx, fy, fz)
        acc = np.float32(0)
        for n in range(8):
            acc = acc + w[n] * c[n]
        assert acc == Q.volume_sample_f(*f.arrays(), f.gtype, *p, 1)
        cv = vq["volume_corners_v3"](*v.arrays(), v.gtype, Q.GRID_VEC3F, np.float32(0), *p)
        assert len(cv) == 8 and all(len(t) == 3 for t in cv)


TYPES = {  # name: (grid type, zero, channels, lookup loop/core, sample loop/core)
    "double": (Q.GRID_DOUBLE, np.float64(0), 1, ("lookup_g", "volume_lookup_s"),
               ("sample_generic", "volume_sample_s")),
    "int64": (Q.GRID_INT64, np.int64(0), 1, ("lookup_g", "volume_lookup_s"),
              ("sample_generic", "volume_sample_int")),
    "uint32": (Q.GRID_UINT32, np.uint32(0), 1, ("lookup_g", "volume_lookup_s"),
               ("sample_generic", "volume_sample_int")),
    "Vec3d": (Q.GRID_VEC3D, np.float64(0), 3, ("lookup_g3", "volume_lookup_v3"),
              ("sample_g3", "volume_sample_v3")),
    "Vec4f": (Q.GRID_VEC4F, np.float32(0), 4, ("lookup_g4", "volume_lookup_v4"),
              ("sample_g4", "volume_sample_v4")),
    "Vec4d": (Q.GRID_VEC4D, np.float64(0), 4, ("lookup_g4", "volume_lookup_v4"),
              ("sample_g4", "volume_sample_v4")),
}


@pytest.mark.parametrize("name", sorted(TYPES))
def test_other_value_types(vq, name):
    """double, int64, uint32, Vec3d, Vec4f and Vec4d grids (written by Warp's save_to_nvdb):
    lookups, CLOSEST and LINEAR samples through the generic cores, as Warp's."""
    from tests.geometry.test_nanovdb import _info
    gtype, zero, ch, (lloop, lfn), (sloop, sfn) = TYPES[name]
    v = Volume.load_from_nvdb(path(f"warp_{name}.nvdb"))
    assert v.gtype == gtype and _info(v) == getattr(W, f"TYPE_{name}_INFO")
    ijk = M.ijk_points(seed=7, lo=-12, hi=20, n=400)
    pts = M.points(seed=8, lo=-12.0, hi=20.0)[:len(ijk)]
    shape = (len(ijk),) if ch == 1 else (len(ijk), ch)
    out = np.zeros(shape, zero.dtype)
    run(vq, True, lloop, lfn, *v.arrays(), v.gtype, gtype, zero, ijk, out)
    assert D.digest(out) == getattr(W, f"TYPE_{name}_LOOKUP_DIGEST")
    for mode, label in ((0, "CLOSEST"), (1, "LINEAR")):
        out = np.zeros(shape, zero.dtype)
        run(vq, True, sloop, sfn, *v.arrays(), v.gtype, gtype, zero, pts, mode, out)
        if mode == 1:
            np.testing.assert_array_equal(out[:3].ravel(), getattr(W, f"TYPE_{name}_LINEAR_HEAD"))
        assert D.digest(out) == getattr(W, f"TYPE_{name}_{label}_DIGEST")
