"""weft's CPU thread pool: runs a kernel's chunk function on every core.

A CPU kernel compiles to ``k__fwd_chunk(_dim, _lo, _hi, _worker, ...)``, a ``numba.njit``
function without the GIL (``nogil=True``) that runs launch indices ``_lo`` to ``_hi``. The
launch splits the indices into one contiguous slice per worker: the calling thread runs slice
0 and the pool's threads the others, which start as soon as their job is queued, since the
chunk function releases the GIL. Why not Numba's ``parallel=True``: its parfor pipeline costs
1-2 s of compile per kernel function (measured: a kernel's forward 4.4-5.4 s with ``prange``
against 0.7-0.9 s as a chunk function), while a launch through this pool costs about as much
as a parfor's (about 20 us on this project's 2-core machine).

Launches of fewer than ``wp.config.serial_threshold`` indices, launches of a kernel measured
to take under ``MIN_PARALLEL_SECONDS`` on one thread (each chunk function's time per index is
kept from its launches), launches with one thread (``numba.set_num_threads(1)``) and launches
without the JIT (``NUMBA_DISABLE_JIT=1``, for stepping through generated code) run in the
calling thread. Python threads may launch
concurrently: each launch waits for its own slices only. An exception in any slice is raised
in the launching thread once every slice has finished.
"""
from __future__ import annotations

import os
import queue
import threading
from time import perf_counter

import numba

from .. import config

_jobs = queue.SimpleQueue()
_workers = []
_start_lock = threading.Lock()


def _work():
    while True:
        fn, dim, lo, hi, w, args, results, done = _jobs.get()
        try:
            results[w] = fn(dim, lo, hi, w, *args)
        except BaseException as exc:  # handed to the launching thread
            results[w] = _Failed(exc)
        finally:
            done.put(None)


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc):
        self.exc = exc


def _ensure(count):
    """At least ``count`` pool threads running."""
    if len(_workers) >= count:
        return
    with _start_lock:
        while len(_workers) < count:
            t = threading.Thread(target=_work, name=f"weft-worker-{len(_workers) + 1}",
                                 daemon=True)
            t.start()
            _workers.append(t)


def _after_fork():  # a forked child has none of the parent's threads
    global _jobs
    _jobs = queue.SimpleQueue()
    _workers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _size(dim):
    n = 1
    for d in dim:
        n *= d
    return n


#: a launch expected to take less than this on one thread runs in the calling thread: handing
#: slices to the pool's threads costs 30-60 us on this project's machine (waking a thread and
#: passing it the GIL), and memory-bound kernels gain less than 2x from two cores
MIN_PARALLEL_SECONDS = 5e-4
_per_index = {}  # chunk function -> seconds per launch index on one thread (running average)
_called = set()


def _record(fn, seconds, count):
    if count > 0:
        old = _per_index.get(fn)
        new = seconds / count
        _per_index[fn] = new if old is None else 0.5 * (old + new)


def run(fn, dim, args):
    """Call ``fn(dim, lo, hi, worker, *args)`` over slices of the launch ``dim`` (a tuple),
    on every core; returns the workers' results in worker order. A launch whose kernel has
    measured (on its earlier launches) to take under ``MIN_PARALLEL_SECONDS`` runs in the
    calling thread."""
    n = _size(dim)
    count = 1
    if n >= config.serial_threshold and not numba.config.DISABLE_JIT:
        count = max(1, min(numba.get_num_threads(), n))
        cost = _per_index.get(fn)
        if cost is not None and cost * n < MIN_PARALLEL_SECONDS:
            count = 1
    first = fn not in _called  # its first call may compile: not a measurement
    if first:
        _called.add(fn)
    if count == 1:
        t0 = perf_counter()
        out = [fn(dim, 0, n, 0, *args)]
        _record(fn, perf_counter() - t0, 0 if first else n)
        return out
    _ensure(count - 1)
    results = [None] * count
    done = queue.SimpleQueue()
    for w in range(1, count):
        _jobs.put((fn, dim, w * n // count, (w + 1) * n // count, w, args, results, done))
    try:
        t0 = perf_counter()
        results[0] = fn(dim, 0, n // count, 0, *args)
        _record(fn, perf_counter() - t0, 0 if first else n // count)
    finally:
        for _ in range(count - 1):
            done.get()
    for r in results:
        if type(r) is _Failed:
            raise r.exc
    return results
