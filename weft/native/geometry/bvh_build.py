"""Building and refitting a BVH over axis-aligned boxes (the host side of ``wp.Bvh`` and of a
``wp.Mesh``'s tree), in compiled Numba code on flat numpy arrays.

Topology: the tree Warp 1.19's CPU builder makes, node for node and primitive for primitive
(checked against Warp's own tree in the tests). Warp's ``TopDownBVHBuilder`` splits a node of
more than ``leaf_size`` items (and of depth < 31) with 16-bucket binned SAH over the items'
centroids along the longest axis of their centroid bounds, partitions the items with
``std::partition`` (whose swap order decides the order of primitives inside leaves) and falls
back to a split in the middle when one side is empty. Reproducing it exactly (the same float32
arithmetic, the same partition algorithm) means every query visits primitives in Warp's order,
so ties (two faces at the same distance, a ray through a shared edge) resolve to Warp's face
and iterators yield Warp's sequence. Binned SAH is also simply a good builder: near-optimal
trees for ray and closest-point queries at O(n log n) cost.

Speed, without changing the tree: the items' boxes are permuted in place together with their
ids (sequential memory access instead of Warp's indirection through an index array); a node
costs two passes over its items (Warp's four): the bucket pass and the partition pass, which
also yields the children's centroid bounds. The bucket pass unites runs of consecutive items
of the same bucket in registers (neighbours in memory are neighbours in space, so a bucket's
box is updated once per run instead of once per item; small nodes fill buckets directly) and
the SAH sweep visits only the occupied buckets (the others cannot change Warp's choice); a
two-item node needs no buckets at all. Node boxes are written at the end, one reverse sweep
per subtree. The top levels are split one parallel region per level, then the subtrees below
are built as parallel tasks, and the final layout is written per subtree in parallel. Nothing
allocates inside the compiled functions (compiled without Numba's reference counting, which
costs atomic operations on every slice), and the per-node helpers are inlined (a call passes
each array as seven scalars).

Layout (what the query cores read), N nodes in depth-first pre-order, Warp's *right* child
first (Warp's traversal stack pops the right child first, so a pre-order walk in this layout
is Warp's iteration order)::

    bounds  float32 (N, 6)  lower xyz, upper xyz of each node
    links   int32   (N, 4)  leaf:     (first, end, skip, parent)  into ``prims``, first >= 0
                            internal: (-1, left, skip, parent)    right child = node + 1
    prims   int32   (n,)    item ids in leaf order (Warp's ``primitive_indices``)

``skip`` is the node after the subtree (N for the last): a stackless walk goes to ``node + 1``
when it enters a node and to ``skip`` when it rejects or finishes one, so an iterator's state
is a few scalars. Children follow their parents, so a refit is a reverse sweep.
"""
import threading

import numba
import numpy as np
from numba import prange

from ...core.diskcache import njit

from . import mesh_geom
from .bvh_refit import (_JIT, EMPTY6, FLT_MAX, SERIAL_BELOW, TOP_LEVELS, _fmax, _fmin,  # noqa: F401
    boxes_from_items, refit, refit_internal, split_top)

SAH_BUCKETS = 16
#: Warp's traversal stack size; its builder makes a leaf of any node at depth >= 31
MAX_DEPTH = 31
SAH, MEDIAN = 0, 1
SCRATCH = 256
#: nodes of at most this many items fill their buckets directly (``_buckets_direct``)
SMALL_NODE = 32
STACK = 2 * MAX_DEPTH + 4



# ------------------------------------------------------------------------------ float32 helpers
@njit(inline="always", **_JIT)
def _area(b):
    """``bounds3::area`` of the 6-tuple ``b`` in float32 (an empty box is inf)."""
    ex = b[3] - b[0]
    ey = b[4] - b[1]
    ez = b[5] - b[2]
    return np.float32(2.0) * (ex * ey + ex * ez + ey * ez)


#: Warp's ``longest_axis``: the first axis of largest absolute extent
_longest_axis = njit(inline="always", **_JIT)(mesh_geom.longest_axis3)


@njit(inline="always", **_JIT)
def _center(items, i, axis):
    """An item's centroid along ``axis``: ``0.5f * (lower + upper)`` in float32."""
    return np.float32(0.5) * (items[i, axis] + items[i, 3 + axis])


@njit(inline="always", **_JIT)
def _union(b, fs, o):
    """The 6-tuple box ``b`` grown by the box ``fs[o:o+6]``."""
    return (_fmin(fs[o], b[0]), _fmin(fs[o + 1], b[1]), _fmin(fs[o + 2], b[2]),
            _fmax(fs[o + 3], b[3]), _fmax(fs[o + 4], b[4]), _fmax(fs[o + 5], b[5]))


@njit(inline="always", **_JIT)
def _grow_centroid(b, items, i):
    """The centroid bounds ``b`` (6-tuple, kept in registers) grown by item ``i``."""
    cx = np.float32(0.5) * (items[i, 0] + items[i, 3])
    cy = np.float32(0.5) * (items[i, 1] + items[i, 4])
    cz = np.float32(0.5) * (items[i, 2] + items[i, 5])
    return (_fmin(cx, b[0]), _fmin(cy, b[1]), _fmin(cz, b[2]),
            _fmax(cx, b[3]), _fmax(cy, b[4]), _fmax(cz, b[5]))


@njit(**_JIT)
def _centroid_bounds(items, s, e, out):
    b = EMPTY6
    for i in range(s, e):
        b = _grow_centroid(b, items, i)
    for k in range(6):
        out[k] = b[k]


# ------------------------------------------------------------------------------ one split
@njit(inline="always", **_JIT)
def _bucket_of(items, i, axis, r0, width):
    """Item i's bucket: Warp's ``int(16 * (c - r0) / width)``, clamped to [0, 15]."""
    b = int(np.float32(SAH_BUCKETS) * (_center(items, i, axis) - r0) / width)
    return min(max(b, 0), SAH_BUCKETS - 1)


@njit(inline="always", **_JIT)
def _flush(fs, counts, b, run, box):
    """Add a run of ``run`` items of bucket ``b`` (their union ``box``) to the buckets."""
    o = 6 * b
    counts[b] += run
    for k in range(3):
        fs[o + k] = _fmin(box[k], fs[o + k])
        fs[o + 3 + k] = _fmax(box[3 + k], fs[o + 3 + k])


@njit(inline="always", **_JIT)
def _buckets_runs(items, s, e, axis, r0, width, fs, counts):
    """The bucket boxes and counts of the items [s, e), united a run of same-bucket items at a
    time (the common case in large nodes: neighbours in memory are neighbours in space);
    returns the mask of occupied buckets."""
    for b in range(SAH_BUCKETS):
        counts[b] = 0
        for k in range(3):
            fs[6 * b + k] = FLT_MAX
            fs[6 * b + 3 + k] = -FLT_MAX
    cur = _bucket_of(items, s, axis, r0, width)
    mask = 1 << cur
    run = 0
    box = EMPTY6
    for i in range(s, e):
        b = _bucket_of(items, i, axis, r0, width)
        if b != cur:
            _flush(fs, counts, cur, run, box)
            mask |= 1 << b
            cur = b
            run = 0
            box = EMPTY6
        run += 1
        box = _union(box, items[i], 0)
    _flush(fs, counts, cur, run, box)
    return mask


@njit(inline="always", **_JIT)
def _buckets_direct(items, s, e, axis, r0, width, fs, counts):
    """``_buckets_runs`` for small nodes (whose items rarely share a bucket): nothing cleared,
    a bucket is set by its first item and grown by the others."""
    mask = 0
    for i in range(s, e):
        b = _bucket_of(items, i, axis, r0, width)
        o = 6 * b
        if (mask >> b) & 1:
            counts[b] += 1
            for k in range(3):
                fs[o + k] = _fmin(items[i, k], fs[o + k])
                fs[o + 3 + k] = _fmax(items[i, 3 + k], fs[o + 3 + k])
        else:
            mask |= 1 << b
            counts[b] = 1
            for k in range(6):
                fs[o + k] = items[i, k]
    return mask


@njit(inline="always", **_JIT)
def _sah_split_point(items, s, e, cb, fs, counts):
    """Warp's ``partition_sah_indices``: (axis, split point) for the items [s, e) of a node of
    centroid bounds ``cb``. ``fs`` (float32, >= SCRATCH) and ``counts`` (int64, >= 64) are
    scratch: bucket boxes in ``fs[6b:6b+6]``, the mask of occupied buckets (the only split
    candidates that matter, ``_sah_best``) returned by the bucket pass. A node of two items
    needs no buckets: its items fill buckets 0 and 15, and the first split wins."""
    axis = _longest_axis(cb[3] - cb[0], cb[4] - cb[1], cb[5] - cb[2])
    r0 = cb[axis]
    r1 = cb[3 + axis]
    if r1 <= r0:
        return axis, r0
    width = r1 - r0
    if e - s == 2:
        # buckets 0 and 15 (or both 0 when 16 * width overflows): the first wins
        return axis, r0 + np.float32(1) * width / np.float32(SAH_BUCKETS)
    if e - s <= SMALL_NODE:
        mask = _buckets_direct(items, s, e, axis, r0, width, fs, counts)
    else:
        mask = _buckets_runs(items, s, e, axis, r0, width, fs, counts)
    return axis, _sah_best(counts, fs, mask, r0, width)


@njit(**_JIT)
def _sah_best(counts, fs, mask, r0, width):
    """The split point of least SAH cost, as Warp's sweep over the 15 split points computes it
    in float32, evaluated at the occupied buckets only: a split point after an empty bucket
    has the cost of the one before it (the same boxes and counts: Warp's strict ``<`` keeps
    the first), and one with an empty side costs NaN (an infinite area times a zero count),
    which never wins. The node's box is the union of the bucket boxes. ``counts[16:]`` takes
    the occupied buckets, ``counts[32:]`` and ``fs[96:]`` the right-hand counts and areas."""
    m = 0
    for b in range(SAH_BUCKETS):
        counts[16 + m] = b
        m += (mask >> b) & 1
    rb = EMPTY6
    count_r = 0
    for j in range(m - 1, 0, -1):            # right-hand sides, from the last bucket
        b = counts[16 + j]
        rb = _union(rb, fs, 6 * b)
        count_r += counts[b]
        fs[96 + j - 1] = _area(rb)
        counts[32 + j - 1] = count_r
    node_box = _union(rb, fs, 6 * counts[16])
    inv_total = np.float32(1.0) / _area(node_box)
    lb = EMPTY6
    count_l = 0
    best = 0
    best_cost = FLT_MAX
    for j in range(m - 1):
        b = counts[16 + j]
        lb = _union(lb, fs, 6 * b)
        count_l += counts[b]
        cost = (_area(lb) * inv_total) * np.float32(count_l) + \
            (fs[96 + j] * inv_total) * np.float32(counts[32 + j])
        if cost < best_cost:
            best_cost = cost
            best = b
    return r0 + np.float32(best + 1) * width / np.float32(SAH_BUCKETS)


@njit(inline="always", **_JIT)
def _swap(items, ids, a, b):
    for k in range(6):
        t = items[a, k]
        items[a, k] = items[b, k]
        items[b, k] = t
    t = ids[a]
    ids[a] = ids[b]
    ids[b] = t


@njit(inline="always", **_JIT)
def _partition(items, ids, s, e, axis, split, left, right):
    """``std::partition`` of [s, e) by ``centroid[axis] < split`` (libstdc++'s bidirectional
    algorithm: the same swaps, so the same order), accumulating each side's centroid bounds
    into ``left`` / ``right``. Returns the boundary."""
    lb = EMPTY6
    rb = EMPTY6
    first = s
    last = e
    while True:
        while first != last and _center(items, first, axis) < split:
            lb = _grow_centroid(lb, items, first)
            first += 1
        if first == last:
            break
        last -= 1
        while first != last and not (_center(items, last, axis) < split):
            rb = _grow_centroid(rb, items, last)
            last -= 1
        if first == last:
            rb = _grow_centroid(rb, items, first)   # the item that stopped the first scan
            break
        _swap(items, ids, first, last)
        lb = _grow_centroid(lb, items, first)
        rb = _grow_centroid(rb, items, last)
        first += 1
    for k in range(6):
        left[k] = lb[k]
        right[k] = rb[k]
    return first


@njit(**_JIT)
def _median_partition(items, ids, s, e, left, right):
    """Warp's MEDIAN constructor: the item of median centroid along the longest axis of the
    node's box goes to (s + e) // 2, smaller ones before it (a quickselect: items with equal
    centroids may be split differently from Warp's ``std::nth_element``)."""
    b = EMPTY6
    for i in range(s, e):
        b = (_fmin(items[i, 0], b[0]), _fmin(items[i, 1], b[1]), _fmin(items[i, 2], b[2]),
             _fmax(items[i, 3], b[3]), _fmax(items[i, 4], b[4]), _fmax(items[i, 5], b[5]))
    axis = _longest_axis(b[3] - b[0], b[4] - b[1], b[5] - b[2])
    k = (s + e) // 2
    lo = s
    hi = e - 1
    while lo < hi:
        pivot = _center(items, (lo + hi) // 2, axis)
        i = lo
        j = hi
        while i <= j:
            while _center(items, i, axis) < pivot:
                i += 1
            while _center(items, j, axis) > pivot:
                j -= 1
            if i <= j:
                _swap(items, ids, i, j)
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    _centroid_bounds(items, s, k, left)
    _centroid_bounds(items, k, e, right)
    return k


@njit(inline="always", **_JIT)
def _split(items, ids, s, e, cb, constructor, left, right, fs, counts):
    """Split the items [s, e) of a node as Warp does; the boundary, with the children's
    centroid bounds in ``left`` / ``right``."""
    if constructor == MEDIAN:
        return _median_partition(items, ids, s, e, left, right)
    axis, point = _sah_split_point(items, s, e, cb, fs, counts)
    k = _partition(items, ids, s, e, axis, point, left, right)
    if k == s or k == e:
        k = (s + e) // 2
        _centroid_bounds(items, s, k, left)
        _centroid_bounds(items, k, e, right)
    return k


# ------------------------------------------------------------------------------ the tree
# Build nodes live in arrays indexed by a build id: ``nrange`` (., 3) int32 (first, end,
# depth), ``nkids`` (., 2) int32 (left, right; -1 for a leaf, -2 for an unused id) and ``ncb``
# (., 6) float32 (centroid bounds). Top-level ids come first (``top`` of them); the subtree
# task of items [s, e) numbers its nodes from ``top + 2 * s`` (fewer than 2(e - s) nodes).

@njit(inline="always", **_JIT)
def _set_range(nrange, node, s, e, depth):
    """A node's items ``[s, e)`` and depth."""
    nrange[node, 0] = s
    nrange[node, 1] = e
    nrange[node, 2] = depth


@njit(inline="always", **_JIT)
def _split_node(items, ids, node, left_id, right_id, leaf_size, constructor, nrange, nkids,
                ncb, fs, counts):
    """Split ``node`` into two new nodes (ids given); False if it stays a leaf. ``fs``
    (float32, >= SCRATCH) and ``counts`` (int64, >= 64) are scratch."""
    s = nrange[node, 0]
    e = nrange[node, 1]
    if e - s <= leaf_size or nrange[node, 2] >= MAX_DEPTH:
        nkids[node, 0] = -1
        nkids[node, 1] = -1
        return False
    k = _split(items, ids, s, e, ncb[node], constructor, ncb[left_id], ncb[right_id], fs,
               counts)
    depth = nrange[node, 2] + 1
    _set_range(nrange, left_id, s, k, depth)
    _set_range(nrange, right_id, k, e, depth)
    nkids[node, 0] = left_id
    nkids[node, 1] = right_id
    return True


@njit(parallel=True, **_JIT)
def _split_level(items, ids, level, m, next_id, leaf_size, constructor, nrange, nkids, ncb,
                 fs, counts, split, out):
    """Split the ``m`` nodes ``level[:m]`` in parallel (children ids ``next_id + 2j`` and
    ``+ 2j + 1``); the new level (children that may split further) goes to ``out``, its size
    is returned. ``fs``, ``counts`` (one row per node) and ``split`` are scratch."""
    for j in prange(m):
        split[j] = _split_node(items, ids, level[j], next_id + 2 * j, next_id + 2 * j + 1,
                               leaf_size, constructor, nrange, nkids, ncb, fs[j], counts[j])
    c = 0
    for j in range(m):
        if split[j]:
            out[c] = next_id + 2 * j
            out[c + 1] = next_id + 2 * j + 1
            c += 2
    return c


@njit(**_JIT)
def _build_subtree(items, ids, root, base, leaf_size, constructor, nrange, nkids, ncb, stack,
                   fs, counts):
    """Build the subtree under ``root`` depth-first (``stack`` of STACK ints), new ids from
    ``base``; returns the end of the ids used."""
    stack[0] = root
    count = 1
    nxt = base
    while count > 0:
        count -= 1
        node = stack[count]
        if _split_node(items, ids, node, nxt, nxt + 1, leaf_size, constructor, nrange, nkids,
                       ncb, fs, counts):
            stack[count] = nxt + 1
            stack[count + 1] = nxt
            count += 2
            nxt += 2
    return nxt


@njit(parallel=True, **_JIT)
def _build_tasks(items, ids, tasks, top, leaf_size, constructor, nrange, nkids, ncb, stacks,
                 fs, counts, ends):
    """The subtrees under ``tasks`` (largest first) in parallel: with a chunk size of 1 the
    threads take them one by one as they finish (largest first, so the load evens out), each
    with its own stack and scratch row (``numba.get_thread_id``)."""
    for j in prange(tasks.shape[0]):
        t = numba.get_thread_id()
        node = tasks[j]
        ends[j] = _build_subtree(items, ids, node, top + 2 * nrange[node, 0], leaf_size,
                                 constructor, nrange, nkids, ncb, stacks[t], fs[t], counts[t])


@njit(parallel=True, **_JIT)
def _load_items(lowers, uppers, items, ids):
    """Copy the boxes into ``items`` (n, 6) and number them."""
    for i in prange(lowers.shape[0]):
        for k in range(3):
            items[i, k] = lowers[i, k]
            items[i, 3 + k] = uppers[i, k]
        ids[i] = i


# ------------------------------------------------------------------------------ layout
@njit(**_JIT)
def _sizes(nkids, lo, hi, size):
    """Subtree sizes of the build ids [lo, hi) (children have larger ids than parents)."""
    for node in range(hi - 1, lo - 1, -1):
        if nkids[node, 0] == -1:
            size[node] = 1
        elif nkids[node, 0] >= 0:
            size[node] = 1 + size[nkids[node, 0]] + size[nkids[node, 1]]


@njit(**_JIT)
def _place(nkids, nrange, lo, hi, size, pos, links):
    """Write the links of the build ids [lo, hi) at their pre-order positions (``pos`` of each
    id is set by its parent; Warp's right child first)."""
    for node in range(lo, hi):
        if nkids[node, 0] < -1:
            continue
        p = pos[node]
        links[p, 2] = p + size[node]
        if nkids[node, 0] == -1:
            links[p, 0] = nrange[node, 0]
            links[p, 1] = nrange[node, 1]
        else:
            left = nkids[node, 0]
            right = nkids[node, 1]
            pos[right] = p + 1
            pos[left] = p + 1 + size[right]
            links[p, 0] = -1
            links[p, 1] = pos[left]
            links[p + 1, 3] = p
            links[pos[left], 3] = p


@njit(parallel=True, **_JIT)
def _sizes_tasks(nkids, nrange, tasks, ends, top, size):
    """Subtree sizes of every task's ids (the ids it used: ``[top + 2 s, ends[j])``)."""
    for j in prange(tasks.shape[0]):
        _sizes(nkids, top + 2 * nrange[tasks[j], 0], ends[j], size)


@njit(parallel=True, **_JIT)
def _place_tasks(nkids, nrange, tasks, ends, top, size, pos, links):
    for j in prange(tasks.shape[0]):
        _place(nkids, nrange, top + 2 * nrange[tasks[j], 0], ends[j], size, pos, links)


# ------------------------------------------------------------------------------ build
_POOL = threading.local()
#: the largest build scratch kept for the next build of the same thread (13 words per build
#: id, 2n + 64 ids: up to about 600k items)
POOL_BYTES = 64 << 20


def _scratch(total):
    """``(nrange, nkids, ncb, size, pos)`` for ``total`` build ids, views of one buffer that
    the calling thread keeps for its next build when it is at most POOL_BYTES: a rebuild then
    writes into memory already paged in (a fresh buffer costs the kernel a page fault and a
    zeroed page per 4 KiB, about 6% of a mesh build)."""
    buf = getattr(_POOL, "buf", None)
    if buf is None or buf.shape[0] < 13 * total:
        buf = np.empty(13 * total, np.int32)
        if buf.nbytes <= POOL_BYTES:
            _POOL.buf = buf
    return (buf[:3 * total].reshape(total, 3), buf[3 * total:5 * total].reshape(total, 2),
            buf[5 * total:11 * total].view(np.float32).reshape(total, 6),
            buf[11 * total:12 * total], buf[12 * total:13 * total])


def _grow_tree(items, ids, n, leaf_size, constructor, nrange, nkids, ncb):
    """Split the items into the build arrays ``nrange``, ``nkids``, ``ncb`` (``_scratch``);
    (top, tasks, ends)."""
    top = 2 ** (TOP_LEVELS + 1)
    nkids[:top] = -2                         # unused top ids; task ids are used up to ``ends``
    nrange[0] = (0, n, 0)
    _centroid_bounds(items, 0, n, ncb[0])
    width = 2 ** TOP_LEVELS
    rows = max(width, numba.get_num_threads())      # a scratch row per node or thread
    fs = np.empty((rows, SCRATCH), np.float32)
    counts = np.empty((rows, 64), np.int64)
    level = np.zeros(width, np.int32)
    m = 1
    if n >= SERIAL_BELOW:
        split = np.empty(width, np.bool_)
        out = np.empty(width, np.int32)
        next_id = 1
        for depth in range(TOP_LEVELS):
            m = _split_level(items, ids, level, m, next_id, leaf_size, constructor, nrange,
                             nkids, ncb, fs, counts, split, out)
            level, out = out, level
            next_id += 2 ** (depth + 1)
            if m == 0:
                break
    tasks = level[:m][np.argsort(nrange[level[:m], 0] - nrange[level[:m], 1], kind="stable")]
    ends = np.empty(m, np.int64)
    stacks = np.empty((max(1, numba.get_num_threads()), STACK), np.int32)
    if m == 1 or numba.get_num_threads() == 1:
        for j, node in enumerate(tasks):
            ends[j] = _build_subtree(items, ids, node, top + 2 * nrange[node, 0], leaf_size,
                                     constructor, nrange, nkids, ncb, stacks[0], fs[0],
                                     counts[0])
    elif m:
        with numba.parallel_chunksize(1):
            _build_tasks(items, ids, tasks, top, leaf_size, constructor, nrange, nkids, ncb,
                         stacks, fs, counts, ends)
    return top, tasks, ends


def build(lowers, uppers, leaf_size=1, constructor=SAH):
    """Build the tree of the boxes ``lowers``/``uppers`` ((n, 3) float32, finite, n >= 1,
    ``leaf_size`` >= 1): ``(bounds, links, prims)`` (see the module docstring)."""
    n = lowers.shape[0]
    items = np.empty((n, 6), np.float32)
    ids = np.empty(n, np.int32)
    _load_items(lowers, uppers, items, ids)
    return build_items(items, ids, leaf_size, constructor)[:3]


def build_items(items, ids, leaf_size=1, constructor=SAH):
    """``build`` from the boxes already in ``items`` ((n, 6) float32: lower, upper) with
    ``ids`` = 0..n-1 (both permuted in place): ``(bounds, links, prims, split)``, ``split``
    the tree's ``split_top`` for refits."""
    n = items.shape[0]
    nrange, nkids, ncb, size, pos = _scratch(2 ** (TOP_LEVELS + 1) + 2 * n)
    top, tasks, ends = _grow_tree(items, ids, n, leaf_size, constructor, nrange, nkids, ncb)
    parallel = tasks.shape[0] > 1 and numba.get_num_threads() > 1
    if parallel:
        _sizes_tasks(nkids, nrange, tasks, ends, top, size)
    else:
        for j in range(tasks.shape[0]):
            _sizes(nkids, top + 2 * nrange[tasks[j], 0], ends[j], size)
    _sizes(nkids, 0, top, size)
    count = int(size[0])
    links = np.empty((count, 4), np.int32)
    links[0, 3] = -1
    pos[0] = 0
    _place(nkids, nrange, 0, top, size, pos, links)
    if parallel:
        _place_tasks(nkids, nrange, tasks, ends, top, size, pos, links)
    else:
        for j in range(tasks.shape[0]):
            _place(nkids, nrange, top + 2 * nrange[tasks[j], 0], ends[j], size, pos, links)
    bounds = np.empty((count, 6), np.float32)
    split = split_top(links)
    boxes_from_items(bounds, links, items, split)
    return bounds, links, ids, split
