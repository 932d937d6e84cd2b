"""In-kernel constructors of every composite kind against numpy: generic ``wp.vector`` /
``wp.matrix(shape=)`` / ``wp.quaternion`` / ``wp.transformation`` / ``wp.identity``, user types
from ``wp.types.*``, zero and fill forms, row and element assignment, ``@``; gradients through
them against finite differences; malformed calls are KernelErrors."""
import numpy as np
import pytest

import weft as wp
from tests.gradcheck import Arr, check
from tests.kernel_errors import kernel_error

vec5d = wp.types.vector(5, wp.float64)
mat23d = wp.types.matrix((2, 3), wp.float64)
quatd_ = wp.types.quaternion(wp.float64)
xformd = wp.types.transformation(wp.float64)


@wp.kernel
def ctors(x: wp.array(dtype=wp.float64), v5: wp.array(dtype=vec5d),
          m23: wp.array(dtype=mat23d), out_v: wp.array(dtype=vec5d),
          out_m: wp.array(dtype=mat23d), out_q: wp.array(dtype=quatd_),
          out_t: wp.array(dtype=xformd), out_i: wp.array(dtype=wp.mat33d),
          out_s: wp.array(dtype=wp.spatial_matrixd), out_z: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    a = x[i]
    v = wp.vector(a, a * 2.0, a * 3.0, a * 4.0, a * 5.0)
    out_v[i] = v + v5[i]
    m = wp.matrix(a, 1.0, 2.0, 3.0, a * a, 4.0, shape=(2, 3))
    m[1] = wp.vector(a, a, a)              # a whole row
    m[0, 2] = a + 1.0
    out_m[i] = m + m23[i]
    q = wp.quaternion(wp.vec3d(a, 0.5, 0.25), a * a)
    out_q[i] = q * wp.quaternion(0.0, 0.0, 0.0, 2.0, dtype=wp.float64)
    out_t[i] = wp.transformation(wp.vec3d(a, 1.0, 2.0), q)
    eye = wp.identity(n=3, dtype=wp.float64)
    out_i[i] = eye * a @ wp.mat33d(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    s = wp.spatial_matrixd()               # zero
    s[5, 0] = a
    s[0] = wp.spatial_vectord(a, a, a, 0.0, 0.0, 1.0)
    out_s[i] = s
    z = wp.vector(length=3, dtype=wp.float64) + wp.vector(a, length=3)
    z.y = a * 3.0
    out_z[i] = z


def _reference(x, v5, m23):
    n = len(x)
    v = x[:, None] * np.arange(1, 6) + v5
    m = np.zeros((n, 2, 3))
    m[:, 0] = np.stack([x, np.ones(n), x + 1], 1)
    m[:, 1] = x[:, None]
    q = np.stack([x, np.full(n, 0.5), np.full(n, 0.25), x * x], 1)
    t = np.concatenate([np.stack([x, np.ones(n), np.full(n, 2.0)], 1), q], 1)
    i33 = x[:, None, None] * np.arange(1.0, 10.0).reshape(3, 3)
    s = np.zeros((n, 6, 6))
    s[:, 5, 0] = x
    s[:, 0] = np.stack([x, x, x, 0 * x, 0 * x, 1 + 0 * x], 1)
    z = np.stack([x, 3 * x, x], 1)
    return v, m + m23, 2 * q, t, i33, s, z


def test_constructors_values_and_gradients():
    rng = np.random.default_rng(11)
    x = np.array([0.5, -1.5, 0.75])
    v5 = rng.normal(size=(3, 5))
    m23 = rng.normal(size=(3, 2, 3))
    outs = [(vec5d, (5,)), (mat23d, (2, 3)), (quatd_, (4,)), (xformd, (7,)), (wp.mat33d, (3, 3)),
            (wp.spatial_matrixd, (6, 6)), (wp.vec3d, (3,))]
    check(ctors, 3, [Arr(x, wp.float64), Arr(v5, vec5d), Arr(m23, mat23d)],
          [Arr(np.zeros((3,) + shape), t) for t, shape in outs], _reference)


def test_python_scope_defaults_as_warp():
    np.testing.assert_array_equal(wp.transform(), [0, 0, 0, 0, 0, 0, 1])  # identity
    np.testing.assert_array_equal(wp.quat(), [0, 0, 0, 0])                # zeros
    np.testing.assert_array_equal(wp.vec3(2.5), [2.5, 2.5, 2.5])
    assert wp.types.vector(5, wp.float64)().dtype == np.float64


@pytest.mark.parametrize("body,message", [
    ("v = wp.vector()", "the `length` argument must be specified when zero-initializing"),
    ("v = wp.vector(1.0, 2.0, length=3)",
     "incompatible number of values given (2) when constructing a vector of length 3"),
    ("v = wp.matrix(1.0, 2.0, 3.0)", "the `shape` argument must be specified"),
    ("v = wp.vector(1.0, size=3)", "takes no keyword 'size'"),
    ("v = wp.quaternion(1.0, 2.0)", "takes 0, 4 components, got 2"),
    ("v = wp.vector(x, length=n)", "must be a constant"),
])
def test_malformed_constructors_are_kernel_errors(tmp_path, body, message):
    err = str(kernel_error(tmp_path, "x: float, n: int, out: wp.array(dtype=float)",
                           [body, "out[0] = 0.0"], "bad_ctor"))
    assert message in err
    assert "bad_ctor.py:6" in err and "^" in err
