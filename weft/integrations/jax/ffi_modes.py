"""The modes of ``wp.jax_kernel`` and ``wp.jax_callable`` (CUDA graph capture, module
preloading) and what preloading compiles: the block size of a device, loading a module, a
jax_kernel's one kernel (the device selection is :func:`.ffi._preload_ffi_module`)."""
from __future__ import annotations

from enum import IntEnum

import weft as wp  # module attributes are looked up at call time (tests patch them)


class JaxCallableGraphMode(IntEnum):
    """CUDA graph capture modes of ``wp.jax_callable`` (Warp's). On the CPU ``NONE`` and
    ``JAX`` run the function directly; ``WARP``, ``WARP_STAGED`` and ``WARP_STAGED_EX`` need
    CUDA and fail there."""

    NONE = 0
    JAX = 1
    WARP = 2
    WARP_STAGED = 3
    WARP_STAGED_EX = 4


GraphMode = JaxCallableGraphMode


class JaxModulePreloadMode(IntEnum):
    """When kernels compile: ``CURRENT_DEVICE`` (default) at trace time for the current JAX
    device, ``ALL_DEVICES`` for every device, ``NONE`` at the first launch."""

    NONE = 0
    CURRENT_DEVICE = 1
    ALL_DEVICES = 2


ModulePreloadMode = JaxModulePreloadMode


# ---------------------------------------------------------------------------------------------
# module preloading (Warp's semantics; weft compiles one kernel, not a module)

def _is_cpu(device):
    v = getattr(device, "is_cpu", None)
    return bool(v) if v is not None else not getattr(device, "is_cuda", False)


def _get_ffi_block_dim(device, block_dim=None):
    """The block size a launch on ``device`` uses: 256 threads (or ``block_dim``) on CUDA; 1
    on the CPU unless ``wp.config.enable_cpu_blocks``."""
    if _is_cpu(device):
        return block_dim if (block_dim is not None and
                             getattr(wp.config, "enable_cpu_blocks", False)) else 1
    return 256 if block_dim is None else block_dim


def _load_ffi_module(module, device, block_dim=None):
    loaded = module.load(device, _get_ffi_block_dim(device, block_dim))
    if loaded is None:
        raise RuntimeError(f"Failed to load Warp module '{getattr(module, 'name', module)}' on "
                           f"device '{device}' after a previous build failure")
    return loaded


class _KernelLoad:
    """What preloading a jax_kernel compiles: its one kernel (for the argument types of the
    call, when generic), on the CPU."""

    def __init__(self, kernel, types):
        self.kernel, self.types, self.name = kernel, types, kernel.key

    def load(self, device, block_dim=None):
        if _is_cpu(device):
            self.kernel.compiled("cpu", types=self.types if self.kernel.is_generic else None)
        return True
