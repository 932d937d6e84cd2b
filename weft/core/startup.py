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
import contextlib
import gc
import os
import sys
import threading


def import_frozen():
    """Import numpy and numba with the collector paused; freeze the objects they created."""
    if "numba" in sys.modules:
        return False
    if not gc.isenabled() or os.environ.get("WEFT_GC_FREEZE", "1").strip() == "0":
        with _numba_import_light():
            import numba  # noqa: F401
        return False
    gc.disable()
    try:
        import numpy  # noqa: F401
        with _numba_import_light():
            import numba  # noqa: F401
    finally:
        gc.freeze()
        gc.enable()
    return True


@contextlib.contextmanager
def _numba_import_light():
    """``import numba`` without the two imports it makes only in case they are needed (about
    20 ms of a 0.4 s warm start, ``docs/performance.md`` stop 74):

    - SciPy, which Numba's import loads only to check that its version is at least 1.0 (the
      package and its test utilities, ~10 ms): hidden while Numba imports, so the check finds
      none; Numba's BLAS lookup, at its first compile, and the program import it as usual;
    - PyYAML, which Numba's configuration imports for a ``.numba_config.yaml`` in the working
      directory (~10 ms): with no such file, hidden while Numba imports, then handed to Numba's
      configuration (and ``sys.modules``) as a module executed at its first use."""
    hidden = [name for name in ("scipy", "yaml") if name not in sys.modules]
    if os.path.exists(".numba_config.yaml") and "yaml" in hidden:
        hidden.remove("yaml")
    for name in hidden:
        sys.modules[name] = None  # (import raises ImportError)
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
        config = sys.modules.get("numba.core.config")
        if "yaml" in hidden and config is not None and not getattr(config, "_HAVE_YAML", True):
            module = _import_lazily("yaml")
            if module is not None:
                config.yaml = module
                config._HAVE_YAML = True


def _import_lazily(name):
    """Module ``name``, put in ``sys.modules`` to be executed at its first attribute access
    (None when it cannot be found)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return None
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


frozen_at_import = import_frozen()


_pause_lock = threading.Lock()
_pauses = 0  # collector_paused blocks open, in any thread
_resume = False  # whether the collector was on when the first of them opened


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector off while weft's transpiler or Numba's compile of generated code
    runs, then as it was. Both keep every node they build alive until they finish (the
    transpiler's IR and ``ast`` nodes, about 600 objects per statement of a kernel; Numba's IR,
    types and LLVM values), and each full collection walks them all: with the collector on, a
    3,000-statement kernel spent two thirds of its transpile in it, and the forward of a
    600-``if`` kernel 2.8 of 12.3 s of its compile. What they drop is freed by reference
    counting; the few cycles wait for the next collection.

    Counted across threads (weft compiles in background threads too): the collector resumes
    when the last block closes, and only if it was on when the first opened.

    Turned back on, the collector would walk every object allocated while it was off at its
    next allocation (none was promoted: about 3.3M objects, a ninth of the transpile of 3,000
    ``if`` statements), only to find most alive. Where the process has frozen nothing, they go
    to the oldest generation instead, unwalked (``gc.freeze`` then ``gc.unfreeze`` move the
    generations' lists without walking them), where the next full collection sees those still
    alive then. Not done when objects are frozen (``gc.unfreeze`` would release them): weft's
    import freezes Numba's, unless ``WEFT_GC_FREEZE=0``, and then the collector walks them
    once, at its first collection after the pause."""
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                # (``get_freeze_count`` walks the frozen objects: 7 ms once Numba's are frozen)
                if not frozen_at_import and gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
