"""The CPU's tile helpers: what generated code calls as ``_wk.tile_<name>``.

A tile is a C-contiguous numpy array of the tile's shape followed by its element's shape
(``(M, N, 3)`` for an ``(M, N)`` tile of ``vec3``). Every helper returns a new array and never
modifies an operand: generated code treats tiles as values. On the CPU a tile block is one
thread (Warp's ``block_dim`` resolves to 1 there), so nothing here synchronises; the adjoints of
loads add into the adjoint array atomically, since the blocks of a launch run on every core.

Loads read zero outside the array and stores skip those elements, as Warp pads a tile that
overhangs its array.
"""
from __future__ import annotations

import types

import numba
import numpy as np

from ..core.diskcache import njit
from . import _portable
from . import tile_kernels as _tk
from .atomics import atomic_add, cas_half_bits  # noqa: F401 - cas_half_bits: see _composed

_jit = njit(error_model="numpy", nogil=True)


# ------------------------------------------------------------------------------ memory
@_jit
def tile_load1(a, o0, n0):
    if 0 <= o0 and o0 + n0 <= a.shape[0]:  # inside the array: one copy
        if a.ndim == 1:  # (a constant: Numba prunes the other branch)
            out = np.empty(n0, a.dtype)
            for i in range(n0):
                out[i] = a[o0 + i]
            return out
        return a[o0:o0 + n0].copy()
    out = np.zeros((n0,) + a.shape[1:], a.dtype)
    for i in range(n0):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            out[i] = a[r]
    return out


@_jit
def tile_load2(a, o0, o1, n0, n1):
    if 0 <= o0 and o0 + n0 <= a.shape[0] and 0 <= o1 and o1 + n1 <= a.shape[1]:
        if a.ndim == 2:
            out = np.empty((n0, n1), a.dtype)
            for i in range(n0):
                for j in range(n1):
                    out[i, j] = a[o0 + i, o1 + j]
            return out
        return a[o0:o0 + n0, o1:o1 + n1].copy()  # one copy (C order)
    out = np.zeros((n0, n1) + a.shape[2:], a.dtype)
    for i in range(n0):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            for j in range(n1):
                c = o1 + j
                if 0 <= c < a.shape[1]:
                    out[i, j] = a[r, c]
    return out


@_jit
def tile_load3(a, o0, o1, o2, n0, n1, n2):
    out = np.zeros((n0, n1, n2) + a.shape[3:], a.dtype)
    for i in range(n0):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            for j in range(n1):
                c = o1 + j
                if 0 <= c < a.shape[1]:
                    for k in range(n2):
                        d = o2 + k
                        if 0 <= d < a.shape[2]:
                            out[i, j, k] = a[r, c, d]
    return out


@_jit
def tile_load4(a, o0, o1, o2, o3, n0, n1, n2, n3):
    out = np.zeros((n0, n1, n2, n3) + a.shape[4:], a.dtype)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                for m in range(n3):
                    r, c, d, e = o0 + i, o1 + j, o2 + k, o3 + m
                    if 0 <= r < a.shape[0] and 0 <= c < a.shape[1] and 0 <= d < a.shape[2] \
                            and 0 <= e < a.shape[3]:
                        out[i, j, k, m] = a[r, c, d, e]
    return out


# ------------------------------------------------------------------------------ views
# A load that nothing writes over while the tile lives (the transpiler's pass ``tile_views``
# decides) reads the array in place: ``tile_viewN`` is ``tile_loadN`` but returns the region
# itself where that is a C-contiguous array of the tile's shape (inside the array, every axis
# past the first whole), so a block's loads allocate and copy nothing. Elsewhere (a padded or
# strided region, an array typed non-contiguous or read-only) it is ``tile_loadN``'s copy. The
# choice of code is made per array type when Numba types the call, so both branches return the
# same type as ``tile_loadN`` and the tile's later helpers compile as before.
def _inside_rows(a, offs, ns):
    """Python's check (``NUMBA_DISABLE_JIT``): the region is whole rows of a C array."""
    return a.flags.c_contiguous and a.flags.writeable and 0 <= offs[0] and \
        offs[0] + ns[0] <= a.shape[0] and \
        all(o == 0 and n == a.shape[k + 1] for k, (o, n) in enumerate(zip(offs[1:], ns[1:])))


def tile_view1(a, o0, n0):
    return a[o0:o0 + n0] if _inside_rows(a, (o0,), (n0,)) else tile_load1(a, o0, n0)


def tile_view2(a, o0, o1, n0, n1):
    if _inside_rows(a, (o0, o1), (n0, n1)):
        return a[o0:o0 + n0]
    return tile_load2(a, o0, o1, n0, n1)


def tile_view3(a, o0, o1, o2, n0, n1, n2):
    if _inside_rows(a, (o0, o1, o2), (n0, n1, n2)):
        return a[o0:o0 + n0]
    return tile_load3(a, o0, o1, o2, n0, n1, n2)


def tile_view4(a, o0, o1, o2, o3, n0, n1, n2, n3):
    if _inside_rows(a, (o0, o1, o2, o3), (n0, n1, n2, n3)):
        return a[o0:o0 + n0]
    return tile_load4(a, o0, o1, o2, o3, n0, n1, n2, n3)


def _viewable(a):
    """Whether a slice of the first axis of arrays of type ``a`` has the copy's type."""
    return isinstance(a, numba.types.Array) and a.layout == "C" and a.mutable


def _bind_views():
    from numba.core import cgutils
    from numba.extending import intrinsic, overload
    from numba.np.arrayobj import make_array, populate_array
    opts = {"error_model": "numpy", "nogil": True}

    @intrinsic
    def _rows(typingctx, a, o0, n0):
        """``a[o0:o0 + n0]`` (C layout, the range inside ``a``) without an owner: no reference
        count to raise and lower. The blocks of a launch, on every core, each take views of
        the same argument; counting each on the argument's one shared count made a 16 x 16
        product 1.2x slower than copying. The array outlives every view: a launch holds its
        arguments, and a view is read only inside its block (the pass ``tile_views``)."""
        def codegen(context, builder, sig, args):
            ty = sig.args[0]
            src = make_array(ty)(context, builder, args[0])
            start = context.cast(builder, args[1], sig.args[1], numba.types.intp)
            count = context.cast(builder, args[2], sig.args[2], numba.types.intp)
            shape = cgutils.unpack_tuple(builder, src.shape, ty.ndim)
            strides = cgutils.unpack_tuple(builder, src.strides, ty.ndim)
            byte = builder.mul(start, strides[0])
            data = builder.inttoptr(builder.add(builder.ptrtoint(src.data, byte.type), byte),
                                    src.data.type)
            out = make_array(ty)(context, builder)
            populate_array(out, data=data, shape=cgutils.pack_array(builder, [count] + shape[1:]),
                           strides=src.strides, itemsize=src.itemsize, meminfo=None)
            return out._getvalue()
        return a(a, o0, n0), codegen

    @overload(tile_view1, jit_options=opts)
    def _view1(a, o0, n0):
        if _viewable(a):
            def impl(a, o0, n0):
                if 0 <= o0 and o0 + n0 <= a.shape[0]:
                    return _rows(a, o0, n0)
                return tile_load1(a, o0, n0)
            return impl
        return lambda a, o0, n0: tile_load1(a, o0, n0)

    @overload(tile_view2, jit_options=opts)
    def _view2(a, o0, o1, n0, n1):
        if _viewable(a):
            def impl(a, o0, o1, n0, n1):
                if 0 <= o0 and o0 + n0 <= a.shape[0] and o1 == 0 and n1 == a.shape[1]:
                    return _rows(a, o0, n0)
                return tile_load2(a, o0, o1, n0, n1)
            return impl
        return lambda a, o0, o1, n0, n1: tile_load2(a, o0, o1, n0, n1)

    @overload(tile_view3, jit_options=opts)
    def _view3(a, o0, o1, o2, n0, n1, n2):
        if _viewable(a):
            def impl(a, o0, o1, o2, n0, n1, n2):
                if 0 <= o0 and o0 + n0 <= a.shape[0] and o1 == 0 and n1 == a.shape[1] and \
                        o2 == 0 and n2 == a.shape[2]:
                    return _rows(a, o0, n0)
                return tile_load3(a, o0, o1, o2, n0, n1, n2)
            return impl
        return lambda a, o0, o1, o2, n0, n1, n2: tile_load3(a, o0, o1, o2, n0, n1, n2)

    @overload(tile_view4, jit_options=opts)
    def _view4(a, o0, o1, o2, o3, n0, n1, n2, n3):
        if _viewable(a):
            def impl(a, o0, o1, o2, o3, n0, n1, n2, n3):
                if 0 <= o0 and o0 + n0 <= a.shape[0] and o1 == 0 and n1 == a.shape[1] and \
                        o2 == 0 and n2 == a.shape[2] and o3 == 0 and n3 == a.shape[3]:
                    return _rows(a, o0, n0)
                return tile_load4(a, o0, o1, o2, o3, n0, n1, n2, n3)
            return impl
        return lambda a, o0, o1, o2, o3, n0, n1, n2, n3: tile_load4(a, o0, o1, o2, o3, n0, n1,
                                                                   n2, n3)


if not numba.config.DISABLE_JIT:
    _bind_views()


@_jit
def tile_store4(a, o0, o1, o2, o3, t):
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            for k in range(t.shape[2]):
                for m in range(t.shape[3]):
                    r, c, d, e = o0 + i, o1 + j, o2 + k, o3 + m
                    if 0 <= r < a.shape[0] and 0 <= c < a.shape[1] and 0 <= d < a.shape[2] \
                            and 0 <= e < a.shape[3]:
                        a[r, c, d, e] = t[i, j, k, m]


@_jit
def tile_load_adj4(adj, o0, o1, o2, o3, g):
    for i in range(g.shape[0]):
        for j in range(g.shape[1]):
            for k in range(g.shape[2]):
                for m in range(g.shape[3]):
                    r, c, d, e = o0 + i, o1 + j, o2 + k, o3 + m
                    if 0 <= r < adj.shape[0] and 0 <= c < adj.shape[1] and \
                            0 <= d < adj.shape[2] and 0 <= e < adj.shape[3]:
                        atomic_add(adj, (r, c, d, e), g[i, j, k, m])


@_jit
def tile_atomic_add4(a, o0, o1, o2, o3, t):
    old = np.zeros(t.shape, t.dtype)
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            for k in range(t.shape[2]):
                for m in range(t.shape[3]):
                    r, c, d, e = o0 + i, o1 + j, o2 + k, o3 + m
                    if 0 <= r < a.shape[0] and 0 <= c < a.shape[1] and 0 <= d < a.shape[2] \
                            and 0 <= e < a.shape[3]:
                        old[i, j, k, m] = atomic_add(a, (r, c, d, e), t[i, j, k, m])
    return old


@_jit
def tile_store1(a, o0, t):
    if a.ndim == 1:  # scalars: the elements inside the array, no slice assignment
        for i in range(max(0, -o0), min(t.shape[0], a.shape[0] - o0)):
            a[o0 + i] = t[i]
        return
    if 0 <= o0 and o0 + t.shape[0] <= a.shape[0]:
        a[o0:o0 + t.shape[0]] = t
        return
    for i in range(t.shape[0]):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            a[r] = t[i]


@_jit
def tile_store2(a, o0, o1, t):
    if a.ndim == 2:
        for i in range(max(0, -o0), min(t.shape[0], a.shape[0] - o0)):
            for j in range(max(0, -o1), min(t.shape[1], a.shape[1] - o1)):
                a[o0 + i, o1 + j] = t[i, j]
        return
    if 0 <= o0 and o0 + t.shape[0] <= a.shape[0] and 0 <= o1 and o1 + t.shape[1] <= a.shape[1]:
        a[o0:o0 + t.shape[0], o1:o1 + t.shape[1]] = t
        return
    for i in range(t.shape[0]):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            for j in range(t.shape[1]):
                c = o1 + j
                if 0 <= c < a.shape[1]:
                    a[r, c] = t[i, j]


@_jit
def tile_store3(a, o0, o1, o2, t):
    for i in range(t.shape[0]):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            for j in range(t.shape[1]):
                c = o1 + j
                if 0 <= c < a.shape[1]:
                    for k in range(t.shape[2]):
                        d = o2 + k
                        if 0 <= d < a.shape[2]:
                            a[r, c, d] = t[i, j, k]


# the adjoints of loads: add a tile of scalars into the array's adjoint (per component of a
# vector or matrix array, on views of one component)
@_jit
def tile_load_adj1(adj, o0, g):
    for i in range(g.shape[0]):
        r = o0 + i
        if 0 <= r < adj.shape[0]:
            atomic_add(adj, r, g[i])


@_jit
def tile_load_adj2(adj, o0, o1, g):
    for i in range(g.shape[0]):
        r = o0 + i
        if 0 <= r < adj.shape[0]:
            for j in range(g.shape[1]):
                c = o1 + j
                if 0 <= c < adj.shape[1]:
                    atomic_add(adj, (r, c), g[i, j])


@_jit
def tile_load_adj3(adj, o0, o1, o2, g):
    for i in range(g.shape[0]):
        r = o0 + i
        if 0 <= r < adj.shape[0]:
            for j in range(g.shape[1]):
                c = o1 + j
                if 0 <= c < adj.shape[1]:
                    for k in range(g.shape[2]):
                        d = o2 + k
                        if 0 <= d < adj.shape[2]:
                            atomic_add(adj, (r, c, d), g[i, j, k])


# atomic adds of a tile of scalars into an array: the old values come back as a tile
@_jit
def tile_atomic_add1(a, o0, t):
    old = np.zeros(t.shape, t.dtype)
    for i in range(t.shape[0]):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            old[i] = atomic_add(a, r, t[i])
    return old


@_jit
def tile_atomic_add2(a, o0, o1, t):
    old = np.zeros(t.shape, t.dtype)
    for i in range(t.shape[0]):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            for j in range(t.shape[1]):
                c = o1 + j
                if 0 <= c < a.shape[1]:
                    old[i, j] = atomic_add(a, (r, c), t[i, j])
    return old


@_jit
def tile_atomic_add3(a, o0, o1, o2, t):
    old = np.zeros(t.shape, t.dtype)
    for i in range(t.shape[0]):
        r = o0 + i
        if 0 <= r < a.shape[0]:
            for j in range(t.shape[1]):
                c = o1 + j
                if 0 <= c < a.shape[1]:
                    for k in range(t.shape[2]):
                        d = o2 + k
                        if 0 <= d < a.shape[2]:
                            old[i, j, k] = atomic_add(a, (r, c, d), t[i, j, k])
    return old


# gathers and scatters along one axis through a 1-D tile of indices (Warp's *_indexed): the
# coordinate along ``axis`` is ``offset + idx[i]``; elements outside the array read zero and
# are skipped when written
@_jit
def _coord(o, i, idx, axis, d):
    return o + (idx[i] if d == axis else i)


@_jit
def tile_load_indexed1(a, idx, o0, n0):
    out = np.zeros((n0,) + a.shape[1:], a.dtype)
    for i in range(n0):
        r = o0 + idx[i]
        if 0 <= r < a.shape[0]:
            out[i] = a[r]
    return out


@_jit
def tile_load_indexed2(a, idx, axis, o0, o1, n0, n1):
    out = np.zeros((n0, n1) + a.shape[2:], a.dtype)
    for i in range(n0):
        r = _coord(o0, i, idx, axis, 0)
        if 0 <= r < a.shape[0]:
            for j in range(n1):
                c = _coord(o1, j, idx, axis, 1)
                if 0 <= c < a.shape[1]:
                    out[i, j] = a[r, c]
    return out


@_jit
def tile_store_indexed1(a, idx, o0, t, add):
    """Writes (``add`` False) or atomically adds ``t`` at the gathered places; the replaced
    values come back."""
    old = np.zeros(t.shape, t.dtype)
    for i in range(t.shape[0]):
        r = o0 + idx[i]
        if 0 <= r < a.shape[0]:
            if add:
                old[i] = atomic_add(a, r, t[i])
            else:
                old[i] = a[r]
                a[r] = t[i]
    return old


@_jit
def tile_store_indexed2(a, idx, axis, o0, o1, t, add):
    old = np.zeros(t.shape, t.dtype)
    for i in range(t.shape[0]):
        r = _coord(o0, i, idx, axis, 0)
        if 0 <= r < a.shape[0]:
            for j in range(t.shape[1]):
                c = _coord(o1, j, idx, axis, 1)
                if 0 <= c < a.shape[1]:
                    if add:
                        old[i, j] = atomic_add(a, (r, c), t[i, j])
                    else:
                        old[i, j] = a[r, c]
                        a[r, c] = t[i, j]
    return old


@_jit
def tile_load_indexed_adj1(adj, idx, o0, g):
    for i in range(g.shape[0]):
        r = o0 + idx[i]
        if 0 <= r < adj.shape[0]:
            atomic_add(adj, r, g[i])


@_jit
def tile_load_indexed_adj2(adj, idx, axis, o0, o1, g):
    for i in range(g.shape[0]):
        r = _coord(o0, i, idx, axis, 0)
        if 0 <= r < adj.shape[0]:
            for j in range(g.shape[1]):
                c = _coord(o1, j, idx, axis, 1)
                if 0 <= c < adj.shape[1]:
                    atomic_add(adj, (r, c), g[i, j])


# float16: arrays hold half bits (uint16); a tile of float16 is float32 values rounded to half
_h2f = _jit(_portable.h2f)
_f2h = _jit(_portable.f2h)
h2f, f2h = _h2f, _f2h  # the names the composed helpers below call


def _composed(fn):
    """A helper of ``_portable.COMPOSED`` compiled with its calls resolved in this module
    (as ``helpers`` binds them; this module does not import ``helpers``)."""
    return _jit(types.FunctionType(fn.__code__, globals(), fn.__name__, fn.__defaults__))


half_rmw = _composed(_portable.half_rmw)
_atomic_add_f16 = _composed(_portable.atomic_add_f16)


@_jit
def tile_h2f(bits):
    """A float16 tile read from an array's half bits: float32 values."""
    out = np.empty(bits.shape, np.float32)
    fo = out.reshape(-1)
    fb = np.ascontiguousarray(bits).reshape(-1)
    for k in range(fb.shape[0]):
        fo[k] = _h2f(fb[k])
    return out


@_jit
def tile_f2h(t):
    """The half bits of a float16 tile (to store into an array)."""
    out = np.empty(t.shape, np.uint16)
    fo = out.reshape(-1)
    ft = np.ascontiguousarray(t).reshape(-1)
    for k in range(ft.shape[0]):
        fo[k] = _f2h(ft[k])
    return out


@_jit
def tile_round_f16(t):
    """Every element rounded to the nearest float16 (a float16 tile's operations round, as
    each operation on Warp's half does)."""
    out = np.empty(t.shape, np.float32)
    fo = out.reshape(-1)
    ft = np.ascontiguousarray(t).reshape(-1)
    for k in range(ft.shape[0]):
        fo[k] = _h2f(_f2h(ft[k]))
    return out


@_jit
def tile_load_adj_h1(adj, o0, g):
    """The adjoint of a load from a float16 array: added into its half bits (atomically)."""
    for i in range(g.shape[0]):
        r = o0 + i
        if 0 <= r < adj.shape[0]:
            _atomic_add_f16(adj, r, g[i])


@_jit
def tile_load_adj_h2(adj, o0, o1, g):
    for i in range(g.shape[0]):
        r = o0 + i
        if 0 <= r < adj.shape[0]:
            for j in range(g.shape[1]):
                c = o1 + j
                if 0 <= c < adj.shape[1]:
                    _atomic_add_f16(adj, (r, c), g[i, j])


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
    ``tile_views``: allocating that tile cost more than summing 256 elements)."""
    f = t.reshape(-1)
    n = f.shape[0]
    # eight running sums, element k into sum k % 8, added pairwise at the end: LLVM keeps
    # them in one vector register (an order it may not choose itself without fast math), 5x
    # faster than one chain of dependent additions, and more accurate (about a sixth of the
    # error on 256 uniform floats). Warp's CPU adds in order with one accumulator, its GPU in a
    # tree across lanes; tiles of fewer than 8 elements are summed in order, as before.
    z = t.dtype.type(0)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = z
    k = 0
    while k + 8 <= n:
        s0 += f[k]
        s1 += f[k + 1]
        s2 += f[k + 2]
        s3 += f[k + 3]
        s4 += f[k + 4]
        s5 += f[k + 5]
        s6 += f[k + 6]
        s7 += f[k + 7]
        k += 8
    s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    while k < n:
        s += f[k]
        k += 1
    return s


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
