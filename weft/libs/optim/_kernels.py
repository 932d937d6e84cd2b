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
