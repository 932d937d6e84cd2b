"""The operations of weft.sparse: triplets, compression, copies, transposition, diagonals,
``bsr_axpy``, ``bsr_mm``, ``bsr_mv``, the kernel-API funcs, and the matrix operators."""
# (no ``from __future__ import annotations``: the kernel-API funcs' annotations are evaluated)
import os

import numpy as np

import weft as wp
from weft.runtime.hooks import active_tape
from weft.core.typeinfo import (is_array, type_is_matrix, type_repr, type_scalar_type,
                                type_size, types_equal)

from ._common import _block_ndarray, _int_array, _np, _put, _put_at, _scalar_view, _unset
from ._kernels import (_Values2d, _block_mv_kernel, _gather, _kernels_for, _segments,
                       _topology_kernels)
from ._matrix import (BsrMatrix, BsrTripletMap,
                      _BsrScalingExpression, _active, _active_coo, _assemble,
                      _ensure_fits, _extract_matrix_and_scale, _independent_row_counts,
                      _resize, _row_ranges, bsr_set_zero, bsr_zeros)

def _values_blocks(values, dest):
    """``values`` (1-d of the block type, or 3-d of the scalar type) checked against ``dest``,
    as a 1-d array of blocks (same memory)."""
    if values.ndim == 1:
        if not types_equal(values.dtype, dest.values.dtype):
            raise ValueError(f"Values array type must correspond to that of the dest matrix, got "
                             f"{type_repr(values.dtype)} and {type_repr(dest.values.dtype)}")
        return values
    if values.ndim == 3:
        if values.shape[1:] != dest.block_shape:
            raise ValueError(f"Last two dimensions in values array ({values.shape[1:]}) should "
                             f"correspond to matrix block shape {(dest.block_shape)})")
        if type_scalar_type(values.dtype) != dest.scalar_type:
            raise ValueError(f"Scalar type of values array ({type_repr(values.dtype)}) should "
                             f"correspond to that of matrix ({type_repr(dest.scalar_type)})")
        return values
    raise ValueError(f"Number of dimension for values array should be 1 or 3, got {values.ndim}")






def _nonzero_blocks(values, n):
    d = _np(values)[:n].reshape(n, -1)
    return np.any(d != 0, axis=1)


def bsr_set_from_triplets(dest, rows, columns, values=None, count=None,
                          prune_numerical_zeros=True, topology=None, build_mapping=None):
    """Fill ``dest`` from COO triplets (duplicates summed; out-of-range coordinates dropped;
    zero blocks dropped with ``prune_numerical_zeros``). ``topology``: ``"compact"`` (rebuild),
    ``"masked"`` (only ``dest``'s existing blocks), ``"padded"`` (into ``dest``'s row
    capacity, overflow reported by ``status_sync``). ``count``: a 1-element int array, the
    number of triplets to read. ``build_mapping``: True or a :class:`BsrTripletMap` to build
    and return."""
    if topology is None:
        topology = "compact"
    elif topology not in ("compact", "masked", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    if build_mapping is None or build_mapping is False:
        mapping = None
    elif build_mapping is True:
        mapping = BsrTripletMap(device=dest.device)
    elif isinstance(build_mapping, BsrTripletMap):
        mapping = build_mapping
        if mapping.device != dest.device:
            raise ValueError(f"Mapping and destination must reside on the same device, got "
                             f"{mapping.device} and {dest.device}")
    else:
        raise TypeError(f"build_mapping must be None, a bool or a BsrTripletMap, got "
                        f"{type(build_mapping)}")
    if mapping is not None and topology != "compact":
        raise ValueError('build_mapping requires topology="compact"')
    if mapping is not None and prune_numerical_zeros:
        raise ValueError("build_mapping requires prune_numerical_zeros=False")
    if rows.device != columns.device or rows.device != dest.device:
        raise ValueError(f"Rows and columns must reside on the destination matrix device, got "
                         f"{rows.device}, {columns.device} and {dest.device}")
    if rows.shape[0] != columns.shape[0]:
        raise ValueError(f"Rows and columns arrays must have the same length, got "
                         f"{rows.shape[0]} and {columns.shape[0]}")
    if rows.dtype != wp.int32 or columns.dtype != wp.int32:
        raise TypeError("Rows and columns arrays must be of type int32")
    if count is not None:
        if count.device != rows.device:
            raise ValueError(f"Count and rows must reside on the same device, got "
                             f"{count.device} and {rows.device}")
        if count.shape != (1,):
            raise ValueError(f"Count array must be a single-element array, got {count.shape}")
        if count.dtype != wp.int32:
            raise TypeError("Count array must be of type int32")
    if values is not None:
        if values.device != rows.device:
            raise ValueError(f"Values and rows must reside on the same device, got "
                             f"{values.device} and {rows.device}")
        if values.shape[0] != rows.shape[0]:
            raise ValueError(f"Values and rows arrays must have the same length, got "
                             f"{values.shape[0]} and {rows.shape[0]}")
        _values_blocks(values, dest)
        if not values.is_contiguous:
            raise ValueError("Values array must be contiguous")

    nnz = rows.shape[0]
    if nnz == 0:
        bsr_set_zero(dest, topology=topology)
        if mapping is not None:
            mapping._bind(dest, 0)
        return mapping

    n = nnz if count is None else max(0, min(nnz, int(_np(count)[0])))
    r = _np(rows)[:n].astype(np.int64)
    c = _np(columns)[:n].astype(np.int64)
    if prune_numerical_zeros and values is not None:
        keep = _nonzero_blocks(values, n)
        r = np.where(keep, r, -1)
    terms = []
    if values is not None:
        terms.append((_Values2d(values, dest.block_shape), dest.block_shape, 0, n,
                      np.arange(n), 1.0, False))
    if topology == "masked":
        if values is None:
            dest.values.zero_()
            return None
        _assemble(dest, "masked", r, c, terms)
        return None
    if topology == "padded":
        if values is not None:
            dest.values.zero_()
        _assemble(dest, "padded", r, c, terms)
        return None
    tgt, blk = _assemble(dest, "compact", r, c, terms, nnz_hint=nnz)
    if mapping is not None:
        mapping._reserve(nnz)
        ends_a, idx_a, blocks_a = (BsrTripletMap._view(a, nnz) for a in mapping._storage)
        blocks = np.full(nnz, -1, dtype=np.int32)
        blocks[:n] = blk
        nb = len(tgt)
        seg, order = _segments(blk, nb)
        ends = np.zeros(nnz, dtype=np.int32)
        ends[:nb] = seg[1:]
        idx = np.zeros(nnz, dtype=np.int32)
        idx[:order.size] = order
        _put(blocks_a, blocks)
        _put(ends_a, ends)
        _put(idx_a, idx)
        mapping._bind(dest, nnz)
    return mapping




def bsr_set_from_mapped_values(dest, mapping, values, reduction="gather"):
    """Set ``dest``'s values from new triplet ``values`` through a :class:`BsrTripletMap` built
    for ``dest`` (``reduction``: ``"gather"`` or ``"atomic"``, same result)."""
    if reduction not in ("gather", "atomic"):
        raise ValueError(f"Unsupported reduction: {reduction}")
    if not isinstance(mapping, BsrTripletMap):
        raise TypeError("mapping must be a BsrTripletMap")
    mapping.validate(dest)
    if values.shape[0] != mapping.triplet_count:
        raise ValueError(f"Values array must have {mapping.triplet_count} entries, got "
                         f"{values.shape[0]}")
    _values_blocks(values, dest)
    if not values.is_contiguous:
        raise ValueError("Values array must be contiguous")
    n = mapping.triplet_count
    if n == 0:
        return
    rows, slots = _active(dest)
    blk = _np(mapping._triplet_blocks)[:n].astype(np.int64)
    nb = len(slots)
    blk = np.where(blk < nb, blk, -1)
    _gather(dest.values, dest.block_shape, slots,
            [(_Values2d(values, dest.block_shape), dest.block_shape, blk, np.arange(n), 1.0,
              False)])


def bsr_from_triplets(rows_of_blocks, cols_of_blocks, rows, columns, values,
                      prune_numerical_zeros=True):
    """A new compact matrix from COO triplets (duplicates summed; ``nnz`` stays the triplet
    count until :meth:`BsrMatrix.nnz_sync`)."""
    if values.ndim == 3:
        block_type = wp.types.matrix(shape=values.shape[1:], dtype=values.dtype)
    else:
        block_type = values.dtype
    A = bsr_zeros(rows_of_blocks, cols_of_blocks, block_type=block_type, device=values.device)
    A.values.requires_grad = values.requires_grad
    bsr_set_from_triplets(A, rows, columns, values, prune_numerical_zeros=prune_numerical_zeros)
    return A


def bsr_compress(src, prune_numerical_zeros=True, inplace=False, topology=None,
                 structure_only=False):
    """Sort and merge the active blocks of each row of ``src`` (dropping out-of-range columns
    and, with ``prune_numerical_zeros``, zero blocks) and return ``src``. ``topology``:
    ``"compact"`` (default: packed storage, ``row_counts`` None) or ``"padded"`` (rows keep
    their capacity). ``structure_only`` merges columns only, leaving the values untouched."""
    if not isinstance(src, BsrMatrix):
        raise ValueError("bsr_compress() requires a concrete BsrMatrix")
    if topology is None:
        topology = "compact"
    elif topology not in ("compact", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    rows, cols, slots = _active_coo(src)
    if structure_only:
        if topology == "padded":
            _independent_row_counts(src)
        _assemble(src, topology, rows, cols, [])
        if topology == "compact":
            src.nnz = int(_np(src.offsets)[src.nrow])
        return src
    old_values = wp.clone(src.values[:max(src.nnz, int(slots.max()) + 1 if slots.size else 0)]) \
        if src.values.shape[0] else src.values
    if prune_numerical_zeros and slots.size:
        keep = _nonzero_blocks(old_values, old_values.shape[0])[slots]
        rows = np.where(keep, rows, -1)
    if topology == "padded":
        _independent_row_counts(src)
    _assemble(src, topology, rows, cols,
              [(old_values, src.block_shape, 0, rows.shape[0], slots, 1.0, False)])
    if topology == "compact":
        src.nnz = int(_np(src.offsets)[src.nrow])
    return src


def _host_assemble(dest, topology, rows, cols, blocks):
    """Like :func:`_assemble` with values computed on the host: ``blocks[t]`` (numpy, of
    ``dest``'s block shape) summed into its block. Not recorded on a tape."""
    tgt, blk = _assemble(dest, topology, rows, cols, [])
    if blocks is None:
        return tgt
    bs = dest.block_shape
    acc = np.zeros((len(tgt), bs[0] * bs[1]), dtype=dest.scalar_type._np_
                   if hasattr(dest.scalar_type, "_np_") else np.float64)
    keep = blk >= 0
    if keep.any():
        np.add.at(acc, blk[keep], blocks[keep].reshape(-1, bs[0] * bs[1]).astype(acc.dtype))
    if len(tgt):
        _put_at(dest.values, tgt, acc.reshape((len(tgt), *np.shape(_np(dest.values))[1:])))
    return tgt


# ----------------------------------------------------------------------------- assign / copy

def _reblock_check(dest_shape, src):
    if not (dest_shape[0] % src.block_shape[0] == 0 or src.block_shape[0] % dest_shape[0] == 0):
        raise ValueError(f"Incompatible dest and src block shapes; block rows must evenly divide "
                         f"one another (Got {dest_shape[0]}, {src.block_shape[0]})")
    if not (dest_shape[1] % src.block_shape[1] == 0 or src.block_shape[1] % dest_shape[1] == 0):
        raise ValueError(f"Incompatible dest and src block shapes; block columns must evenly "
                         f"divide one another (Got {dest_shape[1]}, {src.block_shape[1]})")
    if src.shape[0] % dest_shape[0] or src.shape[1] % dest_shape[1]:
        raise ValueError(f"The requested block shape {tuple(dest_shape)} does not evenly divide "
                         f"the source matrix of total size {src.shape}")


def _coefficients(src, scale):
    """The active coefficients of ``src`` as ``(rows, cols, values)`` in scalar coordinates."""
    rows, cols, slots = _active_coo(src)
    br, bc = src.block_shape
    vals = _block_ndarray(src.values)[slots].astype(np.float64) * scale
    a, b = np.meshgrid(np.arange(br), np.arange(bc), indexing="ij")
    r = (rows[:, None, None] * br + a[None]).reshape(-1)
    c = (cols[:, None, None] * bc + b[None]).reshape(-1)
    return r, c, vals.reshape(-1), rows.shape[0]


def bsr_assign(dest, src, structure_only=False, topology=None):
    """Copy ``src`` (a matrix or a scaled expression) into ``dest``, converting the scalar type
    and re-blocking when their block shapes divide one another. ``topology``: ``"compact"``
    (default), ``"masked"`` (keep ``dest``'s blocks) or ``"padded"`` (into ``dest``'s row
    capacity)."""
    src, src_scale = _extract_matrix_and_scale(src)
    if dest.values.device != src.values.device:
        raise ValueError("Source and destination matrices must reside on the same device")
    if topology is None:
        topology = "compact"
    elif topology not in ("compact", "masked", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    _reblock_check(dest.block_shape, src)
    dest_nrow = src.shape[0] // dest.block_shape[0]
    dest_ncol = src.shape[1] // dest.block_shape[1]
    if topology == "compact":
        dest.nrow, dest.ncol = dest_nrow, dest_ncol
        if dest.offsets.size < dest.nrow + 1:
            dest.offsets = wp.empty(shape=(dest.nrow + 1,), dtype=int, device=dest.device)
    elif (dest.nrow, dest.ncol) != (dest_nrow, dest_ncol):
        raise ValueError(f"Incompatible destination matrix size, expected ({dest_nrow}, "
                         f"{dest_ncol}), got ({dest.nrow}, {dest.ncol})")
    same = dest.block_shape == src.block_shape
    if same and (structure_only or dest.scalar_type == src.scalar_type):
        rows, cols, slots = _active_coo(src)
        source = src.values
        if source is dest.values and not structure_only:
            source = wp.clone(source)
        terms = [] if structure_only else \
            [(source, src.block_shape, 0, rows.shape[0], slots, src_scale, False)]
        _assemble(dest, topology, rows, cols, terms)
        return
    r, c, v, nsrc = _coefficients(src, 1.0 if structure_only else src_scale)
    dbr, dbc = dest.block_shape
    brow, bcol = r // dbr, c // dbc
    if structure_only:
        _host_assemble(dest, topology, brow, bcol, None)
        return
    blocks = np.zeros((r.shape[0], dbr * dbc))
    blocks[np.arange(r.shape[0]), (r % dbr) * dbc + (c % dbc)] = v
    _host_assemble(dest, topology, brow, bcol, blocks)


def bsr_copy(A, scalar_type=None, block_shape=None, structure_only=False, topology="compact"):
    """A copy of ``A`` (a matrix or a scaled expression), optionally with another scalar type
    or block shape (dividing or divided by ``A``'s). ``topology``: ``"compact"`` or
    ``"padded"`` (keeps ``A``'s row capacity)."""
    src, src_scale = _extract_matrix_and_scale(A)
    if topology not in ("compact", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    if scalar_type is None:
        scalar_type = src.scalar_type
    if block_shape is None:
        block_shape = src.block_shape
    block_shape = tuple(block_shape)
    if block_shape == (1, 1):
        block_type = scalar_type
    else:
        block_type = wp.types.matrix(shape=block_shape, dtype=scalar_type)
    if topology == "padded":
        _reblock_check(block_shape, src)
        nrow = src.shape[0] // block_shape[0]
        ncol = src.shape[1] // block_shape[1]
        if block_shape == src.block_shape:
            off = _np(src.offsets)[:src.nrow + 1]
            copy = bsr_zeros(nrow, ncol, block_type, device=src.device,
                             row_capacity=_int_array(off[1:] - off[:-1], src.device))
            copy.values.requires_grad = src.requires_grad
            _ensure_fits(copy, nnz=int(off[-1]))
        else:
            # row capacity: what the re-blocked rows can hold
            rows, cols, _ = _active_coo(src)
            sub_r = max(1, src.block_shape[0] // block_shape[0])
            sub_c = max(1, src.block_shape[1] // block_shape[1])
            caps = np.zeros(nrow, dtype=np.int64)
            if rows.size:
                per = np.bincount(rows, minlength=src.nrow) * sub_c
                dr = (np.arange(src.nrow * sub_r) * src.block_shape[0] // sub_r) // block_shape[0]
                np.add.at(caps, dr, np.repeat(per, sub_r))
            copy = bsr_zeros(nrow, ncol, block_type, device=src.device,
                             row_capacity=_int_array(caps, src.device))
            copy.values.requires_grad = src.requires_grad
        bsr_assign(copy, A, structure_only=structure_only, topology="padded")
        return copy
    copy = bsr_zeros(src.nrow, src.ncol, block_type, device=src.device)
    copy.values.requires_grad = src.requires_grad
    bsr_assign(dest=copy, src=A, structure_only=structure_only, topology=topology)
    return copy


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


# ----------------------------------------------------------------------------- mm

class bsr_mm_work_arrays:
    """Storage reused across :func:`bsr_mm` calls: with ``reuse_topology=True`` the product
    topology of the previous call is reused."""

    def __init__(self):
        self._reset(None)

    def _reset(self, device):
        self.device = device
        self._topology = None


def _row_lists(A):
    """Per row of ``A``: the start and count of its active blocks in ``_active_coo`` order,
    with the columns and slots of that order."""
    rows, cols, slots = _active_coo(A)
    counts = np.bincount(rows, minlength=A.nrow).astype(np.int64) if A.nrow else \
        np.zeros(0, np.int64)
    starts = np.zeros(A.nrow + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return rows, cols, slots, starts, counts


def _product_pairs(x, y):
    """Every pair ``(x block, y block)`` of ``x @ y``: its output row and column and the two
    storage slots."""
    xr, xc, xs = _active_coo(x)
    _, yc, ys, ystart, ycount = _row_lists(y)
    reps = ycount[xc] if xc.size else np.zeros(0, np.int64)
    total = int(reps.sum())
    first = np.zeros(xr.shape[0] + 1, dtype=np.int64)
    np.cumsum(reps, out=first[1:])
    rank = np.arange(total, dtype=np.int64) - np.repeat(first[:-1], reps)
    yidx = np.repeat(ystart[xc] if xc.size else xc, reps) + rank
    return np.repeat(xr, reps), yc[yidx], np.repeat(xs, reps), ys[yidx]


def bsr_mm(x, y, z=None, alpha=1.0, beta=0.0, work_arrays=None, reuse_topology=False,
           tile_size=0, max_new_nnz=None, topology=None):
    """``z := alpha * x @ y + beta * z`` and return ``z`` (allocated, as zero, when None).
    ``x``, ``y`` and ``z`` may alias. ``topology``: ``"compact"`` (rebuild), ``"masked"``
    (``z``'s blocks only) or ``"padded"`` (into ``z``'s row capacity); ``max_new_nnz`` bounds
    the new blocks of the product (a warning when exceeded)."""
    x, x_scale = _extract_matrix_and_scale(x)
    alpha = alpha * x_scale
    y, y_scale = _extract_matrix_and_scale(y)
    alpha = alpha * y_scale
    if topology is None:
        topology = "compact"
    elif topology not in ("compact", "masked", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    if topology == "padded" and reuse_topology:
        raise ValueError("reuse_topology is only supported with topology='compact'")
    if z is None:
        if topology != "compact":
            raise ValueError("Left-hand-side 'z' matrix must be provided for this topology "
                             "policy")
        zshape = (x.block_shape[0], y.block_shape[1])
        ztype = x.scalar_type if zshape == (1, 1) else \
            wp.types.matrix(shape=zshape, dtype=x.scalar_type)
        z = bsr_zeros(x.nrow, y.ncol, block_type=ztype, device=x.values.device)
        z.values.requires_grad = x.requires_grad or y.requires_grad
        beta = 0.0
    if x.values.device != y.values.device or x.values.device != z.values.device:
        raise ValueError(f"All arguments must reside on the same device, got "
                         f"{x.values.device}, {y.values.device} and {z.values.device}")
    if x.scalar_type != y.scalar_type or x.scalar_type != z.scalar_type:
        raise ValueError(f"Matrices must have the same scalar type, got {x.scalar_type}, "
                         f"{y.scalar_type} and {z.scalar_type}")
    if x.block_shape[0] != z.block_shape[0] or y.block_shape[1] != z.block_shape[1] or \
            x.block_shape[1] != y.block_shape[0]:
        raise ValueError(f"Incompatible block sizes for matrix multiplication, got "
                         f"({x.block_shape}, {y.block_shape}) and ({z.block_shape})")
    if x.nrow != z.nrow or z.ncol != y.ncol or x.ncol != y.nrow:
        raise ValueError(f"Incompatible number of rows/columns for matrix multiplication, got "
                         f"({x.nrow}, {x.ncol}) and ({y.nrow}, {y.ncol})")
    if reuse_topology and work_arrays is None:
        raise ValueError("`work_arrays` must not be ``None`` in order to reuse matrix-matrix "
                         "product topology")

    if topology == "compact" and max_new_nnz is None and (beta == 0.0 or z.nnz == 0) and \
            x.row_counts is None and y.row_counts is None and x.nrow > 0:
        return _mm_compact(x, y, z, alpha, work_arrays, reuse_topology)

    # sources that z's new values would overwrite are read from copies
    x_values = x.values
    y_values = y.values
    if x_values is z.values:
        x_values = wp.clone(x_values)
    if y_values is z.values:
        y_values = x_values if y.values is x.values else wp.clone(y_values)
    zr, zc, zs = _active_coo(z)
    z_old = wp.clone(z.values) if (beta != 0.0 and zs.size) else None

    pr, pc, px, py = _product_pairs(x, y)
    if max_new_nnz is not None and topology == "compact":
        keys = pr * max(z.ncol, 1) + pc
        ukeys = np.unique(keys)
        if z_old is not None:
            ukeys = np.setdiff1d(ukeys, zr * max(z.ncol, 1) + zc, assume_unique=False)
        if ukeys.size > max_new_nnz:
            print(f"Number of potential `bsr_mm` blocks ({ukeys.size}) exceeded `max_nnz` "
                  f"({max_new_nnz})", flush=True)
            allowed = np.concatenate([ukeys[:max_new_nnz], zr * max(z.ncol, 1) + zc]) \
                if z_old is not None else ukeys[:max_new_nnz]
            keep = np.isin(keys, allowed)
            pr, pc, px, py = pr[keep], pc[keep], px[keep], py[keep]
    npairs = pr.shape[0]
    if z_old is not None:
        rows = np.concatenate([pr, zr])
        cols = np.concatenate([pc, zc])
    else:
        rows, cols = pr, pc
    if topology == "padded":
        _independent_row_counts(z, preserve=False)
    # topology, and z's old values scaled by beta (every written block set)
    terms = []
    if z_old is not None:
        terms.append((z_old, z.block_shape, npairs, rows.shape[0], zs, beta, False))
    tgt, blk = _assemble(z, topology, rows, cols, [])
    if len(tgt):
        if terms:
            src, shape, first, last, slots, scale, tr = terms[0]
            _gather(z.values, z.block_shape, tgt, [(src, shape, blk[first:last], slots, scale,
                                                    tr)])
        else:
            _zero_blocks(z, tgt)
    if work_arrays is not None:
        work_arrays._topology = True
    if npairs and alpha != 0.0 and len(tgt):
        pblk = blk[:npairs]
        seg, order = _segments(pblk, len(tgt))
        device = z.device
        k = _kernels_for(z.scalar_type)
        bs = z.block_shape[0] * z.block_shape[1]
        wp.launch(k["mm_pairs"], dim=(len(tgt), bs), device=device,
                  inputs=[_scalar_view(z.values, z.block_shape), _int_array(tgt, device),
                          _int_array(seg, device), _int_array(px[order], device),
                          _int_array(py[order], device),
                          _scalar_view(x_values, x.block_shape),
                          _scalar_view(y_values, y.block_shape), x.block_shape[1],
                          z.block_shape[1], z.scalar_type(alpha)])
    return z


_markers = {}


def _marker(workers, ncol, nrow, device):
    """The marker array of the product topology kernels, kept between products, the stamp
    this product's tags start from (tags only grow, so old marks never match; the array is
    refilled when they would overflow) and the array of the columns' places in their row."""
    key = (str(device), workers, ncol)
    m = _markers.get(key)
    if m is None or m[1] + 2 * nrow >= 2 ** 31 - 1:
        _markers.clear()
        m = [wp.full((workers, max(ncol, 1)), -1, dtype=int, device=device), 0,
             wp.empty((workers, max(ncol, 1)), dtype=int, device=device)]
        _markers[key] = m
    stamp = m[1]
    m[1] += 2 * nrow
    return m[0], stamp, m[2]


def _threaded(kernel, dim, device, inputs):
    """Launch ``kernel`` over ``dim`` threads on every core even when ``dim`` is below
    ``wp.config.serial_threshold`` (each thread here is a large piece of work)."""
    saved = wp.config.serial_threshold
    wp.config.serial_threshold = min(saved, dim)
    try:
        wp.launch(kernel, dim=dim, device=device, inputs=inputs)
    finally:
        wp.config.serial_threshold = saved


def _mm_compact(x, y, z, alpha, work_arrays, reuse_topology):
    """``z := alpha * x @ y`` of compact matrices: the product topology by the marker kernel
    (one pass over the rows, every core), the values (and the columns, from the topology
    kernel's scratch) by ``mm_rows``."""
    device = z.device
    nrow, ncol = x.nrow, y.ncol
    xs, xe = _row_ranges(x)
    ys, ye = _row_ranges(y)
    x_columns, y_columns = x.columns, y.columns
    # z's topology is rewritten while x's and y's are read: read them from copies if shared
    z_arrays = (id(z.offsets), id(z.columns))
    if id(x.offsets) in z_arrays or id(x.columns) in z_arrays:
        xs, xe, x_columns = wp.clone(xs), wp.clone(xe), wp.clone(x.columns)
    if id(y.offsets) in z_arrays or id(y.columns) in z_arrays:
        ys, ye, y_columns = wp.clone(ys), wp.clone(ye), wp.clone(y.columns)
    x_values, y_values = x.values, y.values
    if x_values is z.values:
        x_values = wp.clone(x_values)
    if y_values is z.values:
        y_values = x_values if y.values is x.values else wp.clone(y_values)
    cached = None if work_arrays is None else work_arrays._topology
    kv = _kernels_for(z.scalar_type)
    bs = z.block_shape[0] * z.block_shape[1]
    vals = None
    if reuse_topology and isinstance(cached, tuple) and cached[0] == (nrow, ncol):
        offsets_np, nnz, pair_offsets, pos, scratch = cached[1:]
    else:
        # the first product of each row
        pairs = wp.zeros(nrow + 1, dtype=wp.int64, device=device)
        wp.launch(_topology_kernels()["row_pairs"], dim=nrow, device=device,
                  inputs=[xs, xe, x_columns, ys, ye, pairs])
        pair_offsets = np.cumsum(_np(pairs))
        npairs = int(pair_offsets[-1])
        if npairs >= 2 ** 31:
            raise ValueError("bsr_mm: more than 2^31 block products")
        pair_offsets = _int_array(pair_offsets, device)
        keep = work_arrays is not None
        fused = active_tape() is None
        # a later product may reuse the topology: its arrays are the product's own, else
        # scratch arrays shared by every product (grown as needed); the one-pass product
        # numbers its products (pos) only for such a later product
        if keep:
            pos = wp.empty(max(npairs, 1), dtype=int, device=device)
            scratch = wp.empty(max(npairs, 1), dtype=int, device=device)
        else:
            pos = _pooled(device, "pos", int, 1 if fused else npairs)
            scratch = _pooled(device, "scratch", int, npairs)
        counts = _pooled(device, "counts", int, nrow)
        workers = max(1, min(nrow, 4 * (os.cpu_count() or 1), (1 << 26) // max(ncol, 1)))
        marker, stamp, slot = _marker(workers, ncol, nrow, device)
        if fused:
            # off a tape: one pass sums the values with the topology, into scratch rows that
            # sparse_mm_compact moves into z
            vals = _pooled(device, "vals", z.scalar_type, npairs * bs)
            common = [marker, slot, stamp, pair_offsets, scratch, counts]
            if bs == 1 and x.block_shape == (1, 1):
                _threaded(kv["csr_mm_fused"], workers, device,
                          [workers, nrow, xs, xe, x_columns, _flat1(x_values), ys, ye,
                           y_columns, _flat1(y_values)] + common +
                          [vals, int(keep), pos, z.scalar_type(alpha)])
                vals = vals.reshape((max(npairs, 1), 1))
            else:
                vals = vals.reshape((max(npairs, 1), bs))
                _threaded(kv["mm_fused"], workers, device,
                          [workers, nrow, xs, xe, x_columns,
                           _scalar_view(x_values, x.block_shape), ys, ye, y_columns,
                           _scalar_view(y_values, y.block_shape)] + common +
                          [vals, int(keep), pos, x.block_shape[1], z.block_shape[1],
                           z.scalar_type(alpha)])
        else:
            _threaded(_topology_kernels()["mm"], workers, device,
                      [workers, nrow, xs, xe, x_columns, ys, ye, y_columns, marker, stamp,
                       pair_offsets, scratch, counts, pos])
        offsets_np = np.zeros(nrow + 1, dtype=np.int64)
        np.cumsum(_np(counts)[:nrow], out=offsets_np[1:])
        offsets_np = offsets_np.astype(np.int32)
        nnz = int(offsets_np[-1])
        if keep:
            work_arrays._topology = ((nrow, ncol), offsets_np, nnz, pair_offsets, pos, scratch)
    z.nrow, z.ncol = nrow, ncol
    if z.offsets.size < nrow + 1:
        z.offsets = wp.empty(shape=(nrow + 1,), dtype=int, device=device)
    if vals is not None and z.values.size < nnz:
        # every element is written by sparse_mm_compact
        z.columns = _unset(nnz, int, device)
        z.values = _unset(nnz, z.values.dtype, device, z.values.requires_grad)
    _ensure_fits(z, nnz=nnz)
    _put(z.offsets, offsets_np)
    z.row_counts = None
    z.nnz = nnz
    z._refresh_nnz_transfer_if_pending()
    if nnz == 0:
        return z
    if vals is not None:
        wp.launch(kv["mm_compact"], dim=nrow, device=device,
                  inputs=[pair_offsets, scratch, vals, z.offsets, z.columns,
                          _scalar_view(z.values, z.block_shape)])
        return z
    z.values.zero_()   # as Warp (not a taped store)
    # the value kernels also copy each row's columns from the scratch
    if z.block_shape == (1, 1) and x.block_shape == (1, 1):
        wp.launch(kv["csr_mm_rows"], dim=nrow, device=device,
                  inputs=[xs, xe, x_columns, _flat1(x_values), ys, ye, _flat1(y_values),
                          pair_offsets, pos, scratch, z.offsets, z.columns, _flat1(z.values),
                          z.scalar_type(alpha)])
    else:
        wp.launch(kv["mm_rows"], dim=nrow, device=device,
                  inputs=[xs, xe, x_columns, _scalar_view(x_values, x.block_shape), ys, ye,
                          _scalar_view(y_values, y.block_shape), pair_offsets, pos, scratch,
                          z.offsets, z.columns, _scalar_view(z.values, z.block_shape),
                          x.block_shape[1], z.block_shape[1], z.scalar_type(alpha)])
    return z


_pool = {}


def _pooled(device, name, dtype, n):
    """A scratch array of at least ``n`` elements (``n`` of them returned) shared by the
    products off a tape, grown as needed."""
    key = (str(device), name, dtype)
    a = _pool.get(key)
    if a is None or a.shape[0] < max(n, 1):
        a = _pool[key] = wp.empty(max(n, 1), dtype=dtype, device=device)
    return a[:max(n, 1)]


def _zero_blocks(A, slots):
    """Set the blocks at ``slots`` to zero (a kernel, so a tape sees the overwrite)."""
    _gather(A.values, A.block_shape, slots,
            [(A.values, A.block_shape, np.full(len(slots), -1), np.zeros(len(slots)), 0.0,
              False)])


# ----------------------------------------------------------------------------- mv

def _vec_view(array, scalar, expected):
    """``array`` as a 2-d scalar array ``(n, length)`` checked to hold ``expected`` scalars."""
    count = array.size * type_size(array.dtype)
    if count != expected:
        raise ValueError(f"Invalid array scalar size, expected {expected}, got {count}")
    if type_scalar_type(array.dtype) != scalar:
        raise ValueError(f"Incompatible scalar types, expected {type_repr(array.dtype)}, got "
                         f"{type_repr(scalar)}")
    if array.ndim > 2:
        raise ValueError(f"Incompatible array number of dimensions, expected 1 or 2, got "
                         f"{array.ndim}")
    if not array.is_contiguous:
        raise ValueError("Array must be contiguous")
    a = array.view(scalar) if array.dtype is not scalar else array
    return a


def bsr_mv(A, x, y=None, alpha=1.0, beta=0.0, transpose=False, work_buffer=None, tile_size=0):
    """``y := alpha * A @ x + beta * y`` (``A^T`` with ``transpose``) and return ``y``
    (allocated, as zero, when None). ``x`` and ``y`` are arrays of scalars or of vectors of the
    block dimensions; they may alias (``work_buffer``: the temporary copy)."""
    A, A_scale = _extract_matrix_and_scale(A)
    alpha = alpha * A_scale
    if transpose:
        block_shape = A.block_shape[1], A.block_shape[0]
        nrow, ncol = A.ncol, A.nrow
    else:
        block_shape = A.block_shape
        nrow, ncol = A.nrow, A.ncol
    scalar = A.scalar_type
    if y is None:
        ylen = block_shape[0]
        ytype = scalar if ylen == 1 else wp.types.vector(length=ylen, dtype=scalar)
        y = wp.empty(shape=(nrow,), device=A.values.device, dtype=ytype,
                     requires_grad=x.requires_grad or A.requires_grad)
        beta = 0.0
    if A.values.device != x.device or A.values.device != y.device:
        raise ValueError(f"A, x, and y must reside on the same device, got {A.values.device}, "
                         f"{x.device} and {y.device}")
    if x.ptr == y.ptr:
        if work_buffer is None:
            work_buffer = wp.empty_like(y)
        elif work_buffer.size < y.size:
            raise ValueError(f"Work buffer size is insufficient, needs to be at least {y.size}, "
                             f"got {work_buffer.size}")
        elif not types_equal(work_buffer.dtype, y.dtype):
            raise ValueError(f"Work buffer must have same data type as y, {type_repr(y.dtype)} "
                             f"vs {type_repr(work_buffer.dtype)}")
        wp.copy(dest=work_buffer, src=y, count=y.size)
        x = work_buffer
    if not transpose and nrow > 0 and block_shape != (1, 1) and type_is_matrix(A.values.dtype) and max(block_shape) <= 6 and \
            _is_vec_array(x, block_shape[1], scalar, ncol) and \
            _is_vec_array(y, block_shape[0], scalar, nrow):
        # vector arrays of the block's dimensions (block Krylov solvers): no views
        starts, ends, columns, _ = _mv_operands(A)
        wp.launch(_block_mv_kernel(scalar, *block_shape), dim=nrow, device=A.values.device,
                  inputs=[starts, ends, columns, A.values, x, scalar(alpha), scalar(beta), y,
                          y])
        return y
    scalar_xy = block_shape == (1, 1) and x.ndim == 1 and y.ndim == 1 and \
        x.dtype is scalar and y.dtype is scalar
    if scalar_xy and x.shape[0] == ncol and y.shape[0] == nrow and \
            x.strides[0] == y.strides[0] == np.dtype(scalar._np_).itemsize:
        xv, yv = x, y   # the common CSR case, without views
    else:
        try:
            xv = _vec_view(x, scalar, ncol * block_shape[1])
        except ValueError as err:
            raise ValueError("Incompatible 'x' vector for bsr_mv") from err
        try:
            yv = _vec_view(y, scalar, nrow * block_shape[0])
        except ValueError as err:
            raise ValueError("Incompatible 'y' vector for bsr_mv") from err
        xv = xv.reshape((ncol, block_shape[1])) if block_shape != (1, 1) else \
            xv.reshape((ncol,))
        yv = yv.reshape((nrow, block_shape[0])) if block_shape != (1, 1) else \
            yv.reshape((nrow,))
    if transpose:
        At = bsr_transposed(A)
        bsr_mv(At, x, y, alpha, beta)
        return y
    if nrow == 0:
        return y
    # y read (beta) and written in place: each thread reads and writes its own row only, which
    # a tape reverses exactly (the row's adjoint is read, restarted, then fed to the old y)
    w = yv
    k = _kernels_for(scalar)
    starts, ends, columns, values = _mv_operands(A)
    device = A.values.device
    if block_shape == (1, 1):
        wp.launch(k["csr_mv"], dim=nrow, device=device,
                  inputs=[starts, ends, columns, values, xv, scalar(alpha), scalar(beta), w, yv])
    elif type_is_matrix(A.values.dtype) and not transpose and max(block_shape) <= 6:
        kb = _block_mv_kernel(scalar, *block_shape)
        VX = wp.types.vector(length=block_shape[1], dtype=scalar)
        VY = wp.types.vector(length=block_shape[0], dtype=scalar)
        wp.launch(kb, dim=nrow, device=device,
                  inputs=[starts, ends, columns, A.values, _as_vec(xv, VX), scalar(alpha),
                          scalar(beta), _as_vec(w, VY), _as_vec(yv, VY)])
    else:
        wp.launch(k["bsr_mv"], dim=(nrow, block_shape[0]), device=device,
                  inputs=[starts, ends, columns, values, xv, block_shape[1], scalar(alpha),
                          scalar(beta), w, yv])
    return y


def _is_vec_array(a, length, scalar, count):
    """Whether ``a`` is a contiguous 1-d array of ``count`` vectors of ``length`` ``scalar``."""
    dt = a.dtype
    return a.ndim == 1 and a.shape[0] == count and getattr(dt, "_length_", 0) == length and \
        getattr(dt, "_shape_", None) == (length,) and type_scalar_type(dt) is scalar and \
        a.strides[0] == length * np.dtype(scalar._np_).itemsize


def _as_vec(a, V):
    """A 2-d scalar array ``(n, L)`` (or a 1-d array for ``L = 1``) as an array of ``V``."""
    if V._length_ == 1:
        if a.ndim != 1:
            a = a.reshape((a.shape[0],))
    elif a.ndim == 1:
        a = a.reshape((a.shape[0] // V._length_, V._length_))
    return a.view(V)


def _flat1(values):
    """A values array of 1x1 blocks as a 1-d scalar array (same memory and gradient)."""
    if type_is_matrix(values.dtype):
        return _scalar_view(values, (1, 1)).reshape((values.shape[0],))
    return values


def _mv_operands(A):
    """``(starts, ends, columns, values)`` of ``A`` as the product kernels take them (values:
    1-d scalars for CSR, 2-d ``(nnz, rows * cols)`` scalars for BSR), cached on the matrix for
    compact matrices while its arrays stay the same objects (they may change in place)."""
    key = (A.nrow, id(A.offsets), id(A.columns), id(A.values), A.row_counts is None)
    cached = getattr(A, "_mv_cache", None)
    if cached is not None and cached[0] == key and A.row_counts is None:
        return cached[1]
    starts, ends = _row_ranges(A)
    if A.block_shape == (1, 1) and not type_is_matrix(A.values.dtype):
        values = A.values
    else:
        values = _scalar_view(A.values, A.block_shape)
        if A.block_shape == (1, 1):
            values = values.reshape((values.shape[0],))
    ops = (starts, ends, A.columns, values)
    BsrMatrix.__setattr__(A, "_mv_cache", (key, ops))
    return ops


# ----------------------------------------------------------------------------- kernel API

@wp.func
def bsr_row_index(offsets: wp.array(dtype=int), row_count: int, block_index: int) -> int:
    """Index of the row containing block ``block_index``, or -1 (binary search in
    ``offsets``)."""
    lo = int(0)
    hi = row_count
    res = int(-1)
    if block_index >= 0 and block_index < offsets[row_count]:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if offsets[mid] <= block_index:
                lo = mid
            else:
                hi = mid
        res = lo
    return res


@wp.func
def bsr_block_index(row: int, col: int, bsr_offsets: wp.array(dtype=int),
                    bsr_columns: wp.array(dtype=int)) -> int:
    """Index of the block at ``(row, col)`` of a compact matrix with sorted columns, or -1."""
    res = int(-1)
    if row >= 0:
        lo = bsr_offsets[row]
        hi = bsr_offsets[row + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if bsr_columns[mid] < col:
                lo = mid + 1
            else:
                hi = mid
        if lo < bsr_offsets[row + 1]:
            if bsr_columns[lo] == col:
                res = lo
    return res


# ----------------------------------------------------------------------------- operators

def _add(self, y):
    return bsr_axpy(y, bsr_copy(self))


def _radd(self, x):
    return bsr_axpy(x, bsr_copy(self))


def _sub(self, y):
    return bsr_axpy(y, bsr_copy(self), alpha=-1.0)


def _rsub(self, x):
    return bsr_axpy(x, bsr_copy(self), beta=-1.0)


def _matmul(self, y):
    if is_array(y):
        return bsr_mv(self, y)
    return bsr_mm(self, y)


def _rmatmul(self, x):
    if is_array(x):
        return bsr_mv(self, x, transpose=True)
    return bsr_mm(x, self)


def _iadd(self, y):
    return bsr_axpy(y, self)


def _isub(self, y):
    return bsr_axpy(y, self, alpha=-1.0)


def _imul(self, y):
    return bsr_scale(self, y)


def _imatmul(self, y):
    return bsr_mm(self, y, self)


def _transpose(self):
    """A transposed copy of this matrix."""
    return bsr_transposed(self)


def _expr_transpose(self):
    """The transposed expression (its matrix transposed now, the scale kept lazy)."""
    return _BsrScalingExpression(bsr_transposed(self.mat), self.scale)


def _eval(self):
    """The expression as a new matrix."""
    return bsr_copy(self)


for _cls in (BsrMatrix, _BsrScalingExpression):
    _cls.__add__, _cls.__radd__, _cls.__sub__, _cls.__rsub__ = _add, _radd, _sub, _rsub
    _cls.__matmul__, _cls.__rmatmul__ = _matmul, _rmatmul
BsrMatrix.__iadd__, BsrMatrix.__isub__, BsrMatrix.__imul__ = _iadd, _isub, _imul
BsrMatrix.__imatmul__, BsrMatrix.transpose = _imatmul, _transpose
_BsrScalingExpression.transpose, _BsrScalingExpression.eval = _expr_transpose, _eval
