"""weft's CPU thread pool: runs a kernel's chunk function on every core.

A CPU kernel compiles to ``k__fwd_chunk(_dim, _lo, _hi, _worker, ...)``, a ``numba.njit``
function without the GIL (``nogil=True``) that runs launch indices ``_lo`` to ``_hi``. The
launch splits the indices into one contiguous slice per worker: the calling thread runs slice
0 and the pool's threads the others, which start as soon as their job is queued, since the
chunk function releases the GIL. Why not Numba's ``parallel=True``: its parfor pipeline costs
1-2 s of compile per kernel function (measured: a kernel's forward 4.4-5.4 s with ``prange``
against 0.7-0.9 s as a chunk function), while a launch through this pool costs about as much
as a parfor's (about 20 us on this project's 2-core machine).

Whether a launch uses the pool is measured, per kernel and launch size (by powers of two):
the first launch of a size uses the pool (untimed: it may compile), the next one too, timed
(wall time); when it took under ``LONG_SECONDS`` the next runs in the calling thread, timed,
and later launches take the faster way, timing the other again every ``PROBE_EVERY``
launches. Handing slices to the
pool's threads costs 30-60 us on this project's 2-core machine (waking a thread, passing it the
GIL), and memory-bound kernels may gain nothing from a second core (Warp's wave example: a
16k-cell update took as long on two threads as on one), so for many kernels one thread wins.
Launches of fewer than ``wp.config.serial_threshold`` indices, launches with one thread
(``numba.set_num_threads(1)``) and launches without the JIT (``NUMBA_DISABLE_JIT=1``, for
stepping through generated code) always run in the calling thread. Python threads may launch
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


#: every this many launches of one kernel and size, the way not chosen is timed again
PROBE_EVERY = 64
#: launches that take longer than this with the pool always use it
LONG_SECONDS = 2e-3
# (chunk function, launch size's bit length) -> [seconds per index on one thread, seconds per
# index with the pool (wall time), launches]: running averages of the launch's wall time
_timing = {}


def _average(old, new):
    return new if old is None else 0.5 * (old + new)


def _choose(fn, n, threads):
    """How many threads to run this launch with: the faster way as measured on launches of
    the same kernel and about the same size."""
    if threads == 1:
        return 1, None
    key = (fn, n.bit_length())
    t = _timing.get(key)
    if t is None:  # the first launch of this size may compile: threaded, not timed
        _timing[key] = [None, None, 0]
        return threads, None
    t[2] += 1
    serial, pooled = t[0], t[1]
    if pooled is None or pooled * n > LONG_SECONDS:
        return threads, t  # long launches: the pool's cost is lost in the noise
    if serial is None:
        return 1, t
    threaded = pooled < serial
    if t[2] % PROBE_EVERY == 0:  # conditions change (the machine's load): look again
        threaded = not threaded
    return (threads if threaded else 1), t


def run(fn, dim, args):
    """Call ``fn(dim, lo, hi, worker, *args)`` over slices of the launch ``dim`` (a tuple);
    returns the workers' results in worker order. Each launch runs on every core or in the
    calling thread, whichever was measured faster for this kernel at this size."""
    n = _size(dim)
    threads = 1
    if n >= config.serial_threshold and not numba.config.DISABLE_JIT:
        threads = max(1, min(numba.get_num_threads(), n))
    count, timing = _choose(fn, n, threads)
    t0 = perf_counter()
    if count == 1:
        out = [fn(dim, 0, n, 0, *args)]
    else:
        out = _threaded(fn, dim, n, count, args)
    if timing is not None:
        k = 0 if count == 1 else 1
        timing[k] = _average(timing[k], (perf_counter() - t0) / n)
    return out


def _threaded(fn, dim, n, count, args):
    _ensure(count - 1)
    results = [None] * count
    done = queue.SimpleQueue()
    for w in range(1, count):
        _jobs.put((fn, dim, w * n // count, (w + 1) * n // count, w, args, results, done))
    try:
        results[0] = fn(dim, 0, n // count, 0, *args)
    finally:
        for _ in range(count - 1):
            done.get()
    for r in results:
        if type(r) is _Failed:
            raise r.exc
    return results
