"""Warp's norm, Euler-angle, swing-twist and transform helpers (weft/stdlib/spatial.py) and the
operator builtins Warp exposes by name (floordiv, bit ops, invert, unot): values against numpy
and scipy, Warp 1.19's own outputs where a convention is Warp's; derivatives are checked by the
registry walk (test_kernel_language_registry)."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import weft as wp

Q0 = np.array([0.21424428, 0.5093606, 0.20485385, -0.8078899], np.float32)
V0 = np.array([-2.7111626, -1.8890133, -0.1747721], np.float32)
# Warp 1.19: quat_to_rpy(Q0), then quat_to_euler(Q0, i, j, k) for the sequences in SEQS
WARP_EULER = np.array([
    [-0.33947942, -1.1451986, -0.27658883], [2.4999866, 1.1623616, 3.2647524],
    [5.943706, -1.1451986, -0.27658892], [4.0707827, 1.6939561, 1.1623615],
    [-0.59248114, 5.1236024, -0.112983584], [0.60188717, 3.3420563, 1.8160648],
    [-0.13791955, 5.1163187, -0.5877855], [-0.165272, 5.207675, -0.5814712],
    [3.3868613, 1.7712598, 0.60188717], [-0.58819544, 5.1993513, -0.1359365],
    [1.1709223, 4.0659065, 1.7206136], [5.3242025, -0.8260165, -0.9447253]], np.float32)
SEQS = [(0, 1, 0), (0, 1, 2), (0, 2, 0), (0, 2, 1), (1, 0, 1), (1, 0, 2), (1, 2, 0),
        (1, 2, 1), (2, 0, 1), (2, 0, 2), (2, 1, 0)]
TAIT_BRYAN = [s for s in SEQS if s[0] != s[2]] + [(2, 1, 0)]


@wp.kernel
def euler_all(q: wp.array(dtype=wp.quat), seq: wp.array(dtype=int), out: wp.array(dtype=wp.vec3),
              back: wp.array(dtype=wp.quat)):
    t = wp.tid()
    e = wp.quat_to_euler(q[0], seq[3 * t], seq[3 * t + 1], seq[3 * t + 2])
    out[t] = e
    back[t] = wp.quat_from_euler(e, seq[3 * t], seq[3 * t + 1], seq[3 * t + 2])


@wp.kernel
def misc(v: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), f: wp.array(dtype=float),
         vo: wp.array(dtype=wp.vec3), qo: wp.array(dtype=wp.quat)):
    x = v[0]
    f[0] = wp.norm_l1(x)
    f[1] = wp.norm_l2(x)
    f[2] = wp.norm_huber(x)
    f[3] = wp.norm_huber(x * 0.1, 0.5)
    f[4] = wp.norm_pseudo_huber(x, 2.0)
    f[5] = wp.quat_twist_angle(wp.normalize(x), q[0])
    f[6] = wp.quat_twist_angle_signed(wp.normalize(x), q[0])
    vo[0] = wp.quat_to_rpy(q[0])
    vo[1] = wp.smooth_normalize(x)
    vo[2] = wp.velocity_at_point(wp.spatial_vector(x, 2.0 * x), wp.vec3(0.5, -1.0, 2.0))
    qo[0] = wp.quat_twist(wp.normalize(x), q[0])


def _one(a, dtype):
    return wp.array(np.asarray(a, np.float32)[None], dtype=dtype)


def test_euler_angles_are_warps_and_invert_for_tait_bryan_sequences():
    seqs = wp.array(np.array(SEQS, np.int32).ravel(), dtype=int)
    out = wp.zeros(len(SEQS), dtype=wp.vec3)
    back = wp.zeros(len(SEQS), dtype=wp.quat)
    wp.launch(euler_all, len(SEQS), inputs=[_one(Q0, wp.quat), seqs, out, back])
    np.testing.assert_allclose(out.numpy(), WARP_EULER[1:], atol=2e-6)
    for s, q in zip(SEQS, back.numpy()):
        if s[0] != s[2]:  # Tait-Bryan: quat_from_euler inverts quat_to_euler
            assert min(np.abs(q - Q0).max(), np.abs(q + Q0).max()) < 1e-6, s


def test_quat_from_euler_is_scipys_extrinsic_rotation():
    e = np.array([0.3, -1.1, 2.0], np.float32)
    for s in [(0, 1, 2), (2, 0, 1), (1, 2, 0), (0, 2, 0)]:
        q = np.array(wp.quat_from_euler(wp.vec3(*e), *s), np.float64)
        axes = "".join("xyz"[a] for a in s)
        ref = Rotation.from_euler(axes, [e[s[0]], e[s[1]], e[s[2]] if s[0] != s[2] else
                                         e[s[0]]]).as_quat()
        assert min(np.abs(q - ref).max(), np.abs(q + ref).max()) < 1e-6, s


def test_norms_twist_and_rpy():
    f = wp.zeros(7, dtype=float)
    vo = wp.zeros(3, dtype=wp.vec3)
    qo = wp.zeros(1, dtype=wp.quat)
    wp.launch(misc, 1, inputs=[_one(V0, wp.vec3), _one(Q0, wp.quat), f, vo, qo])
    x = V0.astype(np.float64)
    n = np.linalg.norm(x)
    axis = x / n
    ph = 2.0 * np.sqrt(1.0 + n * n / 4.0)
    np.testing.assert_allclose(f.numpy(), [
        np.abs(x).sum(), n, n - 0.5, 0.5 * (0.1 * n) ** 2, ph,
        2 * np.arctan2(abs(axis @ Q0[:3]), Q0[3]), 2 * np.arctan2(axis @ Q0[:3], Q0[3])],
        rtol=2e-6)
    np.testing.assert_allclose(vo.numpy()[0], WARP_EULER[0], atol=2e-6)
    np.testing.assert_allclose(vo.numpy()[1], x / np.sqrt(1.0 + n * n), rtol=2e-6)
    np.testing.assert_allclose(vo.numpy()[2], 2 * x + np.cross(x, [0.5, -1.0, 2.0]), rtol=2e-6)
    tw = qo.numpy()[0].astype(np.float64)
    assert abs(np.linalg.norm(tw) - 1) < 1e-6 and np.linalg.norm(np.cross(tw[:3], axis)) < 1e-6
    # the swing q * twist^-1 rotates about an axis perpendicular to the twist axis
    swing = (Rotation.from_quat(Q0) * Rotation.from_quat(tw).inv()).as_quat()
    assert abs(swing[:3] @ axis) < 1e-6


@wp.kernel
def xforms(t: wp.array(dtype=wp.transform), s: wp.array(dtype=wp.vec3),
           m: wp.array(dtype=wp.mat44), parts: wp.array(dtype=wp.transform),
           scale: wp.array(dtype=wp.vec3), sv: wp.array(dtype=wp.spatial_vector)):
    x = t[0]
    m[0] = wp.transform_to_matrix(x)
    m[1] = wp.transform_compose(x.p, x.q, s[0])
    p, q, sc = wp.transform_decompose(m[1])
    parts[0] = wp.transform(p, q)
    parts[1] = wp.transform_from_matrix(m[0])
    scale[0] = sc
    a = wp.spatial_vector(s[0], 2.0 * s[0])
    sv[0] = wp.transform_twist(x, a)
    sv[1] = wp.transform_wrench(x, a)


def test_transform_matrices_compose_decompose_twist_and_wrench():
    p = np.array([1.0, -2.0, 0.5])
    t = wp.array(np.concatenate([p, Q0]).astype(np.float32)[None], dtype=wp.transform)
    s = np.array([1.5, 0.5, 2.0])
    m = wp.zeros(2, dtype=wp.mat44)
    parts = wp.zeros(2, dtype=wp.transform)
    scale = wp.zeros(1, dtype=wp.vec3)
    sv = wp.zeros(2, dtype=wp.spatial_vector)
    wp.launch(xforms, 1, inputs=[t, _one(s, wp.vec3), m, parts, scale, sv])
    r = Rotation.from_quat(Q0).as_matrix()
    ref = np.eye(4)
    ref[:3, :3], ref[:3, 3] = r, p
    np.testing.assert_allclose(m.numpy()[0], ref, atol=1e-6)
    ref[:3, :3] = r * s
    np.testing.assert_allclose(m.numpy()[1], ref, atol=1e-6)
    for got in parts.numpy():
        np.testing.assert_allclose(got[:3], p, atol=1e-6)
        assert min(np.abs(got[3:] - Q0).max(), np.abs(got[3:] + Q0).max()) < 1e-6
    np.testing.assert_allclose(scale.numpy()[0], s, rtol=1e-6)
    w, v = s, 2 * s
    np.testing.assert_allclose(sv.numpy()[0], np.concatenate([r @ w, r @ v + np.cross(p, r @ w)]),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sv.numpy()[1], np.concatenate([r @ w + np.cross(p, r @ v), r @ v]),
                               rtol=1e-5, atol=1e-6)


@wp.kernel
def operators(a: wp.array(dtype=int), f: wp.array(dtype=float)):
    a[0] = wp.floordiv(-7, 2)
    a[1] = wp.bit_and(6, 3)
    a[2] = wp.bit_or(6, 3)
    a[3] = wp.bit_xor(6, 3)
    a[4] = wp.lshift(3, 4)
    a[5] = wp.rshift(-64, 2)
    a[6] = wp.invert(5)
    if wp.unot(a[0] > 0):
        a[7] = 1
    f[0] = wp.floordiv(-7.5, 2.0)


def test_operator_builtins_by_name_in_kernels_and_at_python_scope():
    a = wp.zeros(8, dtype=int)
    f = wp.zeros(1, dtype=float)
    wp.launch(operators, 1, inputs=[a, f])
    assert a.numpy().tolist() == [-4, 2, 7, 5, 48, -16, -6, 1]
    assert f.numpy()[0] == -4.0
    assert (wp.floordiv(7, 2), wp.bit_xor(6, 3), wp.lshift(1, 4), wp.invert(0)) == (3, 5, 16, -1)


def test_spatial_vector_from_two_vectors_and_python_scope_helpers():
    sv = wp.spatial_vector(wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0))
    assert list(sv) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    e = wp.quat_to_euler(wp.quat(*Q0), 0, 1, 2)
    np.testing.assert_allclose(np.array(e), WARP_EULER[2], atol=2e-6)
    with pytest.raises(Exception, match="quat_to_euler"):
        wp.quat_to_euler(wp.vec3(1.0, 2.0, 3.0), 0, 1, 2)


@wp.kernel
def searches(a: wp.array(dtype=float), q: wp.array(dtype=float), out: wp.array(dtype=int),
             ia: wp.array(dtype=wp.int64)):
    i = wp.tid()
    out[i] = wp.lower_bound(a, q[i])
    out[i + 6] = wp.lower_bound(a, 1, 4, q[i])
    out[i + 12] = wp.lower_bound(ia, wp.int64(i))


def test_lower_bound_is_warps_binary_search():
    a = wp.array(np.array([0.5, 1.0, 1.0, 2.0, 3.5], np.float32), dtype=float)
    q = wp.array(np.array([-1.0, 0.5, 0.9, 1.0, 2.5, 9.0], np.float32), dtype=float)
    ia = wp.array(np.array([0, 2, 2, 5], np.int64), dtype=wp.int64)
    out = wp.zeros(18, dtype=int)
    wp.launch(searches, 6, inputs=[a, q, out, ia])
    assert out.numpy().reshape(3, 6).tolist() == [  # Warp 1.19's output
        [0, 0, 1, 1, 4, 4], [1, 1, 1, 1, 3, 3], [0, 1, 1, 3, 3, 3]]


def test_lower_bound_misuse_is_located():
    @wp.kernel
    def bad(a: wp.array2d(dtype=float), out: wp.array(dtype=int)):
        out[0] = wp.lower_bound(a, 1.0)

    with pytest.raises(wp.KernelError, match="1-D array of scalars"):
        wp.launch(bad, 1, inputs=[wp.zeros((2, 2), dtype=float), wp.zeros(1, dtype=int)])


@wp.kernel
def edge_edge(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3],
                                        1e-6)


def test_closest_point_edge_edge_equals_warps():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(4 * 16, 3)).astype(np.float32)
    pts[13] = pts[12]  # segment 3: the first is a point
    pts[23] = pts[22]  # segment 5: the second is a point
    pts[29], pts[31] = pts[28], pts[30]  # segment 7: both are points
    pts[38] = pts[36] + 0.5 * (pts[37] - pts[36])  # segment 9: collinear, overlapping
    pts[39] = pts[38] + 2 * (pts[37] - pts[36])
    out = wp.zeros(16, dtype=wp.vec3)
    wp.launch(edge_edge, 16, inputs=[wp.array(pts, dtype=wp.vec3), out])
    warp = {0: [0.9207232594490051, 0.6406653523445129, 0.8782311677932739],  # Warp 1.19
            1: [1.0, 0.37634798884391785, 1.8129478693008423],
            3: [0.0, 0.5885868072509766, 1.7289294004440308],
            5: [0.9327390789985657, 0.0, 2.464545726776123],
            7: [0.0, 0.0, 1.702911376953125], 9: [0.5, 0.0, 0.0]}
    for k, v in warp.items():
        assert out.numpy()[k].tolist() == v, k  # bit for bit
