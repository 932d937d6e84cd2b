"""Shared systems and a duck-typed BSR matrix (weft.sparse's fields, numpy-backed products) for
the linear-solver tests."""
import numpy as np

import weft as wp


def spd(n, seed):
    rng = np.random.default_rng(seed)
    C = rng.uniform(-1.0, 1.0, (n, n))
    return C @ C.T + n * np.eye(n), rng.uniform(-1.0, 1.0, n)


def nonsymmetric(n, seed):
    A, b = spd(n, seed)
    rng = np.random.default_rng(seed + 1)
    return A @ np.diag(rng.uniform(0.2, 5.0, n)), b


class DuckBsr:
    """The fields ``aslinearoperator``/``preconditioner`` read of a ``weft.sparse.BsrMatrix``,
    built from dense blocks ``{(row, col): block}``."""

    def __init__(self, nrow, ncol, blocks, dtype=wp.float64, requires_grad=False):
        keys = sorted(blocks)
        br, bc = np.shape(blocks[keys[0]])
        self.nrow, self.ncol, self.block_shape = nrow, ncol, (br, bc)
        self.scalar_type = dtype
        self.dtype = wp.types.matrix(shape=(br, bc), dtype=dtype)
        self.device = wp.get_device("cpu")
        offsets = np.zeros(nrow + 1, np.int32)
        for r, _ in keys:
            offsets[r + 1] += 1
        self.offsets = wp.array(np.cumsum(offsets).astype(np.int32), dtype=wp.int32)
        self.columns = wp.array(np.array([c for _, c in keys], np.int32), dtype=wp.int32)
        self.values = wp.array(np.array([blocks[k] for k in keys]), dtype=self.dtype,
                               requires_grad=requires_grad)
        self.nnz = len(keys)
        self.shape = (nrow * br, ncol * bc)

    def dense(self):
        br, bc = self.block_shape
        D = np.zeros(self.shape)
        o, c = self.offsets.numpy(), self.columns.numpy()
        v = self.values.numpy().astype(np.float64).reshape(-1, br, bc)
        for r in range(self.nrow):
            for k in range(o[r], o[r + 1]):
                D[r * br:(r + 1) * br, c[k] * bc:(c[k] + 1) * bc] += v[k]
        return D


def fake_bsr_mv(A, x, y, z, alpha, beta, transpose=False):
    """A dense stand-in for weft.sparse.bsr_mv (the tests patch it in)."""
    D = A.dense().T if transpose else A.dense()
    out = alpha * (D @ x.numpy().reshape(-1).astype(np.float64))
    if beta != 0.0:
        out = out + beta * y.numpy().reshape(-1).astype(np.float64)
    z.assign(out.reshape(z.numpy().shape).astype(z.numpy().dtype))
