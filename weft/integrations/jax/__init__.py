"""JAX interop: ``wp.from_jax``, ``wp.to_jax`` and the dtype and device conversions.

On the CPU both conversions share memory (no copy)::

    x = jnp.arange(4.0, dtype=jnp.float32)
    a = wp.from_jax(x)            # a weft array over x's buffer
    y = wp.to_jax(a)              # a JAX array over a's memory

JAX arrays are immutable: a weft kernel that writes an array made by ``from_jax`` changes the
JAX array behind JAX's back (as with Warp). Kernels inside JAX programs: :mod:`.ffi`
(``wp.jax_kernel``, ``wp.jax_callable``).
"""
from __future__ import annotations

import numpy as np

import weft as _weft

from ...core import types as T


def _jax():
    import jax  # noqa: PLC0415
    return jax


def get_jax_device():
    """The current JAX device: the one ``jax.default_device`` selects, else JAX's first."""
    jax = _jax()
    device = jax.config.jax_default_device
    if device is None:
        device = jax.local_devices()[0]
    elif isinstance(device, str):  # a platform name
        device = jax.local_devices(backend=device)[0]
    return device


def device_to_jax(warp_device):
    """The JAX device of this process for a weft device (``"cpu"`` or ``"cuda:N"``, matched by
    the process-local ordinal). RuntimeError when JAX has no such device."""
    jax = _jax()
    d = _weft.get_device(warp_device)
    try:
        devices = jax.local_devices(backend="cuda" if d.is_cuda else "cpu")
    except RuntimeError:
        devices = []
    if d.is_cuda:
        for jd in devices:
            if jd.local_hardware_id == d.ordinal:
                return jd
    elif devices:
        return devices[0]
    raise RuntimeError(f"Jax device corresponding to '{warp_device}' is not available")


def device_from_jax(jax_device):
    """The weft device of a JAX device: ``cpu``, or the CUDA device with the JAX GPU's
    process-local ordinal. RuntimeError for other platforms and other processes' GPUs."""
    if jax_device.platform == "cpu":
        return _weft.get_device("cpu")
    if jax_device.platform == "gpu":
        jax = _jax()
        if jax_device.process_index != jax.process_index() or \
                jax_device.local_hardware_id is None:
            raise RuntimeError(f"Jax device '{jax_device}' belongs to process "
                               f"{jax_device.process_index} and is not addressable from process "
                               f"{jax.process_index()}")
        return _weft.get_cuda_device(jax_device.local_hardware_id)
    raise RuntimeError(f"Unsupported Jax device platform '{jax_device.platform}'")


_TO_JAX = None
_FROM_JAX = None


def _maps():
    global _TO_JAX, _FROM_JAX
    if _TO_JAX is None:
        import jax.numpy as jnp  # noqa: PLC0415
        pairs = [(T.float16, jnp.float16), (T.float32, jnp.float32), (T.float64, jnp.float64),
                 (T.int8, jnp.int8), (T.int16, jnp.int16), (T.int32, jnp.int32),
                 (T.int64, jnp.int64), (T.uint8, jnp.uint8), (T.uint16, jnp.uint16),
                 (T.uint32, jnp.uint32), (T.uint64, jnp.uint64), (T.bool, jnp.bool_)]
        if getattr(T, "bfloat16", None) is not None:
            pairs.append((T.bfloat16, jnp.bfloat16))
        to, frm = {}, {}
        for w, j in pairs:
            to[w] = j
            frm[j] = w
            frm[jnp.dtype(j)] = w
        _TO_JAX, _FROM_JAX = to, frm
    return _TO_JAX, _FROM_JAX


def dtype_to_jax(warp_dtype):
    """The JAX dtype of a weft scalar type (``wp.float32`` -> ``jnp.float32``); TypeError for a
    type JAX has none for."""
    to, _ = _maps()
    try:
        out = to.get(warp_dtype)
    except TypeError:
        out = None
    if out is None:
        try:
            out = to.get(T.type_to_warp(warp_dtype))  # float, int, bool
        except Exception:  # noqa: BLE001
            out = None
    if out is None:
        raise TypeError(f"Cannot convert {warp_dtype} to a Jax type")
    return out


def dtype_from_jax(jax_dtype):
    """The weft scalar type of a JAX dtype (a ``jnp`` scalar type or ``jnp.dtype``); TypeError
    for one weft has none for."""
    _, frm = _maps()
    try:
        out = frm.get(jax_dtype)
        if out is None:
            out = frm.get(np.dtype(jax_dtype))
    except TypeError:
        out = None
    if out is None:
        raise TypeError(f"Cannot convert {jax_dtype} to a Warp type")
    return out


def from_jax(jax_array, dtype=None):
    """A weft array over a JAX array's memory, without copying (CPU), through DLPack
    (``wp.from_dlpack``, whose rules it follows): ``dtype`` may read trailing dimensions as
    vector or matrix components (``from_jax(x, wp.vec3)`` of an ``(n, 3)`` float32 array is an
    array of ``n`` vec3). The JAX array stays alive while the weft array does."""
    jax = _jax()
    if isinstance(jax_array, jax.core.Tracer):
        raise TypeError("wp.from_jax() needs a concrete jax.Array, got a tracer (inside jax.jit "
                        "use wp.jax_kernel or wp.jax_callable)")
    return _weft.from_dlpack(jax_array, dtype=dtype)


def to_jax(warp_array):
    """A JAX array over a weft array's memory, without copying (CPU, through DLPack; weft's
    host arrays are 64-byte aligned, as XLA needs to alias them). Vector and matrix elements
    become trailing dimensions."""
    import jax.dlpack  # noqa: PLC0415
    return jax.dlpack.from_dlpack(warp_array)
