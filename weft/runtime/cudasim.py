"""Numba's CUDA simulator, with a block's threads run without a spinning overseer.

The simulator runs each CUDA thread of a block as a Python thread; ``syncthreads`` blocks it
until every live thread of the block has arrived, which the block's manager (``BlockManager``,
in the calling thread) finds by polling the threads. numba-cuda's manager polls without a
pause: while the block's threads compute, it takes the interpreter lock back at every switch
interval only to find them still running, and they run at a fraction of the speed. Measured on
weft's CUDA tile tests (``tests/cuda/test_cuda_tiles.py``, 2 cores, a cold cache): 186 s, and 116 s
with :func:`install` (the test of loops of known trip counts: 14 s of simulation became about
one). The manager here keeps the simulator's protocol (the same flags and events, the same
release when every live thread waits, the same error when a thread fails), and gives the
lock away (``time.sleep(0)``) whenever some thread of the block is still running. When the
calling thread is interrupted (Ctrl-C, a test runner's timeout), the block's threads are told
to stop at their next barrier, as on a thread's error; numba-cuda's left them running, unseen,
beside whatever ran next.

Installed by weft's first simulated CUDA launch or compile (``numba_start``); nothing changes
on a real GPU. A simulator whose manager is not as expected is left as it is.
"""
from __future__ import annotations

import functools
import time

_installed = []


def install():
    """Replace the simulator's ``BlockManager.run`` (once)."""
    if _installed:
        return
    _installed.append(True)
    try:
        from numba.cuda.simulator import kernel as sim
        manager, thread = sim.BlockManager, sim.BlockThread
        import numpy as np
    except (ImportError, AttributeError):
        return
    if not hasattr(manager, "run") or not hasattr(thread, "syncthreads"):
        return

    def run(self, grid_point, *args):
        body = functools.partial(self._f, *args)
        threads = [thread(body, self, grid_point, point, self._debug)
                   for point in np.ndindex(*self._block_dim)]
        try:
            for t in threads:  # (interrupted while starting them: those started stop too)
                t.start()
            _oversee(threads)
        except BaseException:
            # a thread's error, or this thread interrupted (Ctrl-C, a test's timeout): wake the
            # others where they wait, each to stop there rather than run on unseen
            for t in threads:
                t.abort = True
                t.syncthreads_blocked = False
                t.syncthreads_event.set()
            raise
        for t in threads:
            if t.exception:
                err, tb = t.exception
                raise err.with_traceback(tb)

    manager.run = run


def _oversee(threads):
    """Release the block's barriers until its threads have all ended; raise the first error of
    a thread that failed outside a barrier."""
    running = threads
    while running:
        failed = [t for t in running if t.exception and not t.syncthreads_blocked]
        if failed:
            err, tb = failed[0].exception
            raise err.with_traceback(tb)
        running = [t for t in running if t.is_alive()]
        if running and all(t.syncthreads_blocked for t in running):
            for t in running:  # every live thread at the barrier: all go on
                t.syncthreads_blocked = False
                t.syncthreads_event.set()
        elif running:
            time.sleep(0)  # the lock to the block's threads
