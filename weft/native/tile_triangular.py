"""Numeric cores of the triangular solves on the CPU: ``lower_solve`` (forward substitution)
and ``upper_solve`` (back substitution), with their adjoints and tangents. Each is
self-contained and compiled on its own with ``numba.njit``; :mod:`weft.native.tile_kernels`
gathers them with the other families and states the conventions and Warp semantics they
follow."""
import numpy as np


def lower_solve(L, y):
    """``z`` with ``L z = y`` by forward substitution, reading only the lower triangle of
    ``L`` (n, n); ``y`` is ``(n,)`` or ``(n, k)``, ``z`` has its shape. A zero diagonal entry
    skips its division, as in Warp."""
    L = np.ascontiguousarray(L)
    y = np.ascontiguousarray(y)
    n = L.shape[0]
    m = y.size // n if n > 0 else 0
    Z = y.reshape((n, m)).copy()
    zero = L.dtype.type(0)
    if m == 1:
        # one right-hand side: by columns of L (the rows of L^T, contiguous), one vectorised
        # update per column; each entry still takes its terms in increasing j, then its division
        z = Z.reshape(n)
        U = np.ascontiguousarray(L.T)
        un = np.uint64(n)
        for j in range(n):
            Uj = U[j]
            d = Uj[j]
            if d != zero:
                z[j] = z[j] / d
            zj = z[j]
            for i in range(np.uint64(j) + np.uint64(1), un):
                z[i] = z[i] - Uj[i] * zj
        return Z.reshape(y.shape)
    for i in range(n):
        Zi = Z[i]
        for j in range(i):
            lij = L[i, j]
            Zj = Z[j]
            for c in range(m):
                Zi[c] = Zi[c] - lij * Zj[c]
        d = L[i, i]
        if d != zero:
            for c in range(m):
                Zi[c] = Zi[c] / d
    return Z.reshape(y.shape)


def lower_solve_adj(L, y, z, adj_z):
    """Adjoint of ``z = lower_solve(L, y)`` (Warp's ``adj_tile_lower_solve``): with
    ``W = L^-T adj_z`` returns ``(adj_L, adj_y) = (-tril(W z^T), W)``."""
    L = np.ascontiguousarray(L)
    y = np.ascontiguousarray(y)
    z = np.ascontiguousarray(z)
    g = np.ascontiguousarray(adj_z)
    n = L.shape[0]
    m = y.size // n if n > 0 else 0
    W = g.reshape((n, m)).copy()
    Z = z.reshape((n, m))
    zero = L.dtype.type(0)
    for i in range(n - 1, -1, -1):
        Wi = W[i]
        for j in range(i + 1, n):
            lji = L[j, i]
            Wj = W[j]
            for c in range(m):
                Wi[c] = Wi[c] - lji * Wj[c]
        d = L[i, i]
        if d != zero:
            for c in range(m):
                Wi[c] = Wi[c] / d
    adj_L = np.zeros((n, n), L.dtype)
    for i in range(n):
        Wi = W[i]
        for j in range(i + 1):
            Zj = Z[j]
            s = zero
            for c in range(m):
                s = s + Wi[c] * Zj[c]
            adj_L[i, j] = -s
    return adj_L, W.reshape(y.shape)


def lower_solve_jvp(L, y, z, dL, dy):
    """Tangent of ``z = lower_solve(L, y)``: ``L^-1 (dy - tril(dL) z)``."""
    L = np.ascontiguousarray(L)
    y = np.ascontiguousarray(y)
    z = np.ascontiguousarray(z)
    dL = np.ascontiguousarray(dL)
    dy = np.ascontiguousarray(dy)
    n = L.shape[0]
    m = y.size // n if n > 0 else 0
    Z = z.reshape((n, m))
    R = dy.reshape((n, m)).copy()
    zero = L.dtype.type(0)
    for i in range(n):
        Ri = R[i]
        for j in range(i + 1):
            p = dL[i, j]
            Zj = Z[j]
            for c in range(m):
                Ri[c] = Ri[c] - p * Zj[c]
    for i in range(n):
        Ri = R[i]
        for j in range(i):
            lij = L[i, j]
            Rj = R[j]
            for c in range(m):
                Ri[c] = Ri[c] - lij * Rj[c]
        d = L[i, i]
        if d != zero:
            for c in range(m):
                Ri[c] = Ri[c] / d
    return R.reshape(y.shape)


def upper_solve(U, z):
    """``x`` with ``U x = z`` by back substitution, reading only the upper triangle of
    ``U`` (n, n); ``z`` is ``(n,)`` or ``(n, k)``. Zero diagonal entries skip the division."""
    U = np.ascontiguousarray(U)
    z = np.ascontiguousarray(z)
    n = U.shape[0]
    m = z.size // n if n > 0 else 0
    X = z.reshape((n, m)).copy()
    zero = U.dtype.type(0)
    if m == 1:
        # one right-hand side: each entry's terms summed on a flat vector (no row views)
        x = X.reshape(n)
        for i in range(n - 1, -1, -1):
            Ui = U[i]
            s = x[i]
            for j in range(i + 1, n):
                s = s - Ui[j] * x[j]
            d = Ui[i]
            if d != zero:
                s = s / d
            x[i] = s
        return X.reshape(z.shape)
    for i in range(n - 1, -1, -1):
        Xi = X[i]
        Ui = U[i]
        for j in range(i + 1, n):
            uij = Ui[j]
            Xj = X[j]
            for c in range(m):
                Xi[c] = Xi[c] - uij * Xj[c]
        d = Ui[i]
        if d != zero:
            for c in range(m):
                Xi[c] = Xi[c] / d
    return X.reshape(z.shape)


def upper_solve_adj(U, z, x, adj_x):
    """Adjoint of ``x = upper_solve(U, z)``: with ``W = U^-T adj_x`` returns
    ``(adj_U, adj_z) = (-triu(W x^T), W)``. (Warp 1.19 marks ``tile_upper_solve`` as not
    differentiable; this is the exact adjoint.)"""
    U = np.ascontiguousarray(U)
    z = np.ascontiguousarray(z)
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(adj_x)
    n = U.shape[0]
    m = z.size // n if n > 0 else 0
    W = g.reshape((n, m)).copy()
    X = x.reshape((n, m))
    zero = U.dtype.type(0)
    for i in range(n):
        Wi = W[i]
        for j in range(i):
            uji = U[j, i]
            Wj = W[j]
            for c in range(m):
                Wi[c] = Wi[c] - uji * Wj[c]
        d = U[i, i]
        if d != zero:
            for c in range(m):
                Wi[c] = Wi[c] / d
    adj_U = np.zeros((n, n), U.dtype)
    for i in range(n):
        Wi = W[i]
        for j in range(i, n):
            Xj = X[j]
            s = zero
            for c in range(m):
                s = s + Wi[c] * Xj[c]
            adj_U[i, j] = -s
    return adj_U, W.reshape(z.shape)


def upper_solve_jvp(U, z, x, dU, dz):
    """Tangent of ``x = upper_solve(U, z)``: ``U^-1 (dz - triu(dU) x)``."""
    U = np.ascontiguousarray(U)
    z = np.ascontiguousarray(z)
    x = np.ascontiguousarray(x)
    dU = np.ascontiguousarray(dU)
    dz = np.ascontiguousarray(dz)
    n = U.shape[0]
    m = z.size // n if n > 0 else 0
    X = x.reshape((n, m))
    R = dz.reshape((n, m)).copy()
    zero = U.dtype.type(0)
    for i in range(n):
        Ri = R[i]
        for j in range(i, n):
            p = dU[i, j]
            Xj = X[j]
            for c in range(m):
                Ri[c] = Ri[c] - p * Xj[c]
    for i in range(n - 1, -1, -1):
        Ri = R[i]
        for j in range(i + 1, n):
            uij = U[i, j]
            Rj = R[j]
            for c in range(m):
                Ri[c] = Ri[c] - uij * Rj[c]
        d = U[i, i]
        if d != zero:
            for c in range(m):
                Ri[c] = Ri[c] / d
    return R.reshape(z.shape)
