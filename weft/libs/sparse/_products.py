"""The products of weft.sparse: ``bsr_mm`` (the compact one-pass product, its scratch and marker
arrays) and ``bsr_mv``."""
import os

import numpy as np

import weft as wp
from weft.runtime.hooks import active_tape
from weft.core.typeinfo import type_is_matrix, type_repr, type_scalar_type, type_size, types_equal

from ._common import _int_array, _np, _put, _scalar_view, _unset
from ._kernels import _block_mv_kernel, _gather, _kernels_for, _segments, _topology_kernels
from ._matrix import (BsrMatrix, _active_coo, _assemble, _ensure_fits, _extract_matrix_and_scale,
                      _independent_row_counts, _row_ranges, bsr_zeros)
from ._transforms import bsr_transposed


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
