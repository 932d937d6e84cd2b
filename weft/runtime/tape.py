"""``wp.Tape``: records launches and runs their adjoints backwards.

Example::

    tape = wp.Tape()
    with tape:
        wp.launch(step, dim=n, inputs=[x, v, 0.01], outputs=[x_out])
        wp.launch(loss_kernel, dim=n, inputs=[x_out, loss])
    tape.backward(loss)          # seeds loss.grad with 1
    x.grad.numpy()
"""
from __future__ import annotations

import numpy as np

from ..errors import LaunchError
from .array import array

_stack = []


def active_tape():
    return _stack[-1] if _stack else None


class _Launch:
    __slots__ = ("kernel", "dims", "args", "device", "snapshots")

    def __init__(self, kernel, dims, args, device, snapshots=None):
        self.kernel, self.dims, self.args, self.device = kernel, dims, args, device
        self.snapshots = snapshots or {}


class Tape:
    """Records launches made inside ``with tape:`` for reverse-mode differentiation."""

    def __init__(self):
        self.launches = []
        self.gradients = {}
        self.loss = None

    def __enter__(self):
        if _stack and _stack[-1] is self:
            raise RuntimeError("this tape is already recording")
        _stack.append(self)
        return self

    def __exit__(self, *exc):
        _stack.remove(self)
        return False

    def record_launch(self, kernel, dims, args, device, snapshots=None):
        self.launches.append(_Launch(kernel, dims, list(args), device, snapshots))

    def record_func(self, backward, arrays):
        """Record a Python callback run during ``backward`` (Warp's ``Tape.record_func``)."""
        self.launches.append(_Func(backward, arrays))

    def backward(self, loss=None, grads=None):
        """Run the adjoints of the recorded launches in reverse order.

        ``loss``: a one-element array whose gradient is seeded with 1. ``grads``: a dict
        mapping arrays to the gradients to seed them with instead.
        """
        if loss is not None:
            if loss.grad is None:
                raise LaunchError("backward(loss): the loss array was created without "
                                  "requires_grad=True, so it has no gradient to seed")
            self.loss = loss
            loss.grad.fill_(1)
        for a, g in (grads or {}).items():
            if a.grad is None:
                a.requires_grad = True
            a.grad.assign(g.numpy() if isinstance(g, array) else np.asarray(g))
        from .launch import grads_of, pack, retain_grads, run
        for rec in reversed(self.launches):
            if isinstance(rec, _Func):
                rec.backward()
                continue
            k = rec.kernel
            for a in rec.args:  # as Warp: the gradients backward used are the ones zero() clears
                if isinstance(a, array) and a.grad is not None:
                    self.gradients[a] = a.grad
            values = pack(k, rec.args, rec.device)
            for i, data in rec.snapshots.items():
                values[i] = data  # replay from the values before the launch overwrote them
            adj = retain_grads(k, rec.args, grads_of(k, rec.args, k.meta["adj"], "adj_"))
            run(k, "adjoint", rec.dims, values + adj, rec.device)

    def zero(self):
        """Zero the gradients used by ``backward`` so far (Warp's semantics: a tape that has not
        run backward yet zeros nothing)."""
        for g in self.gradients.values():
            g.zero_()

    def reset(self):
        """Forget the recorded launches and zero the gradients."""
        self.zero()
        self.launches = []
        self.gradients = {}
        self.loss = None


class _Func:
    def __init__(self, backward, arrays):
        self.backward = backward
        self.arrays = list(arrays)
