"""Warp's Python-scope behaviour of vector, matrix, quaternion and transform values.

weft's values are small numpy arrays (see :class:`weft.types.Composite`); this mixin gives them
the behaviour Warp programs rely on, as Warp 1.19's value types have it::

    >>> v = wp.vec3(1.0, 2.0, 3.0)
    >>> v == wp.vec3(1.0, 2.0, 3.0), v.x, v
    (True, np.float32(1.0), vec3f([1.0, 2.0, 3.0]))
    >>> m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    >>> m[1], m.get_row(0)
    (vec2f([3.0, 4.0]), vec2f([1.0, 2.0]))
    >>> t = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())
    >>> t.p
    vec3f([1.0, 2.0, 3.0])

``==`` compares whole values (``True``/``False``, not an array; values of other shapes are not
equal), ``repr`` and ``str`` print as Warp's, vectors and quaternions have ``x``, ``y``, ``z``,
``w``, transforms ``p`` and ``q``, a matrix row ``m[i]`` is a vector (a copy, as in Warp), and
malformed keys and values raise Warp's errors.
"""
from __future__ import annotations

import numpy as np


class _Types:
    """What values need of the type system (building the value of another type: a matrix's row
    is a vector; the names types print as). Their classes come from :mod:`weft.core.typecore`,
    which imports this module for their base, so it hands these over (:func:`bind`) rather than
    being imported here."""

    vector = matrix = quaternion = components = type_repr = None
    by_numpy = {}


def bind(*, vector, matrix, quaternion, components, by_numpy, type_repr):
    """Called once by :mod:`weft.core.typecore` when its types exist."""
    _Types.vector, _Types.matrix, _Types.quaternion = vector, matrix, quaternion
    _Types.components, _Types.by_numpy, _Types.type_repr = components, by_numpy, type_repr


def _type_repr(t):
    return _Types.type_repr(t)


def _scalar_name(cls):
    return _type_repr(cls._wp_scalar_type_)


class CompositeValue:
    """Mixin of :class:`weft.types.Composite` (see the module docstring)."""

    __slots__ = ()

    # ----------------------------------------------------------------------- comparison
    def __eq__(self, other):
        try:
            o = np.asarray(other)
        except Exception:  # noqa: BLE001 - anything that is not array-like is not equal
            return False
        a = self.view(np.ndarray)
        if o.shape != a.shape:
            return False
        try:
            return bool(np.all(a == o))
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None

    # ----------------------------------------------------------------------- arithmetic
    def __mul__(self, other):
        if isinstance(other, CompositeValue):  # the kernel's product, as Warp's Python scope
            return _product(self, other)
        return np.ndarray.__mul__(self, other)

    def __rmul__(self, other):
        if isinstance(other, CompositeValue):
            return _product(other, self)
        return np.ndarray.__rmul__(self, other)

    def __imul__(self, other):
        if isinstance(other, CompositeValue):
            return _product(self, other)
        return np.ndarray.__imul__(self, other)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """Integer vectors and matrices divide and take remainders as C (and Warp) do:
        ``/`` truncates toward zero and keeps the integer type, ``%`` takes the dividend's
        sign (for floats too: C's fmod). Everything else is numpy's arithmetic."""
        if method == "__call__" and ufunc is np.remainder and len(inputs) == 2:
            comp = next(i for i in inputs if isinstance(i, CompositeValue))
            a, b = (np.asarray(i.view(np.ndarray) if isinstance(i, CompositeValue) else i)
                    for i in inputs)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.fmod(a, b).astype(comp.dtype)
            if "out" in kwargs:  # v %= w
                out = kwargs["out"][0]
                out.view(np.ndarray)[...] = r
                return out
            return r.view(type(comp))
        if method == "__call__" and ufunc in (np.true_divide, np.remainder) and \
                len(inputs) == 2 and "out" not in kwargs:
            comp = next(i for i in inputs if isinstance(i, CompositeValue))
            if comp._wp_scalar_type_._kind_ in ("int", "uint"):
                a, b = (np.asarray(i) for i in inputs)
                with np.errstate(divide="ignore", invalid="ignore"):
                    if ufunc is np.true_divide:
                        q = np.floor_divide(a, b)
                        q = q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
                    else:
                        q = np.fmod(a, b)
                return np.asarray(q).astype(comp.dtype).view(type(comp))
        comp = next(i for i in inputs if isinstance(i, CompositeValue)) if any(
            isinstance(i, CompositeValue) for i in inputs) else self
        plain = [i.view(np.ndarray) if isinstance(i, CompositeValue) else i for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, CompositeValue) else o
                                  for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if method == "__call__" and isinstance(result, np.ndarray) and \
                result.shape == comp.shape:
            return result.view(type(comp))  # as numpy would: the value type is kept
        if ufunc is np.matmul and isinstance(result, np.ndarray) and result.ndim in (1, 2):
            st = _Types.by_numpy.get(result.dtype)
            if st is not None:  # matrix @ vector is a vector, as in Warp
                t = _Types.vector(result.shape[0], st) if result.ndim == 1 else \
                    _Types.matrix(result.shape, st)
                return result.view(t)
        return result

    # ----------------------------------------------------------------------- printing
    def __repr__(self):
        values = self.view(np.ndarray).tolist()
        if self.dtype in (np.float64, np.float16):  # Warp shows these as float64(1.0)
            name = "float64" if self.dtype == np.float64 else "float16"

            def shown(x):
                return [shown(y) for y in x] if isinstance(x, list) else f"{name}({x})"
            values = str(shown(values)).replace("'", "")
        return f"{_type_repr(type(self))}({values})"

    def __str__(self):
        values = self.view(np.ndarray).tolist()
        if self.ndim == 2:
            return "[" + ",\n ".join(str(row) for row in values) + "]"
        return str(values)

    # ----------------------------------------------------------------------- components
    def __setattr__(self, name, value):
        """Swizzles (``v.xy = ...``) are not components: Warp's AttributeError, rather than a
        new attribute that would silently leave the components unchanged."""
        if len(name) > 1 and set(name) <= set("xyzw"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        super().__setattr__(name, value)

    def _component(self, i, name):
        if self._wp_kind_ not in ("vector", "quaternion") or i >= self._length_:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return i

    @property
    def x(self):
        return self.view(np.ndarray)[self._component(0, "x")]

    @x.setter
    def x(self, value):
        self[self._component(0, "x")] = value

    @property
    def y(self):
        return self.view(np.ndarray)[self._component(1, "y")]

    @y.setter
    def y(self, value):
        self[self._component(1, "y")] = value

    @property
    def z(self):
        return self.view(np.ndarray)[self._component(2, "z")]

    @z.setter
    def z(self, value):
        self[self._component(2, "z")] = value

    @property
    def w(self):
        return self.view(np.ndarray)[self._component(3, "w")]

    @w.setter
    def w(self, value):
        self[self._component(3, "w")] = value

    def _transform_part(self, name):
        if self._wp_kind_ != "transformation":
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        st = self._wp_scalar_type_
        data = self.view(np.ndarray)
        return _Types.vector(3, st)(data[:3]) if name == "p" else _Types.quaternion(st)(data[3:])

    @property
    def p(self):
        """The translation of a transform (a copy)."""
        return self._transform_part("p")

    @p.setter
    def p(self, value):
        self._transform_part("p")
        self[0:3] = np.asarray(value, dtype=self.dtype)

    @property
    def q(self):
        """The rotation of a transform (a copy)."""
        return self._transform_part("q")

    @q.setter
    def q(self, value):
        self._transform_part("q")
        self[3:7] = np.asarray(value, dtype=self.dtype)

    # ----------------------------------------------------------------------- indexing
    def _check_key(self, key):
        matrix = self._wp_kind_ == "matrix"
        if key is None or isinstance(key, (str, float)):
            raise KeyError(f"Invalid key {key}, expected int or " +
                           ("pair of ints" if matrix else "slice"))
        if matrix and isinstance(key, tuple) and len(key) > 2:
            raise KeyError(f"Invalid key, expected one or two indices, got {len(key)}")

    def __getitem__(self, key):
        self._check_key(key)
        out = np.ndarray.__getitem__(self.view(np.ndarray), key)
        if isinstance(out, np.ndarray) and out.ndim == 1 and out.size:
            return _Types.vector(out.size, self._wp_scalar_type_)(out)  # a row or a slice: a copy
        return out

    def __setitem__(self, key, value):
        self._check_key(key)
        name = _scalar_name(type(self))
        if isinstance(value, str):
            raise TypeError(f"Expected to assign a `{name}` value but got `str` instead")
        row = isinstance(key, (int, np.integer)) and self._wp_kind_ == "matrix"
        if (isinstance(key, slice) or row) and isinstance(value, (list, tuple)) and any(
                isinstance(v, CompositeValue) for v in value):
            bad = next(v for v in value if isinstance(v, CompositeValue))
            raise TypeError(f"Expected to assign a slice from a sequence of `{name}` values but "
                            f"got `{_type_repr(type(bad))}` instead")
        if isinstance(key, slice) and isinstance(value, (list, tuple)) and \
                len(value) != len(range(*key.indices(self._shape_[0]))):
            raise ValueError("Can only assign sequence of same size")
        if self._wp_scalar_type_._kind_ in ("int", "uint") and not isinstance(value, str):
            value = _Types.components(value, type(self))  # wraps as C storage: -1 in uint32
        np.ndarray.__setitem__(self.view(np.ndarray), key, value)

    # ----------------------------------------------------------------------- matrices
    def get_row(self, r):
        """Row ``r`` of a matrix, as a vector (a copy)."""
        if self._wp_kind_ != "matrix" or not 0 <= r < self._shape_[0]:
            raise IndexError("Invalid row index")
        return self[r]

    def set_row(self, r, value):
        """Set row ``r`` of a matrix."""
        if self._wp_kind_ != "matrix" or not 0 <= r < self._shape_[0]:
            raise IndexError("Invalid row index")
        self[r] = value

    def get_col(self, c):
        """Column ``c`` of a matrix, as a vector (a copy)."""
        if self._wp_kind_ != "matrix" or not 0 <= c < self._shape_[1]:
            raise IndexError("Invalid column index")
        return _Types.vector(self._shape_[0], self._wp_scalar_type_)(self.view(np.ndarray)[:, c])

    def set_col(self, c, value):
        """Set column ``c`` of a matrix."""
        if self._wp_kind_ != "matrix" or not 0 <= c < self._shape_[1]:
            raise IndexError("Invalid column index")
        self.view(np.ndarray)[:, c] = np.asarray(value)


HOST_PRODUCT = None  # set by weft.runtime.host: the kernel language's ``a * b`` at Python scope


def _product(a, b):
    """``a * b`` of two vectors/matrices/quaternions/transforms at Python scope: Warp's
    ``wp.mul`` (matrix products, quaternion product, transform composition; two vectors are an
    error), computed by the kernel language's own ``*`` (:mod:`weft.runtime.host`)."""
    if HOST_PRODUCT is None:
        raise TypeError("a product of two weft values needs weft's runtime (import weft)")
    return HOST_PRODUCT(a, b)
