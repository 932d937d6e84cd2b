"""Warp's array helpers (``warp.utils``), computed with numpy on the host.

Same signatures, checks and results as Warp 1.19's ``array_sum``, ``array_inner``,
``array_scan``, ``radix_sort_pairs``, ``segmented_sort_pairs``, ``runlength_encode`` and
``array_cast`` (CUDA arrays make a round trip through the host)::

    >>> a = wp.array([1.0, 2.0, 3.0], dtype=float)
    >>> wp.utils.array_sum(a)
    np.float32(6.0)
    >>> out = wp.empty_like(a); wp.utils.array_scan(a, out); out.numpy()
    array([1., 3., 6.], dtype=float32)
"""
from __future__ import annotations

import operator

import numpy as np

from ..core import types as T
from ..runtime.array_ops import empty
from ..core.typeinfo import type_repr, type_scalar_type, types_equal

__all__ = ["array_sum", "array_inner", "array_scan", "radix_sort_pairs", "segmented_sort_pairs",
           "runlength_encode", "array_cast"]


def _flat_components(a, count=None):
    """The first ``count`` elements of ``a`` (flattened) as an (n, components) numpy array."""
    data = a.numpy().reshape(a.size, -1)
    return data if count is None else data[:count]


def _axis(op, axis, ndim):
    axis = operator.index(axis)
    if axis < -ndim or axis >= ndim:
        raise IndexError(f"{op}() axis {axis} is out of bounds for an array with {ndim} "
                         "dimensions")
    return axis % ndim


def _reduce_float_check(a):
    st = type_scalar_type(a.dtype)
    if st not in (T.float32, T.float64):
        raise RuntimeError(f"Unsupported data type: {type_repr(a.dtype)}")
    return st


def array_sum(values, out=None, value_count=None, axis=None):
    """Sum of the elements of ``values`` (float32/float64 scalars, vectors or matrices; vectors
    sum per component). Without ``out`` and ``axis`` the sum is returned (a numpy scalar, or a
    numpy array for vector dtypes); with ``axis`` the sums along it go to ``out`` (shape of
    ``values`` with 1 at ``axis``), which is returned. ``value_count`` limits the elements
    summed (the first ones, or the first along ``axis``)."""
    if axis is not None:
        axis = _axis("array_sum", axis, values.ndim)
    if value_count is None:
        value_count = values.size if axis is None else values.shape[axis]
    shape = (1,) if axis is None else tuple(1 if d == axis else n
                                            for d, n in enumerate(values.shape))
    host_return = out is None
    if out is None:
        out = empty(shape, dtype=values.dtype, device=values.device)
    else:
        if out.device != values.device:
            raise RuntimeError("out storage device should match values array")
        if out.dtype is not values.dtype:
            raise RuntimeError(f"out array should have type {values.dtype.__name__}")
        if out.shape != shape:
            raise RuntimeError(f"out array should have shape {shape}")
    if value_count == 0:
        out.zero_()
        return out.numpy()[0] if axis is None and host_return else out
    st = _reduce_float_check(values)
    data = values.numpy()
    if axis is None:
        total = _flat_components(values, value_count).sum(axis=0, dtype=st._np_)
        result = total.reshape(T.element_shape(values.dtype)) if T.element_shape(values.dtype) \
            else total[0]
        out.assign(np.asarray(result).reshape((1,) + T.element_shape(values.dtype)))
        return out.numpy()[0] if host_return else out
    taken = np.take(data, range(value_count), axis=axis)
    out.assign(taken.sum(axis=axis, keepdims=True, dtype=st._np_))
    return out


#: what ``_require_alike`` compares: (the words of Warp's message, the value, how it prints)
_ASPECTS = {"device": ("storage devices", lambda x: x.device, str),
            "size": ("storage sizes", lambda x: x.size, str),
            "dtype": ("data types", lambda x: x.dtype, type_repr)}


def _require_alike(what, a, b, *aspects):
    """Warp's checks that two arrays agree in each of ``aspects`` (``"device"``, ``"size"``,
    ``"dtype"``): RuntimeError "``what`` storage devices do not match (x vs y)" on the first
    that does not."""
    for aspect in aspects:
        words, get, show = _ASPECTS[aspect]
        x, y = get(a), get(b)
        if not (types_equal(x, y) if aspect == "dtype" else x == y):
            raise RuntimeError(f"{what} {words} do not match ({show(x)} vs {show(y)})")


def array_inner(a, b, out=None, count=None, axis=None):
    """Inner product of ``a`` and ``b`` (same shape and dtype; all components multiplied and
    summed), over everything (returned as a number without ``out``) or along ``axis`` into
    ``out`` of the scalar type."""
    if a.shape != b.shape:
        raise ValueError(f"array_inner() arguments must have the same shape, got {a.shape} and "
                         f"{b.shape}")
    _require_alike("A and b array", a, b, "device", "dtype")
    if axis is not None:
        axis = _axis("array_inner", axis, a.ndim)
    if count is None:
        count = a.size if axis is None else a.shape[axis]
    shape = (1,) if axis is None else tuple(1 if d == axis else n for d, n in enumerate(a.shape))
    st = type_scalar_type(a.dtype)
    host_return = out is None
    if out is None:
        out = empty(shape, dtype=st, device=a.device)
    else:
        if out.device != a.device:
            raise RuntimeError("out storage device should match values array")
        if out.dtype is not st:
            raise RuntimeError(f"out array should have type {st.__name__}")
        if out.shape != shape:
            raise RuntimeError(f"out array should have shape {shape}")
    if count == 0:
        if axis is None and host_return:
            return 0.0
        out.zero_()
        return out
    _reduce_float_check(a)
    if axis is None:
        prod = _flat_components(a, count) * _flat_components(b, count)
        out.assign(np.asarray([prod.sum(dtype=st._np_)]))
        return out.numpy()[0] if host_return else out
    da, db = (np.take(x.numpy(), range(count), axis=axis) for x in (a, b))
    prod = (da * db).reshape(da.shape[:a.ndim] + (-1,)).sum(axis=-1, dtype=st._np_)
    out.assign(prod.sum(axis=axis, keepdims=True, dtype=st._np_))
    return out


def array_scan(in_array, out_array, inclusive=True):
    """Prefix sums of ``in_array`` (int32, int64, float32, float64 scalars or vectors, per
    component) into ``out_array``, inclusive (``[1, 3, 6]`` of ``[1, 2, 3]``) or exclusive
    (``[0, 1, 3]``)."""
    _require_alike("In and out array", in_array, out_array, "device", "size", "dtype")
    if in_array.size == 0:
        return
    if not in_array.is_contiguous and in_array.ndim != 1:
        raise RuntimeError("Input array must be contiguous or one-dimensional")
    if not out_array.is_contiguous and out_array.ndim != 1:
        raise RuntimeError("Output array must be contiguous or one-dimensional")
    st = type_scalar_type(in_array.dtype)
    if not (T.is_scalar(in_array.dtype) or T.is_vector(in_array.dtype)) or \
            st not in (T.int32, T.int64, T.float32, T.float64):
        raise RuntimeError(f"Unsupported data type: {type_repr(in_array.dtype)}")
    data = _flat_components(in_array)
    sums = np.cumsum(data, axis=0, dtype=st._np_)
    if not inclusive:
        sums = np.concatenate([np.zeros_like(sums[:1]), sums[:-1]])
    out_array.assign(sums.reshape(out_array.numpy().shape))


def _sortable_bits(keys):
    """Unsigned integers ordered as ``keys`` are (the usual radix-sort twiddles: the sign bit
    of signed integers flipped, all bits of negative floats flipped)."""
    bits = {4: np.uint32, 8: np.uint64}[keys.dtype.itemsize]
    u = keys.view(bits)
    if keys.dtype.kind == "i":
        return u ^ bits(1 << (8 * keys.dtype.itemsize - 1))
    if keys.dtype.kind == "f":
        sign = bits(1 << (8 * keys.dtype.itemsize - 1))
        return np.where(u & sign, ~u, u | sign)
    return u


def radix_sort_pairs(keys, values, count, begin_bit=0, end_bit=None):
    """Sort the first ``count`` keys (int32, uint32, float32, int64, uint64, float64) with
    their values, stably, by key bits ``[begin_bit, end_bit)``. Both arrays must hold
    ``2 * count`` elements (Warp uses the second half as scratch)."""
    _require_alike("Keys and values array", keys, values, "device")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Keys and values array storage must be large enough to contain "
                           "2*count elements")
    from ..core.typeinfo import type_size_in_bytes
    if type_size_in_bytes(values.dtype) not in (4, 8):
        raise RuntimeError(f"Unsupported keys and values data types: {type_repr(keys.dtype)}, "
                           f"{type_repr(values.dtype)}")
    for what, a in (("keys", keys), ("values", values)):
        if not a.is_contiguous:
            raise RuntimeError(f"radix_sort_pairs() requires a contiguous {what} array, got "
                               f"non-contiguous {what} with data types: {type_repr(keys.dtype)}, "
                               f"{type_repr(values.dtype)}")
    widths = {T.int32: 32, T.uint32: 32, T.float32: 32, T.int64: 64, T.uint64: 64, T.float64: 64}
    width = widths.get(keys.dtype)
    if width is None:
        raise RuntimeError(f"Unsupported keys and values data types: {type_repr(keys.dtype)}, "
                           f"{type_repr(values.dtype)}")
    if end_bit is None:
        end_bit = width
    if not isinstance(begin_bit, int) or not isinstance(end_bit, int):
        raise RuntimeError("begin_bit and end_bit must be integers")
    if not 0 <= begin_bit <= end_bit <= width:
        raise RuntimeError(f"Invalid radix sort bit range [{begin_bit}, {end_bit}) for "
                           f"{width}-bit keys")
    if begin_bit == end_bit:
        return
    k = keys.numpy().reshape(-1)[:count].copy()
    v = values.numpy().reshape((values.size, -1))[:count].copy()
    bits = _sortable_bits(k)
    if (begin_bit, end_bit) != (0, width):
        mask = (1 << (end_bit - begin_bit)) - 1
        bits = (bits >> bits.dtype.type(begin_bit)) & bits.dtype.type(mask)
    order = np.argsort(bits, kind="stable")
    _put_first(keys, k[order])
    _put_first(values, v[order])


def _put_first(a, values):
    def put(data):
        flat = data.reshape((a.size,) + data.shape[a.ndim:])
        flat[:len(values)] = values.reshape((len(values),) + flat.shape[1:])
    a._write(put)


def segmented_sort_pairs(keys, values, count, segment_start_indices, segment_end_indices=None):
    """Sort (stably, ascending) the pairs of ``keys`` (int32 or float32) and ``values``
    (int32) within each segment ``[start, end)`` of the first ``count`` elements; segment ends
    are the next start when ``segment_end_indices`` is None."""
    if not isinstance(count, (int, np.integer)):
        raise TypeError(f"count must be an integer, got {type(count).__name__}")
    if not 0 <= count <= 2**31 - 1:
        raise ValueError(f"count must be in [0, 2**31 - 1], got {count}")
    if keys.dtype not in (T.int32, T.float32):
        raise RuntimeError(f"Unsupported keys data type: {type_repr(keys.dtype)}")
    if values.dtype is not T.int32:
        raise RuntimeError(f"Unsupported values data type: {type_repr(values.dtype)}")
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Keys and values array storage must be large enough to contain "
                           "2*count elements")
    starts = segment_start_indices.numpy().reshape(-1)
    if segment_end_indices is None:
        starts, ends = starts[:-1], starts[1:]
    else:
        ends = segment_end_indices.numpy().reshape(-1)
        if len(ends) != len(starts):
            raise ValueError("segment_end_indices must have the same length as "
                             "segment_start_indices")
    k = keys.numpy().reshape(-1)[:count].copy()
    v = values.numpy().reshape(-1)[:count].copy()
    for s, e in zip(starts.tolist(), ends.tolist()):
        if not 0 <= s <= e <= count:
            raise ValueError(f"invalid segment [{s}, {e}) for count {count}")
        order = np.argsort(_sortable_bits(k[s:e]), kind="stable") + s
        k[s:e], v[s:e] = k[order], v[order]
    _put_first(keys, k)
    _put_first(values, v)


def runlength_encode(values, run_values, run_lengths, run_count=None, value_count=None):
    """Run-length encode the first ``value_count`` int32 ``values`` (all by default):
    ``[1, 1, 1, 2, 2, 3]`` gives run values ``[1, 2, 3]`` and lengths ``[3, 2, 1]``. Returns
    the number of runs, or ``run_count`` (an int32 array it is written to) when given."""
    if run_values.device != values.device or run_lengths.device != values.device:
        raise RuntimeError("run_values, run_lengths and values storage devices do not match")
    if value_count is None:
        value_count = values.size
    elif value_count < 0:
        raise RuntimeError(f"value_count must be non-negative, got {value_count}")
    if run_values.size < value_count or run_lengths.size < value_count:
        raise RuntimeError(f"Output array storage sizes must be at least equal to value_count "
                           f"({value_count})")
    if not types_equal(values.dtype, run_values.dtype):
        raise RuntimeError(f"values and run_values data types do not match "
                           f"({type_repr(values.dtype)} vs {type_repr(run_values.dtype)})")
    if run_lengths.dtype is not T.int32:
        raise RuntimeError("run_lengths array must be of type int32")
    if run_count is not None:
        if run_count.device != values.device:
            raise RuntimeError("run_count storage device does not match other arrays")
        if run_count.dtype is not T.int32:
            raise RuntimeError("run_count array must be of type int32")
    if value_count == 0:
        if run_count is None:
            return 0
        run_count.zero_()
        return run_count
    if values.dtype is not T.int32:
        raise RuntimeError(f"Unsupported data type: {type_repr(values.dtype)}")
    v = values.numpy().reshape(-1)[:value_count]
    starts = np.flatnonzero(np.concatenate([[True], v[1:] != v[:-1]]))
    lengths = np.diff(np.append(starts, value_count)).astype(np.int32)
    _put_first(run_values, v[starts])
    _put_first(run_lengths, lengths)
    if run_count is None:
        return int(len(starts))
    run_count.fill_(len(starts))
    return run_count


def array_cast(in_array, out_array, count=None):
    """Convert the elements of ``in_array`` to ``out_array``'s dtype (as C casts: float to int
    truncates). Arrays of different dimensions or element shapes are cast as flat scalars;
    ``count`` limits it to the first elements of 1-d arrays."""
    _require_alike("Array", in_array, out_array, "device")
    src = in_array.numpy()
    ishape, oshape = T.element_shape(in_array.dtype), T.element_shape(out_array.dtype)
    if in_array.ndim != out_array.ndim or ishape != oshape:
        src = src.reshape(-1)
        n = out_array.size * max(1, int(np.prod(oshape)))
        if count is not None:
            n = count
        if n > src.size or n > out_array.size * max(1, int(np.prod(oshape))):
            raise RuntimeError("Count is greater than the size of the arrays")
        vals = src[:n].astype(out_array._data.dtype)

        def put_flat(data):
            flat = data.reshape(-1)
            flat[:n] = vals
        out_array._write(put_flat)
        return
    if in_array.ndim > 1 and in_array.shape != out_array.shape:
        raise RuntimeError(f"Array shapes do not match ({in_array.shape} vs {out_array.shape})")
    if count is not None and in_array.ndim > 1:
        raise RuntimeError("Partial cast is not supported for arrays with more than one dimension")
    n = in_array.size if count is None else count
    if n > in_array.size or n > out_array.size:
        raise RuntimeError("Count is greater than the size of the arrays")
    vals = src.reshape((in_array.size,) + ishape)[:n].astype(out_array._data.dtype)

    def put(data):
        data.reshape((out_array.size,) + oshape)[:n] = vals
    out_array._write(put)
