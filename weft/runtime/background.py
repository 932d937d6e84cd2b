"""Compile adjoints in the background while the forward pass runs.

A launch recorded on a tape will, most likely, have its adjoint run by ``tape.backward()``.
When a kernel's CPU adjoint has not been called yet in this process, the recording launch asks
one helper process (started on first need, fed through a pipe) to compile that adjoint for the
exact argument types the backward pass will pass (the launch's arrays, their gradients or
None), into the disk cache. The forward pass goes on meanwhile, on the other core. When the
backward pass first calls the adjoint: if the helper is compiling it, the call waits for its
answer and Numba then loads the machine code from the cache; if the helper has not begun it
(busy with another, or still starting), the request is taken back and the adjoint compiles
here at once (:func:`wait_for`). The helper takes the newest urgent request first: a backward
pass calls the adjoints in the reverse order of the launches. Nothing but the timing depends on
the helper.

Tiered compiles (``wp.config.tiered_compile``, :func:`tier`): a launch whose threaded CPU
entry is neither called yet nor in the disk cache runs that entry's chunk instead, compiled
here, over the whole launch on Python threads (:class:`WholeLaunch`; the serial twin where the
chunk takes more than the entry's own arguments), and asks the same helper for the threaded
entry, which it compiles once no urgent request is queued, loading the chunk from the cache;
later launches use it once the helper has answered.

Off without a writable disk cache, under ``NUMBA_DISABLE_JIT``, in debug mode, and when
``wp.config.background_compile`` is False (or ``WEFT_BACKGROUND_COMPILE=0``).
"""
from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time

from ..core import config
from ..native._portable import launch_size

HELPER = r'''
import os, pickle, select, struct, sys
from weft.runtime.ahead import compile_entry
fd, out = sys.stdin.fileno(), sys.stdout.buffer
buf, urgent, later, reading = b"", [], [], True
def say(message):
    data = pickle.dumps(message)
    try:
        out.write(struct.pack("<I", len(data)) + data)
        out.flush()
    except OSError:  # the program has exited: finish the queue for its next run
        pass
while True:
    # everything the program has sent; wait for it only with nothing to do
    while reading and (not (urgent or later) or select.select([fd], [], [], 0)[0]):
        part = os.read(fd, 1 << 16)
        if not part:
            reading = False
            break
        buf += part
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack("<I", buf[:4])[0]:
            n = struct.unpack("<I", buf[:4])[0]
            message, buf = pickle.loads(buf[4:4 + n]), buf[4 + n:]
            if message[0] == "cancel":
                urgent[:] = [job for job in urgent if job[0] != message[1]]
                later[:] = [job for job in later if job[0] != message[1]]
            else:
                (urgent if message[2] else later).append((message[1], message[3]))
    if not (urgent or later):
        break
    # the newest urgent request first (a backward pass needs the last recorded launch's
    # adjoint first), then the later ones in order
    key, sig = urgent.pop() if urgent else later.pop(0)
    say(("start", key))
    ok = True
    try:
        compile_entry(*key, sig)
    except BaseException:
        ok = False
    say(("done", key, ok))
'''

_lock = threading.Lock()
_proc = None
_pending = {}   # (module name, function name) -> number of requests not answered yet
_asked = set()  # entries (dispatchers) asked for once: later recorded launches skip them
_failed = False
_started = [None]  # the key the helper said it is compiling now (None: none, or not known)


def _after_fork():  # a forked child must not write into its parent's pipe
    global _proc, _lock
    _proc = None
    _lock = threading.Lock()
    _pending.clear()
    _asked.clear()
    _started[0] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


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
    arguments = [dims, *values, *adjoint_arrays(ck, args)]
    sig = _signature(arguments)
    if sig is None or _cached(fn, sig):
        return  # (a warm cache: loaded now, as the first call would; no helper)
    tiered = target == "cpu" and tiering() and not _sums_privately(fn)
    if tiered:
        # backward will run the chunk (or the serial twin) until the threaded adjoint is
        # there: ask for it, and for the threaded entry once nothing urgent is queued
        first = whole_launch(ck, fn)
        if first is None:
            first, first_arguments = ck.entry("adjoint", "serial"), arguments
        else:
            first, first_arguments = first.dispatcher, [0, launch_size(dims), *arguments]
        if first not in _asked and first not in ck.called:
            _asked.add(first)
            _request(ck, first, first_arguments)
    _ask(ck, fn, sig, urgent=not tiered)


class WholeLaunch:
    """A threaded entry's chunk run over the whole launch: what the serial twin does, with the
    same body compiled once for both (the threaded entry, compiled by the helper, loads the
    chunk's machine code from the disk cache instead of compiling it again). The launch is
    split into the threaded entry's blocks (as many as Numba's threads), run on Python threads
    (the chunk releases the GIL); a block's exception is raised after all have run.
    ``dispatcher`` is the chunk's (a launch's bookkeeping: called, waited for)."""

    def __init__(self, chunk):
        self.dispatcher = chunk

    def __call__(self, dims, *values):
        import numba
        n = launch_size(dims)
        blocks = max(1, min(n, numba.get_num_threads()))
        if blocks == 1:
            self.dispatcher(0, n, dims, *values)
            return
        self.dispatcher(0, 0, dims, *values)  # compiled (or loaded) once, before the threads
        failed = []

        def block(r):
            try:
                self.dispatcher(r * n // blocks, (r + 1) * n // blocks, dims, *values)
            except BaseException as exc:  # noqa: B902 (raised below, on the launching thread)
                failed.append(exc)

        others = [threading.Thread(target=block, args=(r,)) for r in range(1, blocks)]
        for t in others:
            t.start()
        block(0)
        for t in others:
            t.join()
        if failed:
            raise failed[0]


_wholes = {}  # threaded entry -> its WholeLaunch, or None where its chunk cannot run alone


def whole_launch(ck, fn):
    """The :class:`WholeLaunch` of threaded entry ``fn``, or None when ``fn`` hands its chunk
    more than its own parameters over ``launch_size(_dim)`` (per-thread sums, tile blocks)."""
    if fn in _wholes:
        return _wholes[fn]
    import re

    from .compiled import function_source
    src = getattr(ck.module, "__weft_source__", None)
    code = fn.py_func.__code__
    text = function_source(src, code.co_name).split(f"\ndef {code.co_name}(", 1) if src else ()
    body = [line.strip() for line in text[-1].splitlines()[1:] if line.strip()] \
        if len(text) == 2 else []
    if body and body[0].startswith('"""'):  # (the docstring: one line)
        body = body[1:]
    params = ", ".join(code.co_varnames[:code.co_argcount])
    run = re.fullmatch(r"_wk\.parallel_for\((\w+), _wk\.launch_size\(_dim\), \((.*)\)\)",
                       body[0]) if len(body) == 1 else None
    whole = None
    if run and run.group(2).rstrip(",") == params:
        chunk = getattr(ck.module, run.group(1), None)
        whole = WholeLaunch(getattr(chunk, "dispatcher", chunk)) if chunk is not None else None
    _wholes[fn] = whole
    return whole


def tiering():
    import numba
    return config.tiered_compile and os.environ.get("WEFT_TIERED_COMPILE", "1") != "0" and \
        not numba.config.DISABLE_JIT  # nothing compiles: entries are plain functions


def tier(ck, kind, fn, dims, values):
    """The entry a CPU launch of ``ck`` runs when its target is the threaded entry ``fn``, not
    called yet (the caller tests that): ``fn`` once it is in the disk cache or the helper has
    compiled it; until then its chunk over the whole launch (or the serial twin), with ``fn``
    asked of the helper (see the module's docstring)."""
    if not tiering() or _sums_privately(fn):
        return fn  # (such an entry asked for by a recorded launch is waited for or compiled)
    if fn in _asked:  # asked before (by a launch or a recorded launch's adjoint)
        key = (ck.module.__name__, fn.py_func.__name__)
        if _pending.get(key):
            with _lock:
                _take_answers(time.monotonic())  # what has arrived, without waiting
        return _first_tier(ck, kind, fn) if _pending.get(key) else fn
    if ck.abi.debug_sites is not None or not enabled():
        return fn
    _asked.add(fn)
    sig = _signature([dims, *values])
    if sig is None or _cached(fn, sig):
        return fn  # a warm cache: loaded now, as the first call would (no helper)
    first = _first_tier(ck, kind, fn)
    if isinstance(first, WholeLaunch):
        first.dispatcher.compile(_signature([0, 1, dims, *values]))  # the helper loads it
    if not _ask(ck, fn, sig, urgent=False):
        return fn  # the helper cannot be used
    return first


def _first_tier(ck, kind, fn):
    """What runs while threaded entry ``fn`` is not there: its chunk over the whole launch,
    or the serial twin."""
    return whole_launch(ck, fn) or ck.entry(kind, "serial")


class ChunkSerial:
    """A serial launch run by its threaded entry's chunk, over the whole launch in one call:
    the serial twin's work in the serial twin's order, from machine code already there for the
    threaded entry (``wp.load_module``, a larger launch, or the disk cache), so that a small
    launch compiles nothing more. ``dispatcher`` is the chunk's (a launch's bookkeeping)."""

    __slots__ = ("dispatcher",)

    def __init__(self, chunk):
        self.dispatcher = chunk

    def __call__(self, dims, *values):
        self.dispatcher(0, dims[0] if len(dims) == 1 else launch_size(dims), dims, *values)


_serials = {}  # serial twin -> what its kernel's serial launches run (decided at the first)


def serial_entry(ck, kind, serial, dims, values):
    """What a serial launch of ``ck``'s ``kind`` runs, decided at the first such launch in this
    process: a :class:`ChunkSerial` when the serial twin ``serial`` has no machine code here
    yet and the threaded entry's chunk, taking the entry's own arguments, has it for these
    types (here or in the disk cache), else ``serial``. Results are the same either way: the
    chunk's body is the serial twin's over a range of launch indices (``[_lo, _hi)`` for
    ``range(launch_size)``), here run over all of them in order on one thread, so adjoints
    that are serial at any size (an atomic replay's order, threads sharing elements) keep
    their order too."""
    got = _serials.get(serial)
    if got is not None:
        return got
    _serials[serial] = got = _chunk_or_serial(ck, kind, serial, dims, values)
    return got


def _chunk_or_serial(ck, kind, serial, dims, values):
    compiled_here = getattr(serial, "overloads", None)  # (None: NUMBA_DISABLE_JIT, no compiles)
    if compiled_here is None or compiled_here or ck.abi.debug_sites is not None or \
            ck.abi.tie_arrays:
        return serial
    threaded = ck.entry(kind, "cpu")
    whole = None if _sums_privately(threaded) else whole_launch(ck, threaded)
    sig = whole and _signature([0, 1, dims, *values])
    return ChunkSerial(whole.dispatcher) if sig and _cached(whole.dispatcher, sig) else serial


def _sums_privately(fn):
    """Whether threaded entry ``fn`` adds into per-thread copies that it sums after the loop:
    its serial twin adds in another order, so its float results differ in the last bits, and a
    program would give different numbers depending on when the threaded code arrived. Such
    entries are not tiered (their threaded code is deterministic for a thread count)."""
    return "private_buffer" in fn.py_func.__code__.co_names


def _request(ck, fn, arguments, urgent=True):
    """Send entry ``fn`` of ``ck`` for the types of ``arguments`` to the helper (not
    ``urgent``: compiled once no urgent request is queued there); False when it is in the disk
    cache already (then loaded) or cannot be sent. The helper finishes its queue after this
    process exits (it reads until its input closes): the next run finds the code cached."""
    sig = _signature(arguments)
    if sig is None or _cached(fn, sig):
        return False  # (a warm cache: loaded now, as the first call would; no helper)
    return _ask(ck, fn, sig, urgent)


def _ask(ck, fn, sig, urgent):
    """Send the request for ``fn`` of ``ck`` and types ``sig`` (not in the disk cache)."""
    global _failed
    key = (ck.module.__name__, fn.py_func.__name__)
    with _lock:
        try:
            if _proc is None or _proc.poll() is not None:
                _start()
            _take_answers(time.monotonic())  # answers nobody waited for: keep the pipe empty
            _send(pickle.dumps(("compile", key, urgent, sig)))
        except (OSError, pickle.PicklingError):
            _failed = True
            return False
        _pending[key] = _pending.get(key, 0) + 1
    return True


def _signature(arguments):
    """Numba's types of ``arguments``, or None if one has none."""
    import numba
    try:
        return tuple(numba.typeof(v) for v in arguments)
    except (ValueError, TypeError):
        return None


def _send(data):
    _proc.stdin.write(struct.pack("<I", len(data)) + data)
    _proc.stdin.flush()


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
    """Before the first call of ``ck``'s entry ``fn``: if the helper is compiling it, wait (at
    most ``timeout`` seconds) for its answer, so that Numba finds the machine code in the
    cache; if the helper has not begun it (busy with another, or still starting), take the
    request back: compiling it here at once is never slower than waiting behind the queue."""
    global _failed
    if not _pending:  # (the common case: a dict test before any name is built)
        return
    want = (ck.module.__name__, fn.py_func.__name__)
    if not _pending.get(want):
        return
    deadline = time.monotonic() + timeout
    with _lock:
        _take_answers(time.monotonic())  # what the helper has said so far, without waiting
        if _pending.get(want) and _started[0] != want:
            _withdraw(want)
        elif not _take_answers(deadline, want):  # too slow, or the helper died: compile here
            _failed = True
            _pending.clear()


def _withdraw(key):
    """Take the requests for ``key`` back: the helper drops them from its queue (if it began
    one meanwhile, its answer is read and ignored, and the disk cache is written twice with the
    same code)."""
    global _failed
    _pending.pop(key, None)
    try:
        _send(pickle.dumps(("cancel", key)))
    except OSError:
        _failed = True


def finish(timeout=600.0):
    """Wait (at most ``timeout`` seconds) until the helper has answered every request:
    afterwards every entry asked for is in the disk cache (or failed there and compiles here).
    True when nothing is left pending."""
    deadline = time.monotonic() + timeout
    with _lock:
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
        message = pickle.loads(frame)
        if message[0] == "start":
            _started[0] = message[1]
            continue
        done = message[1]
        if _started[0] == done:
            _started[0] = None
        left = _pending.get(done, 0) - 1
        if left > 0:
            _pending[done] = left
        else:
            _pending.pop(done, None)
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
