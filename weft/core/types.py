"""Value types of the kernel language (``wp.types``): scalars, vectors, matrices, quaternions,
transforms, array and tuple types (:mod:`weft.core.typecore`), and Warp's Python-scope queries on them
(``type_is_vector``, ``types_equal``, ``dtype_from_numpy``, ...: :mod:`weft.typeinfo`).

Types are Python classes, as in Warp, so that ``dtype=wp.vec3`` and annotations such as
``x: wp.float32`` work. At Python scope calling a type builds a value::

    >>> import weft as wp
    >>> wp.vec3(1.0, 2.0, 3.0) * 2.0
    vec3f([2., 4., 6.], dtype=float32)
"""
from . import typecore as _typecore
from .typecore import *  # noqa: F401,F403
from .typecore import _BY_NUMPY, _SUFFIX, Any, Composite, Scalar, generic_composite  # noqa: F401
from .typeinfo import (np_dtype_to_warp_type, warp_type_to_np_dtype, dtype_from_numpy,  # noqa: F401
    dtype_to_numpy, type_to_warp, type_length, type_size, type_scalar_type, type_size_in_bytes,
    type_is_int, type_is_float, type_is_scalar, type_is_vector, type_is_matrix,
    type_is_quaternion, type_is_transformation, type_is_composite, type_is_value, type_is_struct,
    type_is_array, type_is_tile, is_array, is_quaternion, is_transformation, is_value, is_tile,
    types_equal, type_repr, strides_from_shape, non_atomic_types)


_NAMED = None


def composite_named(name):
    """The vector, matrix, quaternion or transform type named ``name`` (``vec5f``, ``mat34d``,
    ``quath``): what ``pickle`` looks up as ``weft.types.<name>`` for a type made by
    ``wp.types.vector(5, float)``, which is no module attribute. ``None`` when no such type."""
    import re
    global _NAMED
    for cls in _typecore._COMPOSITES.values():
        if cls.__qualname__ == name:
            return cls
    if _NAMED is None:
        sufs = sorted(_typecore._SUFFIX.values(), key=len, reverse=True)
        _NAMED = re.compile(r"(vec|mat|quat|transform)(\d*|\d+x\d+)(" + "|".join(sufs) + ")")
    m = _NAMED.fullmatch(name)
    if m is None:
        return None
    base, digits, suf = m.groups()
    dtype = next(t for t, s in _typecore._SUFFIX.items() if s == suf)
    if base == "vec" and digits and int(digits) > 0:
        return _typecore.vector(int(digits), dtype)
    if base == "mat" and "x" in digits:
        rows, cols = (int(d) for d in digits.split("x"))
        if rows and cols and max(rows, cols) >= 10:
            return _typecore.matrix((rows, cols), dtype)
    elif base == "mat" and len(digits) == 2 and "0" not in digits:
        return _typecore.matrix((int(digits[0]), int(digits[1])), dtype)
    if base == "quat" and not digits:
        return _typecore.quaternion(dtype)
    if base == "transform" and not digits:
        return _typecore.transformation(dtype)
    return None


def __getattr__(name):
    """Vector and matrix types made on demand (``wp.types.vector(5, float)`` is ``vec5f``) are
    found by name too, so that pickle can send them by reference."""
    cls = composite_named(name)
    if cls is None:
        raise AttributeError(f"module 'weft.types' has no attribute {name!r}")
    return cls
