"""Portable mesh ray queries and triangle iterators of Warp 1.19: ``mesh_query_ray`` (closest
hit), ``mesh_query_ray_anyhit``, ``mesh_query_ray_count_intersections``, the ray-cast
inside/outside tests behind ``mesh_query_point``'s and ``mesh_query_point_sign_parity``'s
signs, and ``mesh_query_aabb`` / ``mesh_query_sphere`` with ``mesh_query_next``.

Arrays (see ``weft.native.geometry.mesh``): the BVH's ``bounds``, ``links``, ``prims`` and ``tris``,
float32 (m, 10): the vertices of the triangle ``prims[k]`` in row k (leaf order, so a leaf's
triangles are contiguous), then a sliver flag (1.0 when Warp's closest-point queries skip the
triangle).

Traversal orders are Warp's, so ties resolve to Warp's face: the closest hit walks the nearer
child first with a stack (``stackmem.local.array``), pushing the farther one (ties of entry
distance go to the right child); a popped node is not re-tested, and the root's box is never
tested. The any-hit and counting walks and the per-axis sign rays visit boxes in pre-order,
right child first, which is exactly what Warp's push-both-children stack does, so they are
stackless. Rays use Warp's watertight triangle test (``mesh_geom.ray_triangle``): a ray
through a shared edge or vertex hits one of the faces (or both), never neither, and a ray
parallel to a face misses it.
"""
import numpy as np

from . import stackmem as _stackmem
from .portable import variant
from .bvh_query import _with, walk_to_leaf
from .mesh_geom import (F0, F1, FLT_MAX, _permute, aabb_aabb, cross3, dot3, f32x3, fclamp,  # noqa: F401
    finite3, normalize3, ray_aabb, ray_aabb_f, ray_aabb_robust, ray_aabb_robust_f, robust_finite,
    ray_setup, ray_woop, sphere_aabb, tri_edges, tri_row, triangle_closest_point, triangle_normal,
    wmax)

stackmem = _stackmem.PYTHON   # rebound per target by mesh_query.compile_for
STACK_SIZE = 64
TINY_DIR = np.float32(1.0e-20)
MESH_AABB = 0
MESH_SPHERE = 2
I0 = np.int32(0)


def tri_ray(tris, k, ray):
    """The watertight test of a ray against triangle row ``k``: (hit, t, u, v, det). ``ray``
    is ``ray_prepare``'s tuple: the permutation's vertex components are read directly."""
    kx, ky, kz, sx, sy, sz, ox, oy, oz = ray
    return ray_woop(tris[k, kx] - ox, tris[k, ky] - oy, tris[k, kz] - oz,
                    tris[k, 3 + kx] - ox, tris[k, 3 + ky] - oy, tris[k, 3 + kz] - oz,
                    tris[k, 6 + kx] - ox, tris[k, 6 + ky] - oy, tris[k, 6 + kz] - oz,
                    sx, sy, sz)


def ray_prepare(ox, oy, oz, dx, dy, dz):
    """Per-ray constants for ``tri_ray``: ``ray_setup``'s and the origin permuted."""
    kx, ky, kz, sx, sy, sz = ray_setup(dx, dy, dz)
    px, py, pz = _permute(ox, oy, oz, kx, ky, kz)
    return kx, ky, kz, sx, sy, sz, px, py, pz


def ray_walk_setup(ox, oy, oz, dx, dy, dz):
    """The constants of the walks with ``ray_box``: ``(ray, rx, ry, rz, fast, exact)``:
    ``ray_prepare``'s tuple, the reciprocal direction (Warp's 1e-20 for a zero component) and
    ``ray_box``'s flags."""
    rx = F1 / (dx if dx != F0 else TINY_DIR)
    ry = F1 / (dy if dy != F0 else TINY_DIR)
    rz = F1 / (dz if dz != F0 else TINY_DIR)
    return (ray_prepare(ox, oy, oz, dx, dy, dz), rx, ry, rz, dx != F0 and dy != F0 and dz != F0,
            not (finite3(ox, oy, oz) and finite3(rx, ry, rz)))


def robust_walk_setup(ox, oy, oz, dx, dy, dz):
    """The constants of the walks with ``robust_box``: ``(ray, rx, ry, rz, exact)``."""
    rx = F1 / dx
    ry = F1 / dy
    rz = F1 / dz
    return (ray_prepare(ox, oy, oz, dx, dy, dz), rx, ry, rz,
            not robust_finite(ox, oy, oz, dx, dy, dz, rx, ry, rz))


def walk_next(links, node, enter):
    """The node after ``node`` in a stackless walk (Warp's order on a leaf-ordered tree): its
    left child ``node + 1`` when it is internal and its box passed (``enter``), else the node
    past its subtree."""
    if enter and links[node, 0] < 0:
        return node + 1
    return links[node, 2]


def ray_box(bounds, node, ox, oy, oz, dx, dy, dz, rx, ry, rz, fast, exact):
    """Warp's ``mesh_query_ray_intersect_aabb``: the plain slab test when no direction
    component is zero (``fast``), else the robust one; ``exact`` (a non-finite origin or
    reciprocal direction) keeps ``fminf``'s NaN rules. ``(hit, t)``."""
    if exact:
        if fast:
            return ray_aabb(ox, oy, oz, rx, ry, rz, bounds[node, 0], bounds[node, 1],
                            bounds[node, 2], bounds[node, 3], bounds[node, 4], bounds[node, 5])
        return ray_aabb_robust(ox, oy, oz, dx, dy, dz, rx, ry, rz, bounds[node, 0],
                               bounds[node, 1], bounds[node, 2], bounds[node, 3],
                               bounds[node, 4], bounds[node, 5])
    if fast:
        return ray_aabb_f(ox, oy, oz, rx, ry, rz, bounds[node, 0], bounds[node, 1],
                          bounds[node, 2], bounds[node, 3], bounds[node, 4], bounds[node, 5])
    return ray_aabb_robust_f(ox, oy, oz, dx, dy, dz, rx, ry, rz, bounds[node, 0],
                             bounds[node, 1], bounds[node, 2], bounds[node, 3], bounds[node, 4],
                             bounds[node, 5])


def robust_box(bounds, node, ox, oy, oz, dx, dy, dz, rx, ry, rz, exact):
    """The robust slab test of a node's box (``exact``: keep ``fminf``'s NaN rules)."""
    if exact:
        return ray_aabb_robust(ox, oy, oz, dx, dy, dz, rx, ry, rz, bounds[node, 0],
                               bounds[node, 1], bounds[node, 2], bounds[node, 3],
                               bounds[node, 4], bounds[node, 5])
    return ray_aabb_robust_f(ox, oy, oz, dx, dy, dz, rx, ry, rz, bounds[node, 0],
                             bounds[node, 1], bounds[node, 2], bounds[node, 3], bounds[node, 4],
                             bounds[node, 5])


def walk_range(links, root):
    """The nodes ``[start, stop)`` of the subtree at ``root`` (-1: the whole tree); empty for
    a root outside the tree (Warp's grouped queries start at ``mesh_get_group_root``)."""
    n = links.shape[0]
    if root < 0:
        return np.int32(0), np.int32(n)
    if root >= n:
        return np.int32(n), np.int32(n)
    return np.int32(root), np.int32(links[root, 2])


def mesh_query_ray(bounds, links, prims, tris, ox, oy, oz, dx, dy, dz, max_t, root=-1):
    """``wp.mesh_query_ray``: ``(hit, t, u, v, sign, nx, ny, nz, face)``, the nearest hit with
    ``0 <= t < max_t`` (``t`` in multiples of ``|d|``), its barycentrics (``u`` of the first
    vertex), ``sign`` (Warp's determinant: > 0 when ``d`` points along the face normal, i.e.
    the ray hits the back), the unit normal ``normalize(cross(b - a, c - a))`` and the face."""
    ox, oy, oz = f32x3(ox, oy, oz)
    dx, dy, dz = f32x3(dx, dy, dz)
    min_t = np.float32(max_t)
    start, stop = walk_range(links, root)
    if start == stop:
        return False, F0, F0, F0, F0, F0, F0, F0, np.int32(-1)
    ray, rx, ry, rz, fast, exact = ray_walk_setup(ox, oy, oz, dx, dy, dz)
    stack = stackmem.local.array(64, np.int32)
    count = 0
    node = start
    best = -1
    bu = F0
    bv = F0
    bs = F1
    while True:
        first = links[node, 0]
        if first >= 0:
            for k in range(first, links[node, 1]):
                hit, t, u, v, det = tri_ray(tris, k, ray)
                if hit and t < min_t and t >= F0:
                    min_t = t
                    best = k
                    bu = u
                    bv = v
                    bs = det
            if count == 0:
                break
            count -= 1
            node = stack[count]
            continue
        left = links[node, 1]
        right = node + 1
        h0, t0 = ray_box(bounds, left, ox, oy, oz, dx, dy, dz, rx, ry, rz, fast, exact)
        h1, t1 = ray_box(bounds, right, ox, oy, oz, dx, dy, dz, rx, ry, rz, fast, exact)
        h0 = h0 and t0 < min_t
        h1 = h1 and t1 < min_t
        if h0 and h1:
            if count >= STACK_SIZE:
                break
            if t0 < t1:
                stack[count] = right
                node = left
            else:
                stack[count] = left
                node = right
            count += 1
        elif h0:
            node = left
        elif h1:
            node = right
        else:
            if count == 0:
                break
            count -= 1
            node = stack[count]
    if best < 0:
        return False, F0, F0, F0, F0, F0, F0, F0, np.int32(-1)
    ax, ay, az, bx, by, bz, cx, cy, cz = tri_row(tris, best)
    nx, ny, nz = triangle_normal(ax, ay, az, bx, by, bz, cx, cy, cz)
    nx, ny, nz = normalize3(nx, ny, nz)
    return True, min_t, bu, bv, bs, nx, ny, nz, np.int32(prims[best])


def mesh_query_ray_anyhit(bounds, links, tris, ox, oy, oz, dx, dy, dz, max_t, root=-1):
    """``wp.mesh_query_ray_anyhit``: whether any face is hit with ``0 <= t < max_t`` (the same
    boxes as Warp's walk: all below the root whose entry is < ``max_t``)."""
    ox, oy, oz = f32x3(ox, oy, oz)
    dx, dy, dz = f32x3(dx, dy, dz)
    mt = np.float32(max_t)
    start, n = walk_range(links, root)
    ray, rx, ry, rz, fast, exact = ray_walk_setup(ox, oy, oz, dx, dy, dz)
    node = start
    while node < n:
        enter = node == start     # the root's box is not tested
        if not enter:
            hit, t = ray_box(bounds, node, ox, oy, oz, dx, dy, dz, rx, ry, rz, fast, exact)
            enter = hit and t < mt
        first = links[node, 0]
        if enter and first >= 0:
            for k in range(first, links[node, 1]):
                hit, t, u, v, det = tri_ray(tris, k, ray)
                if hit and t < mt and t >= F0:
                    return True
        node = walk_next(links, node, enter)
    return False


def mesh_query_ray_count_intersections(bounds, links, tris, ox, oy, oz, dx, dy, dz, root=-1):
    """``wp.mesh_query_ray_count_intersections``: the number of faces the ray hits at t >= 0
    (each face counted once: a ray through a shared edge may count both faces)."""
    ox, oy, oz = f32x3(ox, oy, oz)
    dx, dy, dz = f32x3(dx, dy, dz)
    ray, rx, ry, rz, exact = robust_walk_setup(ox, oy, oz, dx, dy, dz)
    node, n = walk_range(links, root)
    count = 0
    while node < n:
        enter, t = robust_box(bounds, node, ox, oy, oz, dx, dy, dz, rx, ry, rz, exact)
        if enter and links[node, 0] >= 0:
            for k in range(links[node, 0], links[node, 1]):
                hit, t, u, v, det = tri_ray(tris, k, ray)
                if hit and t >= F0:
                    count += 1
        node = walk_next(links, node, enter)
    return np.int32(count)


def ray_closest_sign(bounds, links, tris, ox, oy, oz, dx, dy, dz):
    """Warp's ``mesh_query_ray_closest_sign``: ``(hit, det of the nearest hit)``, boxes pruned
    by the nearest hit so far (robust slab test, every box including the root's)."""
    ray, rx, ry, rz, exact = robust_walk_setup(ox, oy, oz, dx, dy, dz)
    n = links.shape[0]
    min_t = FLT_MAX
    sign = F0
    found = False
    node = 0
    while node < n:
        hit, t = robust_box(bounds, node, ox, oy, oz, dx, dy, dz, rx, ry, rz, exact)
        enter = hit and t < min_t
        first = links[node, 0]
        if enter and first >= 0:
            for k in range(first, links[node, 1]):
                hit, t, u, v, det = tri_ray(tris, k, ray)
                if hit and t >= F0 and t < min_t:
                    min_t = t
                    sign = det
                    found = True
        node = walk_next(links, node, enter)
    return found, sign


def mesh_inside_ray_tracing(bounds, links, tris, px, py, pz):
    """Warp's ``mesh_query_inside_ray_tracing``: -1 (inside) when at least two of the rays along
    +x, +y, +z first hit a face from its back (det < 0... i.e. Warp's vote on the sign), else 1."""
    vote = 0
    for i in range(3):
        hit, sign = ray_closest_sign(bounds, links, tris, px, py, pz,
                                     F1 if i == 0 else F0, F1 if i == 1 else F0,
                                     F1 if i == 2 else F0)
        if hit and sign < F0:
            vote += 1
    return np.float32(-1.0) if vote >= 2 else F1


def mq_rand_pcg(state):
    """Warp's ``rand_pcg`` on uint32 values (kept in int64)."""
    b = (np.int64(state) * 747796405 + 2891336453) & 0xFFFFFFFF
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & 0xFFFFFFFF
    return (c >> 22) ^ c


def mq_randf(state, lo, hi):
    """Warp's ``randf(state, min, max)``: ``(new state, value)``."""
    state = mq_rand_pcg(state)
    r = np.float32(state >> 8) * np.float32(1.0 / 16777216.0)
    return state, (hi - lo) * r + lo


def mesh_inside_parity(bounds, links, tris, px, py, pz, n_sample, scale):
    """Warp's ``mesh_query_inside_parity`` with base direction (1, 1, 1): -1 when at least half
    of ``n_sample`` rays, perturbed by uniform offsets in [-scale, scale) from Warp's
    ``rand_init(42)`` stream (x, y, z drawn in that order), cross an odd number of faces."""
    state = mq_rand_pcg(42)
    s = np.float32(scale)
    vote = 0
    for i in range(n_sample):
        while True:
            state, rx = mq_randf(state, -s, s)
            state, ry = mq_randf(state, -s, s)
            state, rz = mq_randf(state, -s, s)
            dx = F1 + rx
            dy = F1 + ry
            dz = F1 + rz
            if not (dx * dx + dy * dy + dz * dz < np.float32(1e-8)):
                break
        if mesh_query_ray_count_intersections(bounds, links, tris, px, py, pz, dx, dy,
                                              dz) % 2:
            vote += 1
    return np.float32(-1.0) if vote * 2 >= n_sample else F1


# ------------------------------------------------------------------------------ iterators
def mesh_query_aabb(links, lx, ly, lz, ux, uy, uz):
    """``wp.mesh_query_aabb``: the start state of an iteration over the faces whose bounding
    box overlaps [lower, upper] (the state layout of ``bvh_query``)."""
    stop = np.int32(links[0, 2]) if links.shape[0] > 0 else I0
    return (np.int32(MESH_AABB), I0, I0, I0, stop, np.float32(lx), np.float32(ly),
            np.float32(lz), np.float32(ux), np.float32(uy), np.float32(uz), F0, F0)


def mesh_query_sphere(links, cx, cy, cz, radius):
    """``wp.mesh_query_sphere``: faces that intersect the sphere (radius clamped to >= 0)."""
    stop = np.int32(links[0, 2]) if links.shape[0] > 0 else I0
    r = wmax(np.float32(radius), F0)
    return (np.int32(MESH_SPHERE), I0, I0, I0, stop, np.float32(cx), np.float32(cy),
            np.float32(cz), F0, F0, F0, r, r * r)


def mesh_box_test(state, lx, ly, lz, ux, uy, uz):
    if state[0] == MESH_AABB:
        return aabb_aabb(state[5], state[6], state[7], state[8], state[9], state[10],
                         lx, ly, lz, ux, uy, uz)
    return sphere_aabb(state[5], state[6], state[7], state[12], lx, ly, lz, ux, uy, uz)


def mesh_face_test(state, tris, k):
    """Warp's per-face test: the face's box for AABB queries; for spheres the box, then the
    exact distance (a zero-area face as its longest edge)."""
    ax, ay, az, bx, by, bz, cx, cy, cz = tri_row(tris, k)
    if not mesh_box_test(state, min(ax, bx, cx), min(ay, by, cy), min(az, bz, cz),
                         max(ax, bx, cx), max(ay, by, cy), max(az, bz, cz)):
        return False
    if state[0] == MESH_AABB:
        return True
    return sphere_triangle(state[5], state[6], state[7], state[12], ax, ay, az, bx, by, bz,
                           cx, cy, cz)


def sphere_triangle(px, py, pz, r2, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Warp's narrow phase of ``mesh_query_sphere``: the closest point within sqrt(r2)."""
    abx, aby, abz, acx, acy, acz, bcx, bcy, bcz = tri_edges(ax, ay, az, bx, by, bz, cx, cy, cz)
    nx, ny, nz = cross3(abx, aby, abz, acx, acy, acz)
    if nx * nx + ny * ny + nz * nz == F0:
        lab = dot3(abx, aby, abz, abx, aby, abz)
        lac = dot3(acx, acy, acz, acx, acy, acz)
        lbc = dot3(bcx, bcy, bcz, bcx, bcy, bcz)
        sx, sy, sz, ex, ey, ez, len2 = bx, by, bz, cx, cy, cz, lbc
        if lab >= lac and lab >= lbc:
            sx, sy, sz, ex, ey, ez, len2 = ax, ay, az, bx, by, bz, lab
        elif lac >= lbc:
            sx, sy, sz, ex, ey, ez, len2 = ax, ay, az, cx, cy, cz, lac
        qx = ex - sx
        qy = ey - sy
        qz = ez - sz
        t = F0
        if len2 > F0:
            t = fclamp(dot3(px - sx, py - sy, pz - sz, qx, qy, qz) / len2, F0, F1)
        ox = sx + t * qx - px
        oy = sy + t * qy - py
        oz = sz + t * qz - pz
        return ox * ox + oy * oy + oz * oz <= r2
    u, v = triangle_closest_point(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz)
    w = F1 - u - v
    ox = ax * u + bx * v + cx * w - px
    oy = ay * u + by * v + cy * w - py
    oz = az * u + bz * v + cz * w - pz
    return ox * ox + oy * oy + oz * oz <= r2


def _mesh_node_test(state, lx, ly, lz, ux, uy, uz, max_dist):
    """``mesh_box_test`` in ``bvh_box_test``'s place (``max_dist`` unused)."""
    return mesh_box_test(state, lx, ly, lz, ux, uy, uz)


#: ``walk_to_leaf`` testing the boxes with the mesh's two kinds only (``bvh_box_test`` compiles
#: its ray and capsule tests too)
mesh_walk_to_leaf = variant(walk_to_leaf, "mesh_walk_to_leaf", scope=globals(),
                            bvh_box_test="_mesh_node_test")


def mesh_query_next(bounds, links, prims, tris, state):
    """``wp.mesh_query_next``: ``(found, face, next_state)`` in Warp's order. A leaf of one
    face is returned on its box test alone for AABB queries (its box is the face's)."""
    node, cur, end, stop = state[1], state[2], state[3], state[4]
    while True:
        if cur < end:
            k = cur
            cur += 1
            if mesh_face_test(state, tris, k):
                return True, np.int32(prims[k]), _with(state, node, cur, end)
            continue
        node, first, last = mesh_walk_to_leaf(bounds, links, state, node, stop, F0)
        if first < 0:
            return False, np.int32(-1), _with(state, node, cur, end)
        if last - first == 1 and (state[0] == MESH_AABB or mesh_face_test(state, tris, first)):
            return True, np.int32(prims[first]), _with(state, node, cur, end)
        if last - first > 1:
            cur = first
            end = last


PORTABLE = ("walk_range", "tri_ray", "ray_prepare", "ray_walk_setup", "robust_walk_setup",
            "walk_next", "ray_box", "robust_box", "mesh_query_ray",
            "mesh_query_ray_anyhit",
            "mesh_query_ray_count_intersections", "ray_closest_sign", "mesh_inside_ray_tracing",
            "mq_rand_pcg", "mq_randf", "mesh_inside_parity", "mesh_query_aabb",
            "mesh_query_sphere", "mesh_box_test", "sphere_triangle", "mesh_face_test",
            "_mesh_node_test", "mesh_walk_to_leaf", "mesh_query_next")
