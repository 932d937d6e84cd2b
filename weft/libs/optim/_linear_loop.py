"""The iteration of :mod:`weft.optim.linear`'s solvers: the default tolerances per dtype,
Warp's host loop (``_run_solver_loop``), the guarded division of the step lengths and the
check that a callback is not a kernel."""
from __future__ import annotations

import math

import numpy as np

from ...core import types as T
from ._linear_helpers import _host


# ----------------------------------------------------------------------------- tolerances
def _dtype_epsilon(dtype):
    if dtype is T.float64:
        return 1.0e-16
    if dtype is T.float16:
        return 1.0e-4
    return 1.0e-8


def _get_tolerances(dtype, tol, atol):
    eps = _dtype_epsilon(dtype)
    if tol is None and atol is None:
        tol = atol = eps ** 0.75
    elif tol is None:
        tol = atol
    elif atol is None:
        atol = tol
    return tol, max(atol, eps ** 2.25)


# ----------------------------------------------------------------------------- the host loop
def _run_solver_loop(do_cycle, cycle_size, r_norm_sq, maxiter, atol_sq, callback, check_every,
                     use_cuda_graph, device):
    """Warp's host loop: run ``do_cycle`` (``cycle_size`` iterations each) until every batch's
    squared residual ``r_norm_sq`` is within ``atol_sq`` (checked every ``check_every``
    iterations) or ``maxiter`` is reached; ``callback(iteration, residual, tolerance)`` at the
    start, at every check and at the end. Returns ``(iterations, residual, tolerance)``."""
    atol_host = np.array(_host(atol_sq), dtype=np.float64)
    atol = math.sqrt(float(atol_host.max()))
    check_every = max(check_every, cycle_size)
    it = 0
    r2 = np.array(_host(r_norm_sq), dtype=np.float64)
    err = math.sqrt(float(r2.max()))
    if callback is not None:
        callback(it, err, atol)
    if (r2 <= atol_host).all():
        return it, err, atol
    while True:
        do_cycle()
        it += cycle_size
        if it >= maxiter:
            break
        if it % check_every < cycle_size:
            r2 = np.array(_host(r_norm_sq), dtype=np.float64)
            if (r2 <= atol_host).all():
                break
            if callback is not None:
                callback(it, math.sqrt(float(r2.max())), atol)
    err = math.sqrt(float(np.array(_host(r_norm_sq), dtype=np.float64).max()))
    if callback is not None:
        callback(it, err, atol)
    return it, err, atol


def _safe_div(a, b, cond):
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(b != 0.0, a / np.where(b != 0.0, b, 1.0), 0.0)
    return np.where(cond, q, 0.0)


def _is_kernel(f):
    from ...runtime.kernel import Kernel
    return isinstance(f, Kernel)
