"""Numba's CPU target, started with less work than Numba does on its own.

Numba loads its CPU registries the first time it compiles or loads a function. One of them
(``numba.np.arraymath``) imports ``scipy.linalg.cython_blas`` only to learn whether BLAS is
there, and that import runs all of ``scipy.linalg``'s package initialisation: about 0.13 s of a
0.3 s warm start on the machine this was measured on (``docs/performance.md``). weft's kernels
never call BLAS, so before the registries load, :func:`start` loads the ``cython_blas``
extension module by itself (10 ms) and registers it under its name; Numba's check then finds it
and BLAS stays available to Numba code (a later ``import scipy.linalg`` initialises the package
as usual). Without SciPy, or with ``scipy.linalg`` already imported, nothing is done.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_NAME = "scipy.linalg.cython_blas"
_started = False


def start():
    """Prepare the cheap BLAS check (once), before Numba's CPU registries load: at the first
    compile, not at a load from the disk cache (``diskcache.VerifiedCache.load_overload``)."""
    global _started
    if _started:
        return
    _started = True
    if _NAME not in sys.modules and "scipy.linalg" not in sys.modules:
        mod = _load_extension()
        if mod is not None:
            sys.modules[_NAME] = mod


def _load_extension():
    try:
        spec = importlib.util.find_spec("scipy")
        if spec is None or not spec.origin:
            return None
        folder = os.path.join(os.path.dirname(spec.origin), "linalg")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "cython_blas" + suffix)
            if os.path.exists(path):
                ext = importlib.util.spec_from_file_location(_NAME, path)
                mod = importlib.util.module_from_spec(ext)
                ext.loader.exec_module(mod)
                return mod
    except Exception:  # any surprise: Numba imports the package itself, as without weft
        return None
    return None
