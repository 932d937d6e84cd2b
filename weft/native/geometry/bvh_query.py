"""Portable BVH iterators: Warp's ``bvh_query_aabb`` / ``bvh_query_ray`` / ``bvh_query_sphere``
/ ``bvh_query_capsule`` with ``bvh_query_next``, on the arrays of ``weft.native.geometry.bvh_build``
(``bounds``, ``links``, ``prims``) and the items' boxes ``lowers``/``uppers`` ((n, 3) float32).

The walk is stackless: a node that passes the query's test is entered (``node + 1``, its right
child), one that fails or is done is skipped (``links[node, 2]``), so the iteration state is a
tuple of 13 scalars, ``(kind, node, cur, end, stop, x0, y0, z0, x1, y1, z1, radius, radius2)``
(int32 and float32): the node to visit next, the packed leaf being enumerated ``[cur, end)``,
the node where the walk ends (the skip of its root), and the query's shape. The order is Warp's
(its stack pops the right child first), so results come in Warp's sequence on Warp's tree.

Tests, as Warp 1.19: AABB queries keep items whose box overlaps the query box (closed boxes);
ray queries keep boxes whose slab entry ``t`` (with ``1/dir`` per axis) satisfies ``t <
max_dist`` (``max_dist`` is ``bvh_query_next``'s argument, inf by default); sphere queries
keep boxes within ``radius`` of the centre (radius clamped to >= 0); capsule queries inflate
each box by ``radius`` and keep it when the segment's entry is <= ``max_dist``. A leaf holding
one item is returned on its node test alone (its box is the item's box).

``root`` is a node index of this layout (-1: the whole tree); an index outside the tree, or an
empty tree, yields nothing.
"""
import numpy as np

from .mesh_geom import (F0, F1, aabb_aabb, ray_aabb, ray_aabb_robust, sphere_aabb, wmax)  # noqa: F401

QUERY_AABB = 0
QUERY_RAY = 1
QUERY_SPHERE = 2
QUERY_CAPSULE = 3
I0 = np.int32(0)


def bvh_query_begin(links, root, kind, x0, y0, z0, x1, y1, z1, radius):
    """The start state of a query of ``kind`` from node ``root`` (-1: the root). ``(x0, y0,
    z0)`` is the box's lower corner, the ray's start or the sphere's centre; ``(x1, y1, z1)``
    the box's upper corner or the ray's direction."""
    n = links.shape[0]
    node = np.int32(0) if root < 0 else np.int32(root)
    stop = np.int32(0)
    if node < n:
        stop = np.int32(links[node, 2])
    else:
        node = stop
    a0 = np.float32(x0)
    a1 = np.float32(y0)
    a2 = np.float32(z0)
    b0 = np.float32(x1)
    b1 = np.float32(y1)
    b2 = np.float32(z1)
    r = np.float32(0.0)
    if kind == QUERY_RAY or kind == QUERY_CAPSULE:
        b0 = F1 / b0
        b1 = F1 / b1
        b2 = F1 / b2
    if kind == QUERY_SPHERE or kind == QUERY_CAPSULE:
        r = wmax(np.float32(radius), F0)
    return (np.int32(kind), node, I0, I0, stop, a0, a1, a2, b0, b1, b2, r, r * r)


def bvh_query_aabb(links, root, lx, ly, lz, ux, uy, uz):
    """``wp.bvh_query_aabb``: items whose box overlaps [lower, upper]."""
    return bvh_query_begin(links, root, QUERY_AABB, lx, ly, lz, ux, uy, uz, F0)


def bvh_query_ray(links, root, ox, oy, oz, dx, dy, dz):
    """``wp.bvh_query_ray``: items whose box the ray ``o + t d`` enters before ``max_dist``."""
    return bvh_query_begin(links, root, QUERY_RAY, ox, oy, oz, dx, dy, dz, F0)


def bvh_query_sphere(links, root, cx, cy, cz, radius):
    """``wp.bvh_query_sphere``: items whose box lies within ``radius`` of the centre."""
    return bvh_query_begin(links, root, QUERY_SPHERE, cx, cy, cz, F0, F0, F0, radius)


def bvh_query_capsule(links, root, ox, oy, oz, dx, dy, dz, radius):
    """``wp.bvh_query_capsule``: a ray query against boxes inflated by ``radius``."""
    return bvh_query_begin(links, root, QUERY_CAPSULE, ox, oy, oz, dx, dy, dz, radius)


def bvh_box_test(state, lx, ly, lz, ux, uy, uz, max_dist):
    """Warp's per-kind ``bvh_query_test`` of one box against the query in ``state``."""
    kind = state[0]
    if kind == QUERY_AABB:
        return aabb_aabb(state[5], state[6], state[7], state[8], state[9], state[10],
                         lx, ly, lz, ux, uy, uz)
    if kind == QUERY_RAY:
        hit, t = ray_aabb(state[5], state[6], state[7], state[8], state[9], state[10],
                          lx, ly, lz, ux, uy, uz)
        return hit and not (t >= max_dist)
    if kind == QUERY_SPHERE:
        return sphere_aabb(state[5], state[6], state[7], state[12], lx, ly, lz, ux, uy, uz)
    r = state[11]
    hit, t = ray_aabb_robust(state[5], state[6], state[7], F1 / state[8], F1 / state[9],
                             F1 / state[10], state[8], state[9], state[10], lx - r, ly - r,
                             lz - r, ux + r, uy + r, uz + r)
    return hit and not (t > max_dist)


def walk_to_leaf(bounds, links, state, node, stop, max_dist):
    """The iterators' stackless walk from ``node`` to the next leaf whose box and ancestors'
    boxes pass ``bvh_box_test`` (the mesh's queries are its AABB and sphere kinds): ``(the node
    after the leaf, first, last)`` (its items ``[first, last)``), or ``(stop, -1, -1)``."""
    while node != stop:
        if not bvh_box_test(state, bounds[node, 0], bounds[node, 1], bounds[node, 2],
                            bounds[node, 3], bounds[node, 4], bounds[node, 5], max_dist):
            node = links[node, 2]
            continue
        first = links[node, 0]
        if first >= 0:
            return links[node, 2], first, links[node, 1]
        node = node + 1
    return node, np.int32(-1), np.int32(-1)


def bvh_query_next(bounds, links, prims, lowers, uppers, state, max_dist):
    """``wp.bvh_query_next``: ``(found, item, next_state)``; ``max_dist`` bounds ray and capsule
    queries (pass inf for Warp's default)."""
    node, cur, end, stop = state[1], state[2], state[3], state[4]
    md = np.float32(max_dist)
    while True:
        if cur < end:
            item = prims[cur]
            cur += 1
            if bvh_box_test(state, lowers[item, 0], lowers[item, 1], lowers[item, 2],
                            uppers[item, 0], uppers[item, 1], uppers[item, 2], md):
                return True, np.int32(item), _with(state, node, cur, end)
            continue
        node, first, last = walk_to_leaf(bounds, links, state, node, stop, md)
        if first < 0:
            return False, np.int32(-1), _with(state, node, cur, end)
        if last - first == 1:
            return True, np.int32(prims[first]), _with(state, node, cur, end)
        cur = first
        end = last


def _with(state, node, cur, end):
    return (state[0], np.int32(node), np.int32(cur), np.int32(end), state[4], state[5],
            state[6], state[7], state[8], state[9], state[10], state[11], state[12])


PORTABLE = ("bvh_query_begin", "bvh_query_aabb", "bvh_query_ray", "bvh_query_sphere",
            "bvh_query_capsule", "bvh_box_test", "_with", "walk_to_leaf", "bvh_query_next")
