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


@wp.kernel
def every_suffix(b: wp.array(dtype=wp.vec2b), ub: wp.array(dtype=wp.vec3ub),
                 s: wp.array(dtype=wp.vec4s), us: wp.array(dtype=wp.vec2us),
                 i32: wp.array(dtype=wp.vec3i), ui: wp.array(dtype=wp.vec4ui),
                 l: wp.array(dtype=wp.vec2l), ul: wp.array(dtype=wp.vec3ul),
                 h: wp.array(dtype=wp.vec4h), f: wp.array(dtype=wp.vec2f),
                 d: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    b[i] = b[i] * wp.int8(3) + b[i]          # integer vectors wrap as C does
    ub[i] = ub[i] - wp.vec3ub(wp.uint8(1), wp.uint8(1), wp.uint8(1))
    v = s[i]
    v[2] = v.x * v.w
    s[i] = v
    us[i] = us[i] * wp.uint16(300)
    i32[i] = wp.cw_mul(i32[i], i32[i]) - i32[i]
    ui[i] = ui[i] + ui[i]
    l[i] = l[i] * wp.int64(1000000007)
    ul[i] = ul[i] - wp.vec3ul(wp.uint64(5), wp.uint64(0), wp.uint64(1))
    h[i] = h[i] * wp.float16(0.1) + h[i]     # rounded to half after each operation
    f[i] = wp.normalize(f[i])
    d[i] = wp.cross(d[i], wp.vec3d(1.0, 2.0, 3.0))


def test_a_vector_of_every_precision_suffix_in_one_kernel():
    rng = np.random.default_rng(5)
    vals = {
        "b": (rng.integers(-128, 128, (3, 2)), np.int8, wp.vec2b),
        "ub": (rng.integers(0, 256, (3, 3)), np.uint8, wp.vec3ub),
        "s": (rng.integers(-300, 300, (3, 4)), np.int16, wp.vec4s),
        "us": (rng.integers(0, 65536, (3, 2)), np.uint16, wp.vec2us),
        "i": (rng.integers(-50000, 50000, (3, 3)), np.int32, wp.vec3i),
        "ui": (rng.integers(0, 2 ** 32, (3, 4)), np.uint32, wp.vec4ui),
        "l": (rng.integers(-2 ** 40, 2 ** 40, (3, 2)), np.int64, wp.vec2l),
        "ul": (rng.integers(0, 2 ** 62, (3, 3)), np.uint64, wp.vec3ul),
        "h": (rng.normal(size=(3, 4)) * 100, np.float16, wp.vec4h),
        "f": (rng.normal(size=(3, 2)), np.float32, wp.vec2f),
        "d": (rng.normal(size=(3, 3)), np.float64, wp.vec3d),
    }
    host = {k: np.asarray(v, dt) for k, (v, dt, _) in vals.items()}
    arrays = [wp.array(host[k], dtype=t) for k, (_, _, t) in vals.items()]
    wp.launch(every_suffix, 3, inputs=arrays)
    got = {k: a.numpy() for k, a in zip(vals, arrays)}
    with np.errstate(over="ignore"):
        want_s = host["s"].copy()
        want_s[:, 2] = host["s"][:, 0] * host["s"][:, 3]
        want = {
            "b": host["b"] * np.int8(3) + host["b"],
            "ub": host["ub"] - np.uint8(1),
            "s": want_s,
            "us": host["us"] * np.uint16(300),
            "i": host["i"] * host["i"] - host["i"],
            "ui": host["ui"] + host["ui"],
            "l": host["l"] * np.int64(1000000007),
            "ul": host["ul"] - np.array([5, 0, 1], np.uint64),
            "h": host["h"] * np.float16(0.1) + host["h"],
            "f": host["f"] / np.linalg.norm(host["f"], axis=1)[:, None],
            "d": np.cross(host["d"], [1.0, 2.0, 3.0]),
        }
    for k in vals:
        assert got[k].dtype == host[k].dtype, k
        if k == "f":
            np.testing.assert_allclose(got[k], want[k], rtol=1e-6)
        elif k == "d":
            np.testing.assert_allclose(got[k], want[k], rtol=1e-15)
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)
