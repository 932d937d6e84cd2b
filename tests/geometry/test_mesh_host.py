"""The host side of ``Mesh`` and the defined behaviour at its edges: validation errors naming
the argument; empty meshes (every query finds nothing); NaN query points and rays; degenerate
faces; refit and the points setter; velocities; the array reads out of range; Warp's average
edge length."""
import numpy as np
import pytest

from tests.geometry import mesh_scenes as S
from tests.geometry.mesh_fixtures import cpu_cores, python_cores
from weft.native.geometry.mesh import Mesh

F = np.float32
NAN = F(np.nan)


def test_validation_errors():
    pts, idx = S.cube()
    with pytest.raises(ValueError, match="multiple of 3"):
        Mesh(pts, idx[:-1])
    with pytest.raises(ValueError, match="index 8 out of range for 8 points"):
        Mesh(pts, np.concatenate([idx, np.int32([0, 1, 8])]))
    with pytest.raises(ValueError, match="index -1 out of range"):
        Mesh(pts, np.concatenate([idx, np.int32([0, 1, -1])]))
    with pytest.raises(TypeError, match="int32"):
        Mesh(pts, idx.astype(np.int64))
    with pytest.raises(TypeError, match="1d"):
        Mesh(pts, idx.reshape(-1, 3))
    with pytest.raises(TypeError, match="float32"):
        Mesh(pts.astype(np.float64), idx)
    bad = pts.copy()
    bad[2, 0] = NAN
    with pytest.raises(ValueError, match="Mesh points contains NaN"):
        Mesh(bad, idx)
    with pytest.raises(ValueError, match="velocities: 3 rows for 8 points"):
        Mesh(pts, idx, velocities=pts[:3])
    with pytest.raises(ValueError, match="leaf_size"):
        Mesh(pts, idx, bvh_leaf_size=0)
    m = Mesh(pts, idx)
    with pytest.raises(ValueError, match="same shape"):
        m.points = pts[:4]
    inf = pts.copy()
    inf[0, 1] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.points = inf


@pytest.mark.parametrize("cores", ["compiled", "python"])
def test_empty_mesh_finds_nothing(cores):
    with np.errstate(divide="ignore"):
        _empty(cpu_cores() if cores == "compiled" else python_cores())


def _empty(ns):
    m = Mesh(np.zeros((4, 3), np.float32), np.zeros(0, np.int32), support_winding_number=True)
    b, lk, p, tris, props = m.arrays()
    assert lk.shape == (0, 4) and tris.shape == (0, 10) and np.isnan(m.average_edge_length)
    assert not ns["mesh_query_point"](b, lk, p, tris, F(0), F(0), F(0), S.BIG)[0]
    assert not ns["mesh_query_point_sign_normal"](b, lk, p, tris, F(1), F(0), F(0), F(0),
                                                  S.BIG, F(1e-3))[0]
    assert not ns["mesh_query_point_sign_winding_number"](b, lk, p, tris, props, F(0), F(0),
                                                          F(0), S.BIG, F(2), F(0.5))[0]
    assert not ns["mesh_query_furthest_point_no_sign"](b, lk, p, tris, F(0), F(0), F(0),
                                                       F(0))[0]
    assert not ns["mesh_query_ray"](b, lk, p, tris, F(0), F(0), F(-1), F(0), F(0), F(1),
                                    S.BIG)[0]
    assert not ns["mesh_query_ray_anyhit"](b, lk, tris, F(0), F(0), F(-1), F(0), F(0), F(1),
                                           S.BIG)
    assert ns["mesh_query_ray_count_intersections"](b, lk, tris, F(0), F(0), F(-1), F(0),
                                                    F(0), F(1)) == 0
    st = ns["mesh_query_aabb"](lk, F(-9), F(-9), F(-9), F(9), F(9), F(9))
    assert not ns["mesh_query_next"](b, lk, p, tris, st)[0]
    assert ns["mesh_eval_position"](m.points, m.indices, 0, F(0.2), F(0.3)) == (0, 0, 0)
    assert ns["mesh_get_index"](m.indices, 0) == -1


def test_nan_queries_find_nothing():
    """As in Warp: a NaN point or ray matches nothing (the comparisons are all false)."""
    ns = cpu_cores()
    m = Mesh(*S.torus(12, 8))
    b, lk, p, tris, props = m.arrays()
    assert not ns["mesh_query_point_no_sign"](b, lk, p, tris, NAN, F(0), F(0), S.BIG)[0]
    assert not ns["mesh_query_point_sign_normal"](b, lk, p, tris, m.average_edge_length, NAN,
                                                  F(0), F(0), S.BIG, F(1e-3))[0]
    assert not ns["mesh_query_ray"](b, lk, p, tris, NAN, F(0), F(0), F(1), F(0), F(0),
                                    S.BIG)[0]
    assert not ns["mesh_query_ray"](b, lk, p, tris, F(0), F(0), F(2), NAN, F(0), F(-1),
                                    S.BIG)[0]
    assert ns["mesh_query_ray_count_intersections"](b, lk, tris, NAN, F(0), F(0), F(1), F(0),
                                                    F(0)) == 0


def test_degenerate_faces():
    """Zero-area faces are never hit by rays (zero determinant) nor returned as closest points
    (slivers), but their boxes are found by AABB queries."""
    ns = cpu_cores()
    m = Mesh(*S.degenerate())
    b, lk, p, tris, props = m.arrays()
    flags = dict(zip(p.tolist(), tris[:, 9].tolist()))
    assert [flags[f] for f in range(12, 16)] == [1.0, 0.0, 1.0, 1.0]   # the point: 0/0 is NaN
    assert not ns["mesh_query_ray"](b, lk, p, tris, F(3.5), F(-1), F(0), F(0), F(1), F(0),
                                    S.BIG)[0]                 # along the collinear face
    assert ns["mesh_query_point_no_sign"](b, lk, p, tris, F(3), F(0.1), F(0), S.BIG)[1] < 12
    st = ns["mesh_query_aabb"](lk, F(2.9), F(-0.1), F(-0.1), F(3.1), F(0.1), F(0.1))
    assert ns["mesh_query_next"](b, lk, p, tris, st)[1] == 12


def test_refit_and_points_setter():
    """Moving the points and refitting (or assigning new points) gives the queries of a fresh
    build of the moved mesh (the same faces and barycentrics: only the boxes changed)."""
    ns = cpu_cores()
    pts, idx = S.torus(20, 12, noise=0.05)
    m = Mesh(pts.copy(), idx, support_winding_number=True)
    links = m.bvh.links.copy()
    moved = (pts * F(1.3) + F(0.2)).astype(np.float32)
    m.points[:] = moved
    m.refit()
    np.testing.assert_array_equal(m.bvh.links, links)
    fresh = Mesh(moved, idx, support_winding_number=True)
    q = S.points(40, seed=51, lo=-2, hi=2)
    for x in q:
        a = ns["mesh_query_point_sign_winding_number"](*m.arrays(), *x, S.BIG, F(2), F(0.5))
        c = ns["mesh_query_point_sign_winding_number"](*fresh.arrays(), *x, S.BIG, F(2),
                                                       F(0.5))
        assert a == c
    assert m.average_edge_length == fresh.average_edge_length
    m2 = Mesh(pts.copy(), idx)
    m2.points = moved
    np.testing.assert_array_equal(m2.tris, m.tris)
    np.testing.assert_array_equal(m2.bvh.bounds, m.bvh.bounds)


def test_average_edge_length_is_warps_float32_sum():
    pts, idx = S.torus(20, 12, noise=0.05)
    t = pts[idx.reshape(-1, 3)]
    e = (np.linalg.norm(t[:, 0] - t[:, 1], axis=1) + np.linalg.norm(t[:, 0] - t[:, 2], axis=1)
         + np.linalg.norm(t[:, 2] - t[:, 1], axis=1)).astype(np.float32)
    s = F(0)
    for x in e:
        s = F(s + x)
    assert Mesh(pts, idx).average_edge_length == F(s / F(3 * len(e)))


def test_velocities_and_reads():
    ns = cpu_cores()
    pts, idx = S.cube()
    vel = (pts * F(2) - F(1)).astype(np.float32)
    m = Mesh(pts, idx, velocities=vel)
    got = ns["mesh_eval_velocity"](m.velocities, m.indices, 3, F(0.2), F(0.5))
    i, j, k = idx[9:12]
    np.testing.assert_allclose(got, 0.2 * vel[i] + 0.5 * vel[j] + 0.3 * vel[k], rtol=1e-6)
    assert ns["mesh_get_velocity"](m.velocities, m.indices, 4) == tuple(vel[idx[4]])
    assert ns["mesh_get_point"](m.points, m.indices, 35) == tuple(pts[idx[35]])
    for bad in (-1, 36):
        assert ns["mesh_get_point"](m.points, m.indices, bad) == (0, 0, 0)
        assert ns["mesh_get_index"](m.indices, bad) == -1
    assert ns["mesh_eval_position"](m.points, m.indices, 12, F(0.5), F(0.5)) == (0, 0, 0)
    assert ns["mesh_eval_face_normal"](m.points, m.indices, 0) == (0, 0, -1)
    no_vel = Mesh(pts, idx)
    assert ns["mesh_eval_velocity"](no_vel.velocities, no_vel.indices, 0, F(1), F(0)) == \
        (0, 0, 0)


def test_sliver_flags_equal_warps_rule():
    """The build's fast sliver test (squares first) agrees with Warp's float32 ``|n| / s <
    1e-6`` on triangles spread across the threshold, including ratios within 0.1% of it."""
    from weft.native.geometry import mesh_geom
    from weft.native.geometry.mesh import _sliver
    rng = np.random.default_rng(71)
    a = rng.uniform(-1, 1, (400, 3)).astype(np.float32)
    b = a + rng.uniform(-1, 1, (400, 3)).astype(np.float32)
    mid = (a + b) / 2
    side = np.cross(b - a, rng.normal(size=(400, 3))).astype(np.float32)
    side /= np.linalg.norm(side, axis=1, keepdims=True)
    ratio = np.exp(rng.uniform(np.log(1e-7), np.log(1e-5), 400))
    ratio[:100] = 1e-6 * (1 + rng.uniform(-2e-3, 2e-3, 100))
    h = ratio * 1.5 * np.linalg.norm(b - a, axis=1)     # |n| / s = h / (1.5 |b - a|)
    c = (mid + h[:, None] * side).astype(np.float32)
    want = [bool(mesh_geom.is_sliver(*a[i], *b[i], *c[i])) for i in range(400)]
    got = [bool(_sliver(*a[i], *b[i], *c[i])[0]) for i in range(400)]
    assert got == want and 50 < sum(want) < 350
    assert 20 < sum(want[:100]) < 80                     # the near-threshold ones split


def test_refit_checks_the_points_the_triangles_use():
    """A refit finds non-finite vertices in its sweep and raises after it; a point no triangle
    uses is never read; finite coordinates whose squared edges overflow are no error."""
    pts, idx = S.cube()
    m = Mesh(np.vstack([pts, np.zeros((1, 3), np.float32)]), idx)
    m.points[len(pts)] = NAN            # no face uses it
    m.refit()
    np.testing.assert_array_equal(m.bvh.bounds[0], [0, 0, 0, 1, 1, 1])
    m.points[3, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.refit()
    m.points[3, 2] = pts[3, 2]
    m.points[len(pts)] = 0
    m.refit()
    fresh = Mesh(m.points.copy(), idx)      # the same points: the same tree
    np.testing.assert_array_equal(m.tris, fresh.tris)
    np.testing.assert_array_equal(m.bvh.bounds, fresh.bvh.bounds)
    big = Mesh(pts * F(1e30), idx)
    big.refit()
    np.testing.assert_array_equal(big.bvh.bounds[0], F([0, 0, 0, 1e30, 1e30, 1e30]))
