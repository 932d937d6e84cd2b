"""Compile a kernel's CUDA functions to PTX without a GPU (a check that the real CUDA compiler
accepts what the simulator runs).

    >>> from weft.runtime.ptx import compile_ptx
    >>> ptx = compile_ptx(step, [x, v, 0.01, x_out])      # {"forward": "...", ...}

Needs numba-cuda with NVVM (``pip install "numba-cuda[cu13]"``) and must run in a process
without ``NUMBA_ENABLE_CUDASIM``. With no driver, numba-cuda cannot ask a device for its compute
capability when it compiles device functions; the check supplies ``cc`` instead.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..core import types as T
from .args import half_bits, kernel_scalar, kernel_tuple
from .array import array


@contextlib.contextmanager
def _assume_compute_capability(cc):
    import numba.cuda.dispatcher as disp

    class _Device:
        compute_capability = cc

    saved = disp.get_current_device
    disp.get_current_device = lambda: _Device()
    try:
        yield
    finally:
        disp.get_current_device = saved


def _typeof(value):
    import numba
    from numba import types
    if value is None:
        return types.none
    return numba.typeof(value)


def _host_value(ptype, value):
    """A host stand-in of what a launch passes for one argument (float16 as launches pass it:
    arrays as uint16 bits, values as float32)."""
    if isinstance(ptype, T.ArrayType):
        return half_bits(value.numpy() if isinstance(value, array) else value)
    if T.is_composite(ptype):
        return kernel_tuple(np.asarray(value, T.numpy_dtype(ptype)).reshape(-1))
    return kernel_scalar(ptype, value)


def compile_ptx(kernel, args, dims=(1,), cc=(9, 0), kinds=("forward", "adjoint", "tangent"),
                opt=None):
    """PTX text of the kernel's CUDA ``kinds`` for arguments like ``args`` (host values).
    ``opt``: NVVM's optimiser on or off (None: as ``NUMBA_OPT`` says, numba-cuda's default)."""
    from numba import cuda
    from ..stdlib.lanes import NeedsBlockDim
    try:
        ck = kernel.compiled("cuda")
    except NeedsBlockDim:  # wp.tile(x), untile: compiled for the block size, dims' last
        ck = kernel.compiled("cuda", lanes=(int(dims[-1]), True, len(dims) - 1))
    args = ck.flatten(list(args))
    values = [_host_value(t, a) for (_, t), a in zip(ck.params, args)]
    by_name = {n: v for (n, _), v in zip(ck.params, values)}
    extra = {
        "forward": [],
        "adjoint": [by_name[p.name] for p in ck.abi.params if p.adjoint is not None] +
                   [np.zeros(1, np.int32)],
        "tangent": [by_name[p.name] for p in ck.abi.params if p.tangent is not None],
    }
    from .numba_start import compiling_generated_cuda_code
    out = {}
    with _assume_compute_capability(cc), compiling_generated_cuda_code():
        for kind in kinds:
            fn = ck.entry(kind, "cuda")
            sig = tuple(_typeof(v) for v in [tuple(dims)] + values + extra[kind])
            out[kind], _ = cuda.compile_ptx(fn.py_func, sig, cc=cc, opt=opt)
    return out
