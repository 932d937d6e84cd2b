"""PyTorch interop: ``wp.from_torch``, ``wp.to_torch``, the dtype and device conversions, and
weft kernels inside ``torch.autograd``.

Arrays and tensors share memory both ways, with no copy: a weft array's CPU data is a numpy
array, which ``torch.from_numpy`` wraps, and a CPU tensor's memory is a numpy view
(``Tensor.numpy()``) that weft wraps. On CUDA both sides speak
``__cuda_array_interface__`` (weft's CUDA arrays are Numba device arrays). Gradients are shared
too: ``from_torch(t, requires_grad=True)`` makes ``t.grad`` (allocated if missing) the array's
``.grad``, and ``to_torch(a)`` of an array with a gradient sets the tensor's ``.grad`` to it.

Example::

    t = torch.arange(6.0).reshape(2, 3)
    a = wp.from_torch(t, dtype=wp.vec3)          # 2 vec3, the tensor's memory
    wp.launch(scale, dim=2, inputs=[a, 2.0])      # t is now doubled
    y = wp.to_torch(a)                            # the same memory again, shape (2, 3)

    f = weft.torch.function(my_kernel)            # my_kernel(x, y): y from x
    y = f(x)                                      # differentiable in torch.autograd (both modes)

``function`` is weft's own (Warp has none): it runs a kernel as a ``torch.autograd.Function``
whose backward is weft's adjoint kernel and whose forward-mode derivative (``torch.func.jvp``,
``torch.autograd.forward_ad``) is weft's tangent kernel. See ``docs/interop-torch.md``.

This module imports torch when first used, not when imported.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..core import types as T
from ..runtime import device as D
from ..runtime.array import array
from ..runtime.array_data import ARRAY_MAX_DIMS

__all__ = ["from_torch", "to_torch", "dtype_from_torch", "dtype_to_torch", "dtype_is_compatible",
           "device_from_torch", "device_to_torch", "stream_from_torch", "stream_to_torch",
           "function", "array_t"]


# Errors: Warp raises RuntimeError for these; weft's are also the TypeError/ValueError they are.

class TorchDtypeError(TypeError, RuntimeError):
    """A torch dtype and a weft dtype that do not go together (also a RuntimeError, as Warp's)."""


class TorchLayoutError(ValueError, RuntimeError):
    """A tensor shape or layout a weft array cannot take (also a RuntimeError, as Warp's)."""


def _torch():
    import torch  # noqa: PLC0415 - imported when first needed
    return torch


# ------------------------------------------------------------------------------------ dtypes

_TO_TORCH = None
_FROM_TORCH = None
_COMPATIBLE = None


def _tables():
    global _TO_TORCH, _FROM_TORCH, _COMPATIBLE
    if _TO_TORCH is None:
        torch = _torch()
        _FROM_TORCH = {torch.float16: T.float16, torch.bfloat16: T.bfloat16,
                       torch.float32: T.float32, torch.float64: T.float64,
                       torch.int8: T.int8, torch.int16: T.int16, torch.int32: T.int32,
                       torch.int64: T.int64, torch.uint8: T.uint8, torch.bool: T.bool}
        _TO_TORCH = {v: k for k, v in _FROM_TORCH.items()}
        # torch's unsigned types wider than 8 bits have few operations: Warp maps to signed
        _TO_TORCH.update({T.uint16: torch.int16, T.uint32: torch.int32, T.uint64: torch.int64})
        _COMPATIBLE = {
            torch.float64: {T.float64}, torch.float32: {T.float32},
            torch.float16: {T.float16}, torch.bfloat16: {T.bfloat16},
            torch.int64: {T.int64, T.uint64}, torch.int32: {T.int32, T.uint32},
            torch.int16: {T.int16, T.uint16}, torch.int8: {T.int8, T.uint8},
            torch.uint8: {T.uint8, T.int8}, torch.bool: {T.bool, T.uint8, T.int8},
        }
    return _TO_TORCH, _FROM_TORCH, _COMPATIBLE


def dtype_to_torch(warp_dtype):
    """The ``torch.dtype`` of a weft scalar type (``wp.uint16/32/64`` map to the signed torch
    type of their width, as in Warp). Raises TypeError for other types."""
    torch_dtype = _tables()[0].get(warp_dtype)
    if torch_dtype is None:
        raise TypeError(f"Cannot convert {warp_dtype} to a Torch type")
    return torch_dtype


def dtype_from_torch(torch_dtype):
    """The weft scalar type of a ``torch.dtype`` (``torch.bfloat16`` gives ``wp.bfloat16``,
    which weft names but has no arrays of). Raises TypeError for complex and other types."""
    warp_dtype = _tables()[1].get(torch_dtype)
    if warp_dtype is None:
        raise TypeError(f"Cannot convert {torch_dtype} to a Warp type")
    return warp_dtype


def dtype_is_compatible(torch_dtype, warp_dtype):
    """Whether a tensor of ``torch_dtype`` can be seen as an array of ``warp_dtype`` (its scalar
    type for vectors and matrices): the same type, or an integer type of the same width."""
    allowed = _tables()[2].get(torch_dtype)
    if allowed is None:
        return False
    return warp_dtype in allowed or (T.is_composite(warp_dtype) and
                                     T.scalar_of(warp_dtype) in allowed)


# ------------------------------------------------------------------------------------ devices

def device_from_torch(torch_device):
    """The weft device of a torch device (``torch.device`` or a string: ``"cpu"``, ``"cuda"``,
    ``"cuda:1"``). Raises RuntimeError for device types weft has not (``mps``, ``meta``, ...),
    ValueError for anything that is not a device."""
    if isinstance(torch_device, str):
        kind, _, index = torch_device.partition(":")
        if kind == "cpu" and not index:
            return D.get_device("cpu")
        if kind == "cuda" and (not index or index.isdigit()):
            return D.get_device(torch_device)
        raise RuntimeError(f"Unsupported Torch device {torch_device}")
    torch = _torch()
    if not isinstance(torch_device, torch.device):
        raise ValueError("Argument must be a torch.device object or a string")
    if torch_device.type == "cpu":
        return D.get_device("cpu")
    if torch_device.type == "cuda":
        index = torch_device.index
        return D.get_device("cuda" if index is None else f"cuda:{index}")
    raise RuntimeError(f"Unsupported Torch device type {torch_device.type}")


def device_to_torch(warp_device):
    """The torch device string of a weft device (``"cpu"``, ``"cuda:0"``); None: the current
    device."""
    device = D.get_device(warp_device)
    if device.is_cpu or device.is_cuda:
        return str(device)
    raise RuntimeError(f"Warp device {device} is not compatible with torch")


# ------------------------------------------------------------------------------------ streams

def stream_from_torch(stream_or_device=None):
    """Warp's conversion of a torch CUDA stream. weft launches CUDA kernels on Numba's default
    stream and has no stream objects, so this raises; synchronize instead
    (``torch.cuda.synchronize()`` before a weft launch reads what torch wrote, and
    ``wp.synchronize()`` before torch reads what weft wrote)."""
    torch = _torch()
    if not torch.cuda.is_available():
        raise RuntimeError("stream_from_torch: torch has no CUDA here (CUDA streams exist only "
                           "on CUDA devices)")
    raise NotImplementedError("stream_from_torch: weft has no CUDA stream objects (its CUDA "
                              "launches run on the default stream); synchronize torch and weft "
                              "instead (torch.cuda.synchronize(), wp.synchronize())")


def stream_to_torch(stream_or_device=None):
    """Warp's conversion of a Warp CUDA stream to torch; weft has no stream objects, so this
    raises (see :func:`stream_from_torch`)."""
    torch = _torch()
    if not torch.cuda.is_available():
        raise RuntimeError("stream_to_torch: torch has no CUDA here (CUDA streams exist only "
                           "on CUDA devices)")
    raise NotImplementedError("stream_to_torch: weft has no CUDA stream objects (its CUDA "
                              "launches run on the default stream); synchronize torch and weft "
                              "instead (torch.cuda.synchronize(), wp.synchronize())")


# ------------------------------------------------------------------------------------ from_torch

class array_t:
    """What ``from_torch(..., return_ctype=True)`` returns, as Warp's ``array_t``: ``data`` and
    ``grad`` (addresses; 0 for no gradient), ``ndim``, ``shape`` and ``strides`` (bytes).

    weft kernels take ``wp.array``s, not descriptors, but on the CPU a descriptor passed to
    ``wp.launch`` works as the NumPy view of its memory does (``__array_interface__``)."""

    __slots__ = ("data", "grad", "ndim", "shape", "strides", "_ref", "_gradref", "_view")

    def __init__(self, data, grad, ndim, shape, strides, view=None):
        self.data = data
        self.grad = grad
        self.ndim = ndim
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self._view = view
        self._ref = self._gradref = None

    @property
    def __array_interface__(self):
        if self._view is None:
            raise AttributeError("a CUDA descriptor has no __array_interface__")
        return self._view.__array_interface__

    def __repr__(self):
        return (f"array_t(data=0x{self.data:x}, grad=0x{self.grad:x}, shape={self.shape}, "
                f"strides={self.strides})")


def _check_tensor(t, what="from_torch"):
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what}: expected a torch.Tensor, got {type(t).__name__}")
    if t.layout != torch.strided:
        raise TypeError(f"{what}: weft arrays are dense; a {t.layout} tensor needs .to_dense() "
                        "first")
    if t.is_conj() or t.is_neg():
        raise TypeError(f"{what}: a tensor with a lazy conjugate or negation bit needs "
                        ".resolve_conj() / .resolve_neg() first")


def _resolve_dtype(t, dtype):
    if dtype is None:
        dtype = dtype_from_torch(t.dtype)
    else:
        try:
            dtype = T.as_value_type(dtype) if dtype is not T.bfloat16 else dtype
        except TypeError:
            raise TorchDtypeError(f"Cannot convert Torch type {t.dtype} to Warp type "
                                  f"{dtype}") from None
        if not dtype_is_compatible(t.dtype, dtype):
            raise TorchDtypeError(f"Cannot convert Torch type {t.dtype} to Warp type "
                                  f"{T.type_name(dtype)}")
    if T.scalar_of(dtype) is T.bfloat16:
        raise TorchDtypeError("from_torch: weft has no bfloat16 arrays; convert the tensor first "
                              "(t.float() or t.half())")
    return dtype


def _layout(t, dtype):
    """Warp's shape and byte strides of the array that ``t`` becomes as an array of ``dtype``
    (element dimensions trimmed, checked to be dense)."""
    esize = T.numpy_dtype(dtype).itemsize
    shape = tuple(t.shape)
    strides = tuple(s * esize for s in t.stride())
    eshape = T.element_shape(dtype)
    if eshape:
        k = len(eshape)
        if k > len(shape) or shape[-k:] != eshape:
            raise TorchLayoutError(f"Could not convert PyTorch tensor with shape {shape} to Warp "
                                   f"array with dtype={T.type_name(dtype)}, ensure that source "
                                   f"inner shape is {eshape}")
        inner = strides[-k:]
        want = tuple(esize * int(np.prod(eshape[j + 1:], dtype=np.int64)) for j in range(k))
        if any(s != w for s, w, n in zip(inner, want, eshape) if n > 1):
            raise TorchLayoutError(f"Could not convert PyTorch tensor with shape {shape} to Warp "
                                   f"array with dtype={T.type_name(dtype)}, because the source "
                                   "inner strides are not contiguous")
        shape, strides = shape[:-k] or (1,), strides[:-k] or (esize * int(np.prod(eshape)),)
    elif not shape:  # a 0-d tensor: a one-element array
        shape, strides = (1,), (esize,)
    if len(shape) > ARRAY_MAX_DIMS:
        raise TorchLayoutError(f"from_torch: weft arrays have at most {ARRAY_MAX_DIMS} "
                               f"dimensions, the tensor gives {len(shape)} (shape "
                               f"{tuple(t.shape)} as {T.type_name(dtype)})")
    return shape, strides


def _host_view(t, dtype, shape, strides):
    """The numpy view of CPU tensor ``t``'s memory that a weft array of ``dtype`` holds."""
    try:
        view = t.detach().numpy()
    except (RuntimeError, TypeError) as exc:
        raise TypeError(f"from_torch: torch cannot share this tensor's memory with numpy: "
                        f"{exc}") from None
    np_dt = T.numpy_dtype(dtype)
    if view.dtype != np_dt:  # int64 as uint64, bool as uint8, ...
        view = view.view(np_dt) if view.ndim else view.reshape(1).view(np_dt)
    eshape = T.element_shape(dtype)
    inner = tuple(np_dt.itemsize * int(np.prod(eshape[j + 1:], dtype=np.int64))
                  for j in range(len(eshape)))
    full_shape, full_strides = (*shape, *eshape), (*strides, *inner)
    if view.shape != full_shape or view.strides != full_strides:
        view = np.lib.stride_tricks.as_strided(view, full_shape, full_strides)
    return view


def _device_view(t, dtype, shape, strides):
    """The Numba device array over CUDA tensor ``t``'s memory (``__cuda_array_interface__``)."""
    from numba import cuda
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    try:
        base = cuda.as_cuda_array(t.detach())
    except Exception as exc:  # noqa: BLE001 - any failure of the interface
        raise TypeError(f"from_torch: the CUDA tensor's memory cannot be shared with Numba: "
                        f"{exc}") from None
    np_dt = T.numpy_dtype(dtype)
    eshape = T.element_shape(dtype)
    inner = tuple(np_dt.itemsize * int(np.prod(eshape[j + 1:], dtype=np.int64))
                  for j in range(len(eshape)))
    return DeviceNDArray((*shape, *eshape), (*strides, *inner), np_dt, gpu_data=base.gpu_data,
                         stream=0)


def _wrap(t, dtype, shape, strides, device):
    if device.is_cuda:
        data = _device_view(t, dtype, shape, strides)
    else:
        data = _host_view(t, dtype, shape, strides)
    a = array._wrap(data, dtype, device, ref=t)
    a._exposed = True  # torch writes this memory behind weft's back: tapes checksum what they read
    a._tensor = t
    if t.data_ptr():  # Warp's capacity: the bytes of the tensor's storage from its first element
        storage = t.untyped_storage()
        a._capacity = storage.nbytes() - (t.data_ptr() - storage.data_ptr())
    return a


def from_torch(t, dtype=None, requires_grad=None, grad=None, return_ctype=False,
               retain_grad=False):
    """A weft array over tensor ``t``'s memory (no copy: writes on either side show on the
    other).

    ``dtype``: the array's element type (default: ``t``'s). A vector or matrix type takes the
    tensor's trailing dimensions as its components (they must be dense): a ``(n, 3)`` float32
    tensor as ``wp.vec3`` is an array of n vectors. Integer types of the same width alias each
    other (an int64 tensor as ``wp.uint64``), and a bool tensor may be ``wp.uint8``/``wp.int8``.
    Other strides (slices, ``expand``'s zero strides) are kept.

    ``requires_grad`` (default ``t.requires_grad``): give the array a gradient, which is
    ``t.grad`` (allocated, zeroed, with ``t``'s strides, if ``t`` has none). ``grad``: the
    gradient to use instead (a weft array or a tensor). ``retain_grad``: Warp's flag on the
    array. ``return_ctype``: return an :class:`array_t` descriptor instead.

    Raises TypeError for what is not a dense CPU or CUDA tensor, for unsupported or
    incompatible dtypes (bfloat16: weft has no bfloat16 arrays); ValueError when the shape does
    not fit the dtype or there are more than 4 dimensions (both also RuntimeErrors, as Warp's).
    """
    _check_tensor(t)
    dtype = _resolve_dtype(t, dtype)
    shape, strides = _layout(t, dtype)
    device = device_from_torch(t.device)
    requires_grad = t.requires_grad if requires_grad is None else bool(requires_grad)

    torch = _torch()
    grad_owner = None  # what holds the gradient's memory: a weft array or a tensor
    if grad is not None:
        if isinstance(grad, torch.Tensor):
            _check_tensor(grad, "from_torch(grad=...)")
            if tuple(grad.shape) != tuple(t.shape):
                raise TorchLayoutError(f"from_torch: the gradient's shape {tuple(grad.shape)} "
                                       f"is not the tensor's {tuple(t.shape)}")
        elif not isinstance(grad, array):
            raise TypeError(f"from_torch: grad must be a torch.Tensor or a wp.array, got "
                            f"{type(grad).__name__}")
        grad_owner = grad
    elif requires_grad:
        if t.grad is None:
            # zeroed, laid out as t (expand's zero strides included), owned by torch
            g = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
            g.zero_()
            t.grad = g
        grad_owner = t.grad

    if return_ctype:
        grad_ptr = 0
        if isinstance(grad_owner, array):
            if grad_owner.strides != strides:
                raise TorchLayoutError(f"Gradient strides must match array strides, expected "
                                       f"{strides} but got {grad_owner.strides}")
            grad_ptr = grad_owner.ptr or 0
        elif grad_owner is not None:
            if grad_owner.stride() != t.stride():
                raise TorchLayoutError(f"Gradient strides must match array strides, expected "
                                       f"{t.stride()} but got {grad_owner.stride()}")
            grad_ptr = grad_owner.data_ptr()
        view = None if device.is_cuda else _host_view(t, dtype, shape, strides)
        desc = array_t(t.data_ptr(), grad_ptr, len(shape), shape, strides, view)
        desc._ref, desc._gradref = t, grad_owner
        return desc

    a = _wrap(t, dtype, shape, strides, device)
    if grad_owner is not None:
        if isinstance(grad_owner, array):
            a.grad = grad_owner  # checked: dtype, shape and device
        else:
            gshape, gstrides = _layout(grad_owner, _resolve_dtype(grad_owner, dtype))
            a.grad = _wrap(grad_owner, dtype, gshape, gstrides, device)
    if retain_grad:
        a.retain_grad = True
    return a


# ------------------------------------------------------------------------------------ to_torch

def _tensor_of(a):
    """The tensor over weft array ``a``'s memory (element dimensions trailing)."""
    torch = _torch()
    if T.is_struct(a.dtype):
        raise TorchDtypeError("Cannot convert structured Warp arrays to Torch.")
    if not isinstance(a, array) or a.is_annotation:
        raise TypeError(f"to_torch: expected a wp.array with data, got {a!r}")
    torch_dtype = dtype_to_torch(T.scalar_of(a.dtype))
    if a.device.is_cuda:
        t = torch.as_tensor(a._data, device=device_to_torch(a.device))
        if t.dtype != torch_dtype:
            t = t.view(torch_dtype)
        return t
    data = a.numpy()
    np_dt = np.dtype(torch.empty(0, dtype=torch_dtype).numpy().dtype)
    if data.dtype != np_dt:  # unsigned types wider than 8 bits: signed, as dtype_to_torch
        data = data.view(np_dt)
    if not data.flags.writeable:  # torch.from_numpy warns on read-only memory
        data = data.copy()
    t = torch.from_numpy(data)
    t._weft_array = a  # keeps the array (and whatever owns its memory) alive
    return t


def to_torch(a, requires_grad=None):
    """A tensor over weft array ``a``'s memory (no copy). Vector and matrix elements add
    trailing dimensions (n ``vec3`` give shape ``(n, 3)``); strides are kept.

    ``requires_grad`` (default ``a.requires_grad``): the tensor requires grad, and if ``a`` has
    a gradient the tensor's ``.grad`` is that gradient's memory. Arrays of structs raise
    TypeError (also a RuntimeError, as Warp's)."""
    t = _tensor_of(a)
    if requires_grad is None:
        requires_grad = a.requires_grad
    if requires_grad:
        if not t.is_floating_point():
            raise TypeError(f"to_torch: only float tensors can require gradients, the array "
                            f"holds {T.type_name(a.dtype)}")
        t.requires_grad = True
        if a.grad is not None:
            t.grad = _tensor_of(a.grad)
    return t
