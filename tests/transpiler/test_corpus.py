"""Corpus of small kernels covering the kernel language, each checked end to end.

Every test checks the forward values against numpy written independently of the kernel, and
(through :func:`tests.gradcheck.check`) the adjoint and the tangent against central finite
differences in float64 plus the dot-product test between them. Sizes are tiny so that Numba's
compile time dominates. This part: operators, branches and loops; funcs, launches, atomics,
ints and casts are in ``test_corpus_funcs.py``; vectors and matrices in ``test_corpus_vec.py``.
"""
import math

import numpy as np
import pytest

import weft as wp
from tests.gradcheck import Arr, check

F64 = wp.array(dtype=wp.float64)
rng = np.random.default_rng(1234)


def uniform(lo, hi, shape):
    return rng.uniform(lo, hi, shape)


def f64(data, grad=True):
    return Arr(np.asarray(data, dtype=np.float64), wp.float64, grad)


def out64(shape):
    return Arr(np.zeros(shape), wp.float64)


# ----------------------------------------------------------------------------- operators

@wp.kernel
def k_arith(a: F64, b: F64, out: F64):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i] = (x * y + x / y - y - (-x) * 2.0 + x ** 2.0 + 3.0 / y + wp.sin(x) * wp.exp(-y)
              + wp.sqrt(y) - wp.log(y) * wp.cos(x) + wp.tanh(x * y) + wp.abs(x - 2.0))


def test_arithmetic_operators():
    a, b = uniform(-1.5, 1.5, 7), uniform(0.5, 2.0, 7)

    def ref(a, b):
        return (a * b + a / b - b + 2 * a + a ** 2 + 3 / b + np.sin(a) * np.exp(-b) + np.sqrt(b)
                - np.log(b) * np.cos(a) + np.tanh(a * b) + np.abs(a - 2))

    check(k_arith, 7, [f64(a), f64(b)], [out64(7)], ref)
    # the explicit adjoint launch, against the derivative in a written out by hand
    xa, xb = wp.array(a, dtype=wp.float64), wp.array(b, dtype=wp.float64)
    ga, gb = wp.zeros(7, dtype=wp.float64), wp.zeros(7, dtype=wp.float64)
    wp.launch(k_arith, 7, inputs=[xa, xb], outputs=[wp.zeros(7, dtype=wp.float64)],
              adjoint=True, adj_inputs=[ga, gb], adj_outputs=[wp.array(np.ones(7),
                                                                        dtype=wp.float64)])
    da = (b + 1 / b + 2 + 2 * a + np.cos(a) * np.exp(-b) + np.log(b) * np.sin(a)
          + b * (1 - np.tanh(a * b) ** 2) + np.sign(a - 2))
    np.testing.assert_allclose(ga.numpy(), da, rtol=1e-12)


@wp.kernel
def k_branch(a: F64, b: F64, out: F64):
    i = wp.tid()
    x = a[i]
    y = b[i]
    r = wp.float64(0.0)
    if x > y and y > 0.0:
        r = x * y
    elif x < -0.5 or y >= 1.0:
        r = x - y * y
    elif not (x != y):
        r = wp.float64(7.0)
    else:
        r = x / y
    if 0.0 < x <= 1.0:
        r = r + wp.sin(x)
    m = x if x <= y else y
    out[i] = r + m * 2.0


def _branch(x, y):
    if x > y and y > 0:
        r = x * y
    elif x < -0.5 or y >= 1:
        r = x - y * y
    elif x == y:
        r = 7.0
    else:
        r = x / y
    if 0 < x <= 1:
        r += math.sin(x)
    return r + 2 * min(x, y)


def test_comparisons_boolean_ops_and_if_elif_else():
    a = np.array([1.2, 0.3, -0.9, 0.25, -0.2, 0.8, -0.3, 1.7])
    b = np.array([0.4, 0.9, 0.7, 1.4, -0.6, -0.1, -0.25, 2.5])
    ref = lambda a, b: [_branch(x, y) for x, y in zip(a, b)]   # noqa: E731
    check(k_branch, 8, [f64(a), f64(b)], [out64(8)], ref)


# ----------------------------------------------------------------------------- loops

@wp.kernel
def k_ranges(a: F64, n: int, lo: int, hi: int, step: int, out: F64):
    i = wp.tid()
    x = a[i]
    s = wp.float64(0.0)
    for k in range(n):
        s = s + x * wp.float64(k)
    for k in range(lo, hi):
        s = s * 0.5 + x * x
    for k in range(hi, lo, step):
        s = s + wp.float64(k) * wp.sin(s * x)
    for k in range(hi, lo, -2):
        s = s - x / wp.float64(k + 10)
    out[i] = s


def _ranges(a, n, lo, hi, step):
    out = []
    for x in a:
        s = 0.0
        for k in range(n):
            s += x * k
        for k in range(lo, hi):
            s = s * 0.5 + x * x
        for k in range(hi, lo, step):
            s = s + k * math.sin(s * x)
        for k in range(hi, lo, -2):
            s = s - x / (k + 10)
        out.append(s)
    return out


@pytest.mark.parametrize("n, lo, hi, step", [(3, 1, 4, -1), (0, 2, 4, -3), (1, -2, 3, -2)])
def test_range_forms_with_runtime_bounds(n, lo, hi, step):
    a = uniform(-1, 1, 5)
    check(k_ranges, 5, [f64(a), n, lo, hi, step], [out64(5)], _ranges)


@wp.kernel
def k_power32(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    tid = wp.tid()
    s = float(1.0)
    for i in range(n):
        s = s * a[tid]
    out[tid] = s


def test_loop_carried_product_float32_gives_n_a_to_the_n_minus_1():
    a = np.array([0.5, 1.5, 2.0, -1.25, 3.0], dtype=np.float32)
    check(k_power32, 5, [Arr(a, float), 3], [Arr(np.zeros(5, np.float32), float)],
          lambda a, n: a ** n, fd="reference", rtol=1e-5, atol=1e-5, fwd_rtol=1e-6)
    # the gradient itself, written out: d(a^3)/da = 3 a^2 (Warp's replay gives a wrong value)
    x = wp.array(a, dtype=float, requires_grad=True)
    y = wp.zeros(5, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_power32, 5, inputs=[x, 3], outputs=[y])
    tape.backward(grads={y: np.ones(5, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 3 * a.astype(np.float64) ** 2, rtol=1e-6)


@wp.kernel
def k_newton_sqrt(a: F64, n: int, out: F64):
    i = wp.tid()
    x = a[i]
    y = x
    for k in range(n):
        y = 0.5 * (y + x / y)
    out[i] = y


def test_newton_iteration_for_sqrt():
    a = uniform(0.5, 4.0, 6)

    def ref(a, n):
        y = a.copy()
        for _ in range(n):
            y = 0.5 * (y + a / y)
        return y

    check(k_newton_sqrt, 6, [f64(a), 8], [out64(6)], ref)
    # converged: the gradient of the iteration is that of sqrt
    x = wp.array(a, dtype=wp.float64, requires_grad=True)
    y = wp.zeros(6, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_newton_sqrt, 6, inputs=[x, 8], outputs=[y])
    tape.backward(grads={y: np.ones(6)})
    np.testing.assert_allclose(y.numpy(), np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 0.5 / np.sqrt(a), rtol=1e-9)


@wp.kernel
def k_fixed_point(a: F64, n: int, out: F64):
    i = wp.tid()
    x = a[i]
    for k in range(n):
        x = x - 0.1 * wp.sin(x)
    out[i] = x


def test_iterated_map_x_minus_sin_x():
    a = uniform(-3, 3, 6)

    def ref(a, n):
        for _ in range(n):
            a = a - 0.1 * np.sin(a)
        return a

    check(k_fixed_point, 6, [f64(a), 7], [out64(6)], ref)


@wp.kernel
def k_while(a: F64, out: F64, count: wp.array(dtype=int)):
    i = wp.tid()
    x = a[i]
    y = wp.float64(1.0)
    k = int(0)
    while x > 1.0:
        x = x * 0.5
        y = y * 0.5 + wp.sqrt(x)
        k += 1
    out[i] = x + y * wp.float64(k)
    count[i] = k


def test_while_with_data_dependent_trip_count():
    a = np.array([0.7, 3.3, 12.9, 40.1, 1.5, 3.0e6])  # 22 trips: the stack grows

    def ref(a):
        outs, counts = [], []
        for x in a:
            y, k = 1.0, 0
            while x > 1:
                x *= 0.5
                y = y * 0.5 + math.sqrt(x)
                k += 1
            outs.append(x + y * k)
            counts.append(k)
        return outs, counts

    check(k_while, 6, [f64(a)], [out64(6), Arr(np.zeros(6, np.int32), int, grad=False)], ref)


@wp.kernel
def k_break_continue(a: F64, n: int, out: F64):
    i = wp.tid()
    x = a[i]
    s = wp.float64(0.0)
    for k in range(n):
        if k % 2 == 1:
            continue
        s = s + x * wp.float64(k + 1)
        if s > 4.0:
            break
        s = s * 1.1
    out[i] = s


def test_break_and_continue():
    a = np.array([0.1, 0.45, 0.9, 1.3, 2.2, 5.0])

    def ref(a, n):
        out = []
        for x in a:
            s = 0.0
            for k in range(n):
                if k % 2 == 1:
                    continue
                s += x * (k + 1)
                if s > 4:
                    break
                s *= 1.1
            out.append(s)
        return out

    check(k_break_continue, 6, [f64(a), 9], [out64(6)], ref)


@wp.kernel
def k_nested(a: F64, b: F64, n: int, out: F64):
    i = wp.tid()
    x = a[i]
    s = wp.float64(0.0)
    for p in range(n):
        t = x
        for q in range(p + 1):
            if q == 2:
                continue
            t = t * b[i] + wp.float64(q)
            j = 0
            while j < q:
                t = t - 0.05 * t * x
                j += 1
        s = s + wp.sin(t)
    out[i] = s


def test_nested_loops():
    a, b = uniform(-1, 1, 5), uniform(0.5, 1.2, 5)

    def ref(a, b, n):
        out = []
        for x, y in zip(a, b):
            s = 0.0
            for p in range(n):
                t = x
                for q in range(p + 1):
                    if q == 2:
                        continue
                    t = t * y + q
                    for _ in range(q):
                        t = t - 0.05 * t * x
                s += math.sin(t)
            out.append(s)
        return out

    check(k_nested, 5, [f64(a), f64(b), 4], [out64(5)], ref)


# ----------------------------------------------------------------------------- odds and ends

@wp.kernel
def k_misc(a: F64, b: F64, n: int, out: F64, gather: F64):
    i = wp.tid()
    x = a[i]
    y = b[i]
    flag = x > 0.0
    g = wp.float64(0.0)
    for k in range(n):  # reads of other threads' elements: atomic adjoints
        g = g + a[k] * b[(k + i) % n] / wp.float64(k + 1)
    gather[i] = g * x
    if not flag:
        out[i] = +x ** 3 - max(x, y) * min(x, y) / 2
        return
    z = wp.vec2d(x, y)
    z[0] += y * 3.0
    z.y *= x
    w = wp.float64(-1.0)
    k = int(0)
    while True:
        k += 1
        if k > 10:
            break
        if k % 3 == 0:
            continue
        w = w + wp.sqrt(x * wp.float64(k)) * 0.1
        if w > 0.5:
            break
    out[i] = z[0] * z[1] + w + wp.float64(k) * abs(y)


def _misc(a, b, n):
    outs, gathers = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        g = sum(a[k] * b[(k + i) % n] / (k + 1) for k in range(n))
        gathers.append(g * x)
        if not x > 0:
            outs.append(x ** 3 - max(x, y) * min(x, y) / 2)
            continue
        z0, z1 = x + 3 * y, y * x
        w, k = -1.0, 0
        while True:
            k += 1
            if k > 10:
                break
            if k % 3 == 0:
                continue
            w += math.sqrt(x * k) * 0.1
            if w > 0.5:
                break
        outs.append(z0 * z1 + w + k * abs(y))
    return outs, gathers


def test_early_kernel_return_while_true_gather_and_augmented_components():
    a = np.array([0.4, -0.7, 2.5, 0.05, -0.2, 9.0])
    b = np.array([0.3, 0.6, -1.2, 0.9, -0.4, 0.5])
    check(k_misc, 6, [f64(a), f64(b), 6], [out64(6), out64(6)], _misc)
