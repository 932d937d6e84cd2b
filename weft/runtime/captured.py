"""A launch made during a graph capture (:mod:`weft.runtime.graph`), and what its replays do
for the tapes (:mod:`weft.runtime.hazards`).

Nothing runs at capture, so what an eager launch does around its kernel happens at every
replay instead, in the same order: a launch recorded on a tape copies its own snapshots (the
memory it reads and then overwrites) from the values it is about to read, and drops the
snapshots an earlier replay's writes left; the memory it writes is protected for the records
that will read it (when a tape reads it at capture); after the kernel its reads are registered
again, as a fresh record's would be. A captured ``tape.backward`` then replays the adjoints
from the values this replay's forward read (``Tape.backward`` records each record's
``backward`` in the graph). A custom op does the same at its place (:func:`capture_record`).
"""
from __future__ import annotations

from . import hazards
from .array import array
from .entries import bound_forward
from .record import Launch, atomic_moved, atomic_start


def capture_launch(graph, ck, dims, values, args, device, tape, snapshots):
    """Record a checked and bound launch in ``graph``; ``tape``: the tape it is recorded on
    (None: none) with ``snapshots`` its own (parameter index -> buffer)."""
    rec = None
    if tape is not None:
        rec = Launch(ck, dims, args, device, dict(snapshots))
        tape.record(rec)
    writes = [a for a in (args[ck.param_index(n)] for n in ck.abi.writes)
              if isinstance(a, array)]
    if rec is not None or any(hazards.read_again(a) for a in writes):
        graph.record(_before(rec, snapshots, values, writes, f"a launch of kernel '{ck.key}'"))
    atomics = {} if rec is not None and ck.abi.atomic_reads else None
    if atomics is not None:  # each replay checks the arrays its atomics' old values came from
        graph.record(lambda: atomics.update(atomic_start(ck, values)))
    graph.record(*bound_forward(ck, dims, values, device), is_launch=True)
    if atomics is not None:
        graph.record(lambda: setattr(rec, "unreplayable", atomic_moved(ck, values, atomics)))
    if rec is not None:
        graph.record(lambda: tape.register_reads(rec, again=True))


def capture_record(graph, tape, rec):
    """A record other than a launch (a custom op) made during a capture: at every replay, at
    its place, the snapshots earlier writes of the replay took for it are dropped (they hold
    values from before the memory it reads was written) and its reads registered again."""
    def restart():
        rec.restart()
        tape.register_reads(rec, again=True)
    graph.record(restart)


def _before(rec, snapshots, values, writes, writer):
    def before():
        if rec is not None:
            for i, buf in snapshots.items():
                hazards.copy_into(buf, values[i])
            rec.snapshots.clear()  # those protection took at an earlier replay are stale
            rec.snapshots.update(snapshots)
            rec.checks.clear()
        for a in writes:
            hazards.before_write(a, writer)
    return before
