"""What the runtime's geometry objects share: the device check and ``__del__``."""
from __future__ import annotations

from . import device as _device


def _cpu_only(device, what):
    dev = _device.get_device(device)
    if not dev.is_cpu:
        raise NotImplementedError(f"{what} on {dev}: weft builds geometry on the CPU only "
                                  "for now (use device='cpu')")
    return dev


def _release(obj):
    """``__del__`` of a geometry object: release its id (also on an instance made with
    ``__new__`` alone, which has none)."""
    d = obj.__dict__.get("_descriptor")
    if d is not None:
        d.release()
