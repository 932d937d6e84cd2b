"""Quaternion and transform builtins (kernel-language funcs differentiated by weft)."""
import numpy as np
import pytest

import weft as wp

pytest.importorskip("scipy")
from scipy.spatial.transform import Rotation as R  # noqa: E402


@wp.kernel
def compose(q: wp.array(dtype=wp.quatd), v: wp.array(dtype=wp.vec3d),
            t: wp.array(dtype=wp.transformd), out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    r = wp.quat_rotate(q[i], v[i])
    p = wp.transform_point(wp.transform_multiply(t[i], wp.transform_inverse(t[i])), r)
    m = wp.quat_to_matrix(q[i])
    out[i] = p + m * v[i] + wp.quat_rotate_inv(q[i] * q[i], v[i]) + \
        wp.transform_vector(t[i], wp.transform_get_translation(t[i]))


@wp.kernel
def axis_angle(axis: wp.array(dtype=wp.vec3d), angle: wp.array(dtype=wp.float64),
               out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    out[i] = wp.quat_from_axis_angle(wp.normalize(axis[i]), angle[i]) * wp.quat_inverse(
        quat_identity_d())


@wp.func
def quat_identity_d():
    return wp.quaternion(0.0, 0.0, 0.0, 1.0, dtype=wp.float64)



def _data(rng, n=3):
    qn = rng.standard_normal((n, 4))
    qn /= np.linalg.norm(qn, axis=1, keepdims=True)
    vn = rng.standard_normal((n, 3))
    tn = np.concatenate([rng.standard_normal((n, 3)), qn[::-1]], 1)
    return qn, vn, tn


def _reference(qn, vn, tn):
    out = []
    for q, v, t in zip(qn, vn, tn):
        rot = R.from_quat(q)
        tr = R.from_quat(t[3:])
        out.append(rot.apply(v) + rot.as_matrix() @ v + (rot * rot).inv().apply(v)
                   + tr.apply(t[:3]))
    return np.array(out)


def _launch(qn, vn, tn, grad=False):
    q = wp.array(qn, dtype=wp.quatd, requires_grad=grad)
    v = wp.array(vn, dtype=wp.vec3d, requires_grad=grad)
    t = wp.array(tn, dtype=wp.transformd, requires_grad=grad)
    out = wp.zeros(len(qn), dtype=wp.vec3d, requires_grad=grad)
    tape = wp.Tape()
    with tape:
        wp.launch(compose, len(qn), inputs=[q, v, t], outputs=[out])
    return q, v, t, out, tape


def test_values_match_scipy_rotations():
    qn, vn, tn = _data(np.random.default_rng(0))
    out = _launch(qn, vn, tn)[3]
    np.testing.assert_allclose(out.numpy(), _reference(qn, vn, tn), atol=1e-12)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    qn, vn, tn = _data(rng)
    seed = rng.standard_normal((3, 3))
    q, v, t, out, tape = _launch(qn, vn, tn, grad=True)
    tape.backward(grads={out: seed})

    def f(qn_, vn_, tn_):
        return float((_launch(qn_, vn_, tn_)[3].numpy() * seed).sum())

    h = 1e-6
    for arr, base, k in ((q, qn, 0), (v, vn, 1), (t, tn, 2)):
        fd = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            args_p = [qn.copy(), vn.copy(), tn.copy()]
            args_m = [qn.copy(), vn.copy(), tn.copy()]
            args_p[k][idx] += h
            args_m[k][idx] -= h
            fd[idx] = (f(*args_p) - f(*args_m)) / (2 * h)
        np.testing.assert_allclose(arr.grad.numpy(), fd, rtol=1e-6, atol=1e-7)
        tangent = wp.jvp(compose, 3, inputs=[q, v, t], outputs=[out],
                         tangents={arr: np.ones_like(base)})
        expected = np.einsum("ij,ij->", fd, np.ones_like(base))
        assert float((tangent[out].numpy() * seed).sum()) == pytest.approx(expected, rel=1e-6)


def test_axis_angle_and_generic_constructor_dtype():
    axis = wp.array(np.array([[0.0, 0.0, 2.0], [1.0, 1.0, 0.0]]), dtype=wp.vec3d)
    angle = wp.array(np.array([0.5, -1.2]), dtype=wp.float64)
    out = wp.zeros(2, dtype=wp.quatd)
    wp.launch(axis_angle, 2, inputs=[axis, angle], outputs=[out])
    ref = R.from_rotvec(np.array([[0, 0, 0.5], np.array([1, 1, 0]) / np.sqrt(2) * -1.2])).as_quat()
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)


@wp.kernel
def rpy_slerp(angles: wp.array(dtype=wp.vec3d), t: wp.array(dtype=wp.float64),
              out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    a = angles[i]
    q0 = wp.quat_rpy(a[0], a[1], a[2])
    q1 = wp.quat_rpy(a[2], a[0], a[1])
    out[i] = wp.quat_slerp(q0, q1, t[i])


def test_rpy_and_slerp_against_scipy():
    rng = np.random.default_rng(5)
    ang = rng.uniform(-1, 1, (4, 3))
    tt = rng.uniform(0, 1, 4)
    out = wp.zeros(4, dtype=wp.quatd)
    wp.launch(rpy_slerp, 4, inputs=[wp.array(ang, dtype=wp.vec3d),
                                    wp.array(tt, dtype=wp.float64)], outputs=[out])
    from scipy.spatial.transform import Slerp
    for i in range(4):
        r0 = R.from_euler("xyz", ang[i])       # Warp's rpy: roll about x, pitch y, yaw z
        r1 = R.from_euler("xyz", ang[i][[2, 0, 1]])
        expected = Slerp([0, 1], R.concatenate([r0, r1]))(tt[i])
        got = R.from_quat(out.numpy()[i])
        assert (got.inv() * expected).magnitude() < 1e-9


@wp.kernel
def from_matrix(m: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    out[i] = wp.quat_from_matrix(m[i])


def test_quat_from_matrix_all_branches():
    rots = R.from_rotvec(np.array([[0.1, 0.2, 0.3], [3.0, 0.1, 0.0], [0.1, 3.0, 0.2],
                                   [0.0, 0.2, 3.0], [2.5, -1.0, 1.0]]))  # trace >= 0 and < 0
    out = wp.zeros(5, dtype=wp.quatd)
    wp.launch(from_matrix, 5, inputs=[wp.array(rots.as_matrix(), dtype=wp.mat33d)],
              outputs=[out])
    for q, r in zip(out.numpy(), rots):
        assert (R.from_quat(q).inv() * r).magnitude() < 1e-9


@wp.kernel
def transform_members(xf: wp.array(dtype=wp.transformd), p: wp.array(dtype=wp.vec3d),
                      q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.transformd),
                      moved: wp.array(dtype=wp.vec3d), edited: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    t = xf[i]
    moved[i] = wp.quat_rotate(t.q, p[i]) + t.p * t.q.w   # reads of the parts
    t.p = p[i] * 2.0                                     # writes of the parts
    t.q = wp.normalize(q[i])
    out[i] = t
    s = xf[i]
    wp.transform_set_translation(s, t.p + s.p)           # Warp's in-place setters
    wp.transform_set_rotation(s, wp.quat_identity(wp.float64))
    edited[i] = s
    edited[i].p = edited[i].p * 3.0                      # a part of an array element


def test_transform_parts_read_written_and_set_in_place():
    from tests.gradcheck import Arr, check
    rng = np.random.default_rng(8)
    qs = R.random(3, random_state=9).as_quat()
    xf = np.concatenate([rng.normal(size=(3, 3)), qs], 1)
    p = rng.normal(size=(3, 3))
    q = R.random(3, random_state=10).as_quat() * 1.5

    def ref(xf, p, q):
        moved = R.from_quat(xf[:, 3:]).apply(p) + xf[:, :3] * xf[:, 6:7]
        out = np.concatenate([2 * p, q / np.linalg.norm(q, axis=1)[:, None]], 1)
        edited = np.concatenate([3 * (2 * p + xf[:, :3]), np.tile([0, 0, 0, 1.0], (3, 1))], 1)
        return out, moved, edited

    check(transform_members, 3, [Arr(xf, wp.transformd), Arr(p, wp.vec3d), Arr(q, wp.quatd)],
          [Arr(np.zeros((3, 7)), wp.transformd), Arr(np.zeros((3, 3)), wp.vec3d),
           Arr(np.zeros((3, 7)), wp.transformd)], ref)


@wp.kernel
def q2m_entries(q: wp.array(dtype=wp.quatd), out: wp.array(dtype=wp.float64)):
    m = wp.quat_to_matrix(q[0])
    for i in range(3):
        for j in range(3):
            out[i * 3 + j] = m[i, j]


def test_quat_to_matrix_is_warps_rotated_axes_off_the_unit_sphere():
    """Warp builds the matrix from quat_rotate of the axes: equal to the textbook form on unit
    quaternions, different off the sphere, so its gradients there are Warp's (Warp's own test
    compares them); checked against central differences of the rotated-axes formula."""
    rng = np.random.default_rng(123)
    qn = rng.standard_normal(4) * 1.3  # not a unit quaternion

    def axes(qv):
        x, y, z, w = qv
        u = np.array([x, y, z])
        cols = [e * (2 * w * w - 1) + np.cross(u, e) * 2 * w + u * 2 * (u @ e) for e in np.eye(3)]
        return np.stack(cols, 1).reshape(-1)

    q = wp.array(qn[None], dtype=wp.quatd, requires_grad=True)
    out = wp.zeros(9, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(q2m_entries, 1, inputs=[q], outputs=[out])
    np.testing.assert_allclose(out.numpy(), axes(qn), rtol=1e-12)
    for k in range(9):
        seed = np.zeros(9)
        seed[k] = 1.0
        tape.backward(grads={out: seed})
        fd = [(axes(qn + d)[k] - axes(qn - d)[k]) / 2e-6 for d in np.eye(4) * 1e-6]
        np.testing.assert_allclose(q.grad.numpy()[0], fd, rtol=1e-6, atol=1e-8)
        tape.zero()


@wp.kernel
def rotated(q: wp.array(dtype=wp.quat), x: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    r = wp.quat_rotate(q[i], x[i])
    s = wp.quat_rotate_inv(q[i], x[i])
    n = wp.normalize(x[i])
    for c in range(3):
        out[i, c] = r[c]
        out[i, 3 + c] = s[c]
        out[i, 6 + c] = n[c]


def test_rotation_and_normalize_round_as_warp():
    # float32 results Warp 1.19 gives on the CPU, bit for bit (summing quat_rotate's terms in
    # another order, or normalizing as v * (1 / |v|), rounds differently; Warp's raymarch
    # example renders the same image as weft only with these)
    q = [[-0.4977248013019562, -0.16944222152233124, -0.7039692401885986, -0.4774795174598694],
         [0.6634394526481628, 0.023441921919584274, -0.5833356976509094, -0.4679935574531555],
         [0.08259837329387665, -0.8425902724266052, -0.1930174082517624, 0.4959470331668854]]
    x = [[-0.9349349737167358, -0.25071942806243896, -1.758649468421936],
         [-1.9917274713516235, 0.13192936778068542, -1.2950143814086914],
         [0.08761143684387207, -0.11816328018903732, -1.3675843477249146]]
    want = [[-1.345302700996399, -0.24786898493766785, -1.4691948890686035, -1.1132653951644897,
             -0.6626230478286743, -1.5334219932556152, -0.46573516726493835,
             -0.12489515542984009, -0.8760661482810974],
            [0.3288007378578186, -1.9921678304672241, 1.2588101625442505, 0.41603749990463257,
             1.7911096811294556, 1.5100611448287964, -0.8370785713195801, 0.055446967482566833,
             -0.544265627861023],
            [1.1370863914489746, -0.4695031940937042, 0.6152448654174805, -1.1036133766174316,
             -0.6600455045700073, 0.4881625175476074, 0.0636955052614212, -0.08590739220380783,
             -0.9942649006843567]]
    out = wp.zeros((3, 9), dtype=float)
    wp.launch(rotated, 3, inputs=[wp.array(np.array(q, dtype=np.float32), dtype=wp.quat),
                                  wp.array(np.array(x, dtype=np.float32), dtype=wp.vec3)],
              outputs=[out])
    np.testing.assert_array_equal(out.numpy(), np.array(want, dtype=np.float32))
    out = wp.full((1, 9), 5.0, dtype=float)  # the zero vector normalizes to zero
    wp.launch(rotated, 1, inputs=[wp.array(np.array(q[:1], dtype=np.float32), dtype=wp.quat),
                                  wp.zeros(1, dtype=wp.vec3)], outputs=[out])
    np.testing.assert_array_equal(out.numpy()[0, 6:], [0.0, 0.0, 0.0])
