"""Running a compiled kernel's generated entries (:class:`~weft.runtime.compiled.CompiledKernel`):
the forward, adjoint, tangent and adjoint-tangent functions on the CPU (threaded or serial,
:func:`~weft.runtime.compiled.cpu_target`) or CUDA, with the error words of debug builds, the
ties of atomic min/max and the meshes whose points have derivatives. :mod:`.dispatch` runs
launches through it, a recorded launch (:mod:`.record`) its adjoint and tangent, ``wp.jvp``
(:mod:`weft.autodiff.forward_mode`) its tangent.
"""
from __future__ import annotations

import sys

import numpy as np

from ..core import config
from ..core import types as T
from ..core.errors import InternalError, KernelError, LaunchError
from . import background
from .args import convert_arg, kernel_data
from .checks import _size, index_error, verify_fp
from .compiled import cpu_target
from .fastlaunch import FastLaunch

CUDA_BLOCK = 256


def bound_forward(ck, dims, values, device):
    """``(fn, args)``: the forward of one launch, to be called later as ``fn(*args)`` exactly as
    :func:`run` would call it now (graph capture). Release CPU launches bind the entry itself;
    CUDA, debug builds and ``verify_fp`` go through :func:`run`."""
    if device.is_cuda or ck.abi.debug_sites is not None or config.verify_fp:
        return (lambda: run(ck, "forward", dims, values, device)), None
    return _cpu_entry(ck, "forward", cpu_target(ck, "forward", dims), dims, values), \
        (dims, *values)


def _cpu_entry(ck, kind, target, dims, values):
    """``ck``'s CPU entry for ``kind`` and ``target``; a serial forward or adjoint not called
    yet may be the threaded entry's chunk instead (:func:`background.serial_entry`)."""
    fn = ck.entry(kind, target)
    if target == "serial" and kind in ("forward", "adjoint") and fn not in ck.called:
        fn = background.serial_entry(ck, kind, fn, dims, values)
    return fn


def run(ck, kind, dims, values, device, target=None):
    """Call the generated ``kind`` function of compiled kernel ``ck`` over ``dims`` (on the
    CPU, ``target`` ``"serial"`` forces the serial entry)."""
    if kind != "forward" and ck.abi.no_derivative:
        src = ck.kernel.parsed()
        raise KernelError(ck.abi.no_derivative, src.filename, src.first_line, 0,
                          src.lines[src.first_line - 1], ck.key)
    if not device.is_cuda:
        target = target or cpu_target(ck, kind, dims)
        fn = _cpu_entry(ck, kind, target, dims, values)
        if kind == "forward" and target == "serial" and ck.kernel._fast is None:
            FastLaunch.enable(ck, fn)
        if target == "cpu" and fn not in ck.called and kind in ("forward", "adjoint") and \
                not ck.abi.tie_arrays:
            fn = background.tier(ck, kind, fn, dims, values)  # the serial twin meanwhile
        _call(ck, kind, fn, dims, values)
        return
    if _size(dims) == 0:
        return
    from .numba_start import compiling_generated_cuda_code
    with compiling_generated_cuda_code():  # (a first launch compiles)
        _run_cuda(ck, kind, dims, values)


def _run_cuda(ck, kind, dims, values):
    fn = ck.entry(kind, "cuda")
    if kind != "forward":
        values = cuda_shadows(ck, kind, values)
    threads = cuda_block(ck, dims)
    blocks = (_size(dims) + threads - 1) // threads
    dims = tuple(dims)  # (launch.Blocks: numba-cuda types no tuple subclass but a named one)
    shared = dict(ck.abi.dynamic_shared).get(kind, 0)
    launch = fn[blocks, threads] if not shared else \
        _DynamicShared(ck, fn, blocks, threads, shared)
    if kind != "adjoint":
        _call(ck, kind, launch, dims, values)
        return
    if ck.abi.tile_work:
        _warn_tile_adjoint_on_gpu(ck)
    from numba import cuda
    err = cuda.to_device(np.zeros(1, np.int32))
    _call(ck, kind, launch, dims, values, [err])
    if err.copy_to_host()[0]:
        from ..transpiler.targets import CUDA_STACK
        raise RuntimeError(f"adjoint of kernel '{ck.key}': a loop ran more than {CUDA_STACK} "
                           "iterations in one thread, more than the CUDA target records; the "
                           "gradients of this launch are not valid. Set WEFT_CUDA_STACK to a "
                           "larger value (before importing weft).")


_WARNED_TILE_ADJOINTS = set()


def _warn_tile_adjoint_on_gpu(ck):
    """Once per kernel: a tile kernel's adjoint run on a GPU (not the simulator). On the one
    GPU weft has run on (an H200, stop 78), one tile kernel's gradient came out zero where the
    CPU's and the simulator's are right, cause not found yet (docs/cuda.md, "Verified on
    hardware"): say so rather than let a wrong gradient pass unnoticed."""
    if ck.key in _WARNED_TILE_ADJOINTS:
        return
    _WARNED_TILE_ADJOINTS.add(ck.key)
    from numba import config as numba_config
    if numba_config.ENABLE_CUDASIM:
        return
    import warnings
    warnings.warn(f"weft: the adjoint of tile kernel '{ck.key}' ran on a GPU, where tile "
                  "gradients are not yet verified (one kernel's came out wrong: docs/cuda.md, "
                  "'Verified on hardware'); compare with the same launch on device='cpu'",
                  RuntimeWarning, stacklevel=4)


class _DynamicShared:
    """A CUDA launch whose blocks take ``nbytes`` of dynamic shared memory (tiles over the 48
    KiB of static shared memory: :func:`weft.transpiler.cuda_tile_memory.dynamic_shared`). On a
    GPU the kernel opts in to that much first (the driver's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` of
    the compiled function, as numba-cuda sets its carveout); more than the device gives a block
    is refused before anything runs. Numba's simulator needs neither."""

    def __init__(self, ck, dispatcher, blocks, threads, nbytes):
        self.ck, self.dispatcher, self.nbytes = ck, dispatcher, nbytes
        self.launch = dispatcher[blocks, threads, 0, nbytes]

    def __call__(self, *args):
        from numba import config as numba_config
        if not numba_config.ENABLE_CUDASIM:
            self._opt_in(args)
        return self.launch(*args)

    def _opt_in(self, args):
        """Once per compiled signature and device (kept on the dispatcher): a launch after
        the first only types its arguments."""
        from cuda.bindings import driver as binding  # (as numba-cuda's driver imports it)
        from numba import cuda
        from numba.cuda.cudadrv.driver import driver
        device = cuda.get_current_device()
        argtypes = tuple(self.dispatcher.typeof_pyval(a) for a in args)
        done = self.dispatcher.__dict__.setdefault("_weft_opted_in", set())
        if (argtypes, device.id) in done:
            return
        limit = int(device.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        if self.nbytes > limit:
            raise LaunchError(f"kernel '{self.ck.key}': its tiles need {self.nbytes} bytes of "
                              f"shared memory per block, more than the {limit} this GPU gives "
                              "a block; use smaller tiles, or launch it with device='cpu'")
        cufunc = self.dispatcher.compile(argtypes)._codelibrary.get_cufunc()
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, self.nbytes, cufunc.handle, cufunc.device.id)
        done.add((argtypes, device.id))


def block_threads(dims):
    """The threads of each CUDA block of a tile kernel's launch over ``dims``: the launch's
    ``block_dim`` (:class:`weft.runtime.launch.Blocks`), Warp's 256 when not given, the
    launch's size when smaller."""
    return min(getattr(dims, "block_dim", None) or CUDA_BLOCK, _size(dims))


def cuda_block(ck, dims):
    """The threads per CUDA block of a launch of ``ck`` over ``dims``: a small launch is one
    block of its size (each thread finds its index from the grid), a larger one blocks of
    ``CUDA_BLOCK``. A kernel with tiles runs a tile block per CUDA block of ``block_dim``
    threads (the launch's, kept by :class:`weft.runtime.launch.Blocks`; Warp's 256 when not
    given; the launch's size when smaller), and is refused (before anything runs) when the
    blocks do not divide the launch or a launch index its tile operations take differs between
    the threads of a block."""
    size = _size(dims)
    if not ck.abi.tile_work:
        return min(size, CUDA_BLOCK)
    threads = block_threads(dims)
    if size % threads:
        raise LaunchError(f"kernel '{ck.key}' uses tiles: on CUDA its launch of {size} threads "
                          f"must be whole blocks of block_dim={threads} threads")
    tiled = getattr(dims, "tiled", False)
    for axis, why in ck.abi.lane_tiles:
        if tiled and ck.abi.tid_dims < len(dims):
            break  # wp.tid() names the block (launch.Blocks): no index differs in a block
        extent = dims[axis] if axis < len(dims) else 1
        stride = _size(dims[axis + 1:])
        if threads > 1 and extent > 1 and stride % threads:
            raise LaunchError(why)
    return threads


def _call(ck, kind, fn, dims, values, extra=()):
    if ck.abi.tie_arrays and kind != "forward":
        return _call_in_phases(ck, kind, fn, dims, values, extra)
    return call_once(ck, kind, fn, dims, values, extra)


def _call_in_phases(ck, kind, fn, dims, values, extra):
    """A kernel with atomic min/max on float arrays: threads whose values tie share the
    derivative equally. The adjoint runs twice, counting the ties with no adjoint arrays, then
    sharing; the tangent runs twice, writing, then summing the tied tangents, which the runtime
    divides by the counts (``analyze.atomic_tie_sites``)."""
    n = len(ck.params)
    targets = [values[ck.param_index(name)] for name in ck.abi.tie_arrays]
    ties = [_zeros_like(t, np.int32) for t in targets]
    if kind == "adjoint":
        shadows = values[n:]
        scratch = [None if v is None or not ck.device_kind == "cuda" else _zeros_like(v, v.dtype)
                   for v in shadows]
        call_once(ck, kind, fn, dims, values[:n] + scratch + [0] + ties, extra)
        call_once(ck, kind, fn, dims, values + [1] + ties, extra)
        return
    sums = [_zeros_like(t, t.dtype) for t in targets]
    for phase in (0, 1):
        call_once(ck, kind, fn, dims, values + [phase] + ties + sums, extra)
    tan_of = {p.name: v for p, v in zip([p for p in ck.abi.params if p.tangent is not None],
                                          values[n:])}
    for name, count, total in zip(ck.abi.tie_arrays, ties, sums):
        tan = tan_of.get(name)
        if tan is None:
            continue
        host = [a if isinstance(a, np.ndarray) else a.copy_to_host() for a in (tan, count, total)]
        tied = host[1] > 0
        host[0][tied] = host[2][tied] / host[1][tied]
        if not isinstance(tan, np.ndarray):
            tan.copy_to_device(host[0])


def _zeros_like(data, dtype):
    out = np.zeros(data.shape, dtype)
    if isinstance(data, np.ndarray):
        return out
    from numba import cuda
    return cuda.to_device(out)


def call_once(ck, kind, fn, dims, values, extra=()):
    """Call one entry (``extra``: the target's error words); in debug builds pass the debug
    error word and raise what it reports; a failure to compile generated code is weft's bug,
    reported as such."""
    dbg = None
    if ck.abi.debug_sites is not None:
        dbg = np.zeros(4, np.int64)
        if ck.device_kind == "cuda":
            from numba import cuda
            dbg = cuda.to_device(dbg)
        extra = list(extra) + [dbg]
    _invoke(ck, kind, fn, dims, list(values) + list(extra))
    if dbg is not None:
        report = dbg if isinstance(dbg, np.ndarray) else dbg.copy_to_host()
        if report[0]:
            raise index_error(ck, kind, dims, report, values)
    if config.verify_fp:
        verify_fp(ck, kind, values)


def _invoke(ck, kind, fn, dims, values):
    """Call one entry; a failure to compile generated code is weft's bug, reported as such. The
    first call of an entry compiles it (or loads it from the cache): one that takes over a
    second says so, unless ``wp.config.quiet``."""
    entry = getattr(fn, "dispatcher", fn)  # (a CUDA launch: a new configuration each time)
    first = entry not in ck.called
    try:
        if first:
            import time
            background.wait_for(ck, entry)  # its machine code may be on its way to the cache
            t0 = time.perf_counter()
            fn(dims, *values)
            ck.called.add(entry)
            took = time.perf_counter() - t0
            if took > config.compile_message_seconds and not config.quiet:
                where = getattr(entry, "__name__", kind)
                # Warp's wording ("Module ... load on device ... took ..."), which Warp's
                # tools and tests recognise
                print(f"Module {ck.key} {kind} load on device '{ck.device_kind}' took "
                      f"{took * 1e3:.0f} ms (weft: {where} compiled and ran; "
                      f"{ck.kernel.statement_count()} statements)", file=sys.stderr, flush=True)
        else:
            fn(dims, *values)
    except Exception as exc:
        from numba.core.errors import NumbaError
        if isinstance(exc, NumbaError):
            raise InternalError(f"the {kind} code generated for kernel '{ck.key}' does not "
                                f"compile:\n{exc}") from None
        raise


def cuda_shadows(ck, kind, values):
    """On CUDA, adjoint and tangent arrays that were not given (None) become zeroed scratch
    arrays: the CUDA target always takes views of them (``Target.optional_shadows``)."""
    from numba import cuda
    n = len(ck.params)
    primal = values[:n]
    shadows = [(p, getattr(p, "adjoint" if kind == "adjoint" else "tangent"))
               for p in ck.abi.params]
    out = list(primal)
    for (p, _), v in zip([s for s in shadows if s[1] is not None], values[n:]):
        if v is None:
            base = primal[ck.param_index(p.name)]
            v = cuda.to_device(np.zeros(base.shape, base.dtype))
        out.append(v)
    return out


def run_derivative(ck, kind, dims, values, device, args, tangent_of=None):
    """:func:`run` of an adjoint or tangent launch; the meshes it queries expose the gradients
    (tangents) of their points to it meanwhile (``weft.runtime.geometry.mesh_derivatives``)."""
    if not ck.abi.geometry_ids:
        return run(ck, kind, dims, values, device)
    from .geometry import mesh_derivatives
    with mesh_derivatives(ck, args, grads=kind == "adjoint", tangent_of=tangent_of):
        run(ck, kind, dims, values, device)


def adjoint_tangent(ck, dims, args, values, adj, tans, tadj, device, what):
    """Run the tangent of ``ck``'s adjoint (:mod:`weft.transpiler.second_order`): the adjoint
    accumulates into ``adj`` as ever and its tangent into ``tadj`` (aligned with ``adj``),
    along the primal tangents ``tans`` (wp.arrays aligned with ``args``; None: zero)."""
    if device.is_cuda:
        raise LaunchError(f"second order: {what} is on {device}; it runs on the CPU")
    if ck.abi.tie_arrays:
        raise LaunchError(f"second order: {what} uses atomic min/max on float arrays, which "
                          "have no second-order code")
    if ck.abi.no_derivative:
        run(ck, "adjoint", dims, [], device)  # raises the kernel's reason
    tan_values = []
    for p, (n, t), g, v in zip(ck.abi.params, ck.params, tans, values):
        if p.tangent is None:
            continue
        if isinstance(t, T.ArrayType):
            tan_values.append(kernel_data(g) if g is not None else np.zeros_like(v))
        else:
            tan_values.append(convert_arg(f"kernel '{ck.key}' tangent of '{n}'", t,
                                          np.zeros(t._length_) if T.is_composite(t) else 0,
                                          device))
    tadj = [None if a is None else t if t is not None else np.zeros_like(a)
            for a, t in zip(adj, tadj)]
    fn = getattr(ck.hvp_module(), ck.abi.entries["adjoint"][cpu_target(ck, "adjoint", dims)] +
                 "__hvp")
    call_once(ck, "adjoint-tangent", fn, dims, values + adj + tan_values + tadj)
