"""Whole programs: a captured training step (tape, backward, optimizer step, ``tape.zero()``)
replayed N times leaves every array and every ``.grad`` as N eager iterations of the same
program; the intermediates' ``.grad`` after ``backward`` follow Warp 1.19's tape (a launch's
adjoint consumes the gradient of what it stored unless the array has ``retain_grad``); wp.custom,
wp.loop, tape.forward, tape.jacobian and tape.hvp leave ``.grad`` as a backward does. Expected
values marked "Warp" are Warp 1.19's output for the same program."""
import numpy as np
import pytest

import weft as wp
from weft.libs.optim import SGD, Adam
from weft.core.errors import LaunchError


@wp.kernel
def step(x: wp.array(dtype=float), v: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 0.1 * v[i] * x[i]


@wp.kernel
def wave(y: wp.array(dtype=float)):  # reads then overwrites: the launch keeps a snapshot
    i = wp.tid()
    y[i] = wp.sin(y[i]) + y[i]


@wp.kernel
def bump(v: wp.array(dtype=float)):  # overwrites what step read: the tape protects it
    i = wp.tid()
    v[i] = v[i] * 0.9 + 0.05


@wp.kernel
def loss_k(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i] * y[i])


@wp.kernel
def descend(x: wp.array(dtype=float), g: wp.array(dtype=float), lr: float):
    i = wp.tid()
    x[i] = x[i] - lr * g[i]


def _state():
    x = wp.array(np.array([1.0, 0.5, -0.3], np.float32), dtype=float, requires_grad=True)
    v = wp.array(np.array([0.2, -1.0, 2.0], np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    return x, v, y, loss


def _train_step(x, v, y, loss, update, extra=False):
    loss.zero_()
    tape = wp.Tape()
    with tape:
        wp.launch(step, 3, inputs=[x, v], outputs=[y])
        if extra:
            wp.launch(wave, 3, inputs=[y])
            wp.launch(bump, 3, inputs=[v])
        wp.launch(loss_k, 3, inputs=[y, loss])
    tape.backward(loss)
    update(x)
    tape.zero()


def _everything(arrays):
    return [a.numpy().copy() for a in arrays] + [a.grad.numpy().copy() for a in arrays]


def _replay_equals_eager(make_update, extra, n=4):
    eager = _state()
    update = make_update()
    for _ in range(n):
        _train_step(*eager, update, extra)
    captured = _state()
    update = make_update()
    with wp.ScopedCapture() as cap:
        _train_step(*captured, update, extra)
    for _ in range(n):
        wp.capture_launch(cap.graph)
    for e, r in zip(_everything(eager), _everything(captured)):
        np.testing.assert_array_equal(r, e)
    return captured


def _kernel_update():
    return lambda x: wp.launch(descend, 3, inputs=[x, x.grad, 0.1])


def test_a_captured_training_step_replays_as_the_eager_steps():
    x, *_ = _replay_equals_eager(_kernel_update, extra=False, n=6)
    np.testing.assert_allclose(x.numpy(), [0.24665383, 0.17315464, -0.0390842], rtol=1e-6)  # Warp


def _optimizer(cls, **kw):
    def make():
        opt = []

        def update(x):
            if not opt:
                opt.append(cls([x], **kw))
            opt[0].t = 0  # the step count is an argument bound at capture (as Warp)
            opt[0].step([x.grad])
        return update
    return make


@pytest.mark.parametrize("make_update", [_kernel_update, _optimizer(SGD, lr=0.1,
                                                                       momentum=0.5),
                                         _optimizer(Adam, lr=0.05)],
                         ids=["kernel", "sgd", "adam"])
def test_replays_keep_snapshots_and_protections_of_their_own_iteration(make_update):
    _replay_equals_eager(make_update, extra=True)


# ------------------------------------------------------- what .grad holds after each operation

@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def affine(s: wp.array(dtype=float), d: wp.array(dtype=float), o: wp.array(dtype=float)):
    i = wp.tid()
    o[i] = s[i] * d[i] + 0.1


@wp.kernel
def cubic_loss(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, 3.0 * y[i] * y[i])


class Quad(wp.CustomOp):  # u = 2 v + v^2, by hand
    def eval(self, v):
        self.v = v
        return wp.array(2.0 * v.numpy() + v.numpy() ** 2, dtype=float)

    def forward(self):
        self.set_grad_out((2.0 + 2.0 * self.v.numpy()) * self.grad_in("v").numpy())

    def backward(self):
        self.set_grad_in("v", (2.0 + 2.0 * self.v.numpy()) * self.grad_out().numpy())


def _affine_body(d):
    def body(i, s):
        o = wp.empty_like(s)
        wp.launch(affine, 2, inputs=[s, d], outputs=[o])
        return o
    return body


def _program(retain):
    """x -> square (stored) -> v -> custom op -> u -> wp.loop of 3 affine steps (reads d) -> f
    -> loss; ``retain``: v made with retain_grad=True."""
    x = wp.array(np.array([0.5, -0.7], np.float32), dtype=float, requires_grad=True)
    d = wp.array(np.array([0.9, 1.1], np.float32), dtype=float, requires_grad=True)
    v = wp.zeros(2, dtype=float, requires_grad=True, retain_grad=retain)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, 2, inputs=[x], outputs=[v])
        u = wp.custom(Quad, v)
        f = wp.loop(_affine_body(d), u, 3)
        wp.launch(cubic_loss, 2, inputs=[f, loss])
    return tape, {"x": x, "d": d, "v": v, "u": u, "f": f, "loss": loss}


def _f64(x, d):
    """The loop's result in float64."""
    v = x * x
    s = 2.0 * v + v * v
    for _ in range(3):
        s = s * d + 0.1
    return s


def _loss64(x, d):
    return 3.0 * (_f64(x, d) ** 2).sum()


def _adjoints64(x, d):
    """The adjoint of every array of the program (central differences in float64 for the
    leaves, by hand for the intermediates)."""
    h = 1e-6
    fd = {k: np.array([(_loss64(*(p + h * e if j == i else p for j, p in enumerate((x, d))))
                        - _loss64(*(p - h * e if j == i else p for j, p in enumerate((x, d)))))
                       / (2 * h) for e in np.eye(2)]) for i, k in enumerate("xd")}
    v, f = x * x, _f64(x, d)
    adj_f = 6.0 * f
    adj_u = adj_f * d ** 3
    return {**fd, "f": adj_f, "u": adj_u, "v": adj_u * (2.0 + 2.0 * v), "loss": np.ones(1)}


def _grads(arrays):
    return {k: a.grad.numpy().astype(np.float64) for k, a in arrays.items()}


@pytest.mark.parametrize("retain", [False, True], ids=["default", "retain_grad"])
def test_after_backward_every_array_holds_its_adjoint_as_on_a_warp_tape(retain):
    tape, arrays = _program(retain)
    tape.backward(arrays["loss"])
    want = _adjoints64(np.array([0.5, -0.7]), np.array([0.9, 1.1]))
    if not retain:  # Warp: the adjoint of square's store consumes v.grad (Warp gives 0 too)
        want["v"] = np.zeros(2)
    got = _grads(arrays)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-4, atol=1e-5, err_msg=k)
    tape.zero()  # as Warp: every gradient backward used
    for k, g in _grads(arrays).items():
        np.testing.assert_array_equal(g, 0.0, err_msg=k)
    tape.backward(arrays["loss"])
    for k, g in _grads(arrays).items():
        np.testing.assert_array_equal(g, got[k], err_msg=k)


def test_forward_and_jacobian_leave_no_gradient_behind():
    tape, arrays = _program(False)
    tape.backward(arrays["loss"])
    after_backward = _grads(arrays)
    tape.forward({arrays["x"]: np.ones(2, np.float32)})  # forward mode: .grad untouched
    for k, g in _grads(arrays).items():
        np.testing.assert_array_equal(g, after_backward[k], err_msg=k)
    J = tape.jacobian([arrays["x"]], [arrays["f"]], mode="rev")
    h, x, d = 1e-6, np.array([0.5, -0.7]), np.array([0.9, 1.1])
    np.testing.assert_allclose(np.diag(J), [(_f64(x + h * e, d) - _f64(x - h * e, d))[k] / (2 * h)
                                            for k, e in enumerate(np.eye(2))], rtol=2e-4)
    for k, g in _grads(arrays).items():  # as Warp's jacobian: zeros (not the last row's)
        np.testing.assert_array_equal(g, 0.0, err_msg=k)
    tape.backward(arrays["loss"])  # so a backward after it gives the loss's gradient
    for k, g in _grads(arrays).items():
        np.testing.assert_array_equal(g, after_backward[k], err_msg=k)


def test_tape_reductions_cannot_be_captured():
    tape, arrays = _program(False)
    with wp.ScopedCapture():
        for call in (lambda: tape.forward({arrays["x"]: np.ones(2, np.float32)}),
                     lambda: tape.jacobian(arrays["x"], arrays["f"]),
                     lambda: tape.hvp(arrays["loss"], {arrays["x"]: np.ones(2, np.float32)})):
            with pytest.raises(LaunchError, match="cannot be part of a graph capture"):
                call()


@wp.kernel
def cube_k(v: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = v[i] * v[i] * v[i]


@wp.kernel
def cube_adj(v: wp.array(dtype=float), g: wp.array(dtype=float), gv: wp.array(dtype=float)):
    i = wp.tid()
    gv[i] = 3.0 * v[i] * v[i] * g[i]


class Cube(wp.CustomOp):  # launches in eval and backward: a graph can capture it
    def eval(self, v):
        self.v = v
        out = wp.zeros_like(v)
        wp.launch(cube_k, len(v), inputs=[v], outputs=[out])
        return out

    def backward(self):
        gv = wp.zeros_like(self.v)
        wp.launch(cube_adj, len(self.v), inputs=[self.v, self.grad_out(), gv])
        self.set_grad_in("v", gv)


def _custom_step(x, v, loss):
    loss.zero_()
    tape = wp.Tape()
    with tape:
        wp.launch(square, 2, inputs=[x], outputs=[v])
        u = wp.custom(Cube, v)
        wp.launch(bump, 2, inputs=[v])  # overwrites what the op read: protected
        wp.launch(loss_k, 2, inputs=[u, loss])
    tape.backward(loss)
    wp.launch(descend, 2, inputs=[x, x.grad, 0.05])
    tape.zero()


def test_a_captured_custom_op_replays_as_eager():
    runs = []
    for captured in (False, True):
        x = wp.array(np.array([0.5, -0.7], np.float32), dtype=float, requires_grad=True)
        v = wp.zeros(2, dtype=float, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        if captured:
            with wp.ScopedCapture() as cap:
                _custom_step(x, v, loss)
        for _ in range(3):
            wp.capture_launch(cap.graph) if captured else _custom_step(x, v, loss)
        runs.append(_everything([x, v, loss]))
    for e, r in zip(*runs):
        np.testing.assert_array_equal(r, e)
    x0 = np.array([0.5, -0.7])
    for _ in range(3):  # x -= 0.05 d(sum(x^12))/dx, in float64
        x0 = x0 - 0.05 * 12.0 * x0 ** 11
    np.testing.assert_allclose(runs[0][0], x0, rtol=1e-5)
