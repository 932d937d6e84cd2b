"""Small float64 kernels and custom ops shared by the Dr.Jit-layer tests."""
import numpy as np

import weft as wp

f64 = wp.float64


@wp.kernel
def sin_mul(a: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = wp.sin(a[i]) * a[i]


@wp.kernel
def mul(a: wp.array(dtype=f64), b: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = a[i] * b[i]


@wp.kernel
def dot(a: wp.array(dtype=f64), w: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, a[i] * w[i])


def arr(values, grad=False):
    return wp.array(np.asarray(values, np.float64), dtype=f64, requires_grad=grad)


def empty_like(a):
    return wp.zeros(a.shape, dtype=a.dtype)


def d_sin_mul(x):
    return np.cos(x) * x + np.sin(x)


class SinMul(wp.CustomOp):
    """y = sin(x) x with the analytic derivative."""

    def eval(self, x):
        self.x = x
        out = empty_like(x)
        wp.launch(sin_mul, dim=len(x), inputs=[x], outputs=[out])
        return out

    def forward(self):
        self.set_grad_out(d_sin_mul(self.x.numpy()) * self.grad_in("x").numpy())

    def backward(self):
        self.set_grad_in("x", d_sin_mul(self.x.numpy()) * self.grad_out().numpy())


class AutoSinMul(wp.CustomOp):
    """y = sin(x) x whose derivatives are computed by AD: a tape in backward, wp.jvp in
    forward."""

    def eval(self, x):
        self.x = x
        out = empty_like(x)
        wp.launch(sin_mul, dim=len(x), inputs=[x], outputs=[out])
        return out

    def forward(self):
        out = empty_like(self.x)
        t = wp.jvp(sin_mul, len(self.x), inputs=[self.x], outputs=[out],
                   tangents={self.x: self.grad_in("x")})
        self.set_grad_out(t[out])

    def backward(self):
        x = wp.clone(self.x, requires_grad=True)
        out = wp.zeros(x.shape, dtype=f64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(sin_mul, dim=len(x), inputs=[x], outputs=[out])
        tape.backward(grads={out: self.grad_out()})
        self.set_grad_in("x", x.grad)


class ViaCustom(wp.CustomOp):
    """y = sin(x) x whose backward differentiates another custom op (SinMul) on a tape."""

    def eval(self, x):
        self.x = x
        out = empty_like(x)
        wp.launch(sin_mul, dim=len(x), inputs=[x], outputs=[out])
        return out

    def backward(self):
        x = wp.clone(self.x, requires_grad=True)
        tape = wp.Tape()
        with tape:
            y = wp.custom(SinMul, x)
        tape.backward(grads={y: self.grad_out()})
        self.set_grad_in("x", x.grad)

    def forward(self):
        x = wp.clone(self.x, requires_grad=True)
        tape = wp.Tape()
        with tape:
            y = wp.custom(SinMul, x)
        self.set_grad_out(tape.forward({x: self.grad_in("x")})[y])
