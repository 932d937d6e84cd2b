"""Gradients stay exact when the memory a recorded launch read is written before backward: by
the same launch under another parameter, by a later launch, or by wp.copy/assign/fill_/zero_
(wp.config.overwrite_gradients = "snapshot"); "error" and "warn" name the launch, the array
and the writer; writes through numpy views that weft cannot see are refused at backward."""
import warnings

import numpy as np
import pytest

import weft as wp


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def sine(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sin(x[i])


@wp.kernel
def triple(y: wp.array(dtype=float), x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 3.0 * y[i]


X0 = np.array([0.5, 2.0], np.float32)


@pytest.fixture
def mode():
    saved = wp.config.overwrite_gradients
    yield lambda m: setattr(wp.config, "overwrite_gradients", m)
    wp.config.overwrite_gradients = saved


def test_same_array_as_input_and_output_of_one_launch():
    x = wp.array(X0, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 2, inputs=[x], outputs=[x])
    np.testing.assert_allclose(x.numpy(), X0 ** 2)
    tape.backward(grads={x: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * X0)  # [1, 4]; it was [0.5, 8]


def test_array_overwritten_by_a_later_launch():
    x = wp.array(X0, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sine, 2, inputs=[x], outputs=[y])
        wp.launch(triple, 2, inputs=[y], outputs=[x])  # x = 3 sin(x)
    tape.backward(grads={x: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.cos(X0), rtol=1e-6)


def test_small_launch_outside_the_tape_still_protects_what_the_tape_reads():
    # the small-launch fast path must not skip the protection: the tape holds a record
    # reading x while no tape is recording
    x = wp.array(X0, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    wp.launch(triple, 2, inputs=[wp.zeros(2, dtype=float)], outputs=[wp.zeros(2, dtype=float)])
    tape = wp.Tape()
    with tape:
        wp.launch(sine, 2, inputs=[x], outputs=[y])
    wp.launch(triple, 2, inputs=[y], outputs=[x])  # small: the fast path's kind of launch
    tape.backward(grads={y: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), np.cos(X0), rtol=1e-6)


@pytest.mark.parametrize("write", ["assign", "fill_", "zero_", "copy"])
def test_array_overwritten_by_array_operations_before_backward(write):
    x = wp.array(X0, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sine, 2, inputs=[x], outputs=[y])
    {"assign": lambda: x.assign(np.array([7.0, 8.0], np.float32)),
     "fill_": lambda: x.fill_(5.0), "zero_": x.zero_,
     "copy": lambda: wp.copy(x, wp.array(np.array([9.0, 9.0], np.float32)))}[write]()
    tape.backward(grads={y: np.ones(2, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), np.cos(X0), rtol=1e-6)


def test_error_and_warn_modes_name_the_launch_the_array_and_the_writer(mode):
    mode("error")
    x = wp.array(X0, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sine, 2, inputs=[x], outputs=[y])
        with pytest.raises(wp.LaunchError, match="read by the launch of kernel 'sine'.*"
                           "overwritten by a launch of kernel 'triple'"):
            wp.launch(triple, 2, inputs=[y], outputs=[x])
        with pytest.raises(wp.LaunchError, match="reads argument 'x' and writes argument 'y', "
                           "which share memory"):
            wp.launch(square, 2, inputs=[x], outputs=[x])
    mode("warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x.fill_(1.0)
    assert any("read by the launch of kernel 'sine'" in str(w.message) for w in caught)


def test_write_through_numpy_view_is_refused_at_backward():
    x = wp.array(X0, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    view = x.numpy()
    tape = wp.Tape()
    with tape:
        wp.launch(sine, 2, inputs=[x], outputs=[y])
    view[0] = 42.0
    with pytest.raises(wp.LaunchError, match="modified through numpy"):
        tape.backward(grads={y: np.ones(2, np.float32)})


def test_reset_tape_stops_protecting():
    x = wp.array(X0, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sine, 2, inputs=[x], outputs=[y])
    tape.reset()
    x.fill_(3.0)  # nothing to protect: no snapshot, no error
    assert not tape.launches
