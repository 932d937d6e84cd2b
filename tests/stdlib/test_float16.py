"""float16 in kernels: scalars, vec*h, mat*h, quath, transformh, arrays and atomics.

Kernels hold float16 values as float32 numbers rounded to half precision after every operation,
as Warp's ``half`` (and numpy's float16 arithmetic) do, so numpy's float16 is an independent
bit-exact reference for scalar code. Gradients are accumulated in float32 and rounded where they
are stored (more accurate than Warp's half adjoints); they are checked against analytic values.
"""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def scalar_ops(a: wp.array(dtype=wp.float16), b: wp.array(dtype=wp.float16), s: wp.float16,
               out: wp.array2d(dtype=wp.float16)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x * y + s
    out[i, 1] = x / (y + 3.0) - x * 0.1
    out[i, 2] = wp.sqrt(wp.abs(x)) + wp.exp(y * 0.5)
    out[i, 3] = wp.max(x, y) - wp.min(x, s) * wp.float16(2.5)
    out[i, 4] = wp.float16(wp.float32(x) * 1000.0)   # casts round; large values overflow
    out[i, 5] = wp.float16(i) * wp.float16(0.001)   # an integer cast, then a subnormal-ish
    out[i, 6] = wp.sin(x) * wp.cos(y) + wp.tanh(x - y)


def _scalar_reference(a, b, s):
    h = np.float16
    with np.errstate(over="ignore"):
        return np.stack([
            a * b + s,
            a / (b + h(3.0)) - a * h(0.1),
            np.sqrt(np.abs(a)) + np.exp(b * h(0.5)),
            np.maximum(a, b) - np.minimum(a, s) * h(2.5),
            (a.astype(np.float32) * np.float32(1000.0)).astype(np.float16),
            np.arange(len(a)).astype(np.float16) * h(0.001),
            np.sin(a) * np.cos(b) + np.tanh(a - b),
        ], 1)


def test_scalar_arithmetic_rounds_every_operation_as_numpy_float16():
    rng = np.random.default_rng(0)
    a = (rng.normal(size=300) * 30).astype(np.float16)
    b = rng.normal(size=300).astype(np.float16)
    s = np.float16(0.3)
    out = wp.zeros((300, 7), dtype=wp.float16)
    wp.launch(scalar_ops, 300, inputs=[wp.array(a, dtype=wp.float16),
                                       wp.array(b, dtype=wp.float16), 0.3], outputs=[out])
    got = out.numpy()
    ref = _scalar_reference(a, b, s)
    assert got.dtype == np.float16
    # +, -, *, /, sqrt, casts: correctly rounded in both, so identical bits
    np.testing.assert_array_equal(got[:, [0, 1, 3, 4, 5]], ref[:, [0, 1, 3, 4, 5]])
    assert np.isinf(got[:, 4]).any()  # overflow to inf, as numpy
    # exp/sin/cos/tanh: float32 library results rounded to half may differ by one half ulp
    np.testing.assert_array_max_ulp(got[:, [2, 6]], ref[:, [2, 6]], maxulp=1)


@wp.kernel
def composite_ops(v: wp.array(dtype=wp.vec3h), m: wp.array(dtype=wp.mat33h),
                  q: wp.array(dtype=wp.quath), t: wp.transformh,
                  out_v: wp.array(dtype=wp.vec3h), out_s: wp.array(dtype=wp.float16),
                  out_m: wp.array(dtype=wp.mat22h)):
    i = wp.tid()
    x = v[i]
    mv = m[i] * x
    out_v[i] = wp.transform_point(t, wp.quat_rotate(q[i], mv)) + wp.vec3h(1.0, 2.0, 3.0)
    out_s[i] = wp.dot(x, mv) + wp.length(x) + x.y
    w = wp.mat22h(m[i][0, 0], m[i][0, 1], m[i][1, 0], m[i][1, 1])
    w[1, 1] = w[1, 1] + wp.float16(1.0)
    out_m[i] = wp.transpose(w) * w


def test_vector_matrix_quaternion_transform_values():
    from scipy.spatial.transform import Rotation
    n = 16
    rng = np.random.default_rng(1)
    v = rng.normal(size=(n, 3)).astype(np.float16)
    m = rng.normal(size=(n, 3, 3)).astype(np.float16)
    q = Rotation.random(n, random_state=2).as_quat().astype(np.float16)
    tp = np.array([0.5, -1.0, 2.0])
    tq = Rotation.from_euler("xyz", [0.3, -0.2, 0.9]).as_quat()
    out_v = wp.zeros(n, dtype=wp.vec3h)
    out_s = wp.zeros(n, dtype=wp.float16)
    out_m = wp.zeros(n, dtype=wp.mat22h)
    wp.launch(composite_ops, n, inputs=[wp.array(v, dtype=wp.vec3h),
                                        wp.array(m, dtype=wp.mat33h),
                                        wp.array(q, dtype=wp.quath),
                                        wp.transformh(np.concatenate([tp, tq]))],
              outputs=[out_v, out_s, out_m])
    vd, md, qd = v.astype(float), m.astype(float), q.astype(float)
    tq16 = np.asarray(wp.transformh(np.concatenate([tp, tq])), dtype=float)
    mv = np.einsum("nij,nj->ni", md, vd)
    rot = Rotation.from_quat(qd).apply(mv)
    want_v = Rotation.from_quat(tq16[3:]).apply(rot) + tq16[:3] + [1, 2, 3]
    want_s = (vd * mv).sum(1) + np.linalg.norm(vd, axis=1) + vd[:, 1]
    w = md[:, :2, :2].copy()
    w[:, 1, 1] += 1
    want_m = np.einsum("nji,njk->nik", w, w)
    # half precision: about 3 significant digits, a few roundings deep
    np.testing.assert_allclose(out_v.numpy(), want_v, rtol=1e-2, atol=2e-2)
    np.testing.assert_allclose(out_s.numpy(), want_s, rtol=1e-2, atol=2e-2)
    np.testing.assert_allclose(out_m.numpy(), want_m, rtol=1e-2, atol=2e-2)
    assert out_v.numpy().dtype == out_m.numpy().dtype == np.float16


@wp.kernel
def half_loss(x: wp.array(dtype=wp.vec2h), w: wp.float16, idx: wp.array(dtype=int),
              out: wp.array(dtype=wp.float16)):
    i = wp.tid()
    v = x[idx[i]]                   # gathered: the gradient is scattered atomically
    y = v[0] * v[1] * w
    s = wp.float16(0.0)
    for k in range(3):              # loop-carried float16 state: the adjoint records it
        s = s + wp.sin(y) * wp.float16(0.5)
        y = y * wp.float16(0.5)
    out[i] = s


def _half_loss_ref(x, w, idx):
    y = x[idx, 0] * x[idx, 1] * w
    return sum(np.sin(y * 0.5 ** k) * 0.5 for k in range(3))


def test_adjoint_and_tangent_in_half_precision():
    rng = np.random.default_rng(3)
    x = rng.uniform(0.3, 1.2, (8, 2)).astype(np.float16)
    idx = rng.integers(0, 8, 40)
    w = 0.75
    xa = wp.array(x, dtype=wp.vec2h, requires_grad=True)
    out = wp.zeros(40, dtype=wp.float16, requires_grad=True)
    ia = wp.array(idx, dtype=int)
    tape = wp.Tape()
    with tape:
        wp.launch(half_loss, 40, inputs=[xa, w, ia], outputs=[out])
    np.testing.assert_allclose(out.numpy(), _half_loss_ref(x.astype(float), w, idx), rtol=5e-3,
                               atol=2e-3)
    tape.backward(grads={out: np.ones(40)})
    xd = x.astype(float)
    dy = sum(np.cos(xd[idx, 0] * xd[idx, 1] * w * 0.5 ** k) * 0.5 * 0.5 ** k for k in range(3))
    want = np.zeros((8, 2))
    np.add.at(want, idx, np.stack([dy * xd[idx, 1] * w, dy * xd[idx, 0] * w], 1))
    assert xa.grad.numpy().dtype == np.float16
    np.testing.assert_allclose(xa.grad.numpy(), want, rtol=1e-2, atol=1e-2)
    t = wp.jvp(half_loss, 40, inputs=[xa, w, ia], outputs=[out],
               tangents={xa: np.ones((8, 2))})
    np.testing.assert_allclose(t[out].numpy(), dy * (xd[idx, 1] + xd[idx, 0]) * w, rtol=1e-2,
                               atol=1e-2)


@wp.kernel
def count(bins: wp.array(dtype=int), hist: wp.array(dtype=wp.float16),
          old_sum: wp.array(dtype=wp.float64)):
    i = wp.tid()
    b = bins[i]
    old = wp.atomic_add(hist, b, wp.float16(1.0))
    wp.atomic_add(old_sum, 0, wp.float64(old))


@wp.kernel
def half_min(lo: wp.array(dtype=wp.float16)):
    i = wp.tid()
    wp.atomic_min(lo, 0, wp.float16(i))


def test_atomic_min_max_refuse_half_arrays_as_warp():
    with pytest.raises(RuntimeError, match=r"atomic_min\(\) operations only work on arrays "
                       r"with \[u\]int32, \[u\]int64, bfloat16, float32, or float64 as the "
                       r"underlying scalar types, but got float16 \(with scalar type float16\)$"):
        wp.launch(half_min, 4, inputs=[wp.zeros(1, dtype=wp.float16)])


def test_atomics_on_half_arrays_under_parallel_collisions():
    n = 200_000
    bins = np.arange(n) % 3
    hist = wp.zeros(3, dtype=wp.float16)
    old_sum = wp.zeros(1, dtype=wp.float64)
    wp.launch(count, n, inputs=[wp.array(bins, dtype=int)], outputs=[hist, old_sum])
    # increments of 1 stop at 2048 in half precision (2048 + 1 rounds to 2048), so each bin
    # ends at exactly 2048, lost updates or not; the old values each update returns tell more:
    # with atomics each bin hands out 0, 1, ..., 2047 once and then 2048 for every other update
    np.testing.assert_array_equal(hist.numpy(), [2048, 2048, 2048])
    counts = np.bincount(bins)
    want = sum(2047 * 2048 / 2 + 2048.0 * (c - 2048) for c in counts)
    assert old_sum.numpy()[0] == want


@wp.struct
class HalfBody:
    x: wp.vec3h
    m: wp.float16


@wp.kernel
def struct_and_local(b: wp.array(dtype=HalfBody), out: wp.array(dtype=HalfBody)):
    i = wp.tid()
    buf = wp.alloc_local(wp.float16, 4)
    for k in range(4):
        buf[k] = b[i].m * wp.float16(k)
    q = b[i]
    q.m = buf[3] + buf[1]
    q.x = q.x * q.m
    out[i] = q


def test_structs_and_local_buffers_hold_half_values():
    b = wp.array([HalfBody(x=(1.0, 2.0, 3.0), m=0.1), HalfBody(x=(-1.0, 0.5, 0.0), m=3.0)],
                 dtype=HalfBody)
    out = wp.zeros(2, dtype=HalfBody)
    wp.launch(struct_and_local, 2, inputs=[b], outputs=[out])
    h = np.float16
    m = np.array([h(0.1), h(3.0)])
    want_m = m * h(3) + m * h(1)
    got = out.numpy()
    np.testing.assert_array_equal(got["m"], want_m)
    np.testing.assert_array_equal(got["x"], np.array([[1, 2, 3], [-1, 0.5, 0]], np.float16)
                                  * want_m[:, None])
