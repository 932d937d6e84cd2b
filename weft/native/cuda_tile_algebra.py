"""Cooperative tiles on CUDA, the dense algebra: ``tile_fft``/``tile_ifft`` (a row per thread)
and ``tile_cholesky`` with the lower, upper and Cholesky solves (columns of the factor, and a
right-hand side per thread), each in the CPU's order of operations
(:mod:`weft.native.tile_kernels`). Re-exported by :mod:`weft.native.cuda_helpers` beside
:mod:`weft.native.cuda_tiles`, whose conventions they follow."""
from __future__ import annotations

import math

from numba import cuda

from .cuda_tiles import _dev, tile_copy, tile_fill, tile_transpose_into, tile_view


# ------------------------------------------------------------------------------ FFT
@_dev
def _fft_into(out, a, sgn):
    """The unnormalized DFT (``sgn`` -1) or its inverse (+1) along the last tile dimension of a
    vec2 tile ``a`` (``(..., N, 2)``) into ``out``: the CPU's algorithms
    (:func:`weft.native.tile_kernels.fft`), each thread transforming its own rows. Powers of
    two: bit reversal and radix-2 butterflies in place in ``out`` (twiddles by recurrence);
    other sizes: the O(N^2) sum, read from ``a``."""
    n = out.shape[out.ndim - 2]
    batch = out.size // (2 * n)
    x = tile_view(out, (batch, n, 2))
    src = tile_view(a, (batch, n, 2))
    zero = x.dtype.type(0)
    one = x.dtype.type(1)
    two_pi = x.dtype.type(6.283185307179586)
    sg = x.dtype.type(sgn)
    pow2 = (n & (n - 1)) == 0
    cuda.syncthreads()
    for bt in range(cuda.threadIdx.x, batch, cuda.blockDim.x):
        xb = x[bt]
        sb = src[bt]
        if pow2:
            for i in range(n):
                xb[i, 0] = sb[i, 0]
                xb[i, 1] = sb[i, 1]
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
                theta = sg * two_pi / x.dtype.type(length)
                wm_re = math.cos(theta)
                wm_im = math.sin(theta)
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
        else:
            base = sg * two_pi / x.dtype.type(n)
            for k in range(n):
                acc_re = zero
                acc_im = zero
                for q in range(n):
                    theta = base * x.dtype.type(k) * x.dtype.type(q)
                    c = math.cos(theta)
                    s = math.sin(theta)
                    xr = sb[q, 0]
                    xi = sb[q, 1]
                    acc_re += c * xr - s * xi
                    acc_im += c * xi + s * xr
                xb[k, 0] = acc_re
                xb[k, 1] = acc_im
    cuda.syncthreads()


@_dev
def tile_fft_into(out, a):
    _fft_into(out, a, -1)


@_dev
def tile_ifft_into(out, a):
    _fft_into(out, a, 1)


tile_fft_adj_into = tile_ifft_into  # the adjoint of the unnormalized DFT is its inverse
tile_ifft_adj_into = tile_fft_into
tile_fft_jvp_into = tile_fft_into   # linear
tile_ifft_jvp_into = tile_ifft_into


# ------------------------------------------------------------------------------ Cholesky, solves
@_dev
def tile_cholesky_into(out, A):
    """The lower Cholesky factor of ``A`` (its lower triangle read), the CPU's algorithm
    (:func:`weft.native.tile_kernels.cholesky`): column by column, every thread computing the
    pivot, the rows below split among the threads, each entry's terms in increasing k."""
    n = A.shape[0]
    zero = out.dtype.type(0)
    one = out.dtype.type(1)
    tile_fill(out, 0)
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            r = out[j, k]
            s = s - r * r
        if s >= zero:
            s = math.sqrt(s)
        else:
            s = out.dtype.type(math.nan)
        if s != zero:
            inv = one / s
        else:
            inv = out.dtype.type(math.copysign(math.inf, s))
        for i in range(j + 1 + cuda.threadIdx.x, n, cuda.blockDim.x):
            si = A[i, j]
            for k in range(j):
                si = si - out[i, k] * out[j, k]
            out[i, j] = si * inv
        if cuda.threadIdx.x == 0:
            out[j, j] = s
        cuda.syncthreads()


@_dev
def _forward_substitution(X, L, transposed):
    """``X`` (n, m) := ``L^-1 X`` in place (lower triangle of ``L``, or of ``U^T`` when
    ``transposed``: ``L[i, j]`` read as ``U[j, i]``), a column of ``X`` per thread; each
    entry's terms in increasing j, then its division (zero pivots skipped)."""
    n, m = X.shape[0], X.shape[1]
    zero = L.dtype.type(0)
    for c in range(cuda.threadIdx.x, m, cuda.blockDim.x):
        for i in range(n):
            s = X[i, c]
            for j in range(i):
                f = L[j, i] if transposed else L[i, j]
                s = s - f * X[j, c]
            d = L[i, i]
            if d != zero:
                s = s / d
            X[i, c] = s


@_dev
def _back_substitution(X, U, transposed):
    """``X`` := ``U^-1 X`` in place (upper triangle of ``U``, or of ``L^T`` when
    ``transposed``: ``U[i, j]`` read as ``L[j, i]``)."""
    n, m = X.shape[0], X.shape[1]
    zero = U.dtype.type(0)
    for c in range(cuda.threadIdx.x, m, cuda.blockDim.x):
        for i in range(n - 1, -1, -1):
            s = X[i, c]
            for j in range(i + 1, n):
                u = U[j, i] if transposed else U[i, j]
                s = s - u * X[j, c]
            d = U[i, i]
            if d != zero:
                s = s / d
            X[i, c] = s


@_dev
def tile_lower_solve_into(out, L, y):
    """``out`` = ``z`` with ``L z = y`` (forward substitution)."""
    tile_copy(out, y)
    _forward_substitution(tile_view(out, (out.shape[0], out.size // out.shape[0])), L, False)
    cuda.syncthreads()


@_dev
def tile_upper_solve_into(out, U, z):
    """``out`` = ``x`` with ``U x = z`` (back substitution)."""
    tile_copy(out, z)
    _back_substitution(tile_view(out, (out.shape[0], out.size // out.shape[0])), U, False)
    cuda.syncthreads()


@_dev
def tile_cholesky_solve_into(out, L, y):
    """``out`` = ``x`` with ``L L^T x = y``."""
    tile_copy(out, y)
    X = tile_view(out, (out.shape[0], out.size // out.shape[0]))  # (a vector: one column)
    _forward_substitution(X, L, False)
    _back_substitution(X, L, True)
    cuda.syncthreads()


# ------------------------------------------------------------------------------ their derivatives
# The CPU's adjoints and tangents (:mod:`weft.native.tile_kernels`: ``cholesky_adj``,
# ``*_solve_adj``, ``*_jvp``) phase by phase: each entry of a product by one thread, its terms
# in the CPU's order; each column of a substitution by one thread (as the solves above); a
# barrier between phases. ``work`` (and ``work2``) are buffers the pass ``cuda_tiles`` gives
# for the CPU's temporaries.
@_dev
def _mirror_lower(out, a):
    """``out[i, j]`` = ``a``'s lower triangle, mirrored onto the upper one."""
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        out[i, j] = a[i, j] if i >= j else a[j, i]
    cuda.syncthreads()


@_dev
def _lower_halved(out, a):
    """``out`` = ``a``'s strict lower triangle, its diagonal halved, zero above."""
    n = out.shape[1]
    half = out.dtype.type(0.5)
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        out[i, j] = a[i, j] if j < i else (half * a[i, i] if i == j else 0)
    cuda.syncthreads()


@_dev
def tile_cholesky_adj_into(out, work, A, L, G):
    """The adjoint of ``L = cholesky(A)`` (the CPU's six phases)."""
    cuda.syncthreads()
    n = L.shape[0]
    for e in range(cuda.threadIdx.x, n * n, cuda.blockDim.x):  # P = L^T G
        i = e // n
        j = e - i * n
        s = out.dtype.type(0)
        for k in range(n):
            s += L[k, i] * G[k, j]
        out[i, j] = s
    cuda.syncthreads()
    _mirror_lower(work, out)
    _back_substitution(work, L, True)
    cuda.syncthreads()
    tile_transpose_into(out, work)
    _back_substitution(out, L, True)
    cuda.syncthreads()
    _lower_halved(work, out)
    tile_copy(out, work)


@_dev
def tile_cholesky_jvp_into(out, work, A, L, dA):
    """The tangent of ``L = cholesky(A)``: ``L Phi(L^-1 S L^-T)`` (the CPU's phases)."""
    cuda.syncthreads()
    _mirror_lower(work, dA)
    _forward_substitution(work, L, False)
    cuda.syncthreads()
    tile_transpose_into(out, work)
    _forward_substitution(out, L, False)
    cuda.syncthreads()
    _lower_halved(work, out)
    n = L.shape[0]
    for e in range(cuda.threadIdx.x, n * n, cuda.blockDim.x):  # dL = L Phi
        i = e // n
        j = e - i * n
        s = out.dtype.type(0)
        for k in range(j, i + 1):
            s += L[i, k] * work[k, j]
        out[i, j] = s
    cuda.syncthreads()


@_dev
def _solve_adj_factor(adj_F, W, X, lower):
    """``adj_F[i, j]`` = ``-sum_c W[i, c] X[j, c]`` on the factor's triangle (lower: ``j <= i``),
    zero off it."""
    n = adj_F.shape[1]
    m = W.shape[1]
    for e in range(cuda.threadIdx.x, adj_F.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        s = adj_F.dtype.type(0)
        inside = (j <= i) if lower else (j >= i)
        if inside:
            for c in range(m):
                s = s + W[i, c] * X[j, c]
        adj_F[i, j] = -s if inside else s
    cuda.syncthreads()


@_dev
def _triangular_solve_adj(adj_F, adj_y, F, x, g, lower):
    """The adjoints of ``x = solve(F, y)`` for a lower (or upper) triangular ``F``: ``W =
    F^-T g`` in ``adj_y``, ``adj_F = -W x^T`` on ``F``'s triangle."""
    tile_copy(adj_y, g)
    n = F.shape[0]
    W = tile_view(adj_y, (n, adj_y.size // n))
    if lower:
        _back_substitution(W, F, True)
    else:
        _forward_substitution(W, F, True)
    cuda.syncthreads()
    _solve_adj_factor(adj_F, W, tile_view(x, (n, x.size // n)), lower)


@_dev
def tile_lower_solve_adj_into(adj_L, adj_y, L, y, z, g):
    """The adjoints of ``z = lower_solve(L, y)``: ``W = L^-T g``, ``(-tril(W z^T), W)``."""
    _triangular_solve_adj(adj_L, adj_y, L, z, g, True)


@_dev
def tile_upper_solve_adj_into(adj_U, adj_z, U, z, x, g):
    """The adjoints of ``x = upper_solve(U, z)``: ``W = U^-T g``, ``(-triu(W x^T), W)``."""
    _triangular_solve_adj(adj_U, adj_z, U, x, g, False)


@_dev
def tile_cholesky_solve_adj_into(adj_L, adj_y, L, y, x, g):
    """The adjoints of ``x = cholesky_solve(L, y)``: ``Z = (L L^T)^-1 g``, and
    ``-tril((Z x^T + x Z^T) L)`` (``G = Z x^T + x Z^T`` entry by entry as the CPU sums it)."""
    tile_copy(adj_y, g)
    n = L.shape[0]
    Z = tile_view(adj_y, (n, adj_y.size // n))
    X = tile_view(x, (n, x.size // n))
    m = Z.shape[1]
    _forward_substitution(Z, L, False)
    _back_substitution(Z, L, True)
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, n * n, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        s = adj_L.dtype.type(0)
        for k in range(n):
            if j <= min(i, k):
                a = max(i, k)
                b = min(i, k)
                p = adj_L.dtype.type(0)
                for c in range(m):
                    p = p + Z[a, c] * X[b, c] + X[a, c] * Z[b, c]
                s -= p * L[k, j]
        adj_L[i, j] = s
    cuda.syncthreads()


@_dev
def _subtract_products(R, F, X, lower):
    """``R[i] -= sum_j F[i, j] X[j]`` over the triangle of ``F`` (lower: ``j <= i``), in
    increasing ``j``, a column of ``R`` per thread."""
    n, m = R.shape[0], R.shape[1]
    for c in range(cuda.threadIdx.x, m, cuda.blockDim.x):
        for i in range(n):
            s = R[i, c]
            for j in range(0 if lower else i, i + 1 if lower else n):
                s = s - F[i, j] * X[j, c]
            R[i, c] = s
    cuda.syncthreads()


@_dev
def _triangular_solve_jvp(out, F, x, dF, dy, lower):
    """The tangent of ``x = solve(F, y)`` for a lower (or upper) triangular ``F``: ``F^-1 (dy
    - tri(dF) x)``."""
    tile_copy(out, dy)
    n = F.shape[0]
    R = tile_view(out, (n, out.size // n))
    _subtract_products(R, dF, tile_view(x, (n, x.size // n)), lower)
    if lower:
        _forward_substitution(R, F, False)
    else:
        _back_substitution(R, F, False)
    cuda.syncthreads()


@_dev
def tile_lower_solve_jvp_into(out, L, y, z, dL, dy):
    """The tangent of ``z = lower_solve(L, y)``: ``L^-1 (dy - tril(dL) z)``."""
    _triangular_solve_jvp(out, L, z, dL, dy, True)


@_dev
def tile_upper_solve_jvp_into(out, U, z, x, dU, dz):
    """The tangent of ``x = upper_solve(U, z)``: ``U^-1 (dz - triu(dU) x)``."""
    _triangular_solve_jvp(out, U, x, dU, dz, False)


@_dev
def tile_cholesky_solve_jvp_into(out, t1, t2, L, y, x, dL, dy):
    """The tangent of ``x = cholesky_solve(L, y)``: ``A^-1 (dy - dA x)``, ``dA = dL L^T + L
    dL^T`` (``t1 = L^T x``, ``t2 = tril(dL)^T x``, each entry summed as the CPU does)."""
    tile_copy(out, dy)
    n = L.shape[0]
    X = tile_view(x, (n, x.size // n))
    T1 = tile_view(t1, (n, t1.size // n))
    T2 = tile_view(t2, (n, t2.size // n))
    R = tile_view(out, (n, out.size // n))
    m = X.shape[1]
    for e in range(cuda.threadIdx.x, n * m, cuda.blockDim.x):
        i = e // m
        c = e - i * m
        s1 = T1.dtype.type(0)
        s2 = T1.dtype.type(0)
        for k in range(i, n):
            s1 += L[k, i] * X[k, c]
            s2 += dL[k, i] * X[k, c]
        T1[i, c] = s1
        T2[i, c] = s2
    cuda.syncthreads()
    for c in range(cuda.threadIdx.x, m, cuda.blockDim.x):
        for i in range(n):
            s = R[i, c]
            for k in range(i + 1):
                s = s - (dL[i, k] * T1[k, c] + L[i, k] * T2[k, c])
            R[i, c] = s
    cuda.syncthreads()
    _forward_substitution(R, L, False)
    _back_substitution(R, L, True)
    cuda.syncthreads()
