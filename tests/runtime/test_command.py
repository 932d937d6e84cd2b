"""Warp's launch objects (``wp.launch(..., record_cmd=True)`` -> ``wp.Launch``): checked when
made, run by ``.launch()``, parameters and dimensions changed in place; not recorded on tapes;
captured inside graph captures (Warp 1.19's behaviour)."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = y[i] + a * x[i]


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_record_cmd_checks_now_and_runs_on_launch():
    x = wp.array(np.arange(4, dtype=np.float32), dtype=float)
    y = wp.zeros(4, dtype=float)
    cmd = wp.launch(axpy, 4, inputs=[x, y, 2.0], record_cmd=True)
    assert isinstance(cmd, wp.Launch)
    np.testing.assert_array_equal(y.numpy(), 0.0)  # nothing ran
    cmd.launch()
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), 4.0 * np.arange(4))


def test_parameters_and_dimensions_change_in_place():
    x = wp.array(np.ones(8, np.float32), dtype=float)
    y = wp.zeros(8, dtype=float)
    y2 = wp.zeros(8, dtype=float)
    cmd = wp.launch(axpy, 8, inputs=[x, y, 1.0], record_cmd=True)
    cmd.set_param_by_name("a", 3.0)
    cmd.launch()
    np.testing.assert_array_equal(y.numpy(), 3.0)
    cmd.set_param_at_index(1, y2)
    cmd.set_dim(5)
    cmd.launch()
    np.testing.assert_array_equal(y2.numpy(), [3, 3, 3, 3, 3, 0, 0, 0])
    cmd.set_params([x, y2, -1.0])
    cmd.set_dim(8)
    cmd.launch()
    np.testing.assert_array_equal(y2.numpy(), [2, 2, 2, 2, 2, -1, -1, -1])


def test_bad_changes_are_refused_when_made_and_leave_the_command_unchanged():
    x = wp.array(np.ones(4, np.float32), dtype=float)
    y = wp.zeros(4, dtype=float)
    cmd = wp.launch(axpy, 4, inputs=[x, y, 1.0], record_cmd=True)
    with pytest.raises(ValueError, match="Argument 'b' not found in kernel 'axpy'"):
        cmd.set_param_by_name("b", 1.0)
    with pytest.raises(wp.LaunchError, match="no parameter at index 7"):
        cmd.set_param_at_index(7, 1.0)
    with pytest.raises(wp.LaunchError, match="argument 'x'"):
        cmd.set_param_by_name("x", wp.zeros(4, dtype=wp.vec3))
    with pytest.raises(wp.LaunchError, match="dimension 0 has 4 elements"):
        cmd.set_dim(9)  # y and x are indexed by the thread on every thread
    cmd.launch()  # still the valid launch
    np.testing.assert_array_equal(y.numpy(), 1.0)
    with pytest.raises(wp.LaunchError):
        wp.launch(axpy, 4, inputs=[x, y, "no"], record_cmd=True)


def test_command_launches_are_not_recorded_on_a_tape():
    x = wp.array(np.array([1.0, 2.0], np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    cmd = wp.launch(square, 2, inputs=[x, y], record_cmd=True)
    tape = wp.Tape()
    with tape:
        cmd.launch()
    assert tape.launches == []
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])


def test_command_launched_inside_a_capture_is_captured():
    x = wp.array(np.ones(3, np.float32), dtype=float)
    y = wp.zeros(3, dtype=float)
    cmd = wp.launch(axpy, 3, inputs=[x, y, 1.0], record_cmd=True)
    with wp.ScopedCapture() as cap:
        cmd.launch()
    np.testing.assert_array_equal(y.numpy(), 0.0)
    for _ in range(3):
        wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(y.numpy(), 3.0)


def test_adjoint_command_accumulates_the_adjoint():
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    y.grad.fill_(1.0)
    cmd = wp.launch(square, 3, inputs=[x, y], adjoint=True, record_cmd=True)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    cmd.launch()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


@wp.kernel
def arange(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


def test_an_empty_command_is_filled_in_then_launched():
    out = wp.zeros(10, dtype=int)
    cmd = wp.Launch(arange, "cpu")  # Warp's form: no threads, no arguments yet
    cmd.set_dim(5)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    assert out.numpy().tolist() == [0, 1, 2, 3, 4, 0, 0, 0, 0, 0]
    cmd.set_dim(10)
    cmd.launch()
    assert out.numpy().tolist() == list(range(10))
    unset = wp.Launch(arange, "cpu")
    unset.set_dim(3)
    with pytest.raises(wp.LaunchError, match="array 'out' .* it is None"):  # a null array
        unset.launch()
