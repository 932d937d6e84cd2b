"""The few weft kernels behind :mod:`weft.optim.linear`, made once per scalar dtype.

Every solver vector is seen as a flat array of scalars (vector-valued unknowns through a scalar
view), so five kernels cover every solver, operator and preconditioner:

- ``update``: ``y = ay * y + ax * x`` with each coefficient a constant or a per-batch value
  (``coef[k, batch]``), entries outside every batch left alone;
- ``dot``: per-batch dot products, accumulated in float64;
- ``dense_mv``: ``z = alpha * A x + beta * y`` (or ``A^T x``) for a dense 2-d matrix;
- ``csr_mv``: the same for a scalar CSR matrix (diagonal, block-diagonal and FSAI operators);
- ``outer_acc``: ``G[k] += s * lam[rows] x[cols]^T`` on a block pattern (the matrix part of an
  implicit adjoint: dense, diagonal and BSR matrices alike).

Arithmetic runs in float64 and rounds once on store (float16 and float32 unknowns keep their
storage; the residual recursions lose less).
"""
# (no ``from __future__ import annotations``: the kernels' annotations name closure variables)
from ...core import types as T
from ...runtime.kernel import kernel
from ...stdlib.funcs import func

f64 = T.float64
i32 = T.int32
_made = {}


def kernels_for(scalar):
    """The kernels for arrays of scalar dtype ``scalar`` (float16, float32 or float64)."""
    got = _made.get(scalar)
    if got is None:
        got = _made[scalar] = _Kernels(scalar)
    return got


class _Kernels:
    def __init__(self, scalar):
        self.scalar = scalar
        self._k = {}

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        k = self._k.get(name)
        if k is None:
            k = self._k[name] = globals()["_make_" + name](self.scalar)
        return k


def _make_update(dtype):
    from ... import tid
    from ...runtime.array import array

    @kernel
    def linear_update(y: array(dtype=dtype), x: array(dtype=dtype), ky: int, sy: f64, kx: int,
                      sx: f64, y2: array(dtype=dtype), x2: array(dtype=dtype), ky2: int,
                      sy2: f64, kx2: int, sx2: f64, two: int,
                      coef: array(dtype=f64, ndim=2), bid: array(dtype=i32), batched: int):
        i = tid()
        b = int(0)
        if batched != 0:
            b = int(bid[i])
        if b >= 0:
            y[i] = dtype(_combine(f64(y[i]), sy, ky, f64(x[i]), sx, kx, coef, b))
            if two != 0:
                y2[i] = dtype(_combine(f64(y2[i]), sy2, ky2, f64(x2[i]), sx2, kx2, coef, b))
    return linear_update


@func
def _combine(yv: f64, sy: f64, ky: int, xv: f64, sx: f64, kx: int, coef, b: int):
    """``ay * y + ax * x``, each coefficient a constant times, for ``k >= 0``, the batch's
    ``coef[k, b]``; a zero coefficient drops its term (so a NaN there does not spread)."""
    ay = sy
    if ky >= 0:
        ay = ay * coef[ky, b]
    ax = sx
    if kx >= 0:
        ax = ax * coef[kx, b]
    s = f64(0.0)
    if ay != f64(0.0):
        s = ay * yv
    if ax != f64(0.0):
        s = s + ax * xv
    return s


def _make_dot(dtype):
    from ... import atomic_add, tid
    from ...runtime.array import array

    @kernel
    def linear_dot(a: array(dtype=dtype), c: array(dtype=dtype), a2: array(dtype=dtype),
                   c2: array(dtype=dtype), two: int, out: array(dtype=f64, ndim=2), k: int,
                   bid: array(dtype=i32), batched: int):
        i = tid()
        b = int(0)
        if batched != 0:
            b = int(bid[i])
        if b >= 0:
            atomic_add(out, k, b, f64(a[i]) * f64(c[i]))
            if two != 0:
                atomic_add(out, k + 1, b, f64(a2[i]) * f64(c2[i]))
    return linear_dot


def _make_diag_mv(dtype):
    from ... import tid
    from ...runtime.array import array

    @kernel
    def linear_diag_mv(d: array(dtype=dtype), x: array(dtype=dtype), y: array(dtype=dtype),
                       z: array(dtype=dtype), alpha: f64, beta: f64):
        i = tid()
        s = f64(0.0)
        if alpha != f64(0.0):
            s = alpha * f64(d[i]) * f64(x[i])
        if beta != f64(0.0):
            s = s + beta * f64(y[i])
        z[i] = dtype(s)
    return linear_diag_mv


def _make_dense_mv(dtype):
    from ... import tid
    from ...runtime.array import array

    @kernel
    def linear_dense_mv(A: array(dtype=dtype, ndim=2), x: array(dtype=dtype), y: array(dtype=dtype),
                        z: array(dtype=dtype), alpha: f64, beta: f64, transpose: int):
        i = tid()
        s = f64(0.0)
        if alpha != f64(0.0):
            if transpose != 0:
                for j in range(A.shape[0]):
                    s = s + f64(A[j, i]) * f64(x[j])
            else:
                for j in range(A.shape[1]):
                    s = s + f64(A[i, j]) * f64(x[j])
            s = alpha * s
        if beta != f64(0.0):
            s = s + beta * f64(y[i])
        z[i] = dtype(s)
    return linear_dense_mv


def _make_csr_mv(dtype):
    from ... import tid
    from ...runtime.array import array

    @kernel
    def linear_csr_mv(offsets: array(dtype=i32), columns: array(dtype=i32),
                      values: array(dtype=dtype), x: array(dtype=dtype), y: array(dtype=dtype),
                      z: array(dtype=dtype), alpha: f64, beta: f64):
        i = tid()
        s = f64(0.0)
        if alpha != f64(0.0):
            for k in range(int(offsets[i]), int(offsets[i + 1])):
                s = s + f64(values[k]) * f64(x[int(columns[k])])
            s = alpha * s
        if beta != f64(0.0):
            s = s + beta * f64(y[i])
        z[i] = dtype(s)
    return linear_csr_mv


def _make_outer_acc(dtype):
    from ... import tid
    from ...runtime.array import array

    @kernel
    def linear_outer_acc(G: array(dtype=dtype, ndim=3), rows: array(dtype=i32),
                         cols: array(dtype=i32), lam: array(dtype=dtype),
                         x: array(dtype=dtype), s: f64):
        k, r, c = tid()
        br = G.shape[1]
        bc = G.shape[2]
        li = int(rows[k]) * br + r
        xi = int(cols[k]) * bc + c
        G[k, r, c] = dtype(f64(G[k, r, c]) + s * f64(lam[li]) * f64(x[xi]))
    return linear_outer_acc
