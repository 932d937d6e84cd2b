"""Geometry ids: how a kernel reaches a ``wp.Volume``, ``wp.HashGrid`` or ``wp.Mesh`` from the
``uint64`` it is given (Warp's ``volume.id``, ``grid.id``, ``mesh.id``).

An id is the address of the object's *descriptor*, a small int64 array::

    [MAGIC, kind, n_arrays, (address, length) of each array..., scalars...]

The query helpers (``weft.stdlib.geometry``) read the descriptor and make array views of the
object's flat numpy arrays from the addresses (:mod:`weft.native.geometry.views`), so one ``uint64`` is
all a kernel needs, in a parameter, a struct or an array of ids, as in Warp. When the object
rebuilds (a hash grid growing its buffers, a mesh refitting), its descriptor is rewritten in
place and the id stays.

Safety: ids are checked at launch (:func:`check_id`): a ``uint64`` argument that a kernel passes
to a geometry query must be a live id of the right kind, so a freed or made-up id is a
``LaunchError`` before anything runs, never a read of freed memory. Uncompiled code (Numba's
``NUMBA_DISABLE_JIT`` and the CUDA simulator) finds the arrays through :func:`python_view`,
which only knows registered arrays.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

MAGIC = 0x7766_7466_6765_6F6D  # "wftfgeom"-ish tag: the descriptor's first word
KIND_VOLUME, KIND_HASH_GRID, KIND_MESH, KIND_BVH = 1, 2, 3, 4
KIND_NAMES = {KIND_VOLUME: "wp.Volume", KIND_HASH_GRID: "wp.HashGrid", KIND_MESH: "wp.Mesh",
              KIND_BVH: "wp.Bvh"}
HEADER = 3  # MAGIC, kind, number of arrays
#: a mesh's average-edge-length word until a kernel first needs the value after a build or
#: refit (``kernel_api._mesh_average``): a signalling-NaN pattern, which no float32 average
#: converted to float64 has (conversion quiets a NaN)
AVG_STALE = 0x7FF4_0000_57A1_E000

# re-entrant: a collection that runs while the lock is held (numpy's ``a.ctypes`` allocates)
# may finalize another object, whose ``release`` then takes the lock again in the same thread
# (with a plain Lock that deadlocked: a test suite's worker hung in HashGrid.__del__)
_lock = threading.RLock()
_LIVE = {}      # id -> Descriptor
_FREED = set()  # ids of released descriptors (for a clear error)
_BUFFERS = {}   # address -> the registered numpy array there (python_view)
_serial = itertools.count(1)


class Descriptor:
    """The descriptor of one geometry object (see the module docstring)."""

    def __init__(self, kind, arrays, scalars=()):
        self.kind = kind
        self.n_arrays = len(arrays)
        self.words = np.zeros(HEADER + 2 * len(arrays) + len(scalars), np.int64)
        self.words[:HEADER] = (np.int64(MAGIC - (1 << 64)) if MAGIC >= 1 << 63 else MAGIC,
                               kind, len(arrays))
        self.arrays = []
        self.attached = {}  # word -> the array whose address it holds (attach)
        self.owner = None   # a weak reference to the host object, for the runtime
        self.set(arrays, scalars)
        self.id = int(self.words.ctypes.data)
        with _lock:
            _LIVE[self.id] = self
            _FREED.discard(self.id)
            _BUFFERS[self.id] = self.words

    def set(self, arrays, scalars=()):
        """Point the descriptor at new arrays (after a rebuild); the id stays."""
        if len(arrays) != self.n_arrays:
            raise ValueError("a descriptor keeps its number of arrays")
        arrays = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
        with _lock:
            for old in self.arrays:
                if _BUFFERS.get(old.ctypes.data) is old:
                    del _BUFFERS[old.ctypes.data]
            for k, a in enumerate(arrays):
                self.words[HEADER + 2 * k] = a.ctypes.data
                self.words[HEADER + 2 * k + 1] = a.shape[0]
                if a.shape[0]:
                    _BUFFERS[a.ctypes.data] = a
            self._write_scalars(scalars)
        self.arrays = arrays  # kept alive while the descriptor points at them

    def set_scalars(self, scalars):
        """Rewrite the scalars only (a refit: the arrays are the same buffers, rewritten in
        place)."""
        with _lock:
            self._write_scalars(scalars)

    def _write_scalars(self, scalars):
        base = HEADER + 2 * self.n_arrays
        for k, s in enumerate(scalars):
            self.words[base + k] = s

    def attach(self, word, a):
        """Put the address of flat array ``a`` (None: 0) into ``words[word]`` (a gradient or
        tangent buffer a launch uses); the descriptor keeps it alive until replaced."""
        with _lock:
            old = self.attached.pop(word, None)
            if old is not None and _BUFFERS.get(old.ctypes.data) is old:
                del _BUFFERS[old.ctypes.data]
            if a is None:
                self.words[word] = 0
                return
            a = a.reshape(-1)
            self.words[word] = a.ctypes.data
            self.attached[word] = a
            if a.shape[0]:
                _BUFFERS[a.ctypes.data] = a

    def release(self):
        with _lock:
            if _LIVE.pop(self.id, None) is not None:
                _FREED.add(self.id)
                _BUFFERS.pop(self.id, None)
                for a in self.arrays + list(self.attached.values()):
                    if _BUFFERS.get(a.ctypes.data) is a:
                        del _BUFFERS[a.ctypes.data]


def float_bits(x):
    """A float64's bits as an int64 descriptor word (read back with ``bits_float``)."""
    return int(np.array([x], np.float64).view(np.int64)[0])


def check_id(value, kind, what):
    """The error message for ``value`` used as an id of ``kind`` (None when it is live)."""
    try:
        key = int(value)
    except (TypeError, ValueError):
        return f"{what} must be a {KIND_NAMES[kind]} id (an integer), got {type(value).__name__}"
    d = _LIVE.get(key)
    if d is not None and d.kind == kind:
        return None
    if d is not None:
        return f"{what} is the id of a {KIND_NAMES[d.kind]}, not of a {KIND_NAMES[kind]}"
    if key in _FREED:
        return f"{what} is the id of a {KIND_NAMES[kind]} that has been freed"
    if key == 0:
        return f"{what} is 0, not a {KIND_NAMES[kind]} id (was the object created?)"
    return f"{what} ({key:#x}) is not the id of a live {KIND_NAMES[kind]}"


def python_view(address, length, dtype):
    """The registered array at ``address`` viewed as ``length`` elements of ``dtype`` (the
    uncompiled twin of the compiled views)."""
    if int(length) == 0:
        return np.zeros(0, dtype)
    a = _BUFFERS.get(int(address))
    if a is None:
        raise RuntimeError(f"weft: no geometry buffer at address {int(address):#x}")
    return a.view(dtype)[:int(length)]
