"""Cooperative tiles on CUDA: the operations whose order or indices the CPU fixes (scans,
``tile_sort``, indexed loads and stores), for generated CUDA code (``_wk.<name>``, re-exported
by :mod:`weft.native.cuda_helpers`). The conventions are :mod:`weft.native.cuda_tiles`': the
result in the buffer given, a barrier before and after. Where the CPU's order decides the
result (a scan's roundings, a stable sort, the last of repeated writes), one thread does the
work in that order."""
from __future__ import annotations

import math

from numba import cuda

from .cuda_tiles import _dev, tile_view


# ------------------------------------------------------------------------------ scans
# Over the flattened row-major tile, by lane 0 between two barriers, in the CPU's order
# (:mod:`weft.native.tile_kernels`' ``scan_*``): every prefix is the CPU's, bit for bit. A scan
# is a chain of dependent additions; the block's other lanes wait at the closing barrier.
@_dev
def tile_scan_inclusive_into(out, a):
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        f = tile_view(out, out.size)
        x = tile_view(a, a.size)
        acc = x.dtype.type(0)
        for i in range(x.size):
            acc = acc + x[i]
            f[i] = acc
    cuda.syncthreads()


@_dev
def tile_scan_exclusive_into(out, a):
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        f = tile_view(out, out.size)
        x = tile_view(a, a.size)
        acc = x.dtype.type(0)
        for i in range(x.size):
            f[i] = acc
            acc = acc + x[i]
    cuda.syncthreads()


@_dev
def _scan_extreme(out, a, da, big, tangent):
    """The running maximum (``big``) or minimum of ``a`` with C's ``fmax``/``fmin`` (a NaN
    element skipped); with ``tangent``, ``da`` at the running extreme's element instead."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and a.size > 0:
        f = tile_view(out, out.size)
        x = tile_view(a, a.size)
        d = tile_view(da, da.size)
        acc = x[0]
        w = 0
        f[0] = d[0] if tangent else acc
        for i in range(1, x.size):
            xi = x[i]
            if (not acc >= xi if big else not acc <= xi) and xi == xi:
                acc = xi
                w = i
            f[i] = d[w] if tangent else acc
    cuda.syncthreads()


@_dev
def tile_scan_max_inclusive_into(out, a):
    _scan_extreme(out, a, a, True, False)


@_dev
def tile_scan_min_inclusive_into(out, a):
    _scan_extreme(out, a, a, False, False)


@_dev
def tile_scan_max_inclusive_jvp_into(out, a, da):
    _scan_extreme(out, a, da, True, True)


@_dev
def tile_scan_min_inclusive_jvp_into(out, a, da):
    _scan_extreme(out, a, da, False, True)


@_dev
def _scan_sum_adj(out, g, inclusive):
    """The adjoint of a prefix sum: the reverse scan of ``g`` (``sum_{j >= i}``, or ``j > i``
    when not ``inclusive``)."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        f = tile_view(out, out.size)
        x = tile_view(g, g.size)
        acc = f.dtype.type(0)
        for i in range(x.size - 1, -1, -1):
            if inclusive:
                acc = acc + x[i]
                f[i] = acc
            else:
                f[i] = acc
                acc = acc + x[i]
    cuda.syncthreads()


@_dev
def tile_scan_inclusive_adj_into(out, a, g):
    _scan_sum_adj(out, g, True)


@_dev
def tile_scan_exclusive_adj_into(out, a, g):
    _scan_sum_adj(out, g, False)


@_dev
def _scan_extreme_adj(out, a, g, big):
    """The adjoint of a running maximum (``big``) or minimum: ``g[i]`` to the element that is
    the running extreme at ``i`` (the earliest on ties, as the forward keeps it)."""
    cuda.syncthreads()
    f = tile_view(out, out.size)
    for e in range(cuda.threadIdx.x, f.size, cuda.blockDim.x):
        f[e] = 0
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and a.size > 0:
        x = tile_view(a, a.size)
        d = tile_view(g, g.size)
        acc = x[0]
        w = 0
        f[0] += d[0]
        for i in range(1, x.size):
            xi = x[i]
            if (not acc >= xi if big else not acc <= xi) and xi == xi:
                acc = xi
                w = i
            f[w] += d[i]
    cuda.syncthreads()


@_dev
def tile_scan_max_inclusive_adj_into(out, a, g):
    _scan_extreme_adj(out, a, g, True)


@_dev
def tile_scan_min_inclusive_adj_into(out, a, g):
    _scan_extreme_adj(out, a, g, False)


# ------------------------------------------------------------------------------ sort
@_dev
def _before(a, b):
    """Whether key ``a`` sorts strictly before ``b``: ascending, ``-0.0`` before ``+0.0``, NaNs
    last (the CPU's order, :func:`weft.native.tile_kernels.sort`)."""
    if a < b:
        return True
    if a == b:
        return a == 0 and math.copysign(1.0, a) < math.copysign(1.0, b)
    return a == a and b != b


@_dev
def tile_sort_into(ok, ov, keys, values):
    """``ok``/``ov`` = ``keys`` sorted and ``values`` permuted with them, stably: lane 0
    inserts each key in turn. A stable sort's result is unique, so it is the CPU's (a merge
    sort with the same order), bit for bit."""
    cuda.syncthreads()
    n = keys.size
    inner = values.size // n if n > 0 else 0
    fv = tile_view(ov, ov.size)
    gv = tile_view(values, values.size)
    if cuda.threadIdx.x == 0:
        for i in range(n):
            x = keys[i]
            j = i
            while j > 0 and _before(x, ok[j - 1]):
                ok[j] = ok[j - 1]
                for c in range(inner):
                    fv[j * inner + c] = fv[(j - 1) * inner + c]
                j -= 1
            ok[j] = x
            for c in range(inner):
                fv[j * inner + c] = gv[i * inner + c]
    cuda.syncthreads()


# ------------------------------------------------------------------------------ indexed memory
# (``tile_load_indexed``/``tile_store_indexed``: along axis ``axis`` the tile's row ``i`` is
# the array's row ``o + idx[i]``; the other axes as a plain load's. Scalar tiles of 1 or 2 axes.)
@_dev
def tile_load_indexed1_into(out, a, idx, o0):
    cuda.syncthreads()
    for i in range(cuda.threadIdx.x, out.shape[0], cuda.blockDim.x):
        r = o0 + idx[i]
        out[i] = a[r] if 0 <= r < a.shape[0] else 0
    cuda.syncthreads()


@_dev
def _coords(e, n1, idx, axis, o0, o1):
    i = e // n1
    j = e - i * n1
    return i, j, o0 + (idx[i] if axis == 0 else i), o1 + (idx[j] if axis == 1 else j)


@_dev
def tile_load_indexed2_into(out, a, idx, axis, o0, o1):
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i, j, r, c = _coords(e, out.shape[1], idx, axis, o0, o1)
        out[i, j] = a[r, c] if 0 <= r < a.shape[0] and 0 <= c < a.shape[1] else 0
    cuda.syncthreads()


@_dev
def tile_load_indexed_adj1(adj, idx, o0, g):
    cuda.syncthreads()
    for i in range(cuda.threadIdx.x, g.shape[0], cuda.blockDim.x):
        r = o0 + idx[i]
        if 0 <= r < adj.shape[0]:
            cuda.atomic.add(adj, r, g[i])
    cuda.syncthreads()


@_dev
def tile_load_indexed_adj2(adj, idx, axis, o0, o1, g):
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, g.size, cuda.blockDim.x):
        i, j, r, c = _coords(e, g.shape[1], idx, axis, o0, o1)
        if 0 <= r < adj.shape[0] and 0 <= c < adj.shape[1]:
            cuda.atomic.add(adj, (r, c), g[i, j])
    cuda.syncthreads()


@_dev
def tile_store_indexed1_into(old, a, idx, o0, t, add):
    """The tile written (``add`` False) or added atomically at the gathered places, ``old``
    the values replaced. Writes go in the CPU's order, by lane 0 (a repeated index: the last
    write stays, as on the CPU); adds are shared among the lanes."""
    cuda.syncthreads()
    lane, lanes = cuda.threadIdx.x, cuda.blockDim.x
    if not add:
        lane, lanes = (0, 1) if cuda.threadIdx.x == 0 else (t.shape[0], 1)
    for i in range(lane, t.shape[0], lanes):
        r = o0 + idx[i]
        old[i] = 0
        if 0 <= r < a.shape[0]:
            if add:
                old[i] = cuda.atomic.add(a, r, t[i])
            else:
                old[i] = a[r]
                a[r] = t[i]
    cuda.syncthreads()


@_dev
def tile_store_indexed2_into(old, a, idx, axis, o0, o1, t, add):
    cuda.syncthreads()
    lane, lanes = cuda.threadIdx.x, cuda.blockDim.x
    if not add:
        lane, lanes = (0, 1) if cuda.threadIdx.x == 0 else (t.size, 1)
    for e in range(lane, t.size, lanes):
        i, j, r, c = _coords(e, t.shape[1], idx, axis, o0, o1)
        old[i, j] = 0
        if 0 <= r < a.shape[0] and 0 <= c < a.shape[1]:
            if add:
                old[i, j] = cuda.atomic.add(a, (r, c), t[i, j])
            else:
                old[i, j] = a[r, c]
                a[r, c] = t[i, j]
    cuda.syncthreads()
