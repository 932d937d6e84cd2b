"""``@wp.struct``: user-defined record types with scalar, vector, matrix, array and struct members.

A struct is used three ways, as in Warp:

* as a kernel or func argument (``def k(s: State)``), read as ``s.x`` and ``s.arr[i]``;
* built inside kernels (``s = State()``, ``s.x = 1.0``), passed to and returned from funcs;
* as an array dtype (``wp.zeros(10, dtype=State)``), stored as a numpy structured array whose
  ``numpy()`` view has one named field per member.

Example::

    @wp.struct
    class Particle:
        x: wp.vec3
        m: float

    @wp.kernel
    def gravity(p: wp.array(dtype=Particle), f: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        f[i] = p[i].m * wp.vec3(0.0, -9.8, 0.0)

How it compiles: weft never makes a struct value at run time inside kernels. The lowering pass
splits every struct into its members (``s.x`` is the variable ``s__x``), a struct array into
one strided array per member (views into the structured array), and a struct argument into one
argument per member. So struct members are differentiated exactly like ordinary variables, and
the gradient of a struct array lives in the same fields of its ``.grad``.
"""
from __future__ import annotations

import sys
import typing

import numpy as np

from ..core import types as T


class StructInfo:
    """What weft knows about a struct class: its members and their types."""

    def __init__(self, cls, fields):
        self.cls = cls
        self.fields = fields  # name -> weft type (value type, struct class or ArrayType)
        # array members that an array of this struct shares (one array for every element,
        # given by shared_value(array, name)): textures' texels (weft/runtime/texture.py)
        self.shared = frozenset()
        self.shared_value = None

    def signature(self):
        parts = []
        for name, t in self.fields.items():
            if T.is_struct(t):
                parts.append(f"{name}:{t.__name__}{{{t._wp_struct_.signature()}}}")
            elif isinstance(t, T.ArrayType) and T.is_struct(t.dtype):
                parts.append(f"{name}:array{t.ndim}:{t.dtype.__name__}"
                             f"{{{t.dtype._wp_struct_.signature()}}}")
            else:
                parts.append(f"{name}:{T.type_name(t)}")
        return ",".join(parts)

    def numpy_dtype(self):
        """The structured dtype of one element in an array of this struct (C layout)."""
        spec = []
        for name, t in self.fields.items():
            if name in self.shared:
                continue
            if isinstance(t, T.ArrayType):
                raise TypeError(f"struct {self.cls.__name__} has an array member '{name}' and "
                                "cannot be an array dtype")
            if T.is_struct(t):
                spec.append((name, t._wp_struct_.numpy_dtype()))
            elif T.is_composite(t):
                spec.append((name, T.numpy_dtype(t), t._shape_))
            else:
                spec.append((name, T.numpy_dtype(t)))
        return np.dtype(spec, align=True)


def _member_type(cls, name, value):
    from .array import array
    if isinstance(value, T.ArrayType):
        return value
    if isinstance(value, array):  # wp.array(dtype=...) as annotation
        return value._weft_array_type_
    if T.is_struct(value):
        return value
    try:
        return T.as_value_type(value)
    except TypeError:
        raise TypeError(f"struct {cls.__name__}: member '{name}' has unsupported type "
                        f"{value!r}") from None


def _default(t):
    if isinstance(t, T.ArrayType):
        return None
    if hasattr(t, "_wp_default_"):  # a texture member: Warp's null texture
        return t._wp_default_()
    if T.is_struct(t):
        return t()
    if T.is_composite(t):
        return t()
    return t._np_(0)


def _convert(cls, name, t, value):
    from .array import array
    if isinstance(t, T.ArrayType):
        if value is not None and not isinstance(value, array):
            raise TypeError(f"{cls.__name__}.{name} must be a wp.array of "
                            f"{T.type_name(t.dtype)}, got {type(value).__name__}")
        if value is not None and (value.dtype is not t.dtype or value.ndim != t.ndim):
            raise TypeError(f"{cls.__name__}.{name} must be an array of {T.type_name(t.dtype)} "
                            f"with {t.ndim} dimension(s), got one of {T.type_name(value.dtype)} "
                            f"with {value.ndim}")
        return value
    if T.is_struct(t):
        if not isinstance(value, t):
            raise TypeError(f"{cls.__name__}.{name} must be a {t.__name__}, got "
                            f"{type(value).__name__}")
        return value
    if T.is_composite(t):
        if np.ndim(value) == 0:  # Warp's message (no broadcast of one value into a field)
            raise TypeError(f"Struct field '{name}' expects {T.type_name(t)} but got a single "
                            f"value ({value!r}); {cls.__name__}.{name} must be a "
                            f"{T.type_name(t)}")
        vals = np.asarray(value, dtype=T.numpy_dtype(t))
        if vals.size != t._length_:
            raise TypeError(f"{cls.__name__}.{name} must be a {T.type_name(t)}, got {value!r}")
        return t(*vals.reshape(-1).tolist())
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) > 0:
        raise TypeError(f"{cls.__name__}.{name} must be a {T.type_name(t)} scalar, got {value!r}")
    return t._np_(value)


def struct(cls):
    """Decorator turning an annotated class into a weft struct type (``@wp.struct``)."""
    if any(T.is_struct(b) for b in cls.__bases__):
        raise RuntimeError("Warp structs must be defined as base classes")
    module = sys.modules.get(cls.__module__)
    hints = typing.get_type_hints(cls, vars(module) if module else None) \
        if any(isinstance(a, str) for a in cls.__dict__.get("__annotations__", {}).values()) \
        else dict(cls.__dict__.get("__annotations__", {}))
    # a struct may have no members (as in Warp): it is then passed as nothing at all
    fields = {name: _member_type(cls, name, value) for name, value in hints.items()}
    names = list(fields)

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes at most {len(names)} positional arguments")
        for name, t in fields.items():
            object.__setattr__(self, name, _default(t))
        for name, value in zip(names, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in fields:
            raise AttributeError(f"struct {cls.__name__} has no member '{name}'")
        object.__setattr__(self, name, _convert(cls, name, fields[name], value))

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{cls.__name__}({inner})"

    def __eq__(self, other):
        return type(other) is type(self) and all(
            np.array_equal(getattr(self, n), getattr(other, n)) if not isinstance(
                fields[n], T.ArrayType) else getattr(self, n) is getattr(other, n)
            for n in names)

    def numpy_value(self):
        """This struct as a numpy record (a structured scalar)."""
        return np.array(self._record(), dtype=type(self).numpy_dtype())[()]

    def _record(self):
        out = []
        for n in names:
            v = getattr(self, n)
            out.append(v._record() if T.is_struct(fields[n]) else
                       (np.asarray(v) if T.is_composite(fields[n]) else v))
        return tuple(out)

    @classmethod
    def numpy_dtype(klass):
        """The numpy structured dtype of one element of an array of this struct."""
        return klass._wp_struct_.numpy_dtype()

    @classmethod
    def from_record(klass, rec):
        """A struct instance from a numpy record of :meth:`numpy_dtype`."""
        obj = klass()
        for n in names:
            t = fields[n]
            setattr(obj, n, t.from_record(rec[n]) if T.is_struct(t) else rec[n])
        return obj

    ns = {"__init__": __init__, "__setattr__": __setattr__, "__repr__": __repr__,
          "__eq__": __eq__, "__hash__": None, "numpy_value": numpy_value, "_record": _record,
          "numpy_dtype": numpy_dtype, "from_record": from_record,
          "__doc__": cls.__doc__, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
          "__annotations__": dict(cls.__dict__.get("__annotations__", {}))}
    new = type(cls.__name__, (), ns)
    new._wp_struct_ = StructInfo(new, fields)
    new.vars = fields  # Warp exposes the members as ``Struct.vars``
    new.cls = new  # Warp's struct objects name their class ``cls``; here they are the same
    return new
