"""The value an atomic returns (a slot taken from a counter) on a tape: the adjoint replays the
kernel reading the element again, so a launch that changed the array is refused where a gradient
flows, never differentiated with every thread at the counter's final value."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def append_doubled(x: wp.array(dtype=wp.float64), count: wp.array(dtype=wp.int32),
                   out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if x[i] > wp.float64(0.0):
        slot = wp.atomic_add(count, 0, 1)
        out[slot] = x[i] * wp.float64(2.0)


@wp.kernel
def scaled_by_bound(x: wp.array(dtype=wp.float64), bound: wp.array(dtype=wp.float64),
                    y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    m = wp.atomic_max(bound, 0, x[i])
    y[i] = x[i] * x[i] * m


@wp.kernel
def place(x: wp.array(dtype=wp.float64), slots: wp.array(dtype=wp.int32),
          out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = slots[i]
    if s >= 0:
        out[s] = x[i] * wp.float64(2.0)


@wp.kernel
def take_slots(x: wp.array(dtype=wp.float64), count: wp.array(dtype=wp.int32),
               slots: wp.array(dtype=wp.int32)):
    i = wp.tid()
    slots[i] = -1
    if x[i] > wp.float64(0.0):
        slots[i] = wp.atomic_add(count, 0, 1)


X0 = np.array([0.5, -1.0, 1.5, 2.0])


def _append_on_tape():
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    count = wp.zeros(1, dtype=wp.int32)
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(append_doubled, 4, inputs=[x, count], outputs=[out])
    return tape, x, count, out


def test_a_slot_from_a_counter_the_launch_moved_is_refused_by_backward():
    tape, x, count, out = _append_on_tape()
    assert count.numpy()[0] == 3            # the forward ran as without a tape
    assert sorted(out.numpy()[:3]) == [1.0, 3.0, 4.0]
    with pytest.raises(wp.KernelError, match=r"wp\.atomic_add returns from array 'count'") \
            as info:
        tape.backward(grads={out: np.ones(4)})
    assert "slot = wp.atomic_add(count, 0, 1)" in str(info.value)
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))  # nothing was accumulated


def test_tape_forward_is_refused_too():
    tape, x, _, _ = _append_on_tape()
    with pytest.raises(wp.KernelError, match="atomic_add returns"):
        tape.forward({x: np.ones(4)})


def test_slots_taken_in_a_launch_of_their_own_give_the_exact_gradient():
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    count = wp.zeros(1, dtype=wp.int32)
    slots = wp.zeros(4, dtype=wp.int32)
    wp.launch(take_slots, 4, inputs=[x, count], outputs=[slots])   # not on the tape
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(place, 4, inputs=[x, slots], outputs=[out])
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    tape.backward(grads={out: w})
    s = slots.numpy()
    want = np.where(s >= 0, 2.0 * w[np.maximum(s, 0)], 0.0)   # d(w . out)/dx_i = 2 w[slot_i]
    np.testing.assert_allclose(x.grad.numpy(), want)


def test_an_atomic_that_leaves_the_array_unchanged_replays_exactly():
    # every x is below the bound: each thread got the bound, which is still there
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    bound = wp.array([3.0], dtype=wp.float64, requires_grad=True)
    y = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scaled_by_bound, 4, inputs=[x, bound], outputs=[y])
    tape.backward(grads={y: np.ones(4)})
    np.testing.assert_allclose(y.numpy(), X0 * X0 * 3.0)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * X0 * 3.0)


def test_a_moved_float_bound_is_refused_at_the_launch():
    # a float array read (the old value) and overwritten at a shared element: the launch's own
    # rerun check (record.check_replay) refuses it before anything is recorded
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    bound = wp.array([1.0], dtype=wp.float64, requires_grad=True)
    y = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with pytest.raises(wp.KernelError, match=r"array 'bound' came out different"):
        with tape:
            wp.launch(scaled_by_bound, 4, inputs=[x, bound], outputs=[y])


def test_a_captured_launch_is_checked_at_each_replay():
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    count = wp.zeros(1, dtype=wp.int32)
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with wp.ScopedCapture() as cap:
        with tape:
            wp.launch(append_doubled, 4, inputs=[x, count], outputs=[out])
    wp.capture_launch(cap.graph)
    assert count.numpy()[0] == 3
    with pytest.raises(wp.KernelError, match="atomic_add returns from array 'count'"):
        tape.backward(grads={out: np.ones(4)})


def test_without_gradients_nothing_is_refused():
    x = wp.array(X0, dtype=wp.float64)
    count = wp.zeros(1, dtype=wp.int32)
    out = wp.zeros(4, dtype=wp.float64)
    tape = wp.Tape()
    with tape:
        wp.launch(append_doubled, 4, inputs=[x, count], outputs=[out])
    tape.backward()
    assert count.numpy()[0] == 3
