"""Helpers of second-order generated code (:mod:`weft.transpiler.second_order`), as ``_w2``.

``tzero(x)``: a zero with the structure and types of ``x`` (a number, an array (a tile) or
nested tuples of them); ``like(x, c)``: the Python constant ``c`` as a number of ``x``'s type.
Both are plain Python (for ``NUMBA_DISABLE_JIT``) and overloaded for Numba, where only the type
of ``x`` matters. ``tile_pick(t, r, tt)``: the tangent of ``r = tile_max(t)`` (or ``tile_min``)
along ``tt``: the element of ``tt`` where ``t`` first equals ``r`` (where the first-order
adjoint sends the whole gradient, ``tiles.tile_extreme_adj``).
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ..core.diskcache import njit
from . import tile_second

# the tangents of the tile factorisation's and solves' adjoints, as generated code calls them
tile_cholesky_adj_jvp = tile_second.cholesky_adj_jvp
tile_lower_solve_adj_jvp = tile_second.lower_solve_adj_jvp
tile_upper_solve_adj_jvp = tile_second.upper_solve_adj_jvp
tile_cholesky_solve_adj_jvp = tile_second.cholesky_solve_adj_jvp


def tzero(x):
    if isinstance(x, tuple):
        return tuple(tzero(v) for v in x)
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    return type(x)(0)


@njit(nogil=True)
def _first_equal(t, value):
    ft = np.ascontiguousarray(t).reshape(-1)
    for k in range(ft.shape[0]):
        if ft[k] == value:
            return k
    return -1


@njit(nogil=True)
def tile_pick_scalar(t, r, tt):
    """The tangent of ``r = tile_max_scalar(t)`` along ``tt`` (zero where ``r`` is NaN)."""
    k = _first_equal(t, r)
    ft = np.ascontiguousarray(tt).reshape(-1)
    return ft[k] if k >= 0 else ft[0] * 0


@njit(nogil=True)
def tile_pick(t, r, tt):
    """The tangent of the one-element tile ``r = tile_max(t)`` along ``tt``."""
    out = np.zeros(1, tt.dtype)
    out[0] = tile_pick_scalar(t, r[0], tt)
    return out


def like(x, c):
    return type(x)(c)


def _number(t):
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


@overload(tzero, jit_options={"nogil": True})
def _tzero(x):
    if isinstance(x, types.BaseTuple):
        n = len(x)
        src = "def impl(x):\n    return (" + "".join(f"tzero(x[{k}]), " for k in range(n)) + ")\n"
        ns = {"tzero": tzero}
        exec(src, ns)  # noqa: S102 - a fixed template
        return ns["impl"]
    if isinstance(x, types.Boolean):
        return lambda x: False
    if _number(x):
        ty = x

        def impl(x):
            return ty(0)
        return impl
    if isinstance(x, types.Array):
        return lambda x: np.zeros_like(x)
    return None


@overload(like, jit_options={"nogil": True})
def _like(x, c):
    if isinstance(x, (types.Float, types.Integer)):
        ty = x

        def impl(x, c):
            return ty(c)
        return impl
    return None
