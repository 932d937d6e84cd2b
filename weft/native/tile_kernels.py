"""Numeric cores of Warp's tile builtins on the CPU, as plain Python + NumPy functions.

Each function here is compiled by another module with ``numba.njit`` (nopython mode) and also
runs uncompiled (``NUMBA_DISABLE_JIT=1``). Every exported function is self-contained: it calls
no other function of this module, so ``numba.njit(getattr(tile_kernels, name))`` works for each
name in ``TILE_KERNELS`` on its own. Compile with ``error_model="numpy"`` to get Warp's inf/NaN
results rather than exceptions (the functions avoid dividing by zero themselves, so the default
error model also works).

Conventions
-----------
* A tile is a C-contiguous NumPy array: a tile of scalars of shape ``(M, N)`` is an ``(M, N)``
  array, a 1-D tile ``(N,)``; a tile of ``vec2`` (complex numbers for the FFT) of shape
  ``(M, N)`` is an ``(M, N, 2)`` array (component 0 real, 1 imaginary). Non-contiguous
  arguments are accepted (copied once with ``np.ascontiguousarray``).
* Functional: no input is modified; results are new C-contiguous arrays in the dtype of the
  input they stand for, computed in that dtype (float32 stays float32, like Warp).
* ``X_adj(inputs..., [forward output,] adj_out)`` returns the adjoints of the differentiable
  inputs (fresh arrays, to be accumulated by the caller); ``X_jvp(inputs..., [output,]
  tangents...)`` returns the output tangent.

Warp semantics followed (Warp 1.19, CPU path with ``block_dim == 1``)
-----------------------------------------------------------------------
* ``tile_matmul(a, b, out, alpha, beta)`` reads ``out`` only when ``beta != 0``; its adjoint
  is ``adj_a = alpha * adj_r @ b^T``, ``adj_b = alpha * a^T @ adj_r``, ``adj_out = beta *
  adj_r``; ``alpha`` and ``beta`` get no gradient.
* ``tile_cholesky`` reads only the lower triangle of ``A``; a non-positive pivot gives NaN
  (sqrt of a negative number) which spreads to the later columns, a zero pivot gives inf.
  Its adjoint is Murray's (2016) with respect to the lower-triangular parameterization of
  ``A``: with ``S`` the symmetric gradient, ``adj_A[i, j] = S[i, j] + S[j, i]`` below the
  diagonal, ``S[i, i]`` on it and zero above (the true gradient of the forward pass, which
  ignores the upper triangle).
* The products sum over k in increasing order like Warp's scalar GEMM, which fuses each step
  (``muladd``): ``matmul`` and the adjoints call ``simd.gemm``, whose compiled form fuses the
  same steps explicitly, and the others are compiled with LLVM's ``contract`` flag
  (``weft.native.tiles``); the results are then Warp's bit for bit (run uncompiled, each step
  rounds twice). ``matmul_acc``'s ``alpha``/``beta`` scaling is not fused, in Warp either.
* Cholesky and the solves round every entry as Warp's loops do (the factor's rows are summed
  four at a time, the forward substitution by columns, each entry still in Warp's order).
* Triangular solves read one triangle; a zero diagonal entry skips the division (Warp's
  ``diag != 0 ? s / diag : s``). Right-hand sides are ``(N,)`` or ``(N, K)``.
* FFTs act on the last tile dimension, unnormalized both ways (``ifft(fft(x)) == N x``);
  radix-2 (Warp's CPU butterfly with its twiddle recurrence) for powers of two, an O(N^2) DFT
  otherwise. Adjoint of fft is the unnormalized ifft and vice versa.
* Scans run over the flattened row-major tile and keep its shape; max/min scans follow C
  ``fmax``/``fmin`` (a NaN element is treated as missing).
* ``argmin``/``argmax`` return the row-major index of the first extreme element (Warp's CPU
  tie rule; Warp documents ties as unspecified across devices); a NaN in first position stays
  the champion until a strictly smaller/larger element appears, as in Warp.
"""
import math

import numpy as np

from .simd import gemm


# ------------------------------------------------------------------------------------------
# matmul
# ------------------------------------------------------------------------------------------

def matmul(a, b):
    """``a @ b`` for ``a`` (M, K) and ``b`` (K, N), accumulated in ``a``'s dtype: each output
    element summed over k in increasing order (as Warp's scalar GEMM), by ``simd.gemm`` (blocks
    of the result kept in vector registers when compiled)."""
    return gemm(a, b)


def matmul_acc(a, b, out, alpha, beta):
    """``alpha * a @ b + beta * out`` as a new array in ``out``'s dtype (Warp's
    ``tile_matmul(a, b, out, alpha, beta)``, which updates ``out`` in place). ``out`` is not
    read when ``beta == 0`` (so NaNs in it do not propagate). With ``beta = 0`` this is also
    Warp's two-argument form ``tile_matmul(a, b, alpha)``."""
    out = np.ascontiguousarray(out)
    T = out.dtype.type
    al = T(alpha)
    be = T(beta)
    c = gemm(a.astype(out.dtype), b.astype(out.dtype))   # the product in out's dtype
    M = c.shape[0]
    N = c.shape[1]
    if be != T(0):
        for i in range(M):
            ci = c[i]
            oi = out[i]
            for j in range(N):
                ci[j] = al * ci[j] + be * oi[j]
    else:
        for i in range(M):
            ci = c[i]
            for j in range(N):
                ci[j] = al * ci[j]
    return c


def matmul_adj(a, b, adj_c):
    """Adjoint of ``c = a @ b``: returns ``(adj_a, adj_b) = (adj_c @ b^T, a^T @ adj_c)``, each
    element summed in increasing order of the contracted index."""
    g = np.ascontiguousarray(adj_c)
    return gemm(g, b.T), gemm(a.T, g)


def matmul_acc_adj(a, b, out, alpha, beta, adj_r):
    """Adjoint of ``r = alpha * a @ b + beta * out``: returns ``(adj_a, adj_b, adj_out)`` with
    ``adj_a = alpha * adj_r @ b^T``, ``adj_b = alpha * a^T @ adj_r``, ``adj_out = beta * adj_r``
    (as Warp; ``alpha`` and ``beta`` receive no gradient)."""
    g = np.ascontiguousarray(adj_r)
    adj_a = gemm(g, b.T)
    al_a = adj_a.dtype.type(alpha)
    for i in range(adj_a.shape[0]):
        ra = adj_a[i]
        for k in range(adj_a.shape[1]):
            ra[k] = al_a * ra[k]
    adj_b = gemm(a.T, g)
    al_b = adj_b.dtype.type(alpha)
    for k in range(adj_b.shape[0]):
        rb = adj_b[k]
        for j in range(adj_b.shape[1]):
            rb[j] = al_b * rb[j]
    Tc = out.dtype.type
    be = Tc(beta)
    adj_out = g.astype(out.dtype)
    if be != Tc(1):
        for i in range(adj_out.shape[0]):
            oi = adj_out[i]
            for j in range(adj_out.shape[1]):
                oi[j] = oi[j] * be
    return adj_a, adj_b, adj_out


def matmul_jvp(a, b, da, db):
    """Tangent of ``c = a @ b``: ``da @ b + a @ db``."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    da = np.ascontiguousarray(da)
    db = np.ascontiguousarray(db)
    M = a.shape[0]
    K = a.shape[1]
    N = b.shape[1]
    dc = np.zeros((M, N), a.dtype)
    for i in range(M):
        ci = dc[i]
        for k in range(K):
            x = da[i, k]
            y = a[i, k]
            bk = b[k]
            dbk = db[k]
            for j in range(N):
                ci[j] += x * bk[j] + y * dbk[j]
    return dc


def matmul_acc_jvp(a, b, out, alpha, beta, da, db, dout):
    """Tangent of ``r = alpha * a @ b + beta * out``: ``alpha (da @ b + a @ db) + beta dout``
    (``dout`` not read when ``beta == 0``)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    da = np.ascontiguousarray(da)
    db = np.ascontiguousarray(db)
    dout = np.ascontiguousarray(dout)
    T = out.dtype.type
    al = T(alpha)
    be = T(beta)
    M = a.shape[0]
    K = a.shape[1]
    N = b.shape[1]
    dr = np.zeros((M, N), out.dtype)
    for i in range(M):
        ci = dr[i]
        for k in range(K):
            x = da[i, k]
            y = a[i, k]
            bk = b[k]
            dbk = db[k]
            for j in range(N):
                ci[j] += x * bk[j] + y * dbk[j]
        if be != T(0):
            di = dout[i]
            for j in range(N):
                ci[j] = al * ci[j] + be * di[j]
        else:
            for j in range(N):
                ci[j] = al * ci[j]
    return dr


# ------------------------------------------------------------------------------------------
# Cholesky and triangular solves
# ------------------------------------------------------------------------------------------

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


# ------------------------------------------------------------------------------------------
# FFT (complex numbers as the trailing axis of length 2)
# ------------------------------------------------------------------------------------------

def fft(a):
    """Forward DFT ``X[k] = sum_n x[n] exp(-2 pi i k n / N)`` along the last tile dimension of
    a vec2 tile (array ``(..., N, 2)``), unnormalized, leading dimensions batched. Powers of two
    use Warp's CPU radix-2 butterflies (bit reversal, twiddles by recurrence ``w *= wm``), other
    sizes an O(N^2) DFT, both in the array's dtype."""
    a = np.ascontiguousarray(a)
    n = a.shape[a.ndim - 2]
    out = a.copy()
    batch = a.size // (2 * n) if n > 0 else 0
    x = out.reshape((batch, n, 2))
    T = a.dtype.type
    zero = T(0)
    one = T(1)
    sgn = T(-1)
    two_pi = T(6.283185307179586)
    if n > 0 and (n & (n - 1)) == 0:
        for bt in range(batch):
            xb = x[bt]
            j = 0
            for i in range(1, n):
                bit = n >> 1
                while j & bit:
                    j ^= bit
                    bit >>= 1
                j ^= bit
                if i < j:
                    t0 = xb[i, 0]
                    t1 = xb[i, 1]
                    xb[i, 0] = xb[j, 0]
                    xb[i, 1] = xb[j, 1]
                    xb[j, 0] = t0
                    xb[j, 1] = t1
            length = 2
            while length <= n:
                half = length >> 1
                theta = sgn * two_pi / T(length)
                wm_re = np.cos(theta)
                wm_im = np.sin(theta)
                for k in range(0, n, length):
                    w_re = one
                    w_im = zero
                    for q in range(half):
                        lo = k + q
                        hi = lo + half
                        x_re = xb[hi, 0]
                        x_im = xb[hi, 1]
                        t_re = w_re * x_re - w_im * x_im
                        t_im = w_re * x_im + w_im * x_re
                        u_re = xb[lo, 0]
                        u_im = xb[lo, 1]
                        xb[lo, 0] = u_re + t_re
                        xb[lo, 1] = u_im + t_im
                        xb[hi, 0] = u_re - t_re
                        xb[hi, 1] = u_im - t_im
                        nw_re = w_re * wm_re - w_im * wm_im
                        nw_im = w_re * wm_im + w_im * wm_re
                        w_re = nw_re
                        w_im = nw_im
                length <<= 1
    elif n > 0:
        base = sgn * two_pi / T(n)
        tmp = np.empty((n, 2), a.dtype)
        for bt in range(batch):
            xb = x[bt]
            for k in range(n):
                acc_re = zero
                acc_im = zero
                for q in range(n):
                    theta = base * T(k) * T(q)
                    c = np.cos(theta)
                    s = np.sin(theta)
                    xr = xb[q, 0]
                    xi = xb[q, 1]
                    acc_re += c * xr - s * xi
                    acc_im += c * xi + s * xr
                tmp[k, 0] = acc_re
                tmp[k, 1] = acc_im
            for k in range(n):
                xb[k, 0] = tmp[k, 0]
                xb[k, 1] = tmp[k, 1]
    return out


def ifft(a):
    """Inverse DFT ``x[n] = sum_k X[k] exp(+2 pi i k n / N)`` along the last tile dimension,
    unnormalized (no division by N, as Warp: ``ifft(fft(x)) == N x``). Same algorithms as
    ``fft`` with the opposite sign."""
    a = np.ascontiguousarray(a)
    n = a.shape[a.ndim - 2]
    out = a.copy()
    batch = a.size // (2 * n) if n > 0 else 0
    x = out.reshape((batch, n, 2))
    T = a.dtype.type
    zero = T(0)
    one = T(1)
    sgn = T(1)
    two_pi = T(6.283185307179586)
    if n > 0 and (n & (n - 1)) == 0:
        for bt in range(batch):
            xb = x[bt]
            j = 0
            for i in range(1, n):
                bit = n >> 1
                while j & bit:
                    j ^= bit
                    bit >>= 1
                j ^= bit
                if i < j:
                    t0 = xb[i, 0]
                    t1 = xb[i, 1]
                    xb[i, 0] = xb[j, 0]
                    xb[i, 1] = xb[j, 1]
                    xb[j, 0] = t0
                    xb[j, 1] = t1
            length = 2
            while length <= n:
                half = length >> 1
                theta = sgn * two_pi / T(length)
                wm_re = np.cos(theta)
                wm_im = np.sin(theta)
                for k in range(0, n, length):
                    w_re = one
                    w_im = zero
                    for q in range(half):
                        lo = k + q
                        hi = lo + half
                        x_re = xb[hi, 0]
                        x_im = xb[hi, 1]
                        t_re = w_re * x_re - w_im * x_im
                        t_im = w_re * x_im + w_im * x_re
                        u_re = xb[lo, 0]
                        u_im = xb[lo, 1]
                        xb[lo, 0] = u_re + t_re
                        xb[lo, 1] = u_im + t_im
                        xb[hi, 0] = u_re - t_re
                        xb[hi, 1] = u_im - t_im
                        nw_re = w_re * wm_re - w_im * wm_im
                        nw_im = w_re * wm_im + w_im * wm_re
                        w_re = nw_re
                        w_im = nw_im
                length <<= 1
    elif n > 0:
        base = sgn * two_pi / T(n)
        tmp = np.empty((n, 2), a.dtype)
        for bt in range(batch):
            xb = x[bt]
            for k in range(n):
                acc_re = zero
                acc_im = zero
                for q in range(n):
                    theta = base * T(k) * T(q)
                    c = np.cos(theta)
                    s = np.sin(theta)
                    xr = xb[q, 0]
                    xi = xb[q, 1]
                    acc_re += c * xr - s * xi
                    acc_im += c * xi + s * xr
                tmp[k, 0] = acc_re
                tmp[k, 1] = acc_im
            for k in range(n):
                xb[k, 0] = tmp[k, 0]
                xb[k, 1] = tmp[k, 1]
    return out


# The unnormalized DFT's adjoint (for the real inner product of the (re, im) pairs) is the
# conjugate transform: Warp's adj_tile_fft runs the inverse transform on the gradient, and
# adj_tile_ifft the forward one, neither scaled.
fft_adj = ifft
ifft_adj = fft
fft_jvp = fft      # linear: the tangent is the transform of the input tangent
ifft_jvp = ifft


# ------------------------------------------------------------------------------------------
# sort
# ------------------------------------------------------------------------------------------

def sort(keys, values):
    """Sort ``keys`` ascending (over the flattened row-major tile) and permute ``values``
    (same leading shape as ``keys``; any trailing element shape and dtype) with them; returns
    ``(sorted_keys, permuted_values)`` in the input shapes. Stable (bottom-up merge sort).
    Order: ``-0.0`` before ``+0.0`` (as Warp's radix sort, which orders the float bit
    patterns), NaNs last. Warp documents its sort as not stable, so equal keys may come out in
    another order there (its CPU bitonic path for tiles up to 2048 keys also treats -0 == +0,
    and does not handle NaN or, for sizes that are not powers of two, +inf keys: they are
    lost to its FLT_MAX padding)."""
    keys = np.ascontiguousarray(keys)
    values = np.ascontiguousarray(values)
    n = keys.size
    k = keys.reshape(n)
    inner = values.size // n if n > 0 else 0
    v = values.reshape((n, inner))
    perm = np.arange(n)
    tmp = np.empty(n, perm.dtype)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            t = lo
            while i < mid and j < hi:
                xr = k[perm[j]]
                xl = k[perm[i]]
                right_first = xr < xl
                if not right_first:
                    if xr == xl:
                        right_first = xr == 0 and math.copysign(1.0, xr) < math.copysign(1.0, xl)
                    else:
                        right_first = xr == xr and xl != xl
                if right_first:
                    tmp[t] = perm[j]
                    j += 1
                else:
                    tmp[t] = perm[i]
                    i += 1
                t += 1
            while i < mid:
                tmp[t] = perm[i]
                i += 1
                t += 1
            while j < hi:
                tmp[t] = perm[j]
                j += 1
                t += 1
            lo = hi
        perm, tmp = tmp, perm
        width *= 2
    sk = np.empty(n, keys.dtype)
    sv = np.empty((n, inner), values.dtype)
    for i in range(n):
        p = perm[i]
        sk[i] = k[p]
        for c in range(inner):
            sv[i, c] = v[p, c]
    return sk.reshape(keys.shape), sv.reshape(values.shape)


# ------------------------------------------------------------------------------------------
# scans (over the flattened row-major tile; the result keeps the input's shape)
# ------------------------------------------------------------------------------------------

def scan_inclusive(a):
    """Inclusive prefix sums: ``r[i] = a[0] + ... + a[i]`` (summed left to right from 0)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(a.size):
        acc = acc + x[i]
        out[i] = acc
    return out.reshape(a.shape)


def scan_exclusive(a):
    """Exclusive prefix sums: ``r[0] = 0``, ``r[i] = a[0] + ... + a[i-1]``."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(a.size):
        out[i] = acc
        acc = acc + x[i]
    return out.reshape(a.shape)


def scan_max_inclusive(a):
    """Inclusive prefix maxima with C ``fmax`` (a NaN element is skipped; NaN only while all
    elements so far are NaN)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        out[0] = acc
        for i in range(1, a.size):
            xi = x[i]
            if not acc >= xi and xi == xi:
                acc = xi
            out[i] = acc
    return out.reshape(a.shape)


def scan_min_inclusive(a):
    """Inclusive prefix minima with C ``fmin`` (a NaN element is skipped)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        out[0] = acc
        for i in range(1, a.size):
            xi = x[i]
            if not acc <= xi and xi == xi:
                acc = xi
            out[i] = acc
    return out.reshape(a.shape)


def scan_inclusive_adj(a, adj_r):
    """Adjoint of ``scan_inclusive``: the reverse inclusive scan ``adj_a[i] = sum_{j >= i}
    adj_r[j]``. (Warp 1.19's adjoint of the scans is empty: not differentiable there.)"""
    g = np.ascontiguousarray(adj_r).reshape(adj_r.size)
    out = np.empty(g.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(g.size - 1, -1, -1):
        acc = acc + g[i]
        out[i] = acc
    return out.reshape(a.shape)


def scan_exclusive_adj(a, adj_r):
    """Adjoint of ``scan_exclusive``: ``adj_a[i] = sum_{j > i} adj_r[j]``."""
    g = np.ascontiguousarray(adj_r).reshape(adj_r.size)
    out = np.empty(g.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(g.size - 1, -1, -1):
        out[i] = acc
        acc = acc + g[i]
    return out.reshape(a.shape)


def scan_max_inclusive_adj(a, adj_r):
    """Adjoint of ``scan_max_inclusive`` (a subgradient): ``adj_r[i]`` goes to the element
    that is the running maximum at ``i`` (the earliest one on ties, as the forward keeps the
    earlier value)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    g = np.ascontiguousarray(adj_r).reshape(a.size)
    out = np.zeros(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] += g[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc >= xi and xi == xi:
                acc = xi
                w = i
            out[w] += g[i]
    return out.reshape(a.shape)


def scan_min_inclusive_adj(a, adj_r):
    """Adjoint of ``scan_min_inclusive`` (a subgradient, earliest minimum on ties)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    g = np.ascontiguousarray(adj_r).reshape(a.size)
    out = np.zeros(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] += g[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc <= xi and xi == xi:
                acc = xi
                w = i
            out[w] += g[i]
    return out.reshape(a.shape)


def scan_max_inclusive_jvp(a, da):
    """Tangent of ``scan_max_inclusive``: ``da`` at the running maximum's element."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    d = np.ascontiguousarray(da).reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] = d[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc >= xi and xi == xi:
                acc = xi
                w = i
            out[i] = d[w]
    return out.reshape(a.shape)


def scan_min_inclusive_jvp(a, da):
    """Tangent of ``scan_min_inclusive``: ``da`` at the running minimum's element."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    d = np.ascontiguousarray(da).reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] = d[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc <= xi and xi == xi:
                acc = xi
                w = i
            out[i] = d[w]
    return out.reshape(a.shape)


scan_inclusive_jvp = scan_inclusive   # linear
scan_exclusive_jvp = scan_exclusive


# ------------------------------------------------------------------------------------------
# argmin / argmax (row-major index into the flattened tile)
# ------------------------------------------------------------------------------------------

def argmin(a):
    """Row-major index (an int; Warp returns it as a shape-(1,) int32 tile) of the minimum:
    Warp's CPU scan, ``index`` moves only when an element is strictly below the running
    ``fmin`` (so the first of equal minima wins; an empty tile gives -1)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    if a.size == 0:
        return -1
    best = 0
    acc = x[0]
    for i in range(1, a.size):
        xi = x[i]
        if xi < acc:
            best = i
        if not acc <= xi and xi == xi:
            acc = xi
    return best


def argmax(a):
    """Row-major index of the maximum (first of equal maxima; see ``argmin``)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    if a.size == 0:
        return -1
    best = 0
    acc = x[0]
    for i in range(1, a.size):
        xi = x[i]
        if xi > acc:
            best = i
        if not acc >= xi and xi == xi:
            acc = xi
    return best


# ------------------------------------------------------------------------------------------
# diag_add, axpy
# ------------------------------------------------------------------------------------------

def diag_add(a, d):
    """``a`` (n, n[, ...]) with ``d[i]`` (n[, ...]) added to ``a[i, i]`` (a new array; Warp's
    ``tile_diag_add`` also returns a new tile). Vector/matrix elements are added
    component-wise."""
    a = np.ascontiguousarray(a)
    d = np.ascontiguousarray(d)
    n = a.shape[0]
    inner = d.size // n if n > 0 else 0
    out = a.copy()
    o = out.reshape((n, n, inner))
    dd = d.reshape((n, inner))
    for i in range(n):
        for c in range(inner):
            o[i, i, c] = o[i, i, c] + dd[i, c]
    return out


def diag_add_adj(a, d, adj_r):
    """Adjoint of ``diag_add``: ``(adj_a, adj_d) = (adj_r, diag(adj_r))``. (Warp 1.19 marks
    ``tile_diag_add`` as not differentiable.)"""
    g = np.ascontiguousarray(adj_r)
    n = a.shape[0]
    inner = d.size // n if n > 0 else 0
    adj_a = g.astype(a.dtype)
    gg = g.reshape((n, n, inner))
    adj_d = np.empty((n, inner), d.dtype)
    for i in range(n):
        for c in range(inner):
            adj_d[i, c] = gg[i, i, c]
    return adj_a, adj_d.reshape(d.shape)


diag_add_jvp = diag_add   # linear: diag_add(da, dd)


def axpy(alpha, x, y):
    """``y + x * alpha`` element-wise (any element shape), ``alpha`` converted to ``y``'s
    scalar type. Warp's ``tile_axpy(alpha, src, dest)`` updates ``dest`` in place; here the
    new ``dest`` is returned."""
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y)
    al = y.dtype.type(alpha)
    xs = x.reshape(x.size)
    out = y.copy()
    o = out.reshape(y.size)
    for i in range(y.size):
        o[i] = o[i] + xs[i] * al
    return out


def axpy_adj(alpha, x, y, adj_r):
    """Adjoint of ``r = axpy(alpha, x, y)`` as Warp's ``adj_tile_axpy``: returns
    ``(adj_alpha, adj_x, adj_y) = (sum(adj_r * x), adj_r * alpha, adj_r)`` (``adj_alpha`` a
    scalar of ``y``'s dtype)."""
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(adj_r)
    T = y.dtype.type
    al = T(alpha)
    xs = x.reshape(x.size)
    gs = g.reshape(g.size)
    adj_x = np.empty(x.size, x.dtype)
    s = T(0)
    for i in range(x.size):
        adj_x[i] = gs[i] * al
        s = s + gs[i] * xs[i]
    adj_y = g.astype(y.dtype)
    return s, adj_x.reshape(x.shape), adj_y


def axpy_jvp(alpha, x, y, dalpha, dx, dy):
    """Tangent of ``r = axpy(alpha, x, y)``: ``dy + dx * alpha + x * dalpha``."""
    x = np.ascontiguousarray(x)
    dx = np.ascontiguousarray(dx)
    dy = np.ascontiguousarray(dy)
    T = y.dtype.type
    al = T(alpha)
    da = T(dalpha)
    xs = x.reshape(x.size)
    dxs = dx.reshape(dx.size)
    out = np.empty(y.shape, y.dtype)
    o = out.reshape(y.size)
    dys = dy.reshape(dy.size)
    for i in range(y.size):
        o[i] = dys[i] + dxs[i] * al + xs[i] * da
    return out


TILE_KERNELS = (
    "matmul", "matmul_acc", "matmul_adj", "matmul_acc_adj", "matmul_jvp", "matmul_acc_jvp",
    "cholesky", "cholesky_adj", "cholesky_jvp",
    "lower_solve", "lower_solve_adj", "lower_solve_jvp",
    "upper_solve", "upper_solve_adj", "upper_solve_jvp",
    "cholesky_solve", "cholesky_solve_adj", "cholesky_solve_jvp",
    "fft", "ifft", "fft_adj", "ifft_adj", "fft_jvp", "ifft_jvp",
    "sort",
    "scan_inclusive", "scan_exclusive", "scan_max_inclusive", "scan_min_inclusive",
    "scan_inclusive_adj", "scan_exclusive_adj", "scan_max_inclusive_adj",
    "scan_min_inclusive_adj", "scan_inclusive_jvp", "scan_exclusive_jvp",
    "scan_max_inclusive_jvp", "scan_min_inclusive_jvp",
    "argmin", "argmax",
    "diag_add", "diag_add_adj", "diag_add_jvp",
    "axpy", "axpy_adj", "axpy_jvp",
)
