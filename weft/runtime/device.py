"""Devices: ``"cpu"`` always; ``"cuda"``/``"cuda:N"`` with the CUDA target."""
from __future__ import annotations

import contextlib

from ..core import timing as _timing
from ..core.errors import LaunchError


class Device:
    """A device arrays live on and kernels run on: ``"cpu"`` or ``"cuda:N"``. The attributes
    Warp programs read are there, with Warp's values for the CPU (``name`` "CPU", ``arch`` 0,
    ``ordinal`` -1)."""

    # Warp's attributes that weft's devices do not track, with Warp's values for the CPU
    is_primary = is_uva = is_mempool_supported = is_ipc_supported = is_capturing = False
    sm_count = 0
    uuid = pci_bus_id = None

    def __init__(self, alias):
        self.alias = alias
        self.ordinal = -1 if alias == "cpu" else int(alias.partition(":")[2] or 0)

    @property
    def name(self):
        if self.is_cpu:
            return "CPU"
        from numba import cuda
        gpu = cuda.gpus[self.ordinal]
        name = getattr(gpu, "name", b"CUDA")
        return name.decode() if isinstance(name, bytes) else str(name)

    @property
    def arch(self):
        """Compute capability as ``10 * major + minor`` (0 for the CPU)."""
        if self.is_cpu:
            return 0
        from numba import cuda
        major, minor = cuda.gpus[self.ordinal].compute_capability
        return 10 * major + minor

    @property
    def total_memory(self):
        return 0

    @property
    def free_memory(self):
        return 0

    @property
    def is_cpu(self):
        return self.alias == "cpu"

    @property
    def is_cuda(self):
        return self.alias.startswith("cuda")

    def __eq__(self, other):
        if isinstance(other, str):
            other = get_device(other)
        return isinstance(other, Device) and other.alias == self.alias

    def __hash__(self):
        return hash(self.alias)

    def __reduce__(self):
        """Pickled by alias: the receiving process's device of that name."""
        return (get_device, (self.alias,))

    def __str__(self):
        return self.alias

    def __repr__(self):
        return f"'{self.alias}'"


_CPU = Device("cpu")
_CUDA = {}
_current = [_CPU]


_DRIVER = []  # [whether a CUDA driver library loads], found once per process


def _driver_loads():
    """Whether a CUDA driver library loads from where numba-cuda looks for one
    (``cudadrv.driver.locate_driver_and_loader``). Without one CUDA is not available, and
    saying so needs no ``import numba.cuda``: 0.8 s here, most of it its typing modules and
    ``ml_dtypes``. A CPU program that asks ``wp.is_cuda_available()`` or lists the devices
    (Warp's examples do) pays nothing for the GPU it does not have."""
    if not _DRIVER:
        import ctypes
        import os
        import sys
        if sys.platform == "win32":
            load, dirs, names = ctypes.WinDLL, ["\\windows\\system32"], ["nvcuda.dll"]
        elif sys.platform == "darwin":
            load, dirs, names = ctypes.CDLL, ["/usr/local/cuda/lib"], ["libcuda.dylib"]
        else:
            load, dirs, names = ctypes.CDLL, ["/usr/lib", "/usr/lib64"], ["libcuda.so",
                                                                         "libcuda.so.1"]
        loads = False
        for path in names + [os.path.join(d, n) for d in dirs for n in names]:
            try:
                load(path)
            except OSError:
                continue
            loads = True
            break
        _DRIVER.append(loads)
    return _DRIVER[0]


def is_cuda_available():
    from numba import config as nbconfig
    if not nbconfig.ENABLE_CUDASIM and not _driver_loads():
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - no driver, no toolkit: not available
        return False


def get_device(ident=None):
    """The device named ``ident`` (a Device, "cpu", "cuda", "cuda:0") or the current one."""
    if ident is None or ident is _CPU:
        return _current[-1] if ident is None else _CPU
    if isinstance(ident, Device):
        return ident
    ident = str(ident)
    if ident == "cpu":
        return _CPU
    if ident == "cuda" or ident.startswith("cuda:"):
        n = get_cuda_device_count()
        if n == 0:
            raise LaunchError(f"device '{ident}': no CUDA device was found (weft's CUDA target "
                              "needs an NVIDIA GPU and driver, or NUMBA_ENABLE_CUDASIM=1 for "
                              "Numba's simulator)")
        index = 0 if ident == "cuda" else int(ident[5:] or 0)
        if index >= n:
            raise LaunchError(f"device '{ident}': only {n} CUDA device(s) found")
        dev = _CUDA.get(index)
        if dev is None:
            dev = _CUDA[index] = Device(f"cuda:{index}")
        return dev
    raise LaunchError(f"unknown device '{ident}' (use 'cpu', 'cuda' or 'cuda:N')")


def set_device(ident):
    _current[-1] = get_device(ident)


@contextlib.contextmanager
def ScopedDevice(ident):  # noqa: N802 - Warp's name
    """``with wp.ScopedDevice("cpu"):`` makes arrays and launches default to that device."""
    _current.append(get_device(ident))
    try:
        yield _current[-1]
    finally:
        _current.pop()


@contextlib.contextmanager
def ScopedStream(stream, sync_enter=True, sync_exit=False):  # noqa: N802 - Warp's name
    """Warp's ``with wp.ScopedStream(stream):``. weft has no stream objects (CPU launches are
    synchronous, CUDA launches run on the default stream), so the scope takes ``None`` only,
    and does nothing (as Warp's with ``None``)."""
    if stream is not None:
        raise NotImplementedError("wp.ScopedStream: weft has no CUDA stream objects (its CUDA "
                                  "launches run on the default stream); only None is accepted")
    yield None


def synchronize(device=None):
    """Wait until all launched work has finished (CPU launches are synchronous)."""
    if _CUDA:
        from numba import cuda
        cuda.synchronize()


_timing.register_synchronize(synchronize)  # wp.ScopedTimer(synchronize=True) waits with it


def get_cuda_device_count():
    if not is_cuda_available():
        return 0
    from numba import cuda
    return len(cuda.gpus)


# ---------------------------------------------------------------------------------------------
# Warp's device queries


def is_cpu_available():
    """Always True: weft runs on the CPU."""
    return True


def is_device_available(device):
    """Whether ``device`` (a Device or alias) can be used."""
    try:
        get_device(device)
    except LaunchError:
        return False
    return True


def get_devices():
    """Every usable device: the CPU, then each CUDA device."""
    return [_CPU] + get_cuda_devices()


def get_cuda_devices():
    """The CUDA devices (none without an NVIDIA GPU or Numba's CUDA simulator)."""
    return [get_device(f"cuda:{i}") for i in range(get_cuda_device_count())]


def get_cuda_device(ordinal=None):
    """CUDA device ``ordinal`` (the first one by default)."""
    return get_device("cuda" if ordinal is None else f"cuda:{ordinal}")


def get_preferred_device():
    """``cuda:0`` when a real CUDA device is present, else the CPU (Numba's CUDA simulator is
    not preferred: it runs kernels in Python)."""
    from numba import config as nbconfig
    if not nbconfig.ENABLE_CUDASIM and get_cuda_device_count() > 0:
        return get_device("cuda:0")
    return _CPU


def synchronize_device(device=None):
    """Wait until the work launched on ``device`` has finished (CPU launches are
    synchronous)."""
    if get_device(device).is_cuda:
        from numba import cuda
        cuda.synchronize()


def map_cuda_device(alias, context=None):
    """Warp maps an external CUDA context to an alias; weft uses Numba's contexts, so only the
    existing aliases are accepted (``"cuda:N"``), anything else is a RuntimeError as in Warp."""
    try:
        return get_device(alias)
    except LaunchError:
        raise RuntimeError(f"Unable to determine CUDA context for device alias '{alias}'") \
            from None


def unmap_cuda_device(alias):
    """A no-op kept for Warp compatibility (see :func:`map_cuda_device`)."""


def get_suggested_block_size(kernel, device=None):
    """Warp's ``(block_size, min_grid_size)`` for launching ``kernel``: ``(1, 1)`` on the CPU
    (a block is one thread there, as Warp's). On CUDA, 256 threads and enough blocks to fill
    every multiprocessor at full residency (weft's CUDA kernels use no shared memory, so the
    occupancy is bounded by threads per multiprocessor only; an estimate, not the driver's
    occupancy query)."""
    if not hasattr(kernel, "declared") or not callable(getattr(kernel, "compiled", None)):
        raise TypeError(f"get_suggested_block_size() expects a kernel, got "
                        f"{type(kernel).__name__}")
    dev = get_device(device)
    if not dev.is_cuda:
        return (1, 1)
    from numba import cuda
    props = cuda.get_current_device()
    per_sm = int(getattr(props, "MAX_THREADS_PER_MULTI_PROCESSOR", 2048))
    sms = int(getattr(props, "MULTIPROCESSOR_COUNT", 1))
    return (256, sms * max(1, per_sm // 256))


def is_conditional_graph_supported():
    """Whether graphs can hold conditional nodes (Warp's ``capture_if``/``capture_while``):
    False, weft's captured graphs replay straight-line launch sequences."""
    return False
