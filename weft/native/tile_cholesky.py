"""Numeric cores of ``tile_cholesky`` and ``tile_cholesky_solve`` on the CPU: the factor and
the solve with it, with their adjoints and tangents, each entry rounded in Warp's order. Each is
self-contained and compiled on its own with ``numba.njit``; :mod:`weft.native.tile_kernels`
gathers them with the other families and states the conventions and Warp semantics they
follow."""
import math

import numpy as np


def cholesky(A):
    """Lower Cholesky factor ``L`` (``L @ L.T == A``, upper part zero) of a square tile,
    reading only its lower triangle (Warp's ``fill_mode="lower"``; for ``"upper"`` use
    ``cholesky(A.T).T``). Warp's column algorithm: ``L[j,j] = sqrt(A[j,j] - sum L[j,k]^2)``,
    then ``L[i,j] = (A[i,j] - sum L[i,k] L[j,k]) * (1 / L[j,j])``. A negative pivot gives NaN,
    a zero pivot inf, both spreading to the later entries."""
    A = np.ascontiguousarray(A)
    n = A.shape[0]
    T = A.dtype.type
    zero = T(0)
    one = T(1)
    L = np.zeros((n, n), A.dtype)
    for j in range(n):
        Lj = L[j]
        s = A[j, j]
        for k in range(j):
            r = Lj[k]
            s = s - r * r
        if s >= zero:
            s = np.sqrt(s)
        else:
            s = T(np.nan)
        if s != zero:
            inv = one / s
        else:
            inv = T(math.copysign(math.inf, s))
        Lj[j] = s
        # the rows below, four at a time: four independent sums per step (each still in
        # increasing k, so every entry rounds exactly as one row at a time would)
        i = j + 1
        while i + 4 <= n:
            L0 = L[i]
            L1 = L[i + 1]
            L2 = L[i + 2]
            L3 = L[i + 3]
            s0 = A[i, j]
            s1 = A[i + 1, j]
            s2 = A[i + 2, j]
            s3 = A[i + 3, j]
            for k in range(j):
                x = Lj[k]
                s0 = s0 - L0[k] * x
                s1 = s1 - L1[k] * x
                s2 = s2 - L2[k] * x
                s3 = s3 - L3[k] * x
            L0[j] = s0 * inv
            L1[j] = s1 * inv
            L2[j] = s2 * inv
            L3[j] = s3 * inv
            i += 4
        for i in range(i, n):
            Li = L[i]
            si = A[i, j]
            for k in range(j):
                si = si - Li[k] * Lj[k]
            Li[j] = si * inv
    return L


def cholesky_adj(A, L, adj_L):
    """Adjoint of ``L = cholesky(A)`` with Warp's convention: returns ``adj_A`` with the
    gradient on the lower triangle only (strictly lower ``B[i,j]``, diagonal ``B[i,i] / 2``,
    upper zero) where ``B = L^-T sym(L^T adj_L) L^-1`` and ``sym`` mirrors the lower triangle of
    ``L^T adj_L`` onto the upper one (Murray 2016; Warp's six phases in the same order)."""
    L = np.ascontiguousarray(L)
    G = np.ascontiguousarray(adj_L)
    n = L.shape[0]
    T = L.dtype.type
    zero = T(0)
    half = T(0.5)
    # phase 1: P = L^T @ adj_L
    P = np.zeros((n, n), L.dtype)
    for k in range(n):
        Lk = L[k]
        Gk = G[k]
        for i in range(n):
            p = Lk[i]
            Pi = P[i]
            for j in range(n):
                Pi[j] += p * Gk[j]
    # phase 2: keep the lower triangle, mirror it onto the upper one
    X = np.empty((n, n), L.dtype)
    for i in range(n):
        for j in range(n):
            if i >= j:
                X[i, j] = P[i, j]
            else:
                X[i, j] = P[j, i]
    # phase 3: solve L^T X = W2 in place (back substitution, rows of X at a time)
    for i in range(n - 1, -1, -1):
        Xi = X[i]
        for j in range(i + 1, n):
            lji = L[j, i]
            Xj = X[j]
            for c in range(n):
                Xi[c] = Xi[c] - lji * Xj[c]
        d = L[i, i]
        if d != zero:
            for c in range(n):
                Xi[c] = Xi[c] / d
    # phase 4: transpose
    B = X.T.copy()
    # phase 5: solve L^T B = X^T in place
    for i in range(n - 1, -1, -1):
        Bi = B[i]
        for j in range(i + 1, n):
            lji = L[j, i]
            Bj = B[j]
            for c in range(n):
                Bi[c] = Bi[c] - lji * Bj[c]
        d = L[i, i]
        if d != zero:
            for c in range(n):
                Bi[c] = Bi[c] / d
    # phase 6: lower triangle, diagonal halved
    adj_A = np.zeros((n, n), L.dtype)
    for i in range(n):
        for j in range(i):
            adj_A[i, j] = B[i, j]
        adj_A[i, i] = half * B[i, i]
    return adj_A


def cholesky_jvp(A, L, dA):
    """Tangent of ``L = cholesky(A)`` for a tangent ``dA`` of which only the lower triangle
    counts (as in the forward pass): ``dL = L Phi(L^-1 S L^-T)`` with ``S`` the symmetric
    matrix of ``dA``'s lower triangle and ``Phi`` the lower triangle with halved diagonal."""
    L = np.ascontiguousarray(L)
    dA = np.ascontiguousarray(dA)
    n = L.shape[0]
    T = L.dtype.type
    zero = T(0)
    half = T(0.5)
    Y = np.empty((n, n), L.dtype)
    for i in range(n):
        for j in range(n):
            if i >= j:
                Y[i, j] = dA[i, j]
            else:
                Y[i, j] = dA[j, i]
    # Y = L^-1 S (forward substitution)
    for i in range(n):
        Yi = Y[i]
        for j in range(i):
            lij = L[i, j]
            Yj = Y[j]
            for c in range(n):
                Yi[c] = Yi[c] - lij * Yj[c]
        d = L[i, i]
        if d != zero:
            for c in range(n):
                Yi[c] = Yi[c] / d
    # Z^T = L^-1 Y^T, so Z = L^-1 S L^-T
    Z = Y.T.copy()
    for i in range(n):
        Zi = Z[i]
        for j in range(i):
            lij = L[i, j]
            Zj = Z[j]
            for c in range(n):
                Zi[c] = Zi[c] - lij * Zj[c]
        d = L[i, i]
        if d != zero:
            for c in range(n):
                Zi[c] = Zi[c] / d
    # Phi: lower triangle of Z (symmetric) with halved diagonal
    Phi = np.zeros((n, n), L.dtype)
    for i in range(n):
        for j in range(i):
            Phi[i, j] = Z[i, j]
        Phi[i, i] = half * Z[i, i]
    dL = np.zeros((n, n), L.dtype)
    for i in range(n):
        Di = dL[i]
        for k in range(i + 1):
            p = L[i, k]
            Pk = Phi[k]
            for j in range(k + 1):
                Di[j] += p * Pk[j]
    return dL


def cholesky_solve(L, y):
    """``x`` with ``(L L^T) x = y``: forward substitution with ``L`` then back substitution
    with ``L^T``, reading only the lower triangle of ``L`` (Warp's ``fill_mode="lower"``; for
    ``"upper"`` with ``U^T U = A`` pass ``U.T``). ``y`` is ``(n,)`` or ``(n, k)``."""
    L = np.ascontiguousarray(L)
    y = np.ascontiguousarray(y)
    n = L.shape[0]
    m = y.size // n if n > 0 else 0
    X = y.reshape((n, m)).copy()
    zero = L.dtype.type(0)
    if m == 1:
        # one right-hand side: L's columns are the rows of U = L^T, so the forward
        # substitution's update per column is one contiguous loop (vectorised: unsigned
        # indices), and the back substitution reads U's rows; the same terms in the same order
        # as the general case below (2.8x faster at 32 x 32, measured interleaved)
        x = X.reshape(n)
        U = np.ascontiguousarray(L.T)
        un = np.uint64(n)
        for j in range(n):
            Uj = U[j]
            d = Uj[j]
            if d != zero:
                x[j] = x[j] / d
            xj = x[j]
            for i in range(np.uint64(j) + np.uint64(1), un):
                x[i] = x[i] - Uj[i] * xj
        for i in range(n - 1, -1, -1):
            Ui = U[i]
            s = x[i]
            for j in range(i + 1, n):
                s = s - Ui[j] * x[j]
            d = Ui[i]
            if d != zero:
                s = s / d
            x[i] = s
        return X.reshape(y.shape)
    # forward substitution by columns: once row j is final it is subtracted from every row
    # below (independent updates), and each row still takes its terms in increasing j
    for j in range(n):
        Xj = X[j]
        d = L[j, j]
        if d != zero:
            for c in range(m):
                Xj[c] = Xj[c] / d
        for i in range(j + 1, n):
            lij = L[i, j]
            Xi = X[i]
            for c in range(m):
                Xi[c] = Xi[c] - lij * Xj[c]
    for i in range(n - 1, -1, -1):
        Xi = X[i]
        for j in range(i + 1, n):
            lji = L[j, i]
            Xj = X[j]
            for c in range(m):
                Xi[c] = Xi[c] - lji * Xj[c]
        d = L[i, i]
        if d != zero:
            for c in range(m):
                Xi[c] = Xi[c] / d
    return X.reshape(y.shape)


def cholesky_solve_adj(L, y, x, adj_x):
    """Adjoint of ``x = cholesky_solve(L, y)``: with ``Z = (L L^T)^-1 adj_x`` returns
    ``(adj_L, adj_y) = (-tril((Z x^T + x Z^T) L), Z)``, the gradient on the lower triangle of
    ``L`` that the forward pass reads. (Warp 1.19 marks ``tile_cholesky_solve`` as not
    differentiable; this is the exact adjoint.)"""
    L = np.ascontiguousarray(L)
    y = np.ascontiguousarray(y)
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(adj_x)
    n = L.shape[0]
    m = y.size // n if n > 0 else 0
    X = x.reshape((n, m))
    Z = g.reshape((n, m)).copy()
    zero = L.dtype.type(0)
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
    for i in range(n - 1, -1, -1):
        Zi = Z[i]
        for j in range(i + 1, n):
            lji = L[j, i]
            Zj = Z[j]
            for c in range(m):
                Zi[c] = Zi[c] - lji * Zj[c]
        d = L[i, i]
        if d != zero:
            for c in range(m):
                Zi[c] = Zi[c] / d
    # G = Z X^T + X Z^T (symmetric)
    G = np.zeros((n, n), L.dtype)
    for i in range(n):
        Zi = Z[i]
        Xi = X[i]
        for j in range(i + 1):
            Zj = Z[j]
            Xj = X[j]
            s = zero
            for c in range(m):
                s = s + Zi[c] * Xj[c] + Xi[c] * Zj[c]
            G[i, j] = s
            G[j, i] = s
    adj_L = np.zeros((n, n), L.dtype)
    for i in range(n):
        Ai = adj_L[i]
        for k in range(n):
            p = G[i, k]
            Lk = L[k]
            for j in range(min(i, k) + 1):
                Ai[j] -= p * Lk[j]
    return adj_L, Z.reshape(y.shape)


def cholesky_solve_jvp(L, y, x, dL, dy):
    """Tangent of ``x = cholesky_solve(L, y)``: ``A^-1 (dy - dA x)`` with ``A = L L^T`` and
    ``dA = dL L^T + L dL^T`` (``dL`` restricted to its lower triangle)."""
    L = np.ascontiguousarray(L)
    y = np.ascontiguousarray(y)
    x = np.ascontiguousarray(x)
    dL = np.ascontiguousarray(dL)
    dy = np.ascontiguousarray(dy)
    n = L.shape[0]
    m = y.size // n if n > 0 else 0
    X = x.reshape((n, m))
    zero = L.dtype.type(0)
    # t1 = L^T x, t2 = tril(dL)^T x
    t1 = np.zeros((n, m), L.dtype)
    t2 = np.zeros((n, m), L.dtype)
    for k in range(n):
        Xk = X[k]
        for i in range(k + 1):
            p = L[k, i]
            q = dL[k, i]
            t1i = t1[i]
            t2i = t2[i]
            for c in range(m):
                t1i[c] += p * Xk[c]
                t2i[c] += q * Xk[c]
    R = dy.reshape((n, m)).copy()
    for i in range(n):
        Ri = R[i]
        for k in range(i + 1):
            p = dL[i, k]
            q = L[i, k]
            t1k = t1[k]
            t2k = t2[k]
            for c in range(m):
                Ri[c] = Ri[c] - (p * t1k[c] + q * t2k[c])
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
    for i in range(n - 1, -1, -1):
        Ri = R[i]
        for j in range(i + 1, n):
            lji = L[j, i]
            Rj = R[j]
            for c in range(m):
                Ri[c] = Ri[c] - lji * Rj[c]
        d = L[i, i]
        if d != zero:
            for c in range(m):
                Ri[c] = Ri[c] / d
    return R.reshape(y.shape)
