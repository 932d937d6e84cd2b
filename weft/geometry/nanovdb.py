"""Reader of NanoVDB grids (``.nvdb`` files, or raw grid buffers) into flat numpy arrays.

    >>> from weft.geometry.nanovdb import read_nvdb
    >>> grids = read_nvdb("torus.nvdb")          # or bytes, or an open binary file
    >>> g = grids[0]
    >>> g.type_str, g.name, g.values.dtype, g.leaf_count
    ('float', 'surface', dtype('float32'), 24)

Written from the NanoVDB format (as documented by ``NanoVDB.h`` and ``PNanoVDB.h``): a file is a
sequence of *segments*, each a 16-byte header (magic ``"NanoVDB0"`` or ``"NanoVDB2"``, version,
grid count, codec), one 176-byte metadata record plus the grid name per grid, then the grids,
each stored raw (codec 0) or as zlib chunks ``[uint64 size][bytes]`` (codec 1, "ZIP"). Blosc
(codec 2) is refused with a clear error. A grid is one contiguous buffer: ``GridData`` (672
bytes: magic, version, flags, name, the index-to-world map in float and double, world bbox,
voxel size, class, type, blind metadata), ``TreeData`` (64 bytes: byte offsets and counts of
the node arrays), the root (background value and a table of *root tiles*, each a key, a child
offset to an upper node or a constant value), then breadth-first arrays of upper internal nodes
(32^3 children, 4096^3 voxels), lower internal nodes (16^3 children, 128^3 voxels) and 8^3
leaves. Internal-node table entries are a child offset where the child mask bit is set, else a
tile value. Byte offsets of every field are *derived* here from the value type's size and
alignment (``node_layout``), following NanoVDB's rules (32-byte aligned node tables).

Everything read from a file is untrusted: every offset and count is bounds-checked before use,
every child offset must land exactly on the start of a node of the next level, every node must
have exactly one parent, and any violation raises :class:`NanoVDBError` (a ``ValueError``),
never an ``IndexError``, a numpy error or a read outside the buffer.

The output is re-packed for fast lookups into two arrays (see
``weft/geometry/volume_query.py`` for the queries and ``docs/geometry-vdb.md`` for why):

- ``tree`` int32: ``[R, U, L, background code]``, then R root entries ``(key >> 30,
  key & (2**30 - 1), code, 0)`` sorted by ``root_key`` of the upper node's origin, then the
  U upper tables of 32768 codes and the L lower tables of 4096 codes. A code is the index of a
  child in the next level (>= 0) or ``-(slot + 1)`` of a tile value (or the background);
- ``values`` (S * C,) of the grid's scalar type (C = 1, 3 or 4 channels): voxel slot
  ``leaf * 512 + ((i & 7) << 6 | (j & 7) << 3 | (k & 7))`` for leaf voxels, then the distinct
  tile values and the background. For index grids ``values`` is int64: the zero-based index into
  a user's voxel-data array, or -1 where a voxel has none (as Warp's ``volume_lookup_index``).
Leaves keep their order in the file, so leaf voxel slots equal Warp's ``volume_lookup_index``.
"""
from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

__all__ = ["NanoVDBError", "NanoVDBGrid", "read_nvdb", "decode_grid", "node_layout", "root_key",
           "pack_tree", "tree_parts", "GRID_TYPE_NAMES"]


class NanoVDBError(ValueError):
    """A NanoVDB file or buffer that is malformed, truncated or of an unsupported kind."""


MAGIC_NUMB = 0x304244566F6E614E   # "NanoVDB0": old file magic, and grid magic
MAGIC_GRID = 0x314244566F6E614E   # "NanoVDB1": grid magic
MAGIC_FILE = 0x324244566F6E614E   # "NanoVDB2": file (segment) magic
MAJOR_VERSION = 32

GRID_SIZE = 672          # sizeof(GridData)
TREE_SIZE = 64           # sizeof(TreeData)
BLIND_META_SIZE = 288    # sizeof(GridBlindMetaData)
FILE_HEADER_SIZE = 16
FILE_META_SIZE = 176
ALIGN = 32               # NANOVDB_DATA_ALIGNMENT
FLAG_LONG_NAME = 1 << 0
FLAG_BREADTH_FIRST = 1 << 5
UPPER_COUNT = 32768
LOWER_COUNT = 4096
LEAF_COUNT = 512
MAX_SLOTS = (1 << 31) - 2   # slot codes are int32 ``-(slot + 1)``

GRID_TYPE_NAMES = {
    0: "?", 1: "float", 2: "double", 3: "int16", 4: "int32", 5: "int64", 6: "Vec3f", 7: "Vec3d",
    8: "Mask", 9: "Half", 10: "uint32", 11: "bool", 12: "RGBA8", 13: "Float4", 14: "Float8",
    15: "Float16", 16: "FloatN", 17: "Vec4f", 18: "Vec4d", 19: "Index", 20: "OnIndex",
    21: "IndexMask", 22: "OnIndexMask", 23: "PointIndex", 24: "Vec3u8", 25: "Vec3u16",
    26: "uint8"}
GRID_CLASS_NAMES = {0: "?", 1: "SDF", 2: "FOG", 3: "MAC", 4: "PNTIDX", 5: "PNTDAT", 6: "TOPO",
                    7: "VOX", 8: "INDEX", 9: "TENSOR"}

# grid type -> (numpy scalar type, channels) of the value types whose leaves store plain values
VALUE_TYPES = {1: (np.float32, 1), 2: (np.float64, 1), 4: (np.int32, 1), 5: (np.int64, 1),
               6: (np.float32, 3), 7: (np.float64, 3), 10: (np.uint32, 1), 17: (np.float32, 4),
               18: (np.float64, 4)}
INDEX = 19
ON_INDEX = 20
INDEX_MASK = 21
ON_INDEX_MASK = 22
INDEX_TYPES = (INDEX, ON_INDEX, INDEX_MASK, ON_INDEX_MASK)


def _align(x, a):
    return (x + a - 1) // a * a


@dataclass(frozen=True)
class NodeLayout:
    """Byte offsets and sizes of a grid type's nodes (relative to each node's start)."""
    value_size: int          # bytes of one value (all channels)
    root_off_background: int
    root_size: int
    tile_off_value: int      # in a root tile
    tile_size: int
    table_stride: int        # bytes of one internal-node table entry (value or child offset)
    upper_off_table: int
    upper_size: int
    lower_off_table: int
    lower_size: int
    leaf_off_table: int
    leaf_size: int


def node_layout(grid_type):
    """The :class:`NodeLayout` of ``grid_type``, derived from its value type's size and
    alignment: each node is its fixed header (root 28 bytes, root tile 20, upper 8224, lower
    1056, leaf 80), then value-typed fields (background or minimum and maximum, each aligned to
    the value's scalar), then two statistics (float, or double for 64-bit scalars), then the
    table aligned to 32 bytes; nodes and root tiles are padded to 32 bytes. Index leaves hold a
    uint64 offset and a uint64 prefix sum (plus a 64-byte mask for the *Mask kinds)."""
    if grid_type in VALUE_TYPES:
        scalar, channels = VALUE_TYPES[grid_type]
        a = np.dtype(scalar).itemsize
        s = a * channels
        st = 8 if a == 8 else 4
    elif grid_type in INDEX_TYPES:
        a = s = st = 8
    else:
        raise NanoVDBError(f"unsupported NanoVDB grid type {grid_type} "
                           f"({GRID_TYPE_NAMES.get(grid_type, 'unknown')})")

    def fields(base, n_values):
        off = _align(base, a)
        first = off
        off += n_values * s
        off = _align(off, st) + 2 * st
        return first, off

    bg, end = fields(28, 3)                      # background, minimum, maximum; ave, stddev
    root_size = _align(end, ALIGN)
    tile_off = _align(20, a)
    tile_size = _align(tile_off + s, ALIGN)
    stride = _align(max(s, 8), max(a, 8))
    _, end = fields(8224, 2)
    upper_table = _align(end, ALIGN)
    _, end = fields(1056, 2)
    lower_table = _align(end, ALIGN)
    if grid_type in INDEX_TYPES:
        leaf_table = 80
        leaf_size = 96 if grid_type in (INDEX, ON_INDEX) else 160
    else:
        _, end = fields(80, 2)
        leaf_table = _align(end, ALIGN)
        leaf_size = _align(leaf_table + LEAF_COUNT * s, ALIGN)
    return NodeLayout(s, bg, root_size, tile_off, tile_size, stride, upper_table,
                      _align(upper_table + UPPER_COUNT * stride, ALIGN), lower_table,
                      _align(lower_table + LOWER_COUNT * stride, ALIGN), leaf_table, leaf_size)


def root_key(x, y, z):
    """weft's sort key of the upper node containing voxel (x, y, z) (ints or int64 arrays):
    each coordinate offset by 2**31 (so the order is the signed lexicographic order of the
    nodes, as Warp's builder sorts them), shifted down by 12, packed in 20 bits."""
    def part(c):
        return ((np.asarray(c, np.int64) + 2147483648) & 0xFFFFFFFF) >> 12
    return (part(x) << 40) | (part(y) << 20) | part(z)


def pack_tree(origins, codes, upper, lower, n_upper, n_lower, bg_code):
    """The ``tree`` array of upper nodes at ``origins`` (R, 3) with root codes ``codes`` (R,),
    flat int32 ``upper`` (U * 32768) and ``lower`` (L * 4096) tables and the background's code:
    ``[R, U, L, bg_code, R entries (key >> 30, key & (2**30 - 1), code, 0) sorted by key
    (``root_key``), upper, lower]``."""
    o = np.asarray(origins, np.int64).reshape(-1, 3)
    key = root_key(o[:, 0], o[:, 1], o[:, 2])
    order = np.argsort(key, kind="stable")
    entries = np.stack([key[order] >> 30, key[order] & ((1 << 30) - 1),
                        np.asarray(codes, np.int64)[order], np.zeros(len(o), np.int64)], axis=1)
    head = np.array([len(o), n_upper, n_lower, bg_code], np.int64)
    return np.concatenate([head, entries.reshape(-1), np.asarray(upper, np.int64),
                           np.asarray(lower, np.int64)]).astype(np.int32)


def tree_parts(tree):
    """(root keys (R,) int64, root codes (R,), upper (U, 32768), lower (L, 4096), background
    code) of a tree."""
    r, u, n_lower, bg = (int(v) for v in tree[:4])
    base = 4 + 4 * r
    e = tree[4:base].reshape(r, 4).astype(np.int64)
    return ((e[:, 0] << 30) | e[:, 1], e[:, 2], tree[base:base + 32768 * u].reshape(u, 32768),
            tree[base + 32768 * u:base + 32768 * u + 4096 * n_lower].reshape(n_lower, 4096), bg)


@dataclass
class BlindData:
    """One blind-data (feature) array of a grid."""
    name: str
    semantic: int
    data_class: int
    data_type: int
    type_str: str
    value_size: int
    value_count: int
    data: np.ndarray          # uint8 copy of value_size * value_count bytes


@dataclass
class FileGridInfo:
    """What a file's per-grid metadata record says (``None`` for raw grid buffers)."""
    name: str
    grid_size: int
    file_size: int
    voxel_count: int
    codec: int


@dataclass
class NanoVDBGrid:
    """One decoded grid: header fields, and the flat arrays described in the module docstring."""
    name: str
    grid_type: int
    grid_class: int
    version: tuple
    flags: int
    grid_index: int
    grid_count: int
    grid_size: int
    checksum: int
    mat_f: np.ndarray         # (3, 3) float32: index -> world linear part (row-major)
    inv_mat_f: np.ndarray     # (3, 3) float32: its inverse
    vec_f: np.ndarray         # (3,) float32: translation
    mat_d: np.ndarray         # the same in float64
    inv_mat_d: np.ndarray
    vec_d: np.ndarray
    world_bbox: np.ndarray    # (2, 3) float64
    voxel_size: np.ndarray    # (3,) float64
    index_bbox: np.ndarray    # (2, 3) int32: the root's bbox of active values
    upper_count: int
    lower_count: int
    leaf_count: int
    tile_counts: tuple        # active tiles per level (leaf-parent, lower-parent, upper-parent)
    tree_voxel_count: int     # TreeData's active voxel count
    background: np.ndarray    # (C,) of the value type (int64 -1 for index grids)
    tree: np.ndarray          # int32, see the module docstring
    values: np.ndarray
    channels: int
    leaf_origins: np.ndarray  # (leaves, 3) int32
    leaf_masks: np.ndarray    # (leaves, 8) uint64: active-voxel masks (bit n of word n >> 6)
    blind_data: list = field(default_factory=list)
    file_info: FileGridInfo | None = None

    @property
    def type_str(self):
        return GRID_TYPE_NAMES.get(self.grid_type, "End")

    @property
    def is_index(self):
        return self.grid_type in INDEX_TYPES


# ------------------------------------------------------------------------------ byte access
class _Reader:
    """Bounds-checked little-endian reads from a bytes-like buffer."""

    def __init__(self, data, what):
        self.buf = memoryview(data).cast("B")
        self.n = len(self.buf)
        self.what = what

    def need(self, off, size, what):
        if off < 0 or size < 0 or off > self.n or size > self.n - off:
            raise NanoVDBError(f"{self.what}: {what} at byte {off} (+{size}) lies outside the "
                               f"{self.n}-byte buffer (truncated or corrupt)")

    def unpack(self, fmt, off, what):
        size = struct.calcsize(fmt)
        self.need(off, size, what)
        return struct.unpack_from("<" + fmt, self.buf, off)

    def u32(self, off, what):
        return self.unpack("I", off, what)[0]

    def u64(self, off, what):
        return self.unpack("Q", off, what)[0]

    def i64(self, off, what):
        return self.unpack("q", off, what)[0]

    def array(self, off, dtype, count, what):
        dtype = np.dtype(dtype).newbyteorder("<")
        self.need(off, count * dtype.itemsize, what)
        return np.frombuffer(self.buf, dtype, count, off).copy()

    def rows(self, off, count, size, what):
        """``count`` consecutive records of ``size`` bytes as a read-only (count, size) uint8
        view of the buffer."""
        if off < 0 or off > self.n or (count and size > (self.n - off) // count):
            raise NanoVDBError(f"{self.what}: {count} {what} of {size} bytes at byte {off} do "
                               f"not fit in the {self.n}-byte buffer (truncated or corrupt)")
        return np.frombuffer(self.buf, np.uint8, count * size, off).reshape(count, size)

    def cstring(self, off, size, what):
        raw = bytes(self.array(off, np.uint8, size, what))
        end = raw.find(b"\0")
        if end < 0:
            raise NanoVDBError(f"{self.what}: {what} is not NUL-terminated")
        return raw[:end].decode("utf-8", errors="replace")


def _field(rows, start, size, dtype):
    """Columns ``[start, start + size)`` of byte records, viewed as little-endian ``dtype``."""
    part = np.ascontiguousarray(rows[:, start:start + size])
    return part.view(np.dtype(dtype).newbyteorder("<"))


def _version(v):
    return (v >> 21) & 0x7FF, (v >> 10) & 0x7FF, v & 0x3FF


# ------------------------------------------------------------------------------ files
def _as_bytes(source):
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            return f.read()
    if hasattr(source, "read"):
        return source.read()
    if isinstance(source, np.ndarray):
        return np.ascontiguousarray(source).view(np.uint8).tobytes()
    return bytes(source)


def read_nvdb(source):
    """All grids of a NanoVDB file, as a list of :class:`NanoVDBGrid`.

    ``source``: a path, an open binary file, or bytes-like data holding either a ``.nvdb``
    file (one or more segments) or raw grid buffers (concatenated grids, as NanoVDB writes
    them with ``raw=True`` and as Warp's ``Volume.array()`` holds them)."""
    data = _as_bytes(source)
    return [decode_grid(buf, info) for buf, info in split_grids(data)]


def split_grids(data):
    """The grid buffers of a file: a list of (bytes, FileGridInfo or None)."""
    r = _Reader(data, "NanoVDB file")
    if r.n < 8:
        raise NanoVDBError(f"NanoVDB file: {r.n} bytes is too short for a NanoVDB file")
    magic = r.u64(0, "magic number")
    if magic == MAGIC_FILE or (magic == MAGIC_NUMB and _looks_like_file(r)):
        return _split_segments(r)
    if magic in (MAGIC_NUMB, MAGIC_GRID):
        return _split_raw(r)
    raise NanoVDBError(f"NanoVDB file: wrong magic number 0x{magic:016x} (expected "
                       "'NanoVDB0', 'NanoVDB1' or 'NanoVDB2')")


def _looks_like_file(r):
    """Whether data starting with "NanoVDB0" (the magic of both old files and grids) is a file:
    a file header has a version of major 32 at byte 8, a grid has its checksum there."""
    if r.n < FILE_HEADER_SIZE:
        return False
    version, count, codec = r.unpack("IHH", 8, "file header")
    if _version(version)[0] == MAJOR_VERSION and count > 0 and codec < 16:
        return True
    return not (r.n >= GRID_SIZE and _version(r.u32(16, "grid version"))[0] == MAJOR_VERSION)


def _split_raw(r):
    out = []
    off = 0
    while off < r.n:
        r.need(off, 40, "grid header")
        size = r.u64(off + 32, "grid size")
        if size < GRID_SIZE + TREE_SIZE or size > r.n - off:
            raise NanoVDBError(f"raw NanoVDB buffer: grid at byte {off} declares {size} bytes "
                               f"but {r.n - off} remain")
        out.append((bytes(r.buf[off:off + size]), None))
        off += size
    return out


def _split_segments(r):
    out = []
    off = 0
    while off < r.n:
        magic, version, count, codec = r.unpack("QIHH", off, "segment header")
        if magic not in (MAGIC_NUMB, MAGIC_FILE):
            raise NanoVDBError(f"NanoVDB file: wrong magic number 0x{magic:016x} in the segment "
                               f"header at byte {off}")
        if _version(version)[0] != MAJOR_VERSION:
            raise NanoVDBError("NanoVDB file: unsupported version %d.%d.%d (major %d needed)"
                               % (_version(version) + (MAJOR_VERSION,)))
        if count == 0:
            raise NanoVDBError(f"NanoVDB file: segment at byte {off} holds no grids")
        _check_codec(codec)
        off += FILE_HEADER_SIZE
        metas = []
        for _ in range(count):
            (grid_size, file_size, _key, voxel_count, _gtype, _gclass) = r.unpack(
                "QQQQII", off, "grid metadata")
            name_size = r.u32(off + 136, "grid name size")
            meta_codec = r.unpack("H", off + 168, "grid codec")[0]
            if meta_codec != codec:
                raise NanoVDBError(f"NanoVDB file: grid codec {meta_codec} differs from its "
                                   f"segment's codec {codec}")
            off += FILE_META_SIZE
            name = r.cstring(off, name_size, "grid name") if name_size else ""
            off += name_size
            metas.append(FileGridInfo(name, grid_size, file_size, voxel_count, codec))
        for meta in metas:
            if codec == 0:
                r.need(off, meta.file_size, "grid data")
                if meta.file_size != meta.grid_size:
                    raise NanoVDBError(f"NanoVDB file: uncompressed grid '{meta.name}' is stored "
                                       f"in {meta.file_size} bytes but is {meta.grid_size} long")
                grid = bytes(r.buf[off:off + meta.file_size])
                used = meta.file_size
            else:
                grid, used = _inflate(r, off, meta)
            out.append((grid, meta))
            off += used
    return out


def _check_codec(codec):
    if codec == 2:
        raise NanoVDBError("NanoVDB file is Blosc-compressed, which weft does not read; "
                           "re-save it uncompressed or with ZIP (zlib) compression")
    if codec not in (0, 1):
        raise NanoVDBError(f"NanoVDB file: unknown compression codec {codec}")


def _inflate(r, off, meta):
    """The grid of a ZIP (zlib) segment at byte ``off`` of file ``r``: chunks ``[uint64
    size][zlib stream]`` until the grid's declared size; returns (grid, bytes used). The
    record's file size counts the chunk headers (NanoVDB's writer) or not (Warp's
    ``save_to_nvdb``); both are read."""
    parts = []
    total = 0
    used = 0
    chunks = 0
    while total < meta.grid_size:
        size = r.u64(off + used, "compressed chunk size")
        r.need(off + used + 8, size, "compressed chunk")
        d = zlib.decompressobj()
        try:
            out = d.decompress(bytes(r.buf[off + used + 8:off + used + 8 + size]),
                               meta.grid_size - total + 1)
        except zlib.error as e:
            raise NanoVDBError(f"NanoVDB grid '{meta.name}': corrupt zlib data ({e})") from None
        if not d.eof or d.unconsumed_tail or d.unused_data:
            raise NanoVDBError(f"NanoVDB grid '{meta.name}': a zlib chunk is truncated, "
                               "corrupt or longer than the grid")
        total += len(out)
        used += 8 + size
        chunks += 1
        if total > meta.grid_size:
            raise NanoVDBError(f"NanoVDB grid '{meta.name}' inflates to more than its declared "
                               f"{meta.grid_size} bytes")
        parts.append(out)
    if used not in (meta.file_size, meta.file_size + 8 * chunks):
        raise NanoVDBError(f"NanoVDB grid '{meta.name}': {used} compressed bytes, but the file "
                           f"declares {meta.file_size}")
    return b"".join(parts), used


# ------------------------------------------------------------------------------ grids
def decode_grid(data, file_info=None):
    """Decode one grid buffer (``GridData`` at byte 0) into a :class:`NanoVDBGrid`."""
    r = _Reader(data, "NanoVDB grid")
    if r.n < GRID_SIZE + TREE_SIZE:
        raise NanoVDBError(f"NanoVDB grid: {r.n} bytes is shorter than its headers "
                           f"({GRID_SIZE + TREE_SIZE} bytes)")
    magic, checksum, version, flags, grid_index, grid_count, grid_size = r.unpack(
        "QQIIIIQ", 0, "grid header")
    if magic not in (MAGIC_NUMB, MAGIC_GRID):
        raise NanoVDBError(f"NanoVDB grid: wrong magic number 0x{magic:016x}")
    ver = _version(version)
    if ver[0] != MAJOR_VERSION:
        raise NanoVDBError("NanoVDB grid: unsupported version %d.%d.%d (major %d needed)"
                           % (ver + (MAJOR_VERSION,)))
    if grid_size < GRID_SIZE + TREE_SIZE or grid_size > r.n or grid_size % ALIGN:
        raise NanoVDBError(f"NanoVDB grid: declared size {grid_size} is invalid for a "
                           f"{r.n}-byte buffer")
    if file_info is not None and file_info.grid_size != grid_size:
        raise NanoVDBError(f"NanoVDB grid: size {grid_size} differs from the file's "
                           f"{file_info.grid_size}")
    if grid_index >= grid_count:
        raise NanoVDBError(f"NanoVDB grid: index {grid_index} of {grid_count} grids")
    r = _Reader(r.buf[:grid_size], "NanoVDB grid")
    name = r.cstring(40, 256, "grid name")
    mat_f, inv_f, vec_f = (r.array(296 + o, np.float32, n, "map").copy() for o, n in
                           ((0, 9), (36, 9), (72, 3)))
    mat_d, inv_d, vec_d = (r.array(296 + o, np.float64, n, "map").copy() for o, n in
                           ((88, 9), (160, 9), (232, 3)))
    world_bbox = r.array(560, np.float64, 6, "world bbox").reshape(2, 3)
    voxel_size = r.array(608, np.float64, 3, "voxel size")
    grid_class, grid_type = r.unpack("II", 632, "grid class and type")
    blind_offset = r.i64(640, "blind metadata offset")
    blind_count = r.u32(648, "blind metadata count")
    if grid_type not in VALUE_TYPES and grid_type not in INDEX_TYPES:
        raise NanoVDBError(f"NanoVDB grid '{name}': unsupported grid type {grid_type} "
                           f"({GRID_TYPE_NAMES.get(grid_type, 'unknown')}); weft reads float, "
                           "double, int32, int64, uint32, Vec3f/d, Vec4f/d and index grids")
    if not flags & FLAG_BREADTH_FIRST:
        raise NanoVDBError(f"NanoVDB grid '{name}': unsupported layout (not breadth-first)")
    blind = _blind_data(r, blind_offset, blind_count, grid_size)
    if flags & FLAG_LONG_NAME:
        for b in blind:
            if b.data_class == 3:   # GridBlindDataClass::GridName
                raw = bytes(b.data)
                name = raw[:raw.find(b"\0")].decode("utf-8", errors="replace") \
                    if b"\0" in raw else name
    tree_end = grid_size if blind_count == 0 and blind_offset == 0 else blind_offset

    tree = _decode_tree(r, grid_type, grid_size, tree_end, name)
    return NanoVDBGrid(
        name=name, grid_type=grid_type, grid_class=grid_class, version=ver, flags=flags,
        grid_index=grid_index, grid_count=grid_count, grid_size=grid_size, checksum=checksum,
        mat_f=mat_f.reshape(3, 3), inv_mat_f=inv_f.reshape(3, 3), vec_f=vec_f,
        mat_d=mat_d.reshape(3, 3), inv_mat_d=inv_d.reshape(3, 3), vec_d=vec_d,
        world_bbox=world_bbox, voxel_size=voxel_size, blind_data=blind, file_info=file_info,
        **tree)


def _blind_data(r, offset, count, grid_size):
    if offset < 0 or offset > grid_size:
        raise NanoVDBError(f"NanoVDB grid: blind metadata offset {offset} outside the grid")
    if count > (grid_size - offset) // BLIND_META_SIZE:
        raise NanoVDBError(f"NanoVDB grid: {count} blind metadata records do not fit")
    out = []
    for i in range(count):
        at = offset + i * BLIND_META_SIZE
        data_off, n, size, semantic, cls, dtype = r.unpack("qQIIII", at, "blind metadata")
        name = r.cstring(at + 32, 256, "blind data name")
        start = at + data_off
        if not 0 <= start <= grid_size or (size and n > (grid_size - start) // size):
            raise NanoVDBError(f"NanoVDB grid: blind data '{name}' lies outside the grid")
        raw = r.array(start, np.uint8, n * size, "blind data")
        out.append(BlindData(name, semantic, cls, dtype, GRID_TYPE_NAMES.get(dtype, "End"),
                             size, n, raw))
    return out


def _level(r, rel, count, size, grid_size, what):
    """(begin, end) byte range of a node array whose offset ``rel`` is relative to the tree."""
    if count == 0:
        return 0, 0
    if rel < TREE_SIZE or rel % ALIGN or rel > grid_size - GRID_SIZE:
        raise NanoVDBError(f"NanoVDB grid: {what} offset {rel} is invalid")
    begin = GRID_SIZE + rel
    if count > (grid_size - begin) // size:
        raise NanoVDBError(f"NanoVDB grid: {count} {what} of {size} bytes do not fit in the grid")
    return begin, begin + count * size


def _children(parent_begin, rel, child_begin, child_size, child_count, what):
    """Indices of the child nodes at byte offsets ``rel`` (int64 array, relative to each
    parent's start ``parent_begin``); each must be the exact start of one of the children."""
    rel = np.asarray(rel, np.int64)
    bad = (rel <= -(1 << 40)) | (rel >= (1 << 40))
    pos = np.asarray(parent_begin, np.int64) + np.where(bad, 0, rel) - child_begin
    idx = pos // child_size if child_size else pos
    bad |= (pos < 0) | (pos % max(child_size, 1) != 0) | (idx >= child_count)
    if np.any(bad):
        raise NanoVDBError(f"NanoVDB grid: a {what} child offset does not point at a node")
    counts = np.bincount(idx, minlength=child_count)
    if child_count and (counts.max(initial=0) > 1 or counts.min(initial=1) < 1):
        raise NanoVDBError(f"NanoVDB grid: {what} children are not each referenced exactly once")
    return idx


def _child_origins(parent_origins, parent_idx, bit, log2dim, child_width):
    """Origins of children at table bit ``bit`` of nodes with ``parent_origins``."""
    mask = (1 << log2dim) - 1
    off = np.stack([(bit >> (2 * log2dim)) & mask, (bit >> log2dim) & mask, bit & mask], axis=1)
    return parent_origins[parent_idx] + off.astype(np.int64) * child_width


def _decode_tree(r, gtype, grid_size, tree_end, name):
    lay = node_layout(gtype)
    index = gtype in INDEX_TYPES
    if index:
        scalar, channels = np.int64, 1
    else:
        scalar, channels = VALUE_TYPES[gtype]
    vdtype = np.dtype(scalar).newbyteorder("<")
    t = GRID_SIZE
    off_leaf, off_lower, off_upper, off_root = r.unpack("QQQQ", t, "tree header")
    n_leaf, n_lower, n_upper = r.unpack("III", t + 32, "tree node counts")
    tile_counts = r.unpack("III", t + 44, "tree tile counts")
    tree_voxels = r.u64(t + 56, "tree voxel count")

    root_begin, root_end = _level(r, off_root, 1, lay.root_size, grid_size, "root")
    index_bbox = r.array(root_begin, np.int32, 6, "root bbox").reshape(2, 3)
    n_tiles = r.u32(root_begin + 24, "root tile count")
    if n_tiles > (grid_size - root_end) // lay.tile_size:
        raise NanoVDBError(f"NanoVDB grid: {n_tiles} root tiles do not fit in the grid")
    occupied = root_end + n_tiles * lay.tile_size
    ranges = []
    for rel, count, size, what in ((off_upper, n_upper, lay.upper_size, "upper nodes"),
                                   (off_lower, n_lower, lay.lower_size, "lower nodes"),
                                   (off_leaf, n_leaf, lay.leaf_size, "leaves")):
        begin, end = _level(r, rel, count, size, grid_size, what)
        if count and begin < occupied:
            raise NanoVDBError(f"NanoVDB grid: {what} overlap the nodes before them")
        occupied = max(occupied, end)
        ranges.append(begin)
    if occupied > tree_end:
        raise NanoVDBError("NanoVDB grid: tree nodes overlap the blind metadata")
    upper_begin, lower_begin, leaf_begin = ranges
    s = lay.value_size

    # tile values of every level, deduplicated by their bytes; slot = leaves * 512 + rank
    bg_bytes = r.rows(root_begin + lay.root_off_background, 1, s, "background")
    tiles = r.rows(root_end, n_tiles, lay.tile_size, "root tiles")
    keys = _field(tiles, 0, 8, np.uint64).ravel()
    child = _field(tiles, 8, 8, np.int64).ravel()
    has_child = child != 0
    uppers = r.rows(upper_begin, n_upper, lay.upper_size, "upper nodes")
    lowers = r.rows(lower_begin, n_lower, lay.lower_size, "lower nodes")
    leaves = r.rows(leaf_begin, n_leaf, lay.leaf_size, "leaves")

    # root: keys -> upper origins; children must be each upper node exactly once
    kx, ky, kz = (keys >> np.uint64(42)), (keys >> np.uint64(21)) & np.uint64(0x1FFFFF), \
        keys & np.uint64(0x1FFFFF)
    if np.any(kx >= (1 << 20)) or np.any(ky >= (1 << 20)) or np.any(kz >= (1 << 20)):
        raise NanoVDBError("NanoVDB grid: a root tile key is out of range")
    tile_origins = (np.stack([kx, ky, kz], axis=1).astype(np.int64) << 12)
    tile_origins = np.where(tile_origins >= (1 << 31), tile_origins - (1 << 32), tile_origins)
    up_idx = _children(root_begin, child[has_child], upper_begin, lay.upper_size, n_upper,
                       "root tile")
    upper_origins = np.zeros((n_upper, 3), np.int64)
    upper_origins[up_idx] = tile_origins[has_child]

    def internal(nodes, count, mask_off, table_off, begin, size, child_begin, child_size,
                 n_child, what):
        child_mask = np.unpackbits(nodes[:, mask_off:mask_off + count // 8], axis=1,
                                   bitorder="little").astype(bool)
        table = nodes[:, table_off:table_off + count * lay.table_stride].reshape(
            len(nodes), count, lay.table_stride)
        node_i, bit = np.nonzero(child_mask)
        rel = _field(table[node_i, bit], 0, 8, np.int64).ravel()
        idx = _children(begin + node_i.astype(np.int64) * size, rel, child_begin, child_size,
                        n_child, what)
        tile_vals = table[:, :, :s][~child_mask]
        return child_mask, node_i, bit, idx, tile_vals

    up_mask, up_node, up_bit, lo_idx, up_tiles = internal(
        uppers, UPPER_COUNT, 4128, lay.upper_off_table, upper_begin, lay.upper_size,
        lower_begin, lay.lower_size, n_lower, "upper node")
    lo_mask, lo_node, lo_bit, lf_idx, lo_tiles = internal(
        lowers, LOWER_COUNT, 544, lay.lower_off_table, lower_begin, lay.lower_size,
        leaf_begin, lay.leaf_size, n_leaf, "lower node")
    lower_origins = np.zeros((n_lower, 3), np.int64)
    lower_origins[lo_idx] = _child_origins(upper_origins, up_node, up_bit, 5, 128)
    leaf_origins = np.zeros((n_leaf, 3), np.int64)
    leaf_origins[lf_idx] = _child_origins(lower_origins, lo_node, lo_bit, 4, 8)

    n_leaf_slots = n_leaf * LEAF_COUNT
    root_vals = tiles[~has_child, lay.tile_off_value:lay.tile_off_value + s]
    if index:
        # index grids: tiles and background have no voxel data (Warp reads them as background)
        tile_values = np.full(1, -1, np.int64)
        root_slot = np.full(len(root_vals), n_leaf_slots, np.int64)
        up_slot = np.full(len(up_tiles), n_leaf_slots, np.int64)
        lo_slot = np.full(len(lo_tiles), n_leaf_slots, np.int64)
        bg_slot = n_leaf_slots
        background = np.full(1, -1, np.int64)
    else:
        every = np.concatenate([bg_bytes, root_vals, up_tiles, lo_tiles], axis=0)
        uniq, inv = _dedupe_rows(every)
        inv = inv + n_leaf_slots
        tile_values = np.frombuffer(uniq.tobytes(), vdtype).astype(scalar)
        bg_slot = int(inv[0])
        a, b = 1, 1 + len(root_vals)
        root_slot, up_slot, lo_slot = inv[a:b], inv[b:b + len(up_tiles)], inv[b + len(up_tiles):]
        background = np.frombuffer(bg_bytes.tobytes(), vdtype).astype(scalar)
    n_slots = n_leaf_slots + len(tile_values) // channels
    if n_slots > MAX_SLOTS:
        raise NanoVDBError(f"NanoVDB grid '{name}' has {n_slots} value slots; weft supports "
                           f"at most {MAX_SLOTS}")

    upper = np.empty((n_upper, UPPER_COUNT), np.int32)
    upper[up_node, up_bit] = lo_idx
    upper[~up_mask] = -(up_slot + 1)
    lower = np.empty((n_lower, LOWER_COUNT), np.int32)
    lower[lo_node, lo_bit] = lf_idx
    lower[~lo_mask] = -(lo_slot + 1)

    codes = np.empty(n_tiles, np.int64)
    codes[has_child] = up_idx
    codes[~has_child] = -(root_slot + 1)
    rkeys = root_key(tile_origins[:, 0], tile_origins[:, 1], tile_origins[:, 2])
    if len(np.unique(rkeys)) != len(rkeys):
        raise NanoVDBError("NanoVDB grid: two root tiles have the same key")
    tree = pack_tree(tile_origins, codes, upper.reshape(-1), lower.reshape(-1), n_upper,
                     n_lower, -(bg_slot + 1))

    masks = _field(leaves, 16, 64, np.uint64).reshape(n_leaf, 8)
    if index:
        leaf_values = _index_values(gtype, leaves, masks, name)
    else:
        leaf_values = _field(leaves, lay.leaf_off_table, LEAF_COUNT * s, vdtype).astype(
            scalar).reshape(-1)
    values = np.concatenate([leaf_values.reshape(-1), tile_values.reshape(-1)]).astype(scalar)
    return dict(upper_count=n_upper, lower_count=n_lower, leaf_count=n_leaf,
                tile_counts=tile_counts, tree_voxel_count=tree_voxels, index_bbox=index_bbox,
                background=background, tree=tree, values=np.ascontiguousarray(values),
                channels=channels,
                leaf_origins=leaf_origins.astype(np.int32), leaf_masks=masks)


def _dedupe_rows(rows):
    """(distinct rows, index of each row's distinct row) of byte records ``rows`` (N, S),
    compared bit for bit; row 0 (the background) gets index 0. Most tiles of real grids hold
    the background, so only the others are sorted."""
    words = np.ascontiguousarray(rows).view(np.uint32)       # S is a multiple of 4
    diff = words[:, 0] != words[0, 0]
    for c in range(1, words.shape[1]):
        diff |= words[:, c] != words[0, c]
    other = np.nonzero(diff)[0]
    inv = np.zeros(len(rows), np.int64)
    if len(other) == 0:
        return rows[:1], inv
    uniq, sub = np.unique(words[other], axis=0, return_inverse=True)
    inv[other] = sub.ravel() + 1
    return np.concatenate([rows[:1], uniq.view(np.uint8)], axis=0), inv


def _index_values(gtype, leaves, masks, name):
    """Zero-based voxel-data index of every leaf voxel (-1: none) of an index grid."""
    n_leaf = len(leaves)
    offset = _field(leaves, 80, 8, np.uint64).ravel()
    if np.any(offset >= np.uint64(1 << 62)):
        raise NanoVDBError(f"NanoVDB index grid '{name}': a leaf offset is out of range")
    offset = offset.astype(np.int64)
    if gtype in (INDEX, INDEX_MASK):
        return (offset[:, None] + np.arange(LEAF_COUNT, dtype=np.int64) - 1).reshape(-1)
    bits = np.unpackbits(masks.view(np.uint8).reshape(n_leaf, 64), axis=1,
                         bitorder="little").astype(np.int64)
    # the stored prefix sums (9 bits per 64-bit word) must agree with the masks
    counts = bits.reshape(n_leaf, 8, 64).sum(axis=2).cumsum(axis=1)[:, :7]
    packed = np.zeros(n_leaf, np.uint64)
    for w in range(7):
        packed |= counts[:, w].astype(np.uint64) << np.uint64(9 * w)
    prefix = _field(leaves, 88, 8, np.uint64).ravel()
    if np.any(prefix != packed):
        raise NanoVDBError(f"NanoVDB index grid '{name}': leaf prefix sums disagree with the "
                           "leaves' masks")
    rank = np.cumsum(bits, axis=1) - bits
    out = np.where(bits == 1, offset[:, None] + rank - 1, -1)
    return out.reshape(-1)


def describe(grid):
    """A short human-readable summary of a decoded grid."""
    return (f"{grid.name!r}: {grid.type_str} ({GRID_CLASS_NAMES.get(grid.grid_class, '?')}), "
            f"NanoVDB {'.'.join(map(str, grid.version))}, {grid.upper_count} upper / "
            f"{grid.lower_count} lower / {grid.leaf_count} leaf nodes, "
            f"voxel size {tuple(float(v) for v in grid.voxel_size)}")
