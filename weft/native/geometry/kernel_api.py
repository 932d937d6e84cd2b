"""The geometry queries as kernels call them: by id (:mod:`weft.native.geometry.descriptors`).

Each ``geo_*`` function reads the object's descriptor, views its arrays
(:mod:`weft.native.geometry.views`) and calls a query core (``volume_query``, ``hashgrid``). They are
portable like the cores: :func:`bind` compiles them with the cores into a target's helper
namespace, where generated code calls them as ``_wk.geo_*`` (see ``weft.stdlib.geometry``).

Vectors are passed and returned as scalars/tuples. A hash-grid query is a 16-tuple of int64:
``(found, index, grid id, 13 words of the core's iteration state)``; ``geo_hg_next`` returns
the next one.
"""
# ruff: noqa: F821 - the views and the query cores are bound into these functions by bind()
from __future__ import annotations

import math
import os
import types

import numpy as np

from . import (bvh_groups, hashgrid, kernel_api_volume, mesh_query, mesh_winding, views,
    volume_query)
from .descriptors import AVG_STALE, HEADER
from .mesh_query import TRI_COLS
from .portable import Namespace, compile_into, variant

# descriptor words (see weft.runtime.geometry for the objects that fill them)
# tree, values, xform_f, xform_d; gtype, channels, indexable voxels (get_voxel_count)
VOL_WORDS = HEADER + 2 * 4 + 3
HG_WORDS = HEADER + 2 * 2 + 2       # grid, point keys; 0/1/2: float32/64/16, 1 / cell width
# points, indices, bounds, links, prims, tris, props, velocities, group table; average edge
# length (bits);
# the addresses of the gradient and tangent buffers of the points and velocities (0: none)
MESH_WORDS = HEADER + 2 * 9 + 1 + 4
MESH_GRAD = HEADER + 2 * 9 + 1      # + kind (0 points, 1 velocities)
MESH_TAN = MESH_GRAD + 2
MESH_AVG = HEADER + 2 * 9           # the average edge length's word (AVG_STALE until needed)
BVH_WORDS = HEADER + 2 * 6          # bounds, links, prims, lowers, uppers, group table


# ------------------------------------------------------------------------------ volumes
def geo_vol_sample_f(vid, ux, uy, uz, mode):
    d = view_i64(vid, VOL_WORDS)
    return volume_sample_f(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], ux, uy, uz, mode)


geo_vol_sample_d = variant(geo_vol_sample_f, "geo_vol_sample_d", volume_sample_f="volume_sample_d",
                           view_f32="view_f64")
geo_vol_sample_v = variant(geo_vol_sample_f, "geo_vol_sample_v", volume_sample_f="volume_sample_v")


def geo_vol_sample_i(vid, ux, uy, uz):
    d = view_i64(vid, VOL_WORDS)
    return volume_sample_i(view_i32(d[3], d[4]), view_i32(d[5], d[6]), d[11], ux, uy, uz)


def geo_vol_grad_f(vid, ux, uy, uz, mode):
    """The index-space gradient of a float32 grid's sample (zero for CLOSEST), a 3-tuple."""
    d = view_i64(vid, VOL_WORDS)
    v, g = volume_sample_grad_f(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], ux, uy, uz,
                                mode)
    return g


def geo_vol_grad_d(vid, ux, uy, uz, mode):
    d = view_i64(vid, VOL_WORDS)
    v, g = volume_sample_grad_s(view_i32(d[3], d[4]), view_f64(d[5], d[6]), d[11],
                                GRID_DOUBLE, np.float64(0.0), ux, uy, uz, mode)
    return g


def geo_vol_sample_grad_f(vid, ux, uy, uz, mode):
    """A float32 grid's sample and its index-space gradient in one traversal: (v, gx, gy, gz)."""
    d = view_i64(vid, VOL_WORDS)
    v, g = volume_sample_grad_f(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], ux, uy, uz,
                                mode)
    return v, g[0], g[1], g[2]


def geo_vol_sample_grad_d(vid, ux, uy, uz, mode):
    d = view_i64(vid, VOL_WORDS)
    v, g = volume_sample_grad_s(view_i32(d[3], d[4]), view_f64(d[5], d[6]), d[11],
                                GRID_DOUBLE, np.float64(0.0), ux, uy, uz, mode)
    return v, g[0], g[1], g[2]



def geo_vol_hess_f(vid, ux, uy, uz, mode):
    """The mixed second derivatives ``(hxy, hxz, hyz)`` of a float32 grid's sample (the
    derivatives of ``geo_vol_grad_f``; its Hessian's diagonal is zero)."""
    d = view_i64(vid, VOL_WORDS)
    return volume_sample_hess_s(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], GRID_FLOAT,
                                np.float32(0.0), ux, uy, uz, mode)


def geo_vol_hess_d(vid, ux, uy, uz, mode):
    d = view_i64(vid, VOL_WORDS)
    return volume_sample_hess_s(view_i32(d[3], d[4]), view_f64(d[5], d[6]), d[11], GRID_DOUBLE,
                                np.float64(0.0), ux, uy, uz, mode)

def geo_vol_jac_v(vid, ux, uy, uz, mode):
    """The index-space Jacobian of a vec3f grid's sample, 9 values row by row (d value_r /
    d uvw_c)."""
    d = view_i64(vid, VOL_WORDS)
    v, j = volume_sample_grad_v3(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11],
                                 GRID_VEC3F, np.float32(0.0), ux, uy, uz, mode)
    return j


def geo_vol_lookup_f(vid, i, j, k):
    d = view_i64(vid, VOL_WORDS)
    return volume_lookup_f(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], i, j, k)


#: the lookups of the other value types: the float32 one's code with the core and the view of
#: the values bound otherwise (``portable.variant``; as the samples and stores below)
geo_vol_lookup_d = variant(geo_vol_lookup_f, "geo_vol_lookup_d", volume_lookup_f="volume_lookup_d",
                           view_f32="view_f64")
geo_vol_lookup_i = variant(geo_vol_lookup_f, "geo_vol_lookup_i", volume_lookup_f="volume_lookup_i",
                           view_f32="view_i32")
geo_vol_lookup_v = variant(geo_vol_lookup_f, "geo_vol_lookup_v", volume_lookup_f="volume_lookup_v")


def geo_vol_voxel_count(vid):
    """The number of indexable voxels (``Volume.get_voxel_count()``)."""
    return np.int32(view_i64(vid, VOL_WORDS)[13])


def geo_vol_lookup_index(vid, i, j, k):
    d = view_i64(vid, VOL_WORDS)
    return volume_lookup_index(view_i32(d[3], d[4]), view_i64(d[5], d[6]), d[11], i, j, k)


def geo_vol_store_f(vid, i, j, k, value):
    d = view_i64(vid, VOL_WORDS)
    volume_store_f(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], i, j, k, value)
    return 0


geo_vol_store_i = variant(geo_vol_store_f, "geo_vol_store_i", volume_store_f="volume_store_i",
                          view_f32="view_i32")


def geo_vol_store_d(vid, i, j, k, value):
    d = view_i64(vid, VOL_WORDS)
    volume_store_s(view_i32(d[3], d[4]), view_f64(d[5], d[6]), d[11], GRID_DOUBLE, i, j, k,
                   value)
    return 0


def geo_vol_store_v(vid, i, j, k, vx, vy, vz):
    d = view_i64(vid, VOL_WORDS)
    volume_store_v(view_i32(d[3], d[4]), view_f32(d[5], d[6]), d[11], i, j, k, (vx, vy, vz))
    return 0


def geo_vol_xform(vid, which, x, y, z):
    """Index <-> world maps of a volume, in float32: ``which`` 0 index_to_world, 1
    world_to_index, 2 index_to_world_dir, 3 world_to_index_dir."""
    d = view_i64(vid, VOL_WORDS)
    xf = view_f32(d[7], d[8])
    if which == 0:
        return volume_index_to_world(xf, x, y, z)
    if which == 1:
        return volume_world_to_index(xf, x, y, z)
    if which == 2:
        return volume_index_to_world_dir(xf, x, y, z)
    return volume_world_to_index_dir(xf, x, y, z)


def geo_vol_xform_adj(vid, which, ax, ay, az):
    """The transpose of a map's linear part applied to (ax, ay, az): the adjoint of
    ``geo_vol_xform`` (``which`` 0, 2: the index-to-world matrix; 1, 3: its inverse)."""
    d = view_i64(vid, VOL_WORDS)
    xf = view_f32(d[7], d[8])
    o = 0 if which == 0 or which == 2 else 9
    x = np.float32(ax)
    y = np.float32(ay)
    z = np.float32(az)
    return (x * xf[o] + y * xf[o + 3] + z * xf[o + 6],
            x * xf[o + 1] + y * xf[o + 4] + z * xf[o + 7],
            x * xf[o + 2] + y * xf[o + 5] + z * xf[o + 8])


# ------------------------------------------------------------------------------ hash grids
def geo_hg_query(gid, px, py, pz, radius, group, filt):
    d = view_i64(gid, HG_WORDS)
    grid = view_i32(d[3], d[4])
    keys = view_i64(d[5], d[6])
    if d[7] == 0:
        s = hash_grid_query(grid, keys, np.float32(bits_float(d[8])), px, py, pz, radius, group,
                            filt)
    elif d[7] == 1:
        s = hash_grid_query_d(grid, keys, bits_float(d[8]), px, py, pz, radius, group, filt)
    else:  # 2: float16 points
        s = hash_grid_query_h(grid, keys, np.float32(bits_float(d[8])), px, py, pz, radius,
                              group, filt)
    return (np.int64(0), np.int64(-1), np.int64(gid), s[0], s[1], s[2], s[3], s[4], s[5], s[6],
            s[7], s[8], s[9], s[10], s[11], s[12])


def geo_hg_next(q):
    d = view_i64(q[2], HG_WORDS)
    found, index, s = hash_grid_query_next(
        view_i32(d[3], d[4]), view_i64(d[5], d[6]),
        (q[3], q[4], q[5], q[6], q[7], q[8], q[9], q[10], q[11], q[12], q[13], q[14], q[15]))
    return (np.int64(1 if found else 0), np.int64(index), q[2], s[0], s[1], s[2], s[3], s[4],
            s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12])


def geo_hg_point_id(gid, index):
    d = view_i64(gid, HG_WORDS)
    return hash_grid_point_id(view_i32(d[3], d[4]), index)


# ------------------------------------------------------------------------------ meshes
# A mesh or BVH query is a 16-tuple of int64 like a hash-grid query: (found, index, the
# object's id, the core's 13-word state with its floats stored as their bits).
def _mesh_bvh(d):
    return (view_f32(d[7], d[8]).reshape((d[8] // 6, 6)),
            view_i32(d[9], d[10]).reshape((d[10] // 4, 4)), view_i32(d[11], d[12]),
            view_f32(d[13], d[14]).reshape((d[14] // TRI_COLS, TRI_COLS)))


def _bvh_arrays(d):
    """A ``wp.Bvh``'s descriptor words ``d`` as the arrays ``bvh_query_next`` walks: bounds,
    links, prims, lowers, uppers."""
    return (view_f32(d[3], d[4]).reshape((d[4] // 6, 6)),
            view_i32(d[5], d[6]).reshape((d[6] // 4, 4)), view_i32(d[7], d[8]),
            view_f32(d[9], d[10]).reshape((d[10] // 3, 3)),
            view_f32(d[11], d[12]).reshape((d[12] // 3, 3)))


# closest points, each ``(found, face, u, v, sign)`` (one wrapper per form: a kernel compiles
# only the forms it calls)
def geo_mesh_point(mid, px, py, pz, max_dist, a, b):
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return mesh_query_point(bounds, links, prims, tris, px, py, pz, max_dist)


def geo_mesh_point_no_sign(mid, px, py, pz, max_dist, a, b):
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return mesh_query_point_no_sign(bounds, links, prims, tris, px, py, pz, max_dist)


def geo_mesh_point_sign_normal(mid, px, py, pz, max_dist, a, b):
    d = view_i64(mid, MESH_WORDS)
    bounds, links, prims, tris = _mesh_bvh(d)
    return mesh_query_point_sign_normal(bounds, links, prims, tris, _mesh_average(d), px, py,
                                        pz, max_dist, a)


def _mesh_average(d):
    """The mesh's average edge length, computed by the first query that needs it after a build
    or refit (``weft.native.geometry.mesh``) and kept in the descriptor. Threads that find it stale
    at once all compute the same value and store the same aligned word, so a reader sees the
    stale mark or the value, never a mixture."""
    w = d[MESH_AVG]
    if w == AVG_STALE:
        avg = mesh_average_edge(view_f32(d[3], d[4]).reshape((d[4] // 3, 3)),
                                view_i32(d[5], d[6]))
        w = float_bits(np.float64(avg))
        d[MESH_AVG] = w
    return np.float32(bits_float(w))


def geo_mesh_point_sign_winding_number(mid, px, py, pz, max_dist, a, b):
    d = view_i64(mid, MESH_WORDS)
    bounds, links, prims, tris = _mesh_bvh(d)
    props = view_f32(d[15], d[16]).reshape((d[16] // PROPS, PROPS))
    return mesh_query_point_sign_winding_number(bounds, links, prims, tris, props, px, py, pz,
                                                max_dist, a, b)


def geo_mesh_furthest_point_no_sign(mid, px, py, pz, min_dist, a, b):
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return mesh_query_furthest_point_no_sign(bounds, links, prims, tris, px, py, pz, min_dist)


def geo_mesh_point_sign_parity(mid, px, py, pz, max_dist, a, b):
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return mesh_query_point_sign_parity(bounds, links, prims, tris, px, py, pz, max_dist,
                                        np.int32(a), b)


def geo_mesh_ray(mid, ox, oy, oz, dx, dy, dz, max_t, root):
    """``(hit, t, u, v, sign, nx, ny, nz, face)`` of the nearest hit below node ``root`` (-1:
    the whole mesh)."""
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return mesh_query_ray(bounds, links, prims, tris, ox, oy, oz, dx, dy, dz, max_t, root)


def geo_mesh_ray_anyhit(mid, ox, oy, oz, dx, dy, dz, max_t, root):
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return mesh_query_ray_anyhit(bounds, links, tris, ox, oy, oz, dx, dy, dz, max_t, root)


def geo_mesh_ray_count(mid, ox, oy, oz, dx, dy, dz, root):
    bounds, links, prims, tris = _mesh_bvh(view_i64(mid, MESH_WORDS))
    return np.int32(mesh_query_ray_count_intersections(bounds, links, tris, ox, oy, oz, dx, dy,
                                                       dz, root))


def geo_mesh_eval(mid, kind, face, u, v):
    """``kind`` 0 ``mesh_eval_position``, 1 ``mesh_eval_velocity``, 2 ``mesh_eval_face_normal``
    (a 3-tuple)."""
    d = view_i64(mid, MESH_WORDS)
    indices = view_i32(d[5], d[6])
    if kind == 1:
        return mesh_eval_velocity(view_f32(d[17], d[18]).reshape((d[18] // 3, 3)), indices,
                                  face, u, v)
    points = view_f32(d[3], d[4]).reshape((d[4] // 3, 3))
    if kind == 0:
        return mesh_eval_position(points, indices, face, u, v)
    return mesh_eval_face_normal(points, indices, face)


def geo_mesh_vertex(mid, kind, index):
    """``kind`` 0 ``mesh_get_point``, 1 ``mesh_get_velocity`` (a 3-tuple)."""
    d = view_i64(mid, MESH_WORDS)
    indices = view_i32(d[5], d[6])
    if kind == 0:
        return mesh_get_point(view_f32(d[3], d[4]).reshape((d[4] // 3, 3)), indices, index)
    return mesh_get_velocity(view_f32(d[17], d[18]).reshape((d[18] // 3, 3)), indices, index)


# derivatives with respect to the mesh's points (kind 0) or velocities (kind 1): the adjoint
# adds into the gradient buffer the runtime puts into the descriptor for the launch
# (weft.runtime.geometry.mesh_derivatives), the tangent reads the tangent buffer
def _values_len(d, kind):
    return d[4] if kind == 0 else d[18]


def geo_mesh_vertex_adj(mid, kind, index, ax, ay, az):
    """``grad[indices[index]] += (ax, ay, az)`` atomically (nothing without a gradient buffer
    or for an index out of range)."""
    d = view_i64(mid, MESH_WORDS)
    address = d[MESH_GRAD + kind]
    if address != 0:
        n = _values_len(d, kind)
        i = mesh_get_index(view_i32(d[5], d[6]), index)
        if i >= 0 and 3 * i + 2 < n:
            g = view_f32(address, n)
            geo_atomic_add(g, 3 * i, np.float32(ax))
            geo_atomic_add(g, 3 * i + 1, np.float32(ay))
            geo_atomic_add(g, 3 * i + 2, np.float32(az))
    return 0


def geo_mesh_eval_adj(mid, kind, face, u, v, ax, ay, az):
    """The adjoint of ``p0 u + p1 v + p2 (1 - u - v)`` into the face's three vertices."""
    u = np.float32(u)
    v = np.float32(v)
    w = np.float32(1.0) - u - v
    geo_mesh_vertex_adj(mid, kind, 3 * face, ax * u, ay * u, az * u)
    geo_mesh_vertex_adj(mid, kind, 3 * face + 1, ax * v, ay * v, az * v)
    geo_mesh_vertex_adj(mid, kind, 3 * face + 2, ax * w, ay * w, az * w)
    return 0


def geo_mesh_vertex_tan(mid, kind, index):
    """The tangent of ``values[indices[index]]`` (zeros without a tangent buffer)."""
    d = view_i64(mid, MESH_WORDS)
    address = d[MESH_TAN + kind]
    z = np.float32(0.0)
    if address == 0:
        return z, z, z
    n = _values_len(d, kind)
    i = mesh_get_index(view_i32(d[5], d[6]), index)
    if i < 0 or 3 * i + 2 >= n:
        return z, z, z
    t = view_f32(address, n)
    return t[3 * i], t[3 * i + 1], t[3 * i + 2]


def geo_mesh_eval_tan(mid, kind, face, u, v):
    """The tangent of ``p0 u + p1 v + p2 (1 - u - v)`` along the vertices' tangents."""
    u = np.float32(u)
    v = np.float32(v)
    w = np.float32(1.0) - u - v
    a = geo_mesh_vertex_tan(mid, kind, 3 * face)
    b = geo_mesh_vertex_tan(mid, kind, 3 * face + 1)
    c = geo_mesh_vertex_tan(mid, kind, 3 * face + 2)
    return (a[0] * u + b[0] * v + c[0] * w, a[1] * u + b[1] * v + c[1] * w,
            a[2] * u + b[2] * v + c[2] * w)


def geo_mesh_get_index(mid, index):
    d = view_i64(mid, MESH_WORDS)
    return mesh_get_index(view_i32(d[5], d[6]), index)


def f32_bits(x):
    return float_bits(np.float64(x))


def bits_f32(w):
    return np.float32(bits_float(w))


def geo_tri_tri(v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z, u0x, u0y, u0z, u1x, u1y, u1z,
                u2x, u2y, u2z):
    return intersect_tri_tri(v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z, u0x, u0y, u0z,
                             u1x, u1y, u1z, u2x, u2y, u2z)


def geo_tri_tri_d(v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z, u0x, u0y, u0z, u1x, u1y, u1z,
                  u2x, u2y, u2z):
    return intersect_tri_tri_d(v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z, u0x, u0y, u0z,
                               u1x, u1y, u1z, u2x, u2y, u2z)


def _pack_state(found, index, oid, s):
    return (np.int64(found), np.int64(index), np.int64(oid), np.int64(s[0]), np.int64(s[1]),
            np.int64(s[2]), np.int64(s[3]), np.int64(s[4]), f32_bits(s[5]), f32_bits(s[6]),
            f32_bits(s[7]), f32_bits(s[8]), f32_bits(s[9]), f32_bits(s[10]), f32_bits(s[11]),
            f32_bits(s[12]))


def _unpack_state(q):
    return (np.int32(q[3]), np.int32(q[4]), np.int32(q[5]), np.int32(q[6]), np.int32(q[7]),
            bits_f32(q[8]), bits_f32(q[9]), bits_f32(q[10]), bits_f32(q[11]), bits_f32(q[12]),
            bits_f32(q[13]), bits_f32(q[14]), bits_f32(q[15]))


def geo_mesh_query_aabb(mid, kind, x0, y0, z0, x1, y1, z1):
    """``kind`` 0 ``mesh_query_aabb`` (lower, upper), 1 ``mesh_query_sphere`` (centre,
    radius in ``x1``)."""
    d = view_i64(mid, MESH_WORDS)
    links = view_i32(d[9], d[10]).reshape((d[10] // 4, 4))
    if kind == 0:
        s = mesh_query_aabb(links, x0, y0, z0, x1, y1, z1)
    else:
        s = mesh_query_sphere(links, x0, y0, z0, x1)
    return _pack_state(0, -1, mid, s)


def geo_mesh_next(q):
    bounds, links, prims, tris = _mesh_bvh(view_i64(q[2], MESH_WORDS))
    found, face, s = mesh_query_next(bounds, links, prims, tris, _unpack_state(q))
    return _pack_state(1 if found else 0, face, q[2], s)


def geo_bvh_group_root(bid, group):
    """``bvh_get_group_root``: the root node of ``group``'s subtree, -1 when it has no item."""
    d = view_i64(bid, BVH_WORDS)
    return group_root(view_i32(d[13], d[14]).reshape((d[14] // 2, 2)), group)


def geo_mesh_group_root(mid, group):
    """``mesh_get_group_root``: as ``bvh_get_group_root`` on the mesh's tree."""
    d = view_i64(mid, MESH_WORDS)
    return group_root(view_i32(d[19], d[20]).reshape((d[20] // 2, 2)), group)


def geo_bvh_query(bid, kind, x0, y0, z0, x1, y1, z1, root):
    """``kind`` 0 ``bvh_query_aabb`` (lower, upper), 1 ``bvh_query_ray`` (origin, direction),
    2 ``bvh_query_sphere`` (centre, radius in ``x1``)."""
    d = view_i64(bid, BVH_WORDS)
    links = view_i32(d[5], d[6]).reshape((d[6] // 4, 4))
    if kind == 0:
        s = bvh_query_aabb(links, root, x0, y0, z0, x1, y1, z1)
    elif kind == 1:
        s = bvh_query_ray(links, root, x0, y0, z0, x1, y1, z1)
    else:
        s = bvh_query_sphere(links, root, x0, y0, z0, x1)
    return _pack_state(0, -1, bid, s)


def geo_bvh_query_capsule(bid, ox, oy, oz, dx, dy, dz, radius, root):
    """``bvh_query_capsule``: boxes inflated by ``radius`` met by the segment ``o + s d``."""
    d = view_i64(bid, BVH_WORDS)
    links = view_i32(d[5], d[6]).reshape((d[6] // 4, 4))
    return _pack_state(0, -1, bid, bvh_query_capsule(links, root, ox, oy, oz, dx, dy, dz,
                                                     radius))


def geo_bvh_next(q, max_dist):
    bounds, links, prims, lowers, uppers = _bvh_arrays(view_i64(q[2], BVH_WORDS))
    found, item, s = bvh_query_next(bounds, links, prims, lowers, uppers, _unpack_state(q),
                                    max_dist)
    return _pack_state(1 if found else 0, item, q[2], s)


def _batch_words(q, s, out):
    """The query's 16 words (``_pack_state``) at the start of a tiled query's batch ``out``,
    its first word 1 while the batch holds an item (``tile_query_valid``)."""
    w = _pack_state(0, -1, q[2], s)
    for k in range(16):
        out[k] = w[k]
    out[0] = 1 if out[16] >= 0 else 0


def geo_bvh_next_batch(q, out):
    """A block's step of a tiled BVH query (``tile_bvh_query_next``): the next items in
    ``out[16:]``, -1 past the last, after the query's new words (``_batch_words``). ``out`` is
    the kernel's (these helpers allocate nothing; nor do they return an array: compiled without
    reference counting, a returned argument would be released once more by the caller)."""
    bounds, links, prims, lowers, uppers = _bvh_arrays(view_i64(q[2], BVH_WORDS))
    s = _unpack_state(q)
    found = True
    for k in range(out.shape[0] - 16):
        item = -1
        if found:
            found, item, s = bvh_query_next(bounds, links, prims, lowers, uppers, s,
                                            np.float32(np.inf))
        out[16 + k] = item if found else -1
    _batch_words(q, s, out)


def geo_mesh_next_batch(q, out):
    """``tile_mesh_query_aabb_next``: as ``geo_bvh_next_batch``, the next faces."""
    bounds, links, prims, tris = _mesh_bvh(view_i64(q[2], MESH_WORDS))
    s = _unpack_state(q)
    found = True
    for k in range(out.shape[0] - 16):
        face = -1
        if found:
            found, face, s = mesh_query_next(bounds, links, prims, tris, s)
        out[16 + k] = face if found else -1
    _batch_words(q, s, out)


#: the wrappers, in dependency order (they call the cores, never each other)
PORTABLE = ("f32_bits", "bits_f32", "_pack_state", "_unpack_state", "_mesh_bvh",
            "_values_len", "_mesh_average", "_bvh_arrays", "_batch_words") + \
    tuple(n for n in list(globals()) if n.startswith("geo_"))
#: wrappers inlined into kernels on the CPU (the iterator step runs once per candidate)
INLINE = ("geo_hg_next", "geo_mesh_next", "geo_bvh_next", "_pack_state", "_unpack_state",
          "f32_bits", "bits_f32", "_mesh_bvh", "_bvh_arrays")


def bind(namespace, target, jit=None, inline_jit=None, lazy=False):
    """Compile the cores and the wrappers for ``target`` (``"cpu"``, ``"cuda"``, ``"python"``)
    with ``jit`` (None: uncompiled) and add the wrappers to ``namespace``. Returns the
    ``portable.Namespace`` holding the wrappers and the cores; with ``lazy`` nothing is added
    to ``namespace``, and each is made at its first lookup there (``_wk``'s module
    ``__getattr__`` on the CPU: a kernel calls a few of the 340)."""
    ns = Namespace({"math": math, "np": np, "__name__": __name__})  # (caching: a module name)
    views.bind(ns, target)
    for mod in (volume_query, hashgrid, mesh_query):
        # the mesh cores are called, not inlined, by kernels, with their small helpers
        # (mesh_query.INLINE_HELPERS) inlined into them: rays through a kernel 1.3x faster
        # (single-threaded CPU time, 200k rays on the 260k-triangle torus: 520 ms against 680
        # ms), for a cold compile of the cores about 11 s longer, once per process (a kernel
        # loaded from weft's cache compiles none). WEFT_MESH_INLINE=0: the faster compile
        inl = None if mod is mesh_query and os.environ.get("WEFT_MESH_INLINE", "1") == "0" \
            else inline_jit
        ns.take(mod.compile_for(jit, inl, lazy=True) if jit is not None else _uncompiled(mod))
    root = types.FunctionType(bvh_groups.group_root.__code__, ns, "group_root")
    if jit is not None:
        ns.later("group_root", lambda: jit(root))
    else:
        ns["group_root"] = root
    ns.update({"GRID_FLOAT": volume_query.GRID_FLOAT, "GRID_DOUBLE": volume_query.GRID_DOUBLE,
               "GRID_VEC3F": volume_query.GRID_VEC3F,
               "VOL_WORDS": VOL_WORDS, "HG_WORDS": HG_WORDS, "MESH_WORDS": MESH_WORDS,
               "BVH_WORDS": BVH_WORDS, "PROPS": mesh_winding.PROPS, "TRI_COLS": TRI_COLS,
               "MESH_GRAD": MESH_GRAD, "MESH_TAN": MESH_TAN, "MESH_AVG": MESH_AVG,
               "AVG_STALE": AVG_STALE,
               "geo_atomic_add": _atomic_add(target)})
    compile_into(ns, [(name, globals()[name]) for name in PORTABLE],
                 jit if jit is not None else (lambda f: f),
                 inline_jit if jit is not None else None, INLINE)
    exported = PORTABLE + kernel_api_volume.bind(ns, jit)
    ns.exported = frozenset(exported)
    if not lazy:
        namespace.update({name: ns[name] for name in exported})
    return ns


def _atomic_add(target):
    """``add(array, index, value)`` of ``target`` (plain ``+=`` uncompiled)."""
    if target == "cpu":
        from ..atomics import atomic_add
        return atomic_add
    if target == "cuda":  # a device function reaching the stub through a global module
        from numba import cuda    # (numba-cuda types neither a bound stub nor a captured one)
        ns = {"cuda": cuda}
        exec("def add(a, i, value):\n    return cuda.atomic.add(a, i, value)\n", ns)  # noqa: S102
        return cuda.jit(device=True)(ns["add"])

    def add(a, i, value):
        a[i] += value
        return a[i]
    return add


def _uncompiled(mod):
    return mod.compile_for(lambda f: f)
