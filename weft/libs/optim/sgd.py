"""``SGD``: stochastic gradient descent with momentum, dampening, weight decay and Nesterov
momentum (Warp 1.19's ``warp.optim.SGD``, PyTorch's update rule)."""
# (no ``from __future__ import annotations`` here: the kernels' annotations name closure
# variables, which weft evaluates when the kernel is compiled)
from ...core import types as T
from ...runtime.kernel import kernel
from ...runtime.launch import launch
from ._kernels import Optimizer, check_pair, flat, is_float_based, kernel_for


def _make_sgd(dtype):
    from ... import tid
    from ...runtime.array import array
    scalar = T.scalar_of(dtype)

    @kernel
    def sgd_step(g: array(dtype=dtype), buf: array(dtype=dtype), lr: scalar,
                 momentum: scalar, dampening: scalar, weight_decay: scalar, nesterov: int,
                 t: int, params: array(dtype=dtype)):
        i = tid()
        d = g[i]
        if weight_decay != 0.0:
            d = d + weight_decay * params[i]
        if momentum != 0.0:
            v = d
            if t > 0:
                v = momentum * buf[i] + (1.0 - dampening) * d
            buf[i] = v
            if nesterov == 1:
                d = d + momentum * v
            else:
                d = v
        params[i] = params[i] - lr * d

    return sgd_step


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD`` and Warp's ``SGD``::

        b = momentum * b + (1 - dampening) * g      (b = g on the first step)
        g = g + momentum * b if nesterov else b     (with momentum)
        p = p - lr * g                               (g = grad + weight_decay * p)

    ``params``: a list of float arrays (scalars, vectors or matrices of any precision), or
    None and :meth:`set_params` later. ``step(grads)`` updates them in place.
    """
    name = "SGD"
    buffers = ("b",)     # the momentum buffers

    def __init__(self, params=None, lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        self.b = []
        self.set_params(params)
        self.lr = lr
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.t = 0

    def _update(self, i, g, p):
        SGD.step_detail(g, self.b[i], self.lr, self.momentum, self.dampening, self.weight_decay,
                        self.nesterov, self.t, p)

    @staticmethod
    def step_detail(g, b, lr, momentum, dampening, weight_decay, nesterov, t, params):
        """Update one parameter array in place."""
        check_pair("SGD", params, g)
        if params.dtype is not b.dtype:
            raise TypeError("SGD momentum buffer dtype must match parameter dtype")
        if not is_float_based(params.dtype):
            raise TypeError(f"SGD needs float parameters, got {T.type_name(params.dtype)}")
        k = kernel_for("sgd", params.dtype, _make_sgd)
        launch(k, dim=params.size, inputs=[flat(g), flat(b), lr, momentum, dampening,
                                           weight_decay, int(nesterov), t, flat(params)],
               device=params.device)
