"""Devices: ``"cpu"`` always; ``"cuda"``/``"cuda:N"`` with the CUDA target."""
from __future__ import annotations

import contextlib

from ..errors import LaunchError


class Device:
    def __init__(self, alias):
        self.alias = alias

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

    def __str__(self):
        return self.alias

    __repr__ = __str__


_CPU = Device("cpu")
_CUDA = {}
_current = [_CPU]


def is_cuda_available():
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


def synchronize(device=None):
    """Wait until all launched work has finished (CPU launches are synchronous)."""
    if _CUDA:
        from numba import cuda
        cuda.synchronize()


def get_cuda_device_count():
    if not is_cuda_available():
        return 0
    from numba import cuda
    return len(cuda.gpus)
