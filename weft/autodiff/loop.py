"""``weft.loop``: a Python-level loop recorded on the tape as one node that keeps checkpoints of
its state instead of every launch, and recomputes segments of steps in ``backward``.

    def body(i, s):                                  # one step: launches on a PyTree of arrays
        out = State(wp.empty_like(s.x), wp.empty_like(s.v))
        wp.launch(step, dim=n, inputs=[s.x, s.v, drag, dt], outputs=[out.x, out.v])
        return out

    with tape:
        final = wp.loop(body, State(x0, v0), 1000)  # checkpoints: about sqrt(1000) states
        wp.launch(loss_kernel, dim=n, inputs=[final.x], outputs=[loss])
    tape.backward(loss)                              # x0.grad, v0.grad and drag.grad

Outside a tape the loop just runs. On a tape, the steps run unrecorded while the states the
schedule asks for are copied (:mod:`weft.checkpoint`: ``checkpoints=k`` evenly spaced states,
default ``round(sqrt(count))``, or ``schedule="revolve"`` for binomial checkpointing with ``k``
states); the loop returns copies of the final state's arrays (so that re-running the body in
``backward`` cannot touch what the caller holds). ``backward`` restores a checkpoint into fresh
arrays, re-runs its segment under a nested ``wp.Tape`` and runs that tape's backward seeded with
the adjoint of the segment's end state; gradients reach the arrays the body reads without
carrying them in the state (found by recording the first step: parameters such as a drag
array), exactly as if every step had been recorded. ``tape.forward`` runs the steps again from
the initial state, one recorded step at a time (no storage). ``count`` may be 0 or 1.

The body must compute the same thing when run again: its result may depend only on ``i``, its
state and arrays that do not change until ``backward`` (those are protected like any recorded
launch's inputs: overwritten later, they are snapshotted and the re-runs read the snapshot). It
may write only arrays it allocates, arrays of its state, or scratch arrays it keeps between
steps; an array outside the state that the body accumulates into (a loss summed over steps)
belongs in the state. Arrays the body creates for the next state need gradients (create them
with ``requires_grad=True`` or ``empty_like`` of the state's arrays) for gradients to flow, as
on any tape. Statistics of the last run are in the node's ``stats`` (``tape.launches[-1]``).
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from . import checkpoint
from .custom import paused_tapes
from ..core.errors import LaunchError
from ..core.pytree import flatten, unflatten
from ..runtime import hazards
from ..runtime.array import array
from ..runtime.record import Launch
from .tape import Tape, active_tapes

__all__ = ["loop", "LoopNode"]


def loop(body, state, count, checkpoints=None, schedule="uniform"):
    """Run ``state = body(i, state)`` for ``i`` in ``range(count)`` and return the final
    state; on an active tape, record the loop as one checkpointed node (module docstring).

    ``checkpoints``: the number of states stored (the initial one included; default
    ``round(sqrt(count))``, at least 1); ``schedule``: ``"uniform"`` (evenly spaced states,
    each step re-run once in backward) or ``"revolve"`` (binomial: the fewest re-runs for
    that many states, one step recorded at a time).
    """
    count = _check_count(count)
    if schedule not in ("uniform", "revolve"):
        raise ValueError(f"wp.loop: schedule must be 'uniform' or 'revolve', got {schedule!r}")
    if not callable(body):
        raise TypeError(f"wp.loop: body must be a function body(i, state), got {body!r}")
    k = _check_checkpoints(checkpoints, count)
    arrays, spec = flatten(state)
    if active_tapes() and arrays:
        from ..runtime.graph import capturing
        if capturing() is not None:
            raise LaunchError("wp.loop on a tape cannot be captured in a graph: its checkpoints "
                              "are copies taken while the loop runs, and nothing runs during "
                              "a capture. Capture the loop's body instead, or record the loop "
                              "outside the capture")
    if not active_tapes() or not arrays:
        s = state
        for i in range(count):
            s = _step(body, i, s, spec)
        return s
    node = LoopNode(body, spec, arrays, count, k, schedule)
    out = node.run(state)
    active_tapes()[-1].record(node)
    return out


def _check_count(count):
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ValueError(f"wp.loop: count must be an int >= 0, got {count!r}")
    return int(count)


def _check_checkpoints(k, count):
    if k is None:
        return max(1, round(math.sqrt(count)))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"wp.loop: checkpoints must be an int >= 1 (the number of states "
                         f"stored, the initial one included), got {k!r}")
    return int(k)


def _step(body, i, s, spec):
    """One step, its result checked against the state's structure."""
    out = body(i, s)
    arrays, ospec = flatten(out)
    if ospec != spec:
        raise LaunchError(f"wp.loop: body(i={i}, state) returned {ospec!r}, which does not have "
                          f"the structure of the state {spec!r}")
    for a, b in zip(arrays, flatten(s)[0]):
        if a.shape != b.shape or a.dtype is not b.dtype:
            raise LaunchError(f"wp.loop: body(i={i}, state) returned an array of shape "
                              f"{a.shape}, dtype {getattr(a.dtype, '__name__', a.dtype)} where "
                              f"the state has shape {b.shape}, dtype "
                              f"{getattr(b.dtype, '__name__', b.dtype)}")
    return out


def _copy(a):
    return hazards.copy_of(a._data)


def _nbytes(data):
    return int(data.nbytes) if hasattr(data, "nbytes") else int(data.size * data.dtype.itemsize)


class _Checkpoint:
    """A stored state: its structure (with its constants) and copies of its arrays' data."""

    __slots__ = ("spec", "data", "types")

    def __init__(self, state):
        arrays, self.spec = flatten(state)
        self.data = [_copy(a) for a in arrays]
        self.types = [(a.dtype, a.device) for a in arrays]

    @property
    def nbytes(self):
        return sum(_nbytes(d) for d in self.data)

    def restore(self, requires_grad):
        """The state in fresh arrays (the body may write them)."""
        arrays = []
        for d, (dtype, device) in zip(self.data, self.types):
            a = array._wrap(hazards.copy_of(d), dtype, device)
            if requires_grad:
                a.requires_grad = True
            arrays.append(a)
        return unflatten(self.spec, arrays)


def _record_io(rec):
    """``(read, written)`` arrays of a record made by the body (precise for launches, custom
    ops and loops; every array counts as read for other records)."""
    if isinstance(rec, Launch):
        ck = rec.compiled
        written = [rec.args[ck.param_index(n)] for n in ck.abi.writes]
        wid = {id(a) for a in written}
        return [a for a in rec.arrays if id(a) not in wid], written
    io = getattr(rec, "io_arrays", None)
    if io is not None:
        return io()
    return list(rec.arrays), []


def _externals(records, state_arrays):
    """Arrays the recorded step reads before writing them that are not in its state: the
    body's parameters (their gradients come from the re-runs)."""
    local = {id(a) for a in state_arrays}
    out = {}
    for rec in records:
        read, written = _record_io(rec)
        for a in read:
            if id(a) not in local:
                out.setdefault(id(a), a)
        local.update(id(a) for a in written)
    return list(out.values())


class LoopNode:
    """A checkpointed loop on a tape (the tape record protocol)."""

    def __init__(self, body, spec, in_arrays, count, k, schedule):
        self.body, self.spec, self.count = body, spec, count
        self.in_arrays = list(in_arrays)
        self.k, self.schedule = k, schedule
        plan_of = checkpoint.uniform if schedule == "uniform" else checkpoint.revolve
        self.positions, self.plan = plan_of(count, k)
        self.externals = []
        self.outputs = []
        self.checkpoints = {}
        self.snapshots = {}  # external index -> data (filled by the hazard tracker)
        self.checks = {}
        self.stats = {"schedule": schedule, "count": count, "checkpoints": k,
                      **checkpoint.plan_cost(self.positions, self.plan)}

    # ----------------------------------------------------------------- record protocol
    @property
    def arrays(self):
        return list({id(a): a for a in self.in_arrays + self.externals +
                     self.outputs}.values())

    def describe(self):
        return f"wp.loop over {self.count} steps of {getattr(self.body, '__name__', 'body')}()"

    def reads(self):
        return [(k, a) for k, a in enumerate(self.externals) if k not in self.snapshots]

    def io_arrays(self):
        return self.in_arrays + self.externals, list(self.outputs)

    # ----------------------------------------------------------------- running
    def _store(self, i, state):
        self.checkpoints[i] = _Checkpoint(state)
        self._note_memory()

    def _note_memory(self):
        live = sum(c.nbytes for c in self.checkpoints.values())
        st = self.stats
        st["stored_bytes_peak"] = max(st.get("stored_bytes_peak", 0), live)
        st["stored_states_now"] = len(self.checkpoints)

    def run(self, state):
        """The loop itself (tapes paused): store the schedule's states, find the body's
        parameters from the first step, return copies of the final state."""
        stored = set(self.positions)
        s = state
        with paused_tapes():
            for i in range(self.count):
                if i in stored:
                    self._store(i, s)
                if i == 0:
                    probe = Tape()
                    with probe:
                        s = _step(self.body, 0, s, self.spec)
                    self.externals = _externals(probe.launches, self.in_arrays)
                    _drop(probe)
                else:
                    s = _step(self.body, i, s, self.spec)
            if self.count == 0:
                self._store(0, s)
            final, spec = flatten(s)
            self.outputs = [_fresh_copy(a) for a in final]
        return unflatten(spec, self.outputs)

    @contextlib.contextmanager
    def _parameters_as_recorded(self):
        """Parameters overwritten since the loop read their snapshots during re-runs."""
        swapped = []
        for k, data in self.snapshots.items():
            a = self.externals[k]
            swapped.append((a, a._data))
            a._data = data
        for k, crc in self.checks.items():
            if k not in self.snapshots and hazards.checksum(self.externals[k]._data) != crc:
                raise LaunchError(f"an array read by {self.describe()} was modified through "
                                  "numpy after the loop, before backward: re-running the "
                                  "steps would read the new values. Modify a copy, or call "
                                  "backward first.")
        try:
            yield
        finally:
            for a, data in swapped:
                a._data = data

    def backward(self):
        adj = [_grad_copy(o) for o in self.outputs]
        st = self.stats
        st["rerun_steps_done"] = 0
        with self._parameters_as_recorded():
            self._restore_positions()
            for act in self.plan:
                if act[0] == "store":
                    _, a, b = act
                    s = self._advance(self.checkpoints[a].restore(False), a, b)
                    self._store(b, s)
                elif act[0] == "reverse":
                    adj = self._reverse(*act[1:], adj)
                elif act[1] != 0:  # the initial state stays: forward mode, backward again
                    self.checkpoints.pop(act[1], None)
                    st["stored_states_now"] = len(self.checkpoints)
        for a, g in zip(self.in_arrays, adj):
            if a.grad is not None and g is not None:
                _accumulate(a.grad, g)

    def _restore_positions(self):
        """States the loop stored that an earlier backward freed: one sweep from the initial
        state stores them again (only a second backward pays it)."""
        missing = [p for p in self.positions if p not in self.checkpoints]
        if not missing:
            return
        s, at = self.checkpoints[0].restore(False), 0
        for p in missing:
            s = self._advance(s, at, p)
            self._store(p, s)
            at = p

    def _advance(self, s, a, b):
        with paused_tapes():
            for i in range(a, b):
                s = _step(self.body, i, s, self.spec)
        self.stats["rerun_steps_done"] += b - a
        return s

    def _reverse(self, a, b, c, adj):
        """Restore state ``a``, advance to ``b``, record ``b .. c-1`` and back-propagate
        ``adj`` (the adjoint of state ``c``) to the adjoint of state ``b``."""
        s = self._advance(self.checkpoints[a].restore(b == a), a, b)
        if b != a:
            s = unflatten(self.spec, [_with_grad(x) for x in flatten(s)[0]])
        start = flatten(s)[0]
        tape = Tape()
        with paused_tapes(), tape:
            for i in range(b, c):
                s = _step(self.body, i, s, self.spec)
        self.stats["rerun_steps_done"] += c - b
        seeds = [(x, g) for x, g in zip(flatten(s)[0], adj) if g is not None]
        tape.backward(grads=seeds)
        out = [_grad_copy(x) for x in start]
        _drop(tape)
        return out

    def forward(self, tangents):
        """Tangents through the loop: the steps run again from the initial state, each recorded
        on a tape whose records' ``forward`` carry the state's tangents to the next step."""
        s = self.checkpoints[0].restore(False)
        tan = {}
        for x, a in zip(flatten(s)[0], self.in_arrays):
            if tangents.get(a) is not None:
                tan[x] = tangents[a]
        for e in self.externals:
            if tangents.get(e) is not None:
                tan[e] = tangents[e]
        with self._parameters_as_recorded():
            for i in range(self.count):
                tape = Tape()
                with paused_tapes(), tape:
                    s_new = _step(self.body, i, s, self.spec)
                for rec in tape.launches:
                    rec.forward(tan)
                kept = {id(y) for y in flatten(s_new)[0]}
                for x in flatten(s)[0]:
                    if id(x) not in kept:
                        tan.pop(x, None)  # drop the old state's tangents (no storage)
                _drop(tape)
                s = s_new
        for x, o in zip(flatten(s)[0], self.outputs):
            t = tan.get(x)
            tangents[o] = _fresh_copy(t) if t is not None else _zeros(o)


def _drop(tape):
    """Forget a nested tape's records without ``reset`` (which would zero the gradients its
    backward accumulated into the body's parameters)."""
    tape.launches = []
    tape.gradients = {}
    hazards.unwatch(tape)


def _fresh_copy(a):
    out = array._wrap(hazards.copy_of(a._data), a.dtype, a.device)
    out.requires_grad = True
    return out


def _zeros(a):
    return array(np.zeros(a._data.shape, a._data.dtype), dtype=a.dtype, copy=False,
                 device=a.device)


def _with_grad(x):
    x.requires_grad = True
    return x


def _grad_copy(x):
    """A host copy of ``x``'s gradient (None without one)."""
    g = x.grad
    if g is None:
        return None
    return g._data.copy() if isinstance(g._data, np.ndarray) else g._data.copy_to_host()


def _accumulate(g, data):
    def add(d):
        d += data.astype(d.dtype, copy=False)
    g._write(add, "wp.loop's backward")
