"""Iterative linear solvers (Warp 1.19's ``warp.optim.linear``): :func:`cg`, :func:`cr`,
:func:`bicgstab` and :func:`gmres`, their pre-allocated states :class:`CG`, :class:`CR`,
:class:`BiCGSTAB` and :class:`GMRES`, :class:`LinearOperator`, :func:`aslinearoperator` and
:func:`preconditioner`; plus, beyond Warp, implicit differentiation of a solve recorded on a
``wp.Tape`` and :func:`hessian_operator` (``tape.hvp`` as an operator, for Newton-Krylov).

Example::

    from weft.optim.linear import cg, preconditioner
    A = wp.array(A_np, dtype=wp.float64)          # dense, BSR (weft.sparse) or a LinearOperator
    x = wp.zeros_like(b)
    niter, err, atol = cg(A, b, x, tol=1e-8, M=preconditioner(A, "diag"))

How it runs: every vector operation of a solver is a launch of one of five small weft kernels
(:mod:`weft.libs.optim._linear_kernels`, one set per scalar dtype); the per-batch scalars of
an iteration (step lengths, residual norms, the GMRES least-squares problem) are computed on
the host from dot products accumulated in float64. The solvers therefore read a few numbers
back each iteration: they are not graph-capturable, and ``use_cuda_graph`` is accepted and
ignored. ``check_every=0`` (Warp's fully device-side mode) runs on the host as well and
returns Warp's arrays (iteration count, squared residual and tolerance).

Differentiation: a solve run while a tape records is recorded as one node whose adjoint solves
the transposed system with the same solver (no unrolling of iterations): for ``x = A^-1 b``,
``A^T lam = x.grad`` then ``b.grad += lam`` and, for a matrix that has gradients (a dense or
diagonal array with ``requires_grad``, or a BSR matrix whose ``values`` has one),
``A.grad -= lam x^T`` on its sparsity pattern; ``x.grad`` (the initial guess's) is cleared.
See docs/linear-solvers.md.

Layout: this module keeps :func:`aslinearoperator`, :func:`preconditioner`, the solver states
and functions and the recorded solve (they call one another, and ``_bsr_mv``, which
``aslinearoperator`` calls, is patched on this module by tests); the rest is in
``_linear_helpers`` (array helpers), ``_linear_operator`` (:class:`LinearOperator`),
``_linear_preconditioners`` (block inverses, :class:`FSAI`), ``_linear_reductions`` (dot
products, ``TiledDot``), ``_linear_loop`` (tolerances, the host loop) and ``_linear_autodiff``
(gradient targets, :func:`hessian_operator`). Every name this module held before is
importable from here.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ...core import types as T
from ...runtime.array import array
from ...runtime.array_ops import empty, zeros
from ...runtime.launch import launch
from ._linear_autodiff import _AdjOps, _blocks, _grad_target, hessian_operator
from ._linear_helpers import (_bsr_host, _dofs_per_entry, _flat, _host, _is_bsr, _put,
                              _scalar_dof_count, _scalar_type, _to_array)
from ._linear_kernels import kernels_for
from ._linear_loop import _dtype_epsilon, _get_tolerances, _is_kernel, _run_solver_loop, _safe_div
from ._linear_operator import LinearOperator
from ._linear_preconditioners import (FSAI, _block_diag_operator, _check_square_bsr, _diag_blocks,
                                      _inv_cholesky, _inv_ldlt, _inv_qr, _inverse_diag)
from ._linear_reductions import TiledDot, _Batches, _create_segmented_tiled_dot_kernels, _dots

__all__ = [
    "CG", "CR", "GMRES", "BiCGSTAB", "FSAI", "LinearOperator", "LinearSolverState",
    "aslinearoperator", "bicgstab", "cg", "cr", "gmres", "hessian_operator", "preconditioner",
]

#: names this module held before its code moved to the modules above and no longer uses itself,
#: importable from here as before (listed so that linters count them as used)
_MOVED = (TiledDot, _create_segmented_tiled_dot_kernels)


# ----------------------------------------------------------------------------- operators
def _bsr_mv(A, x, y, z, alpha, beta, transpose=False):
    from ...libs import sparse  # weft.sparse; imported when a BSR matrix is first used
    if z is not y and beta != 0.0:
        z.assign(y)
    if transpose:
        sparse.bsr_mv(A, x, z, alpha, beta, transpose=True)
    else:
        sparse.bsr_mv(A, x, z, alpha, beta)


def aslinearoperator(A, batch_offsets=None, max_batch_length=None) -> LinearOperator:
    """``A`` as a :class:`LinearOperator`: a 2-d array (dense matrix), a 1-d array (diagonal,
    of scalars or vectors), a BSR matrix (``weft.sparse``) or a :class:`LinearOperator`
    (returned as is; ``batch_offsets`` ignored)."""
    if A is None or isinstance(A, LinearOperator):
        return A
    if max_batch_length is not None and batch_offsets is None:
        raise ValueError("max_batch_length requires batch_offsets")

    if isinstance(A, array) and A.ndim == 2:
        k = kernels_for(_scalar_type(A.dtype)).dense_mv

        def dense(transpose):
            def mv(x, y, z, alpha, beta):
                zf = _flat(z)
                launch(k, dim=zf.shape[0], inputs=[A, _flat(x), _flat(y), zf, float(alpha),
                                                  float(beta), int(transpose)], device=A.device)
            return mv
        op = LinearOperator(A.shape, A.dtype, A.device, dense(False), batch_offsets,
                            max_batch_length, rmatvec=dense(True))
        op._source = A
        if A.grad is not None:
            op._grad_target = (A.grad, [0], [0], tuple(A.shape))
        return op

    if isinstance(A, array) and A.ndim == 1:
        d = _flat(A)
        n = d.shape[0]
        idx = np.arange(n, dtype=np.int32)
        kd = kernels_for(d.dtype).diag_mv

        def diag_mv(x, y, z, alpha, beta):
            launch(kd, dim=n, inputs=[d, _flat(x), _flat(y), _flat(z), float(alpha),
                                      float(beta)], device=A.device)
        op = LinearOperator(A.shape, A.dtype, A.device, diag_mv, batch_offsets,
                            max_batch_length, symmetric=True)
        op._source = A
        if A.grad is not None and not T.is_composite(A.dtype):
            op._grad_target = (A.grad, idx, idx, (1, 1))
        return op

    if _is_bsr(A):
        def bsr_mv(x, y, z, alpha, beta):
            _bsr_mv(A, x, y, z, alpha, beta)

        def bsr_rmv(x, y, z, alpha, beta):
            _bsr_mv(A, x, y, z, alpha, beta, transpose=True)
        op = LinearOperator(A.shape, A.dtype, A.device, bsr_mv, batch_offsets,
                            max_batch_length, rmatvec=bsr_rmv)
        op._bsr = A
        return op

    raise ValueError(f"Unable to create LinearOperator from {A}")


# ----------------------------------------------------------------------------- preconditioners
_PIVOT_REL_TOL = {T.float16: 1.0e-3, T.float32: 1.0e-6, T.float64: 1.0e-12}
_BLOCK_JACOBI = ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile")


def preconditioner(A, ptype: str = "diag"):
    """A preconditioner for ``A`` (Warp's ``preconditioner``), as a :class:`LinearOperator`:

    - ``"diag"``: Jacobi, ``1 / A_ii`` (1 where ``A_ii`` is 0); ``"diag_abs"``: ``1 / |A_ii|``;
    - ``"block_jacobi_direct"``, ``"block_jacobi_sequential"``, ``"block_jacobi_tile"``: the
      inverses of the diagonal blocks of a square BSR matrix with square blocks (by QR; by
      LDL^T, symmetric positive-definite blocks only; by Cholesky, float32/float64 only); a
      block found singular (or not SPD / not symmetric where required) acts as the identity;
      1x1 blocks fall back to ``"diag"``;
    - ``"fsai"``: a factorized sparse approximate inverse ``G^T G`` of an SPD BSR matrix
      (:class:`FSAI`);
    - ``"id"``: None (no preconditioner).

    The factorizations run on the host when the preconditioner is built (a snapshot of ``A``);
    applying it is one CSR product.
    """
    if ptype == "id":
        return None
    if ptype in ("diag", "diag_abs"):
        return _jacobi(A, ptype == "diag_abs")
    if ptype in _BLOCK_JACOBI:
        return _block_jacobi(A, ptype)
    if ptype == "fsai":
        return FSAI(A)
    raise ValueError(f"Unsupported preconditioner type '{ptype}'")


def _jacobi(A, use_abs):
    if _is_bsr(A):
        offsets, columns, values = _bsr_host(A)
        br, bc = A.block_shape
        n = min(A.nrow, A.ncol)
        d = np.zeros((A.nrow, br))
        for row in range(n):
            for k in range(offsets[row], offsets[row + 1]):
                if columns[k] == row:
                    d[row] = np.diagonal(values[k])[:br] if br <= bc else 0.0
        d = d.reshape(-1)
        scalar, device = A.scalar_type, A.device
    elif isinstance(A, array) and A.ndim == 2:
        d = np.asarray(A.numpy(), dtype=np.float64).diagonal().copy()
        scalar, device = _scalar_type(A.dtype), A.device
    else:
        raise ValueError("Unsupported source matrix type for building diagonal preconditioner")
    inv = _to_array(_inverse_diag(d, use_abs).astype(T.numpy_dtype(scalar)), scalar, device)
    return aslinearoperator(inv)


def _block_jacobi(A, ptype):
    bs = _check_square_bsr(A, "Block-Jacobi")
    scalar = A.scalar_type
    if ptype == "block_jacobi_tile" and scalar not in (T.float32, T.float64):
        raise ValueError(f"'block_jacobi_tile' preconditioner requires a float32 or float64 "
                         f"scalar type, got {T.type_name(scalar)}")
    if bs == 1:
        return _jacobi(A, False)
    tol = _PIVOT_REL_TOL.get(scalar, 1.0e-6)
    invert = {"block_jacobi_direct": _inv_qr, "block_jacobi_sequential": _inv_ldlt,
              "block_jacobi_tile": _inv_cholesky}[ptype]
    blocks = _diag_blocks(A, bs)
    inv = np.empty_like(blocks)
    for i, B in enumerate(blocks):
        got = invert(B, tol)
        inv[i] = np.eye(bs) if got is None or not np.all(np.isfinite(got)) else got
    return _block_diag_operator(inv, scalar, A.device, A.dtype)


# ----------------------------------------------------------------------------- solver states
class LinearSolverState:
    """Pre-allocated state of an iterative solver (Warp's ``LinearSolverState``); calling it
    runs the solver, optionally with another compatible ``A``, ``b``, ``x`` or ``M``. Made by
    the solver classes, or by a solver function with ``run=False``."""

    _kind = ""

    def __init__(self, A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None,
                 check_every=10, use_cuda_graph=True):
        if callback is not None and _is_kernel(callback):
            raise NotImplementedError(
                "weft: a kernel as callback (Warp's device-side callback for check_every=0) is "
                "not supported; weft's solvers check residuals on the host: pass a Python "
                "function callback(iteration, residual, tolerance)")
        self._A = aslinearoperator(A)
        self._M = aslinearoperator(M)
        self._b = b
        self._x = x
        self._tol = tol
        self._atol = atol
        self._callback = callback
        self._check_every = check_every
        self._use_cuda_graph = use_cuda_graph  # accepted; weft's solvers are not captured
        self._device = self._A.device
        self._scalar_type = self._A.scalar_type
        self._batch_count = self._A.batch_count
        self._dofs_per_entry = _dofs_per_entry(b.dtype)
        if maxiter is None or maxiter == 0:
            maxiter = _scalar_dof_count(b) // self._batch_count
        self._maxiter = int(maxiter)
        self._cur_iter_and_condition = empty((2,), dtype=T.int32, device=self._device)
        self._batches = _Batches(self._A.batch_offsets, _scalar_dof_count(b), self._device)
        nb = self._batch_count
        self._acc = zeros((8, nb), dtype=T.float64, device=self._device)
        self._coef = zeros((4, nb), dtype=T.float64, device=self._device)
        self._r_norm_sq = zeros(nb, dtype=T.float64, device=self._device)
        self._atol_sq = zeros(nb, dtype=T.float64, device=self._device)
        self._allocate()

    # -- vector operations
    def _dot(self, *pairs):
        return _dots(self._acc, self._batches, pairs)

    def _update(self, y, ay, x, ax, y2=None, ay2=0.0, x2=None, ax2=0.0):
        """``y = ay * y + ax * x`` on the active entries (and ``y2 = ay2 * y2 + ax2 * x2`` in
        the same pass when ``y2`` is given); coefficients are numbers or per-batch numpy
        arrays."""
        args = []
        for slot, a in enumerate((ay, ax, ay2, ax2)):
            if np.ndim(a) == 0:
                args += [-1, float(a)]
            elif self._batch_count == 1:
                args += [-1, float(np.asarray(a).reshape(-1)[0])]
            else:
                if self._device.is_cuda:
                    _put(self._coef[slot], a)
                else:
                    self._coef._data[slot] = a
                args += [slot, 1.0]
        yf, xf = _flat(y), _flat(x)
        two = y2 is not None
        y2f, x2f = (_flat(y2), _flat(x2)) if two else (yf, xf)
        launch(kernels_for(yf.dtype).update, dim=yf.shape[0],
               inputs=[yf, xf, *args[:4], y2f, x2f, *args[4:], int(two), self._coef,
                       self._batches.bid, self._batches.batched], device=yf.device)

    def _copy(self, dst, src):
        self._update(dst, 0.0, src, 1.0)

    def _set_r2(self, r2):
        _put(self._r_norm_sq, r2)

    def _init_tolerance(self, b):
        bb = self._dot((b, b))[0]
        rtol, atol = _get_tolerances(self._scalar_type, self._tol, self._atol)
        a = np.maximum(rtol * np.sqrt(bb), atol)
        self._atol_host = a * a
        _put(self._atol_sq, self._atol_host)

    def _loop(self, do_cycle, cycle_size=1):
        if self._check_every > 0:
            return _run_solver_loop(do_cycle, cycle_size, self._r_norm_sq, self._maxiter,
                                    self._atol_sq, self._callback, self._check_every,
                                    self._use_cuda_graph, self._device)
        # Warp's device-side mode: run until every batch converged or maxiter; the counts
        # come back as arrays (the condition word is 0 when done)
        it = 0
        while it < self._maxiter and not (_host(self._r_norm_sq) <= self._atol_host).all():
            do_cycle()
            it += cycle_size
        _put(self._cur_iter_and_condition, np.array([it, 0], np.int32))
        if self._callback is not None:
            self._callback(it, math.sqrt(float(_host(self._r_norm_sq).max())),
                           math.sqrt(float(self._atol_host.max())))
        return self._cur_iter_and_condition[0:1], self._r_norm_sq, self._atol_sq

    # -- subclasses
    def _allocate(self):
        raise NotImplementedError

    def _run(self, A, b, x, M):
        raise NotImplementedError

    def _check_compatible(self, A, b, x, M):
        if A is not self._A:
            if A.shape != self._A.shape:
                raise ValueError(f"Incompatible A.shape: expected {self._A.shape}, got {A.shape}")
            if A.dtype != self._A.dtype:
                raise ValueError(f"Incompatible A.dtype: expected {self._A.dtype}, got {A.dtype}")
            if A.device != self._A.device:
                raise ValueError(f"Incompatible A.device: expected {self._A.device}, got "
                                 f"{A.device}")
            if A.batch_count != self._A.batch_count:
                raise ValueError(f"Incompatible A.batch_count: expected {self._A.batch_count}, "
                                 f"got {A.batch_count}")
            if A.batch_offsets is not self._A.batch_offsets:
                raise ValueError("A.batch_offsets must be the same array as at construction")
            if A.max_batch_length != self._A.max_batch_length:
                raise ValueError("For batched systems, A.max_batch_length must match the value "
                                 "used at construction")
        if b is not self._b:
            if b.shape != self._b.shape:
                raise ValueError(f"Incompatible b.shape: expected {self._b.shape}, got {b.shape}")
            if b.dtype != self._b.dtype:
                raise ValueError(f"Incompatible b.dtype: expected {self._b.dtype}, got {b.dtype}")
        if x is not self._x:
            if x.shape != self._x.shape:
                raise ValueError(f"Incompatible x.shape: expected {self._x.shape}, got {x.shape}")
            if x.dtype != self._x.dtype:
                raise ValueError(f"Incompatible x.dtype: expected {self._x.dtype}, got {x.dtype}")
        if M is not None and self._M is not None and M is not self._M:
            if M.shape != self._M.shape:
                raise ValueError(f"Incompatible M.shape: expected {self._M.shape}, got {M.shape}")
            if M.dtype != self._M.dtype:
                raise ValueError(f"Incompatible M.dtype: expected {self._M.dtype}, got {M.dtype}")

    def __call__(self, A=None, b=None, x=None, M=None):
        """Run the solver (with ``A``, ``b``, ``x`` or ``M`` replaced when given)."""
        from ...autodiff.custom import paused_tapes
        from ...autodiff.tape import active_tapes
        from ...runtime.graph import capturing
        if capturing() is not None:
            raise RuntimeError("weft's iterative solvers read residuals on the host every "
                               "iteration, so they cannot be captured in a graph; call them "
                               "outside wp.ScopedCapture")
        A_op = aslinearoperator(A) if A is not None else self._A
        M_op = aslinearoperator(M) if M is not None else self._M
        b = b if b is not None else self._b
        x = x if x is not None else self._x
        self._check_compatible(A_op, b, x, M_op)
        tapes = list(active_tapes())
        with paused_tapes():
            out = self._run(A_op, b, x, M_op)
        if tapes and x.grad is not None:
            _record_solve(tapes, self, A_op, b, x, M_op)
        return out


class _RestartableState(LinearSolverState):
    def __init__(self, A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None,
                 check_every=10, use_cuda_graph=True, *, restart=None):
        if restart is not None:
            if isinstance(restart, bool):
                raise TypeError("restart must be an integer or None")
            try:
                restart = operator.index(restart)
            except TypeError as e:
                raise TypeError("restart must be an integer or None") from e
            if restart < 1:
                raise ValueError("restart must be positive")
        self._restart = restart
        super().__init__(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                         check_every=check_every, use_cuda_graph=use_cuda_graph)

    def _configure_restart(self):
        if self._restart is not None:
            self._restart = max(1, min(self._restart, self._maxiter))
            if self._check_every > 0:
                self._check_every = max(self._check_every, self._restart)

    def _cycle(self, do_iteration, reset):
        restart = self._restart
        if restart is None:
            return do_iteration, 1

        def cycle():
            for _ in range(restart - 1):
                do_iteration()
            do_iteration(update_direction=False)
            reset()
        return cycle, restart


class CG(_RestartableState):
    """Conjugate gradients (symmetric positive-definite ``A``); see :func:`cg`."""

    _kind = "cg"

    def _allocate(self):
        self._configure_restart()
        b = self._b
        self._r, self._z, self._p, self._Ap = (zeros(b.shape, dtype=b.dtype, device=self._device)
                                               for _ in range(4))

    def _run(self, A, b, x, M):
        r, p, Ap = self._r, self._p, self._Ap
        z = self._z if M is not None else r
        st = {}
        self._init_tolerance(b)

        def residual():
            A.matvec(x, b, r, -1.0, 1.0)
            precondition()
            p_copy()

        def precondition():
            if M is not None:
                M.matvec(r, z, z, 1.0, 0.0)
                rr, rz = self._dot((r, r), (r, z))
            else:
                rr = rz = self._dot((r, r))[0]
            st["rr"], st["rz"] = rr, rz
            self._set_r2(rr)

        def p_copy():
            self._copy(p, z)

        def do_iteration(update_direction=True):
            rz_old, rr_old = st["rz"], st["rr"]
            A.matvec(p, Ap, Ap, 1.0, 0.0)
            pAp = self._dot((p, Ap))[0]
            alpha = _safe_div(rz_old, pAp, rr_old > self._atol_host)
            self._update(x, 1.0, p, alpha, r, 1.0, Ap, -alpha)
            if update_direction:
                precondition()
                beta = _safe_div(st["rz"], rz_old, st["rr"] > self._atol_host)
                self._update(p, beta, z, 1.0)

        residual()
        do_cycle, size = self._cycle(do_iteration, residual)
        return self._loop(do_cycle, size)


class CR(_RestartableState):
    """Conjugate residuals (symmetric ``A``); see :func:`cr`."""

    _kind = "cr"

    def _allocate(self):
        self._configure_restart()
        b = self._b
        (self._r, self._z, self._p, self._Ap, self._Az,
         self._y) = (zeros(b.shape, dtype=b.dtype, device=self._device) for _ in range(6))

    def _run(self, A, b, x, M):
        r, p, Ap, Az = self._r, self._p, self._Ap, self._Az
        z = self._z if M is not None else r
        y = self._y if M is not None else Ap
        st = {}
        self._init_tolerance(b)

        def refresh():
            A.matvec(z, Az, Az, 1.0, 0.0)
            rr, zAz = self._dot((r, r), (z, Az))
            st["rr"], st["zAz"] = rr, zAz
            self._set_r2(rr)

        def residual():
            A.matvec(x, b, r, -1.0, 1.0)
            if M is not None:
                M.matvec(r, z, z, 1.0, 0.0)
            refresh()
            self._update(p, 0.0, z, 1.0, Ap, 0.0, Az, 1.0)

        def do_iteration(update_direction=True):
            zAz_old, rr_old = st["zAz"], st["rr"]
            if M is not None:
                M.matvec(Ap, y, y, 1.0, 0.0)
            yAp = self._dot((Ap, y))[0]
            alpha = _safe_div(zAz_old, yAp, (rr_old > self._atol_host) & (yAp > 0.0))
            self._update(x, 1.0, p, alpha, r, 1.0, Ap, -alpha)
            if M is not None:
                self._update(z, 1.0, y, -alpha)
            if update_direction:
                refresh()
                beta = _safe_div(st["zAz"], zAz_old, (st["rr"] > self._atol_host) &
                                 (zAz_old > 0.0))
                self._update(p, beta, z, 1.0, Ap, beta, Az, 1.0)

        residual()
        do_cycle, size = self._cycle(do_iteration, residual)
        return self._loop(do_cycle, size)


class BiCGSTAB(LinearSolverState):
    """Biconjugate gradients stabilized (any square ``A``); see :func:`bicgstab`. Whether
    ``M`` is given is fixed at construction."""

    _kind = "bicgstab"

    def __init__(self, A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None,
                 check_every=10, use_cuda_graph=True, is_left_preconditioner=False):
        self._is_left_preconditioner = is_left_preconditioner
        super().__init__(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                         check_every=check_every, use_cuda_graph=use_cuda_graph)

    def _allocate(self):
        b = self._b
        (self._r, self._r0, self._p, self._v, self._t, self._y, self._z,
         self._Mt) = (zeros(b.shape, dtype=b.dtype, device=self._device) for _ in range(8))

    def _check_compatible(self, A, b, x, M):
        super()._check_compatible(A, b, x, M)
        if (M is None) != (self._M is None):
            raise ValueError("BiCGSTAB requires M to be consistently provided between "
                             "construction and call (both None or both non-None)")

    def _run(self, A, b, x, M):
        r, r0, p, v, t = self._r, self._r0, self._p, self._v, self._t
        y = self._y if M is not None else p
        z = self._z if M is not None else r
        left = M is not None and self._is_left_preconditioner
        self._init_tolerance(b)
        A.matvec(x, b, r, -1.0, 1.0)
        rr = self._dot((r, r))[0]
        self._set_r2(rr)
        self._update(p, 0.0, r, 1.0, r0, 0.0, r, 1.0)
        st = {"rho": rr.copy(), "rr": rr}

        def do_iteration():
            tol2 = self._atol_host
            if M is not None:
                M.matvec(p, y, y, 1.0, 0.0)
            A.matvec(y, v, v, 1.0, 0.0)
            r0v = self._dot((r0, v))[0]
            alpha = _safe_div(st["rho"], r0v, st["rr"] > tol2)
            self._update(x, 1.0, y, alpha, r, 1.0, v, -alpha)
            rr = self._dot((r, r))[0]
            if M is not None:
                M.matvec(r, z, z, 1.0, 0.0)
            A.matvec(z, t, t, 1.0, 0.0)
            if left:
                M.matvec(t, self._Mt, self._Mt, 1.0, 0.0)
                s_t, t_t = self._dot((z, self._Mt), (self._Mt, self._Mt))
            else:
                s_t, t_t = self._dot((r, t), (t, t))
            omega = _safe_div(s_t, t_t, rr > tol2)
            self._update(x, 1.0, z, omega, r, 1.0, t, -omega)
            rr, rho = self._dot((r, r), (r0, r))
            self._set_r2(rr)
            active = rr > tol2
            beta = _safe_div(rho * t_t, r0v * s_t, active)
            beta_omega = _safe_div(rho, r0v, active)
            self._update(p, beta, r, 1.0, p, 1.0, v, -beta_omega)  # in order, per entry
            st["rho"], st["rr"] = rho, rr

        return self._loop(do_iteration, 1)


class GMRES(LinearSolverState):
    """Restarted generalized minimal residuals (any square ``A``); see :func:`gmres`."""

    _kind = "gmres"

    def __init__(self, A, b, x, tol=None, atol=None, restart=31, maxiter=0, M=None,
                 callback=None, check_every=31, use_cuda_graph=True,
                 is_left_preconditioner=False):
        self._restart = restart
        self._is_left_preconditioner = is_left_preconditioner
        super().__init__(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                         check_every=check_every, use_cuda_graph=use_cuda_graph)

    def _allocate(self):
        restart = self._restart = max(1, min(self._restart, self._maxiter))
        if self._check_every > 0:
            self._check_every = max(restart, self._check_every)
        b = self._b
        self._r = zeros(b.shape, dtype=b.dtype, device=self._device)
        self._w = zeros(b.shape, dtype=b.dtype, device=self._device)
        self._V = [zeros(b.shape, dtype=b.dtype, device=self._device)
                   for _ in range(restart + 1)]
        self._pivot_tol = _dtype_epsilon(self._scalar_type) ** 2

    def _run(self, A, b, x, M):
        restart, r, w, V = self._restart, self._r, self._w, self._V
        left = M is not None and self._is_left_preconditioner
        nb = self._batch_count
        self._init_tolerance(b)
        A.matvec(x, b, r, -1.0, 1.0)
        self._set_r2(self._dot((r, r))[0])

        def normalize(dst, src, h2):
            h = np.sqrt(np.maximum(h2, 0.0))
            self._update(dst, 0.0, src, np.where(h > 0.0, 1.0 / np.where(h > 0.0, h, 1.0), 1.0))
            return h

        def do_cycle():
            if left:
                M.matvec(r, w, w, 1.0, 0.0)
                rh = w
            else:
                rh = r
            beta = normalize(V[0], rh, self._dot((rh, rh))[0])
            H = np.zeros((nb, restart + 1, restart))
            alive = beta > 0.0
            k_used = restart
            for j in range(restart):
                if M is not None:
                    tmp = V[j + 1]
                    if left:
                        A.matvec(V[j], tmp, tmp, 1.0, 0.0)
                        M.matvec(tmp, w, w, 1.0, 0.0)
                    else:
                        M.matvec(V[j], tmp, tmp, 1.0, 0.0)
                        A.matvec(tmp, w, w, 1.0, 0.0)
                else:
                    A.matvec(V[j], w, w, 1.0, 0.0)
                for k in range(j + 1):  # modified Gram-Schmidt
                    h = self._dot((w, V[k]))[0]
                    H[:, k, j] = h
                    self._update(w, 1.0, V[k], -h)
                h2 = self._dot((w, w))[0]
                col2 = np.sum(H[:, : j + 1, j] ** 2, axis=1) + h2
                # breakdown (the Krylov space is exhausted): stop extending that batch
                alive = alive & (h2 > self._pivot_tol * np.maximum(col2, 1e-300))
                H[:, j + 1, j] = np.where(alive, np.sqrt(np.maximum(h2, 0.0)), 0.0)
                hh = H[:, j + 1, j]
                self._update(V[j + 1], 0.0, w,
                             np.where(alive, 1.0 / np.where(hh > 0, hh, 1.0), 0.0))
                if not alive.any():
                    k_used = j + 1
                    break
            Y = np.zeros((nb, restart))
            for bi in range(nb):
                if beta[bi] > 0.0:
                    rhs = np.zeros(k_used + 1)
                    rhs[0] = beta[bi]
                    Y[bi, :k_used] = np.linalg.lstsq(H[bi, : k_used + 1, :k_used], rhs,
                                                     rcond=None)[0]
            if M is None or left:
                for j in range(k_used):
                    self._update(x, 1.0, V[j], Y[:, j])
            else:
                self._update(w, 0.0, V[0], Y[:, 0])
                for j in range(1, k_used):
                    self._update(w, 1.0, V[j], Y[:, j])
                M.matvec(w, r, r, 1.0, 0.0)
                self._update(x, 1.0, r, 1.0)
            A.matvec(x, b, r, -1.0, 1.0)
            self._set_r2(self._dot((r, r))[0])

        return self._loop(do_cycle, restart)


# ----------------------------------------------------------------------------- solver functions
_DOC_RETURNS = """
    Returns ``(iterations, residual_norm, absolute_tolerance)`` (Python numbers) when
    ``check_every > 0``; with ``check_every=0``, Warp's arrays ``(iterations (1,), squared
    residual norms (batches,), squared tolerances (batches,))``; with ``run=False``, the
    pre-allocated solver state (callable again with replacement operands). The tolerance is
    ``max(atol, tol * norm(b))`` (per batch). ``use_cuda_graph`` is accepted and ignored.
"""


def cg(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10,
       use_cuda_graph=True, run=True, *, restart=None):
    """Solve the symmetric positive-definite system ``A x = b`` by conjugate gradients,
    starting from ``x``; ``M`` a preconditioner (approximating ``A^-1``); ``restart`` every
    so many iterations recomputes ``b - A x`` and resets the search direction.
    """
    state = CG(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
               check_every=check_every, use_cuda_graph=use_cuda_graph, restart=restart)
    return state() if run else state


def cr(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10,
       use_cuda_graph=True, run=True, *, restart=None):
    """Solve the symmetric system ``A x = b`` by conjugate residuals (as :func:`cg`)."""
    state = CR(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
               check_every=check_every, use_cuda_graph=use_cuda_graph, restart=restart)
    return state() if run else state


def bicgstab(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10,
             use_cuda_graph=True, is_left_preconditioner=False, run=True):
    """Solve the square system ``A x = b`` by BiCGSTAB, ``M`` a right (or, with
    ``is_left_preconditioner``, left) preconditioner."""
    state = BiCGSTAB(A, b, x, tol=tol, atol=atol, maxiter=maxiter, M=M, callback=callback,
                     check_every=check_every, use_cuda_graph=use_cuda_graph,
                     is_left_preconditioner=is_left_preconditioner)
    return state() if run else state


def gmres(A, b, x, tol=None, atol=None, restart=31, maxiter=0, M=None, callback=None,
          check_every=31, use_cuda_graph=True, is_left_preconditioner=False, run=True):
    """Solve the square system ``A x = b`` by GMRES restarted every ``restart`` iterations
    (the Krylov space's size), ``M`` a right (or left) preconditioner."""
    state = GMRES(A, b, x, tol=tol, atol=atol, restart=restart, maxiter=maxiter, M=M,
                  callback=callback, check_every=check_every, use_cuda_graph=use_cuda_graph,
                  is_left_preconditioner=is_left_preconditioner)
    return state() if run else state


for _f in (cg, cr, bicgstab, gmres):
    _f.__doc__ += _DOC_RETURNS


# ----------------------------------------------------------------------------- implicit adjoint
def _record_solve(tapes, state, A_op, b, x, M_op):
    """Record the implicit adjoint of the solve that just ran on every recording tape."""
    rec = _SolveRecord(state, A_op, b, x, M_op)
    for tape in tapes:
        tape.record_func(rec.backward, rec.arrays, forward=rec.forward, hvp=rec.hvp_backward)


class _SolveRecord:
    """A recorded solve ``x = A^-1 b``: its adjoint (``backward``), forward mode (``forward``)
    and step of ``tape.hvp`` (``hvp_backward``), each one or two solves of the same kind."""

    def __init__(self, state, A_op, b, x, M_op):
        from ...runtime.array_copy import clone
        self.kind, self.A_op, self.M_op, self.b, self.x = state._kind, A_op, M_op, b, x
        self.target = _grad_target(A_op)
        self.x_sol = clone(x, requires_grad=False)  # x as the solve left it
        opts = dict(tol=state._tol, atol=state._atol, maxiter=state._maxiter,
                    check_every=max(state._check_every, 1))
        if self.kind == "gmres":
            opts.update(restart=state._restart)
        if self.kind in ("gmres", "bicgstab"):
            opts.update(is_left_preconditioner=state._is_left_preconditioner)
        self.opts = opts
        bsr = getattr(A_op, "_bsr", None)
        self.arrays = [a for a in (b, x, getattr(A_op, "_source", None),
                                   None if bsr is None else bsr.values) if isinstance(a, array)]

    def _solve(self, rhs, transpose=False):
        """``A^-1 rhs`` (``A^-T`` with ``transpose``) as a new array; ``rhs`` an array or numpy."""
        from ...autodiff.custom import paused_tapes
        A = self.A_op
        if transpose and self.kind not in ("cg", "cr"):
            if A.rmatvec is None:
                raise RuntimeError(f"weft: the adjoint of a {self.kind} solve needs A^T: give "
                                   "the LinearOperator an rmatvec= (or symmetric=True)")
            A = LinearOperator(A.shape, A.dtype, A.device, A.rmatvec, A.batch_offsets,
                               A.max_batch_length, rmatvec=A.matvec)
        b = self.b
        r = zeros(b.shape, dtype=b.dtype, device=b.device)
        if isinstance(rhs, array):
            r.assign(rhs)
        else:
            _put(r, np.asarray(rhs).reshape(_host(r).shape))
        out = zeros(b.shape, dtype=b.dtype, device=b.device)
        with paused_tapes():
            {"cg": cg, "cr": cr, "bicgstab": bicgstab, "gmres": gmres}[self.kind](
                A, r, out, M=self.M_op, **self.opts)
        return out

    def _tangent_of_A(self, tangents):
        bsr = getattr(self.A_op, "_bsr", None)
        if bsr is not None and tangents.get(bsr.values) is not None:
            raise RuntimeError("weft: forward mode through a solve with a BSR matrix whose "
                               "values have a tangent is not supported")
        src = getattr(self.A_op, "_source", None)
        t = tangents.get(src) if src is not None else None
        return aslinearoperator(t) if t is not None else None

    def _tangent_x(self, tangents):
        """The tangent of the solution: ``A^-1 (tb - tA x)``."""
        rhs = zeros(self.b.shape, dtype=self.b.dtype, device=self.b.device)
        tb = tangents.get(self.b)
        if tb is not None:
            rhs.assign(tb)
        tA = self._tangent_of_A(tangents)
        if tA is not None:
            tA.matvec(self.x_sol, rhs, rhs, -1.0, 1.0)
        return self._solve(rhs)

    def _add_outer(self, data, lam, xs, scale):
        """``data[k] += scale * lam[rows_k] xs[cols_k]^T`` on the host (numpy buffers)."""
        _, rows, cols, (br, bc) = self.target
        G = _blocks(data, self.target)
        L = np.asarray(lam, np.float64).reshape(-1, br)[rows]
        X = np.asarray(xs, np.float64).reshape(-1, bc)[cols]
        G += (scale * L[:, :, None] * X[:, None, :]).astype(G.dtype)

    def backward(self):
        x, b = self.x, self.b
        if x.grad is None:
            return
        lam = self._solve(x.grad, transpose=True)
        ops = _AdjOps(b)
        if b.grad is not None:
            ops.update(b.grad, 1.0, lam, 1.0)
        if self.target is not None:
            g, rows, cols, (br, bc) = self.target
            g3 = _flat(g)[: len(rows) * br * bc].reshape((len(rows), br, bc))
            k = kernels_for(_scalar_type(g3.dtype)).outer_acc
            launch(k, dim=g3.shape, inputs=[
                g3, _to_array(np.asarray(rows, np.int32), T.int32, g3.device),
                _to_array(np.asarray(cols, np.int32), T.int32, g3.device),
                _flat(lam), _flat(self.x_sol), -1.0], device=g3.device)
        x.grad.zero_()

    def forward(self, tangents):
        tangents[self.x] = self._tangent_x(tangents)

    def hvp_backward(self, tangents, adjs, tadjs):
        x, b = self.x, self.b
        xbar, txbar = adjs.of(x.grad._data), tadjs.of(x.grad._data)
        lam = self._solve(np.array(xbar), transpose=True)
        # A^T lam = xbar differentiated: A^T tlam = txbar - tA^T lam
        rhs = np.array(txbar, dtype=np.float64)
        tA = self._tangent_of_A(tangents)
        if tA is not None:
            t = zeros(b.shape, dtype=b.dtype, device=b.device)
            tA.rmatvec(lam, t, t, 1.0, 0.0)
            rhs = rhs - np.asarray(_host(t), np.float64).reshape(rhs.shape)
        tlam = self._solve(rhs, transpose=True)
        lam_np, tlam_np = _host(lam), _host(tlam)
        if b.grad is not None:
            adjs.of(b.grad._data)[...] += lam_np
            tadjs.of(b.grad._data)[...] += tlam_np
        if self.target is not None:
            g = self.target[0]
            xs = _host(self.x_sol)
            self._add_outer(adjs.of(g._data), lam_np, xs, -1.0)
            tx = _host(self._tangent_x(tangents))
            self._add_outer(tadjs.of(g._data), tlam_np, xs, -1.0)
            self._add_outer(tadjs.of(g._data), lam_np, tx, -1.0)
        xbar[...] = 0
        txbar[...] = 0
