"""Matrix builtins written in the kernel language: values against numpy, gradients against FD."""
import numpy as np

import weft as wp


@wp.kernel
def mats(a: wp.array(dtype=wp.mat33d), b: wp.array(dtype=wp.mat22d), v: wp.array(dtype=wp.vec3d),
         out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    m = a[i]
    inv = wp.inverse(m)
    inv2 = wp.inverse(b[i])
    out[i, 0] = wp.determinant(m) + wp.determinant(b[i])
    out[i, 1] = wp.trace(inv) + wp.trace(inv2)
    out[i, 2] = wp.ddot(m, wp.diag(v[i])) + wp.dot(wp.get_diag(m), v[i])
    out[i, 3] = wp.length(wp.skew(v[i]) * wp.cw_div(v[i], wp.get_diag(m)))


def _ref(a, b, v):
    out = []
    for m, n, x in zip(a, b, v):
        s = np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])
        out.append([np.linalg.det(m) + np.linalg.det(n),
                    np.trace(np.linalg.inv(m)) + np.trace(np.linalg.inv(n)),
                    np.sum(m * np.diag(x)) + np.diag(m) @ x,
                    np.linalg.norm(s @ (x / np.diag(m)))])
    return np.array(out)


def _launch(a, b, v, grad=False):
    arrs = [wp.array(a, dtype=wp.mat33d, requires_grad=grad),
            wp.array(b, dtype=wp.mat22d, requires_grad=grad),
            wp.array(v, dtype=wp.vec3d, requires_grad=grad)]
    out = wp.zeros((len(a), 4), dtype=wp.float64, requires_grad=grad)
    tape = wp.Tape()
    with tape:
        wp.launch(mats, len(a), inputs=arrs, outputs=[out])
    return arrs, out, tape


def test_values_and_gradients():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2, 2)) + 2 * np.eye(2)
    v = rng.standard_normal((3, 3))
    arrs, out, tape = _launch(a, b, v, grad=True)
    np.testing.assert_allclose(out.numpy(), _ref(a, b, v), rtol=1e-12)
    seed = rng.standard_normal((3, 4))
    tape.backward(grads={out: seed})
    h = 1e-6
    for k, base in enumerate((a, b, v)):
        fd = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            p, m = [a.copy(), b.copy(), v.copy()], [a.copy(), b.copy(), v.copy()]
            p[k][idx] += h
            m[k][idx] -= h
            fd[idx] = ((_ref(*p) - _ref(*m)) / (2 * h) * seed).sum()
        np.testing.assert_allclose(arrs[k].grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@wp.kernel
def spatial(a: wp.array(dtype=wp.spatial_vectord), b: wp.array(dtype=wp.spatial_vectord),
            out: wp.array2d(dtype=wp.float64), slot: wp.array(dtype=int)):
    i = wp.tid()
    c = wp.spatial_cross(a[i], b[i])
    d = wp.spatial_cross_dual(a[i], b[i])
    m = wp.matrix_from_rows(wp.spatial_top(c), wp.spatial_bottom(c), wp.spatial_top(d))
    n = wp.matrix_from_cols(wp.spatial_top(c), wp.spatial_bottom(c), wp.spatial_top(d))
    out[i, 0] = wp.spatial_dot(a[i], b[i])
    out[i, 1] = wp.determinant(m) - wp.determinant(n)
    out[i, 2] = m[1, 2] + d[5]
    wp.atomic_exch(slot, 0, i + 1)


def test_spatial_algebra_and_matrix_from_rows_cols():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    out = wp.zeros((5, 3), dtype=wp.float64)
    slot = wp.zeros(1, dtype=int)
    wp.launch(spatial, 5, inputs=[wp.array(a, dtype=wp.spatial_vectord),
                                  wp.array(b, dtype=wp.spatial_vectord)], outputs=[out, slot])
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    c_bottom = np.cross(wa, vb) + np.cross(va, wb)
    d_bottom = np.cross(wa, vb)
    np.testing.assert_allclose(out.numpy()[:, 0], (a * b).sum(1))
    np.testing.assert_allclose(out.numpy()[:, 1], 0.0, atol=1e-12)  # det(M) == det(M^T)
    np.testing.assert_allclose(out.numpy()[:, 2], c_bottom[:, 2] + d_bottom[:, 2])
    assert 1 <= slot.numpy()[0] <= 5  # some thread's value, whole


@wp.kernel
def args(v: wp.array(dtype=wp.vec4), out: wp.array2d(dtype=int)):
    i = wp.tid()
    out[i, 0] = int(wp.argmin(v[i]))
    out[i, 1] = int(wp.argmax(v[i]))


def test_argmin_argmax_first_extreme():
    data = np.array([[3, 1, 1, 5], [2, 2, 9, 9], [-1, 0, -4, 7]], np.float32)
    out = wp.zeros((3, 2), dtype=int)
    wp.launch(args, 3, inputs=[wp.array(data, dtype=wp.vec4)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.stack([data.argmin(1), data.argmax(1)], 1))


@wp.kernel
def adjoint6(r: wp.array(dtype=wp.mat33d), s: wp.array(dtype=wp.mat33d),
             out: wp.array(dtype=wp.spatial_matrixd)):
    i = wp.tid()
    out[i] = wp.spatial_adjoint(r[i], s[i])


def test_spatial_adjoint_blocks_and_gradients():
    from tests.gradcheck import Arr, check, forward
    rng = np.random.default_rng(3)
    r, s = rng.standard_normal((2, 3, 3, 3))

    def blocks(r, s):  # Warp's layout: [[r, 0], [s, r]]
        z = np.zeros_like(r)
        return np.concatenate([np.concatenate([r, z], 2), np.concatenate([s, r], 2)], 1)

    out = [Arr(np.zeros((3, 6, 6)), wp.spatial_matrixd)]
    check(adjoint6, 3, [Arr(r, wp.mat33d), Arr(s, wp.mat33d)], out, blocks, fwd_rtol=0,
          fwd_atol=0)
    # with r = R, s = skew(p) R: the twist (w, v) goes to (R w, p x R w + R v)
    q, _ = np.linalg.qr(r[0])
    p, w, v = rng.standard_normal((3, 3))
    skew = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    m = forward(adjoint6, 3, [Arr(np.array([q] * 3), wp.mat33d),
                              Arr(np.array([skew @ q] * 3), wp.mat33d)], out)[0][0]
    np.testing.assert_allclose(m @ np.r_[w, v], np.r_[q @ w, np.cross(p, q @ w) + q @ v],
                               rtol=1e-12)


mat23d = wp.types.matrix((2, 3), wp.float64)


@wp.kernel
def cw_div_matrices(a: wp.array(dtype=mat23d), b: wp.array(dtype=mat23d),
                    out: wp.array(dtype=mat23d)):
    i = wp.tid()
    out[i] = wp.cw_div(a[i], b[i])


def test_cw_div_of_matrices_values_and_gradients():
    from tests.gradcheck import Arr, check
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (3, 2, 3))
    b = rng.uniform(0.5, 2, (3, 2, 3))
    check(cw_div_matrices, 3, [Arr(a, mat23d), Arr(b, mat23d)],
          [Arr(np.zeros((3, 2, 3)), mat23d)], lambda a, b: a / b, fd="kernel")
    # integer matrices divide as C (toward zero), as Warp's
    m22i = wp.types.matrix((2, 2), wp.int32)

    @wp.kernel
    def k(out: wp.array(dtype=m22i)):
        out[0] = wp.cw_div(m22i(7, -7, 9, 1), m22i(2, 2, 4, 1))

    out = wp.zeros(1, dtype=m22i)
    wp.launch(k, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy()[0], [[3, -3], [2, 1]])


@wp.kernel
def points_through_mat44(m: wp.array(dtype=wp.mat44d), p: wp.array(dtype=wp.vec3d),
                         out: wp.array(dtype=wp.vec3d), out_v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = wp.transform_point(m[i], p[i])
    out_v[i] = wp.transform_vector(m[i], p[i])


def test_transform_point_and_vector_of_4x4_matrices():
    from tests.gradcheck import Arr, check
    rng = np.random.default_rng(9)
    m = rng.uniform(-1, 1, (3, 4, 4))
    p = rng.uniform(-1, 1, (3, 3))

    def ref(m, p):
        ph = np.concatenate([p, np.ones((3, 1))], axis=1)
        pv = np.concatenate([p, np.zeros((3, 1))], axis=1)
        return np.einsum("nij,nj->ni", m, ph)[:, :3], np.einsum("nij,nj->ni", m, pv)[:, :3]

    check(points_through_mat44, 3, [Arr(m, wp.mat44d), Arr(p, wp.vec3d)],
          [Arr(np.zeros((3, 3)), wp.vec3d), Arr(np.zeros((3, 3)), wp.vec3d)], ref, fd="kernel")
