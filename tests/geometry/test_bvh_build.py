"""The BVH build and refit (``bvh_build``, ``mesh.Bvh``): the layout's invariants on random
and adversarial boxes (every item once, leaves within the leaf size or at the depth cap, node
boxes the exact unions of their children, skip and parent links of a pre-order walk), refit
equal to the unions of moved boxes with the topology kept, the median constructor, the
parallel and serial paths giving the same tree, and clear errors for bad input."""
import numba
import numpy as np
import pytest

from tests.geometry import mesh_scenes as S
from weft.native.geometry import bvh_build
from weft.native.geometry.mesh import Bvh


def _check_layout(t, leaf_size):
    b, lk, p = t.bounds, t.links, t.prims
    n = len(lk)
    assert sorted(p.tolist()) == list(range(t.num_items))
    depth = np.zeros(n, int)
    covered = []
    for i in range(n):
        first, second, skip, parent = lk[i]
        assert i < skip <= n
        if i:
            assert parent >= 0 and depth[i] == depth[parent] + 1
        if first >= 0:                                   # leaf
            assert skip == i + 1
            assert second - first <= leaf_size or depth[i] >= bvh_build.MAX_DEPTH
            covered.append((first, second))
            items = p[first:second]
            want = np.concatenate([t.lowers[items].min(0), t.uppers[items].max(0)])
        else:                                            # right child i + 1, left ``second``
            assert lk[i + 1, 3] == i and lk[second, 3] == i
            assert second == lk[i + 1, 2] and lk[second, 2] == skip
            depth[i + 1] = depth[second] = depth[i] + 1
            want = np.concatenate([np.minimum(b[i + 1, :3], b[second, :3]),
                                   np.maximum(b[i + 1, 3:], b[second, 3:])])
        np.testing.assert_array_equal(b[i], want)
    covered.sort()
    assert covered[0][0] == 0 and covered[-1][1] == t.num_items
    assert all(a[1] == c[0] for a, c in zip(covered, covered[1:]))
    assert depth.max() <= bvh_build.MAX_DEPTH
    return depth.max()


@pytest.mark.parametrize("leaf", [1, 3, 8])
@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_layout_invariants(leaf, constructor):
    lo, up = S.boxes(700, seed=41)
    t = Bvh(lo, up, constructor=constructor, leaf_size=leaf)
    _check_layout(t, leaf)


def test_identical_boxes_hit_the_depth_cap():
    """Coincident boxes cannot be split by SAH (middle splits instead): the tree stays
    balanced, and a long chain of nested boxes stops at depth 31 in a big leaf."""
    lo = np.zeros((1000, 3), np.float32)
    t = Bvh(lo, lo + 1, leaf_size=1)
    assert _check_layout(t, 1) == 10
    x = (32.0 ** np.arange(-29, 25)).astype(np.float32)   # each SAH split peels one item
    pts = np.stack([x, np.zeros_like(x), np.zeros_like(x)], 1)
    chain = Bvh(pts, pts.copy(), leaf_size=1)
    assert _check_layout(chain, 1) == bvh_build.MAX_DEPTH
    lk = chain.links[chain.links[:, 0] >= 0]
    assert (lk[:, 1] - lk[:, 0]).max() == 23             # the capped leaf holds the rest


def test_parallel_and_serial_builds_agree():
    lo, up = S.boxes(20000, seed=42)
    b1, l1, p1 = bvh_build.build(lo, up, 2)
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        b2, l2, p2 = bvh_build.build(lo, up, 2)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_array_equal(l1, l2)
    np.testing.assert_array_equal(p1, p2)
    t = Bvh(lo, up, leaf_size=2)
    _check_layout(t, 2)


def test_refit_keeps_the_topology():
    lo, up = S.boxes(500, seed=43)
    t = Bvh(lo.copy(), up.copy(), leaf_size=2)
    links, prims = t.links.copy(), t.prims.copy()
    rng = np.random.default_rng(44)
    shift = rng.normal(0, 0.3, lo.shape).astype(np.float32)
    t.lowers += shift
    t.uppers += shift
    t.refit()
    np.testing.assert_array_equal(t.links, links)
    np.testing.assert_array_equal(t.prims, prims)
    _check_layout(t, 2)


def test_small_and_empty():
    t = Bvh(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert t.links.shape == (0, 4) and t.prims.shape == (0,)
    t.refit()
    one = Bvh(np.ones((1, 3), np.float32), np.full((1, 3), 2, np.float32))
    assert one.links.tolist() == [[0, 1, 1, -1]] and one.bounds.tolist() == [[1, 1, 1, 2, 2, 2]]


def test_bad_input_is_a_clear_error():
    lo, up = S.boxes(10)
    with pytest.raises(ValueError, match="same number"):
        Bvh(lo, up[:5])
    with pytest.raises(TypeError, match="float32"):
        Bvh(lo.astype(np.float64), up)
    with pytest.raises(TypeError, match=r"shape \(n, 3\)"):
        Bvh(lo[:, :2], up[:, :2])
    bad = lo.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        Bvh(bad, up)
    with pytest.raises(ValueError, match="leaf_size"):
        Bvh(lo, up, leaf_size=0)
    with pytest.raises(ValueError, match="Unknown BVH constructor"):
        Bvh(lo, up, constructor="octree")
    t = Bvh(lo.copy(), up)
    t.lowers[0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        t.refit()
