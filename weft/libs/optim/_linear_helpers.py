"""The array helpers shared by :mod:`weft.optim.linear` and its modules: scalar types and
counts, flat scalar views, host copies and writes, BSR matrices read on the host, and the
scalar CSR product of the preconditioners."""
from __future__ import annotations

import numpy as np

from ...core import types as T
from ...runtime.array import array
from ...runtime.launch import launch
from ._linear_kernels import kernels_for


# ----------------------------------------------------------------------------- helpers
def _scalar_type(dtype):
    return T.scalar_of(dtype) if T.is_composite(dtype) else dtype


def _dofs_per_entry(dtype):
    return dtype._length_ if T.is_composite(dtype) else 1


def _scalar_dof_count(x):
    return x.shape[0] * _dofs_per_entry(x.dtype)


def _flat(a):
    """``a`` as a 1-d array of scalars sharing its memory (vector/matrix elements split)."""
    if a is None:
        return None
    if T.is_composite(a.dtype):
        a = a.view(T.scalar_of(a.dtype))
    return a if a.ndim == 1 else a.flatten()


def _host(a):
    """A numpy view of a CPU array (a copy from a CUDA device)."""
    return a._data if not a.device.is_cuda else a.numpy()


def _put(a, values):
    """Write numpy ``values`` into array ``a`` (in place on the CPU)."""
    if a.device.is_cuda:
        host = np.empty(_host(a).shape, dtype=_host(a).dtype)
        host[...] = values
        a.assign(host)
    else:
        a._data[...] = values


def _is_bsr(A):
    return all(hasattr(A, f) for f in ("offsets", "columns", "values", "block_shape", "nrow"))


def _bsr_host(A):
    """(offsets, columns, values (nnz, br, bc) float64) of a BSR matrix, on the host."""
    nnz = int(_host(A.offsets)[A.nrow])
    offsets = np.asarray(_host(A.offsets)[: A.nrow + 1], dtype=np.int64)
    columns = np.asarray(_host(A.columns)[:nnz], dtype=np.int64)
    br, bc = A.block_shape
    values = np.asarray(_host(A.values)[:nnz], dtype=np.float64).reshape(nnz, br, bc)
    return offsets, columns, values


def _to_array(values, dtype, device):
    return array(np.ascontiguousarray(values), dtype=dtype, device=device)


def _csr_arrays(offsets, columns, values, dtype, device):
    return (_to_array(np.asarray(offsets, np.int32), T.int32, device),
            _to_array(np.asarray(columns, np.int32), T.int32, device),
            _to_array(np.asarray(values, T.numpy_dtype(dtype)), dtype, device))


def _csr_mv(csr, x, y, z, alpha, beta):
    """``z = alpha * C x + beta * y`` for a scalar CSR ``csr = (offsets, columns, values)``."""
    offsets, columns, values = csr
    k = kernels_for(values.dtype).csr_mv
    zf = _flat(z)
    launch(k, dim=zf.shape[0], inputs=[offsets, columns, values, _flat(x), _flat(y), zf,
                                      float(alpha), float(beta)], device=values.device)
