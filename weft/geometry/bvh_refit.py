"""Refitting a BVH (:mod:`weft.geometry.bvh_build`'s layout): every node's box recomputed
from the items' boxes without changing the topology, leaves in parallel, then the internal
nodes bottom-up (the top of the tree split into subtrees refitted in parallel). It also holds
the box primitives and constants the builder shares (the builder imports them from here)."""
import numba
import numpy as np
from numba import prange

FLT_MAX = np.float32(3.4028234663852886e38)
#: levels split one parallel region per level before the subtrees become parallel tasks
TOP_LEVELS = 5
#: below this many items the whole build runs as one serial task
SERIAL_BELOW = 4096
#: compiled without Numba's reference counting: the build functions allocate nothing (the
#: caller passes scratch), and with it every array slice and call pays atomic increments
_JIT = dict(cache=True, nogil=True, error_model="numpy", _nrt=False)
EMPTY6 = (FLT_MAX, FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX)


@numba.njit(inline="always", **_JIT)
def _fmin(a, b):
    """``a < b ? a : b`` (the items are finite): Python's ``min(b, a)``, a select rather than
    a branch."""
    return min(b, a)


@numba.njit(inline="always", **_JIT)
def _fmax(a, b):
    """``a > b ? a : b``."""
    return max(b, a)


def refit(bounds, links, prims, lowers, uppers):
    """Recompute every node's box from the items' boxes ``lowers``/``uppers`` without changing
    the topology: leaves in parallel, then internal nodes (``refit_internal``). Boxes are
    unions in Warp's order (``b < a ? b : a``)."""
    _refit_leaves(bounds, links, prims, lowers, uppers)
    refit_internal(bounds, links)


@numba.njit(parallel=True, **_JIT)
def _refit_leaves(bounds, links, prims, lowers, uppers):
    for p in prange(links.shape[0]):
        first = links[p, 0]
        if first >= 0:
            b = EMPTY6
            for i in range(first, links[p, 1]):
                t = prims[i]
                b = (_fmin(lowers[t, 0], b[0]), _fmin(lowers[t, 1], b[1]),
                     _fmin(lowers[t, 2], b[2]), _fmax(uppers[t, 0], b[3]),
                     _fmax(uppers[t, 1], b[4]), _fmax(uppers[t, 2], b[5]))
            for k in range(6):
                bounds[p, k] = b[k]


@numba.njit(parallel=True, **_JIT)
def _leaf_boxes_from_items(bounds, links, items):
    """Leaf boxes after a build, from the items permuted in leaf order (sequential reads; the
    same unions as ``_refit_leaves``)."""
    for p in prange(links.shape[0]):
        first = links[p, 0]
        if first >= 0:
            b = EMPTY6
            for i in range(first, links[p, 1]):
                b = (_fmin(items[i, 0], b[0]), _fmin(items[i, 1], b[1]), _fmin(items[i, 2], b[2]),
                     _fmax(items[i, 3], b[3]), _fmax(items[i, 4], b[4]), _fmax(items[i, 5], b[5]))
            for k in range(6):
                bounds[p, k] = b[k]


@numba.njit(inline="always", **_JIT)
def _union_children(bounds, links, p):
    a = p + 1
    b = links[p, 1]
    for k in range(3):
        bounds[p, k] = _fmin(bounds[a, k], bounds[b, k])   # Warp's std_min(left, right)
        bounds[p, 3 + k] = _fmax(bounds[a, 3 + k], bounds[b, 3 + k])


@numba.njit(**_JIT)
def _refit_range(bounds, links, lo, hi):
    """Internal nodes of positions [lo, hi) in reverse pre-order (children first)."""
    for p in range(hi - 1, lo - 1, -1):
        if links[p, 0] < 0:
            _union_children(bounds, links, p)


@numba.njit(**_JIT)
def _split_top(links, roots, tops, stack, depth):
    """The subtrees below depth TOP_LEVELS (``roots``, contiguous position ranges) and the
    internal nodes above them (``tops``, in pre-order); their counts. ``stack`` and
    ``depth`` are scratch."""
    stack[0] = 0
    depth[0] = 0
    count = 1
    nr = 0
    nt = 0
    while count > 0:
        count -= 1
        node = stack[count]
        d = depth[count]
        if links[node, 0] >= 0 or d == TOP_LEVELS:
            roots[nr] = node
            nr += 1
        else:
            tops[nt] = node
            nt += 1
            stack[count] = links[node, 1]
            depth[count] = d + 1
            stack[count + 1] = node + 1
            depth[count + 1] = d + 1
            count += 2
    return nr, nt


@numba.njit(parallel=True, **_JIT)
def _refit_subtrees(bounds, links, roots):
    for j in prange(roots.shape[0]):
        r = roots[j]
        _refit_range(bounds, links, r, links[r, 2])


@numba.njit(**_JIT)
def _refit_tops(bounds, links, tops):
    for j in range(tops.shape[0] - 1, -1, -1):     # pre-order reversed: children first
        _union_children(bounds, links, tops[j])


def refit_internal(bounds, links):
    """Every internal node's box, the union of its children's (leaves already set): the
    subtrees below depth TOP_LEVELS in parallel, each a reverse sweep of its contiguous
    positions, then the nodes above them."""
    n = links.shape[0]
    if n < SERIAL_BELOW or numba.get_num_threads() == 1:
        _refit_range(bounds, links, 0, n)
        return
    roots = np.empty(2 ** (TOP_LEVELS + 1), np.int64)
    tops = np.empty(2 ** (TOP_LEVELS + 1), np.int64)
    nr, nt = _split_top(links, roots, tops, np.empty(2 * TOP_LEVELS + 4, np.int64),
                        np.empty(2 * TOP_LEVELS + 4, np.int64))
    _refit_subtrees(bounds, links, roots[:nr])
    _refit_tops(bounds, links, tops[:nt])
