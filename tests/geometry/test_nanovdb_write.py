"""NanoVDB writing (``weft/geometry/nanovdb_write.py``, ``wp.Volume.array``/``save_to_nvdb``):
buffers of built volumes byte for byte equal to Warp 1.19's (``nvdb_write_reference.py``), the
shipped files loaded, saved and read back, the encoder's output read back by weft's reader
(every voxel, tile, transform, name, blind data), and, with Warp installed (marker ``warp``),
weft's files loaded and sampled by Warp."""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import weft as wp
from tests.geometry import make_nvdb_write_reference as M
from tests.geometry import nvdb_write_reference as R
from tests.geometry.conftest import DATA
from weft.native.geometry import nanovdb as nv
from weft.native.geometry.nanovdb_write import encode_grid, write_nvdb
from weft.native.geometry.volume import Volume as HostVolume
from weft.native.geometry.volume import _leaf_slots

ALL_FILES = sorted(f for f in os.listdir(DATA) if f.endswith(".nvdb"))


def _grids(vol):
    out = [vol]
    while (nxt := out[-1].load_next_grid()) is not None:
        out.append(nxt)
    return out


def _assert_same_grid(a, b):
    """Every decoded array and header field weft reads."""
    for f in ("tree", "values", "leaf_origins", "leaf_masks", "mat_f", "inv_mat_f", "vec_f",
              "mat_d", "inv_mat_d", "vec_d", "voxel_size", "background"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    for f in ("name", "grid_type", "grid_class", "channels", "upper_count", "lower_count",
              "leaf_count"):
        assert getattr(a, f) == getattr(b, f), f
    assert [(d.name, d.semantic, d.data_class, d.data_type, d.value_size, d.value_count,
             bytes(d.data)) for d in a.blind_data] == \
        [(d.name, d.semantic, d.data_class, d.data_type, d.value_size, d.value_count,
          bytes(d.data)) for d in b.blind_data]


@pytest.mark.parametrize("name", sorted(R.BUFFERS))
def test_built_buffers_equal_warps(name):
    if name == "NUMPY_F":     # through the host class (wp.Volume.allocate takes no dtype yet)
        v = HostVolume.load_from_numpy(M.DENSE, (1.0, 2.0, 3.0), 0.5, -1.0)
        buf = encode_grid(v.grid, v.tree, v.values)
    else:
        buf = M.cases(wp)[name]().array().numpy().tobytes()
    assert M.digest(buf) == R.BUFFERS[name]


@pytest.mark.parametrize("codec", ["none", "zip"])
@pytest.mark.parametrize("fname", ALL_FILES)
def test_shipped_files_save_and_reload(fname, codec, tmp_path):
    vol = wp.Volume.load_from_nvdb(os.path.join(DATA, fname))
    out = tmp_path / "out.nvdb"
    vol.save_to_nvdb(str(out), codec=codec)
    back = wp.Volume.load_from_nvdb(str(out))
    a, b = _grids(vol), _grids(back)
    assert len(a) == len(b) == a[0].grid.grid_count
    np.testing.assert_array_equal(vol.array().numpy(), back.array().numpy())
    for x, y in zip(a, b):
        _assert_same_grid(x.grid, y.grid)
        # the file's own bytes are kept (statistics, active tiles, checksum field)
        assert bytes(y.grid.raw) == bytes(x.grid.raw)


@pytest.mark.parametrize("fname", ALL_FILES)
def test_encoder_reads_back(fname):
    """encode_grid on a loaded grid's arrays (not its bytes): the reader gets them back."""
    for g in nv.read_nvdb(os.path.join(DATA, fname)):
        buf = encode_grid(g, g.tree, g.values)
        back = nv.decode_grid(buf)
        _assert_same_grid(g, back)
        np.testing.assert_array_equal(back.index_bbox[0], _active_min(g))
        assert back.tree_voxel_count == np.unpackbits(g.leaf_masks.view(np.uint8)).sum()


def _active_min(g):
    bits = np.unpackbits(g.leaf_masks.view(np.uint8).reshape(-1, 64), axis=1,
                         bitorder="little").astype(bool)
    n = np.arange(512)
    local = np.stack([n >> 6, (n >> 3) & 7, n & 7], axis=1)
    ijk = (g.leaf_origins[:, None, :].astype(np.int64) + local[None])[bits]
    return ijk.min(axis=0)


@pytest.mark.parametrize("bg, dtype", [(2.5, "float"), (1.5, "double"), (-3, "int32"),
                                       (7, "uint32"), (-9, "int64"), ((1.0, 2.0, 3.0), "Vec3f"),
                                       ((1.0, 2.0, 3.0), "Vec3d"), ((1, 2, 3, 4), "Vec4f"),
                                       ((1, 2, 3, 4), "Vec4d")])
def test_current_values_are_saved(bg, dtype, tmp_path):
    """Values changed after allocation (as volume_store does: the leaf slots) are written."""
    tiles = np.array([[0, 0, 0], [-16, 8, 4096]], np.int32)
    v = HostVolume.allocate_by_tiles(tiles, 0.25, bg, (1.0, -2.0, 0.5), dtype=dtype)
    n = 2 * 512 * v.channels
    v.values[:n] = (np.arange(n) % 97 - 40).astype(v.values.dtype)
    buf = encode_grid(v.grid, v.tree, v.values)
    write_nvdb(str(tmp_path / "v.nvdb"), [buf], "zip")
    back = HostVolume.load_from_nvdb(str(tmp_path / "v.nvdb"))
    np.testing.assert_array_equal(back.values, v.values)
    np.testing.assert_array_equal(back.tree, v.tree)
    assert back.type_str == dtype
    np.testing.assert_array_equal(back.grid.world_bbox, v.grid.world_bbox)


def test_loaded_grid_values_patched(tmp_path):
    vol = wp.Volume.load_from_nvdb(os.path.join(DATA, "warp_double.nvdb"))
    vol.values[:512] = np.arange(512) * 0.5
    vol.save_to_nvdb(str(tmp_path / "d.nvdb"))
    back = wp.Volume.load_from_nvdb(str(tmp_path / "d.nvdb"))
    np.testing.assert_array_equal(back.values, vol.values)


def test_save_errors(tmp_path):
    vol = wp.Volume.load_from_nvdb(os.path.join(DATA, "test_index_grid.nvdb"))
    with pytest.raises(RuntimeError, match="aliased"):
        vol.load_next_grid().save_to_nvdb(str(tmp_path / "x.nvdb"))
    with pytest.raises(RuntimeError, match="Unsupported codec"):
        vol.save_to_nvdb(str(tmp_path / "x.nvdb"), codec="lz4")
    if importlib.util.find_spec("blosc") is None:
        with pytest.raises(RuntimeError, match="blosc"):
            vol.save_to_nvdb(str(tmp_path / "x.nvdb"), codec="blosc")


def test_empty_grid_round_trip():
    v = wp.Volume.allocate_by_voxels(np.zeros((0, 3), np.int32), voxel_size=1.0)
    back = nv.decode_grid(v.array().numpy().tobytes())
    assert back.leaf_count == 0 and back.grid_type == nv.ON_INDEX
    np.testing.assert_array_equal(back.tree, v.tree)


_WARP_SCRIPT = r"""
import json, sys, hashlib, numpy as np, warp as wp
wp.config.quiet = True
wp.init()
@wp.kernel
def look(v: wp.uint64, ijk: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.float64),
         idx: wp.array(dtype=wp.int32), kind: int):
    t = wp.tid()
    i = ijk[t, 0]
    j = ijk[t, 1]
    k = ijk[t, 2]
    idx[t] = wp.volume_lookup_index(v, i, j, k)
    if kind == 0:
        out[t] = wp.float64(wp.volume_lookup_f(v, i, j, k))
    if kind == 1:
        out[t] = wp.volume_lookup(v, i, j, k, dtype=wp.float64)
    if kind == 2:
        out[t] = wp.float64(wp.volume_lookup_v(v, i, j, k)[1])
res = {}
for path, ijk, kind in json.loads(sys.argv[1]):
    v = wp.Volume.load_from_nvdb(open(path, "rb"))
    pts = wp.array(np.array(ijk, np.int32), dtype=wp.int32)
    out = wp.zeros(len(ijk), dtype=wp.float64)
    idx = wp.zeros(len(ijk), dtype=wp.int32)
    wp.launch(look, len(ijk), inputs=[v.id, pts, out, idx, kind])
    a = v.array().numpy()
    res[path] = [out.numpy().tolist(), idx.numpy().tolist(),
                 hashlib.sha256(a.tobytes()).hexdigest(), v.get_grid_info().type_str]
print("RESULT" + json.dumps(res))
"""


@pytest.mark.warp
def test_warp_reads_weft_files(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang is not installed")
    rng = np.random.default_rng(7)
    tiles = np.array([[0, 0, 0], [8, 0, 0], [-8, 16, 4096]], np.int32)
    jobs, expect = [], {}
    for kind, (bg, dtype) in enumerate([(2.5, "float"), (1.5, "double"), ((1.0, 2.0, 3.0),
                                                                           "Vec3f")]):
        v = HostVolume.allocate_by_tiles(tiles, 0.5, bg, (1.0, 2.0, 3.0), dtype=dtype)
        v.values[:-v.channels] = rng.normal(size=v.values.size - v.channels)
        path = str(tmp_path / f"{dtype}.nvdb")
        buf = encode_grid(v.grid, v.tree, v.values)
        write_nvdb(path, [buf], "zip")
        ijk = np.concatenate([v.get_voxels(), [[100, 100, 100], [-9, 16, 4096]]])
        jobs.append((path, ijk.tolist(), kind))
        vals = v.values.reshape(-1, v.channels)[:, 1 if kind == 2 else 0].astype(np.float64)
        slots = _leaf_slots(v, ijk[:, 0], ijk[:, 1], ijk[:, 2])
        bgv = vals[-1]
        expect[path] = ([float(vals[s]) if s >= 0 else float(bgv) for s in slots],
                        [int(s) for s in slots], hashlib.sha256(buf).hexdigest(), dtype)
    vox = wp.Volume.allocate_by_voxels(np.array([[1, 2, 3], [7, 8, 9], [-300, 4, 5]], np.int32),
                                       voxel_size=1.0)
    path = str(tmp_path / "voxels.nvdb")
    vox.save_to_nvdb(path)
    ijk = [[1, 2, 3], [7, 8, 9], [-300, 4, 5], [0, 0, 0], [1, 2, 4]]
    jobs.append((path, ijk, 0))
    expect[path] = ([0.0] * 5, [int(x) for x in _lookup_index(vox, ijk)],
                    hashlib.sha256(vox.array().numpy().tobytes()).hexdigest(), "OnIndex")
    script = tmp_path / "warp_reads.py"       # Warp needs its kernels' source in a file
    script.write_text(_WARP_SCRIPT)
    r = subprocess.run([sys.executable, str(script), json.dumps(jobs)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.split("RESULT", 1)[1])
    for path, (vals, idx, sha, type_str) in expect.items():
        g = got[path]
        assert g[3] == type_str
        assert g[2] == sha                     # Warp's buffer is weft's, byte for byte
        assert g[1] == idx
        if type_str == "OnIndex":
            assert idx == [1, 2, 0, -1, -1]    # ranked in leaf order (leaf (-304, 0, 0) first)
        else:
            np.testing.assert_array_equal(np.array(g[0]), np.array(vals, np.float64))


def _lookup_index(vol, ijk):
    a = np.asarray(ijk)
    s = _leaf_slots(vol, a[:, 0], a[:, 1], a[:, 2])
    return np.where(s >= 0, vol.values[np.maximum(s, 0)], -1)
