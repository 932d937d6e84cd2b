"""How data given to ``wp.array`` becomes its storage: Warp 1.19's rules for data shapes and
dtypes, external pointers, strides, and the strided view of one member of an array of structs.
Helpers of :mod:`weft.runtime.array`."""
from __future__ import annotations

import ctypes
import typing

import numpy as np

from ..core import types as T

ARRAY_MAX_DIMS = 4


def _as_dtype(dtype):
    """A dtype given by a user as a weft type; ``typing.Any`` stays (generic annotation)."""
    if dtype is typing.Any or isinstance(dtype, typing.TypeVar):  # wp.Float, wp.Int
        return dtype
    if isinstance(dtype, type) and issubclass(dtype, T.bfloat16):  # vector(3, bfloat16) too
        raise TypeError("weft does not support bfloat16 arrays (use float16 or float32)")
    return T.as_value_type(dtype)


def _infer_dtype(data):
    """numpy's dtype of the data, as Warp 1.19: ``[1, 2]`` is int64, ``[1.0, 2.5]`` float64."""
    arr = np.asarray(data)
    t = T._BY_NUMPY.get(arr.dtype)
    if t is None:
        raise RuntimeError(f"Unsupported input data dtype: {arr.dtype}")
    return t


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


def _as_shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    else:
        shape = tuple(int(s) for s in shape)
    if len(shape) > ARRAY_MAX_DIMS:
        raise RuntimeError(f"Failed to create array with shape {shape}, the maximum number of "
                           f"dimensions is {ARRAY_MAX_DIMS}")
    for d, s in enumerate(shape):
        if s < 0:
            raise ValueError(f"Array shapes must be non-negative, got {s} in dimension {d}")
    return shape


def _host_data(data, dtype, shape):
    """Data given to ``wp.array(data, dtype, shape)`` as a numpy array with the element
    dimensions trailing, following Warp 1.19's rules (inner dimensions of length 1 dropped, a
    last dimension of the vector's length or a multiple of it regrouped)."""
    if not hasattr(data, "__len__"):
        raise RuntimeError(f"Data must be a sequence or array, got scalar {data}")
    if dtype is typing.Any:
        dtype = _infer_dtype(data)
    if T.is_struct(dtype):
        if isinstance(data, np.ndarray):
            if data.dtype != dtype.numpy_dtype():
                raise RuntimeError(f"Invalid source data type for array of structs, expected "
                                   f"{dtype.numpy_dtype()}, got {data.dtype}")
            arr = data
        else:
            arr = _struct_records(data, dtype)
    else:
        try:
            arr = np.asarray(data, dtype=T.numpy_dtype(dtype))
        except Exception as e:  # noqa: BLE001 - Warp's message for any conversion failure
            raise RuntimeError(f"Failed to convert input data to an array with type "
                               f"{T.numpy_dtype(dtype)}: {e}") from e
    eshape = T.element_shape(dtype)
    target = None
    if shape is not None:
        target = (*shape, *eshape)
    elif eshape:
        while arr.ndim > 1 and arr.shape[-1] == 1:
            arr = arr[..., 0]
        if arr.ndim < len(eshape) or arr.shape[-len(eshape):] != eshape:
            n = int(np.prod(eshape))
            if arr.ndim and arr.shape[-1] == n:
                target = (*arr.shape[:-1], *eshape)
            elif arr.ndim and arr.shape[-1] % n == 0:
                target = (*arr.shape[:-1], arr.shape[-1] // n, *eshape)
            else:
                kind = "vector" if len(eshape) == 1 else "matrix"
                raise RuntimeError(f"The inner dimensions of the input data are not compatible "
                                   f"with the requested {kind} type {T.type_name(dtype)}: "
                                   f"expected an inner dimension that is a multiple of {n}")
    if target is not None:
        try:
            arr = arr.reshape(target)
        except Exception as e:  # noqa: BLE001
            raise RuntimeError(f"Failed to reshape the input data to the given shape {shape} "
                               f"and type {T.type_name(dtype)}: {e}") from e
    if arr.ndim == len(eshape):  # a single value becomes a one-element array, as in Warp
        arr = arr.reshape((1, *eshape))
    return arr, dtype


def _from_ptr(ptr, dtype, shape, strides, capacity, cuda=False):
    """A numpy view of host memory at address ``ptr`` (Warp's ``wp.array(ptr=...)``), or with
    ``cuda`` a numba-cuda device array over device memory there (not owned: the caller keeps it
    alive, as in Warp)."""
    eshape = T.element_shape(dtype)
    np_dt = T.numpy_dtype(dtype)
    esize = np_dt.itemsize * int(np.prod(eshape, dtype=np.int64))
    if strides is None:
        strides = _c_strides(shape, esize)
    if cuda:
        inner = _c_strides(eshape, np_dt.itemsize)
        return device_view({"shape": (*shape, *eshape), "strides": (*strides, *inner),
                            "typestr": np_dt.str, "data": (ptr, False), "version": 3})
    extent = (max(0, sum((n - 1) * s for n, s in zip(shape, strides) if n > 0)) + esize
              if all(n > 0 for n in shape) else 0)
    capacity = max(extent, capacity or 0)
    buf = (ctypes.c_uint8 * capacity).from_address(ptr) if capacity else bytearray(0)
    flat = np.frombuffer(buf, dtype=np.uint8)
    inner = _c_strides(eshape, np_dt.itemsize)
    return np.lib.stride_tricks.as_strided(flat.view(np_dt) if capacity % np_dt.itemsize == 0
                                           else flat[:capacity - capacity % np_dt.itemsize]
                                           .view(np_dt),
                                           shape=(*shape, *eshape),
                                           strides=(*strides, *inner))


def device_view(interface, owner=None):
    """A numba-cuda device array over the device memory ``interface`` describes (a
    ``__cuda_array_interface__`` dict), kept alive by ``owner``; not copied. Under Numba's CUDA
    simulator device memory is host memory: the simulator's array over a numpy view of it."""
    from numba import cuda
    if hasattr(cuda, "from_cuda_array_interface"):
        return cuda.from_cuda_array_interface(interface, owner=owner, sync=False)
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    class _Host:
        __array_interface__ = interface
        keep = owner

    return FakeCUDAArray(np.asarray(_Host()))


ALIGNMENT = 64  # bytes: what XLA's CPU client needs to share memory (jax.dlpack) without a copy


def aligned_zeros(shape, dtype, zeroed=True):
    """Zeroed C-contiguous host storage whose first byte is ``ALIGNMENT``-aligned (numpy's own
    allocations are 16-byte aligned); with ``zeroed=False`` its contents are not set (for a
    caller that writes every element next: reused heap memory, where fresh zeroed pages cost
    a page fault each on first write)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = (np.zeros if zeroed else np.empty)(nbytes + ALIGNMENT, np.uint8)
    start = -raw.__array_interface__["data"][0] % ALIGNMENT
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def writable_alias(data):
    """A writable numpy view of the memory of read-only numpy array ``data`` (which it keeps
    alive): ``wp.array(x, copy=False)`` over memory another library hands out read-only."""
    iface = dict(data.__array_interface__)
    iface["data"] = (iface["data"][0], False)

    class _Alias:
        __array_interface__ = iface
        keep = data

    return np.asarray(_Alias())


def aligned_copy(data):
    """A C-contiguous, ``ALIGNMENT``-aligned copy of numpy array ``data``."""
    out = aligned_zeros(data.shape, data.dtype)
    out[...] = data
    return out


def _c_strides(shape, itemsize):
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


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
