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
``torch.autograd.forward_ad``) is weft's tangent kernel. See ``docs/interop.md``.

This module imports torch when first used, not when imported.
"""
from __future__ import annotations

import numpy as np

from ..core import types as T
from ..runtime import device as D
from ..runtime.array import array
from ..runtime.array_data import ARRAY_MAX_DIMS
from ..runtime.launch import launch

_CPU = D.get_device("cpu")

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
    if torch._C._functorch.is_functorch_wrapped_tensor(t):
        raise TypeError(f"{what}: the tensor is a torch.func transform's wrapper, which has no "
                        "memory to share; run weft kernels under torch.func through "
                        "weft.torch.function (or a torch.autograd.Function with setup_context)")
    if t.is_conj() or t.is_neg():
        raise TypeError(f"{what}: a tensor with a lazy conjugate or negation bit needs "
                        ".resolve_conj() / .resolve_neg() first")


_RESOLVED = {}


def _resolve_dtype(t, dtype):
    hit = _RESOLVED.get((t.dtype, dtype))
    if hit is not None:
        return hit
    out = _resolve_dtype_uncached(t, dtype)
    try:
        _RESOLVED[(t.dtype, dtype)] = out
    except TypeError:  # an unhashable dtype argument: checked each time
        pass
    return out


def _resolve_dtype_uncached(t, dtype):
    if dtype is None:
        dtype = dtype_from_torch(t.dtype)
    if isinstance(dtype, type) and issubclass(dtype, T.bfloat16):  # vector(3, bfloat16) too
        raise TorchDtypeError("from_torch: weft has no bfloat16 arrays; convert the tensor first "
                              "(t.float() or t.half())")
    try:
        dtype = T.as_value_type(dtype)
    except TypeError:
        raise TorchDtypeError(f"Cannot convert Torch type {t.dtype} to Warp type "
                              f"{dtype}") from None
    if not dtype_is_compatible(t.dtype, dtype):
        raise TorchDtypeError(f"Cannot convert Torch type {t.dtype} to Warp type "
                              f"{T.type_name(dtype)}")
    return dtype


_INFO = {}


def _dtype_info(dtype):
    """``(numpy dtype, scalar bytes, element shape, element strides)`` of a weft dtype."""
    info = _INFO.get(dtype)
    if info is None:
        np_dt = T.numpy_dtype(dtype)
        eshape = tuple(T.element_shape(dtype))
        inner = tuple(np_dt.itemsize * int(np.prod(eshape[j + 1:], dtype=np.int64))
                      for j in range(len(eshape)))
        info = _INFO[dtype] = (np_dt, np_dt.itemsize, eshape, inner)
    return info


def _layout(t, dtype):
    """Warp's shape and byte strides of the array that ``t`` becomes as an array of ``dtype``
    (element dimensions trimmed, checked to be dense)."""
    _, esize, eshape, want = _dtype_info(dtype)
    shape = tuple(t.shape)
    strides = tuple(s * esize for s in t.stride())
    if eshape:
        k = len(eshape)
        if k > len(shape) or shape[-k:] != eshape:
            raise TorchLayoutError(f"Could not convert PyTorch tensor with shape {shape} to Warp "
                                   f"array with dtype={T.type_name(dtype)}, ensure that source "
                                   f"inner shape is {eshape}")
        inner = strides[-k:]
        if any(s != w for s, w, n in zip(inner, want, eshape) if n > 1):
            raise TorchLayoutError(f"Could not convert PyTorch tensor with shape {shape} to Warp "
                                   f"array with dtype={T.type_name(dtype)}, because the source "
                                   "inner strides are not contiguous")
        shape, strides = shape[:-k] or (1,), strides[:-k] or (want[0] * eshape[0],)
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
    np_dt, _, eshape, inner = _dtype_info(dtype)
    if view.dtype != np_dt:  # int64 as uint64, bool as uint8, ...
        view = view.view(np_dt) if view.ndim else view.reshape(1).view(np_dt)
    full_shape, full_strides = (*shape, *eshape), (*strides, *inner)
    if view.shape != full_shape or view.strides != full_strides:
        view = np.lib.stride_tricks.as_strided(view, full_shape, full_strides)
    return view


def _device_view(t, dtype, shape, strides):
    """The Numba device array over CUDA tensor ``t``'s memory (described as a
    ``__cuda_array_interface__``; the array keeps ``t`` alive)."""
    from ..runtime.array_data import device_view
    np_dt, _, eshape, inner = _dtype_info(dtype)
    ptr = t.data_ptr()
    try:
        return device_view({"shape": (*shape, *eshape), "strides": (*strides, *inner),
                            "typestr": np_dt.str, "data": (ptr, False), "version": 3},
                           owner=t)
    except Exception as exc:  # noqa: BLE001 - any failure of the interface
        raise TypeError(f"from_torch: the CUDA tensor's memory cannot be shared with Numba: "
                        f"{exc}") from None


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
    device = _CPU if t.device.type == "cpu" else device_from_torch(t.device)
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

_SIGNED = {T.uint16: np.int16, T.uint32: np.int32, T.uint64: np.int64}


def _tensor_of(a):
    """The tensor over weft array ``a``'s memory (element dimensions trailing)."""
    torch = _torch()
    if not isinstance(a, array) or a.is_annotation:
        raise TypeError(f"to_torch: expected a wp.array with data, got {type(a).__name__}")
    if T.is_struct(a.dtype):
        raise TorchDtypeError("Cannot convert structured Warp arrays to Torch.")
    scalar = T.scalar_of(a.dtype)
    torch_dtype = dtype_to_torch(scalar)
    if a.device.is_cuda:
        t = torch.as_tensor(a._data, device=device_to_torch(a.device))
        if t.dtype != torch_dtype:
            t = t.view(torch_dtype)
        return t
    data = a.numpy()
    signed = _SIGNED.get(scalar)
    if signed is not None:  # unsigned types wider than 8 bits: signed, as dtype_to_torch
        data = data.view(signed)
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


# ------------------------------------------------------------------------------------ function

class _Param:
    __slots__ = ("name", "type", "is_array", "dtype", "eshape", "differentiable")

    def __init__(self, name, ptype):
        self.name, self.type = name, ptype
        self.is_array = isinstance(ptype, T.ArrayType)
        dtype = ptype.dtype if self.is_array else ptype
        self.dtype = None if dtype is None or not isinstance(dtype, type) or \
            getattr(dtype, "_wp_generic_", False) else dtype
        self.eshape = T.element_shape(self.dtype) if self.dtype is not None and \
            not T.is_struct(self.dtype) else ()
        self.differentiable = self.dtype is not None and T.is_differentiable(self.dtype)


def function(kernel, dim=None, outputs=1, output_shapes=None):
    """``kernel`` as a differentiable PyTorch function (weft's own; Warp has none).

    The kernel's parameters are its inputs and ``outputs``: the number of trailing parameters
    that are outputs, or their names. The returned callable takes the inputs in declaration
    order (tensors for arrays, numbers for scalars), allocates the outputs zeroed, launches the
    kernel, and returns the output tensor (a tuple of them for several)::

        @wp.kernel
        def saxpy(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), a: float,
                  out: wp.array(dtype=wp.float64)):
            i = wp.tid()
            out[i] = a * x[i] + y[i]

        f = weft.torch.function(saxpy)
        out = f(x, y, 2.0)                 # x, y: float64 tensors
        out.sum().backward()               # x.grad, y.grad by weft's adjoint kernel
        torch.func.jvp(lambda x: f(x, y, 2.0), (x,), (dx,))   # weft's tangent kernel

    ``dim``: the launch grid (an int, a tuple, or a callable of the inputs returning one;
    default: the shape of the first output, as many leading dimensions as ``wp.tid()`` names). ``output_shapes``: a dict from output names to
    shapes (tuples, or callables of the inputs); default: the shape of the first array input.
    The outputs' dtypes are the kernel's annotations (a vec3 array output is a ``(n, 3)``
    tensor), and input tensors are taken as the annotated dtype (``from_torch``'s rules).

    Backward (``loss.backward()``, ``torch.autograd.grad``, ``torch.func.grad``) runs the
    adjoint kernel; forward mode (``torch.func.jvp``, ``torch.autograd.forward_ad``) runs the
    tangent kernel. Gradients flow to float array inputs; scalar parameters are constants (a
    tensor requiring grad there is refused). ``torch.vmap`` is not supported.
    """
    torch = _torch()
    declared = getattr(kernel, "declared", None)
    if declared is None:
        raise TypeError(f"weft.torch.function: expected a @wp.kernel, got "
                        f"{type(kernel).__name__}")
    params = [_Param(n, t) for n, t in declared]
    tid_arity = _tid_arity(kernel)
    if isinstance(outputs, int):
        if not 1 <= outputs <= len(params) - 0:
            raise ValueError(f"weft.torch.function: outputs={outputs}, but kernel "
                             f"'{kernel.key}' has {len(params)} parameters")
        out_names = [p.name for p in params[len(params) - outputs:]]
    else:
        out_names = [outputs] if isinstance(outputs, str) else list(outputs)
        unknown = [n for n in out_names if n not in {p.name for p in params}]
        if unknown:
            raise ValueError(f"weft.torch.function: kernel '{kernel.key}' has no parameter "
                             f"{unknown[0]!r}")
    out_set = set(out_names)
    outs = [p for p in params if p.name in out_set]
    ins = [p for p in params if p.name not in out_set]
    for p in outs:
        if not p.is_array or p.dtype is None or T.is_struct(p.dtype):
            raise TypeError(f"weft.torch.function: output '{p.name}' of kernel '{kernel.key}' "
                            "must be an array of a concrete scalar, vector or matrix dtype")
    shapes = dict(output_shapes or {})
    unknown = set(shapes) - out_set
    if unknown:
        raise ValueError(f"weft.torch.function: output_shapes names {sorted(unknown)}, which "
                         f"are not outputs ({out_names})")

    def wrap_inputs(values):
        """The weft arguments of the inputs (arrays over the tensors' memory, no gradient)."""
        args = []
        for p, v in zip(ins, values):
            if p.is_array:
                if not isinstance(v, torch.Tensor):
                    raise TypeError(f"{kernel.key}: input '{p.name}' is an array: expected a "
                                    f"torch.Tensor, got {type(v).__name__}")
                args.append(from_torch(_plain(v), dtype=p.dtype, requires_grad=False))
            else:
                if isinstance(v, torch.Tensor):
                    if v.requires_grad:
                        raise ValueError(f"{kernel.key}: input '{p.name}' is a scalar "
                                         "parameter, which weft gives no gradient; pass it as "
                                         "a number or a tensor not requiring grad (or make it "
                                         "a one-element array)")
                    v = v.item()
                args.append(v)
        return args

    def launch_shape(values):
        first = next((v for p, v in zip(ins, values) if p.is_array), None)
        out = []
        for p in outs:
            s = shapes.get(p.name)
            if s is None:
                if first is None:
                    raise ValueError(f"{kernel.key}: give output_shapes (no array input to take "
                                     "the outputs' shape from)")
                s = _array_shape(first, next(q for q in ins if q.is_array))
            elif callable(s):
                s = s(*values)
            out.append((s,) if isinstance(s, int) else tuple(int(n) for n in s))
        d = dim(*values) if callable(dim) else dim
        # by default one thread per element of the first output, over the dimensions the
        # kernel's wp.tid() names (i = wp.tid() over an (n, 3) output: n threads, not 3n)
        return out, (out[0][:tid_arity] if d is None else d)

    def all_args(in_args, out_args):
        it_in, it_out = iter(in_args), iter(out_args)
        return [next(it_out) if p.name in out_set else next(it_in) for p in params]

    def device_of(values):
        t = next((v for v in values if isinstance(v, torch.Tensor)), None)
        return device_from_torch(t.device) if t is not None else D.get_device()

    def new_outputs(out_shapes, device):
        return [torch.zeros((*s, *p.eshape), dtype=dtype_to_torch(T.scalar_of(p.dtype)),
                            device=device_to_torch(device)) for p, s in zip(outs, out_shapes)]

    def wrap_outputs(tensors):
        return [from_torch(t, dtype=p.dtype, requires_grad=False) for p, t in zip(outs, tensors)]

    def _backward(ctx, values, grad_outputs):
        """The adjoint launch (plain tensors)."""
        device = device_of(values)
        _, grid = launch_shape(values)
        in_args = wrap_inputs(values)
        # the adjoints: zeroed for the inputs wanting a gradient, the incoming gradients
        # copied for the outputs (the adjoint of a store consumes the output's adjoint)
        adj_in, grads = [], []
        for k, (p, v) in enumerate(zip(ins, values)):
            g = None
            if p.is_array and p.differentiable and ctx.needs_input_grad[k]:
                g = torch.zeros(v.shape, dtype=v.dtype, device=v.device)
            grads.append(g)
            adj_in.append(None if g is None else from_torch(g, dtype=p.dtype,
                                                            requires_grad=False))
        adj_out = []
        for p, s, g in zip(outs, ctx.out_shapes, grad_outputs):
            if g is None or not p.differentiable:
                adj_out.append(None)
                continue
            g = g.clone(memory_format=torch.contiguous_format)
            adj_out.append(from_torch(g, dtype=p.dtype, requires_grad=False))
        scratch = wrap_outputs(new_outputs(ctx.out_shapes, device))
        launch(kernel, grid, inputs=all_args(in_args, scratch),
               adj_inputs=all_args(adj_in, adj_out), device=device, adjoint=True)
        return tuple(grads)

    def _jvp(ctx, values, tangents):
        """The tangent launch (plain tensors)."""
        device = device_of(values)
        _, grid = launch_shape(values)
        in_args = wrap_inputs(values)
        tans = {}
        for p, a, t in zip(ins, in_args, tangents):
            if t is not None and p.is_array and p.differentiable:
                tans[a] = from_torch(t, dtype=p.dtype, requires_grad=False)
        out_tangents = new_outputs(ctx.out_shapes, device)
        scratch = wrap_outputs(new_outputs(ctx.out_shapes, device))
        for p, a, t in zip(outs, scratch, out_tangents):
            if p.differentiable:
                tans[a] = from_torch(t, dtype=p.dtype, requires_grad=False)
        from ..autodiff.forward_mode import jvp  # (the autodiff layer, imported late)
        jvp(kernel, grid, inputs=all_args(in_args, scratch), tangents=tans, device=device)
        return out_tangents[0] if len(out_tangents) == 1 else tuple(out_tangents)

    class WeftKernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(*values):
            if len(values) != len(ins):
                raise TypeError(f"{kernel.key}: expected {len(ins)} inputs "
                                f"({', '.join(p.name for p in ins)}), got {len(values)}")
            device = device_of(values)
            out_shapes, grid = launch_shape(values)
            result = new_outputs(out_shapes, device)
            launch(kernel, grid, inputs=all_args(wrap_inputs(values), wrap_outputs(result)),
                   device=device, record_tape=False)
            return result[0] if len(result) == 1 else tuple(result)

        @staticmethod
        def setup_context(ctx, inputs, output):
            tensors = [v if isinstance(v, torch.Tensor) else None for v in inputs]
            ctx.values = [None if isinstance(v, torch.Tensor) else v for v in inputs]
            ctx.save_for_backward(*tensors)
            ctx.save_for_forward(*tensors)
            result = output if isinstance(output, tuple) else (output,)
            ctx.out_shapes = [tuple(r.shape[:r.dim() - len(p.eshape)])
                              for p, r in zip(outs, result)]
            frozen = [r for p, r in zip(outs, result) if not p.differentiable]
            if frozen:
                ctx.mark_non_differentiable(*frozen)

        @staticmethod
        def backward(ctx, *grad_outputs):
            values = [v if t is None else _plain(t)
                      for v, t in zip(ctx.values, ctx.saved_tensors)]
            grad_outputs = [None if g is None else _plain(g) for g in grad_outputs]
            with torch._C._DisableFuncTorch():  # plain tensors from here (torch.func.grad, ...)
                return _backward(ctx, values, grad_outputs)

        @staticmethod
        def jvp(ctx, *tangents):
            values = [v if t is None else _plain(t)
                      for v, t in zip(ctx.values, ctx.saved_tensors)]
            tangents = [None if t is None else _plain(t) for t in tangents]
            with torch._C._DisableFuncTorch():  # plain tensors from here (torch.func.jvp)
                return _jvp(ctx, values, tangents)

    WeftKernelFunction.__name__ = WeftKernelFunction.__qualname__ = f"{kernel.key}_function"

    def apply(*inputs):
        return WeftKernelFunction.apply(*inputs)

    apply.__name__ = kernel.key
    apply.__doc__ = f"weft kernel '{kernel.key}' as a torch function: inputs " \
                    f"({', '.join(p.name for p in ins)}) -> ({', '.join(out_names)})"
    apply.Function = WeftKernelFunction
    return apply


def _tid_arity(kernel):
    """How many indices the kernel unpacks ``wp.tid()`` into (1 when it does not call it)."""
    import ast
    for node in ast.walk(kernel.parsed().tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "attr", getattr(node.value.func, "id", None)) == "tid":
            target = node.targets[0]
            return len(target.elts) if isinstance(target, ast.Tuple) else 1
    return 1


def _array_shape(t, p):
    """The array shape of input tensor ``t`` for parameter ``p`` (element dimensions off)."""
    shape = tuple(t.shape)
    return shape[:len(shape) - len(p.eshape)] if p.eshape else shape


def _plain(t):
    """The plain tensor under ``torch.func``'s wrappers (a transform hands an autograd.Function
    its wrapped tensors), detached."""
    torch = _torch()
    functorch = torch._C._functorch
    while functorch.is_functorch_wrapped_tensor(t):
        if functorch.is_batchedtensor(t):
            raise NotImplementedError("weft kernels do not run under torch.vmap (nor jacrev, "
                                      "jacfwd, hessian, which use it): use torch.func.grad/vjp/"
                                      "jvp, or torch.autograd.functional.jacobian")
        t = functorch.get_unwrapped(t)
    with torch._C._DisableFuncTorch():
        return t.detach()
