"""Mesh and BVH queries against brute force (every triangle or box, numpy) on random scenes
with fixed seeds: closest and furthest points, max_dist limits, rays (nearest t, any hit,
crossing counts), inside/outside signs against the analytic inside of a torus, iterators as
sets. Compiled cores, and the plain-Python cores on a subset (equal to the compiled ones)."""
import numpy as np
import pytest

from tests.geometry import mesh_brute as B
from tests.geometry import mesh_scenes as S
from tests.geometry.mesh_fixtures import cpu_cores, python_cores
from weft.native.geometry.mesh import Bvh, Mesh

F = np.float32


def _soup(seed, n=300):
    """A random triangle soup (overlapping, intersecting, some tiny faces)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, 3))
    pts = np.concatenate([a, a + rng.normal(0, 0.2, (n, 3)), a + rng.normal(0, 0.2, (n, 3))])
    idx = np.arange(3 * n).reshape(3, n).T.ravel()
    return pts.astype(np.float32), idx.astype(np.int32)


SCENES = {"soup": lambda: _soup(11), "torus": lambda: S.torus(24, 16, noise=0.1, seed=3)}


@pytest.fixture(scope="module", params=sorted(SCENES))
def scene(request):
    pts, idx = SCENES[request.param]()
    return Mesh(pts, idx, bvh_leaf_size=3)


def _dist_of(m, face, u, v, p):
    a, b, c = (m.points[m.indices[3 * face + k]].astype(np.float64) for k in range(3))
    return np.linalg.norm(u * a + v * b + (1 - u - v) * c - p)


def test_closest_point_is_the_nearest_face(scene):
    ns = cpu_cores()
    q = S.points(150, seed=21)
    for p in q:
        ok, face, u, v, s = ns["mesh_query_point_no_sign"](*scene.arrays()[:4], *p, S.BIG)
        assert ok
        best = B.closest(scene.points, scene.indices, p.astype(np.float64))
        assert _dist_of(scene, face, u, v, p) == pytest.approx(best, rel=1e-5, abs=1e-6)
        assert 0 <= face < scene.num_tris and not B.sliver(scene.points, scene.indices)[face]


def test_max_dist_is_strict(scene):
    """Found exactly when the nearest face is closer than max_dist (random limits away from
    the nearest distance by more than rounding)."""
    ns = cpu_cores()
    rng = np.random.default_rng(22)
    for p in S.points(100, seed=23):
        best = B.closest(scene.points, scene.indices, p.astype(np.float64))
        md = F(best * rng.choice([0.5, 0.999, 1.001, 2.0]))
        ok = ns["mesh_query_point_no_sign"](*scene.arrays()[:4], *p, md)[0]
        assert ok == (best < md)


def test_furthest_point(scene):
    ns = cpu_cores()
    a, b, c = B.triangles(scene.points, scene.indices)
    keep = ~B.sliver(scene.points, scene.indices)
    verts = np.concatenate([a[keep], b[keep], c[keep]])
    for p in S.points(60, seed=24):
        ok, face, u, v, s = ns["mesh_query_furthest_point_no_sign"](*scene.arrays()[:4], *p,
                                                                    F(0.1))
        far = np.linalg.norm(verts - p, axis=1).max()
        assert ok and _dist_of(scene, face, u, v, p) == pytest.approx(far, rel=1e-6)
        assert u in (0, 1) and v in (0, 1)          # a vertex
        assert not ns["mesh_query_furthest_point_no_sign"](*scene.arrays()[:4], *p,
                                                           F(far * 1.001))[0]


def test_rays_nearest_hit(scene):
    """Hit iff brute force hits (up to rays grazing an edge), the same nearest t, a point on
    the ray and the face's plane, and unit normals."""
    ns = cpu_cores()
    o, d = S.rays(300, seed=25)
    hits = 0
    for i in range(len(o)):
        hit, t, u, v, sign, nx, ny, nz, face = ns["mesh_query_ray"](*scene.arrays()[:4],
                                                                    *o[i], *d[i], S.BIG)
        ts, bmin = B.ray_hits(scene.points, scene.indices, o[i], d[i])
        k = np.argmin(ts)
        if not np.isfinite(ts[k]):
            assert not hit or abs(bmin).min() < 1e-5
            continue
        if not hit:
            assert abs(bmin[k]) < 1e-5
            continue
        hits += 1
        assert t == pytest.approx(ts[k], rel=1e-5, abs=1e-6)
        a, b, c = (scene.points[scene.indices[3 * face + j]].astype(np.float64)
                   for j in range(3))
        np.testing.assert_allclose(u * a + v * b + (1 - u - v) * c, o[i] + t * d[i],
                                   atol=1e-5)
        assert np.sqrt(nx * nx + ny * ny + nz * nz) == pytest.approx(1, abs=1e-6)
        n = np.cross(b - a, c - a)
        assert np.sign(sign) == -np.sign(np.dot(n, d[i]))   # > 0: the front was hit
    assert hits > 50


def test_anyhit_and_counts(scene):
    ns = cpu_cores()
    o, d = S.rays(300, seed=26)
    lk = scene.arrays()[1]
    for i in range(len(o)):
        ts, bmin = B.ray_hits(scene.points, scene.indices, o[i], d[i])
        near_edge = np.abs(bmin[np.isfinite(ts) | (bmin > -1e-5)]).min(initial=1) < 1e-5
        any_ = ns["mesh_query_ray_anyhit"](scene.arrays()[0], lk, scene.tris, *o[i], *d[i],
                                           F(1.5))
        count = ns["mesh_query_ray_count_intersections"](scene.arrays()[0], lk, scene.tris,
                                                         *o[i], *d[i])
        if not near_edge:
            assert any_ == bool((ts < 1.5).any())
            assert count == np.isfinite(ts).sum()


def test_iterators_are_box_and_sphere_sets(scene):
    ns = cpu_cores()
    b, lk, p, tris, props = scene.arrays()
    for x in S.points(60, seed=27, lo=-1.2, hi=1.2):
        h = F(0.25)
        st = ns["mesh_query_aabb"](lk, *(x - h), *(x + h))
        got = _drain(ns, "mesh_query_next", st, b, lk, p, tris)
        assert len(got) == len(set(got))
        assert sorted(got) == list(B.box_overlap(scene.lowers, scene.uppers, x - h, x + h))
        st = ns["mesh_query_sphere"](lk, *x, F(0.3))
        got = sorted(_drain(ns, "mesh_query_next", st, b, lk, p, tris))
        a_, b_, c_ = B.triangles(scene.points, scene.indices)
        dist = B.triangle_distances(a_, b_, c_, x.astype(np.float64))
        sure = set(np.flatnonzero(dist < 0.3 - 1e-5))
        maybe = set(np.flatnonzero(dist <= 0.3 + 1e-5))
        assert sure <= set(got) <= maybe


def _drain(ns, name, state, *arrays, extra=()):
    out = []
    while True:
        ok, i, state = ns[name](*arrays, state, *extra)
        if not ok:
            return out
        out.append(int(i))


@pytest.mark.parametrize("leaf", [1, 4])
def test_bvh_iterators_are_brute_force_sets(leaf):
    ns = cpu_cores()
    lo, up = S.boxes(500, seed=31)
    t = Bvh(lo, up, leaf_size=leaf)
    arrs = t.arrays()
    q = S.points(80, seed=32, lo=-1.2, hi=1.2)
    o, d = S.rays(80, seed=33)
    for i in range(80):
        h = F(0.2)
        got = _drain(ns, "bvh_query_next", ns["bvh_query_aabb"](arrs[1], -1, *(q[i] - h),
                                                                 *(q[i] + h)),
                     *arrs, extra=(F(np.inf),))
        assert sorted(got) == list(B.box_overlap(lo, up, q[i] - h, q[i] + h))
        for md in (F(np.inf), F(0.8)):
            got = _drain(ns, "bvh_query_next", ns["bvh_query_ray"](arrs[1], -1, *o[i], *d[i]),
                         *arrs, extra=(md,))
            assert sorted(got) == list(B.ray_boxes(lo, up, o[i], d[i], md))
        got = _drain(ns, "bvh_query_next", ns["bvh_query_sphere"](arrs[1], -1, *q[i], F(0.3)),
                     *arrs, extra=(F(np.inf),))
        assert sorted(got) == list(B.sphere_boxes(lo, up, q[i], F(0.3)))


def test_bvh_query_from_a_subtree_root():
    """``root`` restricts a query to one subtree: the items of that subtree's leaves."""
    ns = cpu_cores()
    lo, up = S.boxes(300, seed=34)
    t = Bvh(lo, up, leaf_size=2)
    lk, p = t.links, t.prims
    for root in (1, int(lk[0, 1]), 5):
        sub = set()
        for n in range(root, lk[root, 2]):
            if lk[n, 0] >= 0:
                sub |= set(p[lk[n, 0]:lk[n, 1]].tolist())
        got = _drain(ns, "bvh_query_next", ns["bvh_query_aabb"](lk, root, *[-9] * 3,
                                                                 *[9] * 3),
                     *t.arrays(), extra=(F(np.inf),))
        assert sorted(got) == sorted(sub) and len(got) < 300
    assert _drain(ns, "bvh_query_next", ns["bvh_query_aabb"](lk, len(lk), *[-9] * 3, *[9] * 3),
                  *t.arrays(), extra=(F(np.inf),)) == []


def _inside_torus(p, R=1.0, r=0.35):
    return (np.hypot(p[:, 0], p[:, 1]) - R) ** 2 + p[:, 2] ** 2 < r * r


def test_signs_agree_with_the_analytic_inside():
    """On a fine, noise-free torus: the ray vote, the angle-weighted normal, the winding number
    and the parity rays all say inside (-1) exactly for points inside the torus (points at
    least 0.03 from the surface)."""
    ns = cpu_cores()
    m = Mesh(*S.torus(64, 32), support_winding_number=True)
    q = S.points(300, seed=35, lo=-1.5, hi=1.5)
    q[:, 2] *= 0.4
    rad = np.sqrt((np.hypot(q[:, 0], q[:, 1]) - 1.0) ** 2 + q[:, 2] ** 2)
    q = q[np.abs(rad - 0.35) > 0.03]
    want = np.where(_inside_torus(q), -1.0, 1.0)
    assert (want < 0).sum() > 20 and (want > 0).sum() > 20
    b, lk, p, tris, props = m.arrays()
    for i, x in enumerate(q):
        assert ns["mesh_query_point"](b, lk, p, tris, *x, S.BIG)[4] == want[i]
        assert ns["mesh_query_point_sign_normal"](b, lk, p, tris, m.average_edge_length, *x,
                                                  S.BIG, F(1e-3))[4] == want[i]
        assert ns["mesh_query_point_sign_winding_number"](b, lk, p, tris, props, *x, S.BIG,
                                                          F(2.0), F(0.5))[4] == want[i]
        assert ns["mesh_query_point_sign_parity"](b, lk, p, tris, *x, S.BIG, 5,
                                                  F(0.1))[4] == want[i]
        w = ns["mesh_winding_number"](lk, tris, props, *x, F(2.0))
        assert w == pytest.approx(1.0 if want[i] < 0 else 0.0, abs=0.02)


def test_python_cores_equal_compiled():
    """The uncompiled cores (plain Python on NumPy scalars) give the compiled results."""
    with np.errstate(divide="ignore", invalid="ignore"):   # 1/0 of axis rays, as in C
        _python_vs_compiled(cpu_cores(), python_cores())


def _python_vs_compiled(ns, py):
    m = Mesh(*S.torus(12, 8, noise=0.1), support_winding_number=True)
    b, lk, p, tris, props = m.arrays()
    o, d = S.rays(12, seed=36)
    for x in S.points(12, seed=37):
        for name, extra in (("mesh_query_point", (S.BIG,)),
                            ("mesh_query_point_sign_winding_number",
                             (S.BIG, F(2.0), F(0.5))),
                            ("mesh_query_furthest_point_no_sign", (F(0.0),))):
            args = (b, lk, p, tris, props) if "winding" in name else (b, lk, p, tris)
            assert tuple(ns[name](*args, *x, *extra)) == tuple(py[name](*args, *x, *extra))
        st = ns["mesh_query_sphere"](lk, *x, F(0.5))
        assert _drain(ns, "mesh_query_next", st, b, lk, p, tris) == \
            _drain(py, "mesh_query_next", st, b, lk, p, tris)
    for i in range(len(o)):
        assert tuple(ns["mesh_query_ray"](b, lk, p, tris, *o[i], *d[i], S.BIG)) == \
            tuple(py["mesh_query_ray"](b, lk, p, tris, *o[i], *d[i], S.BIG))
