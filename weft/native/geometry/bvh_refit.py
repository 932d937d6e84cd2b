"""Refitting a BVH (:mod:`weft.native.geometry.bvh_build`'s layout): every node's box recomputed
from the items' boxes without changing the topology, in one pass: the tree is cut below depth
TOP_LEVELS into subtrees (``split_top``, computed once per tree), each a contiguous range of
positions swept in reverse (leaf boxes from the items, internal nodes from their children) as
one parallel task, largest first; then the few nodes above them. It also holds the box
primitives and constants the builder shares (the builder imports them from here)."""
import numba
import numpy as np
from numba import prange

from ...core.diskcache import njit

FLT_MAX = np.float32(3.4028234663852886e38)
#: levels split one parallel region per level before the subtrees become parallel tasks
TOP_LEVELS = 5
#: below this many items the whole build runs as one serial task
SERIAL_BELOW = 4096
#: compiled without Numba's reference counting: the build functions allocate nothing (the
#: caller passes scratch), and with it every array slice and call pays atomic increments
_JIT = dict(cache=True, nogil=True, error_model="numpy", _nrt=False)
EMPTY6 = (FLT_MAX, FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX, -FLT_MAX)


@njit(inline="always", **_JIT)
def _fmin(a, b):
    """``a < b ? a : b`` (the items are finite): Python's ``min(b, a)``, a select rather than
    a branch."""
    return min(b, a)


@njit(inline="always", **_JIT)
def _fmax(a, b):
    """``a > b ? a : b``."""
    return max(b, a)


def refit(bounds, links, prims, lowers, uppers, split=None):
    """Recompute every node's box from the items' boxes ``lowers``/``uppers`` without changing
    the topology (``split``: ``split_top(links)``, computed here when not given). Boxes are
    unions in Warp's order (``b < a ? b : a``)."""
    roots, tops = split_top(links) if split is None else split
    if roots.shape[0] > 1 and numba.get_num_threads() > 1:
        with numba.parallel_chunksize(1):
            _refit_items_tasks(bounds, links, prims, lowers, uppers, roots)
    else:
        for j in range(roots.shape[0]):
            _refit_items(bounds, links, prims, lowers, uppers, roots[j])
    _refit_tops(bounds, links, tops)


@njit(inline="always", **_JIT)
def _refit_items(bounds, links, prims, lowers, uppers, r):
    """The subtree at position r, children first: leaves from the items, then unions."""
    for p in range(links[r, 2] - 1, r - 1, -1):
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
        else:
            _union_children(bounds, links, p)


@njit(parallel=True, **_JIT)
def _refit_items_tasks(bounds, links, prims, lowers, uppers, roots):
    for j in prange(roots.shape[0]):
        _refit_items(bounds, links, prims, lowers, uppers, roots[j])


def split_top(links):
    """The tree cut for parallel sweeps: ``(roots, tops)``, the subtrees below depth
    TOP_LEVELS (largest first) and the internal nodes above them (pre-order); one root (0) and
    no tops for a small tree."""
    n = links.shape[0]
    if n < SERIAL_BELOW:
        return np.zeros(1 if n else 0, np.int64), np.zeros(0, np.int64)
    roots = np.empty(2 ** (TOP_LEVELS + 1), np.int64)
    tops = np.empty(2 ** (TOP_LEVELS + 1), np.int64)
    nr, nt = _split_top(links, roots, tops, np.empty(2 * TOP_LEVELS + 4, np.int64),
                        np.empty(2 * TOP_LEVELS + 4, np.int64))
    roots = roots[:nr]
    roots = roots[np.argsort(roots - links[roots, 2], kind="stable")]
    return roots, tops[:nt].copy()


def boxes_from_items(bounds, links, items, split):
    """Every node's box after a build, from the items permuted in leaf order (sequential
    reads; the same unions as ``refit``)."""
    roots, tops = split
    if roots.shape[0] > 1 and numba.get_num_threads() > 1:
        with numba.parallel_chunksize(1):
            _from_items_tasks(bounds, links, items, roots)
    else:
        for j in range(roots.shape[0]):
            _from_items(bounds, links, items, roots[j])
    _refit_tops(bounds, links, tops)


@njit(inline="always", **_JIT)
def _from_items(bounds, links, items, r):
    for p in range(links[r, 2] - 1, r - 1, -1):
        first = links[p, 0]
        if first >= 0:
            b = EMPTY6
            for i in range(first, links[p, 1]):
                b = (_fmin(items[i, 0], b[0]), _fmin(items[i, 1], b[1]), _fmin(items[i, 2], b[2]),
                     _fmax(items[i, 3], b[3]), _fmax(items[i, 4], b[4]), _fmax(items[i, 5], b[5]))
            for k in range(6):
                bounds[p, k] = b[k]
        else:
            _union_children(bounds, links, p)


@njit(parallel=True, **_JIT)
def _from_items_tasks(bounds, links, items, roots):
    for j in prange(roots.shape[0]):
        _from_items(bounds, links, items, roots[j])


@njit(inline="always", **_JIT)
def _union_children(bounds, links, p):
    a = p + 1
    b = links[p, 1]
    for k in range(3):
        bounds[p, k] = _fmin(bounds[a, k], bounds[b, k])   # Warp's std_min(left, right)
        bounds[p, 3 + k] = _fmax(bounds[a, 3 + k], bounds[b, 3 + k])


@njit(**_JIT)
def _refit_range(bounds, links, lo, hi):
    """Internal nodes of positions [lo, hi) in reverse pre-order (children first)."""
    for p in range(hi - 1, lo - 1, -1):
        if links[p, 0] < 0:
            _union_children(bounds, links, p)


@njit(**_JIT)
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


@njit(parallel=True, **_JIT)
def _refit_subtrees(bounds, links, roots):
    for j in prange(roots.shape[0]):
        r = roots[j]
        _refit_range(bounds, links, r, links[r, 2])


@njit(**_JIT)
def _refit_tops(bounds, links, tops):
    for j in range(tops.shape[0] - 1, -1, -1):     # pre-order reversed: children first
        _union_children(bounds, links, tops[j])


def refit_internal(bounds, links, split=None):
    """Every internal node's box, the union of its children's (leaves already set): the
    subtrees of ``split`` (``split_top(links)``) in parallel, each a reverse sweep of its
    contiguous positions, then the nodes above them."""
    roots, tops = split_top(links) if split is None else split
    if roots.shape[0] > 1 and numba.get_num_threads() > 1:
        with numba.parallel_chunksize(1):
            _refit_subtrees(bounds, links, roots)
    else:
        for j in range(roots.shape[0]):
            _refit_range(bounds, links, roots[j], links[roots[j], 2])
    _refit_tops(bounds, links, tops)
