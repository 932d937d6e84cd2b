"""Numeric cores of the tile products on the CPU: ``matmul`` and ``matmul_acc`` (Warp's
``tile_matmul``) with their adjoints and tangents, and the linear updates ``diag_add`` and
``axpy`` with theirs. Each is self-contained and compiled on its own with ``numba.njit``;
:mod:`weft.native.tile_kernels` gathers them with the other families and states the
conventions and Warp semantics they follow."""
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
