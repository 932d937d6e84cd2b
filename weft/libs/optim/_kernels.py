"""One kernel per parameter dtype, made on first use (weft's kernels are typed, so the generic
``Any`` kernels of Warp's optimizers become a small factory here)."""
from __future__ import annotations

from ...core import types as T

_made = {}


def kernel_for(name, dtype, make):
    """The kernel ``make(dtype)`` builds, once per (optimizer, dtype)."""
    k = _made.get((name, dtype))
    if k is None:
        k = _made[(name, dtype)] = make(dtype)
    return k


def flat(a):
    """A 1-d view of a parameter array (kernels index the flattened elements)."""
    return a if a.ndim == 1 else a.flatten()


def param_list(params, count=None, who=None):
    """The arrays of ``params`` (a list of arrays as Warp takes them, or any PyTree of arrays,
    flattened in traversal order); None stays None. With ``count``: a gradient list, which
    must hold that many arrays."""
    from ...core.pytree import is_array, is_tree, leaves
    if params is None or (type(params) is list and all(map(is_array, params))):
        out = params
    elif is_array(params) or is_tree(params):
        out = leaves(params)
    else:
        out = params
    if count is not None and len(out) != count:
        raise ValueError(f"{who}: {count} parameter arrays but {len(out)} gradients")
    return out


def check_pair(opt, params, grad):
    from ...core.typeinfo import type_repr
    if params.dtype is not grad.dtype:
        raise TypeError(f"{opt} gradient dtype must match parameter dtype "
                        f"{type_repr(params.dtype)}, got {type_repr(grad.dtype)}")
    if params.shape != grad.shape:
        raise ValueError(f"{opt} gradient shape must match parameter shape {params.shape}, "
                         f"got {grad.shape}")


def is_float_based(dtype):
    return T.is_float(T.scalar_of(dtype))


class Optimizer:
    """What ``Adam`` and ``SGD`` share: the parameter list, one buffer per parameter in each of
    the lists named by ``buffers`` (of the parameter's shape and device, of dtype
    ``buffer_dtype(p.dtype)``), the step count and the step over every parameter
    (``_update``)."""
    name = ""
    buffers = ()

    def buffer_dtype(self, dtype):
        return dtype

    def check_param(self, p):
        """Raise for a parameter the optimizer does not take."""

    def set_params(self, params):
        """Set the arrays to optimize (a list, or any PyTree of arrays: its arrays in
        traversal order) and (re)allocate their buffers: kept when they fit, moved to the
        parameter's device, else new zeros."""
        from ...runtime.array_ops import zeros
        params = self.params = param_list(params)
        if params is not None and isinstance(params, list) and params:
            for p in params:
                self.check_param(p)
            for attr in self.buffers:
                bufs = getattr(self, attr)
                if len(bufs) != len(params):
                    bufs = [None] * len(params)
                for i, p in enumerate(params):
                    b, dt = bufs[i], self.buffer_dtype(p.dtype)
                    if b is None or b.shape != p.shape or b.dtype is not dt:
                        bufs[i] = zeros(p.shape, dtype=dt, device=p.device)
                    elif b.device != p.device:
                        bufs[i] = b.to(p.device)
                setattr(self, attr, bufs)

    def reset_internal_state(self):
        """Zero the buffers and the step count."""
        for attr in self.buffers:
            for b in getattr(self, attr):
                b.zero_()
        self.t = 0

    def step(self, grad):
        """One update of every parameter array with the gradient arrays ``grad`` (a list, or a
        PyTree of the parameters' structure such as ``wp.grad(params)``)."""
        if self.params is None:
            raise RuntimeError(f"{self.name} parameters must be set before calling step(), "
                               f"got None")
        grad = param_list(grad, len(self.params), f"{self.name}.step")
        for i, p in enumerate(self.params):
            self._update(i, grad[i], p)
        self.t += 1
