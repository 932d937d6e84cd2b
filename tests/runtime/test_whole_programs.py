"""Whole programs: a captured training step (tape, backward, optimizer step, ``tape.zero()``)
replayed N times leaves every array and every ``.grad`` as N eager iterations of the same
program; the intermediates' ``.grad`` after ``backward`` follow Warp 1.19's tape (a launch's
adjoint consumes the gradient of what it stored unless the array has ``retain_grad``); wp.custom,
wp.loop, tape.forward, tape.jacobian and tape.hvp leave ``.grad`` as a backward does. Expected
values marked "Warp" are Warp 1.19's output for the same program."""
import numpy as np
import pytest

import weft as wp
from weft.optim import SGD, Adam
from weft.errors import LaunchError


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
