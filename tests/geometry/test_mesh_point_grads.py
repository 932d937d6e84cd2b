"""Gradients with respect to a mesh's own points (and velocities): through
``mesh_eval_position``, a closest point's distance, a ray's ``t``/``u``/``v`` and
``mesh_get_point``, reverse mode (``mesh.points.grad``) and forward mode (``wp.jvp`` and
``tape.forward`` with a tangent of ``mesh.points``), against central finite differences that
move one vertex, refit and query again."""
import numpy as np
import pytest

import weft as wp

from . import mesh_scenes as scenes


@wp.kernel
def surface_loss(mid: wp.uint64, p: wp.array(dtype=wp.vec3), o: wp.array(dtype=wp.vec3),
                 d: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    q = wp.mesh_query_point_no_sign(mid, p[i], 1.0e6)
    if q.result:
        s += wp.length(p[i] - wp.mesh_eval_position(mid, q.face, q.u, q.v))
    r = wp.mesh_query_ray(mid, o[i], d[i], 1.0e6)
    if r.result:
        s += r.t + 0.5 * r.u - 0.3 * r.v
    out[i] = s


P = np.array([[1.3, 0.2, 0.5], [0.1, 1.6, -0.2], [-1.1, -0.4, 0.45]], np.float32)
ORIGINS = np.array([[-2.0, 0.1, 0.05], [0.05, -2.0, 0.1], [0.02, 0.03, 2.0]], np.float32)
D = np.array([[1.0, 0.05, 0.02], [0.02, 1.0, -0.03], [0.4, 0.5, -1.0]], np.float32)


def _setup():
    pts, idx = scenes.torus(10, 6, noise=0.05, seed=3)
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(idx, dtype=wp.int32))
    ins = [wp.array(x, dtype=wp.vec3) for x in (P, ORIGINS, D)]
    return mesh, points, ins


def _value(mesh, ins):
    mesh.refit()
    out = wp.zeros(len(P), dtype=float)
    wp.launch(surface_loss, len(P), inputs=[mesh.id, *ins, out])
    return out.numpy().astype(np.float64).sum()


def _fd_gradient(mesh, points, ins, eps=1e-3):
    base = points.numpy().copy()
    data = points._data
    fd = np.zeros(base.shape)
    for j in range(base.shape[0]):
        for c in range(3):
            data[j, c] = base[j, c] + eps
            hi = _value(mesh, ins)
            data[j, c] = base[j, c] - eps
            lo = _value(mesh, ins)
            data[j, c] = base[j, c]
            fd[j, c] = (hi - lo) / (2 * eps)
    mesh.refit()
    return fd


def test_reverse_and_forward_mode_reach_the_mesh_points():
    mesh, points, ins = _setup()
    out = wp.zeros(len(P), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(surface_loss, len(P), inputs=[mesh.id, *ins, out])
    tape.backward(grads={out: np.ones(len(P), np.float32)})
    g = points.grad.numpy().astype(np.float64)
    fd = _fd_gradient(mesh, points, ins)
    # the faces hit / closest: 3 queries x 2 kinds reach at most 18 vertices, at least 3
    touched = np.nonzero(np.abs(fd).sum(1) > 1e-3)[0]
    assert 3 <= len(touched) <= 18
    np.testing.assert_allclose(g, fd, atol=2e-3)
    assert np.abs(g).max() > 0.3

    # forward mode along a random direction of the points: <grad, dp>
    dp = np.random.default_rng(0).normal(size=g.shape).astype(np.float32)
    t = wp.jvp(surface_loss, len(P), inputs=[mesh.id, *ins], outputs=[out],
               tangents={mesh.points: dp})
    np.testing.assert_allclose(t[out].numpy().astype(np.float64).sum(), (fd * dp).sum(),
                               rtol=1e-3, atol=1e-3)
    tf = tape.forward(tangents={points: dp})
    np.testing.assert_allclose(tf[out].numpy().astype(np.float64).sum(), (fd * dp).sum(),
                               rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="tangent of the mesh's points has 3 vec3 elements"):
        wp.jvp(surface_loss, len(P), inputs=[mesh.id, *ins], outputs=[out],
               tangents={mesh.points: np.zeros((3, 3), np.float32)})


@wp.func
def corner(mid: wp.uint64, i: int):
    return wp.mesh_get_point(mid, i)  # no differentiable argument: the func's adjoint still runs


@wp.kernel
def corners_and_velocity(mid: wp.uint64, w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    a = corner(mid, 3 * i) * w[0]
    b = wp.mesh_get_point(mid, 3 * i + 1)
    v = wp.mesh_eval_velocity(mid, i, 0.2, 0.3)
    gv = wp.mesh_get_velocity(mid, 3 * i + 2)
    out[i] = wp.dot(a, b) + wp.length(v) + 2.0 * gv[1]


def test_mesh_get_point_and_velocities_are_differentiable():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    idx = np.array([0, 1, 2, 0, 3, 1], np.int32)
    vel = np.array([[1, 2, 0], [0.5, -1, 2], [0, 1, 1], [3, 0, 1]], np.float32)
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    velocities = wp.array(vel, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(idx, dtype=wp.int32),
                   velocities=velocities)
    w = wp.array([1.5], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(corners_and_velocity, 2, inputs=[mesh.id, w, out])
    tape.backward(grads={out: np.ones(2, np.float32)})

    def loss(p, v, wv):  # the kernel in numpy, float64
        total = 0.0
        for f in range(2):
            i, j, k = idx[3 * f: 3 * f + 3]
            ve = v[i] * 0.2 + v[j] * 0.3 + v[k] * 0.5
            total += np.dot(p[i] * wv, p[j]) + np.linalg.norm(ve) + 2.0 * v[k][1]
        return total

    def fd(x, f, eps=1e-6):
        x = x.astype(np.float64)
        g = np.zeros_like(x)
        for e in np.ndindex(x.shape):
            hi, lo = x.copy(), x.copy()
            hi[e] += eps
            lo[e] -= eps
            g[e] = (f(hi) - f(lo)) / (2 * eps)
        return g

    np.testing.assert_allclose(points.grad.numpy(), fd(pts, lambda x: loss(x, vel, 1.5)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(velocities.grad.numpy(), fd(vel, lambda x: loss(pts, x, 1.5)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), fd(np.array([1.5]),
                                                  lambda x: loss(pts, vel, x[0])), rtol=1e-5)
    dv = np.random.default_rng(1).normal(size=vel.shape)
    t = wp.jvp(corners_and_velocity, 2, inputs=[mesh.id, w], outputs=[out],
               tangents={velocities: dv.astype(np.float32)})
    want = (fd(vel, lambda x: loss(pts, x, 1.5)) * dv).sum()
    np.testing.assert_allclose(t[out].numpy().sum(), want, rtol=1e-5)


def test_points_without_gradient_and_numpy_points():
    """A mesh built from numpy points, or from an array without requires_grad: the adjoint
    runs (the query point still gets its gradient) and nothing is written to the points."""
    pts, idx = scenes.torus(10, 6, noise=0.05, seed=3)
    mesh = wp.Mesh(points=pts, indices=idx)
    ins = [wp.array(x, dtype=wp.vec3, requires_grad=True) for x in (P, ORIGINS, D)]
    out = wp.zeros(len(P), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(surface_loss, len(P), inputs=[mesh.id, *ins, out])
    tape.backward(grads={out: np.ones(len(P), np.float32)})
    assert np.abs(ins[0].grad.numpy()).max() > 0.1
    np.testing.assert_array_equal(mesh.points.numpy(), pts)
    assert mesh.points.grad is None


@wp.kernel
def ray_values(mid: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
               out: wp.array(dtype=wp.vec4), face: wp.array(dtype=int)):
    i = wp.tid()
    r = wp.mesh_query_ray(mid, o[i], d[i], 1.0e6)
    face[i] = -1
    if r.result:
        out[i] = wp.vec4(r.t, r.u, r.v, r.sign)
        face[i] = r.face


def test_ray_results_are_the_watertight_cores_bit_for_bit():
    """The kernel's t, u, v are the query core's (Warp's values), not their differentiable
    recomputation, which only supplies the derivatives."""
    from weft.native.geometry.mesh import Mesh

    from .mesh_fixtures import python_cores
    pts, idx = scenes.torus(12, 8, noise=0.1, seed=5)
    o, d = scenes.rays(64, seed=9)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=wp.int32))
    out = wp.zeros(64, dtype=wp.vec4)
    face = wp.zeros(64, dtype=int)
    wp.launch(ray_values, 64, inputs=[mesh.id, wp.array(o, dtype=wp.vec3),
                                      wp.array(d, dtype=wp.vec3), out, face])
    core = python_cores()["mesh_query_ray"]
    b, links, prims, tris = Mesh(pts, idx).arrays()[:4]
    got, faces = out.numpy(), face.numpy()
    hits = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(64):
            hit, t, u, v, sign, nx, ny, nz, f = core(b, links, prims, tris, *o[k], *d[k],
                                                     np.float32(1e6))
            assert bool(hit) == (faces[k] >= 0)
            if hit:
                hits += 1
                assert faces[k] == f
                assert got[k].tolist() == [np.float32(t), np.float32(u), np.float32(v),
                                           np.float32(sign)]
    assert hits >= 10


@wp.kernel
def faces_by_index(mid: wp.uint64, face: wp.array(dtype=int), p: wp.array(dtype=wp.vec3),
                   out: wp.array(dtype=float)):
    i = wp.tid()
    a = wp.mesh_eval_position(mid, face[i], 0.2, 0.3)
    b = wp.mesh_get_point(mid, face[i] * 3 + 2)
    out[i] = wp.dot(a, p[i]) + wp.length(b - p[i])


def test_bad_input_in_differentiated_kernels_is_defined():
    """An empty mesh, NaN query points, degenerate faces and face indices out of range in a
    kernel and its adjoint/tangent: queries find nothing, reads out of range are zeros and
    their gradients go nowhere; no crash, no write outside the points' gradient."""
    # empty mesh: nothing found, zero loss, zero gradients
    empty = wp.Mesh(points=wp.array(np.zeros((0, 3), np.float32), dtype=wp.vec3,
                                    requires_grad=True),
                    indices=wp.array(np.zeros(0, np.int32), dtype=wp.int32))
    ins = [wp.array(x, dtype=wp.vec3, requires_grad=True) for x in (P, ORIGINS, D)]
    out = wp.zeros(len(P), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(surface_loss, len(P), inputs=[empty.id, *ins, out])
    tape.backward(grads={out: np.ones(len(P), np.float32)})
    assert out.numpy().tolist() == [0.0] * len(P)
    assert all(not a.grad.numpy().any() for a in ins)

    # NaN query points and rays find nothing (as in Warp): zero contributions
    mesh, points, _ = _setup()
    nan = [wp.array(np.full((len(P), 3), np.nan, np.float32), dtype=wp.vec3,
                    requires_grad=True) for _ in range(3)]
    out = wp.zeros(len(P), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(surface_loss, len(P), inputs=[mesh.id, *nan, out])
    tape.backward(grads={out: np.ones(len(P), np.float32)})
    assert out.numpy().tolist() == [0.0] * len(P) and not points.grad.numpy().any()

    # degenerate faces (collinear, a point, a sliver, a repeated vertex) and faces out of
    # range: values as the forward's reads (zeros out of range), gradients only into valid
    # vertices, and exactly the analytic ones
    pts, idx = scenes.degenerate()
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(idx, dtype=wp.int32))
    faces = np.array([12, 13, 14, 15, -1, 16, 1000], np.int64)
    p = np.random.default_rng(2).normal(size=(len(faces), 3)).astype(np.float32)
    pa = wp.array(p, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(len(faces), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(faces_by_index, len(faces), inputs=[mesh.id, wp.array(faces, dtype=int), pa,
                                                      out])
    tape.backward(grads={out: np.ones(len(faces), np.float32)})
    want_g = np.zeros(pts.shape)
    want = np.zeros(len(faces))
    tri = idx.reshape(-1, 3)
    for k, f in enumerate(faces):
        valid = 0 <= f < len(tri)
        a = pts[tri[f]].T @ [0.2, 0.3, 0.5] if valid else np.zeros(3)
        b = pts[tri[f][2]] if valid else np.zeros(3)
        want[k] = a @ p[k] + np.linalg.norm(b - p[k])
        if valid:
            for w, v in zip((0.2, 0.3, 0.5), tri[f]):
                want_g[v] += w * p[k]
            want_g[tri[f][2]] += (b - p[k]) / np.linalg.norm(b - p[k])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(points.grad.numpy(), want_g, rtol=1e-5, atol=1e-6)
    t = wp.jvp(faces_by_index, len(faces), inputs=[mesh.id, wp.array(faces, dtype=int), pa],
               outputs=[out], tangents={points: np.ones(pts.shape, np.float32)})
    np.testing.assert_allclose(t[out].numpy(), _row_tangents(pts, tri, faces, p), rtol=1e-5,
                               atol=1e-6)


def _row_tangents(pts, tri, faces, p):
    """d out[k] / d points along all-ones (numpy, the kernel's formula)."""
    rows = []
    for k, f in enumerate(faces):
        if not 0 <= f < len(tri):
            rows.append(0.0)
            continue
        b = pts[tri[f][2]]
        rows.append(float(np.sum(p[k]) * (0.2 + 0.3 + 0.5) +
                          np.sum((b - p[k]) / np.linalg.norm(b - p[k]))))
    return rows


@wp.kernel
def deform(rest: wp.array(dtype=wp.vec3), s: wp.array(dtype=float),
           out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = rest[i]
    out[i] = wp.vec3(p[0] * (1.0 + s[0]), p[1], p[2] + s[1] * p[0] * p[1])


def test_gradients_flow_from_queries_through_a_kernel_that_moved_the_points():
    """The usual pipeline: a kernel computes the mesh's points from parameters, the mesh is
    refitted, a second kernel queries it: tape.backward reaches the parameters, and
    tape.forward carries their tangents through the points."""
    rest, idx = scenes.torus(10, 6, noise=0.05, seed=3)
    rest_a = wp.array(rest, dtype=wp.vec3)
    ins = [wp.array(x, dtype=wp.vec3) for x in (P, ORIGINS, D)]

    def run(s_value):
        s = wp.array(np.array(s_value, np.float32), dtype=float, requires_grad=True)
        points = wp.zeros(len(rest), dtype=wp.vec3, requires_grad=True)
        out = wp.zeros(len(P), dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(deform, len(rest), inputs=[rest_a, s, points])
            mesh = wp.Mesh(points=points, indices=wp.array(idx, dtype=wp.int32))
            wp.launch(surface_loss, len(P), inputs=[mesh.id, *ins, out])
        return tape, s, out, mesh

    s0 = [0.1, 0.2]
    tape, s, out, mesh = run(s0)
    tape.backward(grads={out: np.ones(len(P), np.float32)})
    fd = np.zeros(2)
    eps = 1e-3
    for k in range(2):
        vals = []
        for sign in (1, -1):
            sv = list(s0)
            sv[k] += sign * eps
            vals.append(run(sv)[2].numpy().astype(np.float64).sum())
        fd[k] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(s.grad.numpy(), fd, rtol=2e-2, atol=2e-3)
    assert np.abs(fd).max() > 0.05
    ds = np.array([0.7, -0.4], np.float32)
    tangents = tape.forward(tangents={s: ds})
    np.testing.assert_allclose(tangents[out].numpy().astype(np.float64).sum(), fd @ ds,
                               rtol=2e-2, atol=2e-3)


@wp.kernel
def normal_loss(mid: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                out: wp.array(dtype=float)):
    i = wp.tid()
    r = wp.mesh_query_ray(mid, o[i], d[i], 1.0e6)
    s = float(0.0)
    if r.result:
        s = wp.dot(r.normal, wp.vec3(0.3, -0.5, 0.8)) + \
            wp.mesh_eval_face_normal(mid, (r.face + 3) % 120)[1]
    out[i] = s


def test_face_normals_are_differentiable_in_the_points():
    """``MeshQueryRay.normal`` and ``mesh_eval_face_normal``: the core's values, the
    derivatives of normalize(cross(p1 - p0, p2 - p0)) with respect to the face's points."""
    pts, idx = scenes.torus(10, 6, noise=0.05, seed=3)
    points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points=points, indices=wp.array(idx, dtype=wp.int32))
    o, d = (wp.array(x, dtype=wp.vec3) for x in (ORIGINS, D))
    out = wp.zeros(len(P), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(normal_loss, len(P), inputs=[mesh.id, o, d, out])
    tape.backward(grads={out: np.ones(len(P), np.float32)})
    g = points.grad.numpy().astype(np.float64)

    def value():
        mesh.refit()
        y = wp.zeros(len(P), dtype=float)
        wp.launch(normal_loss, len(P), inputs=[mesh.id, o, d, y])
        return y.numpy().astype(np.float64).sum()

    base = pts.copy()
    fd = np.zeros(base.shape)
    for j in range(base.shape[0]):
        for c in range(3):
            values = []
            for sign in (1, -1):
                points._data[j, c] = base[j, c] + sign * 1e-3
                values.append(value())
            points._data[j, c] = base[j, c]
            fd[j, c] = (values[0] - values[1]) / 2e-3
    mesh.refit()
    np.testing.assert_allclose(g, fd, atol=3e-3)
    assert np.abs(g).max() > 0.1 and (np.abs(fd).sum(1) > 1e-3).sum() >= 6
    dp = np.random.default_rng(5).normal(size=g.shape).astype(np.float32)
    t = wp.jvp(normal_loss, len(P), inputs=[mesh.id, o, d], outputs=[out],
               tangents={points: dp})
    np.testing.assert_allclose(t[out].numpy().astype(np.float64).sum(), (fd * dp).sum(),
                               rtol=1e-2, atol=3e-3)
