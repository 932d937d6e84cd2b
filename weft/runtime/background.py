"""Compile adjoints in the background while the forward pass runs.

A launch recorded on a tape will, most likely, have its adjoint run by ``tape.backward()``.
When a kernel's CPU adjoint has not been called yet in this process, the recording launch asks
one helper process (started on first need, fed through a pipe) to compile that adjoint for the
exact argument types the backward pass will pass (the launch's arrays, their gradients or
None), into the disk cache. The forward pass goes on meanwhile, on the other core; when the
backward pass first calls the adjoint it waits for the helper's answer for that function (it
is usually done), and Numba then loads the machine code from the cache instead of compiling
it. If the helper fails or is slow, the adjoint compiles here as without it: nothing but the
timing depends on the helper.

Tiered compiles (``wp.config.tiered_compile``, :func:`tier`): a launch whose threaded CPU
entry is neither called yet nor in the disk cache runs the kernel's serial twin instead (a
plain loop compiles in a fraction of a parfor's time) and asks the same helper for the threaded
entry; later launches use it once the helper has answered.

Off without a writable disk cache, under ``NUMBA_DISABLE_JIT``, in debug mode, and when
``wp.config.background_compile`` is False (or ``WEFT_BACKGROUND_COMPILE=0``).
"""
from __future__ import annotations

import atexit
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time

from ..core import config
from .hooks import tapes as _tapes  # the live list of recording tapes

HELPER = r'''
import pickle, struct, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
from weft.runtime.ahead import compile_entry
while True:
    head = inp.read(4)
    if len(head) < 4:
        break
    modname, fname, sig = pickle.loads(inp.read(struct.unpack("<I", head)[0]))
    ok = True
    try:
        compile_entry(modname, fname, sig)
    except BaseException:
        ok = False
    data = pickle.dumps(((modname, fname), ok))
    try:
        out.write(struct.pack("<I", len(data)) + data)
        out.flush()
    except OSError:  # the program has exited: finish the queue for its next run
        pass
'''

_lock = threading.Lock()
_proc = None
_pending = {}   # (module name, function name) -> number of requests not answered yet
# threaded entries wanted only for later launches (tiering): sent once no request a launch may
# wait for is left and no tape records, so that a serial twin the backward pass needs is never
# queued behind a parfor's compile of several seconds
_deferred = []  # pickled requests not sent yet (counted in _pending)
_urgent = set()  # keys of sent requests a launch may wait for, until answered
_asked = set()  # entries (dispatchers) asked for once: later recorded launches skip them
_failed = False


def _after_fork():  # a forked child must not write into its parent's pipe
    global _proc, _lock
    _proc = None
    _lock = threading.Lock()
    _pending.clear()
    _asked.clear()
    _deferred.clear()
    _urgent.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


@atexit.register
def _send_deferred_at_exit():
    """A program that ends with threaded entries still deferred sends them: the helper finishes
    its queue after this process exits (it reads until its input closes), so the next run finds
    the threaded code in the cache."""
    if _deferred and _proc is not None:
        with _lock:
            _flush(force=True)


def enabled():
    import numba

    from ..core import diskcache
    from .cache import cache_dir
    flag = os.environ.get("WEFT_BACKGROUND_COMPILE", "1") != "0"
    return (flag and config.background_compile and not _failed and
            not numba.config.DISABLE_JIT and cache_dir() is not None and diskcache.writable())


def _start():
    global _proc
    from .ahead import helper_env
    _proc = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=helper_env(), bufsize=0)


def request_adjoint(ck, dims, values, args):
    """Ask the helper to compile the CPU adjoint entry that backward will call for this
    recorded launch of ``ck`` (threaded or serial, by its size), for the types of ``values``
    (the kernel's arguments) and of the adjoint arrays of ``args`` (the user's arguments).
    Once per entry: later launches return at the first test."""
    if ck.device_kind != "cpu" or ck.abi.debug_sites is not None or ck.abi.tie_arrays or \
            ck.abi.no_derivative:
        return
    from .args import adjoint_arrays
    from .compiled import cpu_target
    target = cpu_target(ck, "adjoint", dims)
    fn = ck.entry("adjoint", target)
    if fn in _asked:
        return
    _asked.add(fn)
    if fn in ck.called or not enabled():
        return
    arguments = lambda: [dims, *values, *adjoint_arrays(ck, args)]  # noqa: E731
    if target == "cpu" and tiering() and not _sums_privately(fn):
        # backward will run the serial twin until the threaded adjoint is there: ask for the
        # twin first, and for the threaded entry when nothing urgent is left
        twin = ck.entry("adjoint", "serial")
        if twin not in _asked and twin not in ck.called:
            _asked.add(twin)
            _request(ck, twin, arguments)
        _request(ck, fn, arguments, urgent=False)
        return
    _request(ck, fn, arguments)


def tiering():
    import numba
    return config.tiered_compile and os.environ.get("WEFT_TIERED_COMPILE", "1") != "0" and \
        not numba.config.DISABLE_JIT  # nothing compiles: entries are plain functions


def tier(ck, kind, fn, dims, values):
    """The entry a CPU launch of ``ck`` runs when its target is the threaded entry ``fn``, not
    called yet (the caller tests that): ``fn`` once it is in the disk cache or the helper has
    compiled it; until then the serial twin, with ``fn`` asked of the helper (see the
    module's docstring)."""
    if not tiering():
        return fn
    if fn in _asked:  # asked before (by a launch or a recorded launch's adjoint)
        key = (ck.module.__name__, fn.py_func.__name__)
        if _pending.get(key):
            with _lock:
                _take_answers(time.monotonic())  # what has arrived, without waiting
                _flush()
        return ck.entry(kind, "serial") if _pending.get(key) else fn
    if ck.abi.debug_sites is not None or not enabled() or _sums_privately(fn):
        return fn
    _asked.add(fn)
    if not _request(ck, fn, lambda: [dims, *values], urgent=False):
        return fn  # in the cache (now loaded), or the helper cannot be used
    return ck.entry(kind, "serial")


def _sums_privately(fn):
    """Whether threaded entry ``fn`` adds into per-thread copies that it sums after the loop:
    its serial twin adds in another order, so its float results differ in the last bits, and a
    program would give different numbers depending on when the threaded code arrived. Such
    entries are not tiered (their threaded code is deterministic for a thread count)."""
    return "private_buffer" in fn.py_func.__code__.co_names


def _request(ck, fn, arguments, urgent=True):
    """Send entry ``fn`` of ``ck`` for the types of ``arguments()`` to the helper (not
    ``urgent``: once no urgent request is pending); False when it is in the disk cache already
    (then loaded) or cannot be sent."""
    global _failed
    import numba
    try:
        sig = tuple(numba.typeof(v) for v in arguments())
    except (ValueError, TypeError):
        return False
    if _cached(fn, sig):
        return False  # a warm cache: loaded now, as the first call would (no helper)
    key = (ck.module.__name__, fn.py_func.__name__)
    with _lock:
        try:
            if _proc is None or _proc.poll() is not None:
                _start()
            _take_answers(time.monotonic())  # answers nobody waited for: keep the pipe empty
            data = pickle.dumps(key + (sig,))
            if urgent:
                _send(data)
                _urgent.add(key)
            else:
                _deferred.append((key, data))
        except (OSError, pickle.PicklingError):
            _failed = True
            return False
        _pending[key] = _pending.get(key, 0) + 1
        _flush()
    return True


def _send(data):
    _proc.stdin.write(struct.pack("<I", len(data)) + data)
    _proc.stdin.flush()


def _flush(force=False):
    """Send the deferred requests once no urgent one is pending and no tape is recording
    (whose launches may still ask for adjoints the backward pass will wait for), or
    ``force``."""
    global _failed
    if not _deferred:
        return
    if force or not (_tapes or _urgent):
        try:
            for _key, data in _deferred:
                _send(data)
        except OSError:
            _failed = True
        _deferred.clear()


def _cached(disp, sig):
    """Whether ``disp`` has machine code for ``sig`` (added from the disk cache if there)."""
    if tuple(sig) in disp.overloads:
        return True
    cache = getattr(disp, "_cache", None)
    cres = cache.load_overload(sig, disp.targetctx) if cache is not None else None
    if cres is None:
        return False
    disp.add_overload(cres)
    return True


def wait_for(ck, fn, timeout=120.0):
    """Before the first call of ``ck``'s entry ``fn``: wait (at most ``timeout`` seconds) for
    the helper's answers about it, so that Numba finds its machine code in the cache."""
    global _failed
    if not _pending:  # (the common case: a dict test before any name is built)
        return
    want = (ck.module.__name__, fn.py_func.__name__)
    if not _pending.get(want):
        return
    deadline = time.monotonic() + timeout
    with _lock:
        if any(key == want for key, _data in _deferred):
            _flush(force=True)  # not sent yet: send it (and the others deferred) now
        if not _take_answers(deadline, want):  # too slow, or the helper died: compile here
            _failed = True
            _pending.clear()
            _deferred.clear()
            _urgent.clear()
        _flush()


def finish(timeout=600.0):
    """Send every deferred request and wait (at most ``timeout`` seconds) until the helper has
    answered all: afterwards every entry asked for is in the disk cache (or failed there and
    compiles here). True when nothing is left pending."""
    deadline = time.monotonic() + timeout
    with _lock:
        _flush(force=True)
        while _pending and _proc is not None and time.monotonic() < deadline:
            if not _take_answers(deadline, next(iter(_pending))):
                break
    return not _pending


def _take_answers(deadline, want=None):
    """Read the helper's answers: those already there, and until none is pending for ``want``
    (a function) if given; False when the helper died or the deadline passed first."""
    while _proc is not None:
        if want is not None and not _pending.get(want):
            return True
        head = _read(4, deadline)
        frame = head and _read(struct.unpack("<I", head)[0], deadline)
        if not frame:  # an answer is written whole in one write: no partial frame is left
            return want is None and _proc.poll() is None
        done, _ok = pickle.loads(frame)
        left = _pending.get(done, 0) - 1
        if left > 0:
            _pending[done] = left
        else:
            _pending.pop(done, None)
            _urgent.discard(done)
    return want is None


def _read(n, deadline):
    """``n`` bytes from the helper, or None when it closed its end or the deadline passed."""
    fd = _proc.stdout.fileno()
    out = b""
    while len(out) < n:
        left = max(0.0, deadline - time.monotonic())  # 0: only what is there already
        if not select.select([fd], [], [], left)[0]:
            return None
        part = os.read(fd, n - len(out))
        if not part:
            return None
        out += part
    return out
