"""``wp.array``: n-dimensional arrays of scalars, vectors or matrices, with gradients.

Data lives in a numpy array whose trailing dimensions hold the components of vector or matrix
elements: an array of 1000 ``vec3`` has ``shape == (1000,)`` and ``numpy()`` of shape
``(1000, 3)``. On the CPU ``numpy()`` is a view, not a copy.

Example::

    >>> x = wp.array(np.zeros((4, 3)), dtype=wp.vec3, requires_grad=True)
    >>> x.shape, x.grad.numpy().shape
    ((4,), (4, 3))
"""
from __future__ import annotations

import numpy as np

from .. import types as T
from . import device as D
from . import hazards


def _infer_dtype(data):
    """numpy's dtype of the data, as Warp 1.19: ``[1, 2]`` is int64, ``[1.0, 2.5]`` float64."""
    return T.as_scalar_type(np.asarray(data).dtype)


def _struct_records(data, dtype):
    """A structured numpy array from (nested lists of) struct instances."""
    def rec(x):
        if isinstance(x, dtype):
            return x._record()
        if isinstance(x, (list, tuple)):
            return [rec(y) for y in x]
        raise TypeError(f"an array of {dtype.__name__} needs {dtype.__name__} instances, got "
                        f"{type(x).__name__}")
    out = np.empty(np.shape(np.empty(_nested_shape(data), dtype=object)), dtype.numpy_dtype())
    flat = out.reshape(-1)
    for k, r in enumerate(_flatten_list(rec(data))):
        flat[k] = r
    return out


def _nested_shape(x):
    shape = []
    while isinstance(x, (list, tuple)) and not isinstance(x, np.void):
        shape.append(len(x))
        if not x:
            break
        x = x[0]
        if isinstance(x, tuple):  # a record
            break
    return tuple(shape)


def _flatten_list(x):
    if isinstance(x, list):
        for y in x:
            yield from _flatten_list(y)
    else:
        yield x


class array:
    """An array of ``dtype`` elements (see the module docstring).

    ``wp.array(dtype=wp.vec3)`` without data is also the type annotation of kernel parameters.
    """

    retain_grad = False  # Warp: the adjoint of a store into this array keeps its gradient
    _exposed = False     # handed to numpy (a view that may be written behind weft's back)

    def __init__(self, data=None, dtype=None, shape=None, ndim=None, device=None,
                 requires_grad=False, copy=True, grad=None, retain_grad=False, **_warp_compat):
        self.device = D.get_device(device)
        if retain_grad:
            self.retain_grad = True
        self._grad = None
        self._requires_grad = False
        if data is None and shape is None:  # an annotation: wp.array(dtype=float, ndim=2)
            self.dtype = T.as_value_type(dtype if dtype is not None else T.float32)
            self._ndim = ndim or 1
            self._data = None
            return
        if data is None:
            dtype = T.as_value_type(dtype if dtype is not None else T.float32)
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            self.dtype = dtype
            self._data = np.zeros(shape + T.element_shape(dtype), T.numpy_dtype(dtype))
        else:
            if isinstance(data, array):
                data = data.numpy()
            if dtype is None and isinstance(data, (list, tuple)) and data and \
                    T.is_struct(type(data[0])):
                dtype = type(data[0])
            if dtype is not None and T.is_struct(dtype) and not isinstance(data, np.ndarray):
                data = _struct_records(data, dtype)
            dtype = T.as_value_type(dtype) if dtype is not None else _infer_dtype(data)
            self.dtype = dtype
            np_dt = T.numpy_dtype(dtype)
            src = np.asarray(data)
            if copy or src.dtype != np_dt:
                src = np.array(src, dtype=np_dt, copy=True)
            elif isinstance(data, np.ndarray):
                self._exposed = True  # the caller's numpy array is this array's memory
            eshape = T.element_shape(dtype)
            if eshape:
                n = int(np.prod(eshape))
                if src.shape[-len(eshape):] != eshape:
                    if src.size % n or (src.ndim and src.shape[-1] != eshape[-1] and
                                        src.shape[-1] != n):
                        raise ValueError(f"data of shape {src.shape} does not hold "
                                         f"{T.type_name(dtype)} elements")
                    src = src.reshape(-1, *eshape)
            if shape is not None:
                shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
                src = src.reshape(shape + eshape)
            self._data = src
        self._ndim = self._data.ndim - len(T.element_shape(self.dtype))
        if self.device.is_cuda:
            from numba import cuda
            self._data = cuda.to_device(np.ascontiguousarray(self._data))
        if grad is not None:
            self._grad = grad
            self._requires_grad = True
        elif requires_grad:
            self.requires_grad = True

    # ------------------------------------------------------------------------- typing
    def __class_getitem__(cls, dtype):
        return T.ArrayType(T.as_value_type(dtype), 1)

    @property
    def _weft_array_type_(self):
        return T.ArrayType(self.dtype, self._ndim)

    # ------------------------------------------------------------------------- properties
    @property
    def shape(self):
        return self._data.shape[:self._ndim]

    @property
    def ndim(self):
        return self._ndim

    @property
    def size(self):
        return int(np.prod(self.shape)) if self._data is not None else 0

    def __len__(self):
        return self.shape[0]

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._requires_grad = bool(value)
        if value and self._grad is None:
            self._grad = array(np.zeros(self._data.shape, self._data.dtype), dtype=self.dtype,
                               copy=False, device=self.device)

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, g):
        self._grad = g if (g is None or isinstance(g, array)) else array(g, dtype=self.dtype)
        self._requires_grad = g is not None

    @property
    def __array_interface__(self):
        if self.device.is_cuda:
            raise AttributeError("a CUDA array has __cuda_array_interface__, not __array_interface__")
        self._exposed = True
        return self._data.__array_interface__

    @property
    def __cuda_array_interface__(self):
        if not self.device.is_cuda:
            raise AttributeError("a CPU array has __array_interface__, not __cuda_array_interface__")
        return self._data.__cuda_array_interface__

    # ------------------------------------------------------------------------- data
    def numpy(self):
        """The data as numpy: a view on the CPU, a copy from a CUDA device."""
        if self.device.is_cuda:
            return self._data.copy_to_host()
        self._exposed = True  # numpy may write it: tapes check what they read of it
        return self._data

    def _write(self, fn, writer="an array write"):
        """Apply ``fn`` to the host data in place (round trip through the host on CUDA); what
        recorded launches will read again is protected first (weft.runtime.hazards)."""
        hazards.before_write(self, writer)
        if self.device.is_cuda:
            host = self._data.copy_to_host()
            fn(host)
            self._data.copy_to_device(host)
        else:
            fn(self._data)
        return self

    def list(self):
        return self.numpy().tolist()

    def __array__(self, dtype=None, copy=None):
        data = self.numpy()
        return data if dtype is None else data.astype(dtype)

    def fill_(self, value):
        value = np.asarray(value, dtype=self._data.dtype)

        def fill(d):
            d[...] = value
        return self._write(fill)

    def zero_(self):
        return self.fill_(0)

    def assign(self, src):
        data = src.numpy() if isinstance(src, array) else np.asarray(src)

        def put(d):
            d[...] = data.reshape(d.shape)
        return self._write(put)

    def reshape(self, shape):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        out = array(self._data.reshape(tuple(shape) + T.element_shape(self.dtype)),
                    dtype=self.dtype, copy=False, device=self.device)
        if self._grad is not None:
            out._grad = self._grad.reshape(shape)
            out._requires_grad = self._requires_grad
        return out

    def flatten(self):
        return self.reshape(-1)

    def to(self, device):
        device = D.get_device(device)
        if device == self.device:
            return self
        return array(self.numpy(), dtype=self.dtype, device=device,
                     requires_grad=self._requires_grad)

    def field(self, name):
        """A view of one member of every element of an array of structs, as an array of the
        member's type; its ``.grad`` is the same member of this array's ``.grad``."""
        views = self.__dict__.setdefault("_fields", {})
        cached = views.get(name)
        if cached is not None and cached[0] is self._grad:
            return cached[1]
        ftype = T.struct_fields(self.dtype)[name]
        out = array.__new__(array)
        out.device = self.device
        out.dtype = ftype
        out._ndim = self._ndim
        out._data = _field_data(self._data, name, self.device)
        out._grad = self._grad.field(name) if self._grad is not None else None
        out._requires_grad = self._requires_grad
        views[name] = (self._grad, out)
        return out

    def __getitem__(self, key):
        """Indexing at Python scope: sub-arrays stay weft arrays, elements are numpy values."""
        view = self._data[key] if not self.device.is_cuda else self.numpy()[key]
        if isinstance(view, np.ndarray) and view.ndim > len(T.element_shape(self.dtype)):
            return array(view, dtype=self.dtype, copy=False, device=self.device)
        return view

    def __repr__(self):
        dev = "" if self.device.is_cpu else f", device={self.device}"
        return f"array({self.numpy()!r}, dtype={T.type_name(self.dtype)}{dev})"

    def __str__(self):
        return str(self.numpy())


def _field_data(data, name, device):
    """The strided view of field ``name`` of structured array data (host or CUDA)."""
    if not device.is_cuda or isinstance(data, np.ndarray):
        return data[name]
    if hasattr(data, "_ary"):  # the CUDA simulator's device array wraps numpy
        return type(data)(data._ary[name])
    fdt, offset = data.dtype.fields[name][:2]
    shape = data.shape + fdt.shape
    strides = data.strides + tuple(
        np.empty(fdt.shape, fdt.base).strides) if fdt.shape else data.strides
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(shape, strides, fdt.base, gpu_data=data.gpu_data.view(offset))


def _shape(shape, n=None):
    if shape is None:
        shape = n
    return (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)


def zeros(shape=None, dtype=float, device=None, requires_grad=False, n=None, **kw):
    """An array of zeros: ``wp.zeros(10, dtype=wp.vec3, requires_grad=True)``."""
    return array(shape=_shape(shape, n), dtype=T.as_value_type(dtype), device=device,
                 requires_grad=requires_grad, retain_grad=kw.get("retain_grad", False))


def empty(shape=None, dtype=float, device=None, requires_grad=False, n=None, **kw):
    return zeros(shape, dtype, device, requires_grad, n, **kw)


def full(shape=None, value=0, dtype=None, device=None, requires_grad=False, n=None, **kw):
    if dtype is None:
        dtype = type(value) if T.is_composite(type(value)) else _infer_dtype(value)
    a = zeros(shape, dtype, device, requires_grad, n, **kw)
    return a.fill_(value)


def ones(shape=None, dtype=float, device=None, requires_grad=False, n=None, **kw):
    return full(shape, 1, dtype, device, requires_grad, n, **kw)


def zeros_like(src, device=None, requires_grad=None, **kw):
    rg = src.requires_grad if requires_grad is None else requires_grad
    return zeros(src.shape, src.dtype, device or src.device, rg)


def empty_like(src, device=None, requires_grad=None, **kw):
    return zeros_like(src, device, requires_grad)


def ones_like(src, device=None, requires_grad=None, **kw):
    return zeros_like(src, device, requires_grad).fill_(1)


def full_like(src, value, device=None, requires_grad=None, **kw):
    return zeros_like(src, device, requires_grad).fill_(value)


def clone(src, device=None, requires_grad=None, **kw):
    """A copy of ``src`` in new memory. As in Warp, the gradient is copied too, unless
    ``requires_grad`` is given (then the clone's gradient starts at zero)."""
    rg = src.requires_grad if requires_grad is None else requires_grad
    out = array(src.numpy(), dtype=src.dtype, device=device or src.device, requires_grad=rg,
                copy=True)
    if requires_grad is None and src.grad is not None and out.grad is not None:
        out.grad.assign(src.grad.numpy())
    return out


def copy(dest, src, dest_offset=0, src_offset=0, count=0):
    """Copy elements of ``src`` into ``dest`` (flattened, with offsets and count as Warp)."""
    s = src.numpy().reshape((-1,) + T.element_shape(src.dtype))

    def put(d):
        d = d.reshape((-1,) + T.element_shape(dest.dtype))
        n = count or min(len(s) - src_offset, len(d) - dest_offset)
        d[dest_offset:dest_offset + n] = s[src_offset:src_offset + n]
    dest._write(put)


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False):
    return array(arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad)


def array2d(*args, **kw):
    kw.setdefault("ndim", 2)
    return array(*args, **kw)


def array3d(*args, **kw):
    kw.setdefault("ndim", 3)
    return array(*args, **kw)


def array4d(*args, **kw):
    kw.setdefault("ndim", 4)
    return array(*args, **kw)
