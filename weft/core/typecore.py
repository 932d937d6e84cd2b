"""Value types of the kernel language: scalars, vectors, matrices, quaternions, transforms.

Types are Python classes, as in Warp, so that ``dtype=wp.vec3`` and annotations such as
``x: wp.float32`` work. At Python scope calling a type builds a value: a scalar type returns a
numpy scalar, a vector or matrix type returns a small numpy array subclass::

    >>> import weft as wp
    >>> wp.vec3(1.0, 2.0, 3.0) * 2.0
    vec3f([2., 4., 6.], dtype=float32)

Inside generated code vectors and matrices are flat tuples of scalars (row-major for matrices);
that representation lives in the transpiler, not here.
"""
from __future__ import annotations

import builtins
import ctypes  # noqa: F401  (weft.types.ctypes: wp.types re-exports this module's names)
import typing
from dataclasses import dataclass

import numpy as np

from . import values as _values
from .scalars import (_BY_NUMPY, Scalar, _scalar, _ScalarMeta, bfloat16, bool,  # noqa: A004,F401
                      float16, float32, float64, float_types, int8, int16, int32, int64, int_types,
                      is_float, is_int, is_scalar, scalar_types, uint8, uint16, uint32, uint64)
from .values import CompositeValue

# ---------------------------------------------------------------------------------------------
# vectors, matrices, quaternions, transforms


class _CompositeMeta(type):
    """Warp's type equality for vectors and matrices: structural. A program's own subclass
    (``class vec6f(wp.types.vector(length=6, dtype=float))``, as MuJoCo Warp declares its
    types) equals, and hashes as, weft's type of that kind, shape and scalar, so a value of
    either type passes where the other is expected (``wp.dot(v, m * v)``, where ``m * v`` is
    weft's own ``vec6f``)."""

    def __eq__(cls, other):
        if cls is other:
            return True
        if not isinstance(other, _CompositeMeta):
            return False
        return _canonical(cls) is _canonical(other)

    def __ne__(cls, other):
        return not _CompositeMeta.__eq__(cls, other)

    def __hash__(cls):
        return type.__hash__(_canonical(cls))


def _canonical(cls):
    """The type weft made (``_composite``) that ``cls`` is or derives from."""
    for k in cls.__mro__:
        if k.__dict__.get("_wp_canonical_"):
            return k
    return cls


class Composite(CompositeValue, np.ndarray, metaclass=_CompositeMeta):
    """Base of fixed-size value types. Instances are numpy arrays of the type's shape, with
    Warp's Python-scope behaviour (``==``, ``repr``, ``v.x``, ``m[i]``: :mod:`weft.core.values`)."""

    _shape_ = ()
    _length_ = 0
    _wp_scalar_type_ = None
    _wp_kind_ = None  # "vector", "matrix", "quaternion", "transformation"

    def __new__(cls, *args, dtype=None, **parts):
        dt = cls._wp_scalar_type_._np_
        if cls._wp_kind_ == "transformation":
            args = _transform_args(args, parts)
        elif parts:
            raise TypeError(f"got an unexpected keyword argument '{next(iter(parts))}'")
        kind = "matrix" if cls._wp_kind_ == "matrix" else "vector"
        if len(args) == 0:
            values = np.zeros(cls._length_, dtype=dt)
            if cls._wp_kind_ == "transformation":
                values[6] = 1  # Warp's Python-scope transform() is the identity (in kernels: 0)
        elif len(args) == 1 and np.ndim(args[0]) > 0:
            values = np.array(_components(args[0], cls), dtype=dt).reshape(-1)  # never a view
        elif len(args) == 1:
            values = np.full(cls._length_, _components(args[0], cls), dtype=dt)
        else:
            if kind == "matrix" and len(args) == cls._shape_[0] and np.ndim(args[0]) > 0:
                for row in args:  # rows
                    if np.size(row) != cls._shape_[1]:
                        raise TypeError(f"Invalid argument in matrix constructor, expected row "
                                        f"of length {cls._shape_[1]}, got {_as_shown(row)}")
            values = np.concatenate([_components(a, cls).reshape(-1) for a in args])
        if values.size != cls._length_:
            raise ValueError(f"Invalid number of arguments in {kind} constructor, expected "
                             f"{cls._length_} elements, got {values.size}")
        return values.reshape(cls._shape_).view(cls)

    def __array_finalize__(self, obj):
        pass

    def __reduce__(self):
        return (_rebuild, (type(self), np.asarray(self).tolist()))


def _rebuild(cls, values):
    return cls(values)


def _components(a, cls):
    """``a`` as the composite's scalar type; integers out of its range wrap as C casts do
    (Warp stores components in ctypes: ``vec3ub(1, -2, 3)`` holds 254)."""
    st = cls._wp_scalar_type_
    try:
        return np.asarray(a, dtype=st._np_)
    except OverflowError:
        wrap = np.frompyfunc(lambda x: st(x), 1, 1)
        return wrap(np.asarray(a, dtype=object)).astype(st._np_)


def _as_shown(row):
    """A row as Warp's constructor error shows it: tuples as they are, values as lists."""
    return row if isinstance(row, tuple) else np.asarray(row).tolist()


def _transform_args(args, parts):
    """The arguments of ``transform(...)`` in the constructor's general forms, with Warp's
    rules: ``(p, q)`` positionally or as keywords (each a sequence; the missing one is the
    identity's), one sequence of 3 (``p``) or 7 (all components), one scalar filling every
    component, or the 7 components."""
    for k in parts:
        if k not in ("p", "q"):
            raise TypeError(f"got an unexpected keyword argument '{k}'")
    if len(args) > 2:
        if parts:
            raise TypeError(f"multiple values for argument '{next(iter(parts))}'")
        return args
    if len(args) == 1 and not parts:
        a = args[0]
        if np.ndim(a) == 0:
            if not isinstance(a, (builtins.int, builtins.float, np.generic)):
                raise TypeError("Invalid argument in transformation constructor: expected a "
                                f"scalar value, got {type(a).__name__}")
            return args
        if np.size(a) != 3:
            return args
    if not args and not parts:
        return args
    bound = dict(zip(["p", "q"], args))
    for k, v in parts.items():
        if k in bound:
            raise TypeError(f"multiple values for argument '{k}'")
        bound[k] = v
    for k, v in bound.items():
        if np.ndim(v) == 0:
            raise TypeError(f"Invalid argument '{k}' in transformation constructor: expected a "
                            f"sequence, got {type(v).__name__}")
    return (bound.get("p", (0.0, 0.0, 0.0)), bound.get("q", (0.0, 0.0, 0.0, 1.0)))


_COMPOSITES = {}
_SUFFIX = {float16: "h", float32: "f", float64: "d", int8: "b", uint8: "ub", int16: "s",
           uint16: "us", int32: "i", uint32: "ui", int64: "l", uint64: "ul", bool: "bool"}


_GENERIC_NAME = {"vector": "vec_t", "matrix": "mat_t", "quaternion": "quat_t",
                 "transformation": "transform_t"}  # Warp's generic class names


def _composite(kind, shape, dtype, base_name):
    if dtype is bfloat16:
        return _bfloat16_composite(kind, shape, base_name)
    dtype = as_scalar_type(dtype)
    key = (kind, shape, dtype)
    cls = _COMPOSITES.get(key)
    if cls is None:
        length = 1
        for s in shape:
            length *= s
        name = f"{base_name}{_SUFFIX[dtype]}"
        cls = type(name, (Composite,), {"_shape_": shape, "_length_": length,
                                         "_wp_scalar_type_": dtype, "_wp_kind_": kind,
                                         "_type_": dtype._type_,  # Warp's: the ctypes scalar
                                         "_wp_generic_type_str_": _GENERIC_NAME[kind],
                                         "_wp_canonical_": True, "__module__": "weft.types"})
        if kind == "matrix" and max(shape) >= 10:  # mat123f: (12, 3) or (1, 23)? for pickle
            cls.__qualname__ = f"mat{shape[0]}x{shape[1]}{_SUFFIX[dtype]}"
        _COMPOSITES[key] = cls
    return cls


def _bfloat16_composite(kind, shape, base_name):
    """``wp.types.vector(3, wp.bfloat16)`` and the like: a name only, as :class:`bfloat16`
    (a program may declare one; its values and arrays are refused)."""
    key = (kind, shape, bfloat16)
    cls = _COMPOSITES.get(key)
    if cls is None:
        cls = _COMPOSITES[key] = type(f"{base_name}bf16", (bfloat16,), {
            "_shape_": shape, "_length_": int(np.prod(shape)), "_wp_scalar_type_": bfloat16,
            "_wp_kind_": kind, "__module__": "weft.types"})
    return cls


def query_type(name, words=16, attrs=None):
    """A distinct type for the iteration state of a geometry query (``wp.hash_grid_query_t``,
    ``wp.mesh_query_aabb_t``, ...): laid out as a vector of ``words`` int64 (kernels copy and
    carry it like one), but a type of its own, so that ``for i in query`` finds the query's
    own step (``weft.stdlib.registry.ITERATORS``). ``attrs``: more class attributes (used
    when the type is first made)."""
    key = ("query", name)
    cls = _COMPOSITES.get(key)
    if cls is None:
        cls = _COMPOSITES[key] = type(name, (Composite,), {
            "_shape_": (words,), "_length_": words, "_wp_scalar_type_": int64,
            "_wp_kind_": "vector", "_wp_generic_type_str_": "vec_t", "__module__": "weft.types",
            "_wp_canonical_": True, **(attrs or {})})
    return cls


#: the hash-grid query type of each point precision (Warp's hash_grid_query_h/_f/_d)
_HASH_GRID_QUERY_NAMES = {"float16": "hash_grid_query_h", "float32": "hash_grid_query_t",
                          "float64": "hash_grid_query_d"}


def hash_grid_query_type(dtype):
    """The type of a ``wp.hash_grid_query`` over points of scalar ``dtype`` (float16, float32
    or float64), as Warp's ``wp.types.hash_grid_query_type``; also ``wp.HashGridQuery[dtype]``
    in annotations::

        >>> hash_grid_query_type(float64) is HashGridQuery[float64]
        True
    """
    try:
        t = as_scalar_type(dtype)
    except TypeError:
        t = None
    name = _HASH_GRID_QUERY_NAMES.get(getattr(t, "__name__", None))
    if name is None:
        raise TypeError(f"Unsupported dtype {dtype} for HashGridQuery. Supported types: "
                        "float16, float32, float64")
    return query_type(name, attrs={
        "_wp_query_dtype_": t, "_wp_public_name_": "HashGridQuery",
        "__class_getitem__": classmethod(lambda cls, d: hash_grid_query_type(d))})


def type_is_hash_grid_query(t):
    """Whether ``t`` is a hash-grid query type (of any precision)."""
    return isinstance(t, type) and getattr(t, "_wp_public_name_", None) == "HashGridQuery"


def _generic_dtype(dtype):
    """``typing.Any`` or a TypeVar such as ``wp.Float``: a generic annotation's dtype."""
    return dtype is typing.Any or isinstance(dtype, typing.TypeVar)


def vector(length, dtype=float32):
    """The vector type of ``length`` components of scalar ``dtype`` (``wp.types.vector``).

    With ``typing.Any`` as length or dtype it is a generic annotation (see
    :func:`weft.typeinfo.generic_composite`)."""
    if length is typing.Any or _generic_dtype(dtype):
        return generic_composite("vector", (length,), dtype if _generic_dtype(dtype) else
                                 as_scalar_type(dtype))
    return _composite("vector", (int(length),), dtype, f"vec{int(length)}")


def matrix(shape, dtype=float32):
    """The row-major matrix type of ``shape=(rows, cols)`` (``wp.types.matrix``); with
    ``typing.Any`` in the shape or as dtype a generic annotation, as :func:`vector`."""
    if typing.Any in tuple(shape) or _generic_dtype(dtype):
        return generic_composite("matrix", tuple(shape), dtype if _generic_dtype(dtype) else
                                 as_scalar_type(dtype))
    rows, cols = (int(s) for s in shape)
    return _composite("matrix", (rows, cols), dtype, f"mat{rows}{cols}")


def quaternion(dtype=float32):
    """The quaternion type ``(x, y, z, w)`` of scalar ``dtype``."""
    return _composite("quaternion", (4,), dtype, "quat")


def transformation(dtype=float32):
    """The rigid transform type ``(p.x, p.y, p.z, q.x, q.y, q.z, q.w)``."""
    return _composite("transformation", (7,), dtype, "transform")


def is_composite(t):
    return isinstance(t, type) and issubclass(t, Composite) and t is not Composite


def is_vector(t):
    return is_composite(t) and t._wp_kind_ == "vector"


def is_matrix(t):
    return is_composite(t) and t._wp_kind_ == "matrix"


# ---------------------------------------------------------------------------------------------
# arrays (as types) and tuples


@dataclass(frozen=True)
class ArrayType:
    """The type of an array argument: element ``dtype`` and number of dimensions.

    ``local`` arrays are per-thread buffers made by ``wp.alloc_local(dtype, size)``; ``size``
    is their fixed length."""

    dtype: type
    ndim: int = 1
    local: bool = False
    size: int = 0

    def __str__(self):
        if self.local:
            return f"alloc_local({type_name(self.dtype)}, {self.size})"
        return f"array(dtype={type_name(self.dtype)}, ndim={self.ndim})"


@dataclass(frozen=True)
class TupleType:
    """The type of a tuple of values, such as a func returning several values."""

    types: tuple

    def __str__(self):
        return "tuple(" + ", ".join(type_name(t) for t in self.types) + ")"


@dataclass(frozen=True)
class SliceType:
    """The type of ``start:stop:step`` in an array subscript in a kernel (``a[1:3, j]`` is a
    view of ``a``, as a NumPy slice)."""

    def __str__(self):
        return "slice"


@dataclass(frozen=True)
class TileType:
    """The type of a tile: a block of ``shape`` values of ``dtype`` (a scalar, vector or matrix
    type) that a tiled kernel works on as one value (``wp.tile_load``, ``wp.tile_matmul``, ...).

    In generated CPU code a tile is a C-contiguous numpy array of shape
    ``shape + element_shape(dtype)``; tile operations never modify their operands (an
    assignment into a tile makes the name refer to a changed copy), so a tile can be recorded
    on a loop stack or replayed by the adjoint like any other value."""

    dtype: type
    shape: tuple

    def __str__(self):
        return f"tile(dtype={type_name(self.dtype)}, shape={self.shape})"

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class TileStackType:
    """The type of a tile stack (``wp.tile_stack(capacity, dtype)``): a block's shared stack
    of up to ``capacity`` values of ``dtype``. In generated CPU code it is the pair
    ``(buffer, count)`` of arrays, changed in place by pushes and pops (a func given a stack
    changes its caller's)."""

    dtype: type
    capacity: int

    def __str__(self):
        return f"tile_stack(capacity={self.capacity}, dtype={type_name(self.dtype)})"


def is_tile_type(t):
    return isinstance(t, TileType)


class _Tid:
    """Marker type of ``wp.tid()`` before it is unpacked."""


def as_scalar_type(t):
    """Map Python's ``float``/``int``/``bool`` and numpy dtypes to weft scalar types."""
    if is_scalar(t):
        return t
    if t is builtins.float:
        return float32
    if t is builtins.int:
        return int32
    if t is builtins.bool:
        return bool
    try:
        return _BY_NUMPY[np.dtype(t)]
    except (TypeError, KeyError, ValueError):  # ValueError: numpy given a module, ...
        raise TypeError(f"{t!r} is not a scalar type") from None


def as_value_type(t):
    """Normalise a dtype given by a user to a weft value type (scalar or composite or struct)."""
    if is_composite(t) or getattr(t, "_wp_struct_", None) is not None:
        return t
    return as_scalar_type(t)


def type_name(t):
    """A short readable name: ``float32``, ``vec3f``, ``array(dtype=vec3f, ndim=1)``."""
    if isinstance(t, type):
        return t.__name__
    return str(t)


def scalar_of(t):
    """The scalar type of a scalar or composite type (of a tile: of its elements)."""
    if is_composite(t):
        return t._wp_scalar_type_
    if isinstance(t, TileType):
        return scalar_of(t.dtype)
    return t


def is_struct(t):
    """True for a ``@wp.struct`` class."""
    return isinstance(t, type) and getattr(t, "_wp_struct_", None) is not None


def struct_fields(t):
    """``{name: type}`` of a ``@wp.struct`` class, in declaration order."""
    return t._wp_struct_.fields


def numpy_dtype(t):
    if is_struct(t):
        return t._wp_struct_.numpy_dtype()
    return np.dtype(scalar_of(t)._np_)


def element_shape(t):
    """The trailing numpy shape one element of dtype ``t`` occupies in an array (a tile, held
    whole on a loop stack: its shape and its element's)."""
    if isinstance(t, TileType):
        return tuple(t.shape) + element_shape(t.dtype)
    return t._shape_ if is_composite(t) else ()


_DIFFERENTIABLE = {}  # type class -> is_differentiable (asked hundreds of times per statement)


def is_differentiable(t):
    """True when values of type ``t`` carry gradients (they contain floats)."""
    if isinstance(t, type):
        known = _DIFFERENTIABLE.get(t)
        if known is None:
            known = _DIFFERENTIABLE[t] = _is_differentiable(t)
        return known
    return _is_differentiable(t)


def _is_differentiable(t):
    if isinstance(t, TupleType):
        return any(is_differentiable(x) for x in t.types)
    if isinstance(t, ArrayType):
        return not t.local and is_differentiable(t.dtype)
    if isinstance(t, TileType):
        return is_differentiable(t.dtype)
    if is_struct(t):
        return any(is_differentiable(f) for f in t._wp_struct_.fields.values())
    return is_float(scalar_of(t))


# ---------------------------------------------------------------------------------------------
# names (Warp's repr of types; also the names values print with)

#: precision suffix of Warp's named types (``vec3f``, ``mat22d``, ``quath``); bool has none
_SHORT = {t: s for t, s in _SUFFIX.items() if t is not bool}


def _is_array_object(x):
    """An instance of weft's array class (which marks itself: this module sits below the
    runtime and does not import it)."""
    return getattr(type(x), "_weft_array_", False) is True


def type_repr(t):
    """Warp's readable name of a type or array: ``vec3f``, ``matrix(shape=(5, 5), dtype=float64)``,
    ``array(ndim=1, dtype=float32)`` (annotation), ``array(shape=(4,), dtype=vec3f)``."""
    if t is typing.Any:
        return "Any"
    if isinstance(t, ArrayType):
        return f"array(ndim={t.ndim}, dtype={type_repr(t.dtype)})"
    if _is_array_object(t):
        if t.is_annotation:
            return f"array(ndim={t.ndim}, dtype={type_repr(t.dtype)})"
        return f"array(shape={t.shape}, dtype={type_repr(t.dtype)})"
    if isinstance(t, TupleType):
        return f"tuple({', '.join(type_repr(x) for x in t.types)})"
    if getattr(t, "_wp_generic_", False):
        return t._wp_repr_
    if is_composite(t):
        s = scalar_of(t)
        short = _SHORT.get(s)
        kind = t._wp_kind_
        if kind == "transformation":
            return f"transform{short}" if short else f"transform(dtype={type_repr(s)})"
        if kind == "quaternion":
            return f"quat{short}" if short else f"quat(dtype={type_repr(s)})"
        if kind == "vector":
            n = t._shape_[0]
            return f"vec{n}{short}" if short and n <= 4 else \
                f"vector(length={n}, dtype={type_repr(s)})"
        r, c = t._shape_
        return f"mat{r}{c}{short}" if short and r <= 4 and c <= 4 else \
            f"matrix(shape=({r}, {c}), dtype={type_repr(s)})"
    if is_scalar(t):
        return t.__name__
    if t is builtins.bool:
        return "bool"
    if t is builtins.float:
        return "float"
    if t is builtins.int:
        return "int"
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None)
    if name is None:
        return repr(t)
    return f"{t.__module__}.{name}"


vec2h, vec3h, vec4h = (vector(n, float16) for n in (2, 3, 4))
vec2f, vec3f, vec4f = (vector(n, float32) for n in (2, 3, 4))
vec2d, vec3d, vec4d = (vector(n, float64) for n in (2, 3, 4))
vec2i, vec3i, vec4i = (vector(n, int32) for n in (2, 3, 4))
vec2, vec3, vec4 = vec2f, vec3f, vec4f
mat22h, mat33h, mat44h = (matrix((n, n), float16) for n in (2, 3, 4))
mat22f, mat33f, mat44f = (matrix((n, n), float32) for n in (2, 3, 4))
mat22d, mat33d, mat44d = (matrix((n, n), float64) for n in (2, 3, 4))
mat22, mat33, mat44 = mat22f, mat33f, mat44f
quath, quatf, quatd = (quaternion(t) for t in (float16, float32, float64))
quat = quatf
spatial_vectorh, spatial_vectorf, spatial_vectord = (vector(6, t) for t in (float16, float32,
                                                                           float64))
spatial_vector = spatial_vectorf
spatial_matrixh, spatial_matrixf, spatial_matrixd = (matrix((6, 6), t) for t in (float16, float32,
                                                                                float64))
spatial_matrix = spatial_matrixf
transformh, transformf, transformd = (transformation(t) for t in (float16, float32, float64))
transform = transformf

# every precision suffix of Warp's vector types: vec2b, vec3ub, vec4s, vec2us, vec3ui, vec4l, ...
VECTOR_ALIASES = {f"vec{n}{_SUFFIX[t]}": vector(n, t) for n in (2, 3, 4)
                  for t in (int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16,
                            float32, float64)}


vector_types = tuple(VECTOR_ALIASES[f"vec{n}{s}"] for n in (2, 3, 4)
                     for s in ("b", "ub", "s", "us", "i", "ui", "l", "ul", "h", "f", "d")) + (
    mat22h, mat22f, mat22d, mat33h, mat33f, mat33d, mat44h, mat44f, mat44d, quath, quatf, quatd,
    transformh, transformf, transformd, spatial_vectorh, spatial_vectorf, spatial_vectord,
    spatial_matrixh, spatial_matrixf, spatial_matrixd)
"""Every named composite type, in Warp's order (``wp.types.vector_types``)."""
Any = typing.Any


class _GenericMeta(type):
    def __repr__(cls):
        return cls._wp_repr_

    __str__ = __repr__


def generic_composite(kind, shape, dtype):
    """The annotation object of a composite type with ``typing.Any`` length or dtype
    (``wp.types.vector(length=Any, dtype=float32)``). It prints as written and is only an
    annotation: no values of it can be built."""
    def name(x):
        if isinstance(x, typing.TypeVar):
            return x.__name__
        return "Any" if x is typing.Any else type_name(x)
    if kind == "vector":
        text = f"vector(length={name(shape[0])}, dtype={name(dtype)})"
    else:
        text = f"matrix(shape=({name(shape[0])}, {name(shape[1])}), dtype={name(dtype)})"

    def new(cls, *args, **kwargs):
        raise TypeError(f"{text} is a generic annotation; values need a concrete type")

    return _GenericMeta(text, (), {
        "_wp_kind_": kind, "_shape_": tuple(shape), "_wp_scalar_type_": dtype,
        "_wp_generic_": True, "_wp_repr_": text, "__new__": new, "__module__": "weft.types",
        "__doc__": f"Generic annotation {text}: any {kind} matching it."})


# values of these types build values of others (a matrix's row is a vector) and print by name:
# :mod:`weft.core.values` is below this module (it is Composite's base), so it is handed them here
_values.bind(vector=vector, matrix=matrix, quaternion=quaternion, components=_components,
             by_numpy=_BY_NUMPY, type_repr=type_repr)
