"""``BsrMatrix``, ``BsrTripletMap``, the lazy scaled expression, and the host-side topology
(active blocks, storage, ``bsr_zeros``/``bsr_set_zero``, ``_assemble``)."""
import sys
from typing import Generic, TypeVar

import numpy as np

import weft as wp
from weft.core.typeinfo import (is_array, type_is_matrix, type_repr, type_scalar_type,
                                type_size, type_to_warp)
from weft.core.types import scalar_types

from ._common import _int_array, _np, _put, _put_at, _scalar_view
from ._kernels import _gather

BSR_STATUS_SUCCESS = 0
"""Status code: no error."""
BSR_STATUS_ROW_CAPACITY_EXCEEDED = 1
"""Status code: a padded operation needed more blocks in a row than its capacity."""

_BlockType = TypeVar("_BlockType")

class BsrTripletMap:
    """Reusable mapping from COO triplets to an existing BSR topology (Warp's
    ``BsrTripletMap``): built by :func:`bsr_set_from_triplets` with ``build_mapping``, used by
    :func:`bsr_set_from_mapped_values` to update values without rebuilding the topology."""

    def __init__(self, capacity: int = 0, device=None):
        self.triplet_count = 0
        self._storage = BsrTripletMap._allocate_storage(capacity, wp.get_device(device))
        self._dest_key = None

    @staticmethod
    def _allocate_storage(capacity, device):
        return tuple(wp.empty(shape=(capacity,), dtype=wp.int32, device=device) for _ in range(3))

    @property
    def device(self):
        """Device on which the map storage is allocated."""
        return self._storage[0].device

    @property
    def capacity(self) -> int:
        """Number of triplets the map can be built for without reallocating its storage."""
        return self._storage[0].shape[0]

    @staticmethod
    def _view(array, count):
        if count == array.shape[0]:
            return array
        if count == 0:
            return wp.empty(shape=(0,), dtype=array.dtype, device=array.device)
        return array[:count]

    @property
    def _block_ends(self):
        return BsrTripletMap._view(self._storage[0], self.triplet_count)

    @property
    def _triplet_indices(self):
        return BsrTripletMap._view(self._storage[1], self.triplet_count)

    @property
    def _triplet_blocks(self):
        return BsrTripletMap._view(self._storage[2], self.triplet_count)

    def _reserve(self, triplet_count):
        if triplet_count > self.capacity:
            self._storage = BsrTripletMap._allocate_storage(triplet_count, self.device)

    @staticmethod
    def _key_of(dest):
        return (dest.nrow, dest.ncol, id(dest.offsets), id(dest.columns),
                None if dest.row_counts is None else id(dest.row_counts))

    def _bind(self, dest, triplet_count):
        self.triplet_count = triplet_count
        self._dest_key = BsrTripletMap._key_of(dest)

    def validate(self, dest) -> None:
        """Raise if ``dest``'s dimensions or topology arrays differ from those the map was
        built for (identities only: topology modified in place is not detected)."""
        if self._dest_key is None:
            raise ValueError("The triplet map has not been built; pass it to "
                             "bsr_set_from_triplets() first")
        if BsrTripletMap._key_of(dest) != self._dest_key:
            raise ValueError("Destination BSR topology storage differs from that used to build "
                             "the triplet map")


class BsrMatrix(Generic[_BlockType]):
    """A BSR (or CSR, 1x1 blocks) matrix; made by :func:`bsr_zeros` and the other constructors.

    Attributes:
        nrow, ncol: numbers of rows and columns of blocks.
        nnz: host-side upper bound on the stored block slots (call :meth:`nnz_sync` for the
          exact count of a compact matrix).
        offsets: int array of at least ``nrow + 1``: row ``r`` is stored in
          ``offsets[r]:offsets[r+1]``.
        row_counts: None (compact), or int array of the active blocks of each row (padded:
          row ``r``'s active blocks are ``offsets[r]:offsets[r] + row_counts[r]``).
        columns, values: block columns and values, at least ``nnz`` long.
    """

    @property
    def scalar_type(self):
        """Scalar type of the block coefficients."""
        return type_scalar_type(self.values.dtype)

    @property
    def block_shape(self):
        """Shape of the blocks."""
        return getattr(self.values.dtype, "_shape_", (1, 1))

    @property
    def block_size(self):
        """Number of coefficients of a block."""
        return type_size(self.values.dtype)

    @property
    def shape(self):
        """Shape of the matrix in coefficients."""
        bs = self.block_shape
        return (self.nrow * bs[0], self.ncol * bs[1])

    @property
    def dtype(self):
        """Block type."""
        return self.values.dtype

    @property
    def device(self):
        """Device of the matrix arrays."""
        return self.offsets.device

    @property
    def requires_grad(self):
        """Whether the values have a gradient."""
        return self.values.requires_grad

    @property
    def scalar_values(self):
        """The values as a 3-d scalar array ``(n, rows, cols)`` (same memory and gradient)."""
        n = self.values.shape[0]
        return _scalar_view(self.values, self.block_shape).reshape((n, *self.block_shape))

    def uncompress_rows(self, out=None):
        """The row of each of the first ``nnz`` stored slots (-1 outside active rows)."""
        if out is None:
            out = wp.empty(self.nnz, dtype=int, device=self.device)
        rows = np.full(self.nnz, -1, dtype=np.int32)
        r, slots = _active(self)
        keep = slots < self.nnz
        rows[slots[keep]] = r[keep]
        _put(out, rows)
        return out

    def nnz_sync(self) -> int:
        """Read ``offsets[nrow]`` back into ``nnz`` and return it."""
        buf = self._nnz_transfer_if_pending()
        if buf is None:
            buf = self._setup_nnz_transfer()
            self._start_nnz_transfer(buf)
        self.nnz = int(buf.numpy()[0])
        BsrMatrix.__setattr__(self, "_nnz_transfer_pending", False)
        return self.nnz

    def status_sync(self) -> int:
        """The sticky status code of padded operations (``BSR_STATUS_*``)."""
        status = getattr(self, "_status", None)
        if status is None:
            return BSR_STATUS_SUCCESS
        return int(status.numpy()[0])

    def status_message(self) -> str:
        """A message for :meth:`status_sync`."""
        return _status_message(self.status_sync())

    def clear_status(self) -> None:
        """Clear the status code."""
        status = getattr(self, "_status", None)
        if status is not None:
            status.zero_()

    def notify_nnz_changed(self, nnz=None, nnz_capacity=None) -> None:
        """Tell the matrix that ``offsets`` or ``nnz`` changed outside this module (``nnz``:
        the new upper bound, read from ``offsets[nrow]`` when omitted and no ``nnz_capacity``
        is given; storage grown to ``nnz_capacity`` or ``nnz``)."""
        self._refresh_nnz_transfer_if_pending()
        if nnz is None:
            if nnz_capacity is None:
                self.nnz_sync()
            else:
                self.nnz = nnz_capacity
        _ensure_fits(self, nnz=nnz, capacity=nnz_capacity)

    def copy_nnz_async(self) -> None:
        """Deprecated (Warp 1.10): start a transfer of ``offsets[nrow]`` that a later
        :meth:`nnz_sync` uses."""
        sys.modules[__package__].log_warning("The `copy_nnz_async` method is deprecated and will be removed in a future "
                    "version; call `nnz_sync` to synchronously update the host-side block "
                    "count.", category=DeprecationWarning, stacklevel=2)
        self._copy_nnz_async()

    def _copy_nnz_async(self):
        buf = self._setup_nnz_transfer()
        self._start_nnz_transfer(buf)
        BsrMatrix.__setattr__(self, "_nnz_transfer_pending", True)
        return buf

    def _start_nnz_transfer(self, buf):
        wp.copy(src=self.offsets, dest=buf, src_offset=self.nrow, count=1)

    def _setup_nnz_transfer(self):
        buf = getattr(self, "_nnz_transfer", None)
        if buf is None:
            buf = wp.empty(1, dtype=int, device="cpu")
            BsrMatrix.__setattr__(self, "_nnz_transfer", buf)
        return buf

    def _nnz_transfer_if_pending(self):
        if getattr(self, "_nnz_transfer_pending", False):
            return getattr(self, "_nnz_transfer", None)
        return None

    def _refresh_nnz_transfer_if_pending(self):
        if getattr(self, "_nnz_transfer_pending", False):
            self._copy_nnz_async()

    def _ensure_status(self):
        status = getattr(self, "_status", None)
        if status is None or status.device != self.device:
            status = wp.zeros(shape=(1,), dtype=int, device=self.device)
            BsrMatrix.__setattr__(self, "_status", status)
        return status

    def _set_status(self, code):
        if code:
            s = self._ensure_status()
            _put(s, [max(int(s.numpy()[0]), code)])

    # scaling (lazy); the other operators are attached by weft.libs.sparse._ops
    def __mul__(self, y):
        return _BsrScalingExpression(self, y)

    def __rmul__(self, x):
        return _BsrScalingExpression(self, x)

    def __truediv__(self, y):
        return _BsrScalingExpression(self, 1.0 / y)

    def __neg__(self):
        return _BsrScalingExpression(self, -1.0)


def _status_message(status):
    if status == BSR_STATUS_SUCCESS:
        return "success"
    if status == BSR_STATUS_ROW_CAPACITY_EXCEEDED:
        return "row capacity exceeded"
    return f"unknown status {status}"


_typed = {}


def bsr_matrix_t(dtype):
    """The :class:`BsrMatrix` subclass for blocks of ``dtype`` (a scalar or matrix type)."""
    dtype = type_to_warp(dtype)
    if not type_is_matrix(dtype) and dtype not in scalar_types:
        raise ValueError(f"BsrMatrix block type must be either warp matrix or scalar; got "
                         f"{type_repr(dtype)}")
    key = (type_scalar_type(dtype), getattr(dtype, "_shape_", None))
    cls = _typed.get(key)
    if cls is None:
        if type_is_matrix(dtype):
            name = f"BsrMatrix_{type_scalar_type(dtype).__name__}_{dtype._shape_[0]}_" \
                   f"{dtype._shape_[1]}"
        else:
            name = f"BsrMatrix_{dtype.__name__}"
        cls = _typed[key] = type(name, (BsrMatrix,), {"__module__": __name__})
    return cls


class _BsrExpression(Generic[_BlockType]):
    pass


class _BsrScalingExpression(_BsrExpression):
    """``scale * mat``, evaluated lazily by the functions that take it."""

    def __init__(self, mat, scale):
        self.mat = mat
        self.scale = scale

    nrow = property(lambda self: self.mat.nrow)
    ncol = property(lambda self: self.mat.ncol)
    nnz = property(lambda self: self.mat.nnz)
    offsets = property(lambda self: self.mat.offsets)
    row_counts = property(lambda self: self.mat.row_counts)
    columns = property(lambda self: self.mat.columns)
    scalar_type = property(lambda self: self.mat.scalar_type)
    block_shape = property(lambda self: self.mat.block_shape)
    block_size = property(lambda self: self.mat.block_size)
    shape = property(lambda self: self.mat.shape)
    dtype = property(lambda self: self.mat.dtype)
    requires_grad = property(lambda self: self.mat.requires_grad)
    device = property(lambda self: self.mat.device)

    def __mul__(self, y):
        return _BsrScalingExpression(self.mat, y * self.scale)

    def __rmul__(self, x):
        return _BsrScalingExpression(self.mat, x * self.scale)

    def __truediv__(self, y):
        return _BsrScalingExpression(self.mat, self.scale / y)

    def __neg__(self):
        return _BsrScalingExpression(self.mat, -self.scale)



def _extract_matrix_and_scale(bsr):
    if isinstance(bsr, BsrMatrix):
        return bsr, 1.0
    if isinstance(bsr, _BsrScalingExpression):
        return bsr.mat, bsr.scale
    raise ValueError("Argument cannot be interpreted as a BsrMatrix")


# ----------------------------------------------------------------------------- topology

def _active(A):
    """``(rows, slots)`` of the active blocks of ``A`` (int64, storage order)."""
    nrow = A.nrow
    if nrow == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    off = _np(A.offsets)[:nrow + 1].astype(np.int64)
    starts = off[:-1]
    if A.row_counts is None:
        cnt = np.maximum(off[1:] - starts, 0)
    else:
        cnt = np.maximum(_np(A.row_counts)[:nrow].astype(np.int64), 0)
    total = int(cnt.sum())
    rows = np.repeat(np.arange(nrow, dtype=np.int64), cnt)
    first = np.zeros(nrow, dtype=np.int64)
    np.cumsum(cnt[:-1], out=first[1:])
    slots = np.arange(total, dtype=np.int64) + np.repeat(starts - first, cnt)
    return rows, slots


def _active_coo(A):
    """``(rows, cols, slots)`` of the active blocks of ``A``."""
    rows, slots = _active(A)
    cols = _np(A.columns)[slots].astype(np.int64) if slots.size else slots
    return rows, cols, slots


def _row_ranges(A):
    """``(starts, ends)`` of the active range of each row, as int arrays (kernels)."""
    nrow = A.nrow
    if A.row_counts is None:
        return A.offsets[:nrow], A.offsets[1:nrow + 1]
    off = _np(A.offsets)[:nrow + 1]
    ends = off[:-1] + _np(A.row_counts)[:nrow]
    return A.offsets[:nrow], _int_array(ends, A.device)


def _ensure_fits(bsr, nnz=None, capacity=None):
    if nnz is None:
        nnz = bsr.nnz
    else:
        bsr.nnz = int(nnz)
    if capacity is None:
        capacity = nnz
    elif capacity < nnz:
        raise ValueError(f"capacity must be at least nnz, got {capacity} and {nnz}")
    if bsr.columns.size < capacity:
        bsr.columns = wp.empty(shape=(capacity,), dtype=int, device=bsr.columns.device)
    if bsr.values.size < capacity:
        bsr.values = wp.empty(shape=(capacity,), dtype=bsr.values.dtype,
                              device=bsr.values.device, requires_grad=bsr.values.requires_grad)


def _resize(bsr, rows_of_blocks=None, cols_of_blocks=None, preserve_offsets=False):
    old_nrow = bsr.nrow
    old = _np(bsr.offsets)[:old_nrow + 1].copy()
    if rows_of_blocks is not None:
        bsr.nrow = int(rows_of_blocks)
    if cols_of_blocks is not None:
        bsr.ncol = int(cols_of_blocks)
    if bsr.offsets.size < bsr.nrow + 1:
        bsr.offsets = wp.empty(shape=(bsr.nrow + 1,), dtype=int, device=bsr.offsets.device)
    if preserve_offsets and bsr.nrow > old_nrow:
        new = np.full(bsr.nrow + 1, old[-1], dtype=np.int32)
        new[:old_nrow + 1] = old
        _put(bsr.offsets, new)


def _independent_row_counts(bsr, preserve=True):
    """Give a padded matrix its own ``row_counts`` (zeros unless ``preserve``)."""
    old = bsr.row_counts
    if old is not None and old.size >= bsr.nrow:
        if not preserve:
            old.zero_()
        return
    counts = np.zeros(bsr.nrow, dtype=np.int32)
    if preserve:
        off = _np(bsr.offsets)[:bsr.nrow + 1]
        counts = (off[1:] - off[:-1]).astype(np.int32)
    bsr.row_counts = _int_array(counts, bsr.device)


def _set_zero_topology(bsr, topology, row_capacity, nnz_capacity, preserve_row_capacity=False):
    if nnz_capacity is not None:
        nnz_capacity = int(nnz_capacity)
        if nnz_capacity < 0:
            raise ValueError("nnz_capacity must be nonnegative")
    if row_capacity is not None:
        if topology != "padded":
            raise ValueError("row_capacity requires topology='padded'")
        if is_array(row_capacity):
            if row_capacity.ndim != 1 or row_capacity.shape[0] != bsr.nrow:
                raise ValueError(f"row_capacity array must have shape ({bsr.nrow},), got "
                                 f"{row_capacity.shape}")
            if row_capacity.dtype != wp.int32:
                raise TypeError("row_capacity array must have dtype int32")
            if bsr.device != row_capacity.device:
                raise ValueError(f"row_capacity array must reside on the destination matrix "
                                 f"device, got {row_capacity.device} and {bsr.device}")
        else:
            row_capacity = int(row_capacity)
            if row_capacity < 0:
                raise ValueError("row_capacity must be nonnegative")
    nnz = 0
    if topology == "padded":
        if row_capacity is not None:
            if is_array(row_capacity):
                caps = _np(row_capacity).astype(np.int64)
            else:
                caps = np.full(bsr.nrow, row_capacity, dtype=np.int64)
            off = np.zeros(bsr.nrow + 1, dtype=np.int64)
            np.cumsum(caps, out=off[1:])
            _put(bsr.offsets, off.astype(np.int32))
            nnz = int(off[-1])
            if is_array(row_capacity) and nnz_capacity is not None:
                nnz = None
        elif preserve_row_capacity:
            nnz = int(_np(bsr.offsets)[bsr.nrow])
        else:
            bsr.offsets.zero_()
        _independent_row_counts(bsr, preserve=False)
        bsr._ensure_status()
    else:
        bsr.offsets.zero_()
        bsr.row_counts = None
    bsr.notify_nnz_changed(nnz=nnz, nnz_capacity=nnz_capacity)


def bsr_zeros(rows_of_blocks, cols_of_blocks, block_type, device=None, *, topology=None,
              row_capacity=None, nnz_capacity=None):
    """An empty ``rows_of_blocks x cols_of_blocks`` matrix of blocks of ``block_type`` (a
    scalar type for CSR, a ``wp.types.matrix`` type for BSR). ``row_capacity`` (an int, or an
    int array per row) makes a padded matrix with that much storage per row (``topology``
    defaults to ``"padded"`` then); ``nnz_capacity`` preallocates ``columns``/``values``."""
    if topology is None:
        topology = "padded" if row_capacity is not None else "compact"
    elif topology not in ("compact", "padded"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    bsr = bsr_matrix_t(block_type)()
    bsr.nrow = int(rows_of_blocks)
    bsr.ncol = int(cols_of_blocks)
    bsr.nnz = 0
    bsr.row_counts = None
    bsr.offsets = wp.zeros(shape=(bsr.nrow + 1,), dtype=int, device=device)
    bsr.columns = wp.empty(shape=(0,), dtype=int, device=device)
    bsr.values = wp.empty(shape=(0,), dtype=block_type, device=device)
    _set_zero_topology(bsr, topology, row_capacity, nnz_capacity)
    return bsr


def bsr_set_zero(bsr, rows_of_blocks=None, cols_of_blocks=None, *, topology="compact",
                 row_capacity=None, nnz_capacity=None):
    """Make ``bsr`` the zero matrix, optionally resized. ``topology``: ``"compact"`` drops all
    storage topology, ``"padded"`` keeps (or sets, ``row_capacity``) the row capacity with every
    row empty, ``"masked"`` keeps the topology and zeroes the values."""
    if topology not in ("compact", "padded", "masked"):
        raise ValueError(f"Unsupported topology policy: {topology}")
    if row_capacity is not None and topology != "padded":
        raise ValueError("row_capacity requires topology='padded'")
    if topology == "masked":
        if rows_of_blocks is not None or cols_of_blocks is not None:
            raise ValueError("Cannot resize a matrix with topology='masked'")
        bsr.values.zero_()
        return
    preserve = topology == "padded" and row_capacity is None
    _resize(bsr, rows_of_blocks, cols_of_blocks, preserve_offsets=preserve)
    _set_zero_topology(bsr, topology, row_capacity, nnz_capacity, preserve_row_capacity=preserve)


def _write_layout(dest, topology, urows, ucols):
    """Store the sorted unique blocks ``(urows, ucols)`` as ``dest``'s topology under the
    ``topology`` policy. Returns ``(tgt, kept)``: the storage slot of each stored block and the
    index (into the unique blocks) of each, or for ``masked`` the slots of all of ``dest``'s
    active blocks and, per unique block, its position among them (-1: not in ``dest``)."""
    nrow, ncol = dest.nrow, dest.ncol
    nb = urows.shape[0]
    if topology == "masked":
        drows, dcols, dslots = _active_coo(dest)
        dkeys = drows * max(ncol, 1) + dcols
        order = np.argsort(dkeys, kind="stable")
        skeys = dkeys[order]
        ukeys = urows * max(ncol, 1) + ucols
        pos = np.searchsorted(skeys, ukeys)
        pos = np.minimum(pos, max(len(skeys) - 1, 0))
        found = (len(skeys) > 0) & (skeys[pos] == ukeys) if len(skeys) else \
            np.zeros(nb, dtype=bool)
        where = np.where(found, order[pos] if len(skeys) else -1, -1)
        return dslots, where
    counts = np.bincount(urows, minlength=nrow).astype(np.int64) if nrow else \
        np.zeros(0, np.int64)
    first = np.zeros(nrow + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    if topology == "padded":
        _independent_row_counts(dest, preserve=False)
        off = _np(dest.offsets)[:nrow + 1].astype(np.int64)
        cap = off[1:] - off[:-1]
        over = counts > cap
        if over.any():
            dest._set_status(BSR_STATUS_ROW_CAPACITY_EXCEEDED)
        rc = np.where(over, 0, counts)
        _put(dest.row_counts, rc.astype(np.int32))
        rank = np.arange(nb, dtype=np.int64) - first[urows]
        keep = ~over[urows]
        slots = off[urows] + rank
        where = np.where(keep, np.arange(nb), -1)
        # blocks kept, by position in the list of stored slots
        kept_idx = np.flatnonzero(keep)
        _put_at(dest.columns, slots[kept_idx], ucols[kept_idx])
        pos = np.full(nb, -1, dtype=np.int64)
        pos[kept_idx] = np.arange(kept_idx.size)
        return slots[kept_idx], pos
    # compact
    if dest.columns.size < nb or dest.values.size < nb:
        _ensure_fits(dest, nnz=nb)
    _put(dest.offsets, first.astype(np.int32))
    _put(dest.columns, ucols.astype(np.int32))
    dest.row_counts = None
    return np.arange(nb, dtype=np.int64), np.arange(nb, dtype=np.int64)




def _unique_blocks(rows, cols, ncol):
    """Sorted unique ``(rows, cols)`` and the unique index of each input."""
    key = rows * max(ncol, 1) + cols
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq // max(ncol, 1), uniq % max(ncol, 1), inv.reshape(-1)


def _assemble(dest, topology, rows, cols, terms, nnz_hint=None):
    """Set ``dest`` (topology per ``topology``) to the sum of the input blocks at ``(rows,
    cols)``. ``terms``: ``(src_values, src_block_shape, first, last, src_slots, scale,
    transpose)`` naming inputs ``first:last`` and where each reads its block. Returns
    ``(tgt, blk)``: the slot of each written block and each input's index into ``tgt``."""
    nrow, ncol = dest.nrow, dest.ncol
    valid = (rows >= 0) & (rows < nrow) & (cols >= 0) & (cols < ncol)
    vi = np.flatnonzero(valid)
    urows, ucols, inv = _unique_blocks(rows[vi], cols[vi], ncol)
    if nnz_hint is not None and topology == "compact":
        _ensure_fits(dest, nnz=max(nnz_hint, urows.shape[0]))
    tgt, where = _write_layout(dest, topology, urows, ucols)
    blk = np.full(rows.shape[0], -1, dtype=np.int64)
    blk[vi] = where[inv]
    if topology == "compact":
        dest.nnz = max(nnz_hint or 0, len(tgt))
    dest._refresh_nnz_transfer_if_pending()
    gterms = []
    for src, shape, first, last, slots, scale, transpose in terms:
        gterms.append((src, shape, blk[first:last], slots, scale, transpose))
    if gterms:
        _gather(dest.values, dest.block_shape, tgt, gterms)
    return tgt, blk

