"""Portable volume queries (the cores of Warp's ``volume_*`` kernel builtins).

Plain Python functions of flat arrays and scalars: they run uncompiled, and
``compile_for(jit)`` rebinds them all to compiled versions (``numba.njit`` on the CPU,
``cuda.jit(device=True)`` for CUDA). They allocate nothing and return scalars or tuples.

A volume is two arrays (built by ``weft.native.geometry.nanovdb`` / ``weft.native.geometry.volume``)::

    tree    int32   [R, U, L, background code,
                     R root entries (key >> 30, key & (2**30 - 1), code, 0), sorted by key,
                     U upper tables of 32768 codes, L lower tables of 4096 codes]
    values  (S*C,)  value slots, C channels each: leaf voxels first, slot
                    ``leaf*512 + ((i&7)<<6 | (j&7)<<3 | (k&7))``, then tile values and the
                    background. Index grids: int64 voxel-data indices (-1: none).

A root entry holds the key of an upper node's origin, ``kx << 40 | ky << 20 | kz`` with
``kx = ((x + 2**31) mod 2**32) >> 12`` (so keys sort like signed origins), split in two
non-negative int32 halves. A code is a child index in the next level (root: upper node, upper:
lower node, lower: leaf) when >= 0, else ``-(slot + 1)`` of the tile value (or background) that
covers the region. Two arrays rather than five because on the CPU every array argument is
seven machine words per call.

The queries take these two arrays, the scalar ``gtype`` (NanoVDB grid type: 1 float, 2 double,
4 int32, 5 int64, 6 Vec3f, 7 Vec3d, 10 uint32, 17 Vec4f, 18 Vec4d, 19..22 index grids) and,
for the transforms, ``xf``
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

import numpy as np

from . import volume_traverse
from .portable import Namespace, compile_into, variant
from .volume_traverse import (CLOSEST, CPU_JIT_OPTIONS, F0, F1, FM1, GRID_DOUBLE, GRID_FLOAT,  # noqa: F401
    GRID_INDEX, GRID_INT32, GRID_INT64, GRID_ONINDEX_MASK, GRID_UINT32, GRID_VEC3D, GRID_VEC3F,
    GRID_VEC4D, GRID_VEC4F, INT_MIN, LINEAR, _outer2, vdb_block, vdb_block_in, vdb_cell,
    vdb_cell_slots, vdb_data_index, vdb_floor, vdb_grad8, vdb_hess8, vdb_index_cell, vdb_index_of,
    vdb_index_read8, vdb_lerp8, vdb_node, vdb_read8, vdb_round, vdb_slot_in, vdb_weights,
    volume_cell, volume_leaf_slot, volume_slot)


# ------------------------------------------------------------------------------ lookup
def volume_lookup_s(tree, values, gtype, expected, zero, i, j, k):
    """The value of voxel (i, j, k) of a scalar grid of type ``expected`` (``zero`` if the
    grid has another type)."""
    if gtype != expected:
        return zero
    return values[volume_slot(tree, i, j, k)]


def volume_lookup_v3(tree, values, gtype, expected, zero,
                     i, j, k):
    if gtype != expected:
        return zero, zero, zero
    s = 3 * volume_slot(tree, i, j, k)
    return values[s], values[s + 1], values[s + 2]


def volume_lookup_v4(tree, values, gtype, expected, zero,
                     i, j, k):
    if gtype != expected:
        return zero, zero, zero, zero
    s = 4 * volume_slot(tree, i, j, k)
    return values[s], values[s + 1], values[s + 2], values[s + 3]


def volume_lookup_f(tree, values, gtype, i, j, k):
    """``wp.volume_lookup_f``: float32 value at voxel (i, j, k)."""
    return volume_lookup_s(tree, values, gtype, GRID_FLOAT, F0,
                           i, j, k)


def volume_lookup_d(tree, values, gtype, i, j, k):
    return volume_lookup_s(tree, values, gtype, GRID_DOUBLE,
                           np.float64(0.0), i, j, k)


def volume_lookup_i(tree, values, gtype, i, j, k):
    """``wp.volume_lookup_i``: int32 value at voxel (i, j, k)."""
    return volume_lookup_s(tree, values, gtype, GRID_INT32,
                           np.int32(0), i, j, k)


def volume_lookup_v(tree, values, gtype, i, j, k):
    """``wp.volume_lookup_v``: vec3f value at voxel (i, j, k), a tuple."""
    return volume_lookup_v3(tree, values, gtype, GRID_VEC3F, F0,
                            i, j, k)


# ------------------------------------------------------------------------------ sampling
def volume_closest_slot(tree, ux, uy, uz):
    """The slot of the voxel nearest to index-space (ux, uy, uz) (CLOSEST sampling)."""
    return volume_slot(tree, vdb_round(np.float32(ux)), vdb_round(np.float32(uy)),
                       vdb_round(np.float32(uz)))


def volume_sample_s(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """Sample a floating-point scalar grid (``zero`` float32 or float64) at index-space
    (ux, uy, uz) with CLOSEST (0) or LINEAR (1)."""
    if gtype != expected:
        return zero
    if mode == 0:
        return values[volume_closest_slot(tree, ux, uy, uz)]
    if mode != 1:
        return zero
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    return vdb_lerp8(zero, vdb_read8(values, 1, 0, c, i, j, k), fx, fy, fz)


def volume_sample_int(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """Sample an integer grid: CLOSEST, or Warp's LINEAR with weights truncated to ints."""
    if gtype != expected or (mode != 0 and mode != 1):
        return zero
    if mode == 0:
        return values[volume_closest_slot(tree, ux, uy, uz)]
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    if fx == F0 and fy == F0 and fz == F0:
        return values[vdb_slot_in(c[0], i, j, k)]
    return zero


def volume_sample_v3(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """Sample a 3-vector grid; returns a 3-tuple."""
    if gtype != expected:
        return zero, zero, zero
    if mode == 0:
        s = 3 * volume_closest_slot(tree, ux, uy, uz)
        return values[s], values[s + 1], values[s + 2]
    if mode != 1:
        return zero, zero, zero
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    return (vdb_lerp8(zero, vdb_read8(values, 3, 0, c, i, j, k), fx, fy, fz),
            vdb_lerp8(zero, vdb_read8(values, 3, 1, c, i, j, k), fx, fy, fz),
            vdb_lerp8(zero, vdb_read8(values, 3, 2, c, i, j, k), fx, fy, fz))


def volume_sample_v4(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """Sample a 4-vector grid; returns a 4-tuple."""
    if gtype != expected:
        return zero, zero, zero, zero
    if mode == 0:
        s = 4 * volume_closest_slot(tree, ux, uy, uz)
        return values[s], values[s + 1], values[s + 2], values[s + 3]
    if mode != 1:
        return zero, zero, zero, zero
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    return (vdb_lerp8(zero, vdb_read8(values, 4, 0, c, i, j, k), fx, fy, fz),
            vdb_lerp8(zero, vdb_read8(values, 4, 1, c, i, j, k), fx, fy, fz),
            vdb_lerp8(zero, vdb_read8(values, 4, 2, c, i, j, k), fx, fy, fz),
            vdb_lerp8(zero, vdb_read8(values, 4, 3, c, i, j, k), fx, fy, fz))


def volume_sample_f(tree, values, gtype, ux, uy, uz, mode):
    """``wp.volume_sample_f``: float32 sample at index-space (ux, uy, uz)."""
    return volume_sample_s(tree, values, gtype, GRID_FLOAT, F0, ux, uy, uz, mode)


def volume_sample_d(tree, values, gtype, ux, uy, uz, mode):
    return volume_sample_s(tree, values, gtype, GRID_DOUBLE, np.float64(0.0), ux, uy, uz, mode)


def volume_sample_i(tree, values, gtype, ux, uy, uz):
    """``wp.volume_sample_i``: int32 grid, CLOSEST."""
    return volume_sample_int(tree, values, gtype, GRID_INT32, np.int32(0), ux, uy, uz, 0)


def volume_sample_v(tree, values, gtype, ux, uy, uz, mode):
    """``wp.volume_sample_v``: vec3f sample, a tuple."""
    return volume_sample_v3(tree, values, gtype, GRID_VEC3F, F0, ux, uy, uz, mode)


def volume_sample_grad_s(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """Value and index-space gradient of a scalar grid: ``(value, (gx, gy, gz))`` (gradient
    zero for CLOSEST)."""
    if gtype != expected:
        return zero, (zero, zero, zero)
    if mode == 0:
        v = values[volume_closest_slot(tree, ux, uy, uz)]
        return v, (zero, zero, zero)
    if mode != 1:
        return zero, (zero, zero, zero)
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    v = vdb_read8(values, 1, 0, c, i, j, k)
    return vdb_lerp8(zero, v, fx, fy, fz), vdb_grad8(zero, v, fx, fy, fz)



def volume_sample_hess_s(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """The mixed second derivatives ``(hxy, hxz, hyz)`` of a scalar grid's LINEAR sample in
    index space (the derivatives of ``volume_sample_grad_s``'s gradient; zero for CLOSEST,
    whose gradient is constant zero, and for another grid type)."""
    if gtype != expected or mode != 1:
        return zero, zero, zero
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    return vdb_hess8(zero, vdb_read8(values, 1, 0, c, i, j, k), fx, fy, fz)

def volume_sample_grad_v3(tree, values, gtype, expected, zero, ux, uy, uz, mode):
    """Value and Jacobian of a 3-vector grid: ``((a, b, c), (9 entries, row-major: row r is
    d(value[r])/d(uvw)))``."""
    z3 = (zero, zero, zero)
    z9 = (zero, zero, zero, zero, zero, zero, zero, zero, zero)
    if gtype != expected or (mode != 0 and mode != 1):
        return z3, z9
    if mode == 0:
        s = 3 * volume_closest_slot(tree, ux, uy, uz)
        return (values[s], values[s + 1], values[s + 2]), z9
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    a = vdb_read8(values, 3, 0, c, i, j, k)
    b = vdb_read8(values, 3, 1, c, i, j, k)
    d = vdb_read8(values, 3, 2, c, i, j, k)
    ga = vdb_grad8(zero, a, fx, fy, fz)
    gb = vdb_grad8(zero, b, fx, fy, fz)
    gd = vdb_grad8(zero, d, fx, fy, fz)
    return ((vdb_lerp8(zero, a, fx, fy, fz), vdb_lerp8(zero, b, fx, fy, fz),
             vdb_lerp8(zero, d, fx, fy, fz)),
            (ga[0], ga[1], ga[2], gb[0], gb[1], gb[2], gd[0], gd[1], gd[2]))


def volume_sample_grad_f(tree, values, gtype, ux, uy, uz, mode):
    """``wp.volume_sample_grad_f``: ``(value, (gx, gy, gz))`` of a float32 grid."""
    return volume_sample_grad_s(tree, values, gtype, GRID_FLOAT, F0, ux, uy, uz, mode)


def volume_corners_s(tree, values, gtype, expected, zero, ux, uy, uz):
    """The 8 corner values of the cell of (ux, uy, uz), in Warp's corner order (all ``zero``
    for another grid type): the non-differentiable half of LINEAR sampling; the other half is
    the interpolation of these at the fractions (``weft.stdlib.geometry_volume.interpolate``)."""
    if gtype != expected:
        return zero, zero, zero, zero, zero, zero, zero, zero
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    return vdb_read8(values, 1, 0, c, i, j, k)


def volume_corners_v3(tree, values, gtype, expected, zero, ux, uy, uz):
    """The 8 corner values (3-tuples) of a 3-vector grid's cell of (ux, uy, uz)."""
    z = (zero, zero, zero)
    if gtype != expected:
        return z, z, z, z, z, z, z, z
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    a = vdb_read8(values, 3, 0, c, i, j, k)
    b = vdb_read8(values, 3, 1, c, i, j, k)
    d = vdb_read8(values, 3, 2, c, i, j, k)
    return ((a[0], b[0], d[0]), (a[1], b[1], d[1]), (a[2], b[2], d[2]), (a[3], b[3], d[3]),
            (a[4], b[4], d[4]), (a[5], b[5], d[5]), (a[6], b[6], d[6]), (a[7], b[7], d[7]))


def volume_corner_slots(tree, gtype, expected, ux, uy, uz, mode):
    """The value slots of the 8 corners of the LINEAR cell of (ux, uy, uz), in Warp's corner
    order; for CLOSEST all 8 are the nearest voxel's slot; all -1 for a grid of another type
    than ``expected`` or an unknown mode (they read as 0). With a reader of ``C`` channels
    this is every value type's sample, whose interpolation the kernel does
    (``weft.stdlib.geometry_volume``), so that it differentiates it."""
    if gtype != expected or (mode != 0 and mode != 1):
        m = np.int64(-1)
        return m, m, m, m, m, m, m, m
    if mode == 0:
        s = np.int64(volume_closest_slot(tree, ux, uy, uz))
        return s, s, s, s, s, s, s, s
    c, i, j, k, fx, fy, fz = vdb_cell(tree, ux, uy, uz)
    s = vdb_cell_slots(c, i, j, k)
    return (np.int64(s[0]), np.int64(s[1]), np.int64(s[2]), np.int64(s[3]), np.int64(s[4]),
            np.int64(s[5]), np.int64(s[6]), np.int64(s[7]))


def volume_read8(values, s, n, ch, zero):
    """Channel ``ch`` of the 8 slots ``s`` (``n`` channels a slot), ``zero`` where a slot is
    -1."""
    return (values[n * s[0] + ch] if s[0] >= 0 else zero,
            values[n * s[1] + ch] if s[1] >= 0 else zero,
            values[n * s[2] + ch] if s[2] >= 0 else zero,
            values[n * s[3] + ch] if s[3] >= 0 else zero,
            values[n * s[4] + ch] if s[4] >= 0 else zero,
            values[n * s[5] + ch] if s[5] >= 0 else zero,
            values[n * s[6] + ch] if s[6] >= 0 else zero,
            values[n * s[7] + ch] if s[7] >= 0 else zero)


def volume_read8_c1(values, s, zero):
    return volume_read8(values, s, 1, 0, zero)


def volume_read8_c3(values, s, zero):
    """The 8 corners of 3 channels, channel by channel (24 values)."""
    return (volume_read8(values, s, 3, 0, zero) + volume_read8(values, s, 3, 1, zero)
            + volume_read8(values, s, 3, 2, zero))


def volume_read8_c4(values, s, zero):
    return (volume_read8(values, s, 4, 0, zero) + volume_read8(values, s, 4, 1, zero)
            + volume_read8(values, s, 4, 2, zero) + volume_read8(values, s, 4, 3, zero))


# ------------------------------------------------------------------------------ store
def volume_store_s(tree, values, gtype, expected, i, j, k, value):
    """Write ``value`` at voxel (i, j, k) if the grid has type ``expected`` and the voxel lies
    in a leaf (active or not); elsewhere nothing is written (as Warp)."""
    if gtype != expected:
        return
    s = volume_leaf_slot(tree, i, j, k)
    if s >= 0:
        values[s] = value


def volume_store_vn(tree, values, gtype, expected, i, j, k, value):
    """Store an n-vector (a 3- or 4-tuple) at its voxel's ``n`` consecutive values."""
    if gtype != expected:
        return
    s = volume_leaf_slot(tree, i, j, k)
    if s >= 0:
        n = len(value)
        for ch in range(n):
            values[n * s + ch] = value[ch]


def volume_store_f(tree, values, gtype, i, j, k, value):
    """``wp.volume_store_f``."""
    volume_store_s(tree, values, gtype, GRID_FLOAT, i, j, k, value)


def volume_store_i(tree, values, gtype, i, j, k, value):
    """``wp.volume_store_i``."""
    volume_store_s(tree, values, gtype, GRID_INT32, i, j, k, value)


def volume_store_v(tree, values, gtype, i, j, k, value):
    """``wp.volume_store_v`` (``value`` a 3-tuple)."""
    volume_store_vn(tree, values, gtype, GRID_VEC3F, i, j, k,
                    value)


# ------------------------------------------------------------------------------ index grids
def volume_lookup_index(tree, index_values, gtype, i, j, k):
    """``wp.volume_lookup_index``: int32 voxel-data index of voxel (i, j, k), or -1."""
    return np.int32(vdb_data_index(tree, index_values, gtype,
                                   i, j, k))


def volume_sample_index_s(tree, index_values, gtype, voxel_data, background, zero, ux, uy, uz,
                          mode):
    """``wp.volume_sample_index`` for scalar ``voxel_data`` (1-D): corners read
    ``voxel_data[index]``, or ``background`` where a voxel has no index (or an index past the
    array's end)."""
    if mode == 0:
        d = vdb_data_index(tree, index_values, gtype, vdb_round(np.float32(ux)),
                           vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))
        return voxel_data[d] if d >= 0 and d < voxel_data.shape[0] else background
    if mode != 1:
        return zero
    d, fx, fy, fz = vdb_index_cell(tree, index_values, gtype, ux, uy, uz)
    return vdb_lerp8(zero, vdb_index_read8(voxel_data, background, d), fx, fy, fz)


def volume_sample_grad_index_s(tree, index_values, gtype, voxel_data, background, zero, ux, uy,
                               uz, mode):
    """``wp.volume_sample_grad_index`` for scalar ``voxel_data``: ``(value, (gx, gy, gz))``."""
    if mode == 0:
        d = vdb_data_index(tree, index_values, gtype, vdb_round(np.float32(ux)),
                           vdb_round(np.float32(uy)), vdb_round(np.float32(uz)))
        v = voxel_data[d] if d >= 0 and d < voxel_data.shape[0] else background
        return v, (zero, zero, zero)
    if mode != 1:
        return zero, (zero, zero, zero)
    d, fx, fy, fz = vdb_index_cell(tree, index_values, gtype, ux, uy, uz)
    v = vdb_index_read8(voxel_data, background, d)
    return vdb_lerp8(zero, v, fx, fy, fz), vdb_grad8(zero, v, fx, fy, fz)


def volume_sample_index_v3(tree, index_values, gtype, voxel_data,
                           background, zero, ux, uy, uz, mode):
    """``wp.volume_sample_index`` for 3-vector ``voxel_data`` (shape (n, 3)); ``background``
    a 3-tuple."""
    n_data = voxel_data.shape[0]
    if mode == 0:
        d = vdb_data_index(tree, index_values, gtype,
                           vdb_round(np.float32(ux)), vdb_round(np.float32(uy)),
                           vdb_round(np.float32(uz)))
        if d >= 0 and d < n_data:
            return voxel_data[d, 0], voxel_data[d, 1], voxel_data[d, 2]
        return background[0], background[1], background[2]
    if mode != 1:
        return zero, zero, zero
    d, fx, fy, fz = vdb_index_cell(tree, index_values, gtype,
                                   ux, uy, uz)
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


def volume_index_corners(tree, index_values, gtype, ux, uy, uz, mode):
    """The voxel-data indices (-1: none) of the 8 corners of the LINEAR cell of (ux, uy, uz);
    for CLOSEST all 8 are the nearest voxel's; all -1 for an unknown mode. The kernel reads
    ``voxel_data`` at them and interpolates (``weft.stdlib.geometry_volume``), so that the
    reads differentiate into the array."""
    if mode == 0:
        d = np.int64(vdb_data_index(tree, index_values, gtype, vdb_round(np.float32(ux)),
                                    vdb_round(np.float32(uy)), vdb_round(np.float32(uz))))
        return d, d, d, d, d, d, d, d
    if mode != 1:
        m = np.int64(-1)
        return m, m, m, m, m, m, m, m
    d, fx, fy, fz = vdb_index_cell(tree, index_values, gtype, ux, uy, uz)
    return d


# ------------------------------------------------------------------------------ transforms
#: the precision of the transforms: float32, ``np.float64`` in the ``_d`` overloads (vec3d,
#: from the map's double-precision matrices), which are the same code (``portable.variant``)
real = np.float32


def _mat3(xf, o, x, y, z):
    """``M @ v`` for the row-major 3x3 matrix ``xf[o:o + 9]``."""
    return (x * xf[o] + y * xf[o + 1] + z * xf[o + 2],
            x * xf[o + 3] + y * xf[o + 4] + z * xf[o + 5],
            x * xf[o + 6] + y * xf[o + 7] + z * xf[o + 8])


def volume_index_to_world(xf, x, y, z):
    """``wp.volume_index_to_world`` in float32: ``M @ p + t`` (``xf`` float32 (21,))."""
    wx, wy, wz = _mat3(xf, 0, real(x), real(y), real(z))
    return wx + xf[18], wy + xf[19], wz + xf[20]


def volume_world_to_index(xf, x, y, z):
    """``wp.volume_world_to_index`` in float32: ``M^-1 @ (p - t)``."""
    return _mat3(xf, 9, real(x) - xf[18], real(y) - xf[19], real(z) - xf[20])


def volume_index_to_world_dir(xf, x, y, z):
    """``wp.volume_index_to_world_dir`` in float32: ``M @ d``."""
    return _mat3(xf, 0, real(x), real(y), real(z))


def volume_world_to_index_dir(xf, x, y, z):
    """``wp.volume_world_to_index_dir`` in float32: ``M^-1 @ d``."""
    return _mat3(xf, 9, real(x), real(y), real(z))


volume_index_to_world_d = variant(volume_index_to_world, "volume_index_to_world_d",
                                  real=np.float64)
volume_world_to_index_d = variant(volume_world_to_index, "volume_world_to_index_d",
                                  real=np.float64)
volume_index_to_world_dir_d = variant(volume_index_to_world_dir, "volume_index_to_world_dir_d",
                                      real=np.float64)
volume_world_to_index_dir_d = variant(volume_world_to_index_dir, "volume_world_to_index_dir_d",
                                      real=np.float64)


#: every portable function, callees first (``compile_for`` compiles them in this order): the
#: traversal primitives of ``volume_traverse``, then this module's entry points
PORTABLE = volume_traverse.PORTABLE + (
    "volume_lookup_s", "volume_lookup_v3", "volume_lookup_v4", "volume_lookup_f",
    "volume_lookup_d", "volume_lookup_i", "volume_lookup_v", "volume_sample_s",
    "volume_closest_slot", "volume_sample_int", "volume_sample_v3", "volume_sample_v4",
    "volume_sample_f", "volume_sample_d", "volume_sample_i", "volume_sample_v",
    "volume_sample_grad_s",
    "volume_sample_hess_s", "volume_sample_grad_v3", "volume_sample_grad_f", "volume_corners_s",
    "volume_corners_v3", "volume_corner_slots", "volume_read8", "volume_read8_c1",
    "volume_read8_c3", "volume_read8_c4", "volume_index_corners", "volume_store_s",
    "volume_store_vn", "volume_store_f", "volume_store_i",
    "volume_store_v", "volume_lookup_index", "volume_sample_index_s",
    "volume_sample_grad_index_s", "volume_sample_index_v3", "_mat3", "volume_index_to_world",
    "volume_world_to_index", "volume_index_to_world_dir", "volume_world_to_index_dir",
    "volume_index_to_world_d", "volume_world_to_index_d", "volume_index_to_world_dir_d",
    "volume_world_to_index_dir_d",
)

_CONSTANTS = volume_traverse.CONSTANTS


#: functions to compile with ``compile_for``'s ``inline_jit`` on the CPU: the entry points
#: (``volume_*``), so that a kernel calls ``vdb_cell``/``vdb_block`` directly; measured on 1M
#: random samples, inlining them halved a LINEAR sample and a sample with gradient (the calls
#: between them returned tuples through memory and limited the overlap of cache misses)
INLINE = tuple(name for name in PORTABLE if name.startswith("volume_")) + ("_mat3", "_outer2")


def compile_for(jit, inline_jit=None, lazy=False):
    """A namespace (dict) of every function in ``PORTABLE`` compiled with ``jit`` (those in
    ``INLINE`` with ``inline_jit`` when given), calling each other's compiled versions:
    ``compile_for(numba.njit(**CPU_JIT_OPTIONS), numba.njit(inline="always",
    **CPU_JIT_OPTIONS))`` for the CPU (``compile_cpu()``), ``compile_for(cuda.jit(device=True))``
    for CUDA. ``lazy``: a ``portable.Namespace`` making each at its first lookup."""
    ns = Namespace({"math": math, "np": np, "__name__": __name__})  # (caching: a module name)
    for name in _CONSTANTS:
        ns[name] = globals()[name]
    ns["real"] = real
    ns = compile_into(ns, [(name, globals()[name]) for name in PORTABLE], jit, inline_jit,
                      INLINE)
    return ns if lazy else ns.made()


def compile_cpu(cache=False):
    """The cores compiled for the CPU with the recommended options: ``CPU_JIT_OPTIONS``, and
    Numba's IR inlining for the functions in ``INLINE``."""
    import numba
    return compile_for(numba.njit(cache=cache, **CPU_JIT_OPTIONS),
                       numba.njit(cache=cache, inline="always", **CPU_JIT_OPTIONS))
