"""Array creation and copies: ``wp.zeros``, ``wp.full``, ``wp.clone``, ``wp.copy``, ... (Warp 1.19).

Example::

    >>> a = wp.full((2, 3), 1.5, dtype=float)
    >>> b = wp.zeros_like(a)
    >>> wp.copy(b, a)
    >>> b.numpy()[1, 2]
    1.5
"""
from __future__ import annotations

import operator
import typing

import numpy as np

from ..core import pytree
from ..core import types as T
from .array import _as_dtype, _as_shape, array


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


def clone(src, device=None, requires_grad=None, pinned=None, **kw):
    """A contiguous copy of ``src`` in new memory, made as Warp 1.19 makes it: an empty array
    (with a gradient when ``requires_grad``, by default when ``src`` has one) and ``wp.copy``, so
    the gradient is copied too when both have one, and inside a ``wp.Tape`` the clone is
    recorded (its adjoint adds the clone's gradient to ``src``'s). A PyTree gives the PyTree of
    the clones of its arrays."""
    if not isinstance(src, array) and pytree.is_tree(src):
        return pytree.map_tree(lambda a: clone(a, device, requires_grad), src)
    rg = src.requires_grad if requires_grad is None else requires_grad
    out = empty(src.shape, dtype=src.dtype, device=device or src.device, requires_grad=rg)
    copy(out, src)
    return out


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


# ---------------------------------------------------------------------------------------------
# wp.copy


def copy(dest, src, dest_offset=0, src_offset=0, count=0, stream=None):
    """Copy ``count`` elements (all of ``src`` when 0) of ``src`` from ``src_offset`` into
    ``dest`` at ``dest_offset``, elements counted over the flattened arrays (as Warp 1.19:
    strided arrays take offsets and counts only when 1-d). Gradients are copied when both
    arrays have one, and inside a ``wp.Tape`` the copy is recorded: its adjoint adds ``dest``'s
    gradient of the copied elements to ``src``'s and zeroes it (unless ``retain_grad``)."""
    from ..core import typeinfo
    if not isinstance(src, array) or not isinstance(dest, array):
        raise RuntimeError("Copy source and destination must be arrays")
    try:
        src_offset, dest_offset, count = (operator.index(x) for x in (src_offset, dest_offset,
                                                                      count))
    except TypeError as e:
        raise RuntimeError("Copy src_offset, dest_offset, and count must be integers") from e
    if src_offset < 0:
        raise RuntimeError(f"Source offset must be non-negative, got {src_offset}")
    if dest_offset < 0:
        raise RuntimeError(f"Destination offset must be non-negative, got {dest_offset}")
    if count < 0:
        raise RuntimeError(f"Copy count must be non-negative, got {count}")
    if count == 0:
        count = src.size
    if count == 0:
        return
    if typeinfo.type_size_in_bytes(src.dtype) != typeinfo.type_size_in_bytes(dest.dtype):
        raise RuntimeError(f"Incompatible array data types: destination dtype="
                           f"{typeinfo.type_repr(dest.dtype)}, source dtype="
                           f"{typeinfo.type_repr(src.dtype)}")
    if src.is_contiguous and dest.is_contiguous:
        nb = typeinfo.type_size_in_bytes(src.dtype)  # Warp's messages count bytes
        if src_offset + count > src.size:
            raise RuntimeError(f"Trying to copy source buffer with size ({count * nb}) from "
                               f"offset ({src_offset * nb}) is larger than source size "
                               f"({src.size * nb})")
        if dest_offset + count > dest.size:
            raise RuntimeError(f"Trying to copy source buffer with size ({count * nb}) to offset "
                               f"({dest_offset * nb}) is larger than destination size "
                               f"({dest.size * nb})")
    elif src_offset or dest_offset or count != src.size or count != dest.size:
        if src.ndim != 1 or dest.ndim != 1:
            raise RuntimeError("dest_offset, src_offset, and count are only supported for 1-D "
                               "non-contiguous arrays")
        if src_offset + count > src.size:
            raise RuntimeError(f"Trying to copy a range of {count} element(s) from source offset "
                               f"({src_offset}) exceeds the source size ({src.size})")
        if dest_offset + count > dest.size:
            raise RuntimeError(f"Trying to copy a range of {count} element(s) to destination "
                               f"offset ({dest_offset}) exceeds the destination size "
                               f"({dest.size})")
    elif src.shape != dest.shape:
        raise RuntimeError(f"Incompatible array shapes: destination shape={dest.shape}, source "
                           f"shape={src.shape}")
    from .graph import capturing
    graph = capturing()
    if graph is not None:  # recorded for replay (the gradient copy and tape record included)
        graph.record(lambda: _copy_now(dest, src, dest_offset, src_offset, count))
        return
    _copy_now(dest, src, dest_offset, src_offset, count)


def _copy_now(dest, src, dest_offset, src_offset, count):
    _copy_region(dest, src, dest_offset, src_offset, count)
    if src.grad is not None and dest.grad is not None:
        _copy_region(dest.grad, src.grad, dest_offset, src_offset, count)
        from .hooks import active_tape
        tape = active_tape()
        if tape is not None:
            tape.record_func(lambda: _adj_copy(dest, src, dest_offset, src_offset, count),
                             [dest, src],
                             lambda t: _tan_copy(t, dest, src, dest_offset, src_offset, count))


def _tan_copy(tangents, dest, src, dest_offset, src_offset, count):
    """Forward mode of a recorded copy: ``dest``'s tangent takes ``src``'s in the region."""
    ts = tangents.get(src)
    td = tangents.get(dest)
    td = array(td.numpy() if td is not None else np.zeros(dest._data.shape, dest._data.dtype),
               dtype=dest.dtype, device=dest.device)
    if ts is None:
        ts = array(np.zeros(src._data.shape, src._data.dtype), dtype=src.dtype,
                   device=src.device)
    _copy_region(td, ts, dest_offset, src_offset, count)
    tangents[dest] = td


def _region(a, offset, count):
    """The elements ``offset .. offset + count`` of ``a`` (flattened) as a view: the whole
    array, a slice of a 1-d array, or a slice of a contiguous array flattened."""
    if offset == 0 and count == a.size:
        return a
    flat = a if a.ndim == 1 else a.flatten()
    return flat[offset:offset + count]


def _copy_region(dest, src, dest_offset, src_offset, count):
    s, d = _region(src, src_offset, count), _region(dest, dest_offset, count)
    if s.shape != d.shape:  # contiguous arrays of the same size: copied in memory order
        s, d = s.flatten(), d.flatten()
    values = _reinterpret(s.numpy(), s.shape, d)

    def put(data):
        data[...] = values
    d._write(put)


def _reinterpret(values, outer, dest):
    """Element values as ``dest`` stores them: as they are when the numpy dtypes agree, else the
    same bytes seen as ``dest``'s dtype (Warp copies memory, so ``int32`` -> ``uint32`` keeps
    the bits)."""
    nd, eshape = dest._data.dtype, T.element_shape(dest.dtype)
    if values.dtype == nd and values.shape[len(outer):] == eshape:
        return values
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(tuple(outer) + (-1,))
    return raw.view(nd).reshape(tuple(outer) + eshape)


def _adj_copy(dest, src, dest_offset, src_offset, count):
    """Adjoint of ``copy``: src.grad[region] += dest.grad[region]; then dest.grad[region] = 0
    unless ``dest.retain_grad`` (as Warp 1.19)."""
    s, d = _region(src.grad, src_offset, count), _region(dest.grad, dest_offset, count)
    if s.shape != d.shape:
        s, d = s.flatten(), d.flatten()
    add = np.array(d.numpy()).reshape(s.numpy().shape)

    def accumulate(data):
        data += add.astype(data.dtype)
    s._write(accumulate)
    if not dest.retain_grad:
        d.zero_()


def cuda_transpose(data, axes):
    """A transposed view of a CUDA device array (real or simulated)."""
    if hasattr(data, "_ary"):  # Numba's CUDA simulator wraps a numpy array
        return type(data)(data._ary.transpose(axes))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(tuple(data.shape[a] for a in axes), tuple(data.strides[a] for a in axes),
                         data.dtype, gpu_data=data.gpu_data)
