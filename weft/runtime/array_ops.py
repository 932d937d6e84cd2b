"""Array creation: ``wp.zeros``, ``wp.full``, ``wp.from_numpy``, ... (Warp 1.19), and the copies
``wp.clone`` and ``wp.copy`` (from :mod:`weft.runtime.array_copy`).

Example::

    >>> a = wp.full((2, 3), 1.5, dtype=float)
    >>> b = wp.zeros_like(a)
    >>> wp.copy(b, a)
    >>> b.numpy()[1, 2]
    1.5
"""
from __future__ import annotations

import typing

import numpy as np

from ..core import pytree
from ..core import types as T
from .array import array
from .array_copy import clone, copy  # noqa: F401  (wp.clone, wp.copy)
from .array_data import _as_dtype, _as_shape


def _shape(shape, n=None):
    if shape is None:
        shape = n if n is not None else 0
    return _as_shape(shape)


def zeros(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, n=None, **kw):
    """An array of zeros: ``wp.zeros(10, dtype=wp.vec3, requires_grad=True)``; given a PyTree
    type (a dataclass or ``WEFT_STRUCT`` class) and a shape, an instance of it whose array
    fields are zeros of that shape: ``wp.zeros(State, 100)``."""
    if isinstance(shape, type) and pytree.is_tree_type(shape):
        return _tree_of(zeros, shape, dtype, n, device, requires_grad)
    return array(shape=_shape(shape, n), dtype=_as_dtype(dtype), device=device,
                 requires_grad=requires_grad, pinned=pinned,
                 retain_grad=kw.get("retain_grad", False))


def empty(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, n=None, **kw):
    """An array (zeroed in weft; Warp leaves it uninitialised); a PyTree type as for
    ``zeros``."""
    return zeros(shape, dtype, device, requires_grad, pinned, n, **kw)


def full(shape=None, value=0, dtype=None, device=None, requires_grad=False, pinned=False,
         n=None, **kw):
    """An array filled with ``value``. Without dtype, as Warp 1.19: Python ``int`` is int32,
    ``float`` float32, ``bool`` bool, a weft value its type (weft's scalars are numpy scalars,
    so ``np.float32(1)`` is float32), a struct its class, and a sequence a vector (1-d) or matrix
    (2-d) of numpy's type for it (``[1.0, 2.0]`` gives ``vec2d``)."""
    if dtype is None or dtype is typing.Any:
        dtype = _value_dtype(value)
    a = zeros(shape, dtype, device, requires_grad, pinned, n, **kw)
    return a.fill_(value)


def _value_dtype(value):
    vt = type(value)
    if vt is int:
        return T.int32
    if vt is float:
        return T.float32
    if vt is bool:
        return T.bool
    if T.is_composite(vt) or T.is_struct(vt):
        return vt
    if isinstance(value, np.generic) and np.dtype(vt) in T._BY_NUMPY:
        return T._BY_NUMPY[np.dtype(vt)]
    if hasattr(value, "__len__"):
        try:
            na = np.asarray(value)
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"Failed to interpret the value as a vector or matrix: {e}") from e
        st = T._BY_NUMPY.get(na.dtype)
        if st is None:
            raise ValueError(f"Failed to convert {na.dtype} to a Warp data type")
        if na.ndim == 1:
            return T.vector(na.size, st)
        if na.ndim == 2:
            return T.matrix(na.shape, st)
        raise ValueError("Values with more than two dimensions are not supported")
    raise ValueError(f"Invalid value type for Warp array: {vt}")


def ones(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, n=None, **kw):
    """An array of ones (vectors and matrices of ones); a PyTree type as for ``zeros``."""
    if isinstance(shape, type) and pytree.is_tree_type(shape):
        return _tree_of(ones, shape, dtype, n, device, requires_grad)
    return full(shape, 1, dtype, device, requires_grad, pinned, n, **kw)


def zeros_like(src, device=None, requires_grad=None, pinned=None, **kw):
    """Zeros of ``src``'s shape and dtype (and ``requires_grad`` unless given); for a PyTree,
    the PyTree of the zeros of its arrays."""
    if not isinstance(src, array) and pytree.is_tree(src):
        return pytree.map_tree(lambda a: zeros_like(a, device, requires_grad), src)
    rg = src.requires_grad if requires_grad is None else requires_grad
    return zeros(src.shape, src.dtype, device or src.device, rg)


def empty_like(src, device=None, requires_grad=None, pinned=None, **kw):
    return zeros_like(src, device, requires_grad)


def ones_like(src, device=None, requires_grad=None, pinned=None, **kw):
    return zeros_like(src, device, requires_grad).fill_(1)


def full_like(src, value, device=None, requires_grad=None, pinned=None, **kw):
    return zeros_like(src, device, requires_grad).fill_(value)


def _tree_of(make, tp, shape, n, device, requires_grad):
    """``make(shape, dtype)`` for every array field of PyTree type ``tp`` (``wp.zeros(tp,
    shape)``: the shape comes in the dtype position, or as ``n=``)."""
    if n is not None:
        shape = n
    if isinstance(shape, type) or shape is None or isinstance(shape, str):
        raise TypeError(f"wp.{make.__name__}({tp.__name__}, shape): give the shape of the "
                        f"arrays of the PyTree type {tp.__name__} (an int or a tuple), got "
                        f"{shape!r}")
    shape = _as_shape(shape)

    def leaf(ft, where):
        if isinstance(ft, T.ArrayType) or (getattr(ft, "_weft_array_", False) and
                                           not isinstance(ft, type)):
            ft = ft.dtype  # a field annotated wp.array(dtype=...) or wp.array[...]
        try:
            dtype = _as_dtype(ft)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"wp.{make.__name__}: field {where} has type {ft!r}, which is "
                            f"neither a weft value type nor a PyTree type ({exc})") from None
        return make(shape, dtype, device=device, requires_grad=requires_grad)
    return pytree.build(tp, leaf)


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False,
               retain_grad=False):
    """An array from numpy data. Without dtype, Warp 1.19's rule: 2-d data of shape (n, m) is
    an array of n ``vector(m, <numpy type>)``, 3-d data of shape (n, r, c) one of n
    ``matrix((r, c), <numpy type>)``, anything else an array of the numpy scalar type::

        wp.from_numpy(np.zeros((5, 3), np.float32)).dtype is wp.vec3f
    """
    if dtype is None:
        base = T._BY_NUMPY.get(np.asarray(arr).dtype)
        if base is None:
            raise RuntimeError(f"Unsupported NumPy data type '{np.asarray(arr).dtype}'.")
        if np.ndim(arr) == 2:
            dtype = T.vector(np.shape(arr)[1], base)
        elif np.ndim(arr) == 3:
            dtype = T.matrix(np.shape(arr)[1:], base)
        else:
            dtype = base
    return array(arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad,
                 retain_grad=retain_grad)
