"""DLPack: weft arrays shared with other libraries without a copy.

- ``wp.to_dlpack(a)`` gives a DLPack capsule (the unversioned ``"dltensor"`` kind, which every
  consumer reads); ``a.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)`` and
  ``a.__dlpack_device__()`` are the Python array API's protocol, so ``np.from_dlpack(a)``,
  ``torch.from_dlpack(a)`` and ``jax.dlpack.from_dlpack(a)`` share weft's memory. A consumer
  that asks for DLPack 1.0 (``max_version >= (1, 0)``) gets a versioned capsule.
- ``wp.from_dlpack(source, dtype=None)`` wraps the memory of any DLPack producer (an object with
  ``__dlpack__``, or a capsule) as a weft array. Without ``dtype`` the array has the source's
  scalar type and shape; a vector or matrix ``dtype`` takes the trailing dimensions as its
  components (they must be dense), a scalar ``dtype`` of the same width reinterprets the bits
  (``int32``/``uint32``, ``bool``/``int8``/``uint8``), as in Warp.

A vector or matrix array is exported as scalars with its components as trailing dimensions,
strides counted in elements, as DLPack asks. The exported memory stays alive until the consumer
releases it (the capsule's deleter), and an imported array keeps its producer's memory alive
until the last numpy view of it is gone. A capsule can be consumed once: a second use is a
``ValueError``. Struct arrays and bfloat16 have no DLPack counterpart in weft: ``TypeError``.

CPU memory is shared as numpy views, CUDA memory through numba-cuda's device arrays
(``__cuda_array_interface__``).
"""
from __future__ import annotations

import ctypes
import numpy as np

from ..core import types as T
from . import device as D
from .array import array
from .array_copy import clone
from .array_data import _as_dtype, device_view

# ---------------------------------------------------------------------------- the C structures
# (DLPack's dlpack.h, version 1.0; field order and widths are the ABI)

CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
INT, UINT, FLOAT, BFLOAT, BOOL = 0, 1, 2, 4, 6
READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# capsule names (module constants: a capsule keeps a pointer to its name for its whole life)
_NAME, _USED = b"dltensor", b"used_dltensor"
_NAME_V, _USED_V = b"dltensor_versioned", b"used_dltensor_versioned"


def _capi(name, restype, *argtypes):
    """A function of Python's C API taking raw pointers (``ctypes.pythonapi`` holds the GIL)."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_capsule_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_capsule_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object,
                         ctypes.c_char_p)
_capsule_set_name = _capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)


# ---------------------------------------------------------------------------- dtypes

_SCALARS = [T.bool, T.int8, T.uint8, T.int16, T.uint16, T.int32, T.uint32, T.int64, T.uint64,
            T.float16, T.float32, T.float64]
_CODE = {T.bool: BOOL, T.float16: FLOAT, T.float32: FLOAT, T.float64: FLOAT,
         **{t: INT for t in (T.int8, T.int16, T.int32, T.int64)},
         **{t: UINT for t in (T.uint8, T.uint16, T.uint32, T.uint64)}}
_CODE_NAME = {INT: "int", UINT: "uint", FLOAT: "float", BFLOAT: "bfloat", BOOL: "bool",
              5: "complex", 3: "opaque_handle"}


def _bits(t):
    return np.dtype(t._np_).itemsize * 8


def dtype_to_dlpack(t):
    """The DLPack ``(code, bits, lanes)`` of weft scalar type ``t``."""
    t = T.scalar_of(t)
    if t not in _CODE:
        raise TypeError(f"weft: no DLPack data type for {getattr(t, '__name__', t)}")
    return (_CODE[t], _bits(t), 1)


def dtype_from_dlpack(code, bits, lanes=1):
    """The weft scalar type of a DLPack data type (TypeError for one weft lacks)."""
    for t in _SCALARS:
        if lanes == 1 and (_CODE[t], _bits(t)) == (code, bits):
            return t
    name = f"{_CODE_NAME.get(code, f'code {code}')}{bits}" + (f"x{lanes}" if lanes != 1 else "")
    if code == BFLOAT:
        raise TypeError("weft: DLPack bfloat16 has no weft counterpart (weft has no bfloat16 "
                        "arrays); convert it to float16 or float32 first")
    raise TypeError(f"weft: unsupported DLPack data type {name}")


def _dl_name(code, bits):
    return f"{_CODE_NAME.get(code, f'code {code}')}{bits}"


def _compatible(code, bits, scalar):
    """Whether DLPack data of ``(code, bits)`` may be read as ``scalar`` (Warp's rules: the same
    type, the other signedness of an integer, or bool read as an 8-bit integer)."""
    own = (_CODE[scalar], _bits(scalar))
    if own == (code, bits):
        return True
    ints = (INT, UINT)
    return bits == own[1] and (code in ints and own[0] in ints or
                               code == BOOL and own[0] in ints and bits == 8)


# ---------------------------------------------------------------------------- export
# On the CPU numpy makes the capsule (over a view that keeps weft's memory alive), with its own C
# deleters. CUDA memory is described here, and its deleters are compiled C functions (Numba
# cfuncs): a deleter may run while an exception propagates, where no Python code may run.


def _check_stream(device, stream):
    if device.is_cuda:
        if stream is not None and (not isinstance(stream, int) or isinstance(stream, bool)
                                   or stream < -1):
            raise TypeError("DLPack stream must None or an integer >= -1")
        if stream is not None and stream != -1:
            D.synchronize_device(device)  # weft's work on the array is done before the consumer's
    elif stream is not None and stream != -1:
        raise TypeError("DLPack stream must be None or -1 for CPU device")


def _exportable(a):
    if a.is_annotation:
        raise TypeError("weft: an array annotation has no memory to export through DLPack")
    if T.is_struct(a.dtype):
        raise TypeError(f"weft: arrays of struct {a.dtype.__name__} have no DLPack counterpart "
                        "(DLPack describes arrays of numbers)")
    a._exposed = True  # the consumer may write it: tapes check what they read of it
    return a._data


_native = None  # the compiled deleters, made on the first CUDA export


def _native_deleters():
    """C functions (Numba cfuncs) releasing an exported tensor: the DLManagedTensor deleters of
    both layouts, and the destructors of capsules freed unconsumed. Each drops the reference
    the tensor holds on its ``_Holder`` (whose address is the tensor's ``manager_ctx`` and the
    capsule's context)."""
    global _native
    if _native is None:
        import numba
        from numba import types as nt

        word = ctypes.c_size_t
        api = ctypes.pythonapi
        decref = ctypes.CFUNCTYPE(None, word)(("Py_DecRef", api))
        is_valid = ctypes.CFUNCTYPE(ctypes.c_int, word, word)(("PyCapsule_IsValid", api))
        context = ctypes.CFUNCTYPE(word, word)(("PyCapsule_GetContext", api))
        # a deleter may be called without the GIL (DLPack allows it): each takes it
        gil_ensure = ctypes.CFUNCTYPE(ctypes.c_int)(("PyGILState_Ensure", api))
        gil_release = ctypes.CFUNCTYPE(None, ctypes.c_int)(("PyGILState_Release", api))
        names = (ctypes.addressof(_NAMES[0]), ctypes.addressof(_NAMES[1]))
        plain_ctx = DLManagedTensor.manager_ctx.offset // 8
        versioned_ctx = DLManagedTensorVersioned.manager_ctx.offset // 8
        name, name_v = names

        @numba.cfunc(nt.void(nt.voidptr))
        def release(managed):
            state = gil_ensure()
            decref(numba.carray(managed, plain_ctx + 1, dtype=np.uintp)[plain_ctx])
            gil_release(state)

        @numba.cfunc(nt.void(nt.voidptr))
        def release_v(managed):
            state = gil_ensure()
            decref(numba.carray(managed, versioned_ctx + 1, dtype=np.uintp)[versioned_ctx])
            gil_release(state)

        @numba.cfunc(nt.void(nt.uintp))
        def capsule_gone(capsule):
            if is_valid(capsule, name) or is_valid(capsule, name_v):
                decref(context(capsule))

        _native = (release, release_v, capsule_gone)
    return _native


# the capsule names as C strings at fixed addresses (a capsule points at its name all its life)
_NAMES = (ctypes.create_string_buffer(_NAME), ctypes.create_string_buffer(_NAME_V))
_py_incref = _capi("Py_IncRef", None, ctypes.py_object)
_capsule_new_raw = _capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p)
_capsule_set_context = _capi("PyCapsule_SetContext", ctypes.c_int, ctypes.py_object,
                             ctypes.c_void_p)


class _Holder:
    """What an exported tensor keeps alive: its DLManagedTensor, shape and strides, and the
    memory it describes."""

    def __init__(self, *parts):
        self.parts = parts


def _export_native(a, versioned=False):
    """A DLPack capsule over weft array ``a``'s memory, described here (used for CUDA memory;
    it works for CPU memory too)."""
    data = _exportable(a)
    scalar = T.scalar_of(a.dtype)
    itemsize = np.dtype(scalar._np_).itemsize
    shape, strides = tuple(data.shape), tuple(data.strides)
    if any(s % itemsize for s in strides):
        raise ValueError("weft: the array's strides are not whole elements; DLPack cannot "
                         "describe it")
    release, release_v, capsule_gone = _native_deleters()
    ndim = len(shape)
    dims = (ctypes.c_int64 * max(ndim, 1))(*shape)
    steps = (ctypes.c_int64 * max(ndim, 1))(*(s // itemsize for s in strides))
    managed = (DLManagedTensorVersioned if versioned else DLManagedTensor)()
    tensor = managed.dl_tensor
    tensor.data = a.ptr or 0
    tensor.device = DLDevice(CUDA, a.device.ordinal) if a.device.is_cuda else DLDevice(CPU, 0)
    tensor.ndim = ndim
    tensor.dtype = DLDataType(*dtype_to_dlpack(scalar))
    tensor.shape = dims
    tensor.strides = steps
    tensor.byte_offset = 0
    holder = _Holder(managed, dims, steps, data)
    managed.manager_ctx = id(holder)
    managed.deleter = ctypes.cast(release_v.address if versioned else release.address, _Deleter)
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.flags = 0
    _py_incref(holder)  # the tensor's reference, dropped by its deleter
    capsule = _capsule_new_raw(ctypes.addressof(managed),
                               ctypes.addressof(_NAMES[1 if versioned else 0]),
                               capsule_gone.address)
    _capsule_set_context(capsule, id(holder))
    return capsule


def _export(a, versioned=False):
    if a.device.is_cuda or not a._data.flags.writeable:
        # numpy will not export memory it holds read-only (a JAX buffer wrapped with
        # copy=False, say) without flagging it so; weft's arrays are writable (kernels write
        # them), as Warp's are
        return _export_native(a, versioned)
    data = _exportable(a)
    dtype_to_dlpack(a.dtype)  # a TypeError for what DLPack cannot describe
    return data.__dlpack__(max_version=(1, 0) if versioned else None)


def to_dlpack(a):
    """A DLPack capsule sharing the memory of weft array ``a`` (vector and matrix components as
    trailing dimensions)."""
    return _export(a)


def array_dlpack(a, stream=None, max_version=None, dl_device=None, copy=None):
    """``array.__dlpack__``: the Python array API's export protocol (``np.from_dlpack(a)``,
    ``torch.from_dlpack(a)``)."""
    _check_stream(a.device, stream)
    if dl_device is not None and tuple(dl_device) != array_dlpack_device(a):
        if copy is False:
            raise BufferError(f"weft: the array lives on {a.device}; DLPack device {dl_device} "
                              "needs a copy, and copy=False was asked for")
        raise BufferError(f"weft: export to DLPack device {tuple(dl_device)} is not supported "
                          f"(the array lives on {a.device})")
    if copy:
        a = clone(a)
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return _export(a, versioned=versioned)


def array_dlpack_device(a):
    """``array.__dlpack_device__``: ``(device type, device id)``."""
    return (CUDA, a.device.ordinal) if a.device.is_cuda else (CPU, 0)


# ---------------------------------------------------------------------------- import

class _Owner:
    """Holds an imported DLManagedTensor: the producer's memory lives while this does (numpy
    views over it name it as their base), and its deleter runs when it goes."""

    def __init__(self, address, kind, interface):
        self._address, self._kind = address, kind
        self.__array_interface__ = interface

    def __del__(self):
        managed = self._kind.from_address(self._address)
        if managed.deleter:
            managed.deleter(self._address)


def _consume(capsule):
    """Take the tensor out of a DLPack capsule (renaming it used, so it cannot be taken twice)."""
    for name, used, kind in ((_NAME, _USED, DLManagedTensor),
                             (_NAME_V, _USED_V, DLManagedTensorVersioned)):
        if _capsule_is_valid(capsule, name):
            address = _capsule_pointer(capsule, name)
            _capsule_set_name(capsule, used)
            return address, kind, name
    if not _is_capsule(capsule):
        raise TypeError(f"Expected a valid DLPack capsule, got {type(capsule).__name__}")
    if _capsule_is_valid(capsule, _USED) or _capsule_is_valid(capsule, _USED_V):
        raise ValueError("weft: this DLPack capsule was already consumed (a capsule can be used "
                         "once)")
    raise ValueError("Invalid capsule: expected a DLPack capsule (named 'dltensor' or "
                     "'dltensor_versioned')")


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


_DEVICES = {CPU: "cpu", CUDA: "cuda", CUDA_HOST: "cpu", CUDA_MANAGED: "cuda"}


def _source_device(source):
    kind, ordinal = (int(x) for x in source.__dlpack_device__())
    if kind not in _DEVICES:
        raise TypeError(f"Unsupported source device for DLPack: device_type={kind}, "
                        f"device_id={ordinal}")
    return kind, ordinal


def _capsule_of(source):
    """Ask a producer for a capsule, DLPack 1.0 when it speaks it. weft works on CUDA's legacy
    default stream, which DLPack's ``stream=None`` names."""
    try:
        return source.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0's protocol
        return source.__dlpack__()


def from_dlpack(source, dtype=None):
    """A weft array sharing the memory of DLPack producer ``source`` (an object with
    ``__dlpack__``, or a capsule). ``dtype``: the element type to read it as (see the module
    docstring); by default the source's scalar type."""
    if _is_capsule(source):
        capsule = source
    elif hasattr(source, "__dlpack__"):
        if hasattr(source, "__dlpack_device__"):
            _source_device(source)
        capsule = _capsule_of(source)
    else:
        raise TypeError(f"weft: from_dlpack needs a DLPack capsule or an object with __dlpack__, "
                        f"got {type(source).__name__}")
    return _import(capsule, dtype)


_from_dlpack = from_dlpack  # the name Warp's tests reach it by (warp._src.dlpack._from_dlpack)


def _import(capsule, dtype=None):
    address, kind, name = _consume(capsule)
    managed = kind.from_address(address)
    t = managed.dl_tensor
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    code, bits, lanes = int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)
    dev_type, dev_id = int(t.device.device_type), int(t.device.device_id)
    try:
        if dev_type not in _DEVICES:
            raise TypeError(f"Unsupported source device for DLPack: device_type={dev_type}, "
                            f"device_id={dev_id}")
        if dtype is None:
            scalar = dtype_from_dlpack(code, bits, lanes)
            dtype = scalar
        else:
            dtype = _as_dtype(dtype)
            scalar = T.scalar_of(dtype)
            if T.is_struct(dtype) or scalar not in _CODE or lanes != 1 or \
                    not _compatible(code, bits, scalar):
                raise RuntimeError(f"Incompatible data types: DLPack {_dl_name(code, bits)} and "
                                   f"Warp {getattr(scalar, '__name__', scalar)}")
        itemsize = bits // 8
        if t.strides:
            strides = tuple(int(t.strides[i]) * itemsize for i in range(ndim))
        else:
            strides = tuple(np.empty(shape, np.dtype(f"V{itemsize}")).strides) if ndim else ()
        eshape = T.element_shape(dtype)
        if eshape:
            inner = tuple(np.empty(eshape, np.dtype(f"V{itemsize}")).strides)
            if ndim < len(eshape) or shape[ndim - len(eshape):] != tuple(eshape) or (
                    any(n > 1 for n in eshape) and tuple(
                        s for s, n in zip(strides[ndim - len(eshape):], eshape) if n > 1) !=
                    tuple(s for s, n in zip(inner, eshape) if n > 1)):
                raise ValueError(f"weft: DLPack tensor of shape {shape} cannot be read as an "
                                 f"array of {dtype.__name__}: its trailing dimensions must be "
                                 f"{tuple(eshape)}, densely packed")
    except BaseException:
        if managed.deleter:
            managed.deleter(address)
        raise
    np_dt = np.dtype(scalar._np_)
    device = D.get_device(_DEVICES[dev_type] if _DEVICES[dev_type] == "cpu"
                          else f"cuda:{dev_id}")
    ptr = (t.data or 0) + int(t.byte_offset)
    interface = {"shape": shape, "typestr": np_dt.str, "data": (ptr, False),
                 "strides": strides if ndim else None, "version": 3}
    owner = _Owner(address, kind, interface)
    if device.is_cuda:
        data = device_view(interface, owner)
    elif 0 in shape:
        data = np.empty(shape, np_dt)  # no memory to share (numpy wants a pointer all the same)
    else:
        data = np.asarray(owner)
    out = array._wrap(data, dtype, device, ref=owner)
    out._exposed = True  # the producer may write it behind weft's back
    return out


# the protocol's methods on weft's array (array.py does not import this module, which is above it)
array.__dlpack__ = array_dlpack
array.__dlpack_device__ = array_dlpack_device
