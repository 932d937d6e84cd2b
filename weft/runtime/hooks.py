"""What the runtime asks of the layer above it, ``weft.autodiff``, without importing it.

A launch inside ``with wp.Tape():`` is recorded on the tape, and so are the array operations
that have a derivative (``wp.copy`` of arrays with gradients, ``wp.matmul``). The runtime does
not know the tape: it finds the tapes recording now in :data:`tapes`, a list that the tape
(:class:`weft.autodiff.tape.Tape`) enters itself into on ``__enter__`` and leaves on
``__exit__``. ``import weft`` imports ``weft.autodiff``; with no tape recording the list is
empty and nothing is recorded.

What the runtime may call on a tape in the list (the record protocol of
:mod:`weft.autodiff.tape`):

- ``tape.record(rec)``: append a record (an object with ``backward()`` and ``arrays``, such as
  a recorded launch, :class:`weft.runtime.record.Launch`);
- ``tape.record_func(backward, arrays, forward=None, hvp=None)``: record Python callbacks;
- ``tape.register_reads(rec, again=False)``: protect the memory a record reads again (graph
  replays, :mod:`weft.runtime.captured`).

The list object itself never changes (``paused_tapes`` empties and refills it in place), so the
launch paths keep a reference to it and test it without a call.
"""
from __future__ import annotations

#: the tapes recording now, innermost last (the list itself; empty when none records)
tapes = []


def active_tape():
    """The innermost recording tape, or None."""
    return tapes[-1] if tapes else None
