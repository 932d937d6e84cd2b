"""A threaded entry Numba's parallel transform cannot compile runs as its serial twin.

Numba 0.68's array analysis (a parfor pass) asserts on a variable that holds a nested tuple of
tuples of different lengths and is assigned more than once: the adjoint of a func returning a
``vec3`` and a ``vec2`` accumulates exactly that. The launch warns once, runs the serial twin
with exact gradients, and marks the entry beside the cached module, so that a new process
(warm cache) goes straight to the serial twin without a warning or a failed compile."""
import os
import subprocess
import sys
import warnings

import numpy as np

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
from tests.runtime.test_parfor_fallback import _grad, N
out, g = _grad(np.arange(3 * N, dtype=np.float32).reshape(N, 3) / N)
print(float(g.sum()))
"""


def test_threaded_entry_falls_back_to_serial_twin():
    xv = np.arange(3 * N, dtype=np.float32).reshape(N, 3) / N
    ck = _mixed.compiled("cpu")
    name = ck.abi.entries["adjoint"]["cpu"]
    marks = ck.module.__file__ + ".serial"
    marked_before = os.path.exists(marks) and name in open(marks).read().split()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, g = _grad(xv)
    np.testing.assert_allclose(out, 2 * xv[:, 0] * xv[:, 1] + 2 * xv[:, 2], rtol=1e-6)
    want = np.stack([2 * xv[:, 1], 2 * xv[:, 0], np.full(N, 2.0)], 1)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    warned = any("parallel transform failed" in str(w.message) for w in caught)
    assert warned != marked_before  # a cold cache warns once; a warm one knows already
    assert name in open(marks).read().split()
    assert ck.entry("adjoint", "cpu") is ck.entry("adjoint", "serial")
    assert ck.entry("forward", "cpu") is not ck.entry("forward", "serial")
    out2 = subprocess.run([sys.executable, "-c", PROGRAM.format(root=ROOT)],
                          capture_output=True, text=True, timeout=900)
    assert out2.returncode == 0, out2.stderr
    np.testing.assert_allclose(float(out2.stdout.strip().splitlines()[-1]), want.sum(),
                               rtol=1e-5)
