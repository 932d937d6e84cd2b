"""The CPU's tile helpers: what generated code calls as ``_wk.tile_<name>``.

A tile is a C-contiguous numpy array of the tile's shape followed by its element's shape
(``(M, N, 3)`` for an ``(M, N)`` tile of ``vec3``). Every helper returns a new array and never
modifies an operand: generated code treats tiles as values. On the CPU a tile block is one
thread (Warp's ``block_dim`` resolves to 1 there), so nothing here synchronises.

This module holds the element, shape, reduction and linear-algebra helpers; the ones that touch
arrays are in :mod:`weft.native.tile_memory`, bound here too.
"""
from __future__ import annotations

import numpy as np

from ..core.diskcache import njit
from . import tile_kernels as _tk
from .simd import sum_flat
from . import tile_memory

_jit = njit(error_model="numpy", nogil=True)

#: the loads, views, stores, atomic adds and gathers (:mod:`weft.native.tile_memory`) are tile
#: helpers too
globals().update({n: v for n, v in vars(tile_memory).items() if n.startswith("tile_")})


# ------------------------------------------------------------------------------ elements
@_jit
def tile_insert(t, idx, x):
    """A copy of ``t`` with element ``idx`` (a tuple) set to ``x`` (a scalar, or a vector or
    matrix as the tuple generated code holds)."""
    out = t.copy()
    _set(out, idx, x)
    return out


@_jit
def _set(out, idx, x):
    e = out[idx]
    if isinstance(x, tuple):
        flat = e.reshape(-1)
        for k in range(len(x)):
            flat[k] = x[k]
    else:
        out[idx] = x


@_jit
def tile_zero_at(t, idx):
    """A copy of ``t`` with element ``idx`` zero (the adjoint of an insert, for the tile)."""
    out = t.copy()
    out[idx] = 0
    return out


@_jit
def tile_onehot(t, idx, g):
    """A tile shaped like ``t``, zero but at ``idx``, which holds ``g`` (an extracted element's
    adjoint)."""
    out = np.zeros(t.shape, t.dtype)
    _set(out, idx, g)
    return out


@_jit
def tile_get_vec(t, idx):
    """The vector element ``idx`` of a tile of vectors, as a flat array (read into a tuple)."""
    return t[idx].reshape(-1)


# ------------------------------------------------------------------------------ tile stacks
@_jit
def tile_stack_push(count, capacity, has_value):
    """The slot a push takes (the count grows), or -1 (no value, or the stack is full)."""
    if not has_value or count[0] >= capacity:
        return np.int32(-1)
    slot = count[0]
    count[0] = slot + 1
    return np.int32(slot)


@_jit
def tile_stack_pop(count):
    """The slot a pop takes (the count shrinks), or -1 (the stack is empty)."""
    if count[0] <= 0:
        return np.int32(-1)
    count[0] -= 1
    return np.int32(count[0])


# ------------------------------------------------------------------------------ shape
@_jit
def tile_transpose(t):
    return np.ascontiguousarray(np.swapaxes(t, 0, 1))


@_jit
def tile_full(shape, value, like):
    """A tile of ``shape`` (with the element shape of ``like``) filled with scalar ``value``."""
    out = np.empty(shape + like.shape[len(shape):], like.dtype)
    out[...] = value
    return out


@_jit
def tile_fill(t, x):
    """A tile shaped like ``t`` with every element ``x`` (a scalar, or a flat array of an
    element's components)."""
    out = np.empty(t.shape, t.dtype)
    out[...] = x
    return out


@_jit
def tile_reshape(t, shape):
    """``t`` with a new shape (its elements in row-major order)."""
    return np.ascontiguousarray(t).copy().reshape(shape)


@_jit
def tile_broadcast(t, padded, shape):
    """``t`` (its shape left-padded with ones: ``padded``) broadcast to ``shape``, as numpy."""
    return np.ascontiguousarray(np.broadcast_to(np.ascontiguousarray(t).reshape(padded), shape))


@_jit
def tile_unbroadcast(g, padded, shape):
    """The adjoint of :func:`tile_broadcast`: ``g`` summed over the broadcast axes, in the
    source's ``shape``."""
    out = np.zeros(padded, g.dtype)
    fo = out.reshape(-1)
    fg = np.ascontiguousarray(g).reshape(-1)
    for k in range(fg.shape[0]):
        rem = k
        dst = 0
        stride = 1
        for ax in range(len(padded) - 1, -1, -1):
            i = rem % g.shape[ax]
            rem //= g.shape[ax]
            if padded[ax] != 1:
                dst += i * stride
            stride *= padded[ax]
        fo[dst] += fg[k]
    return out.reshape(shape)


# ------------------------------------------------------------------------------ reductions
@_jit
def tile_sum_scalar(t):
    """The sum of a tile of scalars, as a scalar: ``tile_sum``'s one element, which generated
    code that only stores it or reads it at ``[0]`` takes without the one-element tile (pass
    ``tile_views``: allocating that tile cost more than summing 256 elements).

    Summed by ``simd.sum_flat``: 32 running sums in two vectors, added pairwise at the end, a
    fixed order (the same bits on every machine), 4-5x faster than one chain of dependent
    additions and more accurate. Warp's CPU adds in order with one accumulator, its GPU in a
    tree across lanes; tiles of fewer than 32 elements are summed in order, as Warp's CPU."""
    if t.ndim == 1:
        return sum_flat(t)
    return sum_flat(t.reshape(-1))


@_jit
def tile_sum(t):
    """The sum of a tile of scalars, as a one-element tile (Warp's ``tile_sum``)."""
    out = np.empty(1, t.dtype)
    out[0] = tile_sum_scalar(t)
    return out


@_jit
def tile_max_scalar(t):
    return np.max(t)


@_jit
def tile_min_scalar(t):
    return np.min(t)


@_jit
def tile_store_one(a, o0, x):
    """``tile_store1`` of a one-element tile of scalars held as the scalar ``x``: ``a[o0]``,
    skipped outside the array."""
    if 0 <= o0 < a.shape[0]:
        a[o0] = x


@_jit
def tile_sum_vec(t, k):
    """The sum of a tile of ``k``-component elements, as a one-element tile."""
    out = np.zeros((1, k), t.dtype)
    flat = t.reshape((-1, k))
    for i in range(flat.shape[0]):
        for c in range(k):
            out[0, c] += flat[i, c]
    return out


@_jit
def tile_max(t):
    out = np.empty(1, t.dtype)
    out[0] = tile_max_scalar(t)
    return out


@_jit
def tile_min(t):
    out = np.empty(1, t.dtype)
    out[0] = tile_min_scalar(t)
    return out


@_jit
def tile_argmax(t):
    out = np.empty(1, np.int32)
    out[0] = np.argmax(t)
    return out


@_jit
def tile_argmin(t):
    out = np.empty(1, np.int32)
    out[0] = np.argmin(t)
    return out


@_jit
def tile_extreme_adj(t, r, g):
    """The adjoint of ``tile_max``/``tile_min``: all of ``g[0]`` to the first element equal to
    the result ``r[0]``."""
    out = np.zeros(t.shape, t.dtype)
    ft = t.reshape(-1)
    fo = out.reshape(-1)
    for k in range(ft.shape[0]):
        if ft[k] == r[0]:
            fo[k] = g[0]
            break
    return out


@_jit
def tile_sum_adj(t, g):
    out = np.empty(t.shape, t.dtype)
    out[...] = g[0]
    return out


@_jit
def tile_sum_vec_adj(t, g):
    out = np.empty(t.shape, t.dtype)
    flat = out.reshape((-1, g.shape[1]))
    for i in range(flat.shape[0]):
        for c in range(g.shape[1]):
            flat[i, c] = g[0, c]
    return out


# ------------------------------------------------------------------------------ linear algebra
# the numeric cores (weft.native.tile_kernels): tile_matmul, tile_cholesky, tile_fft, ...
_OWN = {"argmin", "argmax",  # this module's return one-element tiles
        "matmul_acc"}  # below: its product fused, its scaling not
#: products whose multiply-adds are fused (LLVM's ``contract``), as Warp's CPU GEMM fuses each
#: step (``muladd``): ``tile_matmul`` equals Warp's bit for bit, and runs faster
_FUSED = {"matmul", "matmul_adj", "matmul_jvp", "matmul_acc_adj", "matmul_acc_jvp"}
_jit_fused = njit(error_model="numpy", nogil=True, fastmath={"contract"})
for _n in _tk.TILE_KERNELS:
    if _n not in _OWN:
        globals()["tile_" + _n] = (_jit_fused if _n in _FUSED else _jit)(getattr(_tk, _n))


@_jit
def tile_matmul_acc(a, b, out, alpha, beta):
    """``alpha * a @ b + beta * out`` (``tile_kernels.matmul_acc``) as Warp computes it: the
    product with fused multiply-adds, then ``alpha * c + beta * out`` rounded step by step."""
    c = tile_matmul(a, b)  # noqa: F821 - bound above
    T = out.dtype.type
    al = T(alpha)
    be = T(beta)
    if be != T(0):
        o = np.ascontiguousarray(out)
        for i in range(c.shape[0]):
            for j in range(c.shape[1]):
                c[i, j] = al * c[i, j] + be * o[i, j]
    else:
        for i in range(c.shape[0]):
            for j in range(c.shape[1]):
                c[i, j] = al * c[i, j]
    return c


@_jit
def tile_matmul_adj_a(g, b):
    """``g @ b.T``."""
    return tile_matmul(g, b.T)  # noqa: F821 - bound above


@_jit
def tile_matmul_adj_b(a, g):
    """``a.T @ g``."""
    return tile_matmul(a.T, g)  # noqa: F821 - bound above


#: the helpers whose result never shares memory with an argument (a new array, a scalar): a
#: tile read only by these and by operators can be a view of its array (the transpiler's pass
#: ``tile_views``); ``tests/tiles/test_tile_views.py`` checks each
FRESH = frozenset({
    "tile_sum", "tile_sum_vec", "tile_max", "tile_min", "tile_argmax", "tile_argmin",
    "tile_sum_adj", "tile_sum_vec_adj", "tile_extreme_adj", "tile_insert", "tile_zero_at",
    "tile_onehot", "tile_fill", "tile_reshape", "tile_unbroadcast", "tile_matmul_acc",
    "tile_matmul_adj_a", "tile_matmul_adj_b", "tile_sum_scalar", "tile_max_scalar",
    "tile_min_scalar",
} | {"tile_" + n for n in _tk.TILE_KERNELS})


def _names():
    return tuple(n for n, v in globals().items() if n.startswith("tile_") and callable(v))


#: every helper generated code calls (``_wk.<name>``)
TILE_HELPERS = _names()
