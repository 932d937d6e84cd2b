"""Dominance questions Numba answers from whole dominator sets, answered from the dominator tree.

Numba's ``CFGraph`` makes each block's set of dominators (or post-dominators) whole to answer
"does block d dominate block u" and "which blocks does every path pass": along a chain of ``if``
statements each block's set holds every block before (or after) it, the square of the kernel.
The functions here take a graph (``numba.core``'s ``CFGraph`` or numba-cuda's copy) and the
Numba core's ``ssa`` module as arguments, and give Numba's answers from the immediate
dominators; ``numba_passes`` installs them. ``tests/runtime/test_numba_passes.py`` compares
them with Numba's on generated functions.
"""
from __future__ import annotations

from collections import defaultdict


def dominator_intervals(cfg):
    """``{label: (first, last)}`` of ``cfg``'s reachable blocks: a walk of the dominator tree
    (from the immediate dominators) numbers each block on entry, ``last`` the highest number in
    its subtree, so that block ``d`` dominates block ``u`` when ``first[d] <= first[u] <=
    last[d]``."""
    children = {}
    for node, parent in cfg.immediate_dominators().items():
        if node != parent:
            children.setdefault(parent, []).append(node)
    out, clock = {}, 0
    stack = [(cfg.entry_point(), False)]
    while stack:
        node, done = stack.pop()
        if done:
            out[node] = (out[node], clock - 1)
            continue
        out[node] = clock
        clock += 1
        stack.append((node, True))
        stack.extend((child, False) for child in children.get(node, ()))
    return out


def defs_violators(ssa, blocks, cfg):
    """``ssa._find_defs_violators(blocks, cfg)`` (``ssa``: the Numba core's module), the same
    set in the same order: the variables defined more than once, then those with a use in a
    block that no block defining them dominates. Numba takes the dominators of every block as
    whole sets (``cfg.dominators()``; 0.04 s of a 1,000-``if`` adjoint's compile, 0.7 s at
    3,000, under the profiler); here a use is checked against the tree's intervals."""
    defs, uses = defaultdict(list), defaultdict(set)
    ssa._run_block_analysis(blocks, {"defs": defs, "uses": uses}, ssa._GatherDefsHandler())
    violators = ssa.OrderedSet([k for k, vs in defs.items() if len(vs) > 1])
    span = dominator_intervals(cfg)
    for k, use_blocks in uses.items():
        if k in violators:
            continue
        homes = [span.get(label) for _assign, label in defs[k]]
        for label in use_blocks:
            at = span.get(label)
            if at is None or None in homes:  # (a block no path reaches: as Numba decides)
                return ssa._find_defs_violators(blocks, cfg)
            if not any(lo <= at[0] <= hi for lo, hi in homes):
                violators.add(k)
                break
    return violators


def post_dominator_chain(cfg):
    """``cfg.backbone()`` (the blocks every path from the entry passes) from the chain of
    immediate post-dominators above the entry; None where Numba's own answer is wanted: the
    post-dominator sets are made already, a loop has no exit, or no path reaches an exit.
    Numba's takes it from every block's whole post-dominator set (the bytecode walk asks once
    per compile: 0.1 s of a 1,000-``if`` adjoint, 0.7 s at 3,000, under the profiler)."""
    if "_post_doms" in cfg.__dict__ or any(not loop.exits for loop in cfg._loops.values()):
        return None
    dummy_exit = object()  # as Numba's _find_post_dominators: one exit after every exit
    for exit in cfg._exit_points:
        cfg._add_edge(exit, dummy_exit)
    try:
        idom = cfg._find_immediate_dominators(
            entry_point=dummy_exit, preds=cfg._succs, succs=cfg._preds,
            back_edges=cfg._find_back_edges(entry_point=dummy_exit, succs=cfg._preds))
    finally:
        cfg._remove_node_edges(dummy_exit)
    node = cfg._entry_point
    if node not in idom:
        return None
    backbone = {node}
    while idom[node] != node:
        node = idom[node]
        backbone.add(node)
    backbone.discard(dummy_exit)
    return backbone
