"""Grouped BVHs (Warp's ``groups=`` of ``wp.Bvh`` and ``wp.Mesh``): the items of each group
fill one subtree of their own, whose root ``bvh_get_group_root`` returns, so a query started
there visits that group only.

Each group's subtree is the tree ``bvh_build`` makes of the group's items alone (Warp's SAH or
median tree, with the depth cap of 31 applying per group, as Warp's); the groups, in
increasing id order, are joined above by a balanced binary tree (halving the list of groups),
so a walk from the global root is at most ``31 + ceil(log2(groups))`` <= 62 levels deep: the
64-entry stacks of the query cores hold it for any number of groups an int32 can count. The
layout is ``bvh_build``'s (pre-order, right child at ``node + 1``, skip and parent links), so
every query core and the refit work on it unchanged.

``table`` is int32 (G, 2): (group id, root node) sorted by id, searched by
:func:`group_root`; an ungrouped tree's table is ``[(0, 0)]`` (Warp: every item is in group 0),
an empty tree's is empty (every group's root is -1).
"""
import numpy as np

from . import bvh_build

#: the deepest a grouped tree gets (per-group cap plus a balanced tree over 2**31 groups)
MAX_GROUPED_DEPTH = bvh_build.MAX_DEPTH + 31


def ungrouped_table(n_nodes):
    return np.array([[0, 0]] if n_nodes else [], np.int32).reshape(-1, 2)


def group_root(table, group):
    """The root node of ``group`` in ``table`` (int32 (G, 2), sorted), -1 when absent."""
    lo = 0
    hi = table.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if table[mid, 0] < group:
            lo = mid + 1
        else:
            hi = mid
    if lo < table.shape[0] and table[lo, 0] == group:
        return np.int32(table[lo, 1])
    return np.int32(-1)


def build_grouped(lowers, uppers, groups, leaf_size, constructor):
    """``(bounds, links, prims, table)`` of the grouped tree over boxes ``lowers``/``uppers``
    ((n, 3) float32, n > 0) with int32 group ids ``groups`` (n,)."""
    order = np.argsort(groups, kind="stable").astype(np.int32)
    ids, starts = np.unique(groups[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    subs = []
    for s, e in zip(starts, ends):
        sel = order[s:e]
        b, lk, p = bvh_build.build(np.ascontiguousarray(lowers[sel]),
                                   np.ascontiguousarray(uppers[sel]), leaf_size, constructor)
        subs.append((b, lk, sel[p]))
    total = sum(len(lk) for _, lk, _ in subs) + len(subs) - 1
    out = _Out(total, len(order))
    roots = np.empty(len(subs), np.int32)
    _emit(out, subs, roots, 0, len(subs), -1)
    table = np.stack([ids.astype(np.int32), roots], 1)
    return out.bounds, out.links, out.prims, np.ascontiguousarray(table)


class _Out:
    def __init__(self, n_nodes, n_items):
        self.bounds = np.empty((n_nodes, 6), np.float32)
        self.links = np.empty((n_nodes, 4), np.int32)
        self.prims = np.empty(n_items, np.int32)
        self.node = 0
        self.prim = 0


def _emit(out, subs, roots, a, b, parent):
    """Write the tree over groups [a, b) at ``out.node`` (pre-order, right half first);
    returns its root."""
    node = out.node
    if b - a == 1:
        bounds, links, prims = subs[a]
        m = len(links)
        lk = links.astype(np.int32, copy=True)
        leaf = lk[:, 0] >= 0
        lk[leaf, :2] += out.prim
        lk[~leaf, 1] += node
        lk[:, 2:] += node
        lk[0, 3] = parent
        out.links[node:node + m] = lk
        out.bounds[node:node + m] = bounds
        out.prims[out.prim:out.prim + len(prims)] = prims
        out.node += m
        out.prim += len(prims)
        roots[a] = node
        return node
    out.node += 1
    mid = (a + b) // 2
    right = _emit(out, subs, roots, mid, b, node)
    left = _emit(out, subs, roots, a, mid, node)
    out.links[node] = (-1, left, out.node, parent)
    out.bounds[node, :3] = np.minimum(out.bounds[left, :3], out.bounds[right, :3])
    out.bounds[node, 3:] = np.maximum(out.bounds[left, 3:], out.bounds[right, 3:])
    return node
