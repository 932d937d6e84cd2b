"""``wp.ScopedTimer``: time a block of code, as Warp's.

Example::

    with wp.ScopedTimer("step"):           # prints "step took 1.23 ms" at the end
        wp.launch(step, dim=n, inputs=[x])

    timings = {}
    for _ in range(10):
        with wp.ScopedTimer("step", print=False, dict=timings):
            ...
    timings["step"]                        # ten durations in milliseconds
"""
from __future__ import annotations

import builtins
import cProfile
import threading
import time


def _nothing_launched(device=None):
    """Before the runtime is imported nothing can have been launched: nothing to wait for."""


_synchronize = _nothing_launched


def register_synchronize(fn):
    """Set what :func:`synchronize` calls: the runtime registers ``wp.synchronize``
    (``weft.runtime.device.synchronize``) when it is imported; this module sits in the bottom
    layer and imports nothing above it."""
    global _synchronize
    _synchronize = fn


def synchronize(device=None):
    """Wait until all launched work has finished (``wp.synchronize``, which the runtime
    registers); what ``ScopedTimer(synchronize=True)`` calls."""
    _synchronize(device)


class ScopedTimer:
    """Context manager measuring the wall time of its block in milliseconds (``elapsed``).

    Warp's arguments are accepted; ``use_nvtx`` and ``cuda_filter`` (CUDA profiling) have no
    effect in weft. Nested timers print indented, as Warp's."""

    _local = threading.local()
    enabled = True

    def __init__(self, name, active=True, print=True, detailed=False, dict=None,  # noqa: A002
                 use_nvtx=False, color="rapids", synchronize=False, cuda_filter=0,
                 report_func=None, skip_tape=False):
        self.name = name
        self.active = active and self.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.use_nvtx = use_nvtx
        self.color = color
        self.synchronize = synchronize
        self.cuda_filter = cuda_filter
        self.report_func = report_func
        self.skip_tape = skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""
        self.timing_results = []
        if dict is not None:
            dict.setdefault(name, [])
        if not hasattr(ScopedTimer._local, "indent"):
            ScopedTimer._local.indent = -1

    def __enter__(self):
        if self.active:
            if self.synchronize:
                synchronize()
            if self.detailed:
                self._profile = cProfile.Profile()
                self._profile.enable()
            if self.print:
                ScopedTimer._local.indent += 1
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, exc_type, exc_value, tb):
        if not self.active:
            return False
        if self.synchronize:
            synchronize()
        self.elapsed = (time.perf_counter_ns() - self._start) / 1e6
        if self.detailed:
            self._profile.disable()
            self._profile.print_stats(sort="tottime")
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.print:
            indent = "    " * ScopedTimer._local.indent
            extra = f" {self.extra_msg}" if self.extra_msg else ""
            builtins.print(f"{indent}{self.name} took {self.elapsed:.2f} ms{extra}", flush=True)
            ScopedTimer._local.indent -= 1
        return False
