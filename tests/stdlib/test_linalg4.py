"""4x4 determinant and inverse, quat_to_axis_angle (an output-argument builtin) and
quat_between_vectors, against numpy/scipy and float64 finite differences."""
import numpy as np
from scipy.spatial.transform import Rotation

import weft as wp
from tests.gradcheck import Arr, check


@wp.kernel
def det_inv4(m: wp.array(dtype=wp.mat44d), det: wp.array(dtype=wp.float64),
             inv: wp.array(dtype=wp.mat44d)):
    i = wp.tid()
    det[i] = wp.determinant(m[i])
    inv[i] = wp.inverse(m[i])


def test_determinant_and_inverse_4x4():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 4, 4)) + 2.0 * np.eye(4)
    check(det_inv4, 3, [Arr(m, wp.mat44d)],
          [Arr(np.zeros(3), wp.float64), Arr(np.zeros((3, 4, 4)), wp.mat44d)],
          lambda m: (np.linalg.det(m), np.linalg.inv(m)), fwd_rtol=1e-11, rtol=1e-5)
    singular = np.ones((1, 4, 4))
    d = wp.zeros(1, dtype=wp.float64)
    inv = wp.zeros(1, dtype=wp.mat44d)
    wp.launch(det_inv4, 1, inputs=[wp.array(singular, dtype=wp.mat44d)], outputs=[d, inv])
    assert d.numpy()[0] == 0.0 and not inv.numpy().any()  # zero, as Warp's 2x2 and 3x3


@wp.kernel
def axis_angle(q: wp.array(dtype=wp.quatd), a: wp.array(dtype=wp.vec3d),
               b: wp.array(dtype=wp.vec3d), axis: wp.array(dtype=wp.vec3d),
               angle: wp.array(dtype=wp.float64), rot: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    ax = wp.vec3d()
    an = wp.float64(0.0)
    wp.quat_to_axis_angle(q[i], ax, an)
    axis[i] = ax
    angle[i] = an
    rot[i] = wp.quat_rotate(wp.quat_between_vectors(a[i], b[i]), wp.normalize(a[i]))


def test_quat_to_axis_angle_and_between_vectors():
    rng = np.random.default_rng(4)
    q = Rotation.random(4, random_state=5).as_quat()  # scipy is (x, y, z, w), as Warp
    a = rng.normal(size=(4, 3))
    b = rng.normal(size=(4, 3))

    def reference(q, a, b):
        rv = Rotation.from_quat(q).as_rotvec()
        ang = np.linalg.norm(rv, axis=1)
        return rv / ang[:, None], ang, b / np.linalg.norm(b, axis=1)[:, None]

    check(axis_angle, 4, [Arr(q, wp.quatd), Arr(a, wp.vec3d), Arr(b, wp.vec3d)],
          [Arr(np.zeros((4, 3)), wp.vec3d), Arr(np.zeros(4), wp.float64),
           Arr(np.zeros((4, 3)), wp.vec3d)], reference, fwd_rtol=1e-9, fwd_atol=1e-12)
