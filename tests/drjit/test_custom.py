"""Custom differentiable ops (weft.CustomOp / wp.custom): reverse mode through tape.backward,
forward mode through tape.forward (the record protocol), several outputs, PyTree inputs and
outputs, AD inside a custom op's derivative, and the errors naming the op. Gradients are
checked against analytic derivatives and central finite differences in float64."""
import dataclasses

import numpy as np
import pytest

import weft as wp

from .ops import AutoSinMul, SinMul, ViaCustom, arr, d_sin_mul, dot, empty_like, f64, mul

X = np.array([0.3, -1.2, 2.0, 0.7])
W = np.array([1.0, -0.5, 2.0, 0.25])


def loss_through(op, x_values):
    """Tape of loss = <op(x), W>; returns (tape, x, y, loss)."""
    x = arr(x_values, grad=True)
    w = arr(W)
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        y = wp.custom(op, x)
        wp.launch(dot, dim=len(x), inputs=[y, w], outputs=[loss])
    return tape, x, y, loss


def fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for k in range(len(x)):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def loss_value(op, x_values):
    return loss_through(op, x_values)[3].numpy()[0]


@pytest.mark.parametrize("op", [SinMul, AutoSinMul, ViaCustom])
def test_reverse_mode(op):
    tape, x, y, loss = loss_through(op, X)
    assert np.allclose(y.numpy(), np.sin(X) * X)
    assert y.grad is not None and len(tape.launches) == 2
    tape.backward(loss)
    assert np.allclose(x.grad.numpy(), d_sin_mul(X) * W, rtol=1e-12)
    assert np.allclose(x.grad.numpy(), fd_grad(lambda v: loss_value(op, v), X), rtol=1e-6)


@pytest.mark.parametrize("op", [SinMul, AutoSinMul, ViaCustom])
def test_forward_mode_through_tape(op):
    tape, x, y, loss = loss_through(op, X)
    dx = np.array([1.0, 2.0, -1.0, 0.5])
    t = tape.forward({x: dx})
    assert np.allclose(t[y].numpy(), d_sin_mul(X) * dx, rtol=1e-12)
    assert np.allclose(t[loss].numpy()[0], np.dot(d_sin_mul(X) * dx, W), rtol=1e-12)
    assert np.allclose(y.numpy(), np.sin(X) * X)  # no primal changed
    tape.backward(loss)  # the dot-product test: <J dx, 1> == <dx, J^T 1>
    assert np.isclose(t[loss].numpy()[0], np.dot(dx, x.grad.numpy()), rtol=1e-12)


def test_chain_of_kernels_and_custom_ops():
    """x -> u = x*x (kernel) -> y = SinMul(u) -> z = AutoSinMul(y) -> loss."""
    def run(xv):
        x = arr(xv, grad=True)
        u = wp.zeros(4, dtype=f64, requires_grad=True)
        loss = wp.zeros(1, dtype=f64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(mul, dim=4, inputs=[x, x], outputs=[u])
            z = wp.custom(AutoSinMul, wp.custom(SinMul, u))
            wp.launch(dot, dim=4, inputs=[z, arr(W)], outputs=[loss])
        return tape, x, loss
    tape, x, loss = run(X)
    tape.backward(loss)
    fd = fd_grad(lambda v: run(v)[2].numpy()[0], X)
    assert np.allclose(x.grad.numpy(), fd, rtol=1e-6)
    tape2, x2, loss2 = run(X)
    t = tape2.forward({x2: np.ones(4)})
    assert np.isclose(t[loss2].numpy()[0], fd.sum(), rtol=1e-6)


class MulAdd(wp.CustomOp):
    """Two outputs: (a * b, a + b)."""

    def eval(self, a, b):
        self.a, self.b = a.numpy().copy(), b.numpy().copy()
        p = empty_like(a)
        wp.launch(mul, dim=len(a), inputs=[a, b], outputs=[p])
        return p, arr(self.a + self.b)

    def backward(self):
        gp, gs = self.grad_out()
        gp, gs = gp.numpy(), gs.numpy()
        self.set_grad_in("a", gp * self.b + gs)
        self.set_grad_in("b", gp * self.a + gs)

    def forward(self):
        da, db = self.grad_in("a").numpy(), self.grad_in("b").numpy()
        self.set_grad_out((da * self.b + db * self.a, da + db))


def test_several_outputs():
    a, b = arr([1.0, 2.0], grad=True), arr([3.0, -1.0], grad=True)
    w1, w2 = arr([1.0, 2.0]), arr([-1.0, 0.5])
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        p, s = wp.custom(MulAdd, a, b=b)
        wp.launch(dot, dim=2, inputs=[p, w1], outputs=[loss])
        wp.launch(dot, dim=2, inputs=[s, w2], outputs=[loss])
    assert np.allclose(p.numpy(), [3.0, -2.0]) and np.allclose(s.numpy(), [4.0, 1.0])
    tape.backward(loss)
    assert np.allclose(a.grad.numpy(), np.array([1, 2]) * [3, -1] + [-1, 0.5])
    assert np.allclose(b.grad.numpy(), np.array([1, 2]) * [1, 2] + [-1, 0.5])
    t = tape.forward({a: [1.0, 0.0], b: [0.0, 1.0]})
    assert np.allclose(t[p].numpy(), [3.0, 2.0]) and np.allclose(t[s].numpy(), [1.0, 1.0])


@dataclasses.dataclass
class Particles:
    x: wp.array(dtype=f64)
    v: wp.array(dtype=f64)
    label: str = "p"


class Energy(wp.CustomOp):
    """PyTree in (a dataclass and a float constant), PyTree out (a dict):
    kinetic = 0.5 m v^2, potential = k x^2."""

    def eval(self, p, m, k=2.0):
        assert p.x.grad is None  # detached
        self.x, self.v, self.m, self.k = p.x.numpy(), p.v.numpy(), m, k
        return {"kin": arr(0.5 * m * self.v ** 2), "pot": arr(k * self.x ** 2), "note": p.label}

    def backward(self):
        g = self.grad_out()
        assert g["note"] == "p"
        self.set_grad_in("p", Particles(2 * self.k * self.x * g["pot"].numpy(),
                                        self.m * self.v * g["kin"].numpy()))
        self.set_grad_in("m", 123.0)  # a number: dropped

    def forward(self):
        dp = self.grad_in("p")
        assert self.grad_in("m") == 0.0
        self.set_grad_out({"kin": self.m * self.v * dp.v.numpy(),
                           "pot": 2 * self.k * self.x * dp.x.numpy(), "note": None})


def test_pytree_inputs_and_outputs():
    p = wp.enable_grad(Particles(arr([1.0, 2.0]), arr([0.5, -1.0])))
    tape = wp.Tape()
    with tape:
        e = wp.custom(Energy, p, 3.0)
    assert e["note"] == "p" and np.allclose(e["kin"].numpy(), [0.375, 1.5])
    tape.backward(grads={(e["kin"], e["pot"]): ([1.0, 1.0], [1.0, 0.5])})
    g = wp.grad(p)
    assert np.allclose(g.x.numpy(), [4.0, 4.0]) and np.allclose(g.v.numpy(), [1.5, -3.0])
    t = tape.forward([(p, Particles([1.0, 0.0], [0.0, 1.0]))])
    assert np.allclose(t[e["pot"]].numpy(), [4.0, 0.0])
    assert np.allclose(t[e["kin"]].numpy(), [0.0, -3.0])


def test_without_tape_only_evaluates():
    x = arr(X, grad=True)
    y = wp.custom(SinMul, x)
    assert np.allclose(y.numpy(), np.sin(X) * X) and y.grad is None


class Identity(wp.CustomOp):
    def eval(self, x):
        return x

    def backward(self):
        self.set_grad_in("x", self.grad_out())


def test_output_is_never_an_input():
    x = arr([1.0, 2.0], grad=True)
    tape = wp.Tape()
    with tape:
        y = wp.custom(Identity, x)
    assert y is not x and not np.shares_memory(y.numpy(), x.numpy())
    tape.backward(grads={y: [1.0, 2.0]})
    assert np.allclose(x.grad.numpy(), [1.0, 2.0])
    with pytest.raises(wp.LaunchError, match="custom op 'Identity' has no forward mode"):
        tape.forward({x: [1.0, 1.0]})


def test_input_overwritten_before_backward_uses_old_values():
    tape, x, y, loss = loss_through(SinMul, X)
    with tape:
        x.assign(np.zeros(4))  # recorded copy: the op's view gets the snapshot
    tape.backward(loss)
    assert np.allclose(x.grad.numpy(), d_sin_mul(X) * W, rtol=1e-12)


class BadName(SinMul):
    def backward(self):
        self.set_grad_in("y", self.grad_out())


class BadShape(SinMul):
    def name(self):
        return "my-op"

    def backward(self):
        self.set_grad_in("x", np.ones(3))


class NoTangent(SinMul):
    def forward(self):
        pass


class WrongPhase(SinMul):
    def backward(self):
        self.grad_in("x")


class NoBackward(wp.CustomOp):
    def eval(self, x):
        return arr(x.numpy())


def test_errors_name_the_op_and_the_gradient():
    tape, x, y, loss = loss_through(BadName, X)
    with pytest.raises(wp.LaunchError, match=r"custom op 'BadName'.*no input named 'y'.*: x"):
        tape.backward(loss)
    tape, x, y, loss = loss_through(BadShape, X)
    with pytest.raises(wp.LaunchError, match=r"custom op 'my-op': set_grad_in\('x'\).*shape "
                       r"\(3,\).*\(4,\)"):
        tape.backward(loss)
    tape, x, y, loss = loss_through(NoTangent, X)
    with pytest.raises(wp.LaunchError, match="custom op 'NoTangent': forward.. gave no tangent"):
        tape.forward({x: X})
    tape, x, y, loss = loss_through(WrongPhase, X)
    with pytest.raises(RuntimeError, match=r"'WrongPhase': grad_in\('x'\) is for forward"):
        tape.backward(loss)
    tape, x, y, loss = loss_through(NoBackward, X)
    with pytest.raises(wp.LaunchError, match="custom op 'NoBackward' defines no backward"):
        tape.backward(loss)
    with pytest.raises(TypeError, match="custom op 'SinMul': the arguments do not match"):
        wp.custom(SinMul, X, X)
    with pytest.raises(TypeError, match="subclass of wp.CustomOp"):
        wp.custom(dot, X)
    with pytest.raises(RuntimeError, match="inside forward"):
        SinMul().grad_out()


def test_custom_op_inside_a_captured_graph_replays_and_differentiates():
    x = arr([0.5, 1.0, 2.0], grad=True)
    w = arr([1.0, 2.0, 3.0])
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        with wp.ScopedCapture() as cap:
            y = wp.custom(SinMul, x)
            wp.launch(dot, 3, inputs=[y, w, loss])
    assert loss.numpy()[0] == 0.0  # nothing ran during capture (Warp's semantics)
    wp.capture_launch(cap.graph)
    xs = x.numpy()
    np.testing.assert_allclose(loss.numpy()[0], (np.sin(xs) * xs * w.numpy()).sum(), rtol=1e-14)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), d_sin_mul(xs) * w.numpy(), rtol=1e-14)
