"""The few structures of XLA's foreign-function C API (``xla/ffi/api/c_api.h``, API version
0.1) that a CPU handler written in Python needs, declared with :mod:`ctypes`: the call frame,
its argument and result buffers and attributes, the metadata query XLA sends a handler first,
and ``XLA_FFI_Error_Create`` to report an error instead of raising through C.

A handler is a ``HANDLER`` (a C function ``XLA_FFI_Error* (XLA_FFI_CallFrame*)``) made with
:func:`handler`, which answers the metadata query, turns any Python exception into an XLA error
(the call then fails in JAX with the exception's message) and never lets one unwind into C.
"""
from __future__ import annotations

import ctypes
import os
import sys
import traceback

import numpy as np

c_int64_p = ctypes.POINTER(ctypes.c_int64)

# XLA_FFI_Error_Code (absl status codes)
ERROR_UNKNOWN = 2
ERROR_INVALID_ARGUMENT = 3
ERROR_FAILED_PRECONDITION = 9
ERROR_UNIMPLEMENTED = 12
ERROR_INTERNAL = 13

EXTENSION_METADATA = 1  # XLA_FFI_Extension_Type
TRAIT_COMMAND_BUFFER_COMPATIBLE = 1  # XLA_FFI_Handler_TraitsBits

# XLA_FFI_AttrType
ATTR_ARRAY, ATTR_DICTIONARY, ATTR_SCALAR, ATTR_STRING = 1, 2, 3, 4

# XLA_FFI_DataType -> numpy
DTYPES = {1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8,
          7: np.uint16, 8: np.uint32, 9: np.uint64, 10: np.float16, 11: np.float32,
          12: np.float64, 15: np.complex64, 18: np.complex128}


class ExtensionBase(ctypes.Structure):
    pass


ExtensionBase._fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int),
                          ("next", ctypes.POINTER(ExtensionBase))]
_EXT = ctypes.POINTER(ExtensionBase)


class ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", ApiVersion),
                ("traits", ctypes.c_uint32)]


class MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", ExtensionBase), ("metadata", ctypes.POINTER(Metadata))]


class ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("message", ctypes.c_char_p), ("errc", ctypes.c_int)]


ERROR_CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(ErrorCreateArgs))


class Api(ctypes.Structure):
    # only the leading members: the handler reads nothing past XLA_FFI_Error_Create
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("api_version", ApiVersion), ("internal_api", ctypes.c_void_p),
                ("error_create", ERROR_CREATE)]


class Buffer(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("dtype", ctypes.c_int), ("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                ("dims", c_int64_p)]


class _List(ctypes.Structure):  # XLA_FFI_Args and XLA_FFI_Rets
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("size", ctypes.c_int64), ("types", ctypes.POINTER(ctypes.c_int)),
                ("items", ctypes.POINTER(ctypes.c_void_p))]


class ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Scalar(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("value", ctypes.c_void_p)]


class Array(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("size", ctypes.c_size_t), ("data", ctypes.c_void_p)]


class Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("size", ctypes.c_int64), ("types", ctypes.POINTER(ctypes.c_int)),
                ("names", ctypes.POINTER(ctypes.POINTER(ByteSpan))),
                ("attrs", ctypes.POINTER(ctypes.c_void_p))]


class CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _EXT),
                ("api", ctypes.POINTER(Api)), ("ctx", ctypes.c_void_p), ("stage", ctypes.c_int),
                ("args", _List), ("rets", _List), ("attrs", Attrs),
                ("future", ctypes.c_void_p)]


HANDLER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(CallFrame))


class FfiError(Exception):
    """An error a handler reports to XLA with a given ``XLA_FFI_Error_Code``."""

    def __init__(self, message, code=ERROR_INVALID_ARGUMENT):
        super().__init__(message)
        self.code = code


def error(frame, message, code=ERROR_UNKNOWN):
    """A new ``XLA_FFI_Error*`` (as an int) carrying ``message``: what a handler returns to
    fail the call. XLA copies the message and owns the error."""
    args = ErrorCreateArgs(ctypes.sizeof(ErrorCreateArgs), None,
                           str(message).encode("utf-8", "replace"), int(code))
    return frame.contents.api.contents.error_create(ctypes.byref(args))


def answer_metadata(frame, traits=0):
    """Answer XLA's first call, which asks the handler's API version and traits through a
    metadata extension; True when this call was that query."""
    ext = frame.contents.extension_start
    if not ext or ext.contents.type != EXTENSION_METADATA:
        return False
    meta = ctypes.cast(ext, ctypes.POINTER(MetadataExtension)).contents.metadata.contents
    meta.api_version.major_version = 0
    meta.api_version.minor_version = 1
    meta.traits = traits
    return True


def handler(fn, traits=0):
    """A C handler calling ``fn(frame)`` (``frame``: a pointer to the :class:`CallFrame`).
    Exceptions never reach C: they become an XLA error (:class:`FfiError` keeps its code), so
    JAX raises at the call with the message. ``WEFT_TRACE=1`` prints the Python traceback."""
    def call(frame):
        try:
            if answer_metadata(frame, traits):
                return None
            fn(frame)
            return None
        except BaseException as exc:  # noqa: BLE001 - nothing may unwind into XLA
            try:
                if os.environ.get("WEFT_TRACE"):
                    traceback.print_exc(file=sys.stderr)
                code = getattr(exc, "code", ERROR_UNKNOWN) if isinstance(exc, FfiError) \
                    else ERROR_UNKNOWN
                msg = str(exc) if isinstance(exc, FfiError) else \
                    f"weft FFI callback error: {type(exc).__name__}: {exc}"
                return error(frame, msg, code)
            except BaseException:  # noqa: BLE001 - last resort: a generic error
                try:
                    return error(frame, "weft FFI callback failed", ERROR_INTERNAL)
                except BaseException:  # noqa: BLE001
                    return None
    return HANDLER(call)


def buffers(lst):
    """The ``Buffer`` structures of an argument or result list."""
    n = lst.size
    out = []
    for i in range(n):
        out.append(ctypes.cast(lst.items[i], ctypes.POINTER(Buffer)).contents)
    return out


def buffer_shape(buf):
    return tuple(buf.dims[:buf.rank])


class _Iface:
    __slots__ = ("__array_interface__",)

    def __init__(self, iface):
        self.__array_interface__ = iface


def buffer_view(buf, shape=None, dtype=None):
    """A numpy view of an XLA buffer (no copy), of its own shape or ``shape`` (same size)."""
    dt = dtype if dtype is not None else np.dtype(DTYPES.get(buf.dtype) or _unknown(buf.dtype))
    shape = buffer_shape(buf) if shape is None else shape
    if not buf.data or 0 in shape:
        return np.zeros(shape, dt)
    return np.asarray(_Iface({"version": 3, "shape": shape, "typestr": dt.str,
                              "data": (buf.data, False)}))


def _unknown(code):
    raise FfiError(f"XLA buffer of unsupported data type (XLA_FFI_DataType {code})")


def decode_attrs(frame):
    """The call's attributes as a dict: scalars as numpy scalars, arrays as numpy arrays,
    strings as str."""
    a = frame.contents.attrs
    out = {}
    for i in range(a.size):
        span = a.names[i].contents
        name = ctypes.string_at(span.ptr, span.len).decode()
        kind = a.types[i]
        ptr = a.attrs[i]
        if kind == ATTR_SCALAR:
            s = ctypes.cast(ptr, ctypes.POINTER(Scalar)).contents
            dt = np.dtype(DTYPES.get(s.dtype) or _unknown(s.dtype))
            out[name] = np.frombuffer(ctypes.string_at(s.value, dt.itemsize), dt)[0]
        elif kind == ATTR_ARRAY:
            arr = ctypes.cast(ptr, ctypes.POINTER(Array)).contents
            dt = np.dtype(DTYPES.get(arr.dtype) or _unknown(arr.dtype))
            out[name] = np.frombuffer(ctypes.string_at(arr.data, dt.itemsize * arr.size),
                                      dt).copy()
        elif kind == ATTR_STRING:
            span = ctypes.cast(ptr, ctypes.POINTER(ByteSpan)).contents
            out[name] = ctypes.string_at(span.ptr, span.len).decode()
        else:
            out[name] = None  # dictionaries: not used by weft's handlers
    return out
