"""Checkpoint schedules (weft.checkpoint), pure Python: the memory bounds of each schedule and
the binomial schedule's re-run count equal to the optimum found by exhaustive search."""
from functools import lru_cache

import pytest

from weft.autodiff.checkpoint import plan_cost, reverse_cost, revolve, uniform


@lru_cache(None)
def best_reverse(n, c):
    """Fewest steps run to reverse n steps from a stored start with c free snapshots."""
    if n == 1:
        return 1
    if c == 0:
        return n * (n + 1) // 2
    return min(m + best_reverse(n - m, c - 1) + best_reverse(m, c) for m in range(1, n))


@lru_cache(None)
def best_loop(n, c):
    """The same when the states stored while the loop runs cost nothing to reach."""
    if n == 1:
        return 1
    if c == 0:
        return n * (n + 1) // 2
    return min(best_loop(n - m, c - 1) + best_reverse(m, c) for m in range(1, n))


def test_reverse_cost_closed_form():
    for n in range(1, 40):
        for c in range(0, 6):
            assert reverse_cost(n, c) == best_reverse(n, c)


@pytest.mark.parametrize("k", range(1, 7))
def test_revolve_is_optimal_and_within_memory(k):
    for n in range(1, 60):
        stored, plan = revolve(n, k)
        cost = plan_cost(stored, plan)
        assert cost["rerun_steps"] == best_loop(n, k - 1), (n, k)
        assert cost["stored_peak"] <= k and cost["recorded_peak"] == 1
        reversed_steps = sorted(b for act in plan if act[0] == "reverse"
                                for b in range(act[2], act[3]))
        assert reversed_steps == list(range(n))  # every step reversed exactly once


def test_uniform():
    stored, plan = uniform(100, 10)
    assert stored == list(range(0, 100, 10))
    assert plan_cost(stored, plan) == {"rerun_steps": 100, "recorded_peak": 10,
                                       "stored_peak": 10}
    stored, plan = uniform(10, 3)
    assert stored == [0, 4, 8] and plan[0] == ("reverse", 8, 8, 10)
    assert uniform(5, 50)[0] == [0, 1, 2, 3, 4]
    assert uniform(0, 3) == ([0], [])


def test_revolve_memory_against_uniform_at_scale():
    stored, plan = revolve(1000, 10)
    cost = plan_cost(stored, plan)
    assert cost["stored_peak"] == 10 and cost["recorded_peak"] == 1
    assert cost["rerun_steps"] < 4 * 1000  # 4 sweeps at most: C(10 + 4, 4) = 1001 >= 1000
