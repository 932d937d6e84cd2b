"""Block-sparse (BSR) matrices: Warp 1.19's ``warp.sparse``, written on weft's public API.

A :class:`BsrMatrix` stores ``nrow x ncol`` blocks (scalars for CSR, ``wp.types.matrix`` for
BSR) as Warp does: ``offsets`` (row starts, ``nrow + 1``), optional ``row_counts`` (active blocks
per row of a *padded* matrix), ``columns`` and ``values``, ``nnz`` a host-side upper bound on
the stored slots. Every function of ``warp.sparse`` is here with Warp's signature, semantics and
errors (see ``docs/sparse.md``).

How it runs. Topology (which blocks exist and where they are stored) is computed on the host
with numpy (CPU arrays are shared with numpy, so nothing is copied); values are always moved by
weft kernels, so everything that produces values records on a ``wp.Tape`` and is
differentiable: :func:`bsr_mv` (w.r.t. ``x``, ``y`` and the matrix values), :func:`bsr_mm`,
:func:`bsr_axpy`, transposition, copies and triplet assembly. The kernels see every block array
as a 2-d scalar array ``(blocks, rows * cols)``, so each is compiled once per scalar type, not
once per block shape.

Modules: ``_common`` (host helpers), ``_kernels`` (the kernels and ``_gather``), ``_matrix``
(the matrix classes and the host-side topology), ``_assembly`` (triplets, compression, assign and
copy), ``_transforms`` (transposition, diagonals, scale and axpy), ``_products`` (``bsr_mm`` and
``bsr_mv``), ``_ops`` (the kernel-API funcs and the operators).

Example::

    import weft as wp
    from weft.sparse import bsr_from_triplets, bsr_mv
    A = bsr_from_triplets(3, 3, rows, cols, vals)        # duplicates summed
    y = A @ x                                             # bsr_mv
    C = A @ A.transpose() + 2.0 * A                       # bsr_mm, bsr_axpy
"""
import warnings

import weft as wp  # noqa: F401  (Warp's tests patch ``warp._src.sparse.wp.copy``)

from ._matrix import (BSR_STATUS_ROW_CAPACITY_EXCEEDED, BSR_STATUS_SUCCESS,  # noqa: F401
                      BsrMatrix, BsrTripletMap, bsr_matrix_t, bsr_set_zero, bsr_zeros)
from ._assembly import (bsr_assign, bsr_compress, bsr_copy, bsr_from_triplets,  # noqa: F401
                        bsr_set_from_mapped_values, bsr_set_from_triplets)
from ._ops import bsr_block_index, bsr_row_index  # noqa: F401  (and the matrix operators)
from ._products import bsr_mm, bsr_mm_work_arrays, bsr_mv  # noqa: F401
from ._transforms import (bsr_axpy, bsr_axpy_work_arrays, bsr_diag, bsr_get_diag,  # noqa: F401
                          bsr_identity, bsr_scale, bsr_set_diag, bsr_set_identity,
                          bsr_set_transpose, bsr_transposed)

__all__ = [
    "BSR_STATUS_ROW_CAPACITY_EXCEEDED", "BSR_STATUS_SUCCESS", "BsrMatrix", "BsrTripletMap",
    "bsr_assign", "bsr_axpy", "bsr_axpy_work_arrays", "bsr_block_index", "bsr_compress",
    "bsr_copy", "bsr_diag", "bsr_from_triplets", "bsr_get_diag", "bsr_identity", "bsr_matrix_t",
    "bsr_mm", "bsr_mm_work_arrays", "bsr_mv", "bsr_row_index", "bsr_scale", "bsr_set_diag",
    "bsr_set_from_mapped_values", "bsr_set_from_triplets", "bsr_set_identity",
    "bsr_set_transpose", "bsr_set_zero", "bsr_transposed", "bsr_zeros",
]


def log_warning(message, category=None, stacklevel=1):
    """Warp's ``log_warning``: a Python warning (``UserWarning`` unless ``category``); looked
    up here by the matrix code, so that patching ``weft.libs.sparse.log_warning`` reaches it."""
    warnings.warn(message, category or UserWarning, stacklevel=stacklevel + 1)
