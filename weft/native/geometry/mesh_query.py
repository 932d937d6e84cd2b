"""Portable mesh closest-point queries of Warp 1.19 (``mesh_query_point`` and its sign
variants, ``mesh_query_furthest_point_no_sign``), the mesh's array reads (``mesh_eval_*``,
``mesh_get_*``), and ``compile_for``, which compiles every portable core of the mesh and BVH
modules for one target.

Arrays: ``bounds``, ``links``, ``prims`` (the BVH, ``weft.native.geometry.bvh_build``), ``tris``
(float32 (m, 10): triangle ``prims[k]``'s vertices in row k, its sliver flag in column 9; see
``weft.native.geometry.mesh``), ``props`` (winding-number expansions, ``mesh_winding``; empty when
the mesh was built without them), ``points``, ``indices`` and ``velocities`` as given.

Results are tuples ``(found, face, u, v, sign)``: ``u``, ``v`` are barycentrics of the face's
first and second vertex (the point is ``u*p0 + v*p1 + (1 - u - v)*p2``), ``sign`` is -1
inside, 1 outside (0 for the unsigned queries); a query finds a point only strictly closer
than ``max_dist`` (strictly farther than ``min_dist`` for the furthest point). Warp's rules,
reproduced: faces whose ``|n| / sum |e|^2 < 1e-6`` (slivers) are skipped; the walk visits the
nearer child first (the right child on ties) with a stack, pruning by the best distance so
far, so among faces at exactly the same distance Warp's face wins; ``u`` is recomputed as
``1 - v - w``, as Warp does. Signs: ``mesh_query_point`` votes with three axis-aligned rays,
``_sign_normal`` uses the angle-weighted normal of the closest features within
``epsilon * average edge length``, ``_sign_winding_number`` thresholds the generalized winding
number (the ray vote when the mesh has no expansions), ``_sign_parity`` counts crossings of
``n_sample`` perturbed rays.
"""
import math

import numpy as np

from . import bvh_query, mesh_geom, mesh_ray, mesh_winding, stackmem as _stackmem, tri_tri
from .portable import Namespace, compile_into, variant
from .mesh_geom import (F0, F1, PI_F, bary_dist_sq, dist_aabb_sq, dist_aabb_sq_f, dot3, facos,  # noqa
    f32x3, far_aabb_sq, finite3, fsqrt, length3, normalize3, sub3, tri_edges, tri_row,
    triangle_closest_point,
    triangle_furthest_point, triangle_normal)
from .mesh_ray import mesh_inside_parity, mesh_inside_ray_tracing  # noqa: F401
from .mesh_winding import mesh_winding_number  # noqa: F401

TRI_COLS = 10  # a row of ``tris``: the vertices (9), the sliver flag (40 bytes)

STACK_SIZE = 64
NO_FACE = np.int32(-1)
stackmem = _stackmem.PYTHON   # rebound per target by compile_for


def _box_d2(bounds, node, px, py, pz, fin):
    """Squared distance to a node's box (``fin``: the point is finite, plain min/max)."""
    if fin:
        return dist_aabb_sq_f(px, py, pz, bounds[node, 0], bounds[node, 1], bounds[node, 2],
                              bounds[node, 3], bounds[node, 4], bounds[node, 5])
    return dist_aabb_sq(px, py, pz, bounds[node, 0], bounds[node, 1], bounds[node, 2],
                        bounds[node, 3], bounds[node, 4], bounds[node, 5])


def _box_far2(bounds, node, px, py, pz, fin):
    """Squared distance to a node's farthest corner (``fin`` unused: ``_box_d2``'s
    signature)."""
    return far_aabb_sq(px, py, pz, bounds[node, 0], bounds[node, 1], bounds[node, 2],
                       bounds[node, 3], bounds[node, 4], bounds[node, 5])


def _nearer(a, b):
    """The order of the closest-point walks: ``a`` is better than ``b``."""
    return a < b


def _farther(a, b):
    """The order of the furthest-point walk."""
    return a > b


def _pop(stack, count):
    return count - 1, stack[count - 1]


def push_children(stack, count, left, right, dl, dr, bound):
    """Push the children of a node whose boxes may hold a face better than ``bound``
    (``_nearer``: ``dl``/``dr`` are their boxes' squared distances), the better one last (the
    right one on ties), so that it is visited first, as Warp's walks. The new count."""
    swap = _nearer(dl, dr)
    c0 = right if swap else left
    c1 = left if swap else right
    d0 = dr if swap else dl
    d1 = dl if swap else dr
    if _nearer(d0, bound):
        stack[count] = c0
        count += 1
    if _nearer(d1, bound):
        stack[count] = c1
        count += 1
    return count


def _leaf_scan(tris, first, last, px, py, pz, best_d, best, bv, bw):
    """The faces ``[first, last)`` of a leaf (slivers skipped) against the best so far: the new
    ``(best_d, best, bv, bw)`` (squared distance, row, barycentrics v and w)."""
    for k in range(first, last):
        if tris[k, 9] != F0:
            continue
        ax, ay, az, bx, by, bz, cx, cy, cz = tri_row(tris, k)
        u, v = triangle_closest_point(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz)
        d = bary_dist_sq(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz, u, v)
        if _nearer(d, best_d):
            best_d = d
            best = k
            bv = v
            bw = F1 - u - v
    return best_d, best, bv, bw


def mesh_closest(bounds, links, prims, tris, px, py, pz, max_dist):
    """The closest face strictly within ``max_dist``: ``(found, face, u, v)`` (Warp's walk).
    ``mesh_furthest`` is the same walk with the order reversed (``_farther``)."""
    limit = np.float32(max_dist) * np.float32(max_dist)
    if links.shape[0] == 0:
        return False, NO_FACE, F0, F0
    best_d = limit
    best = -1
    bv = F0
    bw = F0
    fin = finite3(px, py, pz)
    stack = stackmem.local.array(64, np.int32)
    stack[0] = 0
    count = 1
    while count > 0:
        count, node = _pop(stack, count)
        if _nearer(best_d, _box_d2(bounds, node, px, py, pz, fin)):
            continue
        first = links[node, 0]
        if first >= 0:
            best_d, best, bv, bw = _leaf_scan(tris, first, links[node, 1], px, py, pz, best_d,
                                              best, bv, bw)
            continue
        left = links[node, 1]
        right = node + 1
        count = push_children(stack, count, left, right, _box_d2(bounds, left, px, py, pz, fin),
                              _box_d2(bounds, right, px, py, pz, fin), best_d)
    if _nearer(best_d, limit):
        return True, np.int32(prims[best]), F1 - bv - bw, bv
    return False, NO_FACE, F0, F0


#: the walks for the furthest point (see ``portable.variant``): the order reversed, the
#: distances to the boxes' farthest corners and to the triangles' farthest vertices
_push_far = variant(push_children, "_push_far", _nearer="_farther")
_leaf_scan_far = variant(_leaf_scan, "_leaf_scan_far", _nearer="_farther",
                         triangle_closest_point="triangle_furthest_point")
mesh_furthest = variant(mesh_closest, "mesh_furthest", "The furthest face strictly beyond "
                        "``min_dist`` (``mesh_closest``'s walk, reversed): ``(found, face, u, "
                        "v)``.", _nearer="_farther", _box_d2="_box_far2",
                        push_children="_push_far", _leaf_scan="_leaf_scan_far")


def mesh_query_point_no_sign(bounds, links, prims, tris, px, py, pz, max_dist):
    """``wp.mesh_query_point_no_sign``: ``(found, face, u, v, 0)``."""
    found, face, u, v = mesh_closest(bounds, links, prims, tris, np.float32(px),
                                     np.float32(py), np.float32(pz), max_dist)
    return found, face, u, v, F0


def mesh_query_point(bounds, links, prims, tris, px, py, pz, max_dist):
    """``wp.mesh_query_point``: the closest point, signed by the vote of three axis rays (the
    sign looks at the whole mesh, whatever ``max_dist``)."""
    px, py, pz = f32x3(px, py, pz)
    found, face, u, v = mesh_closest(bounds, links, prims, tris, px, py, pz, max_dist)
    if not found:
        return False, face, u, v, F0
    return True, face, u, v, mesh_inside_ray_tracing(bounds, links, tris, px, py, pz)


def mesh_query_point_sign_parity(bounds, links, prims, tris, px, py, pz, max_dist, n_sample,
                                 perturbation_scale):
    """``wp.mesh_query_point_sign_parity`` (Warp's defaults: 1 sample, scale 0.1)."""
    px, py, pz = f32x3(px, py, pz)
    found, face, u, v = mesh_closest(bounds, links, prims, tris, px, py, pz, max_dist)
    if not found:
        return False, face, u, v, F0
    return True, face, u, v, mesh_inside_parity(bounds, links, tris, px, py, pz, n_sample,
                                                perturbation_scale)


def mesh_query_point_sign_winding_number(bounds, links, prims, tris, props, px, py, pz,
                                         max_dist, accuracy, threshold):
    """``wp.mesh_query_point_sign_winding_number`` (Warp's defaults: accuracy 2, threshold
    0.5): inside (-1) when the winding number exceeds ``threshold``; without expansions
    (``props`` empty: built without ``support_winding_number``) the ray vote decides."""
    px, py, pz = f32x3(px, py, pz)
    found, face, u, v = mesh_closest(bounds, links, prims, tris, px, py, pz, max_dist)
    if not found:
        return False, face, u, v, F0
    if props.shape[0] == 0:
        return True, face, u, v, mesh_inside_ray_tracing(bounds, links, tris, px, py, pz)
    w = mesh_winding_number(links, tris, props, px, py, pz, accuracy)
    return True, face, u, v, (np.float32(-1.0) if w > np.float32(threshold) else F1)


def mesh_query_furthest_point_no_sign(bounds, links, prims, tris, px, py, pz, min_dist):
    """``wp.mesh_query_furthest_point_no_sign``: the farthest vertex of the faces, found only
    strictly beyond ``min_dist``: ``(found, face, u, v, 0)``."""
    px, py, pz = f32x3(px, py, pz)
    found, face, u, v = mesh_furthest(bounds, links, prims, tris, px, py, pz, min_dist)
    return found, face, u, v, F0


def _angle(ux, uy, uz, vx, vy, vz):
    """The angle between two vectors (Warp's ``acos(dot(normalize(u), normalize(v)))``)."""
    ux, uy, uz = normalize3(ux, uy, uz)
    vx, vy, vz = normalize3(vx, vy, vz)
    return facos(dot3(ux, uy, uz, vx, vy, vz))


def _feature_weight(ax, ay, az, bx, by, bz, cx, cy, cz, qx, qy, qz, eps2):
    """Warp's angle weight of the closest feature of triangle abc at its point q: the
    vertex's angle within ``sqrt(eps2)`` of a vertex, pi near an edge, 2 pi inside."""
    e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = tri_edges(ax, ay, az, bx, by, bz, cx, cy, cz)
    cpx, cpy, cpz = sub3(qx, qy, qz, ax, ay, az)
    cqx, cqy, cqz = sub3(qx, qy, qz, bx, by, bz)
    lp = dot3(cpx, cpy, cpz, cpx, cpy, cpz)
    if lp < eps2:
        return _angle(e0x, e0y, e0z, e1x, e1y, e1z)
    lq = dot3(cqx, cqy, cqz, cqx, cqy, cqz)
    if lq < eps2:
        return _angle(e2x, e2y, e2z, -e0x, -e0y, -e0z)
    crx, cry, crz = sub3(qx, qy, qz, cx, cy, cz)
    if dot3(crx, cry, crz, crx, cry, crz) < eps2:
        return _angle(-e1x, -e1y, -e1z, -e2x, -e2y, -e2z)
    n0 = dot3(e0x, e0y, e0z, e0x, e0y, e0z)
    n1 = dot3(e1x, e1y, e1z, e1x, e1y, e1z)
    n2 = dot3(e2x, e2y, e2z, e2x, e2y, e2z)
    a = dot3(e0x, e0y, e0z, cpx, cpy, cpz)
    b = dot3(e2x, e2y, e2z, cqx, cqy, cqz)
    c = dot3(e1x, e1y, e1z, cpx, cpy, cpz)
    if lp * n0 - a * a < eps2 * n0 or lq * n2 - b * b < eps2 * n2 or lp * n1 - c * c < eps2 * n1:
        return PI_F
    return np.float32(2.0) * PI_F


def mesh_query_point_sign_normal(bounds, links, prims, tris, avg_edge, px, py, pz, max_dist,
                                 epsilon):
    """``wp.mesh_query_point_sign_normal`` (Warp's default epsilon 1e-3): faces within
    ``epsilon * avg_edge`` of the closest distance count as tied, and the sign is that of
    ``dot(sum of their angle-weighted unit normals, p - closest point)`` (1 when > 0)."""
    px, py, pz = f32x3(px, py, pz)
    md = np.float32(max_dist)
    if links.shape[0] == 0:
        return False, NO_FACE, F0, F0, F0
    fin = finite3(px, py, pz)
    eps = np.float32(avg_edge) * np.float32(epsilon)
    eps2 = eps * eps
    best_d = md
    best = -1
    bv = F0
    bw = F0
    ax_ = F0
    ay_ = F0
    az_ = F0
    stack = stackmem.local.array(64, np.int32)
    stack[0] = 0
    count = 1
    while count > 0:
        count, node = _pop(stack, count)
        reach = (best_d + eps) * (best_d + eps)
        if _box_d2(bounds, node, px, py, pz, fin) > reach:
            continue
        first = links[node, 0]
        if first >= 0:
            for k in range(first, links[node, 1]):
                if tris[k, 9] != F0:
                    continue
                a0, a1, a2, b0, b1, b2, c0, c1, c2 = tri_row(tris, k)
                u, v = triangle_closest_point(a0, a1, a2, b0, b1, b2, c0, c1, c2, px, py, pz)
                w = F1 - u - v
                qx = u * a0 + v * b0 + w * c0
                qy = u * a1 + v * b1 + w * c1
                qz = u * a2 + v * b2 + w * c2
                d = fsqrt(dot3(qx - px, qy - py, qz - pz, qx - px, qy - py, qz - pz))
                if not (d < best_d + eps):
                    continue
                wt = _feature_weight(a0, a1, a2, b0, b1, b2, c0, c1, c2, qx, qy, qz, eps2)
                nx, ny, nz = triangle_normal(a0, a1, a2, b0, b1, b2, c0, c1, c2)
                nx, ny, nz = normalize3(nx, ny, nz)
                if d > best_d - eps:
                    ax_ += wt * nx
                    ay_ += wt * ny
                    az_ += wt * nz
                    if d < best_d:
                        best_d = d
                        best = k
                        bv = v
                        bw = w
                else:
                    best_d = d
                    best = k
                    bv = v
                    bw = w
                    ax_ = wt * nx
                    ay_ = wt * ny
                    az_ = wt * nz
            continue
        left = links[node, 1]
        right = node + 1
        count = push_children(stack, count, left, right, _box_d2(bounds, left, px, py, pz, fin),
                              _box_d2(bounds, right, px, py, pz, fin),
                              (best_d + eps) * (best_d + eps))
    if not (best_d < md):
        return False, NO_FACE, F0, F0, F0
    u = F1 - bv - bw
    qx = tris[best, 0] * u + tris[best, 3] * bv + tris[best, 6] * bw
    qy = tris[best, 1] * u + tris[best, 4] * bv + tris[best, 7] * bw
    qz = tris[best, 2] * u + tris[best, 5] * bv + tris[best, 8] * bw
    s = F1 if dot3(ax_, ay_, az_, px - qx, py - qy, pz - qz) > F0 else np.float32(-1.0)
    return True, np.int32(prims[best]), u, bv, s


# ------------------------------------------------------------------------------ array reads
def _face_ok(indices, npoints, face):
    """Whether ``face`` and its three vertex indices are in range (else the reads return 0)."""
    if face < 0 or 3 * face + 2 >= indices.shape[0]:
        return False
    for k in range(3):
        i = indices[3 * face + k]
        if i < 0 or i >= npoints:
            return False
    return True


def mesh_eval_position(points, indices, face, u, v):
    """``wp.mesh_eval_position``: ``p0*u + p1*v + p2*(1 - u - v)`` (zeros for a face out of
    range or a mesh without points)."""
    return _interp(points, indices, face, np.float32(u), np.float32(v))


def mesh_eval_velocity(velocities, indices, face, u, v):
    """``wp.mesh_eval_velocity`` (zeros for a mesh without velocities)."""
    return _interp(velocities, indices, face, np.float32(u), np.float32(v))


def _interp(values, indices, face, u, v):
    if not _face_ok(indices, values.shape[0], face):
        return F0, F0, F0
    i = indices[3 * face]
    j = indices[3 * face + 1]
    k = indices[3 * face + 2]
    w = F1 - u - v
    return (values[i, 0] * u + values[j, 0] * v + values[k, 0] * w,
            values[i, 1] * u + values[j, 1] * v + values[k, 1] * w,
            values[i, 2] * u + values[j, 2] * v + values[k, 2] * w)


def mesh_eval_face_normal(points, indices, face):
    """``wp.mesh_eval_face_normal``: ``normalize(cross(p1 - p0, p2 - p0))``."""
    if not _face_ok(indices, points.shape[0], face):
        return F0, F0, F0
    i = indices[3 * face]
    j = indices[3 * face + 1]
    k = indices[3 * face + 2]
    nx, ny, nz = triangle_normal(points[i, 0], points[i, 1], points[i, 2], points[j, 0],
                                 points[j, 1], points[j, 2], points[k, 0], points[k, 1],
                                 points[k, 2])
    return normalize3(nx, ny, nz)


def mesh_get_point(points, indices, index):
    """``wp.mesh_get_point``: ``points[indices[index]]`` (``index`` a face-vertex index)."""
    return _vertex(points, indices, index)


def mesh_get_velocity(velocities, indices, index):
    """``wp.mesh_get_velocity``: ``velocities[indices[index]]``."""
    return _vertex(velocities, indices, index)


def _vertex(values, indices, index):
    if index < 0 or index >= indices.shape[0]:
        return F0, F0, F0
    i = indices[index]
    if i < 0 or i >= values.shape[0]:
        return F0, F0, F0
    return values[i, 0], values[i, 1], values[i, 2]


def mesh_average_edge(points, indices):
    """Warp's average edge length: ``sum / (3 * num_tris)`` of ``|p0 - p1| + |p0 - p2| +
    |p2 - p1|``, summed in float32 in triangle order as Warp's refit does (the scale of
    ``mesh_query_point_sign_normal``'s epsilon; NaN for no triangles)."""
    s = F0
    m = indices.shape[0] // 3
    for t in range(m):
        i = indices[3 * t]
        j = indices[3 * t + 1]
        k = indices[3 * t + 2]
        ax, ay, az = points[i, 0], points[i, 1], points[i, 2]
        bx, by, bz = points[j, 0], points[j, 1], points[j, 2]
        cx, cy, cz = points[k, 0], points[k, 1], points[k, 2]
        s += (length3(ax - bx, ay - by, az - bz) + length3(ax - cx, ay - cy, az - cz)) + \
            length3(cx - bx, cy - by, cz - bz)
    return s / np.float32(3 * m)


def mesh_get_index(indices, index):
    """``wp.mesh_get_index``: ``indices[index]`` (-1 out of range)."""
    if index < 0 or index >= indices.shape[0]:
        return np.int32(-1)
    return np.int32(indices[index])


# ------------------------------------------------------------------------------ compiling
_OWN = ("_box_d2", "_box_far2", "_nearer", "_farther", "_pop", "push_children", "_push_far",
        "_leaf_scan", "_leaf_scan_far",
        "mesh_closest", "mesh_furthest", "mesh_query_point_no_sign", "mesh_query_point",
        "mesh_query_point_sign_parity", "mesh_query_point_sign_winding_number",
        "mesh_query_furthest_point_no_sign", "_angle", "_feature_weight",
        "mesh_query_point_sign_normal",
        "_face_ok", "_interp", "mesh_eval_position", "mesh_eval_velocity",
        "mesh_eval_face_normal", "_vertex", "mesh_get_point", "mesh_get_velocity",
        "mesh_get_index", "mesh_average_edge")
_MODULES = (mesh_geom, tri_tri, bvh_query, mesh_ray, mesh_winding)

#: every portable function, callees first, as (module, name)
PORTABLE = tuple((m, n) for m in _MODULES for n in m.PORTABLE) + \
    tuple((None, n) for n in _OWN)
#: per-node and per-triangle helpers of the walks, worth inlining into the walks on the CPU
#: (Numba calls between separately compiled functions are real calls that return tuples
#: through memory): inlined, a walk's inner loop is a tight loop; each entry point still
#: compiles once and is called once per query, so a kernel's compile time stays modest
INLINE_HELPERS = ("wmin", "wmax", "dot3", "sub3", "div3", "cross3", "_plane_dists", "_angle",
                  "ray_aabb", "ray_aabb_f",
                  "ray_aabb_robust", "ray_aabb_robust_f", "robust_finite", "ray_box",
                  "robust_box", "ray_woop", "fmaf", "diff_product", "dist_aabb_sq",
                  "dist_aabb_sq_f", "finite3", "f32x3", "ray_prepare", "ray_setup", "_permute",
                  "tri_ray", "ray_walk_setup", "robust_walk_setup", "walk_next", "walk_to_leaf", "mesh_walk_to_leaf", "_mesh_node_test",
                  "tri_edges", "_edge_dots", "_on_edge", "triangle_closest_point", "tri_row",
                  "bary_dist_sq", "_box_d2", "_box_far2", "_nearer", "_farther", "_pop",
                  "push_children", "_push_far", "_leaf_scan", "_leaf_scan_far", "mesh_box_test",
                  "mesh_face_test", "bvh_box_test", "_with", "_interp", "_face_ok")
#: the helpers and the entry points a kernel calls: no faster than ``INLINE_HELPERS`` (1M rays,
#: 100k closest points: the same times within 4%) and a kernel calling three queries took 59 s
#: to compile instead of 11.5 s (5.3 s with nothing inlined, but rays 1.5x slower)
INLINE = INLINE_HELPERS + ("mesh_query_next", "bvh_query_next", "ray_closest_sign",
                           "mesh_query_point_no_sign", "mesh_query_point", "mesh_query_ray",
                           "mesh_closest", "mesh_eval_position", "mesh_eval_velocity",
                           "mesh_get_point", "mesh_get_index", "mesh_get_velocity")
#: Numba options for the CPU (as ``volume_query``: the cores allocate nothing)
CPU_JIT_OPTIONS = dict(nogil=True, error_model="numpy", _nrt=False)


def _constants():
    ns = {"math": math, "np": np, "__name__": __name__}
    for m in _MODULES:
        for k, v in vars(m).items():
            if k.isupper() and isinstance(v, (int, float, np.floating, np.integer)):
                ns[k] = v
    for k, v in globals().items():
        if k.isupper() and isinstance(v, (int, float, np.floating, np.integer)):
            ns[k] = v
    return ns


def compile_for(jit, inline_jit=None, inline=INLINE_HELPERS, lazy=False):
    """A namespace (dict) of every portable mesh and BVH core compiled with ``jit`` (those
    named in ``inline`` with ``inline_jit`` when given: ``INLINE_HELPERS`` or ``INLINE``),
    calling each other's compiled versions, with ``stackmem`` bound for the target and
    ``fmaf`` native (``weft.native.geometry.stackmem``). CPU: ``compile_cpu()``; CUDA:
    ``compile_for(cuda.jit(device=True))``. ``lazy``: a ``portable.Namespace`` making each
    at its first lookup."""
    ns = Namespace(_constants())
    ns["stackmem"] = _stackmem.for_jit(jit)
    fns = [(name, getattr(mod, name) if mod is not None else globals()[name])
           for mod, name in PORTABLE]
    ns = compile_into(ns, fns, jit, inline_jit, inline, _stackmem.overrides(jit))
    return ns if lazy else ns.made()


def compile_cpu(cache=False, inline=INLINE_HELPERS):
    """The cores compiled for the CPU with ``CPU_JIT_OPTIONS``, the functions in ``inline``
    inlined into their callers (``INLINE_HELPERS``: the walks' per-node and per-triangle
    helpers; see ``INLINE``)."""
    import numba
    return compile_for(numba.njit(cache=cache, **CPU_JIT_OPTIONS),
                       numba.njit(cache=cache, inline="always", **CPU_JIT_OPTIONS), inline)
