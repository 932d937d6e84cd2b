"""Corpus, part 3: vectors and matrices (float64), alone and carried through loops.

See ``test_corpus.py`` for what each check covers.
"""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check

rng = np.random.default_rng(777)


def arr(data, dtype, grad=True):
    return Arr(np.asarray(data, dtype=np.float64), dtype, grad)


def zeros(shape, dtype):
    return Arr(np.zeros(shape), dtype)


def normalize(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@wp.kernel
def k_vectors(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d),
              s: wp.array(dtype=wp.float64), out3: wp.array(dtype=wp.vec3d),
              out4: wp.array(dtype=wp.vec4d), out2: wp.array(dtype=wp.vec2d),
              out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    u = a[i]
    w = b[i]
    v = s[i] * wp.cross(u, w) + wp.normalize(u) * 2.0 - w
    v[1] = v[0] * u.z
    v.x = wp.length(w)
    q = wp.vec4d(u[0], u.y, w[2], wp.dot(u, w))
    p = wp.vec2d(q.w, q[1])
    p.y = p.y + wp.length_sq(p)
    out3[i] = v / s[i]
    out4[i] = q * s[i] + wp.vec4d(1.0, 2.0, 3.0, 4.0)
    out2[i] = -p
    out[i] = wp.length(v) + p[0] * v.z


def test_vector_operations():
    a, b = rng.uniform(-1, 1, (5, 3)), rng.uniform(-1, 1, (5, 3))
    s = rng.uniform(0.5, 1.5, 5)

    def ref(a, b, s):
        v = s[:, None] * np.cross(a, b) + 2 * normalize(a) - b
        v[:, 1] = v[:, 0] * a[:, 2]
        v[:, 0] = np.linalg.norm(b, axis=1)
        q = np.stack([a[:, 0], a[:, 1], b[:, 2], (a * b).sum(axis=1)], axis=1)
        p = np.stack([q[:, 3], q[:, 1]], axis=1)
        p[:, 1] = p[:, 1] + (p * p).sum(axis=1)
        return (v / s[:, None], q * s[:, None] + [1, 2, 3, 4], -p,
                np.linalg.norm(v, axis=1) + p[:, 0] * v[:, 2])

    check(k_vectors, 5, [arr(a, wp.vec3d), arr(b, wp.vec3d), arr(s, wp.float64)],
          [zeros((5, 3), wp.vec3d), zeros((5, 4), wp.vec4d), zeros((5, 2), wp.vec2d),
           zeros(5, wp.float64)], ref)


@wp.kernel
def k_matrices(m: wp.array(dtype=wp.mat33d), v: wp.array(dtype=wp.vec3d),
               out_m: wp.array(dtype=wp.mat33d), out_v: wp.array(dtype=wp.vec3d),
               out2: wp.array(dtype=wp.mat22d), out4: wp.array(dtype=wp.mat44d)):
    i = wp.tid()
    M = m[i]
    x = v[i]
    r = M[1]
    e = M[0, 2]
    N = M * wp.transpose(M) + wp.mat33d(1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0) * e
    N[2, 0] = r[2] * x.y
    y = N * x + r * M[2, 1]
    A = wp.mat22d(M[0, 0], M[0, 1], y[0], y[1])
    B = wp.mat44d(A[0, 0], A[0, 1], 0.0, x[0], A[1, 0], A[1, 1], 0.0, x[1],
                  0.0, 0.0, 1.0, x[2], 0.0, 0.0, 0.0, 1.0)
    out_m[i] = N
    out_v[i] = y
    out2[i] = A * A - wp.transpose(A) * 0.5
    out4[i] = B * wp.transpose(B)


def test_matrix_operations():
    m, v = rng.uniform(-1, 1, (4, 3, 3)), rng.uniform(-1, 1, (4, 3))

    def ref(m, v):
        r = m[:, 1, :]
        e = m[:, 0, 2]
        n = m @ m.transpose(0, 2, 1) + np.diag([1.0, 2.0, 3.0])[None] * e[:, None, None]
        n[:, 2, 0] = r[:, 2] * v[:, 1]
        y = np.einsum("nij,nj->ni", n, v) + r * m[:, 2, 1][:, None]
        a = np.stack([m[:, 0, :2], y[:, :2]], axis=1)
        b = np.zeros((4, 4, 4))
        b[:, :2, :2] = a
        b[:, 2, 2] = b[:, 3, 3] = 1
        b[:, :3, 3] = v
        return n, y, a @ a - 0.5 * a.transpose(0, 2, 1), b @ b.transpose(0, 2, 1)

    check(k_matrices, 4, [arr(m, wp.mat33d), arr(v, wp.vec3d)],
          [zeros((4, 3, 3), wp.mat33d), zeros((4, 3), wp.vec3d), zeros((4, 2, 2), wp.mat22d),
           zeros((4, 4, 4), wp.mat44d)], ref)


@wp.kernel
def k_carried(v: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat33d), n: int,
              out_v: wp.array(dtype=wp.vec3d), out_m: wp.array(dtype=wp.mat33d),
              out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = v[i]
    M = m[i]
    acc = wp.float64(0.0)
    for a in range(n):
        for b in range(a + 1):
            x = M * x * 0.5 + x
            acc = acc + wp.dot(x, x) * 0.01
        M = M * wp.transpose(M) * 0.3
        x[a % 3] = x[a % 3] * 0.9
    k = int(0)
    while wp.length(x) > 1.0:
        x = x * 0.75
        k += 1
    out_v[i] = x * acc
    out_m[i] = M
    out[i] = acc * wp.float64(k)


def test_vectors_and_matrices_carried_through_loops():
    v = rng.uniform(-1, 1, (4, 3)) * 2
    m = rng.uniform(-1, 1, (4, 3, 3))

    def ref(v, m, n):
        ov, om, oo = [], [], []
        for x, mm in zip(v, m):
            x, mm, acc = x.copy(), mm.copy(), 0.0
            for a in range(n):
                for _ in range(a + 1):
                    x = mm @ x * 0.5 + x
                    acc += x @ x * 0.01
                mm = mm @ mm.T * 0.3
                x[a % 3] *= 0.9
            k = 0
            while np.linalg.norm(x) > 1:
                x = x * 0.75
                k += 1
            ov.append(x * acc)
            om.append(mm)
            oo.append(acc * k)
        return np.array(ov), np.array(om), np.array(oo)

    check(k_carried, 4, [arr(v, wp.vec3d), arr(m, wp.mat33d), 3],
          [zeros((4, 3), wp.vec3d), zeros((4, 3, 3), wp.mat33d), zeros(4, wp.float64)], ref)


@wp.func
def rotate_z(p: wp.vec2d, angle: wp.float64):
    c = wp.cos(angle)
    s = wp.sin(angle)
    R = wp.mat22d(c, -s, s, c)
    return R * p, R


@wp.kernel
def k_vec_funcs(p: wp.array(dtype=wp.vec2d), ang: wp.array(dtype=wp.float64),
                out: wp.array(dtype=wp.vec2d), out_r: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    q, R = rotate_z(p[i], ang[i])
    for k in range(2):
        q, R2 = rotate_z(q, ang[i] * 0.5)
        R = R2 * R
    out[i] = q
    out_r[i] = R


def test_funcs_returning_a_vector_and_a_matrix_in_a_loop():
    p, ang = rng.uniform(-1, 1, (5, 2)), rng.uniform(-3, 3, 5)

    def ref(p, ang):
        t = 2 * ang  # one full turn plus two half turns
        c, s = np.cos(t), np.sin(t)
        r = np.stack([np.stack([c, -s], 1), np.stack([s, c], 1)], 1)
        return np.einsum("nij,nj->ni", r, p), r

    check(k_vec_funcs, 5, [arr(p, wp.vec2d), arr(ang, wp.float64)],
          [zeros((5, 2), wp.vec2d), zeros((5, 2, 2), wp.mat22d)], ref)


@wp.func
def twice_and_bucket(x: wp.float64):
    return x * 2.0, int(x * 3.0)


@wp.kernel
def k_rows_and_views(m: wp.array(dtype=wp.mat33d), v: wp.array(dtype=wp.vec3d),
                     a2: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.mat33d),
                     out_v: wp.array(dtype=wp.vec3d), out_s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    M = m[i]
    x = v[i]
    M[1] = x * 2.0
    y = x * M
    z = wp.vec3d()
    z[2] = wp.float64(len(x))
    s = wp.float64(0.0)
    for k in range(3):
        row = a2[k]
        s = s + row[i % 2] * M[k, (k + 1) % 3]
    h, c = twice_and_bucket(s)
    out[i] = M
    out_v[i] = y + z * wp.float64(c)
    out_s[i] = s + wp.float64(wp.float32(h)) * 0.5


def test_row_assignment_vector_times_matrix_and_views_in_a_loop():
    m, v, a2 = rng.uniform(-1, 1, (4, 3, 3)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (3, 2))

    def ref(m, v, a2):
        m = m.copy()
        m[:, 1, :] = v * 2
        y = np.einsum("ni,nij->nj", v, m)
        s = np.array([sum(a2[k, i % 2] * m[i, k, (k + 1) % 3] for k in range(3))
                      for i in range(4)])
        z = np.zeros((4, 3))
        z[:, 2] = 3
        return m, y + z * np.trunc(s * 3)[:, None], s + s  # h = 2 s, through float32

    # h passes through float32: the forward matches to float32 precision, and finite
    # differences of the kernel see that rounding, so differentiate the reference
    check(k_rows_and_views, 4, [arr(m, wp.mat33d), arr(v, wp.vec3d), arr(a2, wp.float64)],
          [zeros((4, 3, 3), wp.mat33d), zeros((4, 3), wp.vec3d), zeros(4, wp.float64)], ref,
          fd="reference", fwd_rtol=1e-7)
