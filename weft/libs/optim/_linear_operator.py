"""The :class:`LinearOperator` of :mod:`weft.optim.linear`: what the solvers and the
preconditioners apply (:func:`~weft.optim.linear.aslinearoperator` makes one from a matrix)."""
from __future__ import annotations

from typing import Callable

from ._linear_helpers import _scalar_type


# ----------------------------------------------------------------------------- operators
class LinearOperator:
    """A linear operator for the iterative solvers (Warp's ``LinearOperator``).

    ``matvec(x, y, z, alpha, beta)`` stores ``alpha * (A @ x) + beta * y`` in ``z``.
    ``batch_offsets`` (``B+1`` ints) splits the scalar unknowns into ``B`` independent
    subproblems (unknowns from ``batch_offsets[-1]`` on are inactive); ``max_batch_length``
    bounds their length (it requires ``batch_offsets``).

    Beyond Warp (keyword-only): ``rmatvec``, the same product with ``A^T`` (used by the
    implicit adjoint of BiCGSTAB and GMRES solves), and ``symmetric=True`` to declare that
    ``A^T = A``.
    """

    def __init__(self, shape, dtype, device, matvec: Callable, batch_offsets=None,
                 max_batch_length=None, *, rmatvec: Callable | None = None,
                 symmetric: bool = False):
        if max_batch_length is not None:
            if batch_offsets is None:
                raise ValueError("max_batch_length requires batch_offsets")
            if max_batch_length < 0:
                raise ValueError("max_batch_length must be non-negative")
        self._shape = shape
        self._dtype = dtype
        self._device = device
        self._matvec = matvec
        self._batch_offsets = batch_offsets
        self._max_batch_length = max_batch_length
        self._rmatvec = rmatvec if rmatvec is not None else (matvec if symmetric else None)
        self._grad_target = None  # see _grad_target (implicit adjoints)

    @property
    def shape(self):
        """Number of rows and columns (a diagonal operator keeps its 1-d shape, as Warp)."""
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def matvec(self):
        """``matvec(x, y, z, alpha, beta)``: ``z = alpha * (A @ x) + beta * y``."""
        return self._matvec

    @property
    def rmatvec(self):
        """``rmatvec(x, y, z, alpha, beta)``: ``z = alpha * (A^T @ x) + beta * y``, or None."""
        return self._rmatvec

    @property
    def scalar_type(self):
        return _scalar_type(self._dtype)

    @property
    def batch_offsets(self):
        return self._batch_offsets

    @property
    def batch_count(self):
        return 1 if self._batch_offsets is None else self._batch_offsets.shape[0] - 1

    @property
    def max_batch_length(self):
        return self._max_batch_length
