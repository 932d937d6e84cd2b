"""The operations of weft.sparse that assemble and convert matrices: triplets (and their
``BsrTripletMap``), compression, ``bsr_assign`` and ``bsr_copy`` (scalar type and re-blocking)."""
import numpy as np

import weft as wp
from weft.core.typeinfo import type_repr, type_scalar_type, types_equal

from ._common import _block_ndarray, _int_array, _np, _put, _put_at
from ._kernels import _Values2d, _gather, _segments
from ._matrix import (BsrMatrix, BsrTripletMap, _active, _active_coo, _assemble, _ensure_fits,
                      _extract_matrix_and_scale, _independent_row_counts, bsr_set_zero,
                      bsr_zeros)

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
