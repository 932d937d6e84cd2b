"""``wp.array``: n-dimensional arrays of scalars, vectors, matrices or structs, with gradients.

Data lives in a numpy array (a Numba device array on CUDA) whose trailing dimensions hold the
components of vector or matrix elements: an array of 1000 ``vec3`` has ``shape == (1000,)`` and
``numpy()`` of shape ``(1000, 3)``. On the CPU ``numpy()`` is a view, not a copy.

As in Warp 1.19, slicing at Python scope gives a view sharing memory (and gradient), which may be
non-contiguous; ``reshape``, ``flatten``, ``view`` and ``transpose`` are views too. Reading one
element (``a[3]`` of a 1-d array) is refused: use ``numpy()`` or ``list()``.

Example::

    >>> x = wp.array(np.zeros((4, 3)), dtype=wp.vec3, requires_grad=True)
    >>> x.shape, x.strides, x.grad.numpy().shape
    ((4,), (12,), (4, 3))
    >>> x[1:3].shape, x[::2].is_contiguous
    ((2,), False)
"""
from __future__ import annotations

import math
import typing

import numpy as np

from ..core import types as T
from . import device as D
from . import hazards
from .array_copy import clone, copy
from .array_data import (ARRAY_MAX_DIMS, _as_dtype, _as_shape, _c_strides, _field_data,
                         _from_ptr, _host_data, aligned_copy, aligned_zeros, writable_alias)
from .array_views import ArrayViews
from .matmul import matmul_operator


class array(ArrayViews):
    """An array of ``dtype`` elements (see the module docstring).

    ``wp.array(dtype=wp.vec3)`` without data or shape is the type annotation of kernel parameters
    (also ``wp.array[wp.vec3]``, ``wp.array2d[float]``); ``dtype=typing.Any`` makes a generic
    annotation.
    """

    _exposed = False     # handed to numpy (a view that may be written behind weft's back)
    _weft_array_ = True  # recognised by weft.typeinfo without importing this module
    _capacity = None     # bytes from ptr in memory another library owns (from_torch), if known

    def __init__(self, data=None, dtype=typing.Any, shape=None, strides=None, ptr=None,
                 capacity=None, device=None, pinned=False, copy=True, deleter=None, ndim=None,
                 grad=None, requires_grad=False, retain_grad=False):
        self.device = D.get_device(device)
        self._grad = None
        self._requires_grad = False
        self._retain_grad = False
        self._ref = None  # the array this one is a view of (keeps its memory alive)
        self.deleter = deleter
        self.pinned = bool(pinned)
        if dtype is None:
            dtype = typing.Any
        if shape is not None:
            shape = _as_shape(shape)
        if data is None and ptr is None and shape is None:  # an annotation
            self.dtype = _as_dtype(dtype)
            self._ndim = ndim or 1
            self._data = None
            return
        if data is not None and ptr is not None:
            raise RuntimeError("Can only construct arrays with either `data` or `ptr` arguments, "
                               "not both")
        if data is not None:
            if isinstance(data, array):
                data = data.numpy()
            if dtype is typing.Any and isinstance(data, (list, tuple)) and data and \
                    T.is_struct(type(data[0])):
                dtype = type(data[0])
            src, self.dtype = _host_data(data, _as_dtype(dtype), shape)
            if copy and not self.device.is_cuda:
                src = aligned_copy(np.asarray(src))
            elif not copy and isinstance(data, np.ndarray) and np.shares_memory(src, data):
                self._ref = data  # aliases the caller's numpy memory (Warp keeps it in _ref)
                self._exposed = True  # the caller may write it: tapes check what they read
                if not src.flags.writeable:  # memory numpy holds read-only (a JAX buffer):
                    src = writable_alias(src)  # kernels write it all the same, as Warp's
            self._data = src
        else:
            self.dtype = _as_dtype(T.float32 if dtype is typing.Any else dtype)
            eshape = T.element_shape(self.dtype)
            if ptr is not None:
                self._data = _from_ptr(int(ptr), self.dtype, shape, strides, capacity,
                                       cuda=self.device.is_cuda)
            else:
                self._data = aligned_zeros(shape + eshape, T.numpy_dtype(self.dtype))
                if strides is not None:
                    self._data = self._restrided(shape, strides)
        self._ndim = self._data.ndim - len(T.element_shape(self.dtype))
        if self.device.is_cuda and isinstance(self._data, np.ndarray):
            from numba import cuda
            self._data = cuda.to_device(np.ascontiguousarray(self._data))
        if grad is not None:
            self.grad = grad
        elif requires_grad:
            self.requires_grad = True
        if retain_grad:
            self.retain_grad = True

    def _restrided(self, shape, strides):
        """Fresh zeroed storage of ``shape`` laid out with the given byte ``strides``."""
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape):
            raise ValueError(f"Invalid number of strides, expected {len(shape)} strides, got "
                             f"{len(strides)}")
        if any(s < 0 for s in strides):
            raise NotImplementedError("Negative strides are not supported for newly allocated "
                                      "arrays.")
        esize = self._element_bytes()
        extent = sum((n - 1) * s for n, s in zip(shape, strides)) + esize if all(shape) else 0
        store = np.zeros(max(extent, 0), np.uint8)
        inner = _c_strides(T.element_shape(self.dtype), self._data.dtype.itemsize)
        out = np.lib.stride_tricks.as_strided(store.view(self._data.dtype) if extent else
                                              np.zeros(0, self._data.dtype),
                                              shape=self._data.shape, strides=(*strides, *inner))
        return out

    @classmethod
    def _wrap(cls, data, dtype, device, ref=None, grad=None):
        """An array over existing storage ``data`` (a view), without copying."""
        out = cls.__new__(cls)
        out.device = device
        out.dtype = dtype
        out._data = data
        out._ndim = data.ndim - len(T.element_shape(dtype))
        out._grad = grad
        out._requires_grad = grad is not None
        out._retain_grad = False
        out._ref = ref
        out.deleter = None
        out.pinned = False
        return out

    # ------------------------------------------------------------------------- pickling
    def __reduce__(self):
        """Pickling (:mod:`weft.serialize`): a copy of the data with its dtype, device alias,
        ``requires_grad`` and gradient (itself pickled as an array). A view arrives as an
        array of its own (its memory is no longer shared with the array it viewed)."""
        if self._data is None:
            return (_rebuild_annotation, (self.dtype, self._ndim))
        data = self._data.copy_to_host() if self.device.is_cuda else \
            np.ascontiguousarray(self._data)
        return (_rebuild, (data, self.dtype, self.device.alias, self._requires_grad,
                           self._retain_grad, self._grad))

    # ------------------------------------------------------------------------- typing
    def __class_getitem__(cls, params):
        """``wp.array[dtype]`` and ``wp.array[dtype, ndim]``: an annotation (``ArrayType``)."""
        return annotation(params, 1)

    @property
    def _weft_array_type_(self):
        return T.ArrayType(self.dtype, self._ndim)

    @property
    def is_annotation(self):
        """True for ``wp.array(dtype=...)`` without data: a type annotation, no memory."""
        return self._data is None

    # ------------------------------------------------------------------------- properties
    @property
    def shape(self):
        if self._data is None:  # an annotation: (0,) as Warp's, or what a program set
            return getattr(self, "_annotation_shape", (0,))
        return tuple(self._data.shape[:self._ndim])

    @shape.setter
    def shape(self, value):
        """Only an annotation's shape may be set: metadata programs attach to it (MuJoCo Warp
        records symbolic dimensions this way); an array's shape is its memory's."""
        if self._data is not None:
            raise AttributeError("the shape of an array with memory cannot be set (use "
                                 "reshape())")
        self._annotation_shape = value

    @property
    def ndim(self):
        return self._ndim

    @property
    def size(self):
        return math.prod(self._data.shape[:self._ndim]) if self._data is not None else 0

    @property
    def strides(self):
        """Bytes between successive elements along each dimension (Warp's ``strides``)."""
        if self._data is None:
            return None
        if self._data.size == 0:  # numpy gives empty arrays zero strides; Warp row-major ones
            return _c_strides(self.shape, self._element_bytes())
        return tuple(int(s) for s in self._data.strides[:self._ndim])

    @property
    def is_contiguous(self):
        """True when the elements lie densely in row-major order (``strides`` as ``shape``
        implies)."""
        if self._data is None:
            return True
        return self.strides == _c_strides(self.shape, self._element_bytes())

    def _element_bytes(self):
        shape = T.element_shape(self.dtype)
        return self._data.dtype.itemsize * int(np.prod(shape, dtype=np.int64))

    @property
    def capacity(self):
        """Bytes addressable from ``ptr``, as Warp counts them: ``shape[0] * strides[0]`` (the
        size in bytes of a contiguous array)."""
        if self._data is None:
            return 0
        if self._capacity is not None:
            return self._capacity
        return self.shape[0] * self.strides[0]

    @property
    def ptr(self):
        """Address of the first element (a device pointer on CUDA); None for annotations."""
        if self._data is None or self._data.size == 0:
            return None  # no memory (Warp: None for annotations and empty arrays)
        if self.device.is_cuda:
            if hasattr(self._data, "_ary"):  # the CUDA simulator's device array wraps numpy
                return int(self._data._ary.__array_interface__["data"][0])
            return int(self._data.__cuda_array_interface__["data"][0])
        return int(self._data.__array_interface__["data"][0])

    def __len__(self):
        return self.shape[0]

    # __dlpack__ and __dlpack_device__ (DLPack export) are given to this class by
    # weft.runtime.dlpack, which stands above this module

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        """``True`` allocates a zeroed gradient; ``False`` removes it (as Warp)."""
        if value and self._grad is None:
            self._grad = array._wrap(self._zeros_like_storage(), self.dtype, self.device)
        elif not value:
            self._grad = None
            self._retain_grad = False
        self._requires_grad = bool(value)

    def _zeros_like_storage(self):
        """Zeroed storage of this array's shape and strides (for gradients of views)."""
        if self.device.is_cuda:
            from numba import cuda
            return cuda.to_device(np.zeros(self._data.shape, self._data.dtype))
        out = aligned_zeros(self._data.shape, self._data.dtype)
        if self.is_contiguous:
            return out
        return self._restrided(self.shape, self.strides) if all(self.shape) else out

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, g):
        """Assigning an array makes it the gradient (same dtype, shape and device, as Warp);
        ``None`` removes the gradient."""
        if g is None:
            self._grad = None
            self._requires_grad = False
            return
        if not isinstance(g, array):
            g = array(g, dtype=self.dtype, device=self.device)
        wrong = ("dtype" if g.dtype is not self.dtype else "shape" if g.shape != self.shape
                 else "device" if g.device != self.device else None)
        if wrong is not None:
            show = T.type_name if wrong == "dtype" else str
            raise ValueError(f"The given gradient array is incompatible: expected {wrong} "
                             f"{show(getattr(self, wrong))}, got {show(getattr(g, wrong))}")
        self._grad = g
        self._requires_grad = True

    @property
    def retain_grad(self):
        """Warp's ``retain_grad``: the adjoint of a store into this array keeps its gradient."""
        return self._retain_grad

    @retain_grad.setter
    def retain_grad(self, value):
        if value and not self._requires_grad:
            raise ValueError("retain_grad=True requires requires_grad=True")
        self._retain_grad = bool(value)

    @property
    def __array_interface__(self):
        if self.device.is_cuda:
            raise AttributeError("a CUDA array has __cuda_array_interface__, not "
                                 "__array_interface__")
        self._exposed = True
        iface = self._data.__array_interface__
        if self._data.size == 0:  # numpy's zero strides for empty data; Warp's row-major ones
            iface = dict(iface, strides=self.strides + _c_strides(
                T.element_shape(self.dtype), self._data.dtype.itemsize))
        return iface

    @property
    def __cuda_array_interface__(self):
        if not self.device.is_cuda:
            raise AttributeError("a CPU array has __array_interface__, not "
                                 "__cuda_array_interface__")
        return self._data.__cuda_array_interface__

    # ------------------------------------------------------------------------- data
    def numpy(self):
        """The data as numpy: a view on the CPU, a copy from a CUDA device. Vector and matrix
        elements add trailing dimensions; structs give a structured array."""
        if self._data is None:
            return np.empty(0, np.float32)
        if self.device.is_cuda:
            return self._data.copy_to_host()
        self._exposed = True  # numpy may write it: tapes check what they read of it
        return self._data

    def _write(self, fn, writer="an array write"):
        """Apply ``fn`` to the host data in place (round trip through the host on CUDA); what
        recorded launches will read again is protected first (weft.runtime.hazards). During a
        graph capture the write is recorded for replay instead (weft.runtime.graph)."""
        from .graph import capturing
        graph = capturing()
        if graph is not None:
            graph.record(lambda: self._apply_write(fn, writer))
            return self
        return self._apply_write(fn, writer)

    def _apply_write(self, fn, writer):
        hazards.before_write(self, writer)
        self._record_overwrite()
        if self.device.is_cuda:
            host = self._data.copy_to_host()
            fn(host)
            self._data.copy_to_device(host)
        else:
            fn(self._data)
        return self

    def _record_overwrite(self):
        """``fill_``/``zero_`` under a tape overwrite every element: the values before have no
        influence past it, so ``backward`` resets this array's gradient there (else a buffer
        zeroed and accumulated into again, once per step, kept the later steps' gradient in
        the earlier ones'), and the tangents after it are zero."""
        from ..core import config
        from .hooks import active_tape
        tape = active_tape()
        if tape is None:
            return
        if self.grad is None and config.grad_all_arrays and T.is_differentiable(self.dtype):
            self.requires_grad = True
        g = self.grad
        if g is None or not hazards.recorded_before(tape, self):
            return

        def forward(tangents):
            tangents[self] = array(np.zeros_like(self.numpy()), dtype=self.dtype, copy=False,
                                   device=self.device)

        def hvp(tangents, adjs, tadjs):
            adjs.of(g._data)[...] = 0
            tadjs.of(g._data)[...] = 0
        def backward():
            if g.device.is_cuda:
                g._data.copy_to_device(np.zeros(g._data.shape, g._data.dtype))
            else:
                g._data[...] = 0
        tape.record_func(backward, [self], forward, hvp)

    def list(self):
        """The elements as a flat Python list: numbers, or values of the vector/matrix/struct
        dtype (as Warp's ``array.list()``)."""
        data = self.numpy()
        if T.is_struct(self.dtype):
            return [self.dtype.from_record(r) for r in data.reshape(-1)]
        if T.is_composite(self.dtype):
            return [self.dtype(v) for v in data.reshape((-1, *self.dtype._shape_))]
        return data.reshape(-1).tolist()

    def __array__(self, dtype=None, copy=None):
        data = self.numpy()
        return data if dtype is None else data.astype(dtype)

    def fill_(self, value):
        """Set every element to ``value`` (a scalar, a vector/matrix or a sequence of its
        components, a struct instance or 0 for structs)."""
        if self.size == 0:
            return self
        try:
            if T.is_struct(self.dtype):
                if isinstance(value, self.dtype):
                    value = value.numpy_value()
                elif not isinstance(value, (np.ndarray, list, tuple)) and value == 0:
                    value = self.dtype().numpy_value()
                else:
                    raise ValueError(f"Invalid initializer value for struct "
                                     f"{self.dtype.__name__}, expected struct instance or 0")
            elif T.is_composite(self.dtype):
                value = np.asarray(self.dtype(value) if np.ndim(value) else
                                   self.dtype(*([value] * self.dtype._length_)))
            else:
                if np.ndim(value) != 0:
                    raise ValueError(f"expected a scalar, got {value!r}")
                value = np.asarray(value).astype(self._data.dtype)
        except Exception as e:  # noqa: BLE001 - Warp's message for any conversion failure
            raise ValueError(f"Failed to convert the value to the array data type: {e}") from e

        def fill(d):
            d[...] = value
        return self._write(fill)

    def zero_(self):
        """Set every element to zero."""
        if self.size == 0:
            return self

        def zero(d):
            if d.dtype.fields is None:
                d.fill(0)
            else:  # structs
                d[...] = np.zeros((), d.dtype)
        return self._write(zero)

    def assign(self, src):
        """Copy ``src`` (an array, or anything ``wp.array(src, dtype=self.dtype)`` accepts) into
        this array, as ``wp.copy(self, src)``."""
        if not isinstance(src, array):
            src = array(src, dtype=self.dtype, copy=False, device="cpu")
        copy(self, src)
        return self

    def contiguous(self):
        """This array if contiguous, else a contiguous copy."""
        if self.is_contiguous:
            return self
        return clone(self)

    def to(self, device, requires_grad=None):
        """This array on ``device`` (itself if already there)."""
        device = D.get_device(device)
        if device == self.device:
            return self
        return clone(self, device=device, requires_grad=requires_grad)

    def field(self, name):
        """A view of one member of every element of an array of structs, as an array of the
        member's type; its ``.grad`` is the same member of this array's ``.grad``."""
        views = self.__dict__.setdefault("_fields", {})
        cached = views.get(name)
        if cached is not None and cached[0] is self._grad:
            return cached[1]
        ftype = T.struct_fields(self.dtype)[name]
        out = array._wrap(_field_data(self._data, name, self.device), ftype, self.device,
                          ref=self, grad=self._grad.field(name) if self._grad is not None else
                          None)
        out._requires_grad = self._requires_grad
        views[name] = (self._grad, out)
        return out

    def __repr__(self):
        from ..core.typeinfo import type_repr
        return type_repr(self)

    def __str__(self):
        if self._data is None:
            return f"array{self.dtype}"
        return str(self.numpy())

    def __matmul__(self, other):
        """``a @ b`` between 2-D float arrays: a new array, recorded on an active tape
        (``weft.runtime.matmul``; Warp 1.19 has no array product)."""
        if not isinstance(other, array):
            return NotImplemented  # other operands answer with __rmatmul__ (weft.sparse)
        out = matmul_operator(self, other)
        if out is NotImplemented:
            raise TypeError("@ between wp.arrays takes two 2-D float arrays")
        return out


def _rebuild(data, dtype, alias, requires_grad, retain_grad, grad):
    """An unpickled array (see ``array.__reduce__``). Data that arrives read-only or unaligned
    (pickle protocol 5 buffers) is copied: kernels write arrays in place."""
    if not (data.flags.writeable and data.flags.aligned and data.flags.c_contiguous):
        data = np.array(data, copy=True, order="C")
    device = D.get_device(alias)
    if device.is_cuda:
        from numba import cuda
        data = cuda.to_device(data)
    out = array._wrap(data, dtype, device, grad=grad)
    out._requires_grad = bool(requires_grad) and grad is not None
    out._retain_grad = bool(retain_grad) and out._requires_grad
    return out


def _rebuild_annotation(dtype, ndim):
    return array(dtype=dtype, ndim=ndim)


# ---------------------------------------------------------------------------------------------
# annotations: wp.array[T], wp.array1d[T] ... wp.array4d[T]

def annotation(params, ndim):
    """The annotation ``wp.arrayNd[dtype]`` (or ``wp.array[dtype, ndim]``) stands for: the same
    ``ArrayType`` that ``wp.array(dtype=dtype, ndim=ndim)`` carries."""
    if isinstance(params, tuple):
        if len(params) != 2:
            raise TypeError(f"wp.array expects 1 or 2 type parameters, got {len(params)}")
        params, n = params
        args = typing.get_args(n)
        ndim = args[0] if typing.get_origin(n) is typing.Literal and args else n
        if not isinstance(ndim, int):
            raise TypeError(f"ndim must be an integer, got {ndim!r}")
        if not 1 <= ndim <= ARRAY_MAX_DIMS:
            raise ValueError(f"ndim must be between 1 and {ARRAY_MAX_DIMS}, got {ndim}")
    if params is T.bfloat16:  # an annotation may name it; a kernel using it is refused
        return T.ArrayType(params, ndim)
    return T.ArrayType(_as_dtype(params), ndim)


def _fixed_ndim(n):
    class arrayNd:  # noqa: N801 - Warp's names
        __doc__ = f"""``wp.array{n}d(...)`` is ``wp.array(..., ndim={n})``;
        ``wp.array{n}d[dtype]`` the annotation of a {n}-d array of ``dtype``."""

        def __new__(cls, *args, **kwargs):
            kwargs.setdefault("ndim", n)
            return array(*args, **kwargs)

        def __class_getitem__(cls, dtype):
            return annotation(dtype, n)

    arrayNd.__name__ = arrayNd.__qualname__ = f"array{n}d"
    return arrayNd


array1d, array2d, array3d, array4d = (_fixed_ndim(n) for n in (1, 2, 3, 4))
