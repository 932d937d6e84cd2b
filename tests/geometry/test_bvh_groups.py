"""Grouped BVHs and meshes (Warp's ``groups=``): each group's items fill the subtree at
``bvh_get_group_root``/``mesh_get_group_root`` (-1 for a group with no item), queries started
there find exactly brute force's answer on that group's items, and a deep grouped tree (a
depth-31 group under a tree over 16 groups) stays within the query stacks."""
import numpy as np
import pytest

import weft as wp
from tests.geometry import mesh_brute as B
from tests.geometry import mesh_scenes as S
from tests.geometry.test_bvh_build import _check_layout
from tests.geometry.test_bvh_deep import _slab_boxes, _slab_mesh
from weft.native.geometry import bvh_build, bvh_groups
from weft.native.geometry.mesh import Bvh

F = np.float32


@wp.kernel
def group_roots_k(bvh: wp.uint64, mesh: wp.uint64, out: wp.array2d(dtype=int)):
    g = wp.tid()
    out[g, 0] = wp.bvh_get_group_root(bvh, g)
    out[g, 1] = wp.mesh_get_group_root(mesh, g)


@wp.kernel
def group_aabb_k(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, roots: wp.array(dtype=int),
                 hits: wp.array2d(dtype=int)):
    g = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo, hi, roots[g])
    i = int(0)
    while wp.bvh_query_next(q, i):
        hits[g, i] += 1


@wp.kernel
def group_ray_k(mesh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                roots: wp.array(dtype=int), ts: wp.array2d(dtype=float),
                counts: wp.array2d(dtype=int)):
    i, g = wp.tid()
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    sign = float(0.0)
    n = wp.vec3()
    face = int(0)
    ts[i, g] = -1.0
    if wp.mesh_query_ray(mesh, o[i], d[i], 1.0e6, t, u, v, sign, n, face, roots[g]):
        ts[i, g] = t
    counts[i, 3 * g] = wp.mesh_query_ray_count_intersections(mesh, o[i], d[i], roots[g])
    counts[i, 3 * g + 1] = int(wp.mesh_query_ray_anyhit(mesh, o[i], d[i], 1.0e6, roots[g]))
    counts[i, 3 * g + 2] = wp.mesh_query_ray(mesh, o[i], d[i], 1.0e6, roots[g]).face


def _subtree_items(t, root):
    lk, p = t.links, t.prims
    out = set()
    for n in range(root, lk[root, 2]):
        if lk[n, 0] >= 0:
            out |= set(p[lk[n, 0]:lk[n, 1]].tolist())
    return out


def _depth(links, root=0):
    depth = {root: 0}
    for n in range(root + 1, links[root, 2]):
        depth[n] = depth[links[n, 3]] + 1
    return max(depth.values())


@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_each_group_fills_one_subtree(constructor):
    lo, up = S.boxes(700, seed=41)
    groups = np.random.default_rng(3).choice([-4, 0, 2, 7, 9], 700).astype(np.int32)
    t = Bvh(lo, up, constructor=constructor, groups=groups, leaf_size=3)
    _check_layout(t, 3)
    assert t.group_table[:, 0].tolist() == [-4, 0, 2, 7, 9]
    for g in (-4, 0, 2, 7, 9):
        root = bvh_groups.group_root(t.group_table, g)
        assert _subtree_items(t, root) == set(np.flatnonzero(groups == g).tolist())
    assert bvh_groups.group_root(t.group_table, 1) == -1
    one = Bvh(lo, up, constructor=constructor, groups=np.zeros(700, np.int32), leaf_size=3)
    plain = Bvh(lo, up, constructor=constructor, leaf_size=3)      # one group: the same tree
    for a, b in zip(one.arrays()[:3], plain.arrays()[:3]):
        np.testing.assert_array_equal(a, b)
    assert bvh_groups.group_root(plain.group_table, 0) == 0
    assert bvh_groups.group_root(plain.group_table, 1) == -1


def _deep_groups(num_groups):
    """Warp's test: the 300 slabs in group 0, one box at x in [-1, -0.5] per other group."""
    lo, up = _slab_boxes()
    extra = num_groups - 1
    lo = np.vstack([lo, np.tile([-1.0, 0.0, 0.0], (extra, 1))]).astype(F)
    up = np.vstack([up, np.tile([-0.5, 1.0, 1.0], (extra, 1))]).astype(F)
    groups = np.concatenate([np.zeros(300, np.int32), np.arange(1, num_groups, dtype=np.int32)])
    return lo, up, groups


@pytest.mark.parametrize("num_groups", [1, 4, 16])
def test_deep_grouped_bvh_from_group_roots(num_groups):
    lo, up, groups = _deep_groups(num_groups)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(up, dtype=wp.vec3),
                 groups=wp.array(groups, dtype=wp.int32), constructor="sah", leaf_size=1)
    mesh = wp.Mesh(wp.array(_slab_mesh()[0], dtype=wp.vec3),
                   wp.array(_slab_mesh()[1], dtype=wp.int32))
    roots = wp.zeros((num_groups + 1, 2), dtype=int)
    wp.launch(group_roots_k, num_groups + 1, inputs=[bvh.id, mesh.id, roots])
    r = roots.numpy()
    assert r[num_groups, 0] == -1 and r[1:, 1].tolist() == [-1] * num_groups
    assert r[0, 1] == 0                                  # ungrouped: every item in group 0
    links = bvh._core.links
    assert _depth(links, int(r[0, 0])) == bvh_build.MAX_DEPTH   # the group keeps its budget
    assert bvh_build.MAX_DEPTH + (num_groups > 1) <= _depth(links) <= \
        bvh_groups.MAX_GROUPED_DEPTH
    hits = wp.zeros((num_groups, len(lo)), dtype=int)
    wp.launch(group_aabb_k, num_groups, inputs=[bvh.id, wp.vec3(-2.0, -1.0, -1.0),
                                                wp.vec3(2.0, 2.0, 2.0),
                                                wp.array(r[:num_groups, 0], dtype=int), hits])
    want = (np.arange(num_groups)[:, None] == groups[None, :]).astype(np.int32)
    np.testing.assert_array_equal(hits.numpy(), want)


def test_grouped_mesh_rays_from_group_roots():
    """Slab triangles in 3 groups (every third slab): from each group's root, the nearest
    hit, the count and any-hit are brute force's on that group's faces; from -1, all faces'."""
    pts, idx = _slab_mesh()
    groups = (np.arange(300) % 3).astype(np.int32)
    mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3), wp.array(idx, dtype=wp.int32),
                   groups=wp.array(groups, dtype=wp.int32), bvh_leaf_size=1)
    bvh = wp.Bvh(wp.array(pts[:3], dtype=wp.vec3), wp.array(pts[:3] + 1, dtype=wp.vec3))
    roots = wp.zeros((4, 2), dtype=int)
    wp.launch(group_roots_k, 4, inputs=[bvh.id, mesh.id, roots])
    mroots = np.append(roots.numpy()[:3, 1], -1).astype(np.int32)
    assert (mroots[:3] >= 0).all() and roots.numpy()[3, 1] == -1
    o = np.array([[-1, 0.25, 0.25], [-1, 0.1, 0.3], [2, 0.25, 0.25], [0.5, 0.3, 0.3]], F)
    d = np.array([[1, 0, 0], [1, 0.01, 0.02], [-1, 0, 0], [1, 0, 0]], F)
    ts = wp.zeros((4, 4), dtype=float)
    counts = wp.zeros((4, 12), dtype=int)
    wp.launch(group_ray_k, (4, 4), inputs=[mesh.id, wp.array(o, dtype=wp.vec3),
                                           wp.array(d, dtype=wp.vec3),
                                           wp.array(mroots, dtype=int), ts, counts])
    for i in range(4):
        for g in range(4):
            faces = np.arange(300) if g == 3 else np.flatnonzero(groups == g)
            sub = idx.reshape(-1, 3)[faces].ravel()
            t_all, _ = B.ray_hits(pts, sub, o[i], d[i])
            best = t_all.min()
            c = counts.numpy()[i, 3 * g:3 * g + 3]
            assert c[0] == np.isfinite(t_all).sum() and c[1] == np.isfinite(best)
            if np.isfinite(best):
                assert ts.numpy()[i, g] == pytest.approx(best, rel=1e-6, abs=1e-30)
                assert c[2] in faces
            else:
                assert ts.numpy()[i, g] == -1 and c[2] == -1


def test_grouped_refit_and_rebuild_keep_the_groups():
    """A refit after moving the boxes gives exact unions again (the layout check), and a
    rebuild keeps every group in its own subtree."""
    lo, up = S.boxes(3000, seed=5)
    groups = np.random.default_rng(6).integers(0, 40, 3000).astype(np.int32)
    t = Bvh(lo, up, groups=groups, leaf_size=2)
    t.lowers -= np.random.default_rng(7).random(lo.shape).astype(F) * F(0.1)
    t.refit()
    _check_layout(t, 2)
    t.rebuild("median")
    _check_layout(t, 2)
    for g in (0, 17, 39):
        root = bvh_groups.group_root(t.group_table, g)
        assert _subtree_items(t, root) == set(np.flatnonzero(groups == g).tolist())
