"""Warp's Python-scope type queries and conversions, re-exported by ``weft.types`` (``wp.types``).

Same names and answers as Warp 1.19's ``warp.types`` (checked against Warp itself)::

    >>> import weft as wp
    >>> wp.types.type_is_vector(wp.vec3), wp.types.type_length(wp.mat33)
    (True, 3)
    >>> wp.types.type_size_in_bytes(wp.mat44d), wp.dtype_from_numpy(np.float32) is wp.float32
    (128, True)
    >>> wp.types.types_equal(wp.types.vector(3, wp.float32), wp.vec3f)
    True

``type_is_*`` take a type; Warp's ``is_array``, ``is_quaternion``, ``is_transformation``,
``is_value`` and ``is_tile`` take a value. (``weft.types.is_float``, ``is_int``, ``is_scalar``,
``is_vector``, ``is_matrix``, ``is_composite`` and ``is_struct`` still take a *type*, as weft's
compiler uses them; Warp's versions of those take a value.)
"""
from __future__ import annotations

import builtins
import typing

import numpy as np

from . import typecore as T
from .typecore import _SHORT, _is_array_object, type_repr  # noqa: F401  (weft.types.type_repr)

# ---------------------------------------------------------------------------------------------
# numpy <-> weft scalar types

np_dtype_to_warp_type = {}
"""numpy scalar types and dtypes -> weft scalar types (Warp's ``np_dtype_to_warp_type``)."""
for _t in (T.bool,) + T.scalar_types:
    np_dtype_to_warp_type[_t._np_] = _t
    np_dtype_to_warp_type[np.dtype(_t._np_)] = _t
del _t

warp_type_to_np_dtype = {t: t._np_ for t in (T.bool,) + T.scalar_types}
"""weft scalar types -> numpy scalar types (Warp's ``warp_type_to_np_dtype``)."""


def dtype_from_numpy(numpy_dtype):
    """The weft scalar type of a numpy dtype: ``dtype_from_numpy(np.float32) is wp.float32``.

    Raises TypeError for dtypes weft has no type for (as Warp)."""
    t = np_dtype_to_warp_type.get(numpy_dtype)
    if t is None:
        try:
            t = np_dtype_to_warp_type.get(np.dtype(numpy_dtype))
        except TypeError:
            t = None
    if t is None:
        raise TypeError(f"Cannot convert {numpy_dtype} to a Warp type")
    return t


def dtype_to_numpy(warp_dtype):
    """The numpy scalar type of a weft scalar type: ``dtype_to_numpy(wp.float16) is np.float16``."""
    t = warp_type_to_np_dtype.get(warp_dtype)
    if t is None:
        raise TypeError(f"Cannot convert {warp_dtype} to a NumPy type")
    return t


# ---------------------------------------------------------------------------------------------
# sizes and shapes


def type_to_warp(dtype):
    """Python's ``float``/``int``/``bool`` as weft's ``float32``/``int32``/``bool``; others as is."""
    if dtype is builtins.float:
        return T.float32
    if dtype is builtins.int:
        return T.int32
    if dtype is builtins.bool:
        return T.bool
    return dtype


def type_length(obj):
    """Number of components along the first axis: 3 for ``vec3`` and ``mat33``, else ``len``."""
    if isinstance(obj, T.TupleType):
        return len(obj.types)
    shape = getattr(obj, "_shape_", None)
    if shape is not None:
        return shape[0]
    return len(obj)


def type_size(dtype):
    """Number of scalars in a value of ``dtype``: 1 for scalars and structs, 9 for ``mat33``."""
    if dtype is builtins.float or dtype is builtins.int or T.is_struct(dtype):
        return 1
    if T.is_scalar(dtype):
        return 1
    return dtype._length_


def type_scalar_type(dtype):
    """The scalar type of a vector/matrix type, or the type itself."""
    return getattr(dtype, "_wp_scalar_type_", dtype)


def type_size_in_bytes(dtype):
    """Bytes one value of ``dtype`` occupies in an array (structs: with C alignment).

    ``float`` and ``int`` count as 4 bytes, as in Warp."""
    if dtype is builtins.float or dtype is builtins.int:
        return 4
    if dtype is typing.Any:
        raise TypeError("A concrete type is required")
    if T.is_struct(dtype):
        return T.numpy_dtype(dtype).itemsize
    if T.is_scalar(dtype) or T.is_composite(dtype):
        return T.numpy_dtype(dtype).itemsize * getattr(dtype, "_length_", 1)
    raise TypeError(f"Invalid data type: {dtype}")


def strides_from_shape(shape, dtype):
    """Row-major byte strides of an array of ``shape`` with ``dtype`` elements."""
    out, step = [], type_size_in_bytes(dtype)
    for n in reversed(tuple(shape)):
        out.append(step)
        step *= n
    return tuple(reversed(out))


non_atomic_types = (T.int8, T.uint8, T.int16, T.uint16)
"""Scalar types that Warp's atomics do not support."""


# ---------------------------------------------------------------------------------------------
# predicates on types

def type_is_int(t):
    """True for integer scalar types and Python's ``int`` (not ``bool``)."""
    t = type_to_warp(t)
    return t in T.int_types


def type_is_float(t):
    """True for float scalar types and Python's ``float``."""
    t = type_to_warp(t)
    return t in T.float_types


def type_is_scalar(t):
    """True for integer or float scalar types (not ``bool``)."""
    return type_is_int(t) or type_is_float(t)


def _kind(t):
    return t._wp_kind_ if T.is_composite(t) or getattr(t, "_wp_generic_", False) else None


def type_is_vector(t):
    """True for vector types (``vec3``, ``spatial_vector``, ``vector(5, float64)``, ...)."""
    return isinstance(t, type) and _kind(t) == "vector"


def type_is_matrix(t):
    """True for matrix types (``mat33``, ``spatial_matrix``, ...)."""
    return isinstance(t, type) and _kind(t) == "matrix"


def type_is_quaternion(t):
    """True for quaternion types."""
    return isinstance(t, type) and _kind(t) == "quaternion"


def type_is_transformation(t):
    """True for transform types."""
    return isinstance(t, type) and _kind(t) == "transformation"


def type_is_composite(t):
    """True for vector, matrix, quaternion and transform types."""
    return isinstance(t, type) and _kind(t) is not None


def type_is_value(t):
    """True for scalar (including ``bool``, ``int``, ``float``) and composite types."""
    return t in (builtins.int, builtins.float, builtins.bool, T.bool) + T.scalar_types or \
        type_is_composite(t)


def type_is_struct(t):
    """True for ``@wp.struct`` classes."""
    return T.is_struct(t)


def type_is_array(t):
    """True for the array class ``wp.array`` (Warp: any of its array classes)."""
    return isinstance(t, type) and getattr(t, "_weft_array_", False) is True


def type_is_tile(t):
    """True for a tile type (``wp.tile[float, 4, 4]``)."""
    return isinstance(t, T.TileType)


# ---------------------------------------------------------------------------------------------
# predicates on values (Warp's is_*; the others of that family are weft's own, see above)

def is_array(x):
    """True for an array or an array annotation (``wp.array(dtype=float)``, ``wp.array[float]``)."""
    return _is_array_object(x) or isinstance(x, T.ArrayType)


def is_quaternion(x):
    """True for a quaternion value (``wp.quat(...)``), False for the type."""
    return not isinstance(x, type) and type_is_quaternion(type(x))


def is_transformation(x):
    """True for a transform value, False for the type."""
    return not isinstance(x, type) and type_is_transformation(type(x))


def is_value(x):
    """True for a scalar or composite value (Python numbers, numpy scalars of weft's types,
    vectors, matrices, ...)."""
    if isinstance(x, (builtins.int, builtins.float, builtins.bool)):
        return True
    if isinstance(x, np.generic):
        return np.dtype(type(x)) in np_dtype_to_warp_type
    return not isinstance(x, type) and type_is_composite(type(x))


def is_tile(x):
    """True for a tile type (tiles exist only inside kernels)."""
    return isinstance(x, T.TileType)


# ---------------------------------------------------------------------------------------------
# equality and names

def _params(t):
    return (*t._shape_, T.scalar_of(t)) if not getattr(t, "_wp_generic_", False) else \
        (*t._shape_, t._wp_scalar_type_)


def types_equal(a, b):
    """True when ``a`` and ``b`` are the same weft type (``float`` and ``float32`` are; a vector
    of length 4 and a quaternion are not). Arrays compare by dtype."""
    if a is b:
        return True
    if is_array(a) and is_array(b):
        return types_equal(a.dtype, b.dtype) and _ndim(a) == _ndim(b)
    a, b = type_to_warp(a), type_to_warp(b)
    if type_is_composite(a) and type_is_composite(b):
        return _kind(a) == _kind(b) and _params(a) == _params(b)
    return a is b


def _ndim(a):
    return a.ndim


def type_str(t):
    """A type rendered as an annotation, as Warp's ``warp._src.context.type_str``: ``float32``,
    ``vec3f``, ``Vector[float32, Literal[5]]``, ``Array[vec3f]``, ``tuple[int32, float32]``,
    ``HashGridQuery`` (a hash-grid query of any precision)."""
    if t is None:
        return "None"
    if t is typing.Any:
        return "Any"
    if isinstance(t, builtins.int) and not isinstance(t, builtins.bool):
        return f"Literal[{t}]"
    if isinstance(t, (builtins.list, builtins.tuple)):
        return "tuple[" + ", ".join(map(type_str, t)) + "]"
    if isinstance(t, T.TupleType):
        return type_str(t.types)
    at = t if isinstance(t, T.ArrayType) else getattr(t, "_weft_array_type_", None)
    if at is None and _is_array_object(t):
        at = t
    if at is not None:
        return f"Array[{type_str(at.dtype)}]"
    if T.type_is_hash_grid_query(t):
        return t._wp_public_name_
    if T.is_composite(t) and not getattr(t, "_wp_generic_", False):
        scalar, kind, shape = T.scalar_of(t), t._wp_kind_, t._shape_
        short, fl = _SHORT.get(scalar), T.is_float(scalar) and scalar is not T.bfloat16
        # Warp's named types: vec2-4 of every scalar, square 2-4 and 6 matrices, 6-vectors,
        # quaternions and transforms of the float types
        if kind == "vector" and short and 2 <= shape[0] <= 4:
            return f"vec{shape[0]}{short}"
        if fl and shape in ((6,), (6, 6)):
            return f"spatial_{kind}{short}"
        if fl and (kind in ("quaternion", "transformation") or
                   shape[0] == shape[-1] and 2 <= shape[0] <= 4):
            return type_repr(t)
        s = type_str(scalar)
        if kind == "vector":
            return f"Vector[{s}, Literal[{shape[0]}]]"
        if kind == "matrix":
            return f"Matrix[{s}, Literal[{shape[0]}], Literal[{shape[1]}]]"
        return f"{kind.capitalize()}[{s}]"
    return getattr(t, "__name__", repr(t))


# ---------------------------------------------------------------------------------------------
# generic scalar annotations (Warp's wp.Int, wp.Float, wp.Scalar: constrained TypeVars)

Int = typing.TypeVar("Int", builtins.int, T.int8, T.uint8, T.int16, T.uint16, T.int32, T.uint32,
                     T.int64, T.uint64)
Float = typing.TypeVar("Float", builtins.float, T.float16, T.bfloat16, T.float32, T.float64)
Scalar = typing.TypeVar("Scalar", builtins.int, builtins.float, T.int8, T.uint8, T.int16,
                        T.uint16, T.int32, T.uint32, T.int64, T.uint64, T.float16, T.bfloat16,
                        T.float32, T.float64)


# ---------------------------------------------------------------------------------------------
# generic composite types: wp.types.vector(length=Any, dtype=...), matrix(shape=(Any, Any), ...)

from .typecore import generic_composite  # noqa: E402,F401  (kept importable here)
