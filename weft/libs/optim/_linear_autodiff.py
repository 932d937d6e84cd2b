"""The parts of differentiation through :mod:`weft.optim.linear` that run no solve: where a
matrix's gradient goes (``_grad_target``, ``_blocks``), the update kernel outside a solver
state (``_AdjOps``) and :func:`hessian_operator`. The recorded solve itself (``_record_solve``,
``_SolveRecord``) stays in :mod:`weft.optim.linear` with the solvers it calls."""
from __future__ import annotations

import numpy as np

from ...core import types as T
from ...runtime.array_ops import zeros
from ...runtime.launch import launch
from ._linear_helpers import _bsr_host, _dofs_per_entry, _flat
from ._linear_kernels import kernels_for
from ._linear_operator import LinearOperator


# ----------------------------------------------------------------------------- implicit adjoint
def _grad_target(A_op):
    """Where ``-lam x^T`` goes for operator ``A_op``: ``(gradient array, block rows, block
    columns, block shape)``, or None when the matrix has no gradient."""
    if A_op._grad_target is not None:
        return A_op._grad_target
    A = getattr(A_op, "_bsr", None)
    if A is None or A.values.grad is None:
        return None
    offsets, columns, _ = _bsr_host(A)
    rows = np.repeat(np.arange(A.nrow), np.diff(offsets))
    return A.values.grad, rows, columns, tuple(A.block_shape)


def _blocks(data, target):
    """The numpy gradient buffer ``data`` of ``target`` as (blocks, br, bc)."""
    _, rows, _, (br, bc) = target
    k = len(rows)
    return data.reshape(-1)[: k * br * bc].reshape(k, br, bc)


class _AdjOps:
    """The update kernel outside a solver state (unbatched)."""

    def __init__(self, b):
        self.bid = zeros(1, dtype=T.int32, device=b.device)
        self.coef = zeros((1, 1), dtype=T.float64, device=b.device)

    def update(self, y, ay, x, ax):
        yf, xf = _flat(y), _flat(x)
        launch(kernels_for(yf.dtype).update, dim=yf.shape[0],
               inputs=[yf, xf, -1, float(ay), -1, float(ax), yf, xf, -1, 0.0, -1, 0.0, 0,
                       self.coef, self.bid, 0], device=yf.device)


# ----------------------------------------------------------------------------- Hessian operator
def hessian_operator(tape, loss, param, damping=0.0):
    """The Hessian of ``loss`` with respect to array ``param`` of the program recorded on
    ``tape``, as a symmetric :class:`LinearOperator` whose products are ``tape.hvp`` (exact
    Hessian-vector products, forward over reverse): ``cg(hessian_operator(tape, loss, x),
    -grad, dx)`` is a Newton-Krylov step. ``damping`` adds ``damping * I`` (Levenberg). The
    operator reads the tape as it is when a product runs: record the program anew after
    ``param`` changes. The solver's vectors have ``param``'s dtype, of its shape or flattened
    (``param.flatten()``'s: the solvers take 1-d arrays)."""
    ops = _AdjOps(param)
    n = param.size * _dofs_per_entry(param.dtype)

    def mv(x, y, z, alpha, beta):
        v = x if x.shape == param.shape else x.reshape(param.shape)
        hv = tape.hvp(loss, {param: v})[param]
        if z is not y and beta != 0.0:
            ops.update(z, 0.0, y, 1.0)
        ops.update(z, beta, hv, alpha)
        if damping:
            ops.update(z, 1.0, x, alpha * damping)
    return LinearOperator((n, n), param.dtype, param.device, mv, symmetric=True)
