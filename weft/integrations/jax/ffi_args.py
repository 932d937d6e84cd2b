"""The parameters of an FFI call: :class:`FfiArg`, static values and the JAX output types at
trace time, and XLA's buffers as weft arrays in the handler (:mod:`.ffi`)."""
from __future__ import annotations

import math

import numpy as np

import weft as wp  # module attributes are looked up at call time (tests patch them)

from ...core import types as T
from ...runtime.array import array as _ARRAY
from . import xla_ffi as X
from .ffi_targets import _get_jax


# ---------------------------------------------------------------------------------------------
# arguments

def _is_generic(t):
    from ...transpiler.abi import is_generic
    return is_generic(t)


def _scalar_of(dtype):
    return T.type_scalar_type(dtype) if T.element_shape(dtype) else dtype


def _np_scalar(dtype):
    return np.dtype(T.numpy_dtype(_scalar_of(dtype)))


class FfiArg:
    """One parameter: an array (its weft dtype, dimensions, element shape) or a static
    scalar/vector value."""

    def __init__(self, name, t, in_out=False):
        self.name, self.type, self.in_out = name, t, in_out
        self.is_array = isinstance(t, T.ArrayType)
        self.generic = _is_generic(t)
        if self.is_array:
            self.ndim = t.ndim
            if not self.generic:
                d = t.dtype
                if T.is_struct(d) or not T.type_is_value(d):
                    raise TypeError(f"Invalid data type for array argument '{name}', expected "
                                    "scalar, vector, or matrix")
                self._set_dtype(d)
        else:
            self.ndim = 0
            if t is not None and not self.generic and \
                    (T.is_struct(t) or not T.type_is_value(t)):
                raise TypeError(f"Invalid type for argument '{name}', expected array or scalar, "
                                f"got {t}")
            if t is not None and not self.generic:
                self._set_dtype(t)

    def _set_dtype(self, d):
        self.dtype = d
        self.eshape = tuple(T.element_shape(d))
        self.np_dtype = _np_scalar(d)
        self.jax_ndim = self.ndim + len(self.eshape)

    def concrete(self, dtype):
        """A copy of this parameter with the generic dtype resolved."""
        out = FfiArg.__new__(FfiArg)
        out.__dict__.update(self.__dict__)
        out.generic = False
        out._set_dtype(dtype)
        return out


def _dtype_of_value(arg, value):
    """The weft dtype a JAX array gives a generic array parameter (trailing dimensions past
    the parameter's make a vector or matrix)."""
    scalar = wp.dtype_from_jax(value.dtype)
    extra = value.ndim - arg.ndim
    if extra == 0:
        return scalar
    if extra == 1:
        return T.vector(value.shape[-1], scalar)
    if extra == 2:
        return T.matrix(tuple(value.shape[-2:]), scalar)
    raise TypeError(f"Invalid dimensionality for array argument '{arg.name}', expected "
                    f"{arg.ndim} dimensions, got {value.ndim}")


def _same_type(a, b):
    try:
        return a is b or T.types_equal(a, b)
    except Exception:  # noqa: BLE001
        return False


def _check_shapes(kernel, types, dims, args, out_args, out_shapes):
    """Trace-time check of the arrays' shapes against the launch (weft's own launch check:
    arrays the thread index walks must be as large as the launch), on placeholders that own no
    memory. ``args``: the kernel's inputs (JAX values and static values)."""
    from ...runtime.checks import check_dims
    try:
        ck = kernel.compiled("cpu", types=types if kernel.is_generic else None)
    except Exception:  # noqa: BLE001 - the launch reports the kernel's own errors
        return
    if ck.has_structs or not ck.thread_indexed:
        return

    def fake(a, shape):
        data = np.lib.stride_tricks.as_strided(np.zeros(1, a.np_dtype), shape=tuple(shape),
                                               strides=(0,) * len(shape))
        return _ARRAY._wrap(data, a.dtype, _cpu())

    values = [fake(a, v.shape) if a.is_array else v for a, v in args]
    values += [fake(a, shape) for a, shape in zip(out_args, out_shapes)]
    if len(values) == len(ck.params):
        check_dims(ck, tuple(dims), values)


def _as_dims(dims):
    if dims is None:
        return None
    if isinstance(dims, (int, np.integer)):
        return (int(dims),)
    return tuple(int(d) for d in dims)


def _hashable(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    return v


def _static_value(arg, value):
    """A static argument as a hashable Python value of the parameter's type."""
    jax = _get_jax()
    if isinstance(value, jax.core.Tracer):
        raise ValueError(f"Argument '{arg.name}' must be a static value")
    t = arg.type
    if t is None or arg.generic:
        from ...runtime.generics import argument_type
        t = argument_type(value)
        if t is None:
            raise TypeError(f"Invalid value for argument '{arg.name}': {value!r}")
    try:
        if T.element_shape(t):
            flat = np.asarray(value, dtype=_np_scalar(t)).reshape(-1)
            if flat.size != int(np.prod(T.element_shape(t))):
                raise ValueError(f"expected {int(np.prod(T.element_shape(t)))} components")
            return t, tuple(flat.tolist())
        return t, np.asarray(value, dtype=_np_scalar(t)).item()
    except (TypeError, ValueError) as e:
        raise TypeError(f"Invalid value for argument '{arg.name}' of type {T.type_name(t)}: "
                        f"{value!r} ({e})") from None


def _make_static(t, v):
    if isinstance(v, tuple):
        return t(*v)
    return v


def _check_array(arg, value):
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        raise TypeError(f"Argument '{arg.name}' must be an array, got {type(value).__name__}")
    if np.dtype(value.dtype) != arg.np_dtype:
        raise TypeError(f"Invalid data type for array argument '{arg.name}', expected "
                        f"{arg.np_dtype}, got {value.dtype}")
    if value.ndim != arg.jax_ndim:
        raise TypeError(f"Invalid dimensionality for array argument '{arg.name}', expected "
                        f"{arg.jax_ndim} dimensions, got {value.ndim}")
    k = len(arg.eshape)
    if k and tuple(value.shape[arg.ndim:]) != arg.eshape:
        raise TypeError(f"Invalid inner dimensions for array argument '{arg.name}', expected "
                        f"{arg.eshape}, got {tuple(value.shape[arg.ndim:])}")


def get_warp_shape(arg, dims):
    return tuple(dims[:arg.ndim])


def get_jax_output_type_metadata(input_values):
    """Type metadata for the outputs: the union of the array inputs' varying manual axes
    (``shard_map``), which JAX cannot infer through a foreign call."""
    jax = _get_jax()
    if not hasattr(jax, "typeof") or not hasattr(jax.ShapeDtypeStruct, "update"):
        return {}
    axes, manual, mesh = set(), False, None
    for v in input_values:
        try:
            t = jax.typeof(v)
        except Exception:  # noqa: BLE001
            continue
        mat = getattr(t, "manual_axis_type", None)
        if mat is not None:
            manual = True
            vma = mat.varying
        else:
            vma = getattr(t, "vma", None)
        if vma:
            axes.update(vma)
            mesh = t.sharding.mesh
    if not axes:
        return {}
    vma = frozenset(axes)
    meta = ({"manual_axis_type": jax.sharding.ManualAxisType(varying=vma)} if manual
            else {"vma": vma})
    if hasattr(jax.sharding, "get_abstract_mesh"):
        mesh = jax.sharding.get_abstract_mesh()
    meta["sharding"] = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return meta


def get_jax_output_type(arg, dims, metadata=None):
    jax = _get_jax()
    dims = _as_dims(dims)
    k = len(arg.eshape)
    if k:
        if len(dims) == arg.ndim:
            dims = (*dims, *arg.eshape)
        elif len(dims) != arg.jax_ndim or tuple(dims[-k:]) != arg.eshape:
            raise ValueError(f"Invalid output dimensions for argument '{arg.name}': {dims}")
    elif len(dims) != arg.ndim:
        raise ValueError(f"Invalid output dimensions for argument '{arg.name}': {dims}")
    out = jax.ShapeDtypeStruct(dims, arg.np_dtype)
    if metadata:
        out = out.update(**metadata)
    return out


# ---------------------------------------------------------------------------------------------
# the handler side: XLA buffers as weft arrays

_CPU = None


def _cpu():
    global _CPU
    if _CPU is None:
        from ...runtime import device as D
        _CPU = D.get_device("cpu")
    return _CPU


def _wrap(arg, buf, batch):
    """The weft array over an XLA buffer for parameter ``arg``: leading batch dimensions (from
    ``vmap_method="broadcast_all"``) are folded into the first dimension, as Warp does;
    ``batch[0]`` records their size."""
    shape = X.buffer_shape(buf)
    extra = len(shape) - arg.jax_ndim
    if extra:
        if extra < 0:
            raise X.FfiError(f"buffer of argument '{arg.name}' has rank {len(shape)}, expected "
                             f"{arg.jax_ndim}")
        if batch[0] is None:
            batch[0] = math.prod(shape[:extra])
        shape = (math.prod(shape[:extra + 1]), *shape[extra + 1:])
    if X.DTYPES.get(buf.dtype) is not arg.np_dtype.type:
        raise X.FfiError(f"buffer of argument '{arg.name}' has XLA dtype {buf.dtype}, expected "
                         f"{arg.np_dtype}")
    return _ARRAY._wrap(X.buffer_view(buf, shape, arg.np_dtype), arg.dtype, _CPU or _cpu())


def _input_values(args, statics, bufs, batch):
    """A call's inputs: weft arrays over the array arguments' buffers (in order), the static
    values for the others."""
    values, k = [], 0
    for a, s in zip(args, statics):
        if a.is_array:
            values.append(_wrap(a, bufs[k], batch))
            k += 1
        else:
            values.append(_make_static(*s))
    return values


def _zeroed_outputs(args, bufs, batch):
    """Weft arrays over the output buffers, zeroed (XLA hands them uninitialised)."""
    out = []
    for a, buf in zip(args, bufs):
        arr = _wrap(a, buf, batch)
        arr._data.fill(0)
        out.append(arr)
    return out


def _scratch(arg, like):
    """A zeroed weft array of the shape of array ``like`` (for outputs the handler discards)."""
    from ...runtime.array import array
    return array._wrap(np.zeros(like._data.shape, like._data.dtype), arg.dtype, like.device)
