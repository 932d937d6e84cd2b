"""CPU atomics under parallel launches that collide, and their pure-Python fallback."""
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from weft.stdlib.atomics import (atomic_add, atomic_cas, atomic_exch, atomic_max, atomic_min,
                                 atomic_sub)

N = 200_000


@numba.njit(parallel=True)
def _add_into_slots(out, n, value):
    for i in numba.prange(n):
        atomic_add(out, i % out.shape[0], value)


@numba.njit(parallel=True)
def _sub_2d(out, n):
    for i in numba.prange(n):
        atomic_sub(out, (i % 3, (i // 3) % 2), 1.0)


@numba.njit(parallel=True)
def _counter(counter, olds):
    for i in numba.prange(olds.shape[0]):
        olds[i] = atomic_add(counter, 0, 1)


@numba.njit(parallel=True)
def _minmax(values, lo, hi):
    for i in numba.prange(values.shape[0]):
        atomic_min(lo, 0, values[i])
        atomic_max(hi, 0, values[i])


@numba.njit
def _exch_cas(a):
    old1 = atomic_exch(a, 0, 5)
    old2 = atomic_cas(a, 0, 5, 9)   # matches: stores 9
    old3 = atomic_cas(a, 0, 5, 11)  # does not match
    return old1, old2, old3, a[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint32,
                                   np.uint64])
def test_add_collides_without_losing_updates(dtype):
    out = np.zeros(7, dtype)
    _add_into_slots(out, N, dtype(1))
    expected = np.bincount(np.arange(N) % 7, minlength=7).astype(dtype)
    np.testing.assert_array_equal(out, expected)


def test_sub_with_tuple_index_on_a_strided_view():
    base = np.zeros((3, 4), np.float64)
    view = base[:, ::2]  # non-contiguous (3, 2) view
    _sub_2d(view, 6000)
    np.testing.assert_array_equal(view, np.full((3, 2), -1000.0))
    assert not base[:, 1::2].any()


def test_returned_old_values_are_a_permutation():
    counter = np.zeros(1, np.int64)
    olds = np.empty(50_000, np.int64)
    _counter(counter, olds)
    assert counter[0] == 50_000
    np.testing.assert_array_equal(np.sort(olds), np.arange(50_000))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_min_max(dtype):
    values = (np.random.default_rng(1).random(100_000) * 1000 - 500).astype(dtype)
    lo = np.array([dtype(10 ** 6)])
    hi = np.array([dtype(-10 ** 6)])
    _minmax(values, lo, hi)
    assert lo[0] == values.min() and hi[0] == values.max()


def test_exch_and_cas():
    a = np.array([3], np.int32)
    assert _exch_cas(a) == (3, 5, 9, 9)
    f = np.array([1.5])
    assert _exch_cas.py_func(f) == (1.5, 5, 9, 9)


def test_python_fallback_without_jit():
    code = ("import numpy as np\n"
            "from tests.stdlib.test_atomics import _add_into_slots, _counter\n"
            "out = np.zeros(3, np.float32); _add_into_slots(out, 30, np.float32(2))\n"
            "c = np.zeros(1, np.int64); o = np.empty(5, np.int64); _counter(c, o)\n"
            "print(out.tolist(), c[0], sorted(o.tolist()))\n")
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=root, timeout=300)
    assert r.stdout.strip() == "[20.0, 20.0, 20.0] 5 [0, 1, 2, 3, 4]", r.stderr
