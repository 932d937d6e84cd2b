"""Threaded CPU entries: a chunk function over ``[_lo, _hi)`` handed to Numba's threading layer
(``_wk.parallel_for``), not a parfor.

The kernel here broke the parfor entries: Numba 0.68's array analysis (a parfor pass) asserts
on a variable holding a nested tuple of tuples of different lengths assigned more than once,
which the adjoint of a func returning a ``vec3`` and a ``vec2`` accumulates. Its threaded
forward and adjoint now compile and run with exact values and gradients, without a warning, in
this process and in a new one (warm cache); per-thread accumulation buffers are summed exactly
once; an exception raised inside a thread is reported after the launch."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import weft as wp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
N = 300  # above wp.config.serial_threshold: the threaded entry is asked for


@wp.func
def _two(a: wp.vec3):
    return a * 2.0, wp.vec2(a[0], a[1])


@wp.kernel
def _mixed(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    p, q = _two(x[i])
    out[i] = p[0] * q[1] + p[2]


def _grad(xv):
    x = wp.array(xv, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_mixed, N, inputs=[x], outputs=[out])
    tape.backward(grads={out: np.ones(N, np.float32)})
    return out.numpy(), x.grad.numpy()


PROGRAM = r"""
import sys, warnings
sys.path.insert(0, {root!r})
import numpy as np
warnings.simplefilter("error")  # no warning, no failed compile this time
from tests.runtime.test_threaded_entries import _grad, N
out, g = _grad(np.arange(3 * N, dtype=np.float32).reshape(N, 3) / N)
print(float(g.sum()))
"""


def test_threaded_entries_compile_where_parfors_failed():
    xv = np.arange(3 * N, dtype=np.float32).reshape(N, 3) / N
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, g = _grad(xv)
    np.testing.assert_allclose(out, 2 * xv[:, 0] * xv[:, 1] + 2 * xv[:, 2], rtol=1e-6)
    want = np.stack([2 * xv[:, 1], 2 * xv[:, 0], np.full(N, 2.0)], 1)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    ck = _mixed.compiled("cpu")
    for kind in ("forward", "adjoint"):
        fn = ck.entry(kind, "cpu")
        assert fn is not ck.entry(kind, "serial")
        assert fn in ck.called and not fn.targetoptions.get("parallel")
        assert "_wk.parallel_for(" in _mixed.source(kind)
    out2 = subprocess.run([sys.executable, "-c", PROGRAM.format(root=ROOT)],
                          capture_output=True, text=True, timeout=900)
    assert out2.returncode == 0, out2.stderr
    np.testing.assert_allclose(float(out2.stdout.strip().splitlines()[-1]), want.sum(),
                               rtol=1e-5)


@wp.kernel
def _scatter(idx: wp.array(dtype=int), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, idx[i], w[i])


def test_private_buffers_summed_once_per_launch():
    # every thread but the first adds into its own copy of out; the copies are summed after the
    # launch: the totals are exact (integers in float32) for any thread count
    import numba
    n = 5000
    idx = np.arange(n, dtype=np.int32) % 7
    w = (np.arange(n) % 5).astype(np.float32)
    want = np.bincount(idx, weights=w, minlength=7)
    for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
        numba.set_num_threads(threads)
        try:
            out = wp.zeros(7, dtype=float)
            wp.launch(_scatter, n, inputs=[wp.array(idx, dtype=int), wp.array(w, dtype=float)],
                      outputs=[out])
            wp.launch(_scatter, n, inputs=[wp.array(idx, dtype=int), wp.array(w, dtype=float)],
                      outputs=[out])
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        np.testing.assert_array_equal(out.numpy(), 2 * want)


def test_parallel_for_reports_a_failing_thread():
    import numba

    from weft.native import helpers as _wk

    @_wk.chunk
    @numba.njit
    def body(lo, hi, out, bad):
        for i in range(lo, hi):
            if i == bad:
                raise ValueError("bad index")
            out[i] = i

    @numba.njit
    def run(out, bad):
        _wk.parallel_for(body, out.shape[0], (out, bad))

    out = np.zeros(1000, np.int64)
    run(out, -1)
    np.testing.assert_array_equal(out, np.arange(1000))
    with pytest.raises(RuntimeError, match="kernel thread raised"):
        run(out, 999)


def test_reduce_private_any_layout():
    # the copies are added in order into C-contiguous arrays (by the threads) and strided
    # views (in a loop); the adjoint arrays of sliced views are strided
    import numba

    from weft.native import helpers as _wk

    @numba.njit
    def run(a):
        ok = _wk.private_ok(a)
        acc = _wk.private_buffer(a, ok)
        for w in range(acc.shape[0]):
            acc[w] = w + 1.0
        _wk.reduce_private(a, acc)
        return acc.shape[0]

    base = np.ones((6, 4), np.float32)
    rows = run(base)
    np.testing.assert_array_equal(base, 1.0 + rows * (rows + 1) / 2)
    strided = np.ones((6, 4), np.float32)
    rows = run(strided[::2])
    np.testing.assert_array_equal(strided[::2], 1.0 + rows * (rows + 1) / 2)
    np.testing.assert_array_equal(strided[1::2], 1.0)
