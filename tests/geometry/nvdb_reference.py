"""A slow, obviously-correct NanoVDB reader for the tests, independent of weft's.

It follows PNanoVDB's traversal literally, one voxel at a time, on the raw grid bytes: a linear
search of the root tiles by NanoVDB's own key, child-mask bit tests, child offsets relative to
each node, and the byte offsets copied from PNanoVDB's constants table (weft derives them from
the value types instead). No numpy, no re-packing.
"""
import struct
import zlib

# grid type -> (root background, root size, tile value, tile size, upper table, upper size,
#               lower table, lower size, leaf table, leaf size, table stride, value format)
LAYOUT = {
    1: (28, 64, 20, 32, 8256, 270400, 1088, 33856, 96, 2144, 8, "<f"),        # float
    4: (28, 64, 20, 32, 8256, 270400, 1088, 33856, 96, 2144, 8, "<i"),        # int32
    6: (28, 96, 20, 32, 8256, 532544, 1088, 66624, 128, 6272, 16, "<3f"),     # Vec3f
    20: (32, 96, 24, 32, 8256, 270400, 1088, 33856, 80, 96, 8, "<Q"),         # OnIndex
}


def file_grids(data):
    """The raw grid buffers of a .nvdb file (segments of uncompressed or zlib grids)."""
    grids = []
    off = 0
    while off < len(data):
        _magic, _version, count, codec = struct.unpack_from("<QIHH", data, off)
        off += 16
        sizes = []
        for _ in range(count):
            grid_size, file_size = struct.unpack_from("<QQ", data, off)
            name_size = struct.unpack_from("<I", data, off + 136)[0]
            off += 176 + name_size
            sizes.append((grid_size, file_size))
        for grid_size, file_size in sizes:
            seg = data[off:off + file_size]
            if codec == 0:
                grids.append(bytes(seg))
            else:
                out = b""
                p = 0
                while p < len(seg):
                    n = struct.unpack_from("<Q", seg, p)[0]
                    out += zlib.decompress(seg[p + 8:p + 8 + n])
                    p += 8 + n
                grids.append(out)
            off += file_size
    return grids


class Grid:
    def __init__(self, buf):
        self.buf = buf
        self.grid_type = struct.unpack_from("<I", buf, 636)[0]
        self.lay = LAYOUT[self.grid_type]
        self.root = 672 + struct.unpack_from("<Q", buf, 672 + 24)[0]
        self.n_tiles = struct.unpack_from("<I", buf, self.root + 24)[0]

    def _read(self, addr):
        v = struct.unpack_from(self.lay[11], self.buf, addr)
        return v[0] if len(v) == 1 else v

    def _bit(self, addr, n):
        return (struct.unpack_from("<I", self.buf, addr + 4 * (n >> 5))[0] >> (n & 31)) & 1

    def address(self, i, j, k):
        """(byte address of the value of voxel (i, j, k), level): PNanoVDB's
        ``root_get_value_address_and_level``."""
        bg, root_size, tile_val, tile_size, up_tab, _, lo_tab, _, leaf_tab, _, stride, fmt = \
            self.lay
        key = (((k & 0xFFFFFFFF) >> 12) | (((j & 0xFFFFFFFF) >> 12) << 21)
               | (((i & 0xFFFFFFFF) >> 12) << 42))
        tile = None
        for t in range(self.n_tiles):
            a = self.root + root_size + t * tile_size
            if struct.unpack_from("<Q", self.buf, a)[0] == key:
                tile = a
                break
        if tile is None:
            return self.root + bg, 4
        child = struct.unpack_from("<q", self.buf, tile + 8)[0]
        if child == 0:
            return tile + tile_val, 3
        upper = self.root + child
        n = (((i & 4095) >> 7) << 10) + (((j & 4095) >> 7) << 5) + ((k & 4095) >> 7)
        if not self._bit(upper + 4128, n):
            return upper + up_tab + stride * n, 2
        lower = upper + struct.unpack_from("<q", self.buf, upper + up_tab + stride * n)[0]
        n = (((i & 127) >> 3) << 8) + (((j & 127) >> 3) << 4) + ((k & 127) >> 3)
        if not self._bit(lower + 544, n):
            return lower + lo_tab + stride * n, 1
        leaf = lower + struct.unpack_from("<q", self.buf, lower + lo_tab + stride * n)[0]
        n = ((i & 7) << 6) + ((j & 7) << 3) + (k & 7)
        size = struct.calcsize(fmt) if self.grid_type != 20 else 0
        return leaf + leaf_tab + size * n, 0

    def value(self, i, j, k):
        addr, _ = self.address(i, j, k)
        return self._read(addr)

    def leaf_voxel_index(self, i, j, k):
        """Warp's ``volume_lookup_index`` (-1 where none)."""
        addr, level = self.address(i, j, k)
        if level != 0:
            return -1
        n = ((i & 7) << 6) + ((j & 7) << 3) + (k & 7)
        if self.grid_type != 20:
            leaf = addr - self.lay[8] - struct.calcsize(self.lay[11]) * n
            first = 672 + struct.unpack_from("<Q", self.buf, 672)[0]
            return (leaf - first) // self.lay[9] * 512 + n
        leaf = addr - 80
        word, bit = n >> 6, n & 63
        mask = struct.unpack_from("<Q", self.buf, leaf + 16 + 8 * word)[0]
        if not (mask >> bit) & 1:
            return -1
        total = bin(mask & ((1 << bit) - 1)).count("1")
        if word > 0:
            prefix = struct.unpack_from("<Q", self.buf, addr + 8)[0]
            total += (prefix >> (9 * (word - 1))) & 511
        return struct.unpack_from("<Q", self.buf, addr)[0] + total - 1

    def leaves(self):
        """(origin, address) of every leaf, from the tree header's leaf array."""
        first = 672 + struct.unpack_from("<Q", self.buf, 672)[0]
        count = struct.unpack_from("<I", self.buf, 672 + 32)[0]
        out = []
        for n in range(count):
            a = first + n * self.lay[9]
            out.append((tuple(v & ~7 for v in struct.unpack_from("<3i", self.buf, a)), a))
        return out
