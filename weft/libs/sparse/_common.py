"""Host helpers of weft.sparse: host views, writes through ``wp.copy`` (so tapes see them),
scalar views of block arrays."""
import numpy as np

import weft as wp
from weft.core import types as T
from weft.core.typeinfo import type_is_matrix, type_scalar_type
from weft.runtime.array_data import _as_dtype, aligned_zeros

def _np(a):
    """The host data of an array (a view on the CPU)."""
    return a.numpy()


def _put(a, data, start=0):
    """Write ``data`` into ``a[start:start + len(data)]`` through ``wp.copy``, so that weft's
    tapes see the write (they snapshot what recorded launches will read again)."""
    data = np.asarray(data)
    if data.shape[0] == 0:
        return
    if not type_is_matrix(a.dtype):
        data = data.reshape(data.shape[0])
    tmp = wp.array(data, dtype=a.dtype, device=a.device)
    wp.copy(a, tmp, dest_offset=start, count=tmp.shape[0])


def _int_array(data, device):
    return wp.array(np.ascontiguousarray(data, dtype=np.int32), dtype=int, device=device)


def _scalar_view(values, block_shape):
    """``values`` (scalars or matrices) as a 2-d scalar array ``(n, rows * cols)`` sharing its
    memory and gradient."""
    n = values.shape[0]
    if type_is_matrix(values.dtype):
        v = values.view(type_scalar_type(values.dtype))
    else:
        v = values
    return v.reshape((n, block_shape[0] * block_shape[1]))


def _block_ndarray(values, count=None):
    """Host view of ``values`` as ``(n, rows, cols)``."""
    d = _np(values)
    if count is not None:
        d = d[:count]
    if d.ndim == 1:
        d = d.reshape(-1, 1, 1)
    return d

def _put_at(a, slots, data):
    """Write ``data`` at the elements ``slots`` of ``a`` (as :func:`_put`)."""
    if len(slots) == 0:
        return
    lo, hi = int(np.min(slots)), int(np.max(slots)) + 1
    host = np.array(a.numpy()[lo:hi])
    host[np.asarray(slots) - lo] = data
    _put(a, host, lo)


def _unset(n, dtype, device, requires_grad=False):
    """An array of ``n`` elements of ``dtype`` whose contents are not set, for a kernel that
    writes every element next (on the CPU; zeroed elsewhere)."""
    device = wp.get_device(device)
    if not device.is_cpu:
        return wp.empty(n, dtype=dtype, device=device, requires_grad=requires_grad)
    t = _as_dtype(dtype)
    buf = aligned_zeros((n,) + T.element_shape(t), T.numpy_dtype(t), zeroed=False)
    a = wp.array(buf, dtype=dtype, device=device, copy=False, requires_grad=requires_grad)
    a._exposed = False   # the buffer is this array's alone (no numpy view was handed out)
    return a
