"""``assert`` in kernels, as Warp: checked in debug builds (a failure raises
:class:`weft.KernelAssertionError` after the launch, naming the file, line and source), not
checked in release builds; derivatives are unaffected."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def square_nonnegative(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    assert a[i] >= 0.0, "a must be nonnegative"
    out[i] = a[i] * a[i]


@pytest.fixture
def debug_mode():
    before = wp.config.mode
    wp.config.mode = "debug"
    yield
    wp.config.mode = before


def _run(values):
    a = wp.array(np.array(values, dtype=np.float32), requires_grad=True)
    out = wp.zeros(len(values), requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_nonnegative, dim=len(values), inputs=[a, out])
    tape.backward(grads={out: wp.ones(len(values))})
    return out.numpy(), a.grad.numpy()


def test_release_builds_do_not_check():
    out, grad = _run([-1.0, 2.0])
    np.testing.assert_array_equal(out, [1.0, 4.0])
    np.testing.assert_array_equal(grad, [-2.0, 4.0])


def test_debug_builds_raise_naming_the_assert(debug_mode):
    out, grad = _run([0.5, 2.0])  # holds: values and gradients as in release
    np.testing.assert_array_equal(out, [0.25, 4.0])
    np.testing.assert_array_equal(grad, [1.0, 4.0])
    with pytest.raises(wp.KernelAssertionError, match=r"assertion failed\n.*test_assert.py:13: "
                       r"assert a\[i\] >= 0.0"):
        _run([1.0, -2.0])
