"""The value an atomic returns (a slot taken from a counter) on a tape. An integer counter the
kernel touches only through atomics in its own body, outside loops, is handed out again by the
CPU adjoint and tangent (a copy from before the launch, threads in the forward's order): exact.
Anywhere else the replay would read the array's final value, so a launch that changed it is
refused where a gradient flows, never differentiated with every thread at the final count."""
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


W = np.array([1.0, 10.0, 100.0, 1000.0])


def test_slots_from_a_counter_give_exact_gradients():
    tape, x, count, out = _append_on_tape()
    assert count.numpy()[0] == 3
    o = out.numpy()
    slot = {v / 2.0: k for k, v in enumerate(o[:3])}   # where each positive x went
    np.testing.assert_allclose(sorted(o[:3]), [1.0, 3.0, 4.0])
    tape.backward(grads={out: W})
    want = [2.0 * W[slot[v]] if v > 0 else 0.0 for v in X0]
    np.testing.assert_allclose(x.grad.numpy(), want)
    np.testing.assert_array_equal(count.numpy(), [3])       # the backward left it as it was
    t = tape.forward({x: np.array([1.0, 2.0, 3.0, 4.0])})   # forward mode over the tape
    tan = np.zeros(4)
    for k, v in enumerate(X0):
        if v > 0:
            tan[slot[v]] = 2.0 * (k + 1)
    np.testing.assert_allclose(t[out].numpy(), tan)


@wp.kernel
def rows_per_world(x: wp.array2d(dtype=wp.float64), nnz: wp.array(dtype=wp.int32),
                   rowadr: wp.array2d(dtype=wp.int32), out: wp.array2d(dtype=wp.float64)):
    # MuJoCo Warp's transmission: each (world, actuator) takes rows from its world's counter
    w, a = wp.tid()
    if a % 3 != 1:
        n = 1 + a % 2
        r = wp.atomic_add(nnz, w, n)
        rowadr[w, a] = r
        for k in range(n):
            out[w, r + k] = x[w, a] * x[w, a] * wp.float64(k + 1)


def test_rows_from_per_world_counters_on_a_threaded_sized_launch():
    rng = np.random.default_rng(1)
    na = 300                                    # 600 threads: a launch the threads would take
    x0 = rng.uniform(0.5, 1.5, (2, na))
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    nnz = wp.zeros(2, dtype=wp.int32)
    rowadr = wp.full((2, na), -1, dtype=wp.int32)
    out = wp.zeros((2, 2 * na), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rows_per_world, (2, na), inputs=[x, nnz, rowadr], outputs=[out])
    wout = rng.uniform(-1.0, 1.0, out.shape)
    tape.backward(grads={out: wout})
    r = rowadr.numpy()
    want = np.zeros_like(x0)
    for w in range(2):
        for a in range(na):
            if a % 3 != 1:
                n = 1 + a % 2
                want[w, a] = sum(2 * x0[w, a] * (k + 1) * wout[w, r[w, a] + k] for k in range(n))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(rowadr.numpy(), r)        # the backward wrote nothing


@wp.kernel
def weighted_sum(out: wp.array2d(dtype=wp.float64), w: wp.array2d(dtype=wp.float64),
                 loss: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    wp.atomic_add(loss, 0, out[i, j] * w[i, j])


def test_hvp_through_slots_from_a_counter():
    rng = np.random.default_rng(2)
    x0 = rng.uniform(0.5, 1.5, (2, 5))
    wout = rng.uniform(-1.0, 1.0, (2, 10))
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    nnz = wp.zeros(2, dtype=wp.int32)
    rowadr = wp.full((2, 5), -1, dtype=wp.int32)
    out = wp.zeros((2, 10), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rows_per_world, (2, 5), inputs=[x, nnz, rowadr], outputs=[out])
        wp.launch(weighted_sum, (2, 10), inputs=[out, wp.array(wout, dtype=wp.float64), loss])
    v = rng.uniform(-1.0, 1.0, x0.shape)
    hv = tape.hvp(loss, {x: v})[x].numpy()
    r = rowadr.numpy()
    want = np.zeros_like(x0)        # d2/dx2 of x^2 (k + 1) w[r + k]: 2 (k + 1) w[r + k]
    for w in range(2):
        for a in range(5):
            if a % 3 != 1:
                want[w, a] = v[w, a] * sum(2 * (k + 1) * wout[w, r[w, a] + k]
                                           for k in range(1 + a % 2))
    np.testing.assert_allclose(hv, want, rtol=1e-12)


@wp.kernel
def append_in_a_loop(x: wp.array(dtype=wp.float64), n: int, count: wp.array(dtype=wp.int32),
                     out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    for k in range(n):
        slot = wp.atomic_add(count, 0, 1)
        out[slot] = x[i] * wp.float64(k + 1)


def test_a_counter_taken_in_a_loop_is_refused_by_backward():
    x = wp.array(X0, dtype=wp.float64, requires_grad=True)
    count = wp.zeros(1, dtype=wp.int32)
    out = wp.zeros(8, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(append_in_a_loop, 4, inputs=[x, 2, count], outputs=[out])
    assert count.numpy()[0] == 8
    with pytest.raises(wp.KernelError, match=r"wp\.atomic_add returns from array 'count'") \
            as info:
        tape.backward(grads={out: np.ones(8)})
    assert "slot = wp.atomic_add(count, 0, 1)" in str(info.value)
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))  # nothing was accumulated
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
