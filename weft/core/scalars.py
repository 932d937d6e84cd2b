"""Scalar types of the kernel language: ``bool``, the integer and float types of each width
(``int8`` ... ``uint64``, ``float16``, ``float32``, ``float64``), their groups (``int_types``,
``float_types``, ``scalar_types``), Warp's name-only ``bfloat16``, and the tests
``is_scalar``, ``is_float`` and ``is_int``.

A scalar type is a class, as in Warp; calling it returns a numpy scalar::

    >>> import weft as wp
    >>> wp.float32(1.5), wp.uint8(-2)
    (np.float32(1.5), np.uint8(254))

The composite types (:mod:`weft.core.typecore`) are built on these.
"""
from __future__ import annotations

import builtins
import ctypes

import numpy as np


class _ScalarMeta(type):
    def __instancecheck__(cls, obj):
        """Values are NumPy scalars: ``isinstance(wp.uint8(3), wp.uint8)`` holds, as Warp's."""
        np_type = cls.__dict__.get("_np_")
        return (np_type is not None and type(obj) is np_type) or super().__instancecheck__(obj)


class Scalar(metaclass=_ScalarMeta):
    """Base class of scalar types. ``float32(1.5)`` returns ``numpy.float32(1.5)``; integer
    types wrap to their width as C casts do (``uint8(-2)`` is 254, as in Warp)."""

    _np_ = None
    _kind_ = None  # "float", "int", "uint" or "bool"

    def __new__(cls, value=0):
        if cls._kind_ in ("int", "uint") and isinstance(value, (builtins.int, np.integer,
                                                                builtins.float, np.floating)):
            bits = 8 * np.dtype(cls._np_).itemsize
            v = builtins.int(value) & ((1 << bits) - 1)
            if cls._kind_ == "int" and v >= 1 << (bits - 1):
                v -= 1 << bits
            return cls._np_(v)
        return cls._np_(value)


def _scalar(name, np_type, kind, ctype):
    # __numpy_dtype__ (NumPy 2.4's protocol, as Warp's scalar types): np.dtype(wp.float32) is
    # float32 and np.zeros(3, dtype=wp.float16) works; _type_ is the ctypes type of the storage,
    # as Warp's (programs wrap integers with wp.uint8._type_(x).value)
    return _ScalarMeta(name, (Scalar,), {"_np_": np_type, "_kind_": kind,
                                         "__module__": "weft.types",
                                         "__numpy_dtype__": np.dtype(np_type), "_type_": ctype})


bool = _scalar("bool", np.bool_, "bool", ctypes.c_bool)  # noqa: A001 - Warp's name
int8 = _scalar("int8", np.int8, "int", ctypes.c_int8)
uint8 = _scalar("uint8", np.uint8, "uint", ctypes.c_uint8)
int16 = _scalar("int16", np.int16, "int", ctypes.c_int16)
uint16 = _scalar("uint16", np.uint16, "uint", ctypes.c_uint16)
int32 = _scalar("int32", np.int32, "int", ctypes.c_int32)
uint32 = _scalar("uint32", np.uint32, "uint", ctypes.c_uint32)
int64 = _scalar("int64", np.int64, "int", ctypes.c_int64)
uint64 = _scalar("uint64", np.uint64, "uint", ctypes.c_uint64)
float16 = _scalar("float16", np.float16, "float", ctypes.c_uint16)  # half bits, as Warp
float32 = _scalar("float32", np.float32, "float", ctypes.c_float)
float64 = _scalar("float64", np.float64, "float", ctypes.c_double)

int_types = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
float_types = (float16, float32, float64)
scalar_types = int_types + float_types  # as Warp's: bool is not among them

_BY_NUMPY = {np.dtype(t._np_): t for t in (bool,) + scalar_types}


class bfloat16:
    """Warp's bfloat16 (the name only): weft has no bfloat16 arithmetic, so arrays and kernels
    of it are refused (``wp.array(..., dtype=wp.bfloat16)`` raises TypeError)."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("weft does not support bfloat16 (use float16 or float32)")


def is_scalar(t):
    return isinstance(t, type) and issubclass(t, Scalar) and t is not Scalar


def is_float(t):
    """True for float scalars."""
    return is_scalar(t) and t._kind_ == "float"


def is_int(t):
    return is_scalar(t) and t._kind_ in ("int", "uint")
