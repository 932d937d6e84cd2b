"""The views of a ``wp.array`` (:mod:`weft.runtime.array`): slicing, ``reshape``, ``flatten``,
``view`` and ``transpose``, each a new array sharing this one's memory and, when it has one,
its gradient (the same view of it)."""
from __future__ import annotations

import numpy as np

from ..core import types as T
from .array_data import ARRAY_MAX_DIMS, _as_dtype, _c_strides, device_view


class ArrayViews:
    """The view methods of :class:`weft.runtime.array.array` (its only subclass)."""

    __slots__ = ()

    def _view(self, data, grad_fn, cls=None):
        g = self._grad
        out = self._wrap(data, self.dtype if cls is None else cls, self.device, ref=self)
        if g is not None:
            out._grad = grad_fn(g)
            out._requires_grad = self._requires_grad
        return out

    def __getitem__(self, key):
        """Slicing at Python scope: a view sharing memory and gradient, as Warp (``a[1:3]``,
        ``a[:, 0]`` of a 2-d array). Reading one element is refused, as in Warp 1.19."""
        if self._data is None:
            raise RuntimeError("cannot index an array annotation")
        if isinstance(key, (int, np.integer)):
            if self._ndim == 1:
                raise RuntimeError("Item indexing is not supported on wp.array objects")
            key = (key,)
        elif isinstance(key, (slice, ArrayViews)):
            key = (key,)
        elif isinstance(key, tuple):
            if len(key) > self._ndim:
                raise RuntimeError(f"Invalid index: {key}")
            if len(key) == self._ndim and not any(isinstance(k, (slice, ArrayViews)) for k in key):
                raise RuntimeError("Item indexing is not supported on wp.array objects")
        else:
            raise RuntimeError(f"Invalid index: {key}")
        npkey = []
        for dim, k in enumerate(key):
            n = self.shape[dim]
            if isinstance(k, ArrayViews):
                raise NotImplementedError("weft has no indexed arrays (wp.indexedarray): index "
                                          "with slices or integers")
            if isinstance(k, slice):
                start = 0 if k.start is None else int(k.start)
                stop = n if k.stop is None else int(k.stop)
                step = 1 if k.step is None else int(k.step)
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                if start < 0:
                    start += n
                if stop < 0:
                    stop += n
                if not (0 <= start < n and 0 <= stop <= n and start <= stop):
                    raise RuntimeError(f"Invalid indexing in slice: {start}:{stop}:{step}")
                npkey.append(slice(start, stop, step))
            else:
                i = int(k)
                if i < 0:
                    i += n
                if not 0 <= i < n:
                    raise RuntimeError(f"Invalid indexing in slice: {k}")
                npkey.append(i)
        npkey = tuple(npkey)
        if any(isinstance(k, slice) and k.step < 0 for k in npkey):
            raise NotImplementedError("Negative strides are not supported")
        return self._view(self._data[npkey], lambda g: g[key])

    def reshape(self, shape):
        """A view with another shape (contiguous arrays only; one -1 is inferred)."""
        if not self.is_contiguous:
            raise RuntimeError("Reshaping non-contiguous arrays is unsupported.")
        if shape is None:
            raise RuntimeError("shape parameter is required.")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(int(s) for s in shape)
        if len(shape) > ARRAY_MAX_DIMS:
            raise RuntimeError(f"Arrays may only have {ARRAY_MAX_DIMS} dimensions maximum, "
                               f"trying to create array with {len(shape)} dims.")
        if shape.count(-1) > 1:
            raise RuntimeError("Cannot infer shape if more than one index is -1.")
        if -1 in shape:
            rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            shape = tuple(self.size // rest if d == -1 else d for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise RuntimeError(f"cannot reshape array of shape {self.shape} (size {self.size}) "
                               f"into shape {shape} (size {int(np.prod(shape))})")
        data = self._data.reshape(shape + T.element_shape(self.dtype))
        return self._view(data, lambda g: g.reshape(shape))

    def flatten(self):
        """A 1-d view (contiguous arrays only)."""
        if self._ndim == 1:
            return self
        if not self.is_contiguous:
            raise RuntimeError("Flattening non-contiguous arrays is unsupported.")
        return self.reshape(-1)

    def view(self, dtype):
        """The same memory seen as another dtype (no copy): of equal size (``int32`` as
        ``uint32``, ``vec4`` as ``quat``, ``vec4ub`` as ``uint32``), a vector/matrix as its
        scalars (trailing dimensions more), or scalars as vectors/matrices (fewer)."""
        dtype = _as_dtype(dtype)
        from ..core.typeinfo import type_repr, type_size_in_bytes
        size_new, size_old = type_size_in_bytes(dtype), type_size_in_bytes(self.dtype)
        item_new, item_old = T.numpy_dtype(dtype).itemsize, self._data.dtype.itemsize
        keep = self._ndim  # leading dimensions kept as they are
        if size_new == size_old:
            shape = self.shape
        elif T.is_scalar(dtype) and T.is_composite(self.dtype):
            if item_new != item_old:
                raise TypeError(f"cannot create an array view with dtype {type_repr(dtype)} from "
                                f"source dtype {type_repr(self.dtype)}: source scalar dtype "
                                f"{type_repr(T.scalar_of(self.dtype))} has size {item_old} bytes, "
                                f"but target dtype has size {size_new} bytes")
            shape = self.shape + self.dtype._shape_
        elif T.is_scalar(self.dtype) and T.is_composite(dtype):
            if item_new != item_old:
                raise TypeError(f"cannot create an array view with dtype {type_repr(dtype)} from "
                                f"source dtype {type_repr(self.dtype)}: source dtype has size "
                                f"{size_old} bytes, but target scalar dtype "
                                f"{type_repr(T.scalar_of(dtype))} has size {item_new} bytes")
            es = dtype._shape_
            if self._ndim < len(es) or self.shape[-len(es):] != es:
                raise RuntimeError(f"The shape of the source array {self.shape} is not "
                                   f"compatible with the requested data type {T.type_name(dtype)}")
            if self.strides[-len(es):] != _c_strides(es, item_old):
                raise RuntimeError(f"The inner strides of the source array {self.strides} are "
                                   f"not compatible with the requested data type "
                                   f"{T.type_name(dtype)}")
            keep = self._ndim - len(es)
            shape = self.shape[:keep] or (1,)
        else:
            raise TypeError(f"cannot create an array view with dtype {type_repr(dtype)} from "
                            f"source dtype {type_repr(self.dtype)}: source dtype has size "
                            f"{size_old} bytes, but target dtype has size {size_new} bytes")
        if T.is_struct(dtype) or T.is_struct(self.dtype):
            raise TypeError("weft: array views to or from struct dtypes are not supported")
        if self.device.is_cuda:  # a device array over the same memory, strides worked out
            es_new, es_old = T.element_shape(dtype), T.element_shape(self.dtype)
            if size_new == size_old:
                strides = self.strides + _c_strides(es_new, item_new)
            elif T.is_scalar(dtype):
                strides = self.strides + _c_strides(es_old, item_old)
            else:
                strides = (self.strides[:keep] or (size_new,)) + _c_strides(es_new, item_new)
            data = device_view({"shape": shape + es_new, "strides": strides,
                                "typestr": T.numpy_dtype(dtype).str,
                                "data": (self.ptr or 0, False), "version": 3}, owner=self._data)
            return self._view(data, lambda g: g.view(dtype), cls=dtype)
        inner = self._data.reshape(self._data.shape[:keep] + (-1,), copy=False)
        data = inner.view(T.numpy_dtype(dtype))
        data = data.reshape(shape + T.element_shape(dtype), copy=False)
        return self._view(data, lambda g: g.view(dtype), cls=dtype)

    def transpose(self, axes=None):
        """A view with the dimensions permuted (reversed by default)."""
        if self._ndim == 1:
            return self
        if axes is None:
            axes = tuple(range(self._ndim))[::-1]
        elif len(axes) != self._ndim:
            raise RuntimeError("Length of parameter axes must be equal in length to array shape")
        for a in axes:
            if not isinstance(a, (int, np.integer)):
                raise RuntimeError(f"axis index {a} is not of type int")
            if a >= self._ndim:
                raise RuntimeError(f"axis index {a} must be smaller than the number of axes in "
                                   "array")
        full = tuple(axes) + tuple(range(self._ndim, self._data.ndim))
        if self.device.is_cuda:
            data = _cuda_transpose(self._data, full)
        else:
            data = self._data.transpose(full)
        return self._view(data, lambda g: g.transpose(axes))


def _cuda_transpose(data, axes):
    """A transposed view of a CUDA device array (real or simulated)."""
    if hasattr(data, "_ary"):  # Numba's CUDA simulator wraps a numpy array
        return type(data)(data._ary.transpose(axes))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(tuple(data.shape[a] for a in axes), tuple(data.strides[a] for a in axes),
                         data.dtype, gpu_data=data.gpu_data)
