"""Numeric cores of the order-dependent tile operations on the CPU, each over the flattened
row-major tile: ``sort`` (stable), the prefix scans (sums, ``fmax``/``fmin``) with their
adjoints and tangents, and ``argmin``/``argmax`` (the first extreme element). Each is
self-contained and compiled on its own with ``numba.njit``; :mod:`weft.native.tile_kernels`
gathers them with the other families and states the conventions and Warp semantics they
follow."""
import math

import numpy as np


# ------------------------------------------------------------------------------------------
# sort
# ------------------------------------------------------------------------------------------

def sort(keys, values):
    """Sort ``keys`` ascending (over the flattened row-major tile) and permute ``values``
    (same leading shape as ``keys``; any trailing element shape and dtype) with them; returns
    ``(sorted_keys, permuted_values)`` in the input shapes. Stable (bottom-up merge sort).
    Order: ``-0.0`` before ``+0.0`` (as Warp's radix sort, which orders the float bit
    patterns), NaNs last. Warp documents its sort as not stable, so equal keys may come out in
    another order there (its CPU bitonic path for tiles up to 2048 keys also treats -0 == +0,
    and does not handle NaN or, for sizes that are not powers of two, +inf keys: they are
    lost to its FLT_MAX padding)."""
    keys = np.ascontiguousarray(keys)
    values = np.ascontiguousarray(values)
    n = keys.size
    k = keys.reshape(n)
    inner = values.size // n if n > 0 else 0
    v = values.reshape((n, inner))
    perm = np.arange(n)
    tmp = np.empty(n, perm.dtype)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            t = lo
            while i < mid and j < hi:
                xr = k[perm[j]]
                xl = k[perm[i]]
                right_first = xr < xl
                if not right_first:
                    if xr == xl:
                        right_first = xr == 0 and math.copysign(1.0, xr) < math.copysign(1.0, xl)
                    else:
                        right_first = xr == xr and xl != xl
                if right_first:
                    tmp[t] = perm[j]
                    j += 1
                else:
                    tmp[t] = perm[i]
                    i += 1
                t += 1
            while i < mid:
                tmp[t] = perm[i]
                i += 1
                t += 1
            while j < hi:
                tmp[t] = perm[j]
                j += 1
                t += 1
            lo = hi
        perm, tmp = tmp, perm
        width *= 2
    sk = np.empty(n, keys.dtype)
    sv = np.empty((n, inner), values.dtype)
    for i in range(n):
        p = perm[i]
        sk[i] = k[p]
        for c in range(inner):
            sv[i, c] = v[p, c]
    return sk.reshape(keys.shape), sv.reshape(values.shape)


# ------------------------------------------------------------------------------------------
# scans (over the flattened row-major tile; the result keeps the input's shape)
# ------------------------------------------------------------------------------------------

def scan_inclusive(a):
    """Inclusive prefix sums: ``r[i] = a[0] + ... + a[i]`` (summed left to right from 0)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(a.size):
        acc = acc + x[i]
        out[i] = acc
    return out.reshape(a.shape)


def scan_exclusive(a):
    """Exclusive prefix sums: ``r[0] = 0``, ``r[i] = a[0] + ... + a[i-1]``."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(a.size):
        out[i] = acc
        acc = acc + x[i]
    return out.reshape(a.shape)


def scan_max_inclusive(a):
    """Inclusive prefix maxima with C ``fmax`` (a NaN element is skipped; NaN only while all
    elements so far are NaN)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        out[0] = acc
        for i in range(1, a.size):
            xi = x[i]
            if not acc >= xi and xi == xi:
                acc = xi
            out[i] = acc
    return out.reshape(a.shape)


def scan_min_inclusive(a):
    """Inclusive prefix minima with C ``fmin`` (a NaN element is skipped)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        out[0] = acc
        for i in range(1, a.size):
            xi = x[i]
            if not acc <= xi and xi == xi:
                acc = xi
            out[i] = acc
    return out.reshape(a.shape)


def scan_inclusive_adj(a, adj_r):
    """Adjoint of ``scan_inclusive``: the reverse inclusive scan ``adj_a[i] = sum_{j >= i}
    adj_r[j]``. (Warp 1.19's adjoint of the scans is empty: not differentiable there.)"""
    g = np.ascontiguousarray(adj_r).reshape(adj_r.size)
    out = np.empty(g.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(g.size - 1, -1, -1):
        acc = acc + g[i]
        out[i] = acc
    return out.reshape(a.shape)


def scan_exclusive_adj(a, adj_r):
    """Adjoint of ``scan_exclusive``: ``adj_a[i] = sum_{j > i} adj_r[j]``."""
    g = np.ascontiguousarray(adj_r).reshape(adj_r.size)
    out = np.empty(g.size, a.dtype)
    acc = a.dtype.type(0)
    for i in range(g.size - 1, -1, -1):
        out[i] = acc
        acc = acc + g[i]
    return out.reshape(a.shape)


def scan_max_inclusive_adj(a, adj_r):
    """Adjoint of ``scan_max_inclusive`` (a subgradient): ``adj_r[i]`` goes to the element
    that is the running maximum at ``i`` (the earliest one on ties, as the forward keeps the
    earlier value)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    g = np.ascontiguousarray(adj_r).reshape(a.size)
    out = np.zeros(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] += g[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc >= xi and xi == xi:
                acc = xi
                w = i
            out[w] += g[i]
    return out.reshape(a.shape)


def scan_min_inclusive_adj(a, adj_r):
    """Adjoint of ``scan_min_inclusive`` (a subgradient, earliest minimum on ties)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    g = np.ascontiguousarray(adj_r).reshape(a.size)
    out = np.zeros(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] += g[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc <= xi and xi == xi:
                acc = xi
                w = i
            out[w] += g[i]
    return out.reshape(a.shape)


def scan_max_inclusive_jvp(a, da):
    """Tangent of ``scan_max_inclusive``: ``da`` at the running maximum's element."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    d = np.ascontiguousarray(da).reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] = d[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc >= xi and xi == xi:
                acc = xi
                w = i
            out[i] = d[w]
    return out.reshape(a.shape)


def scan_min_inclusive_jvp(a, da):
    """Tangent of ``scan_min_inclusive``: ``da`` at the running minimum's element."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    d = np.ascontiguousarray(da).reshape(a.size)
    out = np.empty(a.size, a.dtype)
    if a.size > 0:
        acc = x[0]
        w = 0
        out[0] = d[0]
        for i in range(1, a.size):
            xi = x[i]
            if not acc <= xi and xi == xi:
                acc = xi
                w = i
            out[i] = d[w]
    return out.reshape(a.shape)


scan_inclusive_jvp = scan_inclusive   # linear
scan_exclusive_jvp = scan_exclusive


# ------------------------------------------------------------------------------------------
# argmin / argmax (row-major index into the flattened tile)
# ------------------------------------------------------------------------------------------

def argmin(a):
    """Row-major index (an int; Warp returns it as a shape-(1,) int32 tile) of the minimum:
    Warp's CPU scan, ``index`` moves only when an element is strictly below the running
    ``fmin`` (so the first of equal minima wins; an empty tile gives -1)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    if a.size == 0:
        return -1
    best = 0
    acc = x[0]
    for i in range(1, a.size):
        xi = x[i]
        if xi < acc:
            best = i
        if not acc <= xi and xi == xi:
            acc = xi
    return best


def argmax(a):
    """Row-major index of the maximum (first of equal maxima; see ``argmin``)."""
    a = np.ascontiguousarray(a)
    x = a.reshape(a.size)
    if a.size == 0:
        return -1
    best = 0
    acc = x[0]
    for i in range(1, a.size):
        xi = x[i]
        if xi > acc:
            best = i
        if not acc >= xi and xi == xi:
            acc = xi
    return best
