"""Global settings (``wp.config``), as in Warp.

``overwrite_gradients``: what a Tape does with a launch whose kernel reads an array and then
overwrites it (``x[i] = f(x[i])``), which would otherwise give wrong gradients because the
adjoint replays the kernel from the overwritten values:

- ``"snapshot"`` (default): copy the array before the launch and replay from the copy; the
  gradient is exact (the cost is one copy of the array per recorded launch);
- ``"error"``: raise a ``KernelError`` naming the lines that read and overwrite the array;
- ``"warn"``: warn with the same message and record the launch as it is.
"""

overwrite_gradients = "snapshot"

#: CPU launches of fewer threads than this run a serial twin of the kernel (compiled on first
#: use): starting the thread pool costs more than such a launch. 0 disables it.
serial_threshold = 256

#: A launch recorded on a tape has its CPU adjoint compiled meanwhile by a helper process into
#: the disk cache, for backward to load (weft.runtime.background). False: compile it at the
#: first backward, in this process.
background_compile = True

#: Tiered compiles (CPU): while a kernel's threaded entry is not in the disk cache, launches
#: run its serial twin (a plain loop: compiled in about a fifth of the time), and the helper
#: process of ``background_compile`` compiles the threaded entry into the cache; launches
#: switch to it once it is there. Not for entries that sum per-thread copies (their serial
#: twin would round those sums differently): they compile here on their first launch. False
#: (or ``WEFT_TIERED_COMPILE=0``): the first launch compiles the threaded entry here.
tiered_compile = True

#: What a tape's ``backward`` (and ``hvp``) does with a recorded launch of a kernel declared
#: ``enable_backward=False`` (its own option or its module's): ``False`` (default), as Warp:
#: warn and skip its adjoint (the gradient then lacks that kernel's part); ``True``, a weft
#: extension: differentiate it anyway (weft generates every kernel's adjoint), so programs
#: that turn Warp's backward off everywhere, as MuJoCo Warp does, get exact gradients.
#: ``WEFT_FORCE_BACKWARD=1`` sets it at import.
import os as _os  # noqa: E402

force_backward = _os.environ.get("WEFT_FORCE_BACKWARD", "") not in ("", "0")

#: A weft extension for differentiating programs not written for it: ``True`` makes every
#: launch recorded on a tape (and every ``wp.copy`` under one) give a gradient to each array
#: argument of a differentiable dtype that has none (``requires_grad`` set, zeroed), so the
#: adjoint flows through the program's own temporaries and buffers instead of stopping there.
#: As Warp, ``False`` (default) treats an array without a gradient as a constant.
#: ``WEFT_GRAD_ALL_ARRAYS=1`` sets it at import.
grad_all_arrays = _os.environ.get("WEFT_GRAD_ALL_ARRAYS", "") not in ("", "0")

#: ``"release"``: kernels as fast as they compile; ``"debug"``: every array access of the
#: forward, adjoint and tangent kernels is checked (an out-of-range or negative index raises
#: ``weft.KernelIndexError`` naming the kernel, pass, array, index, shape and source line).
#: Per kernel: ``@wp.kernel(mode="debug")``.
mode = "release"

#: check every launch's written arrays (and the adjoint's and tangent's) for NaN and Inf,
#: raising ``weft.KernelFloatError`` naming the kernel and the array
verify_fp = False

# ---------------------------------------------------------------------------------------------
# Warp's settings (``wp.config.*`` of Warp 1.19, with Warp's defaults), so that programs written
# for Warp can read and set them. weft reads none of these yet unless said here; they are plain
# settings. (``quiet`` and ``verbose`` are from earlier Warp versions and still set by programs.)

from enum import IntEnum as _IntEnum  # noqa: E402


class LaunchArrayAccessMode(_IntEnum):
    """Warp's launch array-access checks (weft always checks devices before a launch)."""

    RELAXED = 0
    CHECKED = 1
    STRICT = 2


class DeterministicMode(_IntEnum):
    """Warp's determinism modes for atomics (``wp.DeterministicMode``)."""

    NOT_GUARANTEED = 0
    RUN_TO_RUN = 1
    GPU_TO_GPU = 2


version = "1.19.0"  #: the Warp version whose Python API weft follows
quiet = False
#: a kernel whose transpiling, or the first call of one of its entries (Numba compiles it or
#: loads it from the cache), takes longer than this many seconds prints one line saying so
#: (as Warp's "Module ... took ... ms"); ``quiet = True`` silences it
compile_message_seconds = 1.0
verbose = False
verbose_warnings = False
verify_cuda = False
print_launches = False
optimization_level = None
log_level = 20  # Warp's LOG_INFO
verify_autograd_array_access = False
enable_vector_component_overwrites = False
legacy_scalar_return_types = False
cache_kernels = True
kernel_cache_dir = None  # weft's cache is $WEFT_CACHE_DIR (see weft.core.diskcache)
cuda_output = None
ptx_target_arch = None
cuda_arch_suffix = None
lineinfo = False
line_directives = True
compile_time_trace = False
enable_backward = True
enable_cpu_blocks = False
default_grid_stride = True
enable_mathdx_gemm = True
enable_mathdx_solver = True
enable_mathdx_fft = True
cpu_compiler_flags = None
llvm_cuda = False
enable_graph_capture_module_load_by_default = True
enable_mempools_at_init = True
track_memory = False
max_unroll = 16
enable_tiles_in_stack_memory = True
use_precompiled_headers = True
legacy_cpu_linker = False
load_module_max_workers = 0
launch_array_access_mode = LaunchArrayAccessMode.RELAXED
deterministic = DeterministicMode.NOT_GUARANTEED
deterministic_max_records = 0
deterministic_debug = False
