"""``enable_backward=False`` on a tape, as Warp (warn, skip the kernel's adjoint), and weft's
``wp.config.force_backward`` that differentiates such kernels anyway (docs/mujoco-warp.md), and
``weft.as_warp()``."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import weft as wp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@wp.kernel(enable_backward=False)
def square_no_backward(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * a[i] + 1.0


@wp.kernel
def triple(b: wp.array(dtype=float), c: wp.array(dtype=float)):
    i = wp.tid()
    c[i] = 3.0 * b[i]


@wp.kernel(enable_backward=False)
def count_positive(a: wp.array(dtype=float), n: wp.array(dtype=int)):
    i = wp.tid()
    if a[i] > 0.0:
        wp.atomic_add(n, 0, 1)


def _run(force):
    a = wp.array([1.0, -2.0, 0.5], dtype=float, requires_grad=True)
    b = wp.zeros(3, dtype=float, requires_grad=True)
    c = wp.zeros(3, dtype=float, requires_grad=True)
    saved = wp.config.force_backward
    wp.config.force_backward = force
    try:
        tape = wp.Tape()
        with tape:
            wp.launch(square_no_backward, 3, inputs=[a], outputs=[b])
            wp.launch(triple, 3, inputs=[b], outputs=[c])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tape.backward(grads={c: wp.array(np.ones(3, np.float32))})
    finally:
        wp.config.force_backward = saved
    return a, b, c, [str(w.message) for w in caught]


def test_warp_semantics_warn_and_skip_the_kernels_adjoint():
    a, b, c, caught = _run(False)
    np.testing.assert_allclose(c.numpy(), 3.0 * (a.numpy() ** 2 + 1.0))
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 3.0, 3.0])   # triple's adjoint ran
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 0.0, 0.0])   # square's was skipped
    assert len(caught) == 1 and "square_no_backward" in caught[0] and \
        "enable_backward=False" in caught[0] and "force_backward" in caught[0]


def test_force_backward_differentiates_the_kernel_exactly():
    a, b, c, caught = _run(True)
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(a.grad.numpy(), 3.0 * 2.0 * x)   # d(3 (x^2 + 1))/dx
    assert caught == []


def test_a_kernel_with_no_gradient_to_give_is_skipped_silently():
    # no differentiable argument that needs a gradient: no warning (the option is kept)
    a = wp.array([1.0, -2.0, 0.5], dtype=float)
    n = wp.zeros(1, dtype=int)
    tape = wp.Tape()
    with tape:
        wp.launch(count_positive, 3, inputs=[a], outputs=[n])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.backward()
    assert n.numpy()[0] == 2
    assert count_positive.options["enable_backward"] is False


@pytest.mark.parametrize("everywhere", [False, True])
def test_grad_all_arrays_carries_the_adjoint_through_arrays_without_gradients(
        monkeypatch, everywhere):
    """As Warp, a temporary made without ``requires_grad`` stops the adjoint (a constant);
    ``wp.config.grad_all_arrays`` gives it a gradient when a taped launch touches it, and a
    ``wp.copy`` under the tape too."""
    monkeypatch.setattr(wp.config, "grad_all_arrays", everywhere)
    a = wp.array([1.0, -2.0, 0.5], dtype=float, requires_grad=True)
    tmp = wp.zeros(3, dtype=float)            # the library's own buffer
    tmp2 = wp.zeros(3, dtype=float)
    c = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(triple, 3, inputs=[a], outputs=[tmp])
        wp.copy(tmp2, tmp)
        wp.launch(triple, 3, inputs=[tmp2], outputs=[c])
    tape.backward(grads={c: wp.array(np.ones(3, np.float32))})
    np.testing.assert_allclose(c.numpy(), 9.0 * a.numpy())
    np.testing.assert_allclose(a.grad.numpy(), [9.0] * 3 if everywhere else [0.0] * 3)
    assert (tmp.grad is not None) is everywhere and (tmp2.grad is not None) is everywhere


def test_as_warp_gives_weft_for_import_warp():
    code = (
        "import sys, types\n"
        "import weft\n"
        "assert weft.as_warp() is weft\n"
        "import warp as wp\n"
        "import warp.sparse\n"
        "from warp.optim.linear import cg\n"
        "assert wp is weft and warp.sparse is weft.sparse and cg is weft.optim.linear.cg\n"
        "wp.config.quiet = True\n"
        "assert weft.config.quiet is True\n"
        "weft.as_warp()\n"   # again: nothing changes
        "sys.modules['warp'] = types.ModuleType('warp')\n"   # the real Warp imported first
        "try:\n"
        "    weft.as_warp()\n"
        "except ImportError as e:\n"
        "    assert 'already imported' in str(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


@pytest.mark.parametrize("value,expected", [("1", True), ("0", False), ("", False)])
def test_force_backward_from_the_environment(value, expected):
    r = subprocess.run([sys.executable, "-c", "import weft; print(weft.config.force_backward)"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": ROOT, "WEFT_FORCE_BACKWARD": value})
    assert r.stdout.strip() == str(expected), r.stderr[-2000:]
