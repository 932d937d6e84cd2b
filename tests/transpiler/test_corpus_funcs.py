"""Corpus, part 2: funcs, constants, multi-dimensional launches, atomics, ints and casts.

See ``test_corpus.py`` for what each check covers.
"""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check

F64 = wp.array(dtype=wp.float64)
rng = np.random.default_rng(4321)


def f64(data, grad=True):
    return Arr(np.asarray(data, dtype=np.float64), wp.float64, grad)


def out64(shape):
    return Arr(np.zeros(shape), wp.float64)


# ----------------------------------------------------------------------------- funcs

@wp.func
def sq(x: wp.float64):
    return x * x


@wp.func
def poly(x: wp.float64):
    return sq(x) * x + sq(x + 1.0)


@wp.func
def polar(x: wp.float64, y: wp.float64):
    return wp.sqrt(sq(x) + sq(y)), wp.atan2(y, x)


@wp.func
def spread(x: wp.float64):
    return wp.vec3d(x, sq(x), wp.sin(x))


@wp.func
def kink(x: wp.float64):
    if x > 1.0:
        return sq(x)
    return x * 2.0 - 1.0


@wp.kernel
def k_funcs(a: F64, b: F64, out: F64, out_v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    r, th = polar(a[i], b[i])
    v = spread(th)
    out[i] = poly(r) + kink(a[i]) * th
    out_v[i] = v * r


def test_funcs_calling_funcs_returning_vectors_and_tuples_with_early_return():
    a = np.array([0.3, 1.4, -0.8, 2.1, 0.9, 1.2])
    b = np.array([0.5, -0.7, 1.1, 0.4, -1.3, 0.2])

    def ref(a, b):
        r, th = np.hypot(a, b), np.arctan2(b, a)
        kink = np.where(a > 1, a * a, 2 * a - 1)
        v = np.stack([th, th ** 2, np.sin(th)], axis=1) * r[:, None]
        return r ** 3 + (r + 1) ** 2 + kink * th, v

    check(k_funcs, 6, [f64(a), f64(b)], [out64(6), Arr(np.zeros((6, 3)), wp.vec3d)], ref)


SCALE = wp.constant(2.5)
ITERS = wp.constant(3)
OFFSET = 0.25


def make_captured_kernel(c, m):
    @wp.kernel
    def k_captured(a: F64, out: F64):
        i = wp.tid()
        x = a[i] * SCALE + OFFSET
        for k in range(ITERS):
            x = x * c - wp.float64(m)
        out[i] = x

    return k_captured


def test_constants_and_captured_python_numbers():
    k = make_captured_kernel(0.75, 2)
    a = rng.uniform(-1, 1, 5)

    def ref(a):
        x = a * 2.5 + 0.25
        for _ in range(3):
            x = x * 0.75 - 2
        return x

    check(k, 5, [f64(a)], [out64(5)], ref)


@wp.func
def drift(v: wp.vec3d, n: int):
    for k in range(n):
        v = v * 0.9 + wp.vec3d(0.1, 0.0, 0.0)
        if wp.length(v) < 0.5:
            return v * 2.0
    v[1] = v[1] + 1.0
    return v


@wp.func
def write_out(out: wp.array(dtype=wp.vec3d), i: int, v: wp.vec3d):
    out[i] = v * 3.0
    wp.atomic_add(out, 0, v)


@wp.kernel
def k_func_loops(a: wp.array(dtype=wp.vec3d), n: int, out: wp.array(dtype=wp.vec3d),
                 out2: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    w = drift(a[i], n)
    out[i] = w
    write_out(out2, i, w)


def test_func_with_a_loop_returning_early_and_func_writing_arrays():
    a = np.array([[0.3, 0.2, 0.1], [1.0, 2.0, 0.5], [0.6, -0.1, 0.2], [-0.5, 0.5, 0.5]])

    def ref(a, n):
        res = []
        for v in a:
            for _ in range(n):
                v = v * 0.9 + [0.1, 0, 0]
                if np.linalg.norm(v) < 0.5:
                    v = v * 2
                    break
            else:
                v = v + [0, 1, 0]
            res.append(v)
        res = np.array(res)
        o2 = res * 3
        o2[0] += res.sum(axis=0)
        return res, o2

    check(k_func_loops, 4, [Arr(a, wp.vec3d), 5],
          [Arr(np.zeros((4, 3)), wp.vec3d), Arr(np.zeros((4, 3)), wp.vec3d)], ref)


@wp.func
def halve_until(x: wp.float64, lim: wp.float64):
    while x > lim:
        x = x * 0.5
    return x


@wp.kernel
def k_loop_calls(a: F64, s: wp.float64, n: int, out: F64, out2: F64):
    i = wp.tid()
    x = a[i]
    s = s * 2.0
    acc = wp.float64(0.0)
    for k in range(n):
        if x > 0.0:
            t = x * s
        else:
            t = -x
        acc = acc + halve_until(t + wp.float64(k), 1.0 + 0.1 * wp.float64(k))
    for j in range(0):
        acc = acc * x
    out[i] = acc
    y = x
    while abs(y) < 1.0e5:
        y = y * 1.7 + s
    out2[i] = y


def test_while_loop_in_a_func_called_in_a_loop_and_a_rebound_scalar_parameter():
    def halve(x, lim):
        while x > lim:
            x *= 0.5
        return x

    def ref(a, s, n):
        s = s * 2
        o1, o2 = [], []
        for x in a:
            o1.append(sum(halve((x * s if x > 0 else -x) + k, 1 + 0.1 * k) for k in range(n)))
            y = x
            while abs(y) < 1e5:
                y = y * 1.7 + s
            o2.append(y)
        return o1, o2

    a = np.array([0.3, -2.5, 7.1, 40.2, 0.9])
    check(k_loop_calls, 5, [f64(a), 0.8, 4], [out64(5), out64(5)], ref, scalar_grads=["s"])


# ----------------------------------------------------------------------------- launches

@wp.kernel
def k_grid2(a: wp.array2d(dtype=wp.float64), w: F64, out: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    out[i, j] = a[i, j] * w[j] + wp.sin(a[i, j]) * wp.float64(i - j)


def test_two_dimensional_launch():
    a, w = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, 4)
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    check(k_grid2, (3, 4), [Arr(a, wp.float64), f64(w)], [Arr(np.zeros((3, 4)), wp.float64)],
          lambda a, w: a * w[None, :] + np.sin(a) * (i - j))


@wp.kernel
def k_grid3(a: wp.array3d(dtype=wp.float64), out: wp.array3d(dtype=wp.float64)):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k] * a[i, j, k] * wp.float64(i + 2 * j + 3 * k + 1)


def test_three_dimensional_launch():
    a = rng.uniform(-1, 1, (2, 3, 2))
    i, j, k = np.meshgrid(np.arange(2), np.arange(3), np.arange(2), indexing="ij")
    check(k_grid3, (2, 3, 2), [Arr(a, wp.float64)], [Arr(np.zeros((2, 3, 2)), wp.float64)],
          lambda a: a * a * (i + 2 * j + 3 * k + 1))


@wp.func
def row_dot(r: F64, w: F64, n: int):
    s = wp.float64(0.0)
    for k in range(n):
        s = s + r[k] * w[k] * r[k]
    return s


@wp.kernel
def k_rows(a: wp.array2d(dtype=wp.float64), w: F64, out: F64):
    i = wp.tid()
    row = a[i]
    out[i] = row_dot(row, w, a.shape[1]) + row[0]


def test_row_views_of_a_2d_array_passed_to_a_func():
    a, w = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, 3)
    check(k_rows, 4, [Arr(a, wp.float64), f64(w)], [out64(4)],
          lambda a, w: (a * a * w[None, :]).sum(axis=1) + a[:, 0])


# ----------------------------------------------------------------------------- atomics

@wp.kernel
def k_accumulate(a: F64, v: wp.array(dtype=wp.vec3d), hist: F64, loss: F64,
                 vsum: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    x = a[i]
    hist[i % 3] += x * x
    hist[0] -= wp.sin(x)
    wp.atomic_add(loss, 0, x * wp.length(v[i]))
    vsum[0] += v[i] * x


def test_accumulation_into_shared_elements_from_many_threads():
    a, v = rng.uniform(-1, 1, 10), rng.uniform(-1, 1, (10, 3))

    def ref(a, v):
        hist = np.zeros(3)
        np.add.at(hist, np.arange(10) % 3, a * a)
        hist[0] -= np.sin(a).sum()
        loss = np.array([(a * np.linalg.norm(v, axis=1)).sum()])
        return hist, loss, (v * a[:, None]).sum(axis=0, keepdims=True)

    check(k_accumulate, 10, [f64(a), Arr(v, wp.vec3d)],
          [out64(3), out64(1), Arr(np.zeros((1, 3)), wp.vec3d)], ref, fwd_rtol=1e-9)
    # tape.backward(loss) seeds loss.grad with 1: d loss / d a = |v|, d loss / d v = a v / |v|
    xa = wp.array(a, dtype=wp.float64, requires_grad=True)
    xv = wp.array(v, dtype=wp.vec3d, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_accumulate, 10, inputs=[xa, xv],
                  outputs=[wp.zeros(3, dtype=wp.float64), loss, wp.zeros(1, dtype=wp.vec3d)])
    tape.backward(loss)
    norm = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(xa.grad.numpy(), norm, rtol=1e-12)
    np.testing.assert_allclose(xv.grad.numpy(), a[:, None] * v / norm[:, None], rtol=1e-12)


# ----------------------------------------------------------------------------- float32

@wp.kernel
def k_float32(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float),
              out_v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x = a[i]
    u = v[i]
    s = x * wp.cos(x) + wp.dot(u, u) / (1.0 + x * x)
    out[i] = s
    out_v[i] = wp.normalize(u) * s + wp.cross(u, wp.vec3(1.0, x, 0.5))


def test_float32_kernel_against_float64_reference():
    a = rng.uniform(-1, 1, 6).astype(np.float32)
    v = rng.uniform(-1, 1, (6, 3)).astype(np.float32)

    def ref(a, v):
        s = a * np.cos(a) + (v * v).sum(axis=1) / (1 + a * a)
        e = np.stack([np.ones_like(a), a, 0.5 * np.ones_like(a)], axis=1)
        n = v / np.linalg.norm(v, axis=1, keepdims=True)
        return s, n * s[:, None] + np.cross(v, e)

    check(k_float32, 6, [Arr(a, float), Arr(v, wp.vec3)],
          [Arr(np.zeros(6, np.float32), float), Arr(np.zeros((6, 3), np.float32), wp.vec3)],
          ref, fd="reference", rtol=2e-4, atol=2e-5, fwd_rtol=2e-5, fwd_atol=2e-6)


# ----------------------------------------------------------------------------- ints and casts

@wp.kernel
def k_ints(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i] = (x % y) + (x // y) * 3 + (x & y) - (x | 5) + (x ^ y) + (x << 2) + (y >> 1) + i * 7


def test_integer_kernel_on_non_negative_operands():
    # non-negative operands only: the rules for negative // and % are pinned elsewhere
    a = np.array([0, 7, 13, 100, 5, 64, 33], dtype=np.int32)
    b = np.array([1, 3, 4, 7, 5, 9, 2], dtype=np.int32)
    i = np.arange(7)
    check(k_ints, 7, [Arr(a, int, False), Arr(b, int, False)],
          [Arr(np.zeros(7, np.int32), int, False)],
          lambda a, b: ((a.astype(int) % b.astype(int)) + (a.astype(int) // b.astype(int)) * 3
                        + (a.astype(int) & b.astype(int)) - (a.astype(int) | 5)
                        + (a.astype(int) ^ b.astype(int)) + (a.astype(int) << 2)
                        + (b.astype(int) >> 1) + i * 7))


@wp.kernel
def k_casts(a: wp.array(dtype=float), b: F64, out: F64, idx: wp.array(dtype=int)):
    i = wp.tid()
    x = a[i]
    t = int(x * 4.0)
    f = float(i) * 0.5
    out[i] = wp.float64(x) * b[i] + wp.float64(f) * wp.float64(x * x) + wp.float64(t) * b[i]
    idx[i] = t + int(f)


def test_casts_between_ints_float32_and_float64():
    a = np.array([0.3, 1.1, 2.6, 0.05, 3.4], dtype=np.float32)
    b = rng.uniform(-1, 1, 5)
    i = np.arange(5)

    def ref(a, b):  # in float64 so that finite differences of it are accurate
        t = np.trunc(a * 4).astype(int)
        f = i * 0.5
        return a * b + f * a * a + t * b, t + np.trunc(f).astype(int)

    check(k_casts, 5, [Arr(a, float), f64(b)], [out64(5), Arr(np.zeros(5, np.int32), int, False)],
          ref, fd="reference", rtol=1e-5, atol=1e-6, fwd_rtol=1e-6)


@wp.kernel
def k_scalar_param(a: F64, s: wp.float64, out: F64):
    i = wp.tid()
    out[i] = a[i] * wp.exp(s * a[i]) + s * s


def test_tangent_of_a_scalar_parameter():
    a = rng.uniform(-1, 1, 5)
    check(k_scalar_param, 5, [f64(a), 0.7], [out64(5)],
          lambda a, s: a * np.exp(s * a) + s * s, scalar_grads=["s"])



@wp.func
def column_of(m, j):
    return wp.vector(m[0, j], m[1, j], m[2, j])


@wp.func
def times(x, s):
    return x * s


@wp.kernel
def k_generic_literals(a: wp.array(dtype=wp.mat33d), out: wp.array(dtype=wp.vec3d),
                       o2: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = column_of(a[i], 1)                   # an int literal stays an index
    o2[i] = times(a[i][0, 0], 2.5) + wp.lerp(a[i][1, 1], a[i][2, 2], 1)  # floats adapt


def test_literals_passed_to_generic_funcs():
    m = np.arange(18.0).reshape(2, 3, 3)
    out = wp.zeros(2, dtype=wp.vec3d)
    o2 = wp.zeros(2, dtype=wp.float64)
    wp.launch(k_generic_literals, 2, inputs=[wp.array(m, dtype=wp.mat33d)], outputs=[out, o2])
    np.testing.assert_array_equal(out.numpy(), m[:, :, 1])
    np.testing.assert_array_equal(o2.numpy(), m[:, 0, 0] * 2.5 + m[:, 2, 2])


@wp.func
def scaled_sum(x: float, y: float = 2.0, z: float = 0.5):
    return x * y + z


@wp.kernel
def k_defaults(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = scaled_sum(a[i]) + scaled_sum(a[i], 4.0) * 10.0 + scaled_sum(a[i], z=1.0) * 100.0


def test_func_default_and_keyword_arguments_as_warp():
    a = np.array([3.0, -1.0], np.float32)
    out = wp.zeros(2, dtype=float)
    wp.launch(k_defaults, 2, inputs=[wp.array(a, dtype=float)], outputs=[out])
    np.testing.assert_allclose(out.numpy(), (a * 2 + 0.5) + (a * 4 + 0.5) * 10 + (a * 2 + 1) * 100,
                               rtol=1e-6)
