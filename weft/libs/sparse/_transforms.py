"""The operations of weft.sparse that transform and combine matrices: transposition, diagonal and
identity matrices, ``bsr_scale`` and ``bsr_axpy``."""
import numpy as np

import weft as wp
from weft.core.typeinfo import is_array, type_is_matrix, types_equal

from ._common import _put
from ._kernels import _gather
from ._matrix import (_active, _active_coo, _assemble, _ensure_fits, _extract_matrix_and_scale,
                      _resize, bsr_zeros)


# ----------------------------------------------------------------------------- transpose

def bsr_set_transpose(dest, src, topology=None):
    """``dest := src^T`` (``src`` a matrix or a scaled expression; ``topology`` as
    :func:`bsr_assign`)."""
    src, src_scale = _extract_matrix_and_scale(src)
    if topology is None:
        topology = "compact"
    elif topology not in ("compact", "masked", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    if dest.values.device != src.values.device:
        raise ValueError(f"All arguments must reside on the same device, got "
                         f"{dest.values.device} and {src.values.device}")
    if dest.scalar_type != src.scalar_type:
        raise ValueError(f"All arguments must have the same scalar type, got "
                         f"{dest.scalar_type} and {src.scalar_type}")
    tshape = (src.block_shape[1], src.block_shape[0])
    if dest.block_shape != tshape:
        raise ValueError(f"Destination block shape must be {tshape}, got {dest.block_shape}")
    if topology == "compact":
        dest.nrow, dest.ncol = src.ncol, src.nrow
        if dest.offsets.size < dest.nrow + 1:
            dest.offsets = wp.empty(shape=(dest.nrow + 1,), dtype=int, device=dest.device)
    elif (dest.nrow, dest.ncol) != (src.ncol, src.nrow):
        raise ValueError(f"Destination matrix must have {src.ncol} rows and {src.nrow} columns, "
                         f"got {dest.nrow} and {dest.ncol}")
    rows, cols, slots = _active_coo(src)
    source = src.values
    if source is dest.values:
        source = wp.clone(source)
    _assemble(dest, topology, cols, rows,
              [(source, src.block_shape, 0, rows.shape[0], slots, src_scale, True)])


def bsr_transposed(A):
    """A new matrix, the transpose of ``A`` (a matrix or a scaled expression)."""
    src, _ = _extract_matrix_and_scale(A)
    if src.block_shape == (1, 1):
        block_type = src.values.dtype
    else:
        block_type = wp.types.matrix(shape=(src.block_shape[1], src.block_shape[0]),
                                     dtype=src.scalar_type)
    T = bsr_zeros(src.ncol, src.nrow, block_type=block_type, device=src.device)
    T.values.requires_grad = src.requires_grad
    bsr_set_transpose(dest=T, src=A)
    return T


# ----------------------------------------------------------------------------- diagonal

def bsr_get_diag(A, out=None):
    """The diagonal blocks of ``A`` (zero where absent), into ``out`` when given."""
    A, scale = _extract_matrix_and_scale(A)
    dim = min(A.nrow, A.ncol)
    if out is None:
        out = wp.zeros(shape=(dim,), dtype=A.values.dtype, device=A.values.device,
                       requires_grad=A.requires_grad)
    else:
        if not types_equal(out.dtype, A.values.dtype):
            raise ValueError(f"Output array must have type {A.values.dtype}, got {out.dtype}")
        if out.device != A.values.device:
            raise ValueError(f"Output array must reside on device {A.values.device}, got "
                             f"{out.device}")
        if out.shape[0] < dim:
            raise ValueError(f"Output array must be of length at least {dim}, got "
                             f"{out.shape[0]}")
    if dim == 0:
        return out
    rows, cols, slots = _active_coo(A)
    blk = np.where(rows == cols, rows, -1)
    _gather(out, A.block_shape, np.arange(dim),
            [(A.values, A.block_shape, blk, slots, scale, False)])
    return out


def bsr_set_diag(A, diag, rows_of_blocks=None, cols_of_blocks=None):
    """Make ``A`` block-diagonal with blocks ``diag`` (an array of blocks, one block for all,
    or None to leave the values uninitialized), optionally resized."""
    if rows_of_blocks is None and cols_of_blocks is not None:
        rows_of_blocks = cols_of_blocks
    if cols_of_blocks is None and rows_of_blocks is not None:
        cols_of_blocks = rows_of_blocks
    if is_array(diag) and rows_of_blocks is None:
        rows_of_blocks = cols_of_blocks = diag.shape[0]
    if rows_of_blocks is not None:
        _resize(A, rows_of_blocks, cols_of_blocks)
    nnz = min(A.nrow, A.ncol)
    _ensure_fits(A, nnz=nnz)
    _put(A.offsets, np.minimum(np.arange(A.nrow + 1), nnz).astype(np.int32))
    _put(A.columns, np.arange(nnz, dtype=np.int32))
    A.row_counts = None
    A.notify_nnz_changed(nnz=nnz)
    if is_array(diag):
        if nnz:
            wp.copy(src=diag, dest=A.values, count=nnz)
    elif diag is not None and nnz:
        v = np.asarray(diag, dtype=np.float64) if not np.isscalar(diag) else diag
        if np.ndim(v) == 0:
            A.values[:nnz].fill_(v if A.block_shape == (1, 1) else
                                  A.values.dtype(*([float(v)] * A.block_size)))
        else:
            _put(A.values, np.broadcast_to(np.asarray(v).reshape(A.block_shape),
                                           (nnz, *A.block_shape)))


def bsr_diag(diag=None, rows_of_blocks=None, cols_of_blocks=None, block_type=None, device=None):
    """A new block-diagonal matrix (see :func:`bsr_set_diag`); its size from the arguments or
    the length of ``diag``."""
    if rows_of_blocks is None and cols_of_blocks is not None:
        rows_of_blocks = cols_of_blocks
    if cols_of_blocks is None and rows_of_blocks is not None:
        cols_of_blocks = rows_of_blocks
    if is_array(diag):
        if rows_of_blocks is None:
            rows_of_blocks = cols_of_blocks = diag.shape[0]
        block_type = diag.dtype
        device = diag.device
    elif rows_of_blocks is None:
        raise ValueError("rows_of_blocks and/or cols_of_blocks must be provided for constructing "
                         "a diagonal matrix with uniform diagonal")
    if block_type is None:
        if diag is None:
            raise ValueError("Either `diag` or `block_type` needs to be provided")
        block_type = type(diag)
        if not type_is_matrix(block_type) and len(getattr(diag, "shape", ())) == 2:
            block_type = wp.types.matrix(shape=diag.shape, dtype=diag.dtype)
    A = bsr_zeros(rows_of_blocks, cols_of_blocks, block_type=block_type, device=device)
    if is_array(diag):
        A.values.requires_grad = diag.requires_grad
    bsr_set_diag(A, diag)
    return A


def bsr_set_identity(A, rows_of_blocks=None):
    """Make ``A`` the identity (square, resized when ``rows_of_blocks`` is given)."""
    identity = 1.0 if A.block_shape == (1, 1) else np.eye(A.block_shape[0])
    bsr_set_diag(A, diag=identity, rows_of_blocks=rows_of_blocks, cols_of_blocks=rows_of_blocks)


def bsr_identity(rows_of_blocks, block_type, device=None):
    """A new square identity matrix of ``rows_of_blocks`` blocks of ``block_type``."""
    A = bsr_zeros(rows_of_blocks, rows_of_blocks, block_type=block_type, device=device)
    bsr_set_identity(A)
    return A


# ----------------------------------------------------------------------------- scale / axpy

def bsr_scale(x, alpha):
    """``x := alpha * x`` in place; returns ``x``."""
    x, scale = _extract_matrix_and_scale(x)
    alpha = alpha * scale
    if alpha != 1.0 and x.nnz > 0:
        rows, slots = _active(x)
        _gather(x.values, x.block_shape, slots,
                [(x.values, x.block_shape, np.arange(slots.size), slots, alpha, False)])
    return x


class bsr_axpy_work_arrays:
    """Temporary storage reused by :func:`bsr_axpy` (kept for Warp's API; weft needs none)."""

    def __init__(self):
        self._reset(None)

    def _reset(self, device):
        self.device = device


def bsr_axpy(x, y=None, alpha=1.0, beta=1.0, work_arrays=None, topology=None):
    """``y := alpha * x + beta * y`` and return ``y`` (allocated, as zero, when None).
    ``topology``: ``"compact"`` (union of both topologies), ``"masked"`` (``y``'s) or
    ``"padded"`` (into ``y``'s row capacity)."""
    x, x_scale = _extract_matrix_and_scale(x)
    alpha = alpha * x_scale
    if topology is None:
        topology = "compact"
    elif topology not in ("compact", "masked", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    if y is None:
        if topology != "compact":
            raise ValueError("Left-hand-side 'y' matrix must be provided for this topology "
                             "policy")
        y = bsr_zeros(x.nrow, x.ncol, block_type=x.values.dtype, device=x.values.device)
        y.values.requires_grad = x.requires_grad
        beta = 0.0
    if x.values.device != y.values.device:
        raise ValueError(f"All arguments must reside on the same device, got "
                         f"{x.values.device} and {y.values.device}")
    if x.scalar_type != y.scalar_type or x.block_shape != y.block_shape:
        raise ValueError(f"Matrices must have the same block type, got ({x.block_shape}, "
                         f"{x.scalar_type}) and ({y.block_shape}, {y.scalar_type})")
    if x.nrow != y.nrow or x.ncol != y.ncol:
        raise ValueError(f"Matrices must have the same number of rows and columns, got "
                         f"({x.nrow}, {x.ncol}) and ({y.nrow}, {y.ncol})")
    xr, xc, xs = _active_coo(x)
    yr, yc, ys = _active_coo(y)
    nx = xr.shape[0]
    y_old = wp.clone(y.values) if (beta != 0.0 and ys.size) else None
    x_values = y_old if (x.values is y.values and y_old is not None) else x.values
    if x.values is y.values and y_old is None:
        x_values = wp.clone(x.values)
    rows = np.concatenate([xr, yr])
    cols = np.concatenate([xc, yc])
    terms = [(x_values, x.block_shape, 0, nx, xs, alpha, False)]
    if y_old is not None:
        terms.append((y_old, y.block_shape, nx, rows.shape[0], ys, beta, False))
    if topology == "padded":
        y.values.zero_()
    _assemble(y, topology, rows, cols, terms)
    return y
