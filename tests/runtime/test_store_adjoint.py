"""The adjoint of a store ``a[i] = v`` zeroes the stored element's gradient, as Warp's
``adj_array_store``: exact when an element is written twice (in a loop, or by two launches
reusing a buffer); ``retain_grad=True`` arrays keep theirs."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError


@wp.kernel
def write_in_loop(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    for k in range(3):
        out[i] = x[i] * float(k)  # only the last write survives: out = 2 x


@wp.kernel
def scale(x: wp.array(dtype=float), c: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * c


@wp.kernel
def square_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i] + y[i]


def test_overwritten_element_gets_no_gradient():
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(write_in_loop, 2, inputs=[x], outputs=[out])
    tape.backward(grads={out: np.ones(2)})
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(out.grad.numpy(), [0.0, 0.0])  # consumed, as in Warp


@wp.kernel
def write_all_in_one_thread(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    for b in range(out.shape[0]):
        out[b] = x[b] * x[b]  # stores at other threads' elements: reset all the same


def test_stores_at_any_index_reset_the_gradient():
    """Warp 1.19 resets at every store; weft used to only at the thread's own element, and a
    buffer written twice from a loop had its gradient counted twice."""
    x = wp.array([0.5, 1.5], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(2):
            wp.launch(write_all_in_one_thread, 1, inputs=[x], outputs=[out])
    tape.backward(grads={out: np.ones(2)})
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 3.0])
    np.testing.assert_allclose(out.grad.numpy(), [0.0, 0.0])


def test_reused_buffer_across_launches():
    # y = 2x; z = 3y; y = 5z (the buffer y written again); loss = sum(y) = 30 sum(x)
    x = wp.array([1.0, -1.0, 0.5], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    z = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale, 3, inputs=[x, 2.0], outputs=[y])
        wp.launch(scale, 3, inputs=[y, 3.0], outputs=[z])
        wp.launch(scale, 3, inputs=[z, 5.0], outputs=[y])
    tape.backward(grads={y: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0, 30.0])


def test_retain_grad_keeps_the_stored_gradient():
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True, retain_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale, 2, inputs=[x, 3.0], outputs=[y])
    tape.backward(grads={y: np.array([1.0, 10.0])})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 30.0])
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 10.0])
    y2 = wp.zeros(2, dtype=float, requires_grad=True, retain_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_into, 2, inputs=[x], outputs=[y2])
    with pytest.raises(LaunchError, match="retain_grad"):
        tape.backward(grads={y2: np.ones(2)})


@wp.kernel
def add_twice(x: wp.array(dtype=float), buf: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(buf, 0, x[i] * 2.0)


@wp.kernel
def square_into_loss(buf: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, buf[0] * buf[0])


@pytest.mark.parametrize("reset", ["zero_", "fill_", "assign"])
def test_a_buffer_reset_each_step_counts_each_step_once(reset):
    """A buffer zeroed (``zero_``, ``fill_(0)``, ``assign`` from numpy) and accumulated into
    again once per step (MuJoCo Warp's force buffers): the reset ends the old value's
    influence, so backward resets the buffer's gradient there. weft (as Warp) kept the later
    steps' gradient in the earlier ones' (72 here instead of 48)."""
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    buf = wp.zeros(1, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(2):
            if reset == "zero_":
                buf.zero_()
            elif reset == "fill_":
                buf.fill_(0.0)
            else:
                buf.assign(np.zeros(1, np.float32))
            wp.launch(add_twice, 2, inputs=[x, buf])
            wp.launch(square_into_loss, 1, inputs=[buf, loss])
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy(), [72.0])           # 2 (2 (x0 + x1))^2
    np.testing.assert_allclose(x.grad.numpy(), [48.0, 48.0])   # 2 * 2 (2 * 3) * 2
    tape.zero()
    tangents = tape.forward({x: np.array([1.0, 0.0], np.float32)})
    np.testing.assert_allclose(tangents[loss].numpy(), [48.0])
    hv = tape.hvp(loss, {x: np.array([1.0, 0.0], np.float32)})
    np.testing.assert_allclose(hv[x].numpy(), [16.0, 16.0])    # d2/dx0 dxj of 8 (x0 + x1)^2


@pytest.mark.parametrize("reset", ["zero_", "assign"])
def test_an_input_set_at_the_start_of_the_tape_keeps_its_gradient(reset):
    """Nothing recorded had read the array before it was set: its gradient is the gradient with
    respect to the values set (as Warp), not reset."""
    x = wp.zeros(2, dtype=float, requires_grad=True)
    buf = wp.zeros(1, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        if reset == "zero_":
            x.zero_()
        else:
            x.assign(np.array([1.0, 2.0], np.float32))
        wp.launch(add_twice, 2, inputs=[x, buf])
        wp.launch(square_into_loss, 1, inputs=[buf, loss])
    tape.backward(loss)
    s = x.numpy().sum()
    np.testing.assert_allclose(x.grad.numpy(), [8.0 * s] * 2)   # d (2 (x0 + x1))^2
