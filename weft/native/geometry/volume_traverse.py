"""Traversal primitives of the volume queries (see ``weft/geometry/volume_query.py`` for the
data layout and the entry points): the block and value slot of a voxel, the cell of a sample
point with its 8 corners' blocks, Warp's trilinear weights, sums and gradient, and the
voxel-data indices of index grids. Portable like the queries: plain Python, compiled together
with them by ``volume_query.compile_for``."""
import numpy as np

CLOSEST = 0
LINEAR = 1
GRID_FLOAT = 1
GRID_DOUBLE = 2
GRID_INT32 = 4
GRID_INT64 = 5
GRID_VEC3F = 6
GRID_VEC3D = 7
GRID_UINT32 = 10
GRID_VEC4F = 17
GRID_VEC4D = 18
GRID_INDEX = 19
GRID_ONINDEX_MASK = 22

#: Numba options for compiling these cores for the CPU: ``numba.njit(**CPU_JIT_OPTIONS)``.
#: ``_nrt=False`` because the cores allocate nothing: with Numba's reference counting on, every
#: call increments and decrements the count of each array argument (atomic operations on a
#: shared cache line), measured to make a LINEAR sample 3x slower and to stop it scaling
#: across threads.
CPU_JIT_OPTIONS = dict(nogil=True, error_model="numpy", _nrt=False)
F1 = np.float32(1.0)
F0 = np.float32(0.0)
FM1 = np.float32(-1.0)
INT_MIN = -2147483648


# ------------------------------------------------------------------------------ traversal
def vdb_node(tree, i, j, k):
    """The lower node (>= 0) of the 128^3 region holding voxel (i, j, k), or ``-(slot + 1)`` of
    the tile or background value that covers the region. Coordinates wrap to int32 like C's."""
    ui = (np.int64(i) + 2147483648) & 0xFFFFFFFF
    uj = (np.int64(j) + 2147483648) & 0xFFFFFFFF
    uk = (np.int64(k) + 2147483648) & 0xFFFFFFFF
    key = ((ui >> 12) << 40) | ((uj >> 12) << 20) | (uk >> 12)
    n = np.int64(tree[0])
    lo = 0
    hi = n
    while lo < hi:                      # the root entries, sorted by key
        mid = (lo + hi) >> 1
        e = 4 + 4 * mid
        if ((np.int64(tree[e]) << 30) | tree[e + 1]) < key:
            lo = mid + 1
        else:
            hi = mid
    e = 4 + 4 * lo
    if lo == n or ((np.int64(tree[e]) << 30) | tree[e + 1]) != key:
        return np.int64(tree[3])
    c = np.int64(tree[e + 2])
    if c < 0:
        return c
    return np.int64(tree[4 + 4 * n + c * 32768 + ((((ui & 4095) >> 7) << 10)
                                                 | (((uj & 4095) >> 7) << 5)
                                                 | ((uk & 4095) >> 7))])


def vdb_block_in(tree, node, i, j, k):
    """The block code of voxel (i, j, k) in lower node ``node`` (from ``vdb_node``)."""
    if node < 0:
        return node
    return np.int64(tree[4 + 4 * np.int64(tree[0]) + 32768 * np.int64(tree[1]) + node * 4096
                         + ((((i & 127) >> 3) << 8) | (((j & 127) >> 3) << 4)
                            | ((k & 127) >> 3))])


def vdb_block(tree, i, j, k):
    """The leaf index (>= 0) of the 8^3 block holding voxel (i, j, k), or ``-(slot + 1)`` of
    the tile or background value that covers it."""
    return vdb_block_in(tree, vdb_node(tree, i, j, k), i, j, k)


def vdb_slot_in(code, i, j, k):
    """The value slot of voxel (i, j, k) inside block ``code`` (from ``vdb_block``)."""
    if code >= 0:
        return code * 512 + (((i & 7) << 6) | ((j & 7) << 3) | (k & 7))
    return -code - 1


def volume_slot(tree, i, j, k):
    """The value slot of voxel (i, j, k): where ``lookup`` reads and ``store`` writes."""
    return vdb_slot_in(vdb_block(tree, i, j, k), i, j, k)


def volume_leaf_slot(tree, i, j, k):
    """The slot of voxel (i, j, k) if it lies in a leaf (NanoVDB level 0), else -1."""
    code = vdb_block(tree, i, j, k)
    if code >= 0:
        return code * 512 + (((i & 7) << 6) | ((j & 7) << 3) | (k & 7))
    return np.int64(-1)


def vdb_floor(x):
    """C's ``(int)floorf(x)`` and ``x - floorf(x)`` of float32 ``x`` (INT_MIN and ``x - x``
    outside the int32 range, as x86 converts)."""
    xd = float(x)
    if xd >= -2147483648.0 and xd < 2147483648.0:
        t = int(xd)
        if t > xd:
            t -= 1
        return t, x - np.float32(t)
    return INT_MIN, np.float32(xd - xd)     # 0, or NaN for inf and NaN (as x - floorf(x))


def vdb_round(x):
    """C's ``(int)roundf(x)``: halves away from zero, INT_MIN outside int32 and for NaN."""
    xd = float(x)
    if xd > -2147483648.5 and xd < 2147483647.5:
        t = int(xd)
        d = xd - t
        if d >= 0.5:
            t += 1
        elif d <= -0.5:
            t -= 1
        return t
    return INT_MIN


def vdb_cell(tree, ux, uy, uz):
    """The cell of index-space point (ux, uy, uz): ``(codes, i, j, k, fx, fy, fz)``, the block
    codes (``vdb_block``) of its 8 corners (i + dx, j + dy, k + dz) in Warp's corner order, its
    lowest corner and the float32 fractions. Each distinct block is looked up once (a 2x2x2
    stencil spans 1, 2, 4 or 8 of them), from the lowest corner's lower node when it holds the
    corner (a 128^3 region), from the root otherwise."""
    i, fx = vdb_floor(np.float32(ux))
    j, fy = vdb_floor(np.float32(uy))
    k, fz = vdb_floor(np.float32(uz))
    sx = (i & 7) != 7
    sy = (j & 7) != 7
    sz = (k & 7) != 7
    n0 = vdb_node(tree, i, j, k)
    c000 = vdb_block_in(tree, n0, i, j, k)
    if sx and sy and sz:
        return (c000, c000, c000, c000, c000, c000, c000, c000), i, j, k, fx, fy, fz
    nx = (i & 127) != 127              # the corner at i + 1 is in the same lower node
    ny = (j & 127) != 127
    nz = (k & 127) != 127
    if sz:
        c001 = c000
    elif nz:
        c001 = vdb_block_in(tree, n0, i, j, k + 1)
    else:
        c001 = vdb_block(tree, i, j, k + 1)
    if sy:
        c010 = c000
    elif ny:
        c010 = vdb_block_in(tree, n0, i, j + 1, k)
    else:
        c010 = vdb_block(tree, i, j + 1, k)
    if sz:
        c011 = c010
    elif sy:
        c011 = c001
    elif ny and nz:
        c011 = vdb_block_in(tree, n0, i, j + 1, k + 1)
    else:
        c011 = vdb_block(tree, i, j + 1, k + 1)
    if sx:
        c100 = c000
    elif nx:
        c100 = vdb_block_in(tree, n0, i + 1, j, k)
    else:
        c100 = vdb_block(tree, i + 1, j, k)
    if sz:
        c101 = c100
    elif sx:
        c101 = c001
    elif nx and nz:
        c101 = vdb_block_in(tree, n0, i + 1, j, k + 1)
    else:
        c101 = vdb_block(tree, i + 1, j, k + 1)
    if sy:
        c110 = c100
    elif sx:
        c110 = c010
    elif nx and ny:
        c110 = vdb_block_in(tree, n0, i + 1, j + 1, k)
    else:
        c110 = vdb_block(tree, i + 1, j + 1, k)
    if sz:
        c111 = c110
    elif sy:
        c111 = c101
    elif sx:
        c111 = c011
    elif nx and ny and nz:
        c111 = vdb_block_in(tree, n0, i + 1, j + 1, k + 1)
    else:
        c111 = vdb_block(tree, i + 1, j + 1, k + 1)
    return (c000, c001, c010, c011, c100, c101, c110, c111), i, j, k, fx, fy, fz


def vdb_cell_slots(c, i, j, k):
    """Value slots of the 8 corners from their block codes ``c`` (lowest corner (i, j, k))."""
    return (vdb_slot_in(c[0], i, j, k), vdb_slot_in(c[1], i, j, k + 1),
            vdb_slot_in(c[2], i, j + 1, k), vdb_slot_in(c[3], i, j + 1, k + 1),
            vdb_slot_in(c[4], i + 1, j, k), vdb_slot_in(c[5], i + 1, j, k + 1),
            vdb_slot_in(c[6], i + 1, j + 1, k), vdb_slot_in(c[7], i + 1, j + 1, k + 1))


def volume_cell(tree, ux, uy, uz):
    """The cell of index-space point (ux, uy, uz): the 8 corner slots and the float32
    fractions, ``((s0, ..., s7), fx, fy, fz)``, that LINEAR sampling interpolates with."""
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    return vdb_cell_slots(c, i, j, k), fx, fy, fz


def vdb_weights(fx, fy, fz):
    """Warp's 8 trilinear weights ``wx[dx] * wy[dy] * wz[dz]`` in float32, corner order."""
    ax = F1 - fx
    ay = F1 - fy
    az = F1 - fz
    return (ax * ay * az, ax * ay * fz, ax * fy * az, ax * fy * fz,
            fx * ay * az, fx * ay * fz, fx * fy * az, fx * fy * fz)


def vdb_read8(values, stride, ch, c, i, j, k):
    """Channel ``ch`` of the 8 corner values (``stride`` channels per slot) of the cell with
    block codes ``c`` and lowest corner (i, j, k)."""
    li = (i & 7) << 6
    lj = (j & 7) << 3
    lk = k & 7
    hi = ((i + 1) & 7) << 6
    hj = ((j + 1) & 7) << 3
    hk = (k + 1) & 7
    return (values[stride * (c[0] * 512 + (li | lj | lk) if c[0] >= 0 else -c[0] - 1) + ch],
            values[stride * (c[1] * 512 + (li | lj | hk) if c[1] >= 0 else -c[1] - 1) + ch],
            values[stride * (c[2] * 512 + (li | hj | lk) if c[2] >= 0 else -c[2] - 1) + ch],
            values[stride * (c[3] * 512 + (li | hj | hk) if c[3] >= 0 else -c[3] - 1) + ch],
            values[stride * (c[4] * 512 + (hi | lj | lk) if c[4] >= 0 else -c[4] - 1) + ch],
            values[stride * (c[5] * 512 + (hi | lj | hk) if c[5] >= 0 else -c[5] - 1) + ch],
            values[stride * (c[6] * 512 + (hi | hj | lk) if c[6] >= 0 else -c[6] - 1) + ch],
            values[stride * (c[7] * 512 + (hi | hj | hk) if c[7] >= 0 else -c[7] - 1) + ch])


def vdb_lerp8(zero, v, fx, fy, fz):
    """Warp's LINEAR sum ``0 + w0*v0 + ... + w7*v7`` in the scalar type of ``zero``, with the
    weights ``wx*wy*wz`` formed in float32 (widened for double grids, as Warp)."""
    ax = F1 - fx
    ay = F1 - fy
    az = F1 - fz
    val = zero
    val = val + (zero + ax * ay * az) * v[0]
    val = val + (zero + ax * ay * fz) * v[1]
    val = val + (zero + ax * fy * az) * v[2]
    val = val + (zero + ax * fy * fz) * v[3]
    val = val + (zero + fx * ay * az) * v[4]
    val = val + (zero + fx * ay * fz) * v[5]
    val = val + (zero + fx * fy * az) * v[6]
    val = val + (zero + fx * fy * fz) * v[7]
    return val


def _outer2(zero, a0, a1, b0, b1):
    """The products ``(a0 b0, a0 b1, a1 b0, a1 b1)`` in the type of ``zero``."""
    return zero + a0 * b0, zero + a0 * b1, zero + a1 * b0, zero + a1 * b1


def vdb_grad8(zero, v, fx, fy, fz):
    """Warp's gradient of the LINEAR sum: ``sum_n v[n] * d(w_n)/d(uvw)``, where Warp forms
    ``d(w)/dx = sign(dx) * wy * wz`` (etc.) in float32 and sums in corner order. The products
    of two weights are formed once here; ``(-1 * a) * b == -(a * b)`` exactly, so the bits are
    Warp's."""
    ax = F1 - fx
    ay = F1 - fy
    az = F1 - fz
    yz00, yz01, yz10, yz11 = _outer2(zero, ay, fy, az, fz)
    xz00, xz01, xz10, xz11 = _outer2(zero, ax, fx, az, fz)
    xy00, xy01, xy10, xy11 = _outer2(zero, ax, fx, ay, fy)
    gx = zero
    gy = zero
    gz = zero
    gx = gx + v[0] * -yz00
    gy = gy + v[0] * -xz00
    gz = gz + v[0] * -xy00
    gx = gx + v[1] * -yz01
    gy = gy + v[1] * -xz01
    gz = gz + v[1] * xy00
    gx = gx + v[2] * -yz10
    gy = gy + v[2] * xz00
    gz = gz + v[2] * -xy01
    gx = gx + v[3] * -yz11
    gy = gy + v[3] * xz01
    gz = gz + v[3] * xy01
    gx = gx + v[4] * yz00
    gy = gy + v[4] * -xz10
    gz = gz + v[4] * -xy10
    gx = gx + v[5] * yz01
    gy = gy + v[5] * -xz11
    gz = gz + v[5] * xy10
    gx = gx + v[6] * yz10
    gy = gy + v[6] * xz10
    gz = gz + v[6] * -xy11
    gx = gx + v[7] * yz11
    gy = gy + v[7] * xz11
    gz = gz + v[7] * xy11
    return gx, gy, gz



def vdb_hess8(zero, v, fx, fy, fz):
    """The mixed second derivatives ``(d2/dxdy, d2/dxdz, d2/dydz)`` of the LINEAR sum (its
    pure second derivatives are zero: the interpolation is linear along each axis inside a
    cell), in the scalar type of ``zero``."""
    ax = zero + (F1 - fx)
    ay = zero + (F1 - fy)
    az = zero + (F1 - fz)
    hxy = (v[0] - v[2] - v[4] + v[6]) * az + (v[1] - v[3] - v[5] + v[7]) * fz
    hxz = (v[0] - v[1] - v[4] + v[5]) * ay + (v[2] - v[3] - v[6] + v[7]) * fy
    hyz = (v[0] - v[1] - v[2] + v[3]) * ax + (v[4] - v[5] - v[6] + v[7]) * fx
    return hxy, hxz, hyz

# ------------------------------------------------------------------------------ index grids
def vdb_data_index(tree, index_values, gtype, i, j, k):
    """Zero-based voxel-data index of voxel (i, j, k), -1 if none: for index grids the value
    ``index_values`` holds (an int64 view of ``values``), for other grids the voxel's leaf slot
    (its leaf's position * 512 + offset), as Warp's ``volume_lookup_index``."""
    s = volume_leaf_slot(tree, i, j, k)
    if s >= 0 and gtype >= GRID_INDEX and gtype <= GRID_ONINDEX_MASK:
        return np.int64(index_values[s])
    return s


def vdb_index_of(index_values, is_index, code, i, j, k):
    """Voxel-data index (-1: none) of voxel (i, j, k) in block ``code``."""
    if code < 0:
        return np.int64(-1)
    s = code * 512 + (((i & 7) << 6) | ((j & 7) << 3) | (k & 7))
    if is_index:
        return np.int64(index_values[s])
    return s


def vdb_index_cell(tree, index_values, gtype, ux, uy, uz):
    """The voxel-data indices (-1: none) of the 8 corners of the cell of (ux, uy, uz), and
    the float32 fractions: ``((d0, ..., d7), fx, fy, fz)``."""
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    t = index_values
    x = gtype >= GRID_INDEX and gtype <= GRID_ONINDEX_MASK
    return ((vdb_index_of(t, x, c[0], i, j, k), vdb_index_of(t, x, c[1], i, j, k + 1),
             vdb_index_of(t, x, c[2], i, j + 1, k), vdb_index_of(t, x, c[3], i, j + 1, k + 1),
             vdb_index_of(t, x, c[4], i + 1, j, k), vdb_index_of(t, x, c[5], i + 1, j, k + 1),
             vdb_index_of(t, x, c[6], i + 1, j + 1, k),
             vdb_index_of(t, x, c[7], i + 1, j + 1, k + 1)), fx, fy, fz)


def vdb_index_read8(voxel_data, background, d):
    """``voxel_data[d[n]]`` for the 8 corners, ``background`` where ``d[n]`` is -1 (or past the
    array's end)."""
    n = voxel_data.shape[0]
    return (voxel_data[d[0]] if d[0] >= 0 and d[0] < n else background,
            voxel_data[d[1]] if d[1] >= 0 and d[1] < n else background,
            voxel_data[d[2]] if d[2] >= 0 and d[2] < n else background,
            voxel_data[d[3]] if d[3] >= 0 and d[3] < n else background,
            voxel_data[d[4]] if d[4] >= 0 and d[4] < n else background,
            voxel_data[d[5]] if d[5] >= 0 and d[5] < n else background,
            voxel_data[d[6]] if d[6] >= 0 and d[6] < n else background,
            voxel_data[d[7]] if d[7] >= 0 and d[7] < n else background)


#: the portable functions of this module, callees first
PORTABLE = (
    "vdb_node", "vdb_block_in", "vdb_block", "vdb_slot_in", "volume_slot", "volume_leaf_slot",
    "vdb_floor", "vdb_round", "vdb_cell", "vdb_cell_slots", "volume_cell", "vdb_weights",
    "vdb_read8", "vdb_lerp8", "_outer2", "vdb_grad8", "vdb_hess8", "vdb_data_index", "vdb_index_of",
    "vdb_index_cell",
    "vdb_index_read8",
)
CONSTANTS = ("CLOSEST", "LINEAR", "GRID_FLOAT", "GRID_DOUBLE", "GRID_INT32", "GRID_INT64",
             "GRID_VEC3F", "GRID_VEC3D", "GRID_UINT32", "GRID_VEC4F", "GRID_VEC4D",
             "GRID_INDEX", "GRID_ONINDEX_MASK", "F0", "F1", "FM1", "INT_MIN")
