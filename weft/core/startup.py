"""Import NumPy and Numba with Python's cycle collector paused, then freeze what they built.

``import numba`` creates about 50,000 container objects (types, templates, registries) that
live as long as the process. While they are being created, the cycle collector runs over them
again and again (about 130 collections, three of them full, in a warm weft program), and every
later full collection of the program walks them once more. Measured on the warm cloth program
of ``benchmarks/bench_startup.py``: the collector took 0.18-0.19 s of a 1.1-1.2 s run; with
the two imports done with the collector paused and their objects frozen (``gc.freeze``: moved
to a generation the collector never scans), it took 0.01 s and the run 0.78-0.88 s.

What this changes for a program:
- Objects that exist when weft is first imported (NumPy's, Numba's and any the program made
  before) are never examined by the cycle collector again. Reference counting still frees
  them as usual; only a reference cycle among them that becomes garbage later is not
  reclaimed. The collector's own untracking of atomic tuples does not happen for them.
- Reference cycles that were already garbage during the two imports (about 1,300 objects)
  stay in memory.

``WEFT_GC_FREEZE=0`` turns it off. Nothing is done when Numba was imported before weft (its
objects were collected over already), or when the program has disabled the collector.
"""
import gc
import os
import sys


def import_frozen():
    """Import numpy and numba with the collector paused; freeze the objects they created."""
    if "numba" in sys.modules or not gc.isenabled() or \
            os.environ.get("WEFT_GC_FREEZE", "1").strip() == "0":
        return False
    gc.disable()
    try:
        import numpy  # noqa: F401
        import numba  # noqa: F401
    finally:
        gc.freeze()
        gc.enable()
    return True


frozen_at_import = import_frozen()
