"""Every mesh and BVH query of ``mesh_drivers`` (closest points with each sign rule, furthest
points, rays, any-hit, crossing counts, AABB and sphere iterators, BVH iterators, array reads,
``intersect_tri_tri`` in float32 and float64, ``closest_point_edge_edge``)
on a noisy torus, the unit cube and the cube with degenerate faces, compiled for the CPU: bit
for bit Warp 1.19's outputs (faces, barycentrics, signs, t, normals, iteration order), and
the BVH trees node for node Warp's."""
import numpy as np
import pytest

from tests.geometry import mesh_drivers as D
from tests.geometry import mesh_reference as R
from tests.geometry import mesh_scenes as S
from tests.geometry.mesh_fixtures import cpu_cores, layout_walk
from weft.native.geometry import bvh_build



def _diagnose(name, res):
    head = R.CASES[name]["head"]
    lines = []
    for k, want in head.items():
        got = res[k][:3, :8] if res[k].ndim == 2 else res[k][:3]
        if not np.array_equal(np.asarray(want, res[k].dtype), got):
            lines.append(f"{k}: weft {got.tolist()} != Warp {want}")
    return "; ".join(lines) or "first rows equal, later rows differ"


@pytest.mark.parametrize("name", D.CASES)
def test_case_equals_warp(name):
    res = D.run(cpu_cores(), name)
    assert S.digest(res) == R.CASES[name]["sha256"], _diagnose(name, res)


def test_cases_are_not_vacuous():
    """The reference cases exercise what they claim: hits, misses, signs of both kinds,
    iterations with several results."""
    ns = cpu_cores()
    pt = D.run(ns, "point_torus")
    assert set(np.unique(pt["uvs"][:, 2])) == {-1.0, 1.0}
    ray = D.run(ns, "ray_torus")
    assert 0 < (ray["face"] >= 0).sum() < len(ray["face"])
    assert (D.run(ns, "point_md_torus")["face"] < 0).any()
    assert D.run(ns, "aabb_torus")["count"].max() > 5
    assert D.run(ns, "bvh_ray_1")["count"].max() > 5
    cube = D.run(ns, "ray_cube")
    assert (cube["vals"][:, 3] > 0).any() and (cube["vals"][:, 3] < 0).any()
    tt = D.run(ns, "pairs_tri_tri")["hit"]
    assert 0 < tt.sum() < len(tt) and tt[300:320].sum() > 0     # coplanar overlaps found


TREES = {"boxes_1": lambda: (*S.boxes(), 1), "boxes_4": lambda: (*S.boxes(), 4),
         "torus_1": lambda: (*_tri_boxes(*S.torus(40, 30, noise=0.05)), 1),
         "torus_4": lambda: (*_tri_boxes(*S.torus(40, 30, noise=0.05)), 4),
         "dupes_2": lambda: (*S.dupes(), 2)}


def _tri_boxes(pts, idx):
    t = pts[idx.reshape(-1, 3)]
    return np.ascontiguousarray(t.min(1)), np.ascontiguousarray(t.max(1))


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_equals_warps(name):
    lo, up, leaf = TREES[name]()
    walk = layout_walk(*bvh_build.build(lo, up, leaf))
    assert len(walk) == R.TREES[name]["nodes"]
    assert S.tree_digest(walk) == R.TREES[name]["sha256"]
