"""Values a loop carries that issue 33 found missing: tuple values carried through ``while`` and
``for`` loops (Warp's work-queue example).
Forward values against NumPy, adjoint and tangent against float64 central differences
(:mod:`tests.gradcheck`)."""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check

F64 = wp.float64


@wp.func
def advance(x: wp.float64, v: wp.vec2d, k: int):
    return x + F64(0.5) * wp.dot(v, v), v * F64(0.9) + wp.vec2d(x, F64(0.1)), k + 1


@wp.kernel
def tuple_state(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64),
                outv: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    s = advance(a[i], wp.vec2d(a[i], F64(1.0)), 0)
    while s[2] < 3:  # a name bound to a tuple, carried by a while loop
        s = advance(s[0] * F64(0.5), s[1], s[2])
    x, v, k = s
    for j in range(2):  # its elements, carried by a for loop
        x, v, k = advance(x, v, k)
    out[i] = x + F64(k)
    outv[i] = v


def _advance(x, v, k):
    return x + 0.5 * (v @ v), v * 0.9 + np.array([x, 0.1]), k + 1


def _tuple_state(a):
    out, outv = np.zeros(len(a)), np.zeros((len(a), 2))
    for i in range(len(a)):
        s = _advance(a[i], np.array([a[i], 1.0]), 0)
        while s[2] < 3:
            s = _advance(s[0] * 0.5, s[1], s[2])
        x, v, k = s
        for j in range(2):
            x, v, k = _advance(x, v, k)
        out[i], outv[i] = x + k, v
    return out, outv


def test_tuples_carried_through_while_and_for_loops():
    a = np.array([0.2, -0.4, 0.7])
    check(tuple_state, 3, [Arr(a, F64)], [Arr(np.zeros(3), F64), Arr(np.zeros((3, 2)), wp.vec2d)],
          _tuple_state)
