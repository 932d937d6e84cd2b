"""``Adam`` (Warp 1.19's ``warp.optim.Adam``): moments in float32 (also for float16
parameters), bias-corrected, for float16, float32 and vec3 parameters as Warp, and any other
float scalar, vector or matrix dtype in weft."""
# (no ``from __future__ import annotations`` here: the kernels' annotations name closure
# variables, which weft evaluates when the kernel is compiled)
from ...core import types as T
from ...runtime.kernel import kernel
from ...runtime.launch import launch
from ._kernels import Optimizer, check_pair, flat, is_float_based, kernel_for


def _moment_dtype(dtype):
    """The dtype Adam keeps the moments of ``dtype`` parameters in (float32 for float16)."""
    if dtype is T.float16:
        return T.float32
    if T.is_composite(dtype) and T.scalar_of(dtype) is T.float16:
        return T.vector(dtype._length_, T.float32) if dtype._wp_kind_ == "vector" else \
            T.matrix(dtype._shape_, T.float32)
    return dtype


def _make_adam(dtype):
    from ... import cw_div, cw_mul, pow, sqrt, tid  # noqa: A004 - the kernel language's pow
    from ...runtime.array import array
    mdtype = _moment_dtype(dtype)
    scalar = T.scalar_of(mdtype)
    composite = T.is_composite(dtype)

    if dtype is T.float16:
        @kernel
        def adam_step(g: array(dtype=dtype), m: array(dtype=mdtype), v: array(dtype=mdtype),
                      lr: float, beta1: float, beta2: float, t: float, eps: float,
                      params: array(dtype=dtype)):
            i = tid()
            gi = float(g[i])
            m[i] = beta1 * m[i] + (1.0 - beta1) * gi
            v[i] = beta2 * v[i] + (1.0 - beta2) * gi * gi
            mhat = m[i] / (1.0 - pow(beta1, t + 1.0))
            vhat = v[i] / (1.0 - pow(beta2, t + 1.0))
            params[i] = params[i] - dtype(lr * mhat / (sqrt(vhat) + eps))
        return adam_step

    if composite:
        @kernel
        def adam_step_vec(g: array(dtype=dtype), m: array(dtype=mdtype),
                          v: array(dtype=mdtype), lr: scalar, beta1: scalar, beta2: scalar,
                          t: scalar, eps: scalar, params: array(dtype=dtype)):
            i = tid()
            gi = g[i]
            m[i] = beta1 * m[i] + (1.0 - beta1) * gi
            v[i] = beta2 * v[i] + (1.0 - beta2) * cw_mul(gi, gi)
            mhat = m[i] / (1.0 - pow(beta1, t + 1.0))
            vhat = v[i] / (1.0 - pow(beta2, t + 1.0))
            root = vhat
            for k in range(len(vhat)):
                root[k] = sqrt(vhat[k]) + eps
            params[i] = params[i] - lr * cw_div(mhat, root)
        return adam_step_vec

    @kernel
    def adam_step_scalar(g: array(dtype=dtype), m: array(dtype=mdtype), v: array(dtype=mdtype),
                         lr: scalar, beta1: scalar, beta2: scalar, t: scalar, eps: scalar,
                         params: array(dtype=dtype)):
        i = tid()
        gi = g[i]
        m[i] = beta1 * m[i] + (1.0 - beta1) * gi
        v[i] = beta2 * v[i] + (1.0 - beta2) * gi * gi
        mhat = m[i] / (1.0 - pow(beta1, t + 1.0))
        vhat = v[i] / (1.0 - pow(beta2, t + 1.0))
        params[i] = params[i] - lr * mhat / (sqrt(vhat) + eps)
    return adam_step_scalar


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam`` and Warp's ``Adam`` (step count ``t`` from 0)::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr * (m / (1 - beta1^(t+1))) / (sqrt(v / (1 - beta2^(t+1))) + eps)

    ``params``: a list of float arrays, or None and :meth:`set_params` later.
    """
    name = "Adam"
    buffers = ("m", "v")     # the moments

    def __init__(self, params=None, lr=0.001, betas=(0.9, 0.999), eps=1e-08):
        self.m = []
        self.v = []
        self.set_params(params)
        self.lr = lr
        self.beta1 = betas[0]
        self.beta2 = betas[1]
        self.eps = eps
        self.t = 0

    def buffer_dtype(self, dtype):
        return _moment_dtype(dtype)

    def check_param(self, p):
        if not is_float_based(p.dtype):
            raise RuntimeError(f"Unsupported dtype for Warp Adam optimizer: "
                               f"{T.type_name(p.dtype)}")

    def _update(self, i, g, p):
        Adam.step_detail(g, self.m[i], self.v[i], self.lr, self.beta1, self.beta2, self.t,
                         self.eps, p)

    @staticmethod
    def step_detail(g, m, v, lr, beta1, beta2, t, eps, params):
        """Update one parameter array in place."""
        check_pair("Adam", params, g)
        k = kernel_for("adam", params.dtype, _make_adam)
        launch(k, dim=params.size, inputs=[flat(g), flat(m), flat(v), lr, beta1, beta2,
                                           float(t), eps, flat(params)], device=params.device)
