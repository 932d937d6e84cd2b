"""weft.sparse against scipy.sparse: triplet assembly with duplicates, mv / mm / axpy /
transpose on random matrices of a few block shapes, and the adjoints of bsr_mv, bsr_mm,
triplet assembly and transposition against float64 central differences.

Small matrices, float64 except one float32 case: the whole file compiles a handful of kernels
(weft.sparse's value kernels are per scalar type, not per block shape).
"""
import numpy as np
import pytest

import weft as wp
from weft.sparse import (bsr_axpy, bsr_copy, bsr_diag, bsr_from_triplets, bsr_get_diag,
                         bsr_identity, bsr_mm, bsr_mv, bsr_set_from_triplets, bsr_transposed,
                         bsr_zeros)

sp = pytest.importorskip("scipy.sparse")

SHAPES = [(1, 1), (2, 3), (3, 3)]


def _dense(A):
    """The matrix as a dense numpy array (from its active blocks)."""
    out = np.zeros(A.shape)
    br, bc = A.block_shape
    off, cols, vals = A.offsets.numpy(), A.columns.numpy(), A.values.numpy()
    counts = None if A.row_counts is None else A.row_counts.numpy()
    for r in range(A.nrow):
        end = off[r + 1] if counts is None else off[r] + counts[r]
        for k in range(off[r], end):
            c = cols[k]
            out[r * br:(r + 1) * br, c * bc:(c + 1) * bc] += np.asarray(vals[k]).reshape(br, bc)
    return out


def _scipy(A):
    """The same matrix as a scipy BSR matrix (copied from the arrays, not through _dense)."""
    n = A.nnz_sync()
    br, bc = A.block_shape
    data = np.array(A.values.numpy()[:n], dtype=np.float64).reshape(n, br, bc)
    return sp.bsr_matrix((data, A.columns.numpy()[:n].copy(),
                          A.offsets.numpy()[:A.nrow + 1].copy()), shape=A.shape)


def _random(rng, nrow, ncol, shape, n, dtype=wp.float64, requires_grad=False):
    rows = rng.integers(0, nrow, n).astype(np.int32)
    cols = rng.integers(0, ncol, n).astype(np.int32)
    vals = rng.standard_normal((n, *shape))
    A = bsr_from_triplets(nrow, ncol, wp.array(rows, dtype=int), wp.array(cols, dtype=int),
                          wp.array(vals if shape != (1, 1) else vals[:, 0, 0], dtype=dtype,
                                   requires_grad=requires_grad))
    return A, rows, cols, vals


@pytest.mark.parametrize("shape", SHAPES)
def test_from_triplets_sums_duplicates_as_scipy(shape):
    rng = np.random.default_rng(1)
    nrow, ncol, n = 7, 5, 60   # many duplicates
    A, rows, cols, vals = _random(rng, nrow, ncol, shape, n)
    br, bc = shape
    ref = np.zeros((nrow * br, ncol * bc))
    for r, c, v in zip(rows, cols, vals):
        ref[r * br:(r + 1) * br, c * bc:(c + 1) * bc] += v
    assert A.nnz == n                      # the upper bound, as Warp, until nnz_sync
    pattern = sp.coo_matrix((np.ones(n), (rows, cols)), shape=(nrow, ncol)).tocsr()
    pattern.sum_duplicates()
    assert A.nnz_sync() == pattern.nnz
    np.testing.assert_array_equal(A.offsets.numpy(), pattern.indptr)
    np.testing.assert_array_equal(A.columns.numpy()[:A.nnz], pattern.indices)  # sorted rows
    np.testing.assert_allclose(_scipy(A).toarray(), ref, rtol=1e-12, atol=1e-12)


def test_from_triplets_drops_out_of_range_and_zero_blocks():
    rows = wp.array([0, -1, 1, 3, 1, 2], dtype=int)
    cols = wp.array([0, 0, 5, 1, 1, 2], dtype=int)
    vals = wp.array([1.0, 2.0, 3.0, 4.0, 0.0, 5.0], dtype=wp.float64)
    A = bsr_from_triplets(3, 3, rows, cols, vals)
    assert A.nnz_sync() == 2
    np.testing.assert_array_equal(_dense(A), np.diag([1.0, 0.0, 5.0]))
    B = bsr_from_triplets(3, 3, rows, cols, vals, prune_numerical_zeros=False)
    assert B.nnz_sync() == 3


@pytest.mark.parametrize("shape", SHAPES)
def test_mv_and_transposed_mv_as_scipy(shape):
    rng = np.random.default_rng(2)
    A, *_ = _random(rng, 6, 4, shape, 14)
    S = _scipy(A)
    br, bc = shape
    xv = rng.standard_normal(4 * bc)
    yv = rng.standard_normal(6 * br)
    vec = lambda n: wp.float64 if n == 1 else wp.types.vector(length=n, dtype=wp.float64)
    x = wp.array(xv.reshape(4, bc) if bc > 1 else xv, dtype=vec(bc))
    y = wp.array(yv.reshape(6, br) if br > 1 else yv, dtype=vec(br))
    bsr_mv(A, x, y, alpha=2.0, beta=-0.5)
    np.testing.assert_allclose(y.numpy().ravel(), 2.0 * (S @ xv) - 0.5 * yv, rtol=1e-12)
    np.testing.assert_allclose((A @ x).numpy().ravel(), S @ xv, rtol=1e-12)
    xt = bsr_mv(A, y, transpose=True)
    np.testing.assert_allclose(xt.numpy().ravel(), S.T @ y.numpy().ravel(), rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_mm_axpy_transpose_as_scipy(shape):
    rng = np.random.default_rng(3)
    br, bc = shape
    X, *_ = _random(rng, 5, 4, shape, 12)
    Y, *_ = _random(rng, 4, 6, (bc, br), 12)
    Z, *_ = _random(rng, 5, 6, (br, br), 8)
    Sx, Sy, Sz = _scipy(X), _scipy(Y), _scipy(Z)
    P = bsr_mm(X, Y)
    np.testing.assert_allclose(_dense(P), (Sx @ Sy).toarray(), rtol=1e-12, atol=1e-12)
    ref = 2.0 * (Sx @ Sy).toarray() + 0.5 * Sz.toarray()
    bsr_mm(X, Y, Z, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(_dense(Z), ref, rtol=1e-12, atol=1e-12)
    # the result's topology is scipy's product pattern (sorted, no explicit duplicates)
    Q = _scipy(P)
    assert Q.has_sorted_indices
    W, *_ = _random(rng, 5, 4, shape, 9)
    Sw = _scipy(W)
    ref = -1.5 * Sx.toarray() + 2.0 * Sw.toarray()
    bsr_axpy(X, W, alpha=-1.5, beta=2.0)
    np.testing.assert_allclose(_dense(W), ref, rtol=1e-12, atol=1e-12)
    T = bsr_transposed(X)
    assert T.block_shape == (bc, br)
    np.testing.assert_allclose(_dense(T), Sx.T.toarray(), rtol=1e-12)
    np.testing.assert_allclose(_dense(X + 2.0 * X), 3.0 * Sx.toarray(), rtol=1e-12)
    np.testing.assert_allclose(_dense((X * 2.0).transpose().eval()), 2.0 * Sx.T.toarray(), rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_mm_off_a_tape_one_pass_matches_the_taped_product_and_reused_topology(shape):
    # off a tape bsr_mm sums the values in its topology pass (columns sorted with their blocks
    # moved along); on a tape it numbers the products first. Both give scipy's product, and a
    # topology kept in work arrays by the one-pass product serves a later product
    from weft.sparse import bsr_mm_work_arrays
    rng = np.random.default_rng(11)
    br, bc = shape
    X, *_ = _random(rng, 40, 30, shape, 300)      # about 10 blocks a row: many repeats
    Y, *_ = _random(rng, 30, 35, (bc, br), 260)
    ref = (_scipy(X) @ _scipy(Y)).toarray()
    P = bsr_mm(X, Y, alpha=1.5)
    np.testing.assert_allclose(_dense(P), 1.5 * ref, rtol=1e-12, atol=1e-12)
    assert _scipy(P).has_sorted_indices
    with wp.Tape():
        Q = bsr_mm(X, Y, alpha=1.5)
    n = P.nnz_sync()
    assert Q.nnz_sync() == n
    np.testing.assert_array_equal(P.offsets.numpy()[:P.nrow + 1], Q.offsets.numpy()[:Q.nrow + 1])
    np.testing.assert_array_equal(P.columns.numpy()[:n], Q.columns.numpy()[:n])
    np.testing.assert_allclose(P.values.numpy()[:n], Q.values.numpy()[:n], rtol=1e-13)
    work = bsr_mm_work_arrays()
    Z = bsr_mm(X, Y, work_arrays=work)
    X.values.assign(2.0 * X.values.numpy())
    bsr_mm(X, Y, Z, work_arrays=work, reuse_topology=True)
    np.testing.assert_allclose(_dense(Z), 2.0 * ref, rtol=1e-12, atol=1e-12)


def test_diag_identity_copy_float32():
    rng = np.random.default_rng(4)
    A, *_ = _random(rng, 4, 4, (2, 2), 10, dtype=wp.float32)
    d = bsr_get_diag(A)
    ref = _dense(A)
    for i in range(4):
        np.testing.assert_allclose(d.numpy()[i], ref[2 * i:2 * i + 2, 2 * i:2 * i + 2],
                                   rtol=1e-6)
    D = bsr_diag(d)
    np.testing.assert_allclose(_dense(D), np.where(np.kron(np.eye(4), np.ones((2, 2))), ref, 0))
    I = bsr_identity(3, block_type=wp.mat33d)
    np.testing.assert_array_equal(_dense(I), np.eye(9))
    C = bsr_copy(A, scalar_type=wp.float64, block_shape=(1, 1))
    assert C.scalar_type == wp.float64 and C.block_shape == (1, 1)
    np.testing.assert_allclose(_dense(C), ref, rtol=1e-6)


# ----------------------------------------------------------------------------- gradients

def _fd_check(make_inputs, run, eps=1e-6, rtol=1e-6):
    """``run(inputs) -> output array`` on a tape; the adjoint of ``<seed, output>`` w.r.t. each
    differentiated input against float64 central differences."""
    rng = np.random.default_rng(7)
    inputs = make_inputs(True)
    with wp.Tape() as tape:
        out = run(inputs)
    seed = rng.standard_normal(out.numpy().shape)
    tape.backward(grads={out: wp.array(seed, dtype=out.dtype)})
    for name, arr in inputs.items():
        if not isinstance(arr, wp.array) or arr.grad is None:
            continue
        got = arr.grad.numpy().copy()
        base = arr.numpy().copy()
        fd = np.zeros_like(base).reshape(-1)
        for i in range(fd.size):
            vals = []
            for s in (+1, -1):
                pert = base.copy().reshape(-1)
                pert[i] += s * eps
                fresh = make_inputs(False)
                fresh[name] = wp.array(pert.reshape(base.shape), dtype=arr.dtype)
                vals.append(float(np.sum(seed * run(fresh).numpy())))
            fd[i] = (vals[0] - vals[1]) / (2 * eps)
        np.testing.assert_allclose(got.reshape(-1), fd, rtol=rtol, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("shape", [(1, 1), (2, 3)])
def test_mv_adjoint_wrt_x_y_and_values(shape):
    rng = np.random.default_rng(5)
    br, bc = shape
    rows = rng.integers(0, 4, 9).astype(np.int32)
    cols = rng.integers(0, 3, 9).astype(np.int32)
    vals = rng.standard_normal((9, br, bc)) if shape != (1, 1) else rng.standard_normal(9)
    xv, yv = rng.standard_normal(3 * bc), rng.standard_normal(4 * br)

    def make(grad):
        return {"vals": wp.array(vals, dtype=wp.float64, requires_grad=grad),
                "x": wp.array(xv, dtype=wp.float64, requires_grad=grad),
                "y": wp.array(yv, dtype=wp.float64, requires_grad=grad)}

    def run(a):
        A = bsr_from_triplets(4, 3, wp.array(rows, dtype=int), wp.array(cols, dtype=int),
                              a["vals"])
        y = wp.clone(a["y"])       # flat scalar arrays stand for the vec arrays, as in Warp
        bsr_mv(A, a["x"], y, alpha=1.5, beta=-2.0)
        return y

    _fd_check(make, run)


@pytest.mark.parametrize("beta", [0.0, 2.0])   # 0: the compact product's kernels
def test_mm_and_transpose_adjoints(beta):
    rng = np.random.default_rng(6)
    rx, cx = rng.integers(0, 3, 6).astype(np.int32), rng.integers(0, 4, 6).astype(np.int32)
    ry, cy = rng.integers(0, 4, 7).astype(np.int32), rng.integers(0, 3, 7).astype(np.int32)
    xv, yv = rng.standard_normal((6, 2, 3)), rng.standard_normal((7, 3, 2))
    zr, zc = np.array([0, 2], np.int32), np.array([1, 2], np.int32)
    zv = rng.standard_normal((2, 2, 2))

    def make(grad):
        return {"xv": wp.array(xv, dtype=wp.float64, requires_grad=grad),
                "yv": wp.array(yv, dtype=wp.float64, requires_grad=grad),
                "zv": wp.array(zv, dtype=wp.float64, requires_grad=grad)}

    def run(a):
        X = bsr_from_triplets(3, 4, wp.array(rx, dtype=int), wp.array(cx, dtype=int), a["xv"])
        Y = bsr_from_triplets(4, 3, wp.array(ry, dtype=int), wp.array(cy, dtype=int), a["yv"])
        Z = bsr_from_triplets(3, 3, wp.array(zr, dtype=int), wp.array(zc, dtype=int), a["zv"])
        if beta == 0.0:
            return bsr_mm(X, bsr_transposed(bsr_transposed(Y)), alpha=0.5).values
        bsr_mm(X, bsr_transposed(bsr_transposed(Y)), Z, alpha=0.5, beta=beta)
        return Z.values

    _fd_check(make, run)


def test_from_triplets_values_adjoint_warp_semantics():
    """Each triplet's gradient is its block's (Warp's test_bsr_from_triplets_gradient)."""
    vals = wp.array(np.arange(1.0, 5.0), dtype=wp.float64, requires_grad=True)
    with wp.Tape() as tape:
        A = bsr_from_triplets(2, 2, wp.array([1, 0, 0, 1], dtype=int),
                              wp.array([0, 1, 0, 0], dtype=int), vals)
    assert A.nnz_sync() == 3       # blocks (0,0), (0,1), (1,0)
    A.values.grad[2:3].fill_(1.0)
    tape.backward()
    np.testing.assert_array_equal(vals.grad.numpy(), [1.0, 0.0, 0.0, 1.0])


def test_mm_result_aliasing_its_operands():
    rng = np.random.default_rng(8)
    A, *_ = _random(rng, 5, 5, (2, 2), 12)
    B, *_ = _random(rng, 5, 5, (2, 2), 12)
    ref = (_scipy(A) @ _scipy(B)).toarray()
    bsr_mm(A, B, A)                   # A := A @ B, A's own topology rewritten
    np.testing.assert_allclose(_dense(A), ref, rtol=1e-12, atol=1e-12)
    ref = (_scipy(A) @ _scipy(A)).toarray()
    bsr_mm(A, A, A)
    np.testing.assert_allclose(_dense(A), ref, rtol=1e-12, atol=1e-12)


def test_rebuilding_a_matrix_after_a_taped_product_keeps_the_gradient_exact():
    """Topology is written through wp.copy, so the tape snapshots what its records read."""
    vals = wp.array([1.0, 2.0, 3.0], dtype=wp.float64, requires_grad=True)
    x = wp.array([1.0, 1.0, 1.0], dtype=wp.float64, requires_grad=True)
    diag = wp.array([0, 1, 2], dtype=int)
    with wp.Tape() as tape:
        A = bsr_from_triplets(3, 3, diag, diag, vals)
        y = bsr_mv(A, x)
    bsr_set_from_triplets(A, wp.array([0, 0], dtype=int), wp.array([1, 2], dtype=int),
                          wp.array([5.0, 6.0], dtype=wp.float64))
    tape.backward(grads={y: wp.array([1.0, 1.0, 1.0], dtype=wp.float64)})
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(vals.grad.numpy(), [1.0, 1.0, 1.0])


@pytest.mark.cudasim
def test_cuda_matrices_under_the_simulator_match_scipy():
    """The same code on a CUDA device (Numba's CUDA simulator in CI): assembly from triplets,
    mv with vector blocks (array views of device memory), mm and transpose against SciPy."""
    if not wp.is_cuda_available():
        pytest.skip("no CUDA device and no CUDA simulator")
    rng = np.random.default_rng(9)
    with wp.ScopedDevice("cuda"):
        A, *_ = _random(rng, 4, 3, (2, 2), 9)
        B, *_ = _random(rng, 3, 4, (2, 2), 7)
        assert A.values.device.is_cuda
        Sa, Sb = _scipy(A), _scipy(B)
        xv = rng.standard_normal(6)
        x = wp.array(xv.reshape(3, 2), dtype=wp.vec2d)
        np.testing.assert_allclose(bsr_mv(A, x).numpy().ravel(), Sa @ xv, rtol=1e-12)
        np.testing.assert_allclose(_dense(bsr_mm(A, B)), (Sa @ Sb).toarray(), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(_dense(bsr_transposed(A)), Sa.T.toarray(), rtol=1e-12)
