"""Layer 2: weft's fixed Numba code, the machine code that generated kernels and the runtime
call. The per-thread helpers generated modules import as ``_wk`` (``helpers`` for the CPU,
``cuda_helpers`` for CUDA, both from ``_portable``), atomics, the threaded launch, fast math, the
second-order helpers, the geometry cores (``geometry/``: BVH, mesh, hash grid and NanoVDB
builds and queries), and ``vocabulary``: every call the generated code makes, with what it
means (pure or not, its derivatives, its CUDA name), from which the compiler's tables derive.

Its machine code ships with weft (``shipped``: compiled once per build, loaded like a warm
cache). Imports only ``weft.core``. Nothing here is written in the kernel language or knows the
compiler. See ``docs/architecture.md``.
"""
from . import shipped  # noqa: E402,F401 - the machine code shipped for this layer's functions
