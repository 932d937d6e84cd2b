"""``wp.matmul(a, b, c, d, alpha=1.0, beta=0.0)``: ``d = alpha * a @ b + beta * c`` on 2-D
arrays (``wp.batched_matmul`` and 3-D arrays: a batch of them), and ``a @ b`` between 2-D
``wp.array``s (a new array). The API of Warp before 1.19 (which dropped it).

Inside a ``wp.Tape`` the product is recorded: its adjoint adds ``alpha * adj_d @ b^T`` to
``a.grad``, ``alpha * a^T @ adj_d`` to ``b.grad`` and ``beta * adj_d`` to ``c.grad``; its forward
mode gives ``alpha * (ta @ b + a @ tb) + beta * tc``. The operands are copied when recorded,
so later writes to them do not change the gradient. The products run on the CPU through NumPy's
BLAS (float32 and float64; other float types through float64).

This module sits below :mod:`weft.runtime.array` (whose ``@`` it implements): it knows arrays by
their base class and makes new ones of the class of those it is given.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import LaunchError
from .array_views import ArrayViews as _Array  # every wp.array (the base of its one class)
from .hooks import active_tape


def _host(a, name):
    if not isinstance(a, _Array):
        raise LaunchError(f"matmul: '{name}' must be a wp.array, got {type(a).__name__}")
    data = a.numpy()
    if data.dtype.kind != "f":
        raise LaunchError(f"matmul: '{name}' must hold floats, got {data.dtype}")
    return data


def _product(x, y):
    if x.dtype in (np.float32, np.float64) and x.dtype == y.dtype:
        return np.matmul(x, y)
    return np.matmul(x.astype(np.float64), y.astype(np.float64))


def matmul(a, b, c, d, alpha=1.0, beta=0.0, allow_ntf32=False, device=None):
    """``d = alpha * a @ b + beta * c`` (2-D, or 3-D as a batch)."""
    A, B, C = _host(a, "a"), _host(b, "b"), _host(c, "c")
    _host(d, "d")
    if A.ndim != B.ndim or A.ndim not in (2, 3) or A.shape[-1] != B.shape[-2] or \
            C.shape != A.shape[:-1] + B.shape[-1:] or tuple(d.shape) != C.shape or \
            (A.ndim == 3 and A.shape[0] != B.shape[0]):
        raise LaunchError(f"matmul: shapes a{A.shape} @ b{B.shape} + c{C.shape} -> "
                          f"d{tuple(d.shape)} do not agree")
    out = alpha * _product(A, B) + beta * C.astype(np.float64 if C.dtype != A.dtype else C.dtype)
    d.assign(out.astype(d.numpy().dtype))
    tape = active_tape()
    if tape is not None:
        A0, B0 = A.copy(), B.copy()
        tape.record_func(lambda: _adjoint(a, b, c, d, A0, B0, alpha, beta), [a, b, c, d],
                         lambda t: _tangent(t, a, b, c, d, A0, B0, alpha, beta),
                         hvp=lambda t, adjs, tadjs: _hvp(t, adjs, tadjs, a, b, c, d, A0, B0,
                                                         alpha, beta))


def batched_matmul(a, b, c, d, alpha=1.0, beta=0.0, allow_ntf32=False, device=None):
    """``matmul`` over a batch of 3-D arrays (the first axis)."""
    if a.ndim != 3:
        raise LaunchError("batched_matmul takes 3-D arrays (a batch of matrices)")
    matmul(a, b, c, d, alpha, beta)


def _add(target, value):
    if target.grad is not None:
        target.grad.assign(target.grad.numpy() + value.astype(target.grad.numpy().dtype))


def _swap(x):
    return np.swapaxes(x, -1, -2)


def _adjoint(a, b, c, d, A, B, alpha, beta):
    if d.grad is None:
        return
    G = d.grad.numpy().astype(np.float64)
    _add(a, alpha * _product(G, _swap(B).astype(np.float64)))
    _add(b, alpha * _product(_swap(A).astype(np.float64), G))
    _add(c, beta * G)


def _tangent(tangents, a, b, c, d, A, B, alpha, beta):
    ta, tb, tc = (tangents.get(x) for x in (a, b, c))
    out = np.zeros(tuple(d._data.shape))
    if ta is not None:
        out += alpha * _product(ta.numpy().astype(np.float64), B.astype(np.float64))
    if tb is not None:
        out += alpha * _product(A.astype(np.float64), tb.numpy().astype(np.float64))
    if tc is not None:
        out += beta * tc.numpy()
    tangents[d] = type(d)(out.astype(d.numpy().dtype), dtype=d.dtype, device=d.device)


def _hvp(tangents, adjs, tadjs, a, b, c, d, A, B, alpha, beta):
    """``tape.hvp``'s reverse step (:mod:`weft.autodiff.hvp`): the adjoint into the scratch
    gradients ``adjs`` and its tangent into ``tadjs``."""
    if d.grad is None:
        return
    G = adjs.of(d.grad._data).astype(np.float64)
    TG = tadjs.of(d.grad._data).astype(np.float64)
    A, B = A.astype(np.float64), B.astype(np.float64)
    ta, tb = (tangents.get(x) for x in (a, b))
    TA = ta.numpy().astype(np.float64) if ta is not None else np.zeros_like(A)
    TB = tb.numpy().astype(np.float64) if tb is not None else np.zeros_like(B)
    terms = ((a, alpha * _product(G, _swap(B)),
              alpha * (_product(TG, _swap(B)) + _product(G, _swap(TB)))),
             (b, alpha * _product(_swap(A), G),
              alpha * (_product(_swap(TA), G) + _product(_swap(A), TG))),
             (c, beta * G, beta * TG))
    for x, adj, tan in terms:
        if x.grad is None:
            continue
        for shadows, value in ((adjs, adj), (tadjs, tan)):
            buf = shadows.of(x.grad._data)
            buf += value.reshape(buf.shape).astype(buf.dtype)


def matmul_operator(a, b):
    """``a @ b`` between 2-D arrays: a new array (recorded on an active tape)."""
    if not isinstance(b, _Array) or a.ndim != 2 or b.ndim != 2:
        return NotImplemented
    d = type(a)(np.zeros((a.shape[0], b.shape[1]), dtype=a.numpy().dtype), dtype=a.dtype,
                device=a.device, requires_grad=a.requires_grad or b.requires_grad)
    c = type(a)(np.zeros(d.shape, dtype=a.numpy().dtype), dtype=a.dtype, device=a.device)
    matmul(a, b, c, d)
    return d
