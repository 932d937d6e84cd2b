"""What :func:`weft.optim.linear.preconditioner` builds on: the inverse of a diagonal, the
inverses of the diagonal blocks of a square BSR matrix (by QR, LDL^T or Cholesky) and their
block-diagonal operator, and :class:`FSAI`; built on the host (numpy), applied as CSR products.
``preconditioner`` itself, with the Jacobi and block-Jacobi builders that call
``aslinearoperator``, stays in :mod:`weft.optim.linear`."""
from __future__ import annotations

import math

import numpy as np

from ...core import types as T
from ...runtime.array_ops import zeros
from ._linear_helpers import _bsr_host, _csr_arrays, _csr_mv, _flat, _is_bsr
from ._linear_operator import LinearOperator


# ----------------------------------------------------------------------------- preconditioners
def _inverse_diag(d, use_abs):
    d = np.abs(d) if use_abs else d
    with np.errstate(divide="ignore"):
        return np.where(d == 0.0, 1.0, 1.0 / np.where(d == 0.0, 1.0, d))


def _check_square_bsr(A, what):
    if not _is_bsr(A):
        raise ValueError(f"{what} preconditioner requires a BSR matrix (weft.sparse.BsrMatrix) "
                         f"input, got {type(A).__name__}")
    br, bc = A.block_shape
    if br != bc:
        raise ValueError(f"{what} preconditioner requires square matrix blocks, got shape "
                         f"{(br, bc)}")
    if A.nrow != A.ncol:
        raise ValueError(f"{what} preconditioner requires the same number of block rows and "
                         f"block columns, got {A.nrow} block rows and {A.ncol} block columns "
                         f"(overall shape {A.shape})")
    return br


def _diag_blocks(A, bs):
    offsets, columns, values = _bsr_host(A)
    blocks = np.zeros((A.nrow, bs, bs))
    for row in range(A.nrow):
        for k in range(offsets[row], offsets[row + 1]):
            if columns[k] == row:
                blocks[row] += values[k]
    return blocks


def _symmetric(B, tol):
    return np.all(np.abs(B - B.T) <= tol * np.max(np.abs(np.diagonal(B)), initial=0.0))


def _inv_qr(B, tol):
    if not np.all(np.isfinite(B)):
        return None
    _, R = np.linalg.qr(B)
    piv = np.abs(np.diagonal(R))
    if not np.all(np.isfinite(piv)) or np.any(piv <= tol * piv.max(initial=0.0)) or not piv.any():
        return None
    return np.linalg.inv(B)


def _inv_ldlt(B, tol):
    if not np.all(np.isfinite(B)) or not _symmetric(B, tol):
        return None
    n = B.shape[0]
    scale = np.max(np.abs(np.diagonal(B)), initial=0.0)
    L, D = np.eye(n), np.zeros(n)
    for j in range(n):
        d = B[j, j] - np.sum(L[j, :j] ** 2 * D[:j])
        if not np.isfinite(d) or d <= tol * scale:
            return None
        D[j] = d
        for i in range(j + 1, n):
            L[i, j] = (B[i, j] - np.sum(L[i, :j] * L[j, :j] * D[:j])) / d
    Linv = np.linalg.inv(L)
    return Linv.T @ np.diag(1.0 / D) @ Linv


def _inv_cholesky(B, tol):
    if not np.all(np.isfinite(B)) or not _symmetric(B, tol):
        return None
    try:
        Lc = np.linalg.cholesky(B)
    except np.linalg.LinAlgError:
        return None
    Linv = np.linalg.inv(Lc)
    return Linv.T @ Linv


def _block_diag_operator(inv, scalar, device, dtype):
    """The operator of a block-diagonal matrix given its (nb, bs, bs) blocks (a CSR product)."""
    nb, bs, _ = inv.shape
    n = nb * bs
    offsets = np.arange(0, n * bs + 1, bs)
    columns = (np.arange(n)[:, None] // bs * bs + np.arange(bs)[None, :]).reshape(-1)
    csr = _csr_arrays(offsets, columns, inv.reshape(-1), scalar, device)

    def mv(x, y, z, alpha, beta):
        _csr_mv(csr, x, y, z, alpha, beta)
    return LinearOperator((n, n), dtype, device, mv)


class FSAI(LinearOperator):
    """Factorized sparse approximate inverse of an SPD BSR matrix: ``M = G^T G`` with ``G``
    lower triangular, each scalar row ``i`` of ``G`` the solution of ``A[P, P] g = e_i`` on its
    support ``P`` scaled to ``g_i = 1 / sqrt(...)``. The support is the lower-triangular
    pattern of ``A`` in that row, limited to the ``max_row_size`` entries of largest magnitude
    (the diagonal always kept): a static pattern, where Warp's FSAI grows each row's support
    adaptively. A row whose small system is singular or not positive is the identity's.
    Built on the host (numpy); applying it is two CSR products.

    Warp's other options (``kap_tolerance``, ``pivot_floor``, ``factor_dtype``,
    ``reuse_pattern``, ``max_step_size``, ``regularize_refit``, ``validate_topology``,
    ``defer_pattern``) are accepted and ignored; :meth:`update` rebuilds from ``A``'s current
    values."""

    _IGNORED = ("kap_tolerance", "pivot_floor", "factor_dtype", "reuse_pattern",
                "max_step_size", "regularize_refit", "validate_topology", "defer_pattern")

    def __init__(self, A, max_row_size=64, **options):
        unknown = set(options) - set(self._IGNORED)
        if unknown:
            raise TypeError(f"FSAI() got unexpected keyword arguments {sorted(unknown)}")
        if not _is_bsr(A):
            raise ValueError("FSAI requires a BSR matrix (weft.sparse.BsrMatrix)")
        bs = _check_square_bsr(A, "FSAI")
        scalar = A.scalar_type
        if scalar not in (T.float16, T.float32, T.float64):
            raise TypeError(f"FSAI: unsupported scalar type {T.type_name(scalar)}")
        if not 1 <= int(max_row_size) <= 64:
            raise ValueError(f"FSAI: max_row_size must be in [1, 64], got {max_row_size}")
        self._A, self._bs, self._max_row_size = A, bs, int(max_row_size)
        n = A.nrow * bs
        self._tmp = None
        self._build()

        def mv(x, y, z, alpha, beta):
            if self._tmp is None or self._tmp.shape != _flat(x).shape:
                self._tmp = zeros(_flat(x).shape[0], dtype=scalar, device=A.device)
            _csr_mv(self._G, x, self._tmp, self._tmp, 1.0, 0.0)
            _csr_mv(self._GT, self._tmp, y, z, alpha, beta)
        super().__init__((n, n), A.dtype, A.device, mv, symmetric=True)

    def update(self, A=None):
        """Rebuild the factor from ``A`` (default: the matrix given at construction), which
        must have the same shape; returns ``self``."""
        if A is not None:
            if A.shape != self._A.shape:
                raise ValueError(f"FSAI.update: expected shape {self._A.shape}, got {A.shape}")
            self._A = A
        self._build()
        return self

    def _build(self):
        A, bs = self._A, self._bs
        offsets, columns, values = _bsr_host(A)
        n = A.nrow * bs
        rows = [dict() for _ in range(n)]
        for brow in range(A.nrow):
            for k in range(offsets[brow], offsets[brow + 1]):
                c0 = columns[k] * bs
                for r in range(bs):
                    row = rows[brow * bs + r]
                    for c in range(bs):
                        row[c0 + c] = row.get(c0 + c, 0.0) + values[k, r, c]
        g_rows, g_cols, g_vals = [], [], []
        for i in range(n):
            lower = [j for j in rows[i] if j < i and rows[i][j] != 0.0]
            lower.sort(key=lambda j: -abs(rows[i][j]))
            P = np.array(sorted(lower[: self._max_row_size - 1]) + [i])
            S = np.array([[rows[p].get(q, 0.0) for q in P] for p in P])
            e = (P == i).astype(np.float64)
            try:
                g = np.linalg.solve(S, e)
                gi = g[-1]
                ok = bool(np.all(np.isfinite(g)) and gi > 0.0)
            except np.linalg.LinAlgError:
                ok = False
            if ok:
                g = g / math.sqrt(gi)
            else:
                P, g = np.array([i]), np.array([1.0])
            g_rows += [i] * len(P)
            g_cols += list(P)
            g_vals += list(g)
        g_rows, g_cols, g_vals = map(np.asarray, (g_rows, g_cols, g_vals))
        self._G = _csr_from_coo(g_rows, g_cols, g_vals, n, A.scalar_type, A.device)
        self._GT = _csr_from_coo(g_cols, g_rows, g_vals, n, A.scalar_type, A.device)


def _csr_from_coo(rows, cols, vals, n, scalar, device):
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    offsets = np.zeros(n + 1, np.int64)
    np.add.at(offsets, rows + 1, 1)
    return _csr_arrays(np.cumsum(offsets), cols, vals, scalar, device)
