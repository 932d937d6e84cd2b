"""``tape.hvp``: Hessian-vector products by forward over reverse.

For a recorded program with scalar ``loss`` and inputs ``x``, ``tape.hvp(loss, {x: v})``
returns ``{x: H v}`` with ``H = d^2 loss / dx^2``. It runs in two sweeps:

1. forward: the recorded launches' tangent kernels along ``v`` (as :meth:`Tape.forward`),
   keeping the tangents of every array as each launch saw them;
2. reverse: each launch's *adjoint-tangent* kernel, in reverse order. That kernel is the
   tangent of the adjoint kernel (weft differentiates its own generated adjoint once more,
   :mod:`weft.transpiler.second_order`): it accumulates the gradient exactly as
   ``backward`` does and, beside it, the gradient's tangent, which for the inputs is ``H v``.

The sweep works on scratch gradients (one buffer per gradient allocation, so views share as
``.grad`` views do): the arrays' ``.grad`` are neither read nor changed, so repeated calls
(conjugate gradients) need no ``tape.zero()``; ``return_grad=True`` also returns the gradient
the sweep computed. Primal arrays are not changed. CPU launches are supported; anything else
on the tape is a clear ``LaunchError``.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import LaunchError
from ..core.pytree import TreeDict, pairs
from ..runtime.array import array


class Shadows:
    """The tangents of gradient memory: one zeroed buffer per base allocation, so views of a
    gradient (``x[1:].grad``) share their tangent as they share the gradient."""

    def __init__(self):
        self.bases = {}

    def of(self, data):
        """The tangent buffer of gradient ``data`` (a numpy array; a view of it when ``data``
        is a view)."""
        if data is None:
            return None
        base = data
        while isinstance(base.base, np.ndarray):
            base = base.base
        key = id(base)
        got = self.bases.get(key)
        if got is None:
            got = self.bases[key] = (base, np.zeros(base.nbytes, np.uint8))
        base, raw = got
        start = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        flat = raw[start:].view(data.dtype) if data.size else raw[:0].view(data.dtype)
        return np.lib.stride_tricks.as_strided(flat, data.shape, data.strides)


def hvp(tape, loss, vectors, return_grad=False, grads=None):
    from .tape import _tangent_seed
    if loss is not None and (not isinstance(loss, array) or loss.grad is None):
        raise LaunchError("tape.hvp(loss, ...): loss must be a wp.array created with "
                          "requires_grad=True")
    if loss is not None and loss.size != 1:
        raise LaunchError(f"tape.hvp(loss, ...): loss must have one element, it has shape "
                          f"{loss.shape}")
    if loss is None and not grads:
        raise LaunchError("tape.hvp: give a loss, or grads= to seed the outputs' gradients")
    seeded = []
    for a, g in pairs(grads or {}, "hvp(grads=...)", LaunchError):
        data = _tangent_seed(a, g)  # checked like backward's seeds
        if a.grad is None:
            raise LaunchError(f"tape.hvp(grads=...): the array of shape {a.shape} has no "
                              "gradient (create it with requires_grad=True)")
        seeded.append((a, data))
    seeds = {}
    for a, v in pairs(vectors or {}, "hvp(vectors=...)", LaunchError):
        seeds[a] = _tangent_seed(a, v)
        if a.grad is None:
            raise LaunchError(f"tape.hvp: the input array of shape {a.shape} has no gradient "
                              "(create it with requires_grad=True)")
    for rec in tape.launches:
        if getattr(rec, "hvp_backward", None) is None or getattr(rec, "forward", None) is None:
            what = rec.describe() if hasattr(rec, "describe") else "a recorded callback"
            raise LaunchError(f"tape.hvp: {what} has no second-order mode")
    state = dict(seeds)
    seen = []
    for rec in tape.launches:
        seen.append(dict(state))
        rec.forward(state)
    adjs, tadjs = Shadows(), Shadows()
    if loss is not None:
        adjs.of(loss.grad._data)[...] = 1
    for a, data in seeded:
        adjs.of(a.grad._data)[...] = data._data
    for rec, tangents in zip(reversed(tape.launches), reversed(seen)):
        rec.hvp_backward(tangents, adjs, tadjs)

    def result(shadows):
        return TreeDict((a, array(np.array(shadows.of(a.grad._data)), dtype=a.dtype,
                                  device=a.device)) for a in seeds)
    return (result(tadjs), result(adjs)) if return_grad else result(tadjs)


def hvp_module(ck):
    """The generated module of ``ck``'s adjoint-tangent entries (built once, cached like the
    kernel's own module)."""
    mod = getattr(ck, "_hvp_module", None)
    if mod is not None:
        return mod
    from ..runtime import cache
    from ..transpiler.pipeline import second_order_source
    from ..transpiler.second_order import SecondOrderError
    name = ck.module.__name__.split(".", 1)[1] + "__hvp"

    def build():
        try:
            return second_order_source(ck.module.__weft_source__, ck.abi)
        except SecondOrderError as exc:
            raise LaunchError(f"tape.hvp: kernel '{ck.key}' has no second-order code: "
                              f"{exc}") from None
    mod = ck._hvp_module = cache.load_or_build(name, build)
    return mod
