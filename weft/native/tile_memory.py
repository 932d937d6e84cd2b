"""Tiles and arrays: the loads, views, stores, atomic adds and gathers that generated code calls
as ``_wk.tile_<name>`` (re-exported by :mod:`weft.native.tiles`), with the float16 conversions.

Loads read zero outside the array and stores skip those elements, as Warp pads a tile that
overhangs its array. The adjoints of loads add into the adjoint array atomically, since the blocks
of a launch run on every core. Copies of rows index with unsigned integers: with signed ones, the
check for negative indices kept LLVM from vectorising them (a 16 x 16 store took 3x as long).
"""
from __future__ import annotations

import types

import numba
import numpy as np

from ..core.diskcache import njit
from . import _portable
from .simd import copy_block
from .atomics import atomic_add, cas_half_bits  # noqa: F401 - cas_half_bits: see _composed

_jit = njit(error_model="numpy", nogil=True)

# ------------------------------------------------------------------------------ memory
@_jit
def tile_load1(a, o0, n0):
    if 0 <= o0 and o0 + n0 <= a.shape[0]:  # inside the array: one copy
        if a.ndim == 1:  # (a constant: Numba prunes the other branch)
            out = np.empty(n0, a.dtype)
            u0 = np.uint64(o0)
            for i in range(np.uint64(n0)):
                out[i] = a[u0 + i]
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
            if o1 == 0 and n1 == a.shape[1] and a.flags.c_contiguous:
                copy_block(out, 0, a, o0 * n1, n0 * n1)   # whole rows: one flat copy
                return out
            u1 = np.uint64(o1)
            for i in range(n0):
                ai = a[o0 + i]
                oi = out[i]
                for j in range(np.uint64(n1)):
                    oi[j] = ai[u1 + j]
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
        lo = max(0, -o0)
        hi = min(t.shape[0], a.shape[0] - o0)
        if hi > lo:
            ua = np.uint64(o0 + lo)
            ut = np.uint64(lo)
            for i in range(np.uint64(hi - lo)):
                a[ua + i] = t[ut + i]
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
        lo = max(0, -o1)
        hi = min(t.shape[1], a.shape[1] - o1)
        r0 = max(0, -o0)
        r1 = min(t.shape[0], a.shape[0] - o0)
        if hi > lo and r1 > r0 and o1 == 0 and hi == t.shape[1] == a.shape[1] and \
                a.flags.c_contiguous and t.flags.c_contiguous:
            copy_block(a, (o0 + r0) * hi, t, r0 * hi, (r1 - r0) * hi)   # whole rows
            return
        if hi > lo:
            ua = np.uint64(o1 + lo)
            ut = np.uint64(lo)
            for i in range(max(0, -o0), min(t.shape[0], a.shape[0] - o0)):
                ai = a[o0 + i]
                ti = t[i]
                for j in range(np.uint64(hi - lo)):
                    ai[ua + j] = ti[ut + j]
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
def tile_add_plain1(adj, o0, g):
    """:func:`tile_load_adj1` without atomics: for an array one thread alone adds into (a
    thread's private copy of a load's gradient, or the array itself for thread 0;
    ``weft.transpiler.tile_views.private_tile_adds``)."""
    lo = max(0, -o0)
    hi = min(g.shape[0], adj.shape[0] - o0)
    for i in range(lo, hi):
        adj[o0 + i] += g[i]


@_jit
def tile_add_plain2(adj, o0, o1, g):
    """:func:`tile_load_adj2` without atomics (see :func:`tile_add_plain1`)."""
    lo = max(0, -o1)
    hi = min(g.shape[1], adj.shape[1] - o1)
    for i in range(max(0, -o0), min(g.shape[0], adj.shape[0] - o0)):
        ai = adj[o0 + i]
        gi = g[i]
        for j in range(lo, hi):
            ai[o1 + j] += gi[j]


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
