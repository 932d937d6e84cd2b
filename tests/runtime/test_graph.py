"""Graph capture as Warp's (CPU): nothing runs during capture; a replay runs the captured
launches and array operations in order on the arrays bound at capture, seeing their current
contents; launches captured inside a Tape differentiate; misuse is a clear error. Expected values
are Warp 1.19's (the same program run under Warp)."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError
from weft.runtime import background


@wp.kernel
def inc(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] + s


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_nothing_runs_during_capture_and_replays_run_in_order():
    a = wp.zeros(3, dtype=float)
    with wp.ScopedCapture() as cap:
        wp.launch(inc, 3, inputs=[a, 1.0])
        a.fill_(5.0)
        wp.launch(inc, 3, inputs=[a, 2.0])
    np.testing.assert_array_equal(a.numpy(), [0, 0, 0])        # as Warp
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7])
    a.assign(np.array([10.0, 20.0, 30.0], np.float32))
    wp.capture_launch(cap.graph)                                 # fill_ overwrites again
    np.testing.assert_array_equal(a.numpy(), [7, 7, 7])
    assert cap.graph.launches == 2


def test_replays_see_new_contents_and_copies_are_captured():
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), dtype=float)
    b = wp.zeros(3, dtype=float)
    wp.capture_begin()
    c = wp.zeros(3, dtype=float)
    wp.launch(square, 3, inputs=[x, c])
    wp.copy(b, c)
    wp.launch(inc, 3, inputs=[b, 0.5])
    graph = wp.capture_end()
    np.testing.assert_array_equal(b.numpy(), [0, 0, 0])
    for values in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]):
        x.assign(np.array(values, np.float32))
        wp.capture_launch(graph)
        eager_c = wp.zeros(3, dtype=float)
        wp.launch(square, 3, inputs=[x, eager_c])
        np.testing.assert_array_equal(b.numpy(), eager_c.numpy() + 0.5)


def test_launches_captured_inside_a_tape_differentiate():
    x = wp.array(np.array([1.0, 2.0, 3.0], np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with wp.ScopedCapture() as cap:
            wp.launch(square, 3, inputs=[x, y])
    wp.capture_launch(cap.graph)
    tape.backward(grads={y: np.ones(3, np.float32)})
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0, 9.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_capture_misuse_is_a_clear_error():
    with pytest.raises(RuntimeError, match="no graph capture is active"):
        wp.capture_end()
    with pytest.raises(LaunchError, match="takes the Graph"):
        wp.capture_launch(None)
    with pytest.raises(LaunchError):  # launch errors are raised at capture, not at replay
        with wp.ScopedCapture():
            wp.launch(inc, 4, inputs=[wp.zeros(2, dtype=float), 1.0])
    assert not wp.is_capturing()


def test_a_replay_is_one_generated_function_calling_the_bound_entries():
    a = wp.zeros(300, dtype=float)  # 300 threads: the parallel entry
    b = wp.zeros(4, dtype=float)    # 4 threads: the serial entry
    with wp.ScopedCapture() as cap:
        wp.launch(inc, 300, inputs=[a, 1.0])
        b.fill_(2.0)
        wp.launch(inc, 4, inputs=[b, 0.5])
    src = cap.graph.source()
    assert src.splitlines()[0] == "def replay():"
    assert [line.strip() for line in src.splitlines()[1:]] == [
        "op0(a0_0, a0_1, a0_2)", "op1()", "op2(a2_0, a2_1, a2_2)"]
    ops = cap.graph.ops
    assert ops[0][0] is inc.entry("forward", "cpu")
    # the serial twin, or the threaded entry's chunk over the whole launch where that has
    # machine code already, here or in the disk cache (background.serial_entry)
    small, ck = ops[2][0], inc.compiled("cpu")
    assert small is inc.entry("forward", "serial") or \
        small.dispatcher is background.whole_launch(ck, ck.entry("forward", "cpu")).dispatcher
    wp.capture_launch(cap.graph)
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(a.numpy(), 2.0)
    np.testing.assert_array_equal(b.numpy(), 2.5)


@wp.kernel
def countdown(n: wp.array(dtype=int), total: wp.array(dtype=float), x: wp.array(dtype=float)):
    # one loop iteration: total += x[0]; x[0] *= 0.5; n -= 1 (the loop's condition)
    total[0] = total[0] + x[0]
    x[0] = x[0] * 0.5
    n[0] = n[0] - 1


@wp.kernel
def add_one(a: wp.array(dtype=float)):
    a[0] = a[0] + 1.0


def _loop(n, total, x, outer):
    """A while loop over ``countdown`` that also runs a nested capture_if on ``outer``."""
    wp.capture_while(n, countdown_step, n=n, total=total, x=x, outer=outer)


def countdown_step(n, total, x, outer):
    wp.launch(countdown, 1, inputs=[n, total, x])
    wp.capture_if(outer, on_true=lambda: wp.launch(add_one, 1, inputs=[total]),
                  on_false=lambda: wp.launch(add_one, 1, inputs=[x]))


def _expected(count, x0, flag):
    total, x = 0.0, x0
    for _ in range(count):
        total += x
        x *= 0.5
        if flag:
            total += 1.0
        else:
            x += 1.0
    return total, x


@pytest.mark.parametrize("count, flag", [(3, 1), (0, 1), (4, 0)])
def test_capture_while_and_if_replay_as_eager_runs(count, flag):
    def arrays():
        return (wp.array([count], dtype=wp.int32), wp.zeros(1, dtype=float),
                wp.array([2.0], dtype=float), wp.array([flag], dtype=wp.int32))
    # eager (no capture): runs at once
    n, total, x, outer = arrays()
    _loop(n, total, x, outer)
    want = _expected(count, 2.0, flag)
    np.testing.assert_allclose([total.numpy()[0], x.numpy()[0]], want, rtol=1e-6)
    assert n.numpy()[0] == 0
    # captured: nothing runs at capture; each replay reads the conditions then
    n, total, x, outer = arrays()
    with wp.ScopedCapture() as cap:
        _loop(n, total, x, outer)
    assert (n.numpy()[0], total.numpy()[0], x.numpy()[0]) == (count, 0.0, 2.0)
    wp.capture_launch(cap.graph)
    np.testing.assert_allclose([total.numpy()[0], x.numpy()[0]], want, rtol=1e-6)
    # replayed again with new conditions: the loop count and the branch follow them
    n.assign(np.array([2], np.int32))
    outer.assign(np.array([1 - flag], np.int32))
    total.zero_()
    x.assign(np.array([2.0], np.float32))
    wp.capture_launch(cap.graph)
    np.testing.assert_allclose([total.numpy()[0], x.numpy()[0]], _expected(2, 2.0, 1 - flag),
                               rtol=1e-6)


def test_capture_while_body_may_be_a_graph():
    a = wp.zeros(1, dtype=float)
    n = wp.array([3], dtype=wp.int32)
    with wp.ScopedCapture() as body:
        wp.launch(add_one, 1, inputs=[a])
        wp.launch(countdown, 1, inputs=[n, wp.zeros(1, dtype=float), wp.zeros(1, dtype=float)])
    wp.capture_while(n, body.graph)
    assert a.numpy()[0] == 3.0 and n.numpy()[0] == 0


def test_capture_conditions_must_be_int32_arrays():
    with pytest.raises(TypeError, match="int32"):
        wp.capture_while(wp.zeros(1, dtype=float), lambda: None)
    with pytest.raises(TypeError, match="int32"):
        wp.capture_if(np.ones(1, np.int32), on_true=lambda: None)
    with pytest.raises(TypeError, match="callable or a Graph"):
        wp.capture_while(wp.zeros(1, dtype=wp.int32), 3)
