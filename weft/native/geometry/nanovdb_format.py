"""Format constants and byte access of the NanoVDB reader (``weft/geometry/nanovdb.py``): the
error class, magic numbers, header sizes, grid types, node layouts derived from value types,
and bounds-checked reads."""
import struct
from dataclasses import dataclass

import numpy as np

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


