"""The NanoVDB reader on real files: layouts, metadata (against Warp), every voxel's value
(against an independent pure-Python traversal), file variants (raw, uncompressed, several
chunks or segments) and the errors for unsupported files."""
import struct
import zlib

import numpy as np
import pytest

from tests.geometry import drivers as D
from tests.geometry import nvdb_reference as ref
from tests.geometry import volume_reference as W
from tests.geometry.conftest import path, read
from weft.native.geometry import nanovdb as nv
from weft.native.geometry.volume import Volume

# PNanoVDB's constants table (root background, root size, tile value, tile size, upper table,
# upper size, lower table, lower size, leaf table, leaf size, table stride), per grid type
PNANOVDB = {
    1: (28, 64, 20, 32, 8256, 270400, 1088, 33856, 96, 2144, 8),
    2: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 128, 4224, 8),
    4: (28, 64, 20, 32, 8256, 270400, 1088, 33856, 96, 2144, 8),
    5: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 128, 4224, 8),
    6: (28, 96, 20, 32, 8256, 532544, 1088, 66624, 128, 6272, 16),
    7: (32, 128, 24, 64, 8288, 794720, 1120, 99424, 160, 12448, 24),
    10: (28, 64, 20, 32, 8256, 270400, 1088, 33856, 96, 2144, 8),
    17: (28, 96, 20, 64, 8288, 532576, 1120, 66656, 128, 8320, 16),
    18: (32, 160, 24, 64, 8320, 1056896, 1152, 132224, 160, 16544, 32),
    19: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 80, 96, 8),
    20: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 80, 96, 8),
    21: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 80, 160, 8),
    22: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 80, 160, 8),
}
INFO = {"test_grid.nvdb": W.FLOAT_INFO, "torus.nvdb": W.TORUS_INFO,
        "test_int32_grid.nvdb": W.INT_INFO, "test_vec_grid.nvdb": W.VEC_INFO}


@pytest.mark.parametrize("gtype", sorted(PNANOVDB))
def test_layout_derived_from_value_types_matches_pnanovdb(gtype):
    lay = nv.node_layout(gtype)
    got = (lay.root_off_background, lay.root_size, lay.tile_off_value, lay.tile_size,
           lay.upper_off_table, lay.upper_size, lay.lower_off_table, lay.lower_size,
           lay.leaf_off_table, lay.leaf_size, lay.table_stride)
    assert got == PNANOVDB[gtype]


def test_unsupported_types_have_no_layout():
    for gtype in (0, 3, 8, 9, 11, 12, 13, 16, 23, 26, 99):
        with pytest.raises(nv.NanoVDBError, match="unsupported"):
            nv.node_layout(gtype)


def _info(v):
    gi = v.get_grid_info()
    return dict(name=gi.name, size_in_bytes=gi.size_in_bytes, grid_index=gi.grid_index,
                grid_count=gi.grid_count, type_str=gi.type_str,
                translation=[float(x) for x in gi.translation],
                transform=[float(x) for x in gi.transform_matrix.ravel()],
                voxel_size=list(v.get_voxel_size()), voxel_count=v.get_voxel_count(),
                tile_count=v.get_tile_count(), active=tuple(v.get_active_stats()),
                tiles_digest=D.digest(v.get_tiles().astype(np.int32)))


@pytest.mark.parametrize("name", sorted(INFO))
def test_metadata_as_warp_reports_it(name):
    v = Volume.load_from_nvdb(path(name))
    assert _info(v) == INFO[name]
    assert v.load_next_grid() is None


def test_index_file_has_two_grids_with_feature_arrays():
    v = Volume.load_from_nvdb(read("test_index_grid.nvdb"))
    v2 = v.load_next_grid()
    assert _info(v) == W.INDEX0_INFO and _info(v2) == W.INDEX1_INFO
    assert v2.load_next_grid() is None
    assert v.is_index and v.type_str == "OnIndex" and v.value_dtype is None
    for g in (v, v2):
        np.testing.assert_array_equal(g.get_voxels().ravel(),
                                      getattr(W, f"INDEX{g.grid.grid_index}_VOXELS"))
        assert g.get_feature_array_count() == 1
        a = g.feature_array(0, dtype=np.uint64)
        np.testing.assert_array_equal(a[:4], [3, g.get_voxel_count(), 2, 3])   # fVDB header
        assert g.get_feature_array_info(0).value_count > 0


def _slots(vq, g, ijk):
    out = np.empty(len(ijk), np.int64)
    D.jit_slots(vq["volume_slot"], g.tree, ijk, out)
    return out


@pytest.mark.parametrize("name", ["test_grid.nvdb", "test_int32_grid.nvdb",
                                  "test_vec_grid.nvdb", "torus.nvdb", "test_index_grid.nvdb"])
def test_every_voxel_matches_an_independent_traversal(vq, name):
    data = read(name)
    raw = ref.file_grids(data)
    grids = nv.read_nvdb(data)
    assert len(raw) == len(grids)
    rng = np.random.default_rng(7)
    for buf, g in zip(raw, grids):
        r = ref.Grid(buf)
        leaves = r.leaves()
        # every voxel of every leaf, plus points in tiles, outside, and far away
        local = np.stack(np.meshgrid(np.arange(8), np.arange(8), np.arange(8), indexing="ij"),
                         axis=-1).reshape(-1, 3)
        ijk = np.concatenate([np.array(o) + local for o, _ in leaves] +
                             [rng.integers(-300, 300, (400, 3)),
                              rng.integers(-(1 << 31), (1 << 31) - 1, (50, 3)),
                              np.array([[-2147483648, 0, 4095], [2147483647] * 3])]
                             ).astype(np.int32)
        slots = _slots(vq, g, ijk)
        vals = g.values.reshape(-1, g.channels)
        for n, (i, j, k) in enumerate(ijk.tolist()):
            if g.grid_type == 20:            # OnIndex: the voxel-data index, -1 off the leaves
                in_leaf = r.address(i, j, k)[1] == 0
                assert vals[slots[n], 0] == (r.leaf_voxel_index(i, j, k) if in_leaf else -1)
            elif g.channels == 1:
                assert vals[slots[n], 0] == r.value(i, j, k), (i, j, k)
            else:
                assert tuple(vals[slots[n]]) == tuple(np.float32(r.value(i, j, k))), (i, j, k)
        # leaf origins and order are the file's
        np.testing.assert_array_equal(g.leaf_origins, [o for o, _ in leaves])


def test_leaf_slots_are_warps_lookup_index(vq):
    data = read("test_grid.nvdb")
    g = nv.read_nvdb(data)[0]
    r = ref.Grid(ref.file_grids(data)[0])
    rng = np.random.default_rng(3)
    ijk = rng.integers(-20, 20, (3000, 3)).astype(np.int32)
    out = np.empty(len(ijk), np.int64)
    D.jit_slots(vq["volume_leaf_slot"], g.tree, ijk, out)
    want = [r.leaf_voxel_index(*p) for p in ijk.tolist()]
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------------------------------ file variants
def _file(grids, codec=0, chunks=1, magic=nv.MAGIC_NUMB):
    """A .nvdb file of raw grid buffers ``grids`` in one segment (written here, by hand)."""
    head = struct.pack("<QIHH", magic, (32 << 21) | (6 << 10), len(grids), codec)
    metas, bodies = b"", b""
    for g in grids:
        if codec == 0:
            body = g
        else:
            step = -(-len(g) // chunks)
            body = b"".join(struct.pack("<Q", len(z)) + z for z in
                            (zlib.compress(g[p:p + step]) for p in range(0, len(g), step)))
        name = b"g\0"
        meta = struct.pack("<QQQQII", len(g), len(body), 0, 0, 1, 0) + bytes(96)
        meta += struct.pack("<I", len(name)) + bytes(28) + struct.pack("<HHI", codec, 0, 0)
        assert len(meta) == 176
        metas += meta + name
        bodies += body
    return head + metas + bodies


def _same(a, b):
    for f in ("tree", "values", "leaf_origins"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.name == b.name and a.grid_type == b.grid_type


def test_file_variants_decode_identically():
    data = read("test_index_grid.nvdb")
    raw = ref.file_grids(data)
    base = nv.read_nvdb(data)
    variants = [b"".join(raw),                                    # raw concatenated grids
                _file(raw), _file(raw, magic=nv.MAGIC_FILE),      # uncompressed
                _file(raw, codec=1, chunks=3),                    # several zlib chunks
                _file(raw[:1]) + _file(raw[1:], codec=1)]         # two segments
    for blob in variants:
        grids = nv.read_nvdb(blob)
        assert len(grids) == 2
        for a, b in zip(grids, base):
            _same(a, b)
    import io
    _same(nv.read_nvdb(io.BytesIO(data))[0], base[0])
    _same(nv.read_nvdb(np.frombuffer(data, np.uint8))[1], base[1])


def test_unsupported_files_raise_clear_errors():
    raw = ref.file_grids(read("torus.nvdb"))
    with pytest.raises(nv.NanoVDBError, match="Blosc"):
        nv.read_nvdb(_file(raw)[:14] + struct.pack("<H", 2) + _file(raw)[16:])
    with pytest.raises(nv.NanoVDBError, match="codec"):
        nv.read_nvdb(_file(raw)[:14] + struct.pack("<H", 7) + _file(raw)[16:])
    with pytest.raises(nv.NanoVDBError, match="magic"):
        nv.read_nvdb(b"NotNanoV" + bytes(100))
    with pytest.raises(nv.NanoVDBError, match="version"):
        g = bytearray(raw[0])
        g[16:20] = struct.pack("<I", 31 << 21)
        nv.read_nvdb(bytes(g))
    for gtype, what in ((9, "Half"), (16, "FloatN"), (8, "Mask"), (23, "PointIndex")):
        g = bytearray(raw[0])
        g[636:640] = struct.pack("<I", gtype)
        with pytest.raises(nv.NanoVDBError, match=what):
            nv.read_nvdb(bytes(g))
    g = bytearray(raw[0])
    g[20:24] = struct.pack("<I", 0)                       # not breadth-first
    with pytest.raises(nv.NanoVDBError, match="layout"):
        nv.read_nvdb(bytes(g))
    with pytest.raises(nv.NanoVDBError):
        nv.read_nvdb(b"")
    assert issubclass(nv.NanoVDBError, ValueError)


def test_empty_grid_reads_background_everywhere(vq):
    # a grid with no nodes: root tile count 0, all node counts 0
    g = bytearray(ref.file_grids(read("torus.nvdb"))[0][:672 + 64 + 64])
    g[32:40] = struct.pack("<Q", len(g))
    g[640:652] = struct.pack("<qI", len(g), 0)
    g[672:736] = struct.pack("<QQQQIIIIIIQ", 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0)
    root = 736
    g[root + 24:root + 28] = struct.pack("<I", 0)
    g[root + 28:root + 32] = struct.pack("<f", -2.5)
    grid = nv.decode_grid(bytes(g))
    assert grid.leaf_count == 0 and grid.tree[0] == 0
    ijk = np.array([[0, 0, 0], [5, -7, 100]], np.int32)
    assert np.all(grid.values[_slots(vq, grid, ijk)] == np.float32(-2.5))
