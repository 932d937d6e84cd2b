"""Reader of NanoVDB grids (``.nvdb`` files, or raw grid buffers) into flat numpy arrays.

    >>> from weft.native.geometry.nanovdb import read_nvdb
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
tile value. Byte offsets of every field are *derived* from the value type's size and
alignment (``nanovdb_format.node_layout``), following NanoVDB's rules (32-byte aligned node
tables).

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
import zlib
from dataclasses import dataclass, field

import numpy as np

from .nanovdb_format import (ALIGN, BLIND_META_SIZE, FILE_HEADER_SIZE, FILE_META_SIZE,  # noqa: F401
    FLAG_BREADTH_FIRST, FLAG_LONG_NAME, GRID_CLASS_NAMES, GRID_SIZE, GRID_TYPE_NAMES, INDEX,
    INDEX_MASK, INDEX_TYPES, LEAF_COUNT, LOWER_COUNT, MAGIC_FILE, MAGIC_GRID, MAGIC_NUMB,
    MAJOR_VERSION, MAX_SLOTS, ON_INDEX, ON_INDEX_MASK, TREE_SIZE, UPPER_COUNT, VALUE_TYPES,
    NanoVDBError, NodeLayout, _Reader, _version, node_layout, root_key)
from .nanovdb_tree import _decode_tree, pack_tree, tree_parts  # noqa: F401

__all__ = ["NanoVDBError", "NanoVDBGrid", "read_nvdb", "decode_grid", "node_layout", "root_key",
           "pack_tree", "tree_parts", "GRID_TYPE_NAMES"]


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
    raw: bytes | None = field(default=None, repr=False)   # the grid's bytes (for saving)

    @property
    def type_str(self):
        return GRID_TYPE_NAMES.get(self.grid_type, "End")

    @property
    def is_index(self):
        return self.grid_type in INDEX_TYPES


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
        raw=bytes(r.buf), **tree)


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


def describe(grid):
    """A short human-readable summary of a decoded grid."""
    return (f"{grid.name!r}: {grid.type_str} ({GRID_CLASS_NAMES.get(grid.grid_class, '?')}), "
            f"NanoVDB {'.'.join(map(str, grid.version))}, {grid.upper_count} upper / "
            f"{grid.lower_count} lower / {grid.leaf_count} leaf nodes, "
            f"voxel size {tuple(float(v) for v in grid.voxel_size)}")
