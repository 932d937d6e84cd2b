"""The seeds given to a recorded program, checked against their arrays: gradients
(``tape.backward(grads=...)``) and tangents (``tape.forward(tangents=...)``, ``tape.hvp``)."""
from __future__ import annotations

import numpy as np

from ..core.errors import LaunchError
from ..runtime.array import array


def seed_gradient(a, g):
    """Set ``a.grad`` to ``g`` (checked: shape and type)."""
    if not isinstance(a, array):
        raise LaunchError(f"backward(grads=...): keys must be wp.arrays, got {type(a).__name__}")
    data = g.numpy() if isinstance(g, array) else np.asarray(g)
    want = tuple(a._data.shape)  # the array's shape and its elements' (n, 3) for vec3
    if data.shape != want:
        raise LaunchError(f"backward(grads=...): the gradient given for an array of shape "
                          f"{a.shape} (dtype {getattr(a.dtype, '__name__', a.dtype)}) has shape "
                          f"{data.shape}")
    if a.grad is None:
        a.requires_grad = True
    a.grad.assign(data)


def tangent_seed(a, g):
    """A fresh tangent array for ``a`` holding ``g`` (checked like ``backward``'s seeds)."""
    if not isinstance(a, array):
        raise LaunchError(f"forward(tangents=...): keys must be wp.arrays, got "
                          f"{type(a).__name__}")
    data = g.numpy() if isinstance(g, array) else np.asarray(g)
    want = tuple(a._data.shape)
    if data.shape != want:
        raise LaunchError(f"forward(tangents=...): the tangent given for an array of shape "
                          f"{a.shape} has shape {data.shape}")
    return array(np.ascontiguousarray(data, dtype=a._data.dtype), dtype=a.dtype,
                 device=a.device)
