"""The differentiable continuous parts of mesh queries (``diff_funcs_mesh``) in small weft
kernels: values against independent numpy references, adjoints and tangents against central
finite differences in float64 (with respect to the query point, the ray and the triangle's
vertices), and the float32 versions against the query cores."""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check
from weft.native.geometry import mesh_geom as G
from weft.stdlib.diff_funcs_mesh import (ray_triangle_d, ray_triangle_f,
    triangle_closest_point_d, triangle_closest_point_f, triangle_distance_d, triangle_distance_f)

N = 6


@wp.kernel
def k_closest_d(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d),
                c: wp.array(dtype=wp.vec3d), p: wp.array(dtype=wp.vec3d),
                uv: wp.array(dtype=wp.vec2d), dist: wp.array(dtype=wp.float64)):
    i = wp.tid()
    r = triangle_closest_point_d(a[i], b[i], c[i], p[i])
    uv[i] = r
    dist[i] = triangle_distance_d(a[i], b[i], c[i], p[i], r)


@wp.kernel
def k_ray_d(o: wp.array(dtype=wp.vec3d), d: wp.array(dtype=wp.vec3d),
            a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d),
            c: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = ray_triangle_d(o[i], d[i], a[i], b[i], c[i])


def _closest_reference(a, b, c, p):
    """Brute force: the plane projection when it lies inside, else the best point of the three
    edges (clamped segment projections); returns (uv (N, 2), distance (N,))."""
    uv = np.zeros((len(p), 2))
    dist = np.zeros(len(p))
    for i in range(len(p)):
        A, B, C, P = a[i], b[i], c[i], p[i]
        M = np.stack([A - C, B - C], 1)
        lam = np.linalg.lstsq(M, P - C, rcond=None)[0]
        if lam.min() >= 0 and lam.sum() <= 1:
            best = (np.linalg.norm(M @ lam + C - P), lam[0], lam[1])
        else:
            best = (np.inf, 0, 0)
            for (X, Y, wx, wy) in ((A, B, 0, 1), (B, C, 1, 2), (C, A, 2, 0)):
                s = np.clip(np.dot(P - X, Y - X) / np.dot(Y - X, Y - X), 0, 1)
                dd = np.linalg.norm(X + s * (Y - X) - P)
                if dd < best[0]:
                    w = np.zeros(3)
                    w[wx] += 1 - s
                    w[wy] += s
                    best = (dd, w[0], w[1])
        dist[i], uv[i, 0], uv[i, 1] = best
    return uv, dist


def _scene(rng, n, region):
    """Triangles and query points whose closest feature is ``region`` ("face", "edge",
    "vertex"), away from region boundaries (the result is only piecewise smooth)."""
    a = rng.normal(size=(n, 3))
    b = a + rng.normal(size=(n, 3))
    c = a + rng.normal(size=(n, 3))
    n_ = np.cross(b - a, c - a)
    n_ /= np.linalg.norm(n_, axis=1, keepdims=True)
    if region == "face":
        w = rng.dirichlet([4, 4, 4], n)
        base = w[:, :1] * a + w[:, 1:2] * b + w[:, 2:] * c
        p = base + rng.uniform(0.3, 1.0, (n, 1)) * n_
    elif region == "edge":
        s = rng.uniform(0.3, 0.7, (n, 1))
        mid = a + s * (b - a)
        out = np.cross(b - a, n_)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        side = np.sign(np.einsum("ij,ij->i", c - a, out))[:, None]
        p = mid - side * 0.5 * out + 0.3 * n_
    else:   # beyond a, against the bisector of its angle: dot(b - a, p - a) < 0, same for c
        ub = (b - a) / np.linalg.norm(b - a, axis=1, keepdims=True)
        uc = (c - a) / np.linalg.norm(c - a, axis=1, keepdims=True)
        p = a - 0.5 * (ub + uc) + 0.2 * n_
    return a, b, c, p


def _check_closest(region, seed):
    rng = np.random.default_rng(seed)
    a, b, c, p = _scene(rng, N, region)
    uv_ref, _ = _closest_reference(a, b, c, p)
    check(k_closest_d, N, [Arr(a, wp.vec3d), Arr(b, wp.vec3d), Arr(c, wp.vec3d),
                           Arr(p, wp.vec3d)],
          [Arr(np.zeros((N, 2)), wp.vec2d), Arr(np.zeros(N), wp.float64)],
          _closest_reference, fwd_rtol=1e-9, fwd_atol=1e-12)
    return uv_ref


def test_closest_point_interior_gradients():
    uv = _check_closest("face", 0)
    assert np.all(uv > 0.01) and np.all(uv.sum(1) < 0.99)


def test_closest_point_edge_gradients():
    uv = _check_closest("edge", 1)
    assert np.allclose(uv.sum(1), 1.0)          # on edge ab: w = 0


def test_closest_point_vertex_gradients():
    """At a vertex (u, v) is constant and the distance is |a - p|: the uv rows of the
    Jacobian vanish, which the finite differences confirm."""
    uv = _check_closest("vertex", 2)
    assert np.allclose(uv, [[1.0, 0.0]] * N)


def _ray_reference(o, d, a, b, c):
    out = np.zeros((len(o), 3))
    for i in range(len(o)):
        M = np.stack([-d[i], a[i] - c[i], b[i] - c[i]], 1)
        t, u, v = np.linalg.solve(M, o[i] - c[i])
        out[i] = t, u, v
    return out


def test_ray_triangle_gradients():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(N, 3))
    b = a + rng.normal(size=(N, 3))
    c = a + rng.normal(size=(N, 3))
    w = rng.dirichlet([4, 4, 4], N)
    hit = w[:, :1] * a + w[:, 1:2] * b + w[:, 2:] * c
    o = hit + rng.normal(size=(N, 3)) * 2
    d = (hit - o) * rng.uniform(0.5, 2.0, (N, 1))
    out = check(k_ray_d, N, [Arr(o, wp.vec3d), Arr(d, wp.vec3d), Arr(a, wp.vec3d),
                             Arr(b, wp.vec3d), Arr(c, wp.vec3d)],
                [Arr(np.zeros((N, 3)), wp.vec3d)], _ray_reference, fwd_rtol=1e-9)
    np.testing.assert_allclose(out[0][:, 1:], w[:, :2], rtol=1e-9)


@wp.kernel
def k_f32(a: wp.array(dtype=wp.vec3f), b: wp.array(dtype=wp.vec3f), c: wp.array(dtype=wp.vec3f),
          p: wp.array(dtype=wp.vec3f), d: wp.array(dtype=wp.vec3f), uv: wp.array(dtype=wp.vec2f),
          dist: wp.array(dtype=wp.float32), ray: wp.array(dtype=wp.vec3f)):
    i = wp.tid()
    r = triangle_closest_point_f(a[i], b[i], c[i], p[i])
    uv[i] = r
    dist[i] = triangle_distance_f(a[i], b[i], c[i], p[i], r)
    ray[i] = ray_triangle_f(p[i], d[i], a[i], b[i], c[i])


def test_float32_values_match_the_cores():
    """In float32 the closest point's (u, v) equal the core's (Warp's) bit for bit, and the
    ray's (t, u, v) agree with the watertight core to rounding."""
    rng = np.random.default_rng(4)
    n = 64
    a, b, c = (rng.uniform(-1, 1, (n, 3)).astype(np.float32) for _ in range(3))
    p = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    w = rng.dirichlet([2, 2, 2], n).astype(np.float32)
    d = (w[:, :1] * a + w[:, 1:2] * b + w[:, 2:] * c - p).astype(np.float32)
    uv = wp.zeros(n, dtype=wp.vec2f)
    dist = wp.zeros(n, dtype=wp.float32)
    ray = wp.zeros(n, dtype=wp.vec3f)
    wp.launch(k_f32, n, inputs=[wp.array(x, dtype=wp.vec3f) for x in (a, b, c, p, d)],
              outputs=[uv, dist, ray])
    want = np.array([G.triangle_closest_point(*a[i], *b[i], *c[i], *p[i]) for i in range(n)],
                    np.float32)
    np.testing.assert_array_equal(uv.numpy(), want)
    dd = np.array([np.sqrt(G.bary_dist_sq(*a[i], *b[i], *c[i], *p[i], *want[i]))
                   for i in range(n)], np.float32)
    np.testing.assert_allclose(dist.numpy(), dd, rtol=2e-6, atol=1e-7)
    core = np.array([G.ray_triangle(*p[i], *d[i], *a[i], *b[i], *c[i]) for i in range(n)],
                    np.float64)
    assert core[:, 0].all()                 # every ray aims inside its triangle
    np.testing.assert_allclose(ray.numpy(), core[:, 1:4], rtol=1e-4, atol=1e-5)
