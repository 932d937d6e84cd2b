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
from ...runtime import device as D


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


def _host_view(x):
    """A numpy view of a JAX array's CPU buffer (no copy)."""
    try:
        dev = next(iter(x.devices()))
    except Exception:  # noqa: BLE001 - a tracer or an abstract value
        raise TypeError(f"wp.from_jax() needs a concrete jax.Array, got {type(x).__name__} "
                        "(inside jax.jit use wp.jax_kernel or wp.jax_callable)") from None
    if dev.platform != "cpu":
        raise NotImplementedError(f"weft: wp.from_jax() of an array on JAX device '{dev}': "
                                  "weft shares CPU memory only (jax.device_put it to the CPU)")
    if len(x.devices()) > 1:
        raise ValueError("wp.from_jax() of an array sharded over several devices")
    if x.dtype == np.dtype(bool):
        return np.from_dlpack(x)
    return np.from_dlpack(x)


def from_jax(jax_array, dtype=None):
    """A weft array over a JAX array's memory, without copying (CPU). ``dtype`` (a weft
    scalar, vector or matrix type) reinterprets the trailing dimensions: ``from_jax(x,
    wp.vec3)`` of a ``(n, 3)`` float32 array is an array of ``n`` vec3. The JAX array stays
    alive while the weft array does."""
    from ...runtime.array import array
    view = _host_view(jax_array)
    scalar = dtype_from_jax(jax_array.dtype)
    if dtype is None:
        dtype = scalar
    else:
        dtype = T.type_to_warp(dtype) if dtype in (float, int, bool) else dtype
        want = T.type_scalar_type(dtype) if T.is_composite(dtype) else dtype
        if np.dtype(T.numpy_dtype(want)) != view.dtype:
            raise RuntimeError(f"wp.from_jax(): the JAX array's dtype {jax_array.dtype} does not "
                               f"match the requested {T.type_name(dtype)}")
        eshape = T.element_shape(dtype)
        if eshape:
            if view.shape[view.ndim - len(eshape):] != eshape:
                n = int(np.prod(eshape))
                if view.ndim and view.shape[-1] % n == 0 and len(eshape) >= 1 and \
                        view.flags.c_contiguous:
                    view = view.reshape((*view.shape[:-1], view.shape[-1] // n, *eshape))
                else:
                    raise RuntimeError(f"wp.from_jax(): the inner dimensions {view.shape} do not "
                                       f"fit the requested type {T.type_name(dtype)}")
    ndim = view.ndim - len(T.element_shape(dtype))
    if ndim < 1:  # a scalar JAX array: an array of one element, as Warp
        view = view.reshape((1, *view.shape))
    if ndim > 4:
        raise RuntimeError(f"wp.from_jax(): arrays have at most 4 dimensions, got {ndim}")
    return array._wrap(view, dtype, D.get_device("cpu"), ref=jax_array)


def to_jax(warp_array):
    """A JAX array over a weft array's memory, without copying (CPU, through DLPack). Vector
    and matrix elements become trailing dimensions."""
    jax = _jax()
    if warp_array.device.is_cuda:
        raise NotImplementedError("weft: wp.to_jax() of a CUDA array (weft shares CPU memory "
                                  "only)")
    host = warp_array.numpy()
    if getattr(T, "bfloat16", None) is not None and warp_array.dtype is T.bfloat16:
        raise TypeError("weft has no bfloat16 arrays to convert")
    import jax.dlpack  # noqa: PLC0415,F401
    try:
        return jax.dlpack.from_dlpack(host)
    except Exception:  # noqa: BLE001 - numpy storage JAX cannot alias (unaligned, strided)
        return jax.numpy.asarray(np.ascontiguousarray(host))
