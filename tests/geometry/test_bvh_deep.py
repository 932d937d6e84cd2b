"""Queries on the deepest trees the builder makes (Warp's ``test_sah_depth_fits_query_stack``
geometry): 300 thin slabs at x = exp(linspace(-70, 0)), so each SAH split peels one item off
and the tree reaches the depth cap (31) with its deepest leaves holding the slabs nearest x = 0.
Every BVH iterator and mesh query must find what brute force finds there (nothing lost at the
bottom of the tree), and the traversal stacks of the mesh cores (64 entries) must hold the
deepest walk (at most depth + 1 entries)."""
from types import SimpleNamespace

import numpy as np
import pytest

from tests.geometry import mesh_brute as B
from tests.geometry.mesh_fixtures import cpu_cores
from tests.geometry.test_bvh_build import _check_layout
from weft.native.geometry import bvh_build, bvh_groups, mesh_query, mesh_ray
from weft.native.geometry.mesh import Bvh, Mesh

F = np.float32
COUNT = 300


def _slab_boxes():
    x = np.exp(np.linspace(-70.0, 0.0, COUNT)).astype(F)
    lo = np.zeros((COUNT, 3), F)
    up = np.ones((COUNT, 3), F)
    lo[:, 0] = x
    up[:, 0] = x * F(1.001)
    return lo, up


def _slab_mesh():
    """One triangle per slab, (x, 0, 0), (1.001 x, 1, 0), (x, 0, 1): its box is the slab's."""
    lo, up = _slab_boxes()
    x0, x1 = lo[:, 0], up[:, 0]
    z = np.zeros(COUNT, F)
    one = np.ones(COUNT, F)
    pts = np.stack([np.stack([x0, z, z], 1), np.stack([x1, one, z], 1),
                    np.stack([x0, z, one], 1)], 1).reshape(-1, 3)
    return np.ascontiguousarray(pts), np.arange(3 * COUNT, dtype=np.int32)


def _typed(state):
    """An iterator state back from compiled code holds Python ints and floats: retype it as
    a kernel holds it (int32 and float32), or the next call would test boxes in float64."""
    return tuple(np.int32(v) if isinstance(v, int) else F(v) for v in state)


def _drain(ns, state, arrays, max_dist=F(np.inf)):
    out = []
    while True:
        ok, i, state = ns["bvh_query_next"](*arrays, _typed(state), max_dist)
        if not ok:
            return sorted(out)
        out.append(int(i))


def _mesh_drain(ns, state, arrays):
    out = []
    while True:
        ok, i, state = ns["mesh_query_next"](*arrays, _typed(state))
        if not ok:
            return sorted(out)
        out.append(int(i))


def test_sah_reaches_the_depth_cap_within_the_query_stacks():
    lo, up = _slab_boxes()
    t = Bvh(lo, up, constructor="sah", leaf_size=1)
    assert _check_layout(t, 1) == bvh_build.MAX_DEPTH       # as Warp's tree (depth 31)
    m = Mesh(*_slab_mesh(), bvh_leaf_size=1)
    tree = SimpleNamespace(bounds=m.bvh.bounds, links=m.bvh.links, prims=m.bvh.prims,
                           num_items=COUNT, lowers=m.lowers, uppers=m.uppers)
    assert _check_layout(tree, 1) == bvh_build.MAX_DEPTH
    # a depth-first walk holds at most one pending sibling per level, plus one; grouped trees
    # (a capped tree per group below a balanced tree over the groups) are the deepest
    assert bvh_build.MAX_DEPTH < bvh_groups.MAX_GROUPED_DEPTH
    assert bvh_groups.MAX_GROUPED_DEPTH + 1 <= min(mesh_query.STACK_SIZE, mesh_ray.STACK_SIZE)


@pytest.mark.parametrize("leaf", [1, 4])
def test_bvh_iterators_on_the_deep_tree(leaf):
    ns = cpu_cores()
    lo, up = _slab_boxes()
    t = Bvh(lo, up, constructor="sah", leaf_size=leaf)
    arrs = t.arrays()
    lk = arrs[1]
    boxes = [((-2, -1, -1), (2, 2, 2)), ((-1, 0.2, 0.2), (1e-20, 0.3, 0.3)),
             ((1e-25, 0.5, 0.5), (1e-10, 0.5, 0.5)), ((0.5, -1, -1), (0.6, 0, 0))]
    for qlo, qup in boxes:
        qlo, qup = np.array(qlo, F), np.array(qup, F)
        want = list(B.box_overlap(lo, up, qlo, qup))
        assert _drain(ns, ns["bvh_query_aabb"](lk, -1, *qlo, *qup), arrs) == want
    assert len(_drain(ns, ns["bvh_query_aabb"](lk, -1, *[F(-2)] * 3, *[F(2)] * 3), arrs)) \
        == COUNT
    o = np.array([-1.0, 0.25, 0.25], F)
    for d in ([1.0, 0.0, 0.0], [1.0, 0.1, 0.05], [-1.0, 0.0, 0.0]):
        d = np.array(d, F)
        for md in (F(np.inf), F(1.0), F(1.5)):
            want = list(B.ray_boxes(lo, up, o, d, md))
            assert _drain(ns, ns["bvh_query_ray"](lk, -1, *o, *d), arrs, md) == want
    for c, r in (((-0.5, 0.5, 0.5), 0.5), ((-0.5, 0.5, 0.5), 0.5 + 1e-7), ((0.3, 0.5, 2), 1.1)):
        c = np.array(c, F)
        want = list(B.sphere_boxes(lo, up, c, F(r)))
        assert _drain(ns, ns["bvh_query_sphere"](lk, -1, *c, F(r)), arrs) == want


def test_mesh_queries_on_the_deep_tree():
    """Closest point (the nearest slab is the deepest leaf for points at x < 0), rays along x
    (the first hit is the deepest leaf; the count is every slab), AABB iterators."""
    ns = cpu_cores()
    pts, idx = _slab_mesh()
    m = Mesh(pts, idx, bvh_leaf_size=1)
    b, lk, p, tris, props = m.arrays()
    rng = np.random.default_rng(5)
    for x in (-0.5, -1e-3, 1e-12, 3e-3, 0.4, 2.0):
        for y, z in rng.uniform(0, 1, (4, 2)):
            q = np.array([x, y, z], F)
            ok, face, u, v, s = ns["mesh_query_point_no_sign"](b, lk, p, tris, *q, F(10))
            best = B.closest(pts, idx, q.astype(np.float64))
            a_, b_, c_ = (pts[idx[3 * face + k]].astype(np.float64) for k in range(3))
            got = np.linalg.norm(u * a_ + v * b_ + (1 - u - v) * c_ - q)
            assert ok and got == pytest.approx(best, rel=1e-5, abs=1e-7)
    for o, d in (((-1, 0.25, 0.25), (1, 0, 0)), ((-1, 0.1, 0.3), (1, 0.01, 0.02)),
                 ((2, 0.25, 0.25), (-1, 0, 0)), ((1e-20, 0.2, 0.2), (1, 0, 0))):
        o, d = np.array(o, F), np.array(d, F)
        ts, bmin = B.ray_hits(pts, idx, o, d)
        assert bmin[np.isfinite(ts)].min(initial=1) > 1e-3        # no ray grazes an edge
        hit, t, *_, face = ns["mesh_query_ray"](b, lk, p, tris, *o, *d, F(10))
        assert hit and t == pytest.approx(ts.min(), rel=1e-6, abs=1e-30)
        assert ts[face] == pytest.approx(ts.min(), rel=1e-6, abs=1e-30)
        count = ns["mesh_query_ray_count_intersections"](b, lk, tris, *o, *d)
        assert count == np.isfinite(ts).sum()
        assert ns["mesh_query_ray_anyhit"](b, lk, tris, *o, *d, F(10))
    assert ns["mesh_query_ray_count_intersections"](b, lk, tris, -1, .25, .25, 1, 0, 0) == COUNT
    for qlo, qup in (((-1, 0, 0), (1e-25, 1, 1)), ((-1, -1, -1), (2, 2, 2))):
        qlo, qup = np.array(qlo, F), np.array(qup, F)
        want = list(B.box_overlap(m.lowers, m.uppers, qlo, qup))
        assert _mesh_drain(ns, ns["mesh_query_aabb"](lk, *qlo, *qup), (b, lk, p, tris)) == want
