"""Live-variable and dead-variable analysis of Numba IR with sets of names held as bits.

The functions here give what Numba's ``analysis.compute_live_map`` and ``compute_dead_maps``
give, from any Numba core's IR and control-flow graph (``numba.core``'s or numba-cuda's copy;
``numba_passes`` wraps them for each). A set of names is a Python integer, one bit per name
(:class:`Bits`): an adjoint keeps every forward value it needs (a branch's condition, say)
from the replay through the reverse sweep, so those values are live in every block between
and Numba's sets of names grew with the square of the kernel; as integers each union or
difference is a few machine words.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np


class Bits:
    """Sets of variable names as Python integers, one bit per name (in order of first use):
    the live sets of an adjoint hold every forward value kept for the reverse sweep in every
    block between (a branch's condition, say), so their unions and differences, as sets, grew
    with the square of the kernel; as integers they cost a few machine words each."""

    __slots__ = ("index", "names")

    def __init__(self):
        self.index = {}
        self.names = []

    def of(self, names):
        index = self.index
        bits = 0
        for name in names:
            k = index.get(name)
            if k is None:
                k = index[name] = len(self.names)
                self.names.append(name)
            bits |= 1 << k
        return bits


def names_of(names, bits):
    """The set of names whose bits are set in ``bits``: one bit at a time for a few (most
    dead sets), else unpacked by NumPy (clearing a bit copies the whole integer)."""
    table = names.names
    if bits.bit_count() <= 16:
        out = set()
        while bits:
            low = bits & -bits
            out.add(table[low.bit_length() - 1])
            bits ^= low
        return out
    raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), np.uint8)
    return {table[k] for k in np.flatnonzero(np.unpackbits(raw, bitorder="little")).tolist()}


def live_bits(cfg, blocks, var_use_map, var_def_map):
    """``numba_passes.compute_live_map``'s sets as bits: ``(names, {block: live},
    {block: defined})`` (:class:`Bits`; the definitions for the dead maps)."""
    names = Bits()
    use = {label: names.of(var_use_map[label]) for label in blocks}
    defs = {label: names.of(var_def_map[label]) for label in blocks}
    order = cfg.topo_order()
    if not order:
        return names, dict(use), defs
    live = live_fixed_point(cfg, blocks, use, defs, order, {})
    entry = order[0]
    leaky = live[entry] & ~use[entry]
    if not leaky:
        return names, live, defs
    reach = {label: 1 << k for k, label in enumerate(order)}  # itself, then what it reaches
    changed = True
    while changed:
        changed = False
        for label in reversed(order):
            mask = reach[label]
            for succ, _ in cfg.successors(label):
                mask |= reach.get(succ, 0)
            if mask != reach[label]:
                reach[label] = mask
                changed = True
    leaky_names = names_of(names, leaky)
    mentioned = dict.fromkeys(leaky_names, 0)  # the blocks reached from where each is mentioned
    for label in order:
        for name in (var_def_map[label] | var_use_map[label]) & leaky_names:
            mentioned[name] |= reach[label]
    everything = (1 << len(order)) - 1
    stopped = defaultdict(int)  # block -> the variables that may not become live there
    for name, mask in mentioned.items():
        bit = 1 << names.index[name]
        rest = everything & ~mask
        while rest:
            low = rest & -rest
            stopped[order[low.bit_length() - 1]] |= bit
            rest ^= low
    return names, live_fixed_point(cfg, blocks, use, defs, order, stopped), defs


def live_fixed_point(cfg, blocks, use, defs, order, stopped):
    """Live variables at each block's entry, as Numba's fixed point finds them, where
    ``stopped[block]`` never becomes live.

    Numba sweeps every block in reverse topological order until a sweep changes nothing; where
    a kernel's body is a loop (a chunk's loop over its launch indices) around a long chain of
    branches, each sweep grows the sets of only part of the loop, and the sweeps, each through
    every block, multiplied: 23.6 s of a 2,000-``if`` kernel's compile (2.0 s at 1,000). Here a
    work list revisits only the predecessors of a block whose set grew, in the same order: the
    same least fixed point of the same equations."""
    index = set(order)
    live_map = dict(use)
    work = list(order)  # popped from the end: the last block first, as Numba's sweep
    queued = set(work)
    while work:
        label = work.pop()
        queued.discard(label)
        live = live_map[label]
        if not live:
            continue
        for pred, _ in cfg.predecessors(label):
            if pred in index:
                more = live & ~defs[pred] & ~stopped.get(pred, 0)
                target = live_map[pred]
                if more & ~target:
                    live_map[pred] = target | more
                    if pred not in queued:
                        queued.add(pred)
                        work.append(pred)
    return live_map


def dead_maps(cfg, blocks, names, live, defs):
    """Numba's dead-variable maps ``(internal, escaping, combined)`` from live and definition
    sets as bits (:class:`Bits`); the maps are small (each variable dies in a few places),
    made into sets at the end."""
    escaping = defaultdict(int)
    internal = {}
    exits = 0
    for offset, ir_block in blocks.items():
        cur_live = live[offset] | defs[offset]
        succs = [out_blk for out_blk, _ in cfg.successors(offset)]
        terminator = names.of(v.name for v in ir_block.terminator.list_vars())
        combined = terminator
        for out_blk in succs:
            combined |= live[out_blk]
        internal[offset] = dead = cur_live & ~combined
        escaping_live = cur_live & ~dead
        for out_blk in succs:
            escaping[out_blk] |= escaping_live & ~(live[out_blk] | defs[out_blk])
        if not succs:
            exits |= terminator
    every_live = 0
    for bits in live.values():
        every_live |= bits
    every_dead = exits
    for bits in internal.values():
        every_dead |= bits
    for bits in escaping.values():
        every_dead |= bits
    missing = every_live & ~every_dead
    if missing and cfg.exit_points():  # (without exit points it cannot be checked)
        raise RuntimeError(f"liveness info missing for vars: {names_of(names, missing)}")
    internal_map = defaultdict(set, ((k, names_of(names, v)) for k, v in internal.items()))
    escaping_map = defaultdict(set, ((k, names_of(names, escaping.get(k, 0)))
                                     for k in {**escaping, **dict.fromkeys(blocks)}))
    combined_map = {k: names_of(names, internal.get(k, 0) | escaping.get(k, 0)) for k in blocks}
    return internal_map, escaping_map, combined_map
