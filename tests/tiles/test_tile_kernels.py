"""The numeric cores of the tile builtins (``weft.native.tile_kernels``), compiled with Numba:
forward results against NumPy in float32 and float64, Warp's edge-case semantics (NaN pivots,
zero diagonals, unnormalized FFTs, fmax scans, tie rules), and every adjoint and tangent against
central finite differences in float64 (directional: ``<w, J u>`` by differences against
``<adj(w), u>`` and ``<w, jvp(u)>``).

Every call goes through ``call``: it checks that no input array is modified and, for small
inputs, that the uncompiled function (as under ``NUMBA_DISABLE_JIT``) gives the same result.
"""
import functools

import numpy as np
import pytest

from weft.core.diskcache import njit
from weft.native import tile_kernels as tk
from weft.native import tiles

F64 = np.float64


def jit(name):
    """The compiled function generated code calls (``_wk.tile_<name>``, in weft's verified
    cache and shipped store); argmin and argmax, which ``weft.native.tiles`` wraps into
    one-element tiles, compiled the same way here."""
    if name in ("argmin", "argmax"):
        return _compiled(getattr(tk, name))
    return getattr(tiles, f"tile_{name}")


@functools.lru_cache(maxsize=None)
def _compiled(fn):
    return njit(error_model="numpy", nogil=True)(fn)


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def _same(x, y, rtol):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
    if x.dtype.kind == "f":
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(x, y)


def call(name, *args, python=True):
    """``jit(name)(*args)``, checking that the arrays passed are left as they were, that the
    result shares no memory with them, and, when they are small, that the uncompiled function
    agrees."""
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        out = jit(name)(*args)
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} modified an input")
    if f"tile_{name}" in tiles.FRESH:   # a tile view may feed it (pass tile_views)
        for leaf in _leaves(out):
            for a in args:
                if isinstance(a, np.ndarray):
                    assert not np.shares_memory(leaf, a), f"{name}'s result shares an input"
    if python and all(a.size <= 300 for a in args if isinstance(a, np.ndarray)):
        with np.errstate(all="ignore"):
            ref = getattr(tk, name)(*args)
        for x, y in zip(_leaves(out), _leaves(ref)):
            dt = np.asarray(y).dtype
            _same(x, y, 2e-5 if dt == np.float32 else 1e-12)
        for a, b in zip(args, before):
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b,
                                              err_msg=f"{name} (uncompiled) modified an input")
    return out


def rng(seed=0):
    return np.random.default_rng(seed)


def spd(n, r, dtype=F64):
    m = r.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


def tri(n, r, lower=True, dtype=F64):
    m = r.standard_normal((n, n)) * 0.3
    np.fill_diagonal(m, 1.0 + r.random(n))
    t = np.tril(m) if lower else np.triu(m)
    junk = r.standard_normal((n, n))       # the other triangle must be ignored
    return (t + (np.triu(junk, 1) if lower else np.tril(junk, -1))).astype(dtype), t


def dot(xs, ws):
    return sum(float(np.sum(np.asarray(x, F64) * w)) for x, w in zip(_leaves(xs), _leaves(ws)))


def fd(name, args, dirs, ws, eps=1e-6):
    """Central difference of ``<w, f(args + t u)>`` at ``t = 0``; ``dirs`` maps argument
    positions to directions."""
    def at(t):
        a = list(args)
        for i, u in dirs.items():
            a[i] = args[i] + t * u
        with np.errstate(all="ignore"):
            return dot(jit(name)(*a), ws)
    return (at(eps) - at(-eps)) / (2 * eps)


def check_fd(expected, got, rtol=1e-6):
    assert abs(expected - got) <= rtol * max(1.0, abs(expected)), (expected, got)


# ---------------------------------------------------------------------------------- matmul

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(5, 7, 3), (16, 16, 16), (13, 9, 6), (1, 1, 1)])
def test_matmul_forward(dtype, m, k, n):
    r = rng(1)
    a = r.standard_normal((m, k)).astype(dtype)
    b = r.standard_normal((k, n)).astype(dtype)
    c = call("matmul", a, b)
    assert c.dtype == dtype and c.flags.c_contiguous
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(c, a.astype(F64) @ b, rtol=tol, atol=tol * k)


def test_matmul_fuses_each_step_in_k_order_like_warp():
    """The blocked loops keep Warp's CPU GEMM: each step a fused multiply-add, in increasing
    k, so the result is bit-identical to a plain i-k-j loop of fused steps (a float32 fma
    emulated in float64: the product is exact there, and the one rounding of the sum to
    float64 before float32 does not move any of these results). ``alpha`` and ``beta`` are
    applied after the product, rounded step by step, as Warp does."""
    r = rng(2)
    a = r.standard_normal((11, 21)).astype(np.float32)
    b = r.standard_normal((21, 10)).astype(np.float32)
    ref = np.zeros((11, 10), np.float32)
    unfused = np.zeros((11, 10), np.float32)
    for kk in range(21):
        ref = (a[:, kk:kk + 1].astype(F64) * b[kk:kk + 1, :] + ref).astype(np.float32)
        unfused += a[:, kk:kk + 1] * b[kk:kk + 1, :]
    got = call("matmul", a, b)
    np.testing.assert_array_equal(got, ref)
    assert (got != unfused).any()  # the fused steps are what is compared
    out = r.standard_normal((11, 10)).astype(np.float32)
    al, be = np.float32(0.7), np.float32(-1.3)
    np.testing.assert_array_equal(call("matmul_acc", a, b, out, al, be), al * ref + be * out)


def test_non_contiguous_arguments():
    r = rng(21)
    a = r.standard_normal((6, 5))
    b = r.standard_normal((5, 9))[:, ::2]
    np.testing.assert_allclose(call("matmul", a.T.T[:, :], b), a @ b, rtol=1e-13)
    np.testing.assert_allclose(call("matmul", a.T, a), a.T @ a, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_acc_forward(dtype):
    r = rng(3)
    a = r.standard_normal((6, 5)).astype(dtype)
    b = r.standard_normal((5, 7)).astype(dtype)
    out = r.standard_normal((6, 7)).astype(dtype)
    got = call("matmul_acc", a, b, out, 0.5, 2.0)
    assert got.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, 0.5 * (a.astype(F64) @ b) + 2.0 * out, rtol=tol, atol=tol)
    # beta == 0: out is not read (Warp), so its NaNs do not reach the result
    junk = np.full((6, 7), np.nan, dtype)
    got = call("matmul_acc", a, b, junk, 3.0, 0.0)
    np.testing.assert_allclose(got, 3.0 * (a.astype(F64) @ b), rtol=tol, atol=tol)


def test_matmul_adjoints_and_tangents():
    r = rng(4)
    a, b = r.standard_normal((6, 5)), r.standard_normal((5, 7))
    out = r.standard_normal((6, 7))
    ua, ub = r.standard_normal(a.shape), r.standard_normal(b.shape)
    uo = r.standard_normal(out.shape)
    w = r.standard_normal((6, 7))

    expected = fd("matmul", (a, b), {0: ua, 1: ub}, w)
    adj_a, adj_b = call("matmul_adj", a, b, w)
    check_fd(expected, dot((adj_a, adj_b), (ua, ub)))
    check_fd(expected, dot(call("matmul_jvp", a, b, ua, ub), w))

    for beta in (1.0, -0.7, 0.0):
        args = (a, b, out, 1.3, beta)
        expected = fd("matmul_acc", args, {0: ua, 1: ub, 2: uo}, w)
        adj = call("matmul_acc_adj", *args, w)
        assert len(adj) == 3
        check_fd(expected, dot(adj, (ua, ub, uo)))
        check_fd(expected, dot(call("matmul_acc_jvp", *args, ua, ub, uo), w))


# ------------------------------------------------------------------------------- cholesky

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 5, 16])
def test_cholesky_forward(dtype, n):
    r = rng(5)
    A = spd(n, r, dtype)
    A_junk = A + np.triu(r.standard_normal((n, n)), 1).astype(dtype)   # upper part ignored
    L = call("cholesky", A_junk)
    assert L.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(L, np.linalg.cholesky(A.astype(F64)), rtol=tol, atol=tol)
    assert np.all(np.triu(L, 1) == 0)


def test_cholesky_non_spd_gives_nan_and_zero_pivot_inf():
    L = call("cholesky", np.array([[1.0, 2.0], [2.0, 1.0]]))
    assert L[0, 0] == 1.0 and L[1, 0] == 2.0 and np.isnan(L[1, 1])
    L = call("cholesky", np.array([[-4.0, 0.0], [1.0, 5.0]]))
    assert np.isnan(L[0, 0]) and np.isnan(L[1, 0]) and np.isnan(L[1, 1])
    L = call("cholesky", np.array([[0.0, 0.0], [1.0, 1.0]], np.float32))
    assert L[0, 0] == 0.0 and L[1, 0] == np.inf and np.isnan(L[1, 1])


def test_cholesky_adjoint_is_warps_lower_triangle_gradient():
    r = rng(6)
    n = 6
    A = spd(n, r)
    L = call("cholesky", A)
    u = r.standard_normal((n, n))     # any direction: the forward pass reads A's lower part
    w = r.standard_normal((n, n))     # also weights L's (constant zero) upper part
    adj_A = call("cholesky_adj", A, L, w)
    assert np.all(np.triu(adj_A, 1) == 0)
    expected = fd("cholesky", (A,), {0: u}, w)
    check_fd(expected, dot(adj_A, u))
    # the symmetric gradient S of a symmetric parameterization: adj_A = tril(S + S^T) - diag(S)
    us = u + u.T
    check_fd(fd("cholesky", (A,), {0: us}, w), dot(adj_A, np.tril(us)))
    dL = call("cholesky_jvp", A, L, u)
    check_fd(expected, dot(dL, w))
    assert np.all(np.triu(dL, 1) == 0)


def test_cholesky_and_its_solve_round_as_warps_loops():
    """The factor's rows are summed four at a time and the forward substitutions run by
    columns (one vectorised update per column for a one-column right-hand side), for speed;
    every entry is still summed in Warp's order, so the factor and the Cholesky, lower and upper
    solves equal Warp's one-row-at-a-time loops (written here with float32 scalars) bit for
    bit: remainder rows (n = 13), vector lengths with remainders (n = 33), one column as
    ``(n,)`` or ``(n, 1)``, and three."""
    f32 = np.float32
    for n, m in ((13, 1), (8, 3), (33, 0)):
        r = rng(30 + n)
        A = spd(n, r, f32)
        L = np.zeros((n, n), f32)
        for j in range(n):
            s = A[j, j]
            for k in range(j):
                s = f32(s - L[j, k] * L[j, k])
            s = f32(np.sqrt(s))
            inv = f32(f32(1) / s)
            L[j, j] = s
            for i in range(j + 1, n):
                si = A[i, j]
                for k in range(j):
                    si = f32(si - L[i, k] * L[j, k])
                L[i, j] = f32(si * inv)
        got = call("cholesky", A)
        np.testing.assert_array_equal(got, L)
        y = r.standard_normal((n, m) if m else n).astype(f32)
        X = y.copy()
        for i in range(n):  # forward: row by row
            for j in range(i):
                X[i] = X[i] - L[i, j] * X[j]
            X[i] = X[i] / L[i, i]
        for i in range(n - 1, -1, -1):  # back: row by row
            for j in range(i + 1, n):
                X[i] = X[i] - L[j, i] * X[j]
            X[i] = X[i] / L[i, i]
        np.testing.assert_array_equal(call("cholesky_solve", L, y), X)
        T = r.standard_normal((n, n)).astype(f32) + f32(n) * np.eye(n, dtype=f32)
        Z = y.copy()
        for i in range(n):  # lower: row by row, terms in increasing j
            for j in range(i):
                Z[i] = Z[i] - T[i, j] * Z[j]
            Z[i] = Z[i] / T[i, i]
        np.testing.assert_array_equal(call("lower_solve", T, y), Z)
        Z = y.copy()
        for i in range(n - 1, -1, -1):  # upper: row by row from the last, j increasing
            for j in range(i + 1, n):
                Z[i] = Z[i] - T[i, j] * Z[j]
            Z[i] = Z[i] / T[i, i]
        np.testing.assert_array_equal(call("upper_solve", T, y), Z)


# ------------------------------------------------------------------------ triangular solves

@pytest.mark.parametrize("dtype,rhs", [(np.float32, (7, 3)), (np.float64, (7,))])
def test_solves_forward(dtype, rhs):
    r = rng(7)
    n = 7
    Lj, L = tri(n, r, True, dtype)
    Uj, U = tri(n, r, False, dtype)
    y = r.standard_normal(rhs).astype(dtype)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    z = call("lower_solve", Lj, y)
    assert z.shape == y.shape and z.dtype == dtype
    np.testing.assert_allclose(z, np.linalg.solve(L.astype(F64), y.astype(F64)), rtol=tol, atol=tol)
    x = call("upper_solve", Uj, y)
    np.testing.assert_allclose(x, np.linalg.solve(U.astype(F64), y.astype(F64)), rtol=tol, atol=tol)
    A = spd(n, r)
    Lc = np.linalg.cholesky(A)
    Lc_junk = (Lc + np.triu(r.standard_normal((n, n)), 1)).astype(dtype)
    x = call("cholesky_solve", Lc_junk, y)
    assert x.shape == y.shape and x.dtype == dtype
    np.testing.assert_allclose(x, np.linalg.solve(A, y.astype(F64)), rtol=10 * tol, atol=10 * tol)


def test_solve_zero_diagonal_skips_the_division():
    """Warp's substitution: ``x[i] = s / diag if diag != 0 else s``."""
    L = np.array([[2.0, 0.0], [1.0, 0.0]])
    z = call("lower_solve", L, np.array([4.0, 5.0]))
    np.testing.assert_array_equal(z, [2.0, 3.0])
    U = np.array([[0.0, 1.0], [0.0, 2.0]])
    np.testing.assert_array_equal(call("upper_solve", U, np.array([5.0, 4.0])), [3.0, 2.0])


@pytest.mark.parametrize("rhs", [(6,), (6, 2)])
def test_lower_solve_adjoint(rhs):
    r = rng(8)
    Lj, _ = tri(6, r, True)
    y = r.standard_normal(rhs)
    z = call("lower_solve", Lj, y)
    uL, uy, w = r.standard_normal((6, 6)), r.standard_normal(rhs), r.standard_normal(rhs)
    expected = fd("lower_solve", (Lj, y), {0: uL, 1: uy}, w)
    adj_L, adj_y = call("lower_solve_adj", Lj, y, z, w)
    assert adj_y.shape == y.shape and np.all(np.triu(adj_L, 1) == 0)
    check_fd(expected, dot((adj_L, adj_y), (uL, uy)))
    check_fd(expected, dot(call("lower_solve_jvp", Lj, y, z, uL, uy), w))


def test_upper_solve_adjoint():
    r = rng(9)
    rhs = (6, 3)
    Uj, _ = tri(6, r, False)
    z = r.standard_normal(rhs)
    x = call("upper_solve", Uj, z)
    uU, uz, w = r.standard_normal((6, 6)), r.standard_normal(rhs), r.standard_normal(rhs)
    expected = fd("upper_solve", (Uj, z), {0: uU, 1: uz}, w)
    adj_U, adj_z = call("upper_solve_adj", Uj, z, x, w)
    assert adj_z.shape == z.shape and np.all(np.tril(adj_U, -1) == 0)
    check_fd(expected, dot((adj_U, adj_z), (uU, uz)))
    check_fd(expected, dot(call("upper_solve_jvp", Uj, z, x, uU, uz), w))


def test_cholesky_solve_adjoint():
    r = rng(10)
    n = 6
    L = np.linalg.cholesky(spd(n, r)) + np.triu(r.standard_normal((n, n)), 1)
    y = r.standard_normal(n)
    x = call("cholesky_solve", L, y)
    uL, uy, w = r.standard_normal((n, n)), r.standard_normal(n), r.standard_normal(n)
    expected = fd("cholesky_solve", (L, y), {0: uL, 1: uy}, w)
    adj_L, adj_y = call("cholesky_solve_adj", L, y, x, w)
    assert adj_y.shape == y.shape and np.all(np.triu(adj_L, 1) == 0)
    check_fd(expected, dot((adj_L, adj_y), (uL, uy)))
    check_fd(expected, dot(call("cholesky_solve_jvp", L, y, x, uL, uy), w))


def test_cholesky_then_solve_gradient_end_to_end():
    """d/dA of <w, solve(A, y)> through cholesky_adj(cholesky_solve_adj(...)) against
    differences of the composed forward pass."""
    r = rng(11)
    n = 5
    A = spd(n, r)
    y = r.standard_normal((n, 2))
    w = r.standard_normal((n, 2))
    u = r.standard_normal((n, n))
    L = call("cholesky", A)
    x = call("cholesky_solve", L, y)
    adj_L, _ = call("cholesky_solve_adj", L, y, x, w)
    adj_A = call("cholesky_adj", A, L, adj_L)
    eps = 1e-6
    f = lambda t: dot(jit("cholesky_solve")(jit("cholesky")(A + t * u), y), w)  # noqa: E731
    check_fd((f(eps) - f(-eps)) / (2 * eps), dot(adj_A, u))


# ------------------------------------------------------------------------------------ FFT

def as_complex(a):
    return a[..., 0].astype(F64) + 1j * a[..., 1]


@pytest.mark.parametrize("dtype,shape", [(dt, s) for dt in (np.float32, np.float64)
                                         for s in ((3, 16), (2, 12), (1, 1))]
                         + [(np.float64, (2, 2, 8))])
def test_fft_forward(dtype, shape):
    r = rng(12)
    a = r.standard_normal(shape + (2,)).astype(dtype)
    n = shape[-1]
    tol = 2e-5 * n if dtype == np.float32 else 1e-12 * n
    X = call("fft", a)
    assert X.shape == a.shape and X.dtype == dtype
    np.testing.assert_allclose(as_complex(X), np.fft.fft(as_complex(a), axis=-1),
                               rtol=tol, atol=tol)
    x = call("ifft", a)
    # unnormalized inverse, as Warp: numpy's ifft times N
    np.testing.assert_allclose(as_complex(x), n * np.fft.ifft(as_complex(a), axis=-1),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(call("ifft", X), n * a.astype(F64), rtol=tol, atol=tol)


def test_fft_matches_warps_example():
    a = np.zeros((2, 4, 2), np.float32)
    a[0, :, 0] = [1, 2, 3, 4]
    a[1, :, 0] = [4, 3, 2, 1]
    expected = [[[10, 0], [-2, 2], [-2, 0], [-2, -2]], [[10, 0], [2, -2], [2, 0], [2, 2]]]
    np.testing.assert_allclose(call("fft", a), expected, atol=1e-5)


@pytest.mark.parametrize("n", [8, 6])
def test_fft_adjoints(n):
    r = rng(13)
    a = r.standard_normal((2, n, 2))
    u = r.standard_normal(a.shape)
    w = r.standard_normal(a.shape)
    for f, adj in (("fft", "fft_adj"), ("ifft", "ifft_adj")):
        expected = fd(f, (a,), {0: u}, w)
        check_fd(expected, dot(call(adj, w), u))
        check_fd(expected, dot(call(f + "_jvp", u), w))


# ----------------------------------------------------------------------------------- sort

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.int64])
def test_sort_is_a_stable_ascending_sort(dtype):
    r = rng(14)
    keys = r.integers(0, 9, 37).astype(dtype)          # many equal keys
    values = np.arange(37, dtype=np.int32)
    sk, sv = call("sort", keys, values)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(sk, keys[order])
    np.testing.assert_array_equal(sv, values[order])
    assert sk.dtype == dtype and sv.dtype == np.int32


def test_sort_float_order_signed_zero_and_nan():
    keys = np.array([1.0, np.nan, 0.0, -0.0, -np.inf, np.inf, -1.0, 0.0, -0.0], np.float32)
    values = np.arange(9, dtype=np.float32)
    sk, sv = call("sort", keys, values)
    np.testing.assert_array_equal(sv, [4, 6, 3, 8, 2, 7, 0, 5, 1])
    assert np.signbit(sk[2]) and np.signbit(sk[3]) and not np.signbit(sk[4])
    assert np.isnan(sk[-1])


def test_sort_multidimensional_keys_and_vector_payload():
    r = rng(15)
    keys = r.standard_normal((4, 8)).astype(np.float32)
    values = r.standard_normal((4, 8, 3))               # a vec3 tile travels with its keys
    sk, sv = call("sort", keys, values)
    assert sk.shape == keys.shape and sv.shape == values.shape
    order = np.argsort(keys.ravel(), kind="stable")
    np.testing.assert_array_equal(sk.ravel(), keys.ravel()[order])
    np.testing.assert_array_equal(sv.reshape(32, 3), values.reshape(32, 3)[order])
    big = r.standard_normal(3000).astype(np.float32)
    sk, sv = call("sort", big, np.arange(3000, dtype=np.int32))
    np.testing.assert_array_equal(sk, np.sort(big, kind="stable"))


# ---------------------------------------------------------------------------------- scans

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_scans_forward(dtype):
    r = rng(16)
    a = (r.standard_normal((3, 5)) * 10).astype(dtype)   # scanned over the flattened tile
    flat = a.ravel()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    got = call("scan_inclusive", a)
    assert got.shape == a.shape and got.dtype == dtype
    np.testing.assert_allclose(got.ravel(), np.cumsum(flat.astype(F64)), rtol=tol, atol=tol)
    exc = call("scan_exclusive", a).ravel()
    assert exc[0] == 0
    np.testing.assert_allclose(exc[1:], np.cumsum(flat.astype(F64))[:-1], rtol=tol, atol=tol)
    np.testing.assert_array_equal(call("scan_max_inclusive", a).ravel(),
                                  np.maximum.accumulate(flat))
    np.testing.assert_array_equal(call("scan_min_inclusive", a).ravel(),
                                  np.minimum.accumulate(flat))


def test_minmax_scans_skip_nan_like_fmax():
    a = np.array([np.nan, 2.0, np.nan, 1.0, 5.0, np.nan, 3.0], np.float32)
    np.testing.assert_array_equal(call("scan_max_inclusive", a), np.fmax.accumulate(a))
    np.testing.assert_array_equal(call("scan_min_inclusive", a), np.fmin.accumulate(a))
    assert np.isnan(call("scan_max_inclusive", a)[0])


def test_scan_adjoints():
    r = rng(17)
    a = r.permutation(20).astype(F64).reshape(4, 5) + 0.1 * r.standard_normal((4, 5))
    u, w = r.standard_normal(a.shape), r.standard_normal(a.shape)
    for f in ("scan_inclusive", "scan_exclusive", "scan_max_inclusive", "scan_min_inclusive"):
        expected = fd(f, (a,), {0: u}, w)
        adj = call(f + "_adj", a, w)
        assert adj.shape == a.shape
        check_fd(expected, dot(adj, u))
        linear = f in ("scan_inclusive", "scan_exclusive")
        jvp = call(f + "_jvp", u) if linear else call(f + "_jvp", a, u)
        check_fd(expected, dot(jvp, w))


# ------------------------------------------------------------------------ argmin / argmax

def test_argmin_argmax():
    r = rng(18)
    a = r.standard_normal((3, 7)).astype(np.float32)
    assert call("argmin", a) == np.argmin(a) and call("argmax", a) == np.argmax(a)
    ties = np.array([[3, 1, 4, 1], [5, 9, 2, 9]], np.int32)
    assert call("argmin", ties) == 1 and call("argmax", ties) == 5     # first occurrence
    # Warp's CPU reduction: a leading NaN stays the champion until a strictly larger element
    assert call("argmax", np.array([np.nan, 1.0, 2.0])) == 2
    assert call("argmax", np.array([np.nan, 3.0, 2.0])) == 0
    assert call("argmin", np.array([1.0, np.nan, 0.5])) == 2
    assert call("argmax", np.zeros(0)) == -1


# ------------------------------------------------------------------------ diag_add / axpy

def test_diag_add():
    r = rng(19)
    a = r.standard_normal((4, 4)).astype(np.float32)
    d = r.standard_normal(4).astype(np.float32)
    got = call("diag_add", a, d)
    np.testing.assert_array_equal(got, a + np.diag(d))
    av, dv = r.standard_normal((3, 3, 3)), r.standard_normal((3, 3))   # vec3 elements
    got = call("diag_add", av, dv)
    ref = av.copy()
    for i in range(3):
        ref[i, i] += dv[i]
    np.testing.assert_array_equal(got, ref)
    a, d = a.astype(F64), d.astype(F64)
    ua, ud, w = r.standard_normal(a.shape), r.standard_normal(d.shape), r.standard_normal(a.shape)
    expected = fd("diag_add", (a, d), {0: ua, 1: ud}, w)
    check_fd(expected, dot(call("diag_add_adj", a, d, w), (ua, ud)))
    check_fd(expected, dot(call("diag_add_jvp", ua, ud), w))


def test_axpy():
    r = rng(20)
    x = r.standard_normal((5, 3)).astype(np.float32)   # e.g. a vec3 tile of length 5
    y = r.standard_normal((5, 3)).astype(np.float32)
    got = call("axpy", 2.0, x, y)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, y + x * np.float32(2.0))
    x, y = x.astype(F64), y.astype(F64)
    ux, uy, w = r.standard_normal(x.shape), r.standard_normal(y.shape), r.standard_normal(y.shape)
    ual = 0.7
    eps = 1e-6
    f = lambda t: dot(jit("axpy")(1.5 + t * ual, x + t * ux, y + t * uy), w)  # noqa: E731
    expected = (f(eps) - f(-eps)) / (2 * eps)
    adj_alpha, adj_x, adj_y = call("axpy_adj", 1.5, x, y, w)
    check_fd(expected, float(adj_alpha) * ual + dot((adj_x, adj_y), (ux, uy)))
    check_fd(expected, dot(call("axpy_jvp", 1.5, x, y, ual, ux, uy), w))


def test_every_exported_name_exists():
    for name in tk.TILE_KERNELS:
        assert callable(getattr(tk, name)), name
    assert len(set(tk.TILE_KERNELS)) == len(tk.TILE_KERNELS)
