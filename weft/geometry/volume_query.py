"""Portable volume queries (the cores of Warp's ``volume_*`` kernel builtins).

Plain Python functions of flat arrays and scalars: they run uncompiled, and
``compile_for(jit)`` rebinds them all to compiled versions (``numba.njit`` on the CPU,
``cuda.jit(device=True)`` for CUDA). They allocate nothing and return scalars or tuples.

A volume is five arrays (built by ``weft.geometry.nanovdb`` / ``weft.geometry.volume``)::

    root_keys  int64 (R,)        sorted keys (``nanovdb.root_key``) of the upper nodes' origins
    root_codes int32 (R + 1,)    per key: upper-node index, or -(slot + 1) of a root tile's
                                 value; the last entry is the background's code
    upper      int32 (U*32768,)  per child of an upper node: lower-node index, or -(slot + 1)
    lower      int32 (L*4096,)   per child of a lower node: leaf index, or -(slot + 1)
    values     (S*C,)            value slots, C channels each: leaf voxels first, slot
                                 ``leaf*512 + ((i&7)<<6 | (j&7)<<3 | (k&7))``, then tile values
                                 and the background. Index grids: int64 voxel-data indices
                                 (-1: none).

plus the scalar ``gtype`` (NanoVDB grid type: 1 float, 2 double, 4 int32, 5 int64, 6 Vec3f,
7 Vec3d, 10 uint32, 17 Vec4f, 18 Vec4d, 19..22 index grids) and, for the transforms, ``xf``
(float32 (21,): index-to-world matrix row-major, its inverse, translation) or ``xd`` (the same
in float64). Functions named ``*_s`` (scalar), ``*_v3``, ``*_v4`` are generic over the value
type: they take the expected grid type and a ``zero`` of the result's scalar type and return
``zero`` (Warp returns 0) when the volume's type differs; ``*_f``, ``*_d``, ``*_i``, ``*_v``
are Warp's typed builtins on top of them.

Warp's semantics, reproduced bit for bit (checked against Warp 1.19 in the tests):

- sampling positions are in *index space*, voxel centres at integer coordinates (no half-voxel
  shift); CLOSEST rounds each coordinate half away from zero (C ``roundf``); LINEAR takes
  ``floor`` and the fraction in float32 and sums the 8 corners in the order (0,0,0), (0,0,1),
  (0,1,0), ..., (1,1,1) with weights ``wx*wy*wz`` computed in float32 (also for double grids);
- a voxel's value is whatever its slot holds, active or not: inactive voxels of a leaf read
  their stored value (usually the background), voxels in tiles read the tile's value, voxels
  outside the tree read the background;
- coordinates that do not fit int32 (and NaN) become INT_MIN, as C's conversion on x86 (the
  fraction is then ``x - x``: 0, or NaN for inf/NaN), so such samples read the background;
- ``store`` writes only voxels that lie in a leaf (active or not); elsewhere it does nothing;
- integer grids: CLOSEST only is meaningful; LINEAR on integers gives the corner (0,0,0)'s
  value when all three fractions are 0 and 0 otherwise (Warp truncates the weights to int).
"""
import math
import types

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

F1 = np.float32(1.0)
F0 = np.float32(0.0)
FM1 = np.float32(-1.0)
INT_MIN = -2147483648


# ------------------------------------------------------------------------------ traversal
def vdb_block(root_keys, root_codes, upper, lower, i, j, k):
    """The leaf index (>= 0) of the 8^3 block holding voxel (i, j, k), or ``-(slot + 1)`` of
    the tile or background value that covers it. Coordinates wrap to int32 like C's."""
    ui = (np.int64(i) + 2147483648) & 0xFFFFFFFF
    uj = (np.int64(j) + 2147483648) & 0xFFFFFFFF
    uk = (np.int64(k) + 2147483648) & 0xFFFFFFFF
    key = ((ui >> 12) << 40) | ((uj >> 12) << 20) | (uk >> 12)
    n = root_keys.shape[0]
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if root_keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo == n or root_keys[lo] != key:
        return np.int64(root_codes[n])
    c = np.int64(root_codes[lo])
    if c < 0:
        return c
    c = np.int64(upper[c * 32768 + ((((ui & 4095) >> 7) << 10) | (((uj & 4095) >> 7) << 5)
                                    | ((uk & 4095) >> 7))])
    if c < 0:
        return c
    return np.int64(lower[c * 4096 + ((((ui & 127) >> 3) << 8) | (((uj & 127) >> 3) << 4)
                                      | ((uk & 127) >> 3))])


def vdb_slot_in(code, i, j, k):
    """The value slot of voxel (i, j, k) inside block ``code`` (from ``vdb_block``)."""
    if code >= 0:
        return code * 512 + (((i & 7) << 6) | ((j & 7) << 3) | (k & 7))
    return -code - 1


def volume_slot(root_keys, root_codes, upper, lower, i, j, k):
    """The value slot of voxel (i, j, k): where ``lookup`` reads and ``store`` writes."""
    return vdb_slot_in(vdb_block(root_keys, root_codes, upper, lower, i, j, k), i, j, k)


def volume_leaf_slot(root_keys, root_codes, upper, lower, i, j, k):
    """The slot of voxel (i, j, k) if it lies in a leaf (NanoVDB level 0), else -1."""
    code = vdb_block(root_keys, root_codes, upper, lower, i, j, k)
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


def vdb_corner_blocks(root_keys, root_codes, upper, lower, i, j, k):
    """Block codes of the 8 corners (i + dx, j + dy, k + dz), in Warp's corner order; blocks
    are looked up once each (a 2x2x2 stencil spans 1, 2, 4 or 8 of them)."""
    i = np.int64(i)
    j = np.int64(j)
    k = np.int64(k)
    sx = (i & 7) != 7
    sy = (j & 7) != 7
    sz = (k & 7) != 7
    c000 = vdb_block(root_keys, root_codes, upper, lower, i, j, k)
    c001 = c000 if sz else vdb_block(root_keys, root_codes, upper, lower, i, j, k + 1)
    c010 = c000 if sy else vdb_block(root_keys, root_codes, upper, lower, i, j + 1, k)
    if sz:
        c011 = c010
    elif sy:
        c011 = c001
    else:
        c011 = vdb_block(root_keys, root_codes, upper, lower, i, j + 1, k + 1)
    c100 = c000 if sx else vdb_block(root_keys, root_codes, upper, lower, i + 1, j, k)
    if sz:
        c101 = c100
    elif sx:
        c101 = c001
    else:
        c101 = vdb_block(root_keys, root_codes, upper, lower, i + 1, j, k + 1)
    if sy:
        c110 = c100
    elif sx:
        c110 = c010
    else:
        c110 = vdb_block(root_keys, root_codes, upper, lower, i + 1, j + 1, k)
    if sz:
        c111 = c110
    elif sy:
        c111 = c101
    elif sx:
        c111 = c011
    else:
        c111 = vdb_block(root_keys, root_codes, upper, lower, i + 1, j + 1, k + 1)
    return c000, c001, c010, c011, c100, c101, c110, c111


def vdb_corner_slots(root_keys, root_codes, upper, lower, i, j, k):
    """Value slots of the 8 corners of the cell whose lowest corner is (i, j, k)."""
    c = vdb_corner_blocks(root_keys, root_codes, upper, lower, i, j, k)
    return (vdb_slot_in(c[0], i, j, k), vdb_slot_in(c[1], i, j, k + 1),
            vdb_slot_in(c[2], i, j + 1, k), vdb_slot_in(c[3], i, j + 1, k + 1),
            vdb_slot_in(c[4], i + 1, j, k), vdb_slot_in(c[5], i + 1, j, k + 1),
            vdb_slot_in(c[6], i + 1, j + 1, k), vdb_slot_in(c[7], i + 1, j + 1, k + 1))


def volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz):
    """The cell of index-space point (ux, uy, uz): the 8 corner slots and the float32
    fractions, ``((s0, ..., s7), fx, fy, fz)``, that LINEAR sampling interpolates with."""
    i, fx = vdb_floor(np.float32(ux))
    j, fy = vdb_floor(np.float32(uy))
    k, fz = vdb_floor(np.float32(uz))
    return vdb_corner_slots(root_keys, root_codes, upper, lower, i, j, k), fx, fy, fz


def vdb_weights(fx, fy, fz):
    """Warp's 8 trilinear weights ``wx[dx] * wy[dy] * wz[dz]`` in float32, corner order."""
    ax = F1 - fx
    ay = F1 - fy
    az = F1 - fz
    return (ax * ay * az, ax * ay * fz, ax * fy * az, ax * fy * fz,
            fx * ay * az, fx * ay * fz, fx * fy * az, fx * fy * fz)


def vdb_weight_grads(fx, fy, fz):
    """d(weight)/d(uvw) of the 8 corners, as Warp writes them: ``sign * w_other * w_other``
    in float32; returns 24 numbers (corner-major)."""
    ax = F1 - fx
    ay = F1 - fy
    az = F1 - fz
    return (FM1 * ay * az, FM1 * ax * az, FM1 * ax * ay,
            FM1 * ay * fz, FM1 * ax * fz, F1 * ax * ay,
            FM1 * fy * az, F1 * ax * az, FM1 * ax * fy,
            FM1 * fy * fz, F1 * ax * fz, F1 * ax * fy,
            F1 * ay * az, FM1 * fx * az, FM1 * fx * ay,
            F1 * ay * fz, FM1 * fx * fz, F1 * fx * ay,
            F1 * fy * az, F1 * fx * az, FM1 * fx * fy,
            F1 * fy * fz, F1 * fx * fz, F1 * fx * fy)


# ------------------------------------------------------------------------------ lookup
def volume_lookup_s(root_keys, root_codes, upper, lower, values, gtype, expected, zero, i, j, k):
    """The value of voxel (i, j, k) of a scalar grid of type ``expected`` (``zero`` if the
    grid has another type)."""
    if gtype != expected:
        return zero
    return values[volume_slot(root_keys, root_codes, upper, lower, i, j, k)]


def volume_lookup_v3(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                     i, j, k):
    if gtype != expected:
        return zero, zero, zero
    s = 3 * volume_slot(root_keys, root_codes, upper, lower, i, j, k)
    return values[s], values[s + 1], values[s + 2]


def volume_lookup_v4(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                     i, j, k):
    if gtype != expected:
        return zero, zero, zero, zero
    s = 4 * volume_slot(root_keys, root_codes, upper, lower, i, j, k)
    return values[s], values[s + 1], values[s + 2], values[s + 3]


def volume_lookup_f(root_keys, root_codes, upper, lower, values, gtype, i, j, k):
    """``wp.volume_lookup_f``: float32 value at voxel (i, j, k)."""
    return volume_lookup_s(root_keys, root_codes, upper, lower, values, gtype, GRID_FLOAT, F0,
                           i, j, k)


def volume_lookup_d(root_keys, root_codes, upper, lower, values, gtype, i, j, k):
    return volume_lookup_s(root_keys, root_codes, upper, lower, values, gtype, GRID_DOUBLE,
                           np.float64(0.0), i, j, k)


def volume_lookup_i(root_keys, root_codes, upper, lower, values, gtype, i, j, k):
    """``wp.volume_lookup_i``: int32 value at voxel (i, j, k)."""
    return volume_lookup_s(root_keys, root_codes, upper, lower, values, gtype, GRID_INT32,
                           np.int32(0), i, j, k)


def volume_lookup_v(root_keys, root_codes, upper, lower, values, gtype, i, j, k):
    """``wp.volume_lookup_v``: vec3f value at voxel (i, j, k), a tuple."""
    return volume_lookup_v3(root_keys, root_codes, upper, lower, values, gtype, GRID_VEC3F, F0,
                            i, j, k)


# ------------------------------------------------------------------------------ sampling
def volume_sample_s(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                    ux, uy, uz, mode):
    """Sample a floating-point scalar grid (``zero`` float32 or float64) at index-space
    (ux, uy, uz) with CLOSEST (0) or LINEAR (1)."""
    if gtype != expected:
        return zero
    if mode == 0:
        return values[volume_slot(root_keys, root_codes, upper, lower, vdb_round(np.float32(ux)),
                                  vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))]
    if mode != 1:
        return zero
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    w = vdb_weights(fx, fy, fz)
    val = zero
    for n in range(8):
        val = val + (zero + w[n]) * values[c[n]]
    return val


def volume_sample_int(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                      ux, uy, uz, mode):
    """Sample an integer grid: CLOSEST, or Warp's LINEAR with weights truncated to ints."""
    if gtype != expected:
        return zero
    if mode == 0:
        return values[volume_slot(root_keys, root_codes, upper, lower, vdb_round(np.float32(ux)),
                                  vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))]
    if mode != 1:
        return zero
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    if fx == F0 and fy == F0 and fz == F0:
        return values[c[0]]
    return zero


def volume_sample_v3(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                     ux, uy, uz, mode):
    """Sample a 3-vector grid; returns a 3-tuple."""
    if gtype != expected:
        return zero, zero, zero
    if mode == 0:
        s = 3 * volume_slot(root_keys, root_codes, upper, lower, vdb_round(np.float32(ux)),
                            vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))
        return values[s], values[s + 1], values[s + 2]
    if mode != 1:
        return zero, zero, zero
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    w = vdb_weights(fx, fy, fz)
    a = zero
    b = zero
    d = zero
    for n in range(8):
        wn = zero + w[n]
        s = 3 * c[n]
        a = a + wn * values[s]
        b = b + wn * values[s + 1]
        d = d + wn * values[s + 2]
    return a, b, d


def volume_sample_v4(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                     ux, uy, uz, mode):
    """Sample a 4-vector grid; returns a 4-tuple."""
    if gtype != expected:
        return zero, zero, zero, zero
    if mode == 0:
        s = 4 * volume_slot(root_keys, root_codes, upper, lower, vdb_round(np.float32(ux)),
                            vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))
        return values[s], values[s + 1], values[s + 2], values[s + 3]
    if mode != 1:
        return zero, zero, zero, zero
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    w = vdb_weights(fx, fy, fz)
    a = zero
    b = zero
    d = zero
    e = zero
    for n in range(8):
        wn = zero + w[n]
        s = 4 * c[n]
        a = a + wn * values[s]
        b = b + wn * values[s + 1]
        d = d + wn * values[s + 2]
        e = e + wn * values[s + 3]
    return a, b, d, e


def volume_sample_f(root_keys, root_codes, upper, lower, values, gtype, ux, uy, uz, mode):
    """``wp.volume_sample_f``: float32 sample at index-space (ux, uy, uz)."""
    return volume_sample_s(root_keys, root_codes, upper, lower, values, gtype, GRID_FLOAT, F0,
                           ux, uy, uz, mode)


def volume_sample_d(root_keys, root_codes, upper, lower, values, gtype, ux, uy, uz, mode):
    return volume_sample_s(root_keys, root_codes, upper, lower, values, gtype, GRID_DOUBLE,
                           np.float64(0.0), ux, uy, uz, mode)


def volume_sample_i(root_keys, root_codes, upper, lower, values, gtype, ux, uy, uz):
    """``wp.volume_sample_i``: int32 grid, CLOSEST."""
    return volume_sample_int(root_keys, root_codes, upper, lower, values, gtype, GRID_INT32,
                             np.int32(0), ux, uy, uz, 0)


def volume_sample_v(root_keys, root_codes, upper, lower, values, gtype, ux, uy, uz, mode):
    """``wp.volume_sample_v``: vec3f sample, a tuple."""
    return volume_sample_v3(root_keys, root_codes, upper, lower, values, gtype, GRID_VEC3F, F0,
                            ux, uy, uz, mode)


def volume_sample_grad_s(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                         ux, uy, uz, mode):
    """Value and index-space gradient of a scalar grid: ``(value, (gx, gy, gz))`` (gradient
    zero for CLOSEST)."""
    if gtype != expected:
        return zero, (zero, zero, zero)
    if mode == 0:
        v = values[volume_slot(root_keys, root_codes, upper, lower, vdb_round(np.float32(ux)),
                               vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))]
        return v, (zero, zero, zero)
    if mode != 1:
        return zero, (zero, zero, zero)
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    w = vdb_weights(fx, fy, fz)
    g = vdb_weight_grads(fx, fy, fz)
    val = zero
    gx = zero
    gy = zero
    gz = zero
    for n in range(8):
        v = values[c[n]]
        val = val + (zero + w[n]) * v
        gx = gx + v * (zero + g[3 * n])
        gy = gy + v * (zero + g[3 * n + 1])
        gz = gz + v * (zero + g[3 * n + 2])
    return val, (gx, gy, gz)


def volume_sample_grad_v3(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                          ux, uy, uz, mode):
    """Value and Jacobian of a 3-vector grid: ``((a, b, c), (9 entries, row-major: row r is
    d(value[r])/d(uvw)))``."""
    z3 = (zero, zero, zero)
    z9 = (zero, zero, zero, zero, zero, zero, zero, zero, zero)
    if gtype != expected or (mode != 0 and mode != 1):
        return z3, z9
    if mode == 0:
        s = 3 * volume_slot(root_keys, root_codes, upper, lower, vdb_round(np.float32(ux)),
                            vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))
        return (values[s], values[s + 1], values[s + 2]), z9
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    w = vdb_weights(fx, fy, fz)
    g = vdb_weight_grads(fx, fy, fz)
    a = zero
    b = zero
    d = zero
    j0 = zero
    j1 = zero
    j2 = zero
    j3 = zero
    j4 = zero
    j5 = zero
    j6 = zero
    j7 = zero
    j8 = zero
    for n in range(8):
        s = 3 * c[n]
        va = values[s]
        vb = values[s + 1]
        vc = values[s + 2]
        wn = zero + w[n]
        a = a + wn * va
        b = b + wn * vb
        d = d + wn * vc
        g0 = zero + g[3 * n]
        g1 = zero + g[3 * n + 1]
        g2 = zero + g[3 * n + 2]
        j0 = j0 + va * g0
        j1 = j1 + va * g1
        j2 = j2 + va * g2
        j3 = j3 + vb * g0
        j4 = j4 + vb * g1
        j5 = j5 + vb * g2
        j6 = j6 + vc * g0
        j7 = j7 + vc * g1
        j8 = j8 + vc * g2
    return (a, b, d), (j0, j1, j2, j3, j4, j5, j6, j7, j8)


def volume_sample_grad_f(root_keys, root_codes, upper, lower, values, gtype, ux, uy, uz, mode):
    """``wp.volume_sample_grad_f``: ``(value, (gx, gy, gz))`` of a float32 grid."""
    return volume_sample_grad_s(root_keys, root_codes, upper, lower, values, gtype, GRID_FLOAT,
                                F0, ux, uy, uz, mode)


def volume_corners_s(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                     ux, uy, uz):
    """The 8 corner values of the cell of (ux, uy, uz), in Warp's corner order (all ``zero``
    for another grid type): the non-differentiable half of LINEAR sampling; the other half is
    ``diff_funcs_volume.trilinear_f`` of these and the fractions."""
    if gtype != expected:
        return zero, zero, zero, zero, zero, zero, zero, zero
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    return (values[c[0]], values[c[1]], values[c[2]], values[c[3]], values[c[4]], values[c[5]],
            values[c[6]], values[c[7]])


def volume_corners_v3(root_keys, root_codes, upper, lower, values, gtype, expected, zero,
                      ux, uy, uz):
    """The 8 corner values (3-tuples) of a 3-vector grid's cell of (ux, uy, uz)."""
    z = (zero, zero, zero)
    if gtype != expected:
        return z, z, z, z, z, z, z, z
    c, fx, fy, fz = volume_cell(root_keys, root_codes, upper, lower, ux, uy, uz)
    s0 = 3 * c[0]
    s1 = 3 * c[1]
    s2 = 3 * c[2]
    s3 = 3 * c[3]
    s4 = 3 * c[4]
    s5 = 3 * c[5]
    s6 = 3 * c[6]
    s7 = 3 * c[7]
    return ((values[s0], values[s0 + 1], values[s0 + 2]),
            (values[s1], values[s1 + 1], values[s1 + 2]),
            (values[s2], values[s2 + 1], values[s2 + 2]),
            (values[s3], values[s3 + 1], values[s3 + 2]),
            (values[s4], values[s4 + 1], values[s4 + 2]),
            (values[s5], values[s5 + 1], values[s5 + 2]),
            (values[s6], values[s6 + 1], values[s6 + 2]),
            (values[s7], values[s7 + 1], values[s7 + 2]))


# ------------------------------------------------------------------------------ store
def volume_store_s(root_keys, root_codes, upper, lower, values, gtype, expected, i, j, k, value):
    """Write ``value`` at voxel (i, j, k) if the grid has type ``expected`` and the voxel lies
    in a leaf (active or not); elsewhere nothing is written (as Warp)."""
    if gtype != expected:
        return
    s = volume_leaf_slot(root_keys, root_codes, upper, lower, i, j, k)
    if s >= 0:
        values[s] = value


def volume_store_v3(root_keys, root_codes, upper, lower, values, gtype, expected, i, j, k, value):
    if gtype != expected:
        return
    s = volume_leaf_slot(root_keys, root_codes, upper, lower, i, j, k)
    if s >= 0:
        values[3 * s] = value[0]
        values[3 * s + 1] = value[1]
        values[3 * s + 2] = value[2]


def volume_store_v4(root_keys, root_codes, upper, lower, values, gtype, expected, i, j, k, value):
    if gtype != expected:
        return
    s = volume_leaf_slot(root_keys, root_codes, upper, lower, i, j, k)
    if s >= 0:
        values[4 * s] = value[0]
        values[4 * s + 1] = value[1]
        values[4 * s + 2] = value[2]
        values[4 * s + 3] = value[3]


def volume_store_f(root_keys, root_codes, upper, lower, values, gtype, i, j, k, value):
    """``wp.volume_store_f``."""
    volume_store_s(root_keys, root_codes, upper, lower, values, gtype, GRID_FLOAT, i, j, k, value)


def volume_store_i(root_keys, root_codes, upper, lower, values, gtype, i, j, k, value):
    """``wp.volume_store_i``."""
    volume_store_s(root_keys, root_codes, upper, lower, values, gtype, GRID_INT32, i, j, k, value)


def volume_store_v(root_keys, root_codes, upper, lower, values, gtype, i, j, k, value):
    """``wp.volume_store_v`` (``value`` a 3-tuple)."""
    volume_store_v3(root_keys, root_codes, upper, lower, values, gtype, GRID_VEC3F, i, j, k,
                    value)


# ------------------------------------------------------------------------------ index grids
def vdb_data_index(root_keys, root_codes, upper, lower, index_values, gtype, i, j, k):
    """Zero-based voxel-data index of voxel (i, j, k), -1 if none: for index grids the value
    ``index_values`` holds (an int64 view of ``values``), for other grids the voxel's leaf slot
    (its leaf's position * 512 + offset), as Warp's ``volume_lookup_index``."""
    s = volume_leaf_slot(root_keys, root_codes, upper, lower, i, j, k)
    if s >= 0 and gtype >= GRID_INDEX and gtype <= GRID_ONINDEX_MASK:
        return np.int64(index_values[s])
    return s


def volume_lookup_index(root_keys, root_codes, upper, lower, index_values, gtype, i, j, k):
    """``wp.volume_lookup_index``: int32 voxel-data index of voxel (i, j, k), or -1."""
    return np.int32(vdb_data_index(root_keys, root_codes, upper, lower, index_values, gtype,
                                   i, j, k))


def vdb_index_corner(index_values, gtype, code, i, j, k):
    if code < 0:
        return np.int64(-1)
    s = code * 512 + (((i & 7) << 6) | ((j & 7) << 3) | (k & 7))
    if gtype >= GRID_INDEX and gtype <= GRID_ONINDEX_MASK:
        return np.int64(index_values[s])
    return s


def vdb_index_corners(root_keys, root_codes, upper, lower, index_values, gtype, i, j, k):
    """Voxel-data indices (-1: none) of the 8 corners of the cell at (i, j, k)."""
    c = vdb_corner_blocks(root_keys, root_codes, upper, lower, i, j, k)
    t = index_values
    g = gtype
    return (vdb_index_corner(t, g, c[0], i, j, k), vdb_index_corner(t, g, c[1], i, j, k + 1),
            vdb_index_corner(t, g, c[2], i, j + 1, k),
            vdb_index_corner(t, g, c[3], i, j + 1, k + 1),
            vdb_index_corner(t, g, c[4], i + 1, j, k),
            vdb_index_corner(t, g, c[5], i + 1, j, k + 1),
            vdb_index_corner(t, g, c[6], i + 1, j + 1, k),
            vdb_index_corner(t, g, c[7], i + 1, j + 1, k + 1))


def volume_sample_index_s(root_keys, root_codes, upper, lower, index_values, gtype, voxel_data,
                          background, zero, ux, uy, uz, mode):
    """``wp.volume_sample_index`` for scalar ``voxel_data`` (1-D): corners read
    ``voxel_data[index]``, or ``background`` where a voxel has no index (or an index past the
    array's end)."""
    n_data = voxel_data.shape[0]
    if mode == 0:
        d = vdb_data_index(root_keys, root_codes, upper, lower, index_values, gtype,
                           vdb_round(np.float32(ux)), vdb_round(np.float32(uy)),
                           vdb_round(np.float32(uz)))
        return voxel_data[d] if d >= 0 and d < n_data else background
    if mode != 1:
        return zero
    i, fx = vdb_floor(np.float32(ux))
    j, fy = vdb_floor(np.float32(uy))
    k, fz = vdb_floor(np.float32(uz))
    d = vdb_index_corners(root_keys, root_codes, upper, lower, index_values, gtype, i, j, k)
    w = vdb_weights(fx, fy, fz)
    val = zero
    for n in range(8):
        dn = d[n]
        v = voxel_data[dn] if dn >= 0 and dn < n_data else background
        val = val + (zero + w[n]) * v
    return val


def volume_sample_index_v3(root_keys, root_codes, upper, lower, index_values, gtype, voxel_data,
                           background, zero, ux, uy, uz, mode):
    """``wp.volume_sample_index`` for 3-vector ``voxel_data`` (shape (n, 3)); ``background``
    a 3-tuple."""
    n_data = voxel_data.shape[0]
    if mode == 0:
        d = vdb_data_index(root_keys, root_codes, upper, lower, index_values, gtype,
                           vdb_round(np.float32(ux)), vdb_round(np.float32(uy)),
                           vdb_round(np.float32(uz)))
        if d >= 0 and d < n_data:
            return voxel_data[d, 0], voxel_data[d, 1], voxel_data[d, 2]
        return background[0], background[1], background[2]
    if mode != 1:
        return zero, zero, zero
    i, fx = vdb_floor(np.float32(ux))
    j, fy = vdb_floor(np.float32(uy))
    k, fz = vdb_floor(np.float32(uz))
    d = vdb_index_corners(root_keys, root_codes, upper, lower, index_values, gtype, i, j, k)
    w = vdb_weights(fx, fy, fz)
    a = zero
    b = zero
    e = zero
    for n in range(8):
        dn = d[n]
        wn = zero + w[n]
        if dn >= 0 and dn < n_data:
            a = a + wn * voxel_data[dn, 0]
            b = b + wn * voxel_data[dn, 1]
            e = e + wn * voxel_data[dn, 2]
        else:
            a = a + wn * background[0]
            b = b + wn * background[1]
            e = e + wn * background[2]
    return a, b, e


# ------------------------------------------------------------------------------ transforms
def volume_index_to_world(xf, x, y, z):
    """``wp.volume_index_to_world`` in float32: ``M @ p + t`` (``xf`` float32 (21,))."""
    x = np.float32(x)
    y = np.float32(y)
    z = np.float32(z)
    return (x * xf[0] + y * xf[1] + z * xf[2] + xf[18],
            x * xf[3] + y * xf[4] + z * xf[5] + xf[19],
            x * xf[6] + y * xf[7] + z * xf[8] + xf[20])


def volume_world_to_index(xf, x, y, z):
    """``wp.volume_world_to_index`` in float32: ``M^-1 @ (p - t)``."""
    sx = np.float32(x) - xf[18]
    sy = np.float32(y) - xf[19]
    sz = np.float32(z) - xf[20]
    return (sx * xf[9] + sy * xf[10] + sz * xf[11],
            sx * xf[12] + sy * xf[13] + sz * xf[14],
            sx * xf[15] + sy * xf[16] + sz * xf[17])


def volume_index_to_world_dir(xf, x, y, z):
    """``wp.volume_index_to_world_dir`` in float32: ``M @ d``."""
    x = np.float32(x)
    y = np.float32(y)
    z = np.float32(z)
    return (x * xf[0] + y * xf[1] + z * xf[2],
            x * xf[3] + y * xf[4] + z * xf[5],
            x * xf[6] + y * xf[7] + z * xf[8])


def volume_world_to_index_dir(xf, x, y, z):
    """``wp.volume_world_to_index_dir`` in float32: ``M^-1 @ d``."""
    x = np.float32(x)
    y = np.float32(y)
    z = np.float32(z)
    return (x * xf[9] + y * xf[10] + z * xf[11],
            x * xf[12] + y * xf[13] + z * xf[14],
            x * xf[15] + y * xf[16] + z * xf[17])


def volume_index_to_world_d(xd, x, y, z):
    """The float64 overload (vec3d), from the map's double-precision matrices."""
    x = np.float64(x)
    y = np.float64(y)
    z = np.float64(z)
    return (x * xd[0] + y * xd[1] + z * xd[2] + xd[18],
            x * xd[3] + y * xd[4] + z * xd[5] + xd[19],
            x * xd[6] + y * xd[7] + z * xd[8] + xd[20])


def volume_world_to_index_d(xd, x, y, z):
    sx = np.float64(x) - xd[18]
    sy = np.float64(y) - xd[19]
    sz = np.float64(z) - xd[20]
    return (sx * xd[9] + sy * xd[10] + sz * xd[11],
            sx * xd[12] + sy * xd[13] + sz * xd[14],
            sx * xd[15] + sy * xd[16] + sz * xd[17])


def volume_index_to_world_dir_d(xd, x, y, z):
    x = np.float64(x)
    y = np.float64(y)
    z = np.float64(z)
    return (x * xd[0] + y * xd[1] + z * xd[2],
            x * xd[3] + y * xd[4] + z * xd[5],
            x * xd[6] + y * xd[7] + z * xd[8])


def volume_world_to_index_dir_d(xd, x, y, z):
    x = np.float64(x)
    y = np.float64(y)
    z = np.float64(z)
    return (x * xd[9] + y * xd[10] + z * xd[11],
            x * xd[12] + y * xd[13] + z * xd[14],
            x * xd[15] + y * xd[16] + z * xd[17])


#: every portable function, callees first (``compile_for`` compiles them in this order)
PORTABLE = (
    "vdb_block", "vdb_slot_in", "volume_slot", "volume_leaf_slot", "vdb_floor", "vdb_round",
    "vdb_corner_blocks", "vdb_corner_slots", "volume_cell", "vdb_weights", "vdb_weight_grads",
    "volume_lookup_s", "volume_lookup_v3", "volume_lookup_v4", "volume_lookup_f",
    "volume_lookup_d", "volume_lookup_i", "volume_lookup_v",
    "volume_sample_s", "volume_sample_int", "volume_sample_v3", "volume_sample_v4",
    "volume_sample_f", "volume_sample_d", "volume_sample_i", "volume_sample_v",
    "volume_sample_grad_s", "volume_sample_grad_v3", "volume_sample_grad_f",
    "volume_corners_s", "volume_corners_v3",
    "volume_store_s", "volume_store_v3", "volume_store_v4", "volume_store_f", "volume_store_i",
    "volume_store_v",
    "vdb_data_index", "volume_lookup_index", "vdb_index_corner", "vdb_index_corners",
    "volume_sample_index_s", "volume_sample_index_v3",
    "volume_index_to_world", "volume_world_to_index", "volume_index_to_world_dir",
    "volume_world_to_index_dir", "volume_index_to_world_d", "volume_world_to_index_d",
    "volume_index_to_world_dir_d", "volume_world_to_index_dir_d",
)

_CONSTANTS = ("CLOSEST", "LINEAR", "GRID_FLOAT", "GRID_DOUBLE", "GRID_INT32", "GRID_INT64",
              "GRID_VEC3F", "GRID_VEC3D", "GRID_UINT32", "GRID_VEC4F", "GRID_VEC4D",
              "GRID_INDEX", "GRID_ONINDEX_MASK", "F0", "F1", "FM1", "INT_MIN")


def compile_for(jit):
    """A namespace (dict) of every function in ``PORTABLE`` compiled with ``jit``, calling each
    other's compiled versions: ``compile_for(numba.njit(cache=False, nogil=True,
    error_model='numpy'))`` for the CPU, ``compile_for(cuda.jit(device=True))`` for CUDA."""
    ns = {"math": math, "np": np}
    for name in _CONSTANTS:
        ns[name] = globals()[name]
    for name in PORTABLE:
        fn = globals()[name]
        rebound = types.FunctionType(fn.__code__, ns, name, fn.__defaults__)
        rebound.__doc__ = fn.__doc__
        ns[name] = jit(rebound)
    return ns
