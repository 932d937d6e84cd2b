"""Second order of the tile factorisations and solves: the tangents of their adjoints.

``tape.hvp`` differentiates a tile kernel's generated adjoint once more
(:mod:`weft.transpiler.second_order`). The adjoints of ``tile_cholesky`` and of the triangular
and Cholesky solves (:mod:`weft.native.tile_kernels`) are linear in their seed but not in the
factor, so their tangents are written here, each along the tangents of all its arguments:
``X_adj_jvp(arguments..., seed, tangents of the arguments..., tangent of the seed)``. Each reads
the triangle of the factor its adjoint reads and skips a zero pivot's division as it does.
Checked against float64 finite differences (``tests/tiles/test_tile_hvp.py``).

Notation: ``L`` lower triangular (``U`` upper), ``G`` the seed, ``d*`` tangents; right-hand
sides are ``(n, m)`` matrices (a vector is ``m = 1``).
"""
from __future__ import annotations

import numpy as np

from ..core.diskcache import njit
from .simd import gemm  # a @ b, as tile_matmul computes it

_jit = njit(error_model="numpy", nogil=True)


@_jit
def _tri(M, lower):
    """The lower (or upper) triangle of ``M``, the rest zero."""
    n = M.shape[0]
    out = np.zeros((n, n), M.dtype)
    for i in range(n):
        for j in range(n):
            if (j <= i) if lower else (j >= i):
                out[i, j] = M[i, j]
    return out


@_jit
def _solve_t(F, X, lower):
    """``F^-T X``: ``F^T W = X`` for lower-triangular ``F`` (back substitution) or
    upper-triangular ``F`` (forward substitution); a zero pivot is skipped, as the adjoints
    skip it."""
    n, m = X.shape
    W = X.copy()
    zero = F.dtype.type(0)
    order = range(n - 1, -1, -1) if lower else range(n)
    for i in order:
        for j in range(n):
            if (j > i) if lower else (j < i):
                f = F[j, i]
                for c in range(m):
                    W[i, c] = W[i, c] - f * W[j, c]
        d = F[i, i]
        if d != zero:
            for c in range(m):
                W[i, c] = W[i, c] / d
    return W


@_jit
def _mirror(P):
    """The lower triangle of ``P`` mirrored onto the upper one."""
    n = P.shape[0]
    out = np.empty((n, n), P.dtype)
    for i in range(n):
        for j in range(n):
            out[i, j] = P[i, j] if i >= j else P[j, i]
    return out


@_jit
def cholesky_adj_jvp(A, L, G, dA, dL, dG):
    """Tangent of ``adj_A = cholesky_adj(A, L, G)``: with ``M = mirror(L^T G)`` and
    ``B = L^-T M L^-1`` (``adj_A`` is ``B``'s lower triangle, its diagonal halved),
    ``dB = L^-T dM L^-1 - L^-T dL^T B - B dL L^-1`` and ``dM = mirror(dL^T G + L^T dG)``."""
    # (the product L^T G reads all of L, the solves its lower triangle, as cholesky_adj)
    L = np.ascontiguousarray(L)
    dL = np.ascontiguousarray(dL)
    G = np.ascontiguousarray(G)
    dG = np.ascontiguousarray(dG)
    B = _solve_t(L, _solve_t(L, _mirror(gemm(L.T, G)), True).T.copy(), True)
    dM = _mirror(gemm(dL.T, G) + gemm(L.T, dG))
    dL = _tri(dL, True)
    dB = _solve_t(L, _solve_t(L, dM, True).T.copy(), True)
    dB -= _solve_t(L, gemm(dL.T, B), True)
    dB -= _solve_t(L, gemm(B, dL).T.copy(), True).T
    n = L.shape[0]
    out = np.zeros((n, n), L.dtype)
    half = L.dtype.type(0.5)
    for i in range(n):
        for j in range(i):
            out[i, j] = dB[i, j]
        out[i, i] = half * dB[i, i]
    return out


@_jit
def _outer_sum(a, b, c, d):
    """``a b^T + c d^T`` for ``(n, m)`` matrices."""
    return gemm(a, b.T) + gemm(c, d.T)


@_jit
def _operands(F, dF, lower, x, dx, g, dg):
    """A solve adjoint's operands as it reads them: the factor and its tangent (their triangle),
    the solution, the seed and their tangents as ``(n, m)`` matrices."""
    n = F.shape[0]
    m = g.size // n if n > 0 else 0
    return (_tri(np.ascontiguousarray(F), lower), _tri(np.ascontiguousarray(dF), lower),
            np.ascontiguousarray(x).reshape((n, m)), np.ascontiguousarray(dx).reshape((n, m)),
            np.ascontiguousarray(g).reshape((n, m)), np.ascontiguousarray(dg).reshape((n, m)))


@_jit
def _triangular_adj_jvp(F, x, g, dF, dx, dg, lower):
    """Tangent of ``(adj_F, adj_rhs) = (-tri(W x^T), W)`` with ``W = F^-T g``, for the
    lower (``lower_solve``) or upper (``upper_solve``) triangular ``F``."""
    F, dF, X, dX, G, dG = _operands(F, dF, lower, x, dx, g, dg)
    W = _solve_t(F, G, lower)
    dW = _solve_t(F, dG - gemm(dF.T, W), lower)
    return -_tri(_outer_sum(dW, X, W, dX), lower), dW


@_jit
def lower_solve_adj_jvp(L, y, z, g, dL, dy, dz, dg):
    """Tangent of ``lower_solve_adj(L, y, z, g) = (-tril(W z^T), W)``, ``W = L^-T g``."""
    dadj, dW = _triangular_adj_jvp(L, z, g, dL, dz, dg, True)
    return dadj, dW.reshape(y.shape)


@_jit
def upper_solve_adj_jvp(U, z, x, g, dU, dz, dx, dg):
    """Tangent of ``upper_solve_adj(U, z, x, g) = (-triu(W x^T), W)``, ``W = U^-T g``."""
    dadj, dW = _triangular_adj_jvp(U, x, g, dU, dx, dg, False)
    return dadj, dW.reshape(z.shape)


@_jit
def cholesky_solve_adj_jvp(L, y, x, g, dL, dy, dx, dg):
    """Tangent of ``cholesky_solve_adj(L, y, x, g) = (-tril(S L), Z)`` with
    ``Z = A^-1 g``, ``A = L L^T``, ``S = Z x^T + x Z^T``: ``dZ = A^-1 (dg - dA Z)``,
    ``dA = dL L^T + L dL^T``, ``d adj_L = -tril(dS L + S dL)``."""
    L, dL, X, dX, G, dG = _operands(L, dL, True, x, dx, g, dg)
    Lt = L.T.copy()  # L^-1 X is (L^T)^-T X
    Z = _solve_t(L, _solve_t(Lt, G, False), True)
    dAZ = gemm(dL, gemm(Lt, Z)) + gemm(L, gemm(dL.T, Z))
    dZ = _solve_t(L, _solve_t(Lt, dG - dAZ, False), True)
    S = _outer_sum(Z, X, X, Z)
    dS = _outer_sum(dZ, X, Z, dX) + _outer_sum(dX, Z, X, dZ)
    return -_tri(gemm(dS, L) + gemm(S, dL), True), dZ.reshape(y.shape)
