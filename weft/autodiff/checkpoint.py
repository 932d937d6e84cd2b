"""Checkpoint schedules for :func:`weft.loop`: which loop states are stored while the loop runs,
and the plan the backward pass follows (pure Python: no arrays, so schedules are tested and
compared without running kernels).

A plan is a list of actions over step indices, the state *before* step ``i`` being state ``i``:

- ``("store", a, b)``: restore stored state ``a``, run steps ``a .. b-1`` without recording and
  store state ``b``;
- ``("reverse", a, b, c)``: restore stored state ``a``, run steps ``a .. b-1`` without
  recording, record steps ``b .. c-1`` on a tape and run its backward, seeded with the adjoint
  of state ``c`` (the adjoint of state ``b`` comes out);
- ``("free", a)``: forget stored state ``a``.

Two schedules:

- ``uniform(n, k)``: states ``0, L, 2L, ...`` (``L = ceil(n / k)``) are stored while the loop
  runs, and backward reverses segment after segment: every step runs exactly twice (once in
  the loop, once recorded), memory is ``k`` states plus one recorded segment of ``L`` steps.
  With ``k`` about ``sqrt(n)`` both are ``O(sqrt(n))``: this is the default, because it costs
  one extra forward sweep, the least any checkpointing can cost.
- ``revolve(n, k)``: Griewank's binomial checkpointing with ``k`` stored states (the initial one
  included): at most ``k`` states and one recorded step at a time, and the fewest re-run steps
  possible for that memory (``r`` sweeps for ``n <= C(k - 1 + r, r)``). It pays more
  recomputation to use less memory: choose it when ``k`` must be small (``log(n)``-like).
"""
from __future__ import annotations

import heapq
import math

__all__ = ["uniform", "revolve", "beta", "reverse_cost", "plan_cost"]


def uniform(n, k):
    """``(stored while running, backward plan)`` of ``k`` evenly spaced checkpoints."""
    if n == 0:
        return [0], []
    k = max(1, min(int(k), n))
    seg = -(-n // k)
    starts = list(range(0, n, seg))
    plan = []
    for a in reversed(starts):
        plan.append(("reverse", a, a, min(a + seg, n)))
        plan.append(("free", a))
    return starts, plan


def beta(c, r):
    """``C(c + r, c)``: the most steps ``c`` snapshots reverse when no step runs more than
    ``r`` times (Griewank's binomial bound)."""
    return math.comb(c + r, c)


def _sweeps(n, s):
    """The smallest ``r`` with ``beta(s, r) >= n``."""
    r = 0
    while beta(s, r) < n:
        r += 1
    return r


def reverse_cost(n, c):
    """Steps run to reverse ``n`` steps from a stored start state with ``c`` free snapshots,
    each recorded step counted once: ``n + r n - beta(c + 2, r - 1)`` (the start state acts as
    one of ``c + 1`` snapshots in Griewank's count); ``n (n + 1) / 2`` without snapshots."""
    if n <= 0:
        return 0
    if c == 0:
        return n * (n + 1) // 2
    r = _sweeps(n, c + 1)
    return n + (r * n - beta(c + 2, r - 1) if r > 0 else 0)


def _split(n, c):
    """Where to store the next state in a range of ``n >= 2`` steps reversed with ``c >= 1``
    free snapshots (``s = c + 1`` counting the start state): ``m`` steps ahead with
    ``beta(s, r - 2) <= m <= beta(s, r - 1)`` and ``beta(s - 1, r - 1) <= n - m <=
    beta(s - 1, r)``, ``r`` the smallest with ``beta(s, r) >= n`` (Griewank's optimal range;
    checked against exhaustive search in the tests)."""
    r = _sweeps(n, c + 1)
    low = beta(c + 1, r - 2) if r >= 2 else 1
    return max(1, low, n - beta(c, r))


def _chain(n, c):
    """Lengths of the segments between the states stored while the loop runs: the states of the
    chain are stored for free (the loop computes them anyway), and segment ``i`` is reversed
    with ``c - i`` free snapshots (the later chain states still hold theirs). The total
    ``sum(reverse_cost(len_i, c - i))`` is convex in each length, so giving the steps one by
    one to the segment whose cost grows least is optimal."""
    lengths = [0] * (c + 1)
    heap = [(reverse_cost(1, c - i), i) for i in range(c + 1)]
    heapq.heapify(heap)
    for _ in range(n):
        _, i = heapq.heappop(heap)
        lengths[i] += 1
        b = c - i
        heapq.heappush(heap, (reverse_cost(lengths[i] + 1, b) - reverse_cost(lengths[i], b), i))
    return [m for m in lengths if m]


def revolve(n, k):
    """``(stored while running, backward plan)`` of binomial checkpointing with ``k >= 1``
    stored states (the initial state is one of them)."""
    if n == 0:
        return [0], []
    free = max(0, int(k) - 1)
    lengths = _chain(n, free)
    stored = [0]
    for m in lengths[:-1]:
        stored.append(stored[-1] + m)
    plan = []
    have = set(stored)
    ends = stored[1:] + [n]
    for j in reversed(range(len(stored))):  # the last segment first, each with its budget
        _revolve(stored[j], ends[j], free - j, have, plan)
        plan.append(("free", stored[j]))
        have.discard(stored[j])
    return stored, plan


def _revolve(start, end, free, have, plan):
    n = end - start
    if n == 1:
        plan.append(("reverse", start, start, end))
        return
    if free == 0:
        for j in reversed(range(start, end)):
            plan.append(("reverse", start, j, j + 1))
        return
    mid = start + _split(n, free)
    if mid not in have:
        plan.append(("store", start, mid))
        have.add(mid)
    _revolve(mid, end, free - 1, have, plan)
    plan.append(("free", mid))
    have.discard(mid)
    _revolve(start, mid, free, have, plan)


def plan_cost(stored, plan):
    """``{'rerun_steps', 'recorded_peak', 'stored_peak'}`` of a plan: steps run again in
    backward (recorded ones included), the most steps recorded on a tape at once, the most
    states stored at once."""
    live = set(stored)
    peak = len(live)
    rerun = rec_peak = 0
    for act in plan:
        if act[0] == "store":
            rerun += act[2] - act[1]
            live.add(act[2])
            peak = max(peak, len(live))
        elif act[0] == "reverse":
            rerun += act[3] - act[1]
            rec_peak = max(rec_peak, act[3] - act[2])
        else:
            live.discard(act[1])
    return {"rerun_steps": rerun, "recorded_peak": rec_peak, "stored_peak": peak}
