"""wp.Mesh and wp.Bvh in kernels: the struct-returning queries, evaluation helpers, AABB and BVH
iterators (by hand and with ``for``), refit after moving points, launch checks of ids; values
against Warp 1.19 and numpy brute force (tests/geometry/mesh_brute.py)."""
import numpy as np
import pytest

import weft as wp

from . import mesh_brute as brute
from . import mesh_scenes as scenes

CUBE_PTS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1],
                     [1, 1, 1], [0, 1, 1]], np.float32)
CUBE_FACES = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                       [2, 3, 7], [2, 7, 6], [1, 2, 6], [1, 6, 5], [0, 4, 7], [0, 7, 3]],
                      np.int32)


def cube_mesh():
    return wp.Mesh(points=wp.array(CUBE_PTS, dtype=wp.vec3),
                   indices=wp.array(CUBE_FACES.ravel(), dtype=wp.int32))


@wp.kernel
def probe(mid: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec4),
          counts: wp.array(dtype=int)):
    i = wp.tid()
    r = wp.mesh_query_point(mid, p[i], 10.0)
    if r.result:
        c = wp.mesh_eval_position(mid, r.face, r.u, r.v)
        out[i] = wp.vec4(c[0], c[1], c[2], r.sign)
    ray = wp.mesh_query_ray(mid, p[i], wp.vec3(1.0, 0.0, 0.0), 100.0)
    if ray.result:
        counts[i] = ray.face
    query = wp.mesh_query_aabb(mid, p[i] - wp.vec3(0.1), p[i] + wp.vec3(0.1))
    n = int(0)
    for f in query:
        n += 1
    counts[i + 4] = n


def test_cube_queries_equal_warps():
    mesh = cube_mesh()
    p = wp.array(np.array([[0.5, 0.5, 0.5], [2.0, 0.5, 0.5], [0.5, 0.2, -1.0],
                           [0.05, 0.5, 0.5]], np.float32), dtype=wp.vec3)
    out = wp.zeros(4, dtype=wp.vec4)
    counts = wp.zeros(8, dtype=int)
    wp.launch(probe, 4, inputs=[mesh.id, p, out, counts])
    # Warp 1.19's output for the same kernel
    np.testing.assert_allclose(out.numpy(), [[0.5, 1.0, 0.5, -1.0], [1.0, 0.5, 0.5, 1.0],
                                             [0.5, 0.2, 0.0, 1.0], [0.0, 0.5, 0.5, -1.0]],
                               atol=2e-7)
    assert counts.numpy().tolist() == [9, 0, 0, 9, 0, 0, 0, 2]


@wp.kernel
def closest_and_rays(mid: wp.uint64, p: wp.array(dtype=wp.vec3), o: wp.array(dtype=wp.vec3),
                     d: wp.array(dtype=wp.vec3), dist: wp.array(dtype=float),
                     t: wp.array(dtype=float), normal_dot: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mid, p[i], 1.0e6)
    dist[i] = -1.0
    if q.result:
        dist[i] = wp.length(p[i] - wp.mesh_eval_position(mid, q.face, q.u, q.v))
    r = wp.mesh_query_ray(mid, o[i], d[i], 1.0e6)
    t[i] = -1.0
    if r.result:
        t[i] = r.t
        normal_dot[i] = wp.dot(r.normal, wp.mesh_eval_face_normal(mid, r.face))


def test_closest_points_and_rays_against_brute_force():
    pts, idx = scenes.torus(24, 12, noise=0.05, seed=3)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=wp.int32))
    p = scenes.points(64, seed=4)
    o, d = scenes.rays(64, seed=5)
    dist = wp.zeros(64, dtype=float)
    t = wp.zeros(64, dtype=float)
    nd = wp.zeros(64, dtype=float)
    wp.launch(closest_and_rays, 64, inputs=[mesh.id, wp.array(p, dtype=wp.vec3),
                                            wp.array(o, dtype=wp.vec3),
                                            wp.array(d, dtype=wp.vec3), dist, t, nd])
    ref_d = np.array([brute.closest(pts, idx, x) for x in p])
    np.testing.assert_allclose(dist.numpy(), ref_d, rtol=1e-4, atol=1e-5)
    ref_t = np.array([brute.ray_hits(pts, idx, a, b)[0].min() for a, b in zip(o, d)])
    hit = np.isfinite(ref_t)
    assert hit.sum() > 10 and (~hit).sum() > 5
    np.testing.assert_array_equal(t.numpy() >= 0, hit)
    np.testing.assert_allclose(t.numpy()[hit], ref_t[hit], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(nd.numpy()[hit], 1.0, atol=1e-5)


@wp.kernel
def count_boxes(bid: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                box_hits: wp.array(dtype=int), ray_hits: wp.array(dtype=int),
                first: wp.array(dtype=int)):
    i = wp.tid()
    q = wp.bvh_query_aabb(bid, lo[i], hi[i])
    item = int(-1)
    n = int(0)
    smallest = int(1000000)
    while wp.bvh_query_next(q, item):
        n += 1
        smallest = wp.min(smallest, item)
    box_hits[i] = n
    first[i] = smallest
    m = int(0)
    for j in wp.bvh_query_ray(bid, o[i], d[i]):
        m += 1
    ray_hits[i] = m


def test_bvh_queries_against_brute_force():
    lo, up = scenes.boxes(300, seed=6)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(up, dtype=wp.vec3))
    rng = np.random.default_rng(7)
    qlo = rng.uniform(-1, 1, (32, 3)).astype(np.float32)
    qup = (qlo + rng.uniform(0, 0.4, (32, 3))).astype(np.float32)
    o, d = scenes.rays(32, seed=8)
    hits, rays, first = (wp.zeros(32, dtype=int) for _ in range(3))
    wp.launch(count_boxes, 32, inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3),
                                       wp.array(qup, dtype=wp.vec3), wp.array(o, dtype=wp.vec3),
                                       wp.array(d, dtype=wp.vec3), hits, rays, first])
    ref = [brute.box_overlap(lo, up, a, b) for a, b in zip(qlo, qup)]
    assert hits.numpy().tolist() == [len(r) for r in ref]
    assert first.numpy().tolist() == [int(r.min()) if len(r) else 1000000 for r in ref]
    assert rays.numpy().tolist() == [len(brute.ray_boxes(lo, up, a, b)) for a, b in zip(o, d)]


@wp.kernel
def shift(points: wp.array(dtype=wp.vec3), dz: float):
    i = wp.tid()
    points[i] = points[i] + wp.vec3(0.0, 0.0, dz)


@wp.kernel
def height_below(mid: wp.uint64, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    r = wp.mesh_query_ray(mid, x[i], wp.vec3(0.0, 0.0, -1.0), 100.0)
    out[i] = -1.0
    if r.result:
        out[i] = r.t


def test_refit_after_moving_points_in_a_kernel():
    mesh = cube_mesh()
    x = wp.array(np.array([[0.5, 0.5, 5.0]], np.float32), dtype=wp.vec3)
    out = wp.zeros(1, dtype=float)
    wp.launch(height_below, 1, inputs=[mesh.id, x, out])
    assert out.numpy()[0] == pytest.approx(4.0)
    wp.launch(shift, 8, inputs=[mesh.points, 2.0])  # the mesh reads these points
    mesh.refit()
    wp.launch(height_below, 1, inputs=[mesh.id, x, out])
    assert out.numpy()[0] == pytest.approx(2.0)


@wp.kernel
def output_forms(mid: wp.uint64, p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    sign = float(0.0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    found = wp.mesh_query_point(mid, p[i], 10.0, sign, face, u, v)
    q = wp.mesh_query_point(mid, p[i], 10.0)
    out[i * 8] = float(found == q.result) + float(face == q.face)
    out[i * 8 + 1] = sign - q.sign + u - q.u + v - q.v
    t = float(0.0)
    n = wp.vec3()
    hit = wp.mesh_query_ray(mid, p[i], wp.vec3(1.0, 0.0, 0.0), 100.0, t, u, v, sign, n, face)
    r = wp.mesh_query_ray(mid, p[i], wp.vec3(1.0, 0.0, 0.0), 100.0)
    out[i * 8 + 2] = float(hit == r.result) + float(face == r.face)
    out[i * 8 + 3] = t - r.t + u - r.u + v - r.v + sign - r.sign + wp.length(n - r.normal)
    out[i * 8 + 4] = t
    out[i * 8 + 5] = float(face)


def test_warps_output_argument_forms_assign_the_query_fields():
    mesh = cube_mesh()
    p = wp.array(np.array([[0.5, 0.5, 0.5], [0.2, 0.3, 0.9]], np.float32), dtype=wp.vec3)
    out = wp.zeros(16, dtype=float)
    wp.launch(output_forms, 2, inputs=[mesh.id, p, out])
    o = out.numpy().reshape(2, 8)
    np.testing.assert_array_equal(o[:, [0, 2]], 2.0)  # same result flag and face
    np.testing.assert_array_equal(o[:, [1, 3]], 0.0)  # same values
    np.testing.assert_allclose(o[:, 4], [0.5, 0.8], rtol=1e-6)  # t to the face x = 1
    assert o[:, 5].tolist() == [9.0, 9.0]


def test_bad_ids_and_forms_are_clear_errors():
    mesh = cube_mesh()
    bvh = wp.Bvh(wp.array(CUBE_PTS, dtype=wp.vec3), wp.array(CUBE_PTS + 1, dtype=wp.vec3))
    x = wp.array(np.zeros((1, 3), np.float32), dtype=wp.vec3)
    out = wp.zeros(1, dtype=float)
    with pytest.raises(wp.LaunchError, match="wp.Bvh, not of a wp.Mesh"):
        wp.launch(height_below, 1, inputs=[bvh.id, x, out])
    mid = mesh.id
    del mesh
    import gc
    gc.collect()
    with pytest.raises(wp.LaunchError, match="freed"):
        wp.launch(height_below, 1, inputs=[mid, x, out])

    with pytest.raises(ValueError, match="not a multiple of 3"):
        wp.Mesh(points=wp.array(CUBE_PTS, dtype=wp.vec3),
                indices=wp.array(np.arange(4, dtype=np.int32), dtype=wp.int32))


@wp.kernel
def eval_uv(mid: wp.uint64, uv: wp.array(dtype=wp.vec2), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.mesh_eval_position(mid, 8, uv[i][0], uv[i][1])


def test_mesh_eval_position_is_differentiable_in_the_barycentrics():
    mesh = cube_mesh()
    uv = wp.array(np.array([[0.2, 0.3]], np.float32), dtype=wp.vec2, requires_grad=True)
    out = wp.zeros(1, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(eval_uv, 1, inputs=[mesh.id, uv, out])
    seed = np.array([[1.0, 2.0, 3.0]], np.float32)
    tape.backward(grads={out: seed})
    p0, p1, p2 = CUBE_PTS[CUBE_FACES[8]]  # d/du = p0 - p2, d/dv = p1 - p2
    np.testing.assert_allclose(uv.grad.numpy()[0], [seed[0] @ (p0 - p2), seed[0] @ (p1 - p2)])
    t = wp.jvp(eval_uv, 1, inputs=[mesh.id, uv], outputs=[out],
               tangents={uv: np.array([[1.0, -1.0]], np.float32)})
    np.testing.assert_allclose(t[out].numpy()[0], (p0 - p2) - (p1 - p2))


@wp.kernel
def tri_tri(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(a[0], a[1], a[2], a[3 + 3 * i], a[4 + 3 * i], a[5 + 3 * i])


def test_intersect_tri_tri():
    tris = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0],            # in the plane z = 0
                     [0.2, 0.2, -1], [0.2, 0.2, 1], [0.3, 0.3, 1],   # pierces it
                     [0.2, 0.2, 0.5], [0.4, 0.2, 0.5], [0.2, 0.4, 0.5],  # above it
                     [2, 2, -1], [2, 2, 1], [3, 2, 0]], np.float32)  # beside it
    out = wp.zeros(3, dtype=int)
    wp.launch(tri_tri, 3, inputs=[wp.array(tris, dtype=wp.vec3), out])
    assert out.numpy().tolist() == [1, 0, 0]


@wp.kernel
def surface_terms(mid: wp.uint64, p: wp.array(dtype=wp.vec3), o: wp.array(dtype=wp.vec3),
                  d: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mid, p[i], 100.0)
    c = wp.mesh_eval_position(mid, q.face, q.u, q.v)
    r = wp.mesh_query_ray(mid, o[i], d[i], 100.0)
    out[i] = wp.length(p[i] - c) + r.t + 0.5 * r.u - r.v


def _surface_value(mesh, p, o, d):
    out = wp.zeros(len(p), dtype=float)
    wp.launch(surface_terms, len(p), inputs=[mesh.id, wp.array(p, dtype=wp.vec3),
                                             wp.array(o, dtype=wp.vec3),
                                             wp.array(d, dtype=wp.vec3), out])
    return out.numpy().astype(np.float64)


def test_gradients_of_closest_points_and_rays_match_finite_differences():
    pts, idx = scenes.torus(16, 10, noise=0.05, seed=3)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=wp.int32))
    p = np.array([[1.3, 0.2, 0.5], [0.1, 1.6, -0.2]], np.float32)
    o = np.array([[-2.0, 0.1, 0.05], [0.05, -2.0, 0.1]], np.float32)
    d = np.array([[1.0, 0.05, 0.02], [0.02, 1.0, -0.03]], np.float32)
    arrays = [wp.array(x, dtype=wp.vec3, requires_grad=True) for x in (p, o, d)]
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(surface_terms, 2, inputs=[mesh.id, *arrays, out])
    tape.backward(grads={out: np.ones(2, np.float32)})
    eps = 1e-3
    for which, a in enumerate(arrays):
        fd = np.zeros((2, 3))
        for k in range(2):
            for c in range(3):
                xs = [p.copy(), o.copy(), d.copy()]
                xs[which][k, c] += eps
                hi = _surface_value(mesh, *xs)[k]
                xs[which][k, c] -= 2 * eps
                lo = _surface_value(mesh, *xs)[k]
                fd[k, c] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(a.grad.numpy(), fd, rtol=2e-2, atol=2e-2)
        assert np.abs(a.grad.numpy()).max() > 0.05  # a real dependence, not zeros


@wp.kernel
def spheres_and_counts(mid: wp.uint64, bid: wp.uint64, c: wp.array(dtype=wp.vec3),
                       out: wp.array(dtype=int)):
    i = wp.tid()
    n = int(0)
    q = wp.mesh_query_sphere(mid, c[i], 0.3)
    f = int(0)
    while wp.mesh_query_next(q, f):  # Warp's name for any mesh query's step
        n += 1
    out[i * 4] = n
    m = int(0)
    for j in wp.bvh_query_sphere(bid, c[i], 0.3):
        m += 1
    out[i * 4 + 1] = m
    out[i * 4 + 2] = wp.mesh_query_ray_count_intersections(mid, c[i], wp.vec3(1.0, 0.1, 0.05))
    out[i * 4 + 3] = int(wp.mesh_query_ray_anyhit(mid, c[i], wp.vec3(1.0, 0.1, 0.05), 0.6))


def test_sphere_iterators_anyhit_and_crossing_counts():
    mesh = cube_mesh()
    lo, up = scenes.boxes(200, seed=11)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(up, dtype=wp.vec3))
    c = np.array([[0.5, 0.5, 0.5], [0.1, 0.5, 0.5], [-1.0, 0.5, 0.5], [3.0, 3.0, 3.0]],
                 np.float32)
    out = wp.zeros(16, dtype=int)
    wp.launch(spheres_and_counts, 4, inputs=[mesh.id, bvh.id, wp.array(c, dtype=wp.vec3), out])
    o = out.numpy().reshape(4, 4)
    # faces within 0.3: none from the centre; the two of the face x = 0 from (0.1, .5, .5)
    assert o[:, 0].tolist() == [0, 2, 0, 0]
    assert o[:, 1].tolist() == [len(brute.sphere_boxes(lo, up, x, 0.3)) for x in c]
    # crossings along +x: one face from inside, two from outside in front, none behind
    assert o[:, 2].tolist() == [1, 1, 2, 0]
    # a hit closer than 0.6 along the ray: only from (0.5, .5, .5) (the face x = 1 at 0.5)
    assert o[:, 3].tolist() == [1, 0, 0, 0]


@wp.kernel
def capsule_items(bid: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                  r: float, max_dist: float, count: wp.array(dtype=int),
                  total: wp.array(dtype=int)):
    i = wp.tid()
    n = int(0)
    s = int(0)
    q = wp.bvh_query_capsule(bid, o[i], d[i], r)
    item = int(0)
    while wp.bvh_query_next(q, item, max_dist):
        n += 1
        s += item
    count[i] = n
    total[i] = s


def _capsule_brute(lo, up, o, d, r, max_dist):
    """Items whose box inflated by r the segment o + s d, 0 <= s <= max_dist, meets (float64)."""
    lo, up = lo.astype(np.float64) - r, up.astype(np.float64) + r
    o, d = o.astype(np.float64), d.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - o) / d, (up - o) / d
    inside = (lo <= o) & (o <= up)
    enter = np.where(d == 0, np.where(inside, -np.inf, np.inf), np.minimum(t1, t2)).max(1)
    leave = np.where(d == 0, np.where(inside, np.inf, -np.inf), np.maximum(t1, t2)).min(1)
    return np.flatnonzero((enter <= leave) & (leave >= 0) & (enter <= max_dist))


def test_bvh_capsule_sweeps_against_brute_force():
    # Warp's documented example: one box overlapping the swept capsule
    bvh = wp.Bvh(wp.array([[0.75, -1, -1]], dtype=wp.vec3), wp.array([[2.0, 1, 1]],
                                                                       dtype=wp.vec3))
    count, total = wp.zeros(1, dtype=int), wp.zeros(1, dtype=int)
    wp.launch(capsule_items, 1, inputs=[bvh.id, wp.array([[0.0, 0.0, 0.0]], dtype=wp.vec3),
                                        wp.array([[0.5, 0.0, 0.0]], dtype=wp.vec3), 0.3, 1.0,
                                        count, total])
    assert count.numpy().tolist() == [1]
    lo, up = scenes.boxes(300, seed=12)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(up, dtype=wp.vec3))
    o, d = scenes.rays(48, seed=13)
    d = d * 0.6
    count, total = wp.zeros(48, dtype=int), wp.zeros(48, dtype=int)
    for r, max_dist in ((0.05, 1.0), (0.2, 2.5)):
        wp.launch(capsule_items, 48, inputs=[bvh.id, wp.array(o, dtype=wp.vec3),
                                             wp.array(d, dtype=wp.vec3), r, max_dist, count,
                                             total])
        ref = [_capsule_brute(lo, up, a, b, r, max_dist) for a, b in zip(o, d)]
        assert count.numpy().tolist() == [len(x) for x in ref]
        assert total.numpy().tolist() == [int(x.sum()) for x in ref]
        assert sum(len(x) for x in ref) > 20  # the sweeps meet boxes


@wp.kernel
def signs_by_normal(mid: wp.uint64, p: wp.array(dtype=wp.vec3), eps: float,
                    out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    q = wp.mesh_query_point_sign_normal(mid, p[i], 1.0e6, eps)
    out[i] = wp.vec4(q.sign, float(q.face), q.u, q.v)


def test_sign_normal_reads_the_average_edge_of_the_refitted_mesh():
    """A build or refit leaves the average edge length to the first query that needs it
    (threads that find it stale compute the same float32 sum): the kernel then uses Warp's
    average of the moved mesh, and the descriptor keeps it."""
    from weft.native.geometry import descriptors as D
    from weft.native.geometry.kernel_api import AVG_STALE, MESH_AVG

    from .mesh_fixtures import cpu_cores
    pts, idx = scenes.torus(24, 16, noise=0.05)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=wp.int32))
    words = mesh._descriptor.words
    assert words[MESH_AVG] == AVG_STALE
    moved = (pts * np.float32(1.7) + np.float32(0.3)).astype(np.float32)
    mesh.points.numpy()[:] = moved
    mesh.refit()
    assert words[MESH_AVG] == AVG_STALE
    q = scenes.points(3000, seed=77, lo=-3.0, hi=3.5)
    out = wp.zeros(len(q), dtype=wp.vec4)
    wp.launch(signs_by_normal, len(q), inputs=[mesh.id, wp.array(q, dtype=wp.vec3), 0.5, out])
    # Warp's sum, in triangle order, in float32
    t = moved[idx.reshape(-1, 3)].astype(np.float64)
    s = np.float32(0)
    for a, b, c in t:
        s = np.float32(s + np.float32(np.float32(np.float32(np.linalg.norm(a - b))
                                                 + np.float32(np.linalg.norm(a - c)))
                                      + np.float32(np.linalg.norm(c - b))))
    avg = np.float32(s / np.float32(3 * len(t)))
    assert words[MESH_AVG] == D.float_bits(float(avg))
    core = mesh._core
    assert core.average_edge_length == avg
    ns = cpu_cores()
    want = np.array([ns["mesh_query_point_sign_normal"](*core.arrays()[:4], avg, *x,
                                                        np.float32(1e6), np.float32(0.5))
                     for x in q], dtype=object)
    got = out.numpy()
    np.testing.assert_array_equal(got[:, 0], [w[4] for w in want])
    np.testing.assert_array_equal(got[:, 1], [w[1] for w in want])
    # the average matters here: the query with a zero scale gives other signs
    zero = [ns["mesh_query_point_sign_normal"](*core.arrays()[:4], np.float32(0), *x,
                                               np.float32(1e6), np.float32(0.5))[4] for x in q]
    assert np.any(np.asarray(zero) != got[:, 0])
