"""Memory a tape's adjoints will read again, and what happens when it is written first.

A recorded launch replays its kernel in ``backward``, reading its input arrays as they are
*then*. If something wrote those arrays in between (a later launch, ``wp.copy``, ``assign``,
``fill_``, ``zero_``), or the launch read and wrote the same memory under two parameters, the
replay reads the wrong values and the gradient is silently wrong. weft tracks, per live tape,
the memory each record will read (address ranges, so views and aliases count), and before any
write to such memory applies ``wp.config.overwrite_gradients``:

- ``"snapshot"`` (default): copy the memory first and give the copy to the records that read
  it, whose replay then uses it: the gradient stays exact;
- ``"error"``: raise a ``LaunchError`` naming the launch that read, the array and the writer;
- ``"warn"``: warn with the same message and go on.

Writes through numpy views of an array (``a.numpy()[...] = ...``) cannot be intercepted: for
arrays exposed to numpy, a record keeps a CRC-32 of what it read, and ``backward`` refuses to
run its adjoint from memory that changed without a snapshot.
"""
from __future__ import annotations

import bisect
import warnings
import weakref
import zlib

import numpy as np

from ..core import config
from ..core.errors import LaunchError

_LIVE = {}  # id(tape) -> weak reference: tapes holding records whose adjoints read memory


_RANGES = {}  # id(data) -> (weak reference to data, its range): launches ask again and again


def memory_range(data):
    """``(lo, hi)`` byte addresses spanned by numpy or device array ``data`` (None for
    empty)."""
    if data is None:
        return None
    hit = _RANGES.get(id(data))
    if hit is not None and hit[0]() is data:
        return hit[1]
    r = _memory_range(data)
    try:
        if len(_RANGES) > 4096:
            _RANGES.clear()
        _RANGES[id(data)] = (weakref.ref(data), r)
    except TypeError:  # not weakly referenceable: not cached
        pass
    return r


def _memory_range(data):
    if data.size == 0:
        return None
    data = getattr(data, "_ary", data)  # the CUDA simulator's device arrays wrap numpy
    if isinstance(data, np.ndarray):
        ptr = data.__array_interface__["data"][0]
    else:
        ptr = data.__cuda_array_interface__["data"][0]
    lo = hi = ptr
    for n, st in zip(data.shape, data.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + data.dtype.itemsize


def overlaps(a, b):
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def share_memory(a, b):
    """Whether arrays ``a`` and ``b`` (numpy or device data) share an element: exact for host
    memory (two fields of an array of structs interleave without sharing), by address range
    otherwise."""
    a, b = getattr(a, "_ary", a), getattr(b, "_ary", b)
    if not overlaps(memory_range(a), memory_range(b)):
        return False
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        try:
            return bool(np.shares_memory(a, b, max_work=1 << 20))
        except np.exceptions.TooHardError:
            return True
    return True


def checksum(data):
    if not isinstance(data, np.ndarray):
        return None
    return zlib.crc32(np.ascontiguousarray(data).view(np.uint8).reshape(-1))


class ReadSet:
    """The memory the records of one tape will read again: address ranges, each with the
    ``(record, parameter index, array)`` reading it."""

    def __init__(self):
        self.los = []          # sorted distinct range starts
        self.by_lo = {}        # lo -> {hi: [(record, index, array)]}
        self.longest = 0

    def add(self, rng, entry, again=False):
        """Add ``entry`` for range ``rng``; ``again``: unless the same record and parameter
        are there already (a captured launch registers its reads at every replay)."""
        if rng is None:
            return
        lo, hi = rng
        his = self.by_lo.get(lo)
        if his is None:
            bisect.insort(self.los, lo)
            his = self.by_lo[lo] = {}
        entries = his.setdefault(hi, [])
        if again and any(e[0] is entry[0] and e[1] == entry[1] for e in entries):
            return
        entries.append(entry)
        self.longest = max(self.longest, hi - lo)

    def find(self, rng):
        """The ``(lo, hi)`` keys of the ranges overlapping ``rng``."""
        if rng is None or not self.los:
            return []
        out = []
        k = bisect.bisect_left(self.los, rng[1])  # starts below the end of rng
        while k > 0 and self.los[k - 1] > rng[0] - self.longest:
            k -= 1
            lo = self.los[k]
            out += [(lo, hi) for hi in self.by_lo[lo] if hi > rng[0]]
        return out

    def entries(self, key):
        return list(self.by_lo[key[0]][key[1]])

    def discard(self, key, entries):
        """Forget ``entries`` of range ``key`` (protected now, or overwritten)."""
        his = self.by_lo[key[0]]
        left = [e for e in his[key[1]] if not any(e is x for x in entries)]
        if left:
            his[key[1]] = left
            return
        del his[key[1]]
        if not his:
            del self.by_lo[key[0]]
            self.los.remove(key[0])


def watch(tape):
    key = id(tape)
    if key not in _LIVE:
        _LIVE[key] = weakref.ref(tape, lambda _, key=key: _LIVE.pop(key, None))


def watched():
    return bool(_LIVE)


def unwatch(tape):
    _LIVE.pop(id(tape), None)


def before_write(array, writer):
    """``array`` (a wp.array, or numpy data a launch writes in place) is about to be written by
    ``writer`` (a description): protect the records of every live tape that will read its
    memory."""
    if not _LIVE or array is None:  # (Warp's null array: no memory)
        return
    data = array if isinstance(array, np.ndarray) else array._data
    rng = memory_range(data)
    for ref in list(_LIVE.values()):
        tape = ref()
        if tape is None:
            continue
        for key in tape.reads.find(rng):
            hits = [e for e in tape.reads.entries(key) if share_memory(e[2]._data, data)]
            for rec, index, arr in hits:
                _protect(rec, index, arr, writer)  # raises in "error" mode: nothing written
            tape.reads.discard(key, hits)


def read_again(array):
    """Whether a record of a live tape will read memory of ``array`` (a wp.array) again."""
    rng = memory_range(array._data)
    return any(tape is not None and tape.reads.find(rng)
               for tape in (ref() for ref in list(_LIVE.values())))


def _protect(rec, index, arr, writer):
    if index in rec.snapshots:
        return
    what = f"array {_describe(arr)} read by {rec.describe()} is overwritten by {writer} " \
           "before the tape's backward"
    mode = config.overwrite_gradients
    if mode == "snapshot":
        rec.snapshots[index] = copy_of(arr._data)
        return
    msg = (f"{what}: the adjoint would replay from the new values, so the gradient would be "
           "wrong. Write to another array, or set wp.config.overwrite_gradients = 'snapshot'.")
    if mode == "warn":
        warnings.warn(msg, stacklevel=4)
    else:
        raise LaunchError(msg)


def recorded_before(tape, array):
    """Whether a record already on ``tape`` takes memory of ``array`` (a wp.array): then an
    overwrite of it ends its old values' influence on what the tape computed, and backward
    must reset its gradient there. (An array nothing recorded has touched yet, such as an input
    assigned at the start of the tape, keeps its gradient, as in Warp.)"""
    rng = memory_range(array._data)
    if rng is None:
        return False
    for rec in getattr(tape, "launches", ()):
        for a in getattr(rec, "arrays", ()):
            if overlaps(memory_range(a._data), rng) and share_memory(a._data, array._data):
                return True
    return False


def copy_into(dest, data):
    """Copy ``data`` into ``dest`` (a buffer :func:`copy_of` made from the same memory)."""
    if isinstance(dest, np.ndarray):
        np.copyto(dest, data)
    else:
        dest.copy_to_device(data)


def copy_of(data):
    if isinstance(data, np.ndarray):
        return data.copy()
    from numba import cuda
    out = cuda.device_array_like(data)
    out.copy_to_device(data)
    return out


def _describe(arr):
    from ..core import types as T
    return f"of {T.type_name(arr.dtype)} with shape {arr.shape}"


def aliased_params(ck, args):
    """``[(read index, written index)]`` of the parameters of one launch that read and write
    overlapping memory under different names (``launch(k, inputs=[x], outputs=[x])``)."""
    pairs = ck.__dict__.get("_alias_pairs")
    if pairs is None:  # fixed per kernel: computed once
        reads = [ck.param_index(n) for n in ck.abi.reads]
        writes = [ck.param_index(n) for n in ck.abi.writes]
        pairs = ck._alias_pairs = [(r, w) for r in reads for w in writes if r != w]
    if not pairs:
        return []
    data, rng = {}, {}
    for pair in pairs:
        for i in pair:
            if i not in data:
                d = data[i] = getattr(args[i], "_data", None)
                rng[i] = None if d is None else memory_range(d)
    return [(r, w) for r, w in pairs if overlaps(rng[r], rng[w])
            and share_memory(data[r], data[w])]
