"""wp.loop: gradients through a checkpointed loop equal (bitwise: the kernels are deterministic)
those of recording every step, for several checkpoint counts and both schedules, count 0 and
1 included; parameters read by the body get gradients; forward mode through tape.forward;
PyTree states; the memory statistics; errors."""
import dataclasses

import numpy as np
import pytest

import weft as wp
from weft.autodiff.loop import LoopNode

from .ops import arr, dot, f64

N = 3
X0 = np.array([0.5, -1.0, 1.5])
V0 = np.array([0.1, 0.3, -0.2])
DRAG = np.array([0.2, 0.05, 0.4])
W = np.array([1.0, -2.0, 0.5])


@wp.kernel
def step(x: wp.array(dtype=f64), v: wp.array(dtype=f64), drag: wp.array(dtype=f64),
         dt: f64, x_out: wp.array(dtype=f64), v_out: wp.array(dtype=f64)):
    i = wp.tid()
    a = -0.5 * x[i] * x[i] * x[i] - drag[i] * v[i]
    vn = v[i] + a * dt
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


def make_body(drag, dt=0.1):
    def body(i, s):
        x, v = s
        xn, vn = wp.empty_like(x), wp.empty_like(v)
        wp.launch(step, dim=N, inputs=[x, v, drag, dt], outputs=[xn, vn])
        return (xn, vn)
    return body


def ping_pong_body(drag, dt=0.1):
    bufs = [(wp.zeros(N, dtype=f64, requires_grad=True), wp.zeros(N, dtype=f64,
                                                                   requires_grad=True))
            for _ in range(2)]

    def body(i, s):
        out = bufs[(i + 1) % 2]
        wp.launch(step, dim=N, inputs=[s[0], s[1], drag, dt], outputs=list(out))
        return out
    return body


def run(count, mode, checkpoints=None, schedule="uniform", body_of=make_body):
    """Tape of loss = <x_n, W> + <v_n, W> after ``count`` steps, each recorded ("full") or
    through wp.loop."""
    x0, v0, drag = arr(X0, True), arr(V0, True), arr(DRAG, True)
    body = body_of(drag)
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    w = arr(W)
    tape = wp.Tape()
    with tape:
        if mode == "full":
            s = (x0, v0)
            for i in range(count):
                s = body(i, s)
        else:
            s = wp.loop(body, (x0, v0), count, checkpoints=checkpoints, schedule=schedule)
        wp.launch(dot, dim=N, inputs=[s[0], w], outputs=[loss])
        wp.launch(dot, dim=N, inputs=[s[1], w], outputs=[loss])
    return tape, (x0, v0, drag), s, loss


def grads(count, mode, **kw):
    tape, ins, s, loss = run(count, mode, **kw)
    tape.backward(loss)
    return [a.grad.numpy().copy() for a in ins], loss.numpy()[0], tape


CASES = [(0, None, "uniform"), (1, None, "uniform"), (1, 1, "revolve"), (2, 1, "uniform"),
         (7, None, "uniform"), (7, 1, "uniform"), (7, 3, "uniform"), (7, 7, "uniform"),
         (7, 20, "uniform"), (7, 1, "revolve"), (7, 2, "revolve"), (7, 3, "revolve"),
         (12, None, "revolve")]


@pytest.mark.parametrize("count,k,schedule", CASES)
def test_gradients_equal_full_recording(count, k, schedule):
    ref, ref_loss, _ = grads(count, "full")
    got, loss, tape = grads(count, "loop", checkpoints=k, schedule=schedule)
    assert loss == ref_loss
    for r, g in zip(ref, got):
        assert np.array_equal(r, g)
    node = tape.launches[0]
    assert isinstance(node, LoopNode) and len(tape.launches) == 3
    if count:
        assert np.any(got[2] != 0)  # the drag parameter got its gradient


def test_gradient_against_finite_differences():
    g, _, _ = grads(9, "loop")
    h = 1e-6
    for k in range(N):
        e = np.zeros(N)
        e[k] = h
        vals = []
        for sign in (1, -1):
            global DRAG
            saved = DRAG
            DRAG = saved + sign * e
            try:
                vals.append(run(9, "loop")[3].numpy()[0])
            finally:
                DRAG = saved
        assert np.isclose(g[2][k], (vals[0] - vals[1]) / (2 * h), rtol=1e-6, atol=1e-9)


def test_ping_pong_buffers_and_outputs_untouched_by_backward():
    ref, _, _ = grads(8, "full", body_of=ping_pong_body)
    tape, ins, s, loss = run(8, "loop", checkpoints=3, body_of=ping_pong_body)
    before = [a.numpy().copy() for a in s]
    tape.backward(loss)
    for r, a in zip(ref, ins):
        assert np.array_equal(r, a.grad.numpy())
    for b, a in zip(before, s):
        assert np.array_equal(b, a.numpy())  # the loop returned copies


@pytest.mark.parametrize("count,k,schedule", [(0, None, "uniform"), (1, None, "uniform"),
                                              (6, 2, "uniform"), (6, 3, "revolve")])
def test_forward_mode_equals_full_recording(count, k, schedule):
    seeds = {"x": np.array([1.0, 0.0, -1.0]), "drag": np.array([0.5, 1.0, 0.0])}
    out = []
    for mode in ("full", "loop"):
        tape, (x0, v0, drag), s, loss = run(count, mode, checkpoints=k, schedule=schedule)
        t = tape.forward({x0: seeds["x"], drag: seeds["drag"]})
        states = [t[a].numpy().copy() for a in s] if count else []  # (count 0: not written)
        out.append([t[loss].numpy().copy()] + states)
        tape.backward(loss)  # the dot-product test
        assert np.isclose(t[loss].numpy()[0], np.dot(seeds["x"], x0.grad.numpy()) +
                          np.dot(seeds["drag"], drag.grad.numpy()), rtol=1e-12)
    for r, g in zip(*out):
        assert np.allclose(r, g, rtol=1e-13, atol=0)


def test_backward_twice_and_tape_zero_clears_parameters():
    tape, (x0, v0, drag), s, loss = run(10, "loop", checkpoints=3, schedule="revolve")
    tape.backward(loss)
    first = drag.grad.numpy().copy()
    tape.zero()
    assert not drag.grad.numpy().any() and not x0.grad.numpy().any()
    tape.backward(loss)
    assert np.array_equal(first, drag.grad.numpy())
    jac = tape.jacobian([drag], [loss], mode="rev")  # one backward per output
    assert np.allclose(jac.ravel(), first)


def test_parameter_overwritten_after_the_loop():
    ref, _, _ = grads(6, "full")
    tape, (x0, v0, drag), s, loss = run(6, "loop", checkpoints=2)
    with tape:
        drag.assign(np.zeros(N))  # recorded write: the loop's re-runs read a snapshot
    tape.backward(loss)
    assert np.array_equal(ref[0], x0.grad.numpy())


@dataclasses.dataclass
class State:
    x: wp.array(dtype=f64)
    v: wp.array(dtype=f64)
    t: float = 0.0


def test_pytree_state_with_constants():
    x0, v0, drag = arr(X0, True), arr(V0, True), arr(DRAG, True)
    inner = make_body(drag)

    def body(i, s):
        x, v = inner(i, (s.x, s.v))
        return State(x, v, s.t + 0.1)

    tape = wp.Tape()
    with tape:
        out = wp.loop(body, State(x0, v0), 5, checkpoints=2)
    assert isinstance(out, State) and np.isclose(out.t, 0.5)
    tape.backward(grads=[(out, State(W, W))])
    ref, _, _ = grads(5, "full")
    assert np.array_equal(ref[0], x0.grad.numpy()) and np.array_equal(ref[2], drag.grad.numpy())
    assert np.array_equal(tape.gradients[State(x0, v0)].x.numpy(), x0.grad.numpy())


def test_without_tape_just_runs():
    x0, v0, drag = arr(X0), arr(V0), arr(DRAG)
    body = make_body(drag)
    s = wp.loop(body, (x0, v0), 4)
    r = (x0, v0)
    for i in range(4):
        r = body(i, r)
    assert np.array_equal(s[0].numpy(), r[0].numpy())
    assert wp.loop(body, (x0, v0), 0)[0] is x0


def test_memory_statistics():
    tape, *_ = run(100, "loop")
    st = tape.launches[0].stats
    assert st["checkpoints"] == 10 and st["stored_peak"] == 10 and st["recorded_peak"] == 10
    assert st["stored_bytes_peak"] == 10 * 2 * N * 8
    assert st["rerun_steps"] == 100
    tape, *_ = run(100, "loop", checkpoints=4, schedule="revolve")
    st = tape.launches[0].stats
    assert st["stored_peak"] <= 4 and st["recorded_peak"] == 1
    tape.backward(tape.launches[-1].args[-1])
    assert st["rerun_steps_done"] == st["rerun_steps"]
    assert st["stored_bytes_peak"] <= 4 * 2 * N * 8


def test_errors():
    x0, v0, drag = arr(X0, True), arr(V0, True), arr(DRAG, True)
    body = make_body(drag)
    with pytest.raises(ValueError, match="count must be an int >= 0"):
        wp.loop(body, (x0, v0), -1)
    with pytest.raises(ValueError, match="checkpoints must be an int >= 1"):
        wp.loop(body, (x0, v0), 3, checkpoints=0)
    with pytest.raises(ValueError, match="schedule"):
        wp.loop(body, (x0, v0), 3, schedule="binomial")
    with wp.Tape():
        with pytest.raises(wp.LaunchError, match=r"body\(i=0, state\) returned tuple\(\*\)"):
            wp.loop(lambda i, s: (s[0],), (x0, v0), 3)
        with pytest.raises(wp.LaunchError, match="shape"):
            wp.loop(lambda i, s: (s[0], arr([1.0])), (x0, v0), 3)


def test_nested_loops():
    """A loop whose body is itself a loop of 3 substeps: gradients equal recording every
    substep."""
    ref, _, _ = grads(12, "full")
    x0, v0, drag = arr(X0, True), arr(V0, True), arr(DRAG, True)
    inner = make_body(drag)

    def outer(j, s):
        return wp.loop(lambda i, t: inner(3 * j + i, t), s, 3, checkpoints=2)

    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        s = wp.loop(outer, (x0, v0), 4, checkpoints=2)
        wp.launch(dot, dim=N, inputs=[s[0], arr(W)], outputs=[loss])
        wp.launch(dot, dim=N, inputs=[s[1], arr(W)], outputs=[loss])
    tape.backward(loss)
    for r, a in zip(ref, (x0, v0, drag)):
        assert np.array_equal(r, a.grad.numpy())


def test_a_recorded_loop_inside_a_graph_capture_is_a_clear_error():
    x = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with wp.Tape():
        with pytest.raises(wp.LaunchError, match="cannot be captured"):
            with wp.ScopedCapture():
                wp.loop(lambda i, s: s, x, 3)
