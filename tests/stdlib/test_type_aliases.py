"""Every Warp vector precision suffix, integer vector arithmetic, and the dtype argument of
``quat_identity`` / ``transform_identity``, against numpy."""
import numpy as np

import weft as wp


def test_vector_aliases_have_warp_names_and_dtypes():
    expect = {"b": np.int8, "ub": np.uint8, "s": np.int16, "us": np.uint16, "i": np.int32,
              "ui": np.uint32, "l": np.int64, "ul": np.uint64, "h": np.float16,
              "f": np.float32, "d": np.float64}
    for n in (2, 3, 4):
        for suffix, np_t in expect.items():
            t = getattr(wp, f"vec{n}{suffix}")
            assert t.__name__ == f"vec{n}{suffix}" and t._length_ == n
            assert wp.types.numpy_dtype(t) == np_t
            assert t is wp.types.vector(n, getattr(wp, np.dtype(np_t).name))


@wp.kernel
def int_vectors(a: wp.array(dtype=wp.vec3i), b: wp.array(dtype=wp.vec2ub),
                out: wp.array(dtype=wp.vec3i), out_b: wp.array(dtype=wp.vec2ub),
                q: wp.array(dtype=wp.quatd), t: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    v = a[i] * 2 + wp.vec3i(1, 2, 3)
    v[1] = v[0] - v.z
    out[i] = v
    out_b[i] = b[i] + wp.vec2ub(wp.uint8(1), wp.uint8(2))
    q[i] = wp.quat_identity(dtype=wp.float64)
    t[i] = wp.transform_identity(wp.float64)


def test_integer_vectors_and_identities():
    a = np.array([[1, -2, 3], [4, 5, -6]], np.int32)
    b = np.array([[250, 3], [7, 254]], np.uint8)
    out = wp.zeros(2, dtype=wp.vec3i)
    out_b = wp.zeros(2, dtype=wp.vec2ub)
    q = wp.zeros(2, dtype=wp.quatd)
    t = wp.zeros(2, dtype=wp.transformd)
    wp.launch(int_vectors, 2, inputs=[wp.array(a, dtype=wp.vec3i), wp.array(b, dtype=wp.vec2ub)],
              outputs=[out, out_b, q, t])
    want = a * 2 + np.array([1, 2, 3])
    want[:, 1] = want[:, 0] - want[:, 2]
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(out_b.numpy(), (b + np.array([1, 2], np.uint8)))  # wraps
    np.testing.assert_array_equal(q.numpy(), [[0, 0, 0, 1]] * 2)
    np.testing.assert_array_equal(t.numpy(), [[0, 0, 0, 0, 0, 0, 1]] * 2)


def test_float16_kernels_raise_a_clear_error():
    import pytest

    from weft.errors import KernelError

    @wp.kernel
    def half(a: wp.array(dtype=wp.vec3h)):
        a[0] = a[0]

    with pytest.raises(KernelError, match="float16 values are not supported in kernels"):
        half.module
    h = wp.array(np.array([[1, 2, 3]]), dtype=wp.vec3h)  # float16 arrays work outside kernels
    assert h.numpy().dtype == np.float16
