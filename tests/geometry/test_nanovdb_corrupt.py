"""Corrupt NanoVDB files: truncations and byte flips of the real files (compressed as shipped,
and their decompressed grid buffers) must either raise ``NanoVDBError`` or load a grid whose
arrays are internally consistent (every code points inside the arrays), so that the compiled
queries can never read outside them; no other exception, no crash."""
import numpy as np
import pytest

from tests.geometry import drivers as D
from tests.geometry import nvdb_reference as ref
from tests.geometry.conftest import FILES, read
from weft.native.geometry import nanovdb as nv


def check_invariants(g):
    """Every index a query can follow from the arrays lies inside them."""
    t = g.tree
    assert t.dtype == np.int32
    r, u, n_lower, bg = (int(v) for v in t[:4])
    assert (u, n_lower) == (g.upper_count, g.lower_count)
    assert len(t) == 4 + 4 * r + 32768 * u + 4096 * n_lower
    keys, rcodes, upper, lower, _ = nv.tree_parts(t)
    assert np.all(np.diff(keys) > 0)                      # sorted, unique
    assert np.all(keys >= 0) and np.all(keys < (1 << 60))
    assert np.all(t[4:4 + 4 * r].reshape(r, 4)[:, :2] >= 0)
    assert len(g.values) % g.channels == 0
    n_slots = len(g.values) // g.channels
    assert n_slots >= 512 * g.leaf_count + 1
    for codes, n_child in ((rcodes, u), (upper, n_lower), (lower, g.leaf_count),
                           (np.array([bg]), 0)):
        pos = codes[codes >= 0]
        neg = -(codes[codes < 0].astype(np.int64) + 1)
        assert np.all(pos < n_child)
        assert np.all(neg < n_slots)
    if g.is_index:
        assert g.values.dtype == np.int64 and np.all(g.values >= -1)


def load(blob):
    """The grids of ``blob``, or None when it is rejected with NanoVDBError."""
    try:
        grids = nv.read_nvdb(blob)
    except nv.NanoVDBError as e:
        assert str(e)
        return None
    for g in grids:
        check_invariants(g)
    return grids


def probe(vq, grids, rng):
    """Queries over random points run (compiled) on a loaded grid."""
    pts = rng.uniform(-20, 20, (64, 3)).astype(np.float32)
    ijk = rng.integers(-20, 20, (64, 3)).astype(np.int32)
    for g in grids:
        out = np.empty(len(ijk), np.int64)
        D.jit_slots(vq["volume_slot"], g.tree, ijk, out)
        assert np.all((out >= 0) & (out < len(g.values) // g.channels))
        if g.grid_type == 1:
            o = np.empty(len(pts), np.float32)
            D.jit_sample(vq["volume_sample_f"], g.tree, g.values, g.grid_type, pts, 1, o)


@pytest.mark.parametrize("name", FILES)
def test_truncated_files_raise(name):
    data = read(name)
    rng = np.random.default_rng(11)
    cuts = set(range(0, 200, 3)) | set(rng.integers(0, len(data), 120).tolist()) | \
        {len(data) - 1, len(data) - 8, len(data) - 100}
    for n in sorted(cuts):
        with pytest.raises(nv.NanoVDBError):
            nv.read_nvdb(data[:n])


@pytest.mark.parametrize("name", FILES)
def test_truncated_grid_buffers_raise(name):
    rng = np.random.default_rng(12)
    for buf in ref.file_grids(read(name)):
        cuts = set(range(0, 800, 7)) | set(rng.integers(800, len(buf), 60).tolist()) | \
            {len(buf) - 1, len(buf) - 32}
        for n in sorted(cuts):
            with pytest.raises(nv.NanoVDBError):
                nv.read_nvdb(buf[:n])


@pytest.mark.parametrize("name", FILES)
def test_byte_flips_in_files(vq, name):
    data = read(name)
    rng = np.random.default_rng(13)
    offsets = set(range(0, 16)) | set(range(16, 192 + 8, 3)) | \
        set(rng.integers(0, len(data), 100).tolist())
    loaded = 0
    for off in sorted(offsets):
        blob = bytearray(data)
        blob[off] ^= int(rng.integers(1, 256))
        grids = load(bytes(blob))
        if grids is not None:
            loaded += 1
            probe(vq, grids, rng)
    assert loaded > 0        # flips in unused metadata (name key, bboxes...) still load


@pytest.mark.parametrize("name", FILES)
def test_byte_flips_in_grid_buffers(vq, name):
    """Flips in the decompressed grid: headers byte by byte, the root and its tiles, and
    random bytes of the node arrays (masks, child offsets, tile values, leaf values)."""
    rng = np.random.default_rng(14)
    buf = ref.file_grids(read(name))[0]
    g = ref.Grid(buf)
    root_end = g.root + g.lay[1] + g.n_tiles * g.lay[3]
    offsets = set(range(0, 48, 2)) | set(range(628, 740, 3)) | \
        set(rng.integers(g.root, root_end, 30).tolist()) | \
        set(rng.integers(root_end, len(buf), 40).tolist())
    results = {"error": 0, "loaded": 0}
    for off in sorted(offsets):
        blob = bytearray(buf)
        blob[off] ^= int(rng.integers(1, 256))
        grids = load(bytes(blob))
        results["error" if grids is None else "loaded"] += 1
        if grids is not None and results["loaded"] % 8 == 1:
            probe(vq, grids, rng)
    assert results["error"] > 0 and results["loaded"] > 0, results


def nv_error(fn):
    with pytest.raises(nv.NanoVDBError) as e:
        fn()
    return str(e.value)


def test_structural_corruptions_are_named():
    buf = ref.file_grids(read("torus.nvdb"))[0]
    g = ref.Grid(buf)
    tile = g.root + g.lay[1]

    def corrupt(off, raw):
        blob = bytearray(buf)
        blob[off:off + len(raw)] = raw
        with pytest.raises(nv.NanoVDBError) as e:
            nv.read_nvdb(bytes(blob))
        return str(e.value)

    import struct
    assert "child offset" in corrupt(tile + 8, struct.pack("<q", 12345))     # root tile child
    assert "key" in corrupt(tile + 4, struct.pack("<I", 0xFFFFFFFF))
    second = tile + g.lay[3]
    assert "same key" in corrupt(second, buf[tile:tile + 8]) or \
        "exactly once" in corrupt(second, buf[tile:tile + 8])
    assert "declares" in corrupt(32, struct.pack("<Q", len(buf) + 32))
    assert "size" in nv_error(lambda: nv.decode_grid(buf[:32] + struct.pack("<Q", 100)
                                                     + buf[40:]))
    assert "upper nodes" in corrupt(672 + 16, struct.pack("<Q", 1 << 40))
    assert "root tiles" in corrupt(g.root + 24, struct.pack("<I", 1 << 30))
    assert "NUL" in corrupt(40, b"x" * 256)
    assert "blind" in corrupt(640, struct.pack("<q", -8))
