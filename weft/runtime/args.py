"""Launch arguments as the generated kernels take them: checked against the declared parameter
types, struct arguments split into their members, values converted (float16 as the kernels
hold it), and the gradient and tangent arrays that adjoint and tangent launches take beside
them. Every check raises :class:`~weft.errors.LaunchError` naming the kernel and the
parameter, before anything runs."""
from __future__ import annotations

import numpy as np

from ..core import types as T
from ..core.errors import LaunchError
from .array import array


# Numba has no CPU float16: kernels see float16 array elements as their uint16 bits (the
# generated code converts with ``_wk.h2f``/``_wk.f2h``) and float16 values as float32.

def half_bits(data):
    """Array ``data`` (numpy or device) as a kernel takes it: float16 viewed as uint16."""
    return data.view(np.uint16) if data.dtype == np.float16 else data


def kernel_data(a):
    """What a generated kernel receives for wp.array ``a`` (or its gradient or tangent)."""
    return half_bits(a._data)


def kernel_scalar(ptype, value):
    """A scalar argument as the kernel takes it (float16 as a float32 rounded to half)."""
    if ptype is T.float16:
        return np.float32(np.float16(value))
    return ptype._np_(value)


def kernel_tuple(values):
    """The components of a vector, matrix, ... argument as the kernel takes them."""
    return tuple(values.astype(np.float32) if values.dtype == np.float16 else values)


def is_structish(t):
    return T.is_struct(t) or isinstance(t, T.ArrayType) and T.is_struct(t.dtype)


def flatten_value(where, t, a, out):
    """Append the member values of argument ``a`` of declared type ``t`` to ``out`` (itself,
    unless it is a struct or an array of structs)."""
    if T.is_struct(t):
        if not isinstance(a, t):
            raise LaunchError(f"{where}: expected a {t.__name__} struct, got {type(a).__name__}")
        for f, ft in T.struct_fields(t).items():
            v = getattr(a, f)
            flatten_value(f"{where}.{f}", ft, v, out)  # an unset array member is null
        return
    if isinstance(t, T.ArrayType) and T.is_struct(t.dtype):
        if not isinstance(a, array) or a.dtype is not t.dtype or a.ndim != t.ndim:
            got = f"an array of {T.type_name(a.dtype)}" if isinstance(a, array) else \
                type(a).__name__
            raise LaunchError(f"{where}: expected an array of {t.dtype.__name__} with {t.ndim} "
                              f"dimension(s), got {got}")
        info = t.dtype._wp_struct_
        for f, ft in T.struct_fields(t.dtype).items():
            if f in info.shared:  # one array for every element (textures' texels)
                out.append(info.shared_value(a, f))
                continue
            flatten_value(f"{where}.{f}", T.ArrayType(ft, t.ndim), a.field(f), out)
        return
    out.append(a)


_NULL = {}


def null_array(ptype, device):
    """The data a kernel receives for ``None`` where it takes an array (Warp's null array):
    an empty array of the parameter's type, shared."""
    key = (ptype.dtype, ptype.ndim, str(device))
    data = _NULL.get(key)
    if data is None:
        from .array_ops import zeros
        data = _NULL[key] = kernel_data(zeros((0,) * ptype.ndim, dtype=ptype.dtype,
                                              device=device))
    return data


def convert_arg(where, ptype, value, device):
    """The value the generated kernel receives for one argument (raises LaunchError)."""
    if isinstance(ptype, T.ArrayType):
        if value is None:  # Warp's null array: no elements, false as a condition
            return null_array(ptype, device)
        if not isinstance(value, array) and isinstance(value, np.ndarray) and \
                not device.is_cuda:
            value = _numpy_argument(where, ptype, value, device)
        elif not isinstance(value, (array, np.ndarray)) and _foreign_array(value, device):
            value = _numpy_argument(where, ptype, _foreign_data(where, value, device), device)
        if not isinstance(value, array):
            raise LaunchError(f"{where}: expected a wp.array of {T.type_name(ptype.dtype)}, got "
                              f"{type(value).__name__}")
        if value.dtype != ptype.dtype:
            raise LaunchError(f"{where}: expected an array of {T.type_name(ptype.dtype)}, got "
                              f"an array of {T.type_name(value.dtype)}")
        if value.ndim != ptype.ndim:
            raise LaunchError(f"{where}: expected an array of {ptype.ndim} dimension(s), got "
                              f"{value.ndim}")
        if value.device != device:
            raise LaunchError(f"{where}: the array is on device '{value.device}' but the launch "
                              f"is on '{device}'")
        return kernel_data(value)
    if T.is_composite(ptype):
        try:
            vals = np.asarray(value, dtype=T.numpy_dtype(ptype)).reshape(-1)
        except (TypeError, ValueError):
            vals = None
        if vals is None or vals.size != ptype._length_:
            raise LaunchError(f"{where}: expected a {T.type_name(ptype)}, got {value!r}")
        return kernel_tuple(vals)
    if T.is_scalar(ptype):
        return _scalar(where, ptype, value)
    raise LaunchError(f"{where}: unsupported parameter type {T.type_name(ptype)}")


def _foreign_array(value, device):
    """Whether ``value`` is another library's array weft can run a kernel on in place (as
    Warp: a torch tensor, ...): ``__cuda_array_interface__`` on CUDA, ``__array_interface__``
    or ``__array__`` on the CPU."""
    if device.is_cuda:
        return hasattr(value, "__cuda_array_interface__")
    return hasattr(value, "__array_interface__") or hasattr(value, "__array__")


def _foreign_data(where, value, device):
    """The NumPy (or Numba device) view of a foreign array's memory."""
    try:
        if device.is_cuda:
            from numba import cuda
            return cuda.as_cuda_array(value)
        return np.asarray(value)
    except Exception as e:  # noqa: BLE001 - whatever the other library raises
        raise LaunchError(f"{where}: cannot use the {type(value).__name__}'s memory: {e}") \
            from None


def _numpy_argument(where, ptype, value, device):
    """A NumPy array passed for an array parameter on the CPU: the kernel works on its memory
    (as Warp does), when its dtype and trailing shape are the elements'."""
    elem = T.element_shape(ptype.dtype) if not T.is_struct(ptype.dtype) else ()
    if T.is_struct(ptype.dtype) or value.dtype != T.numpy_dtype(ptype.dtype) or \
            value.ndim != ptype.ndim + len(elem) or tuple(value.shape[ptype.ndim:]) != elem:
        trailing = f" with trailing shape {elem}" if elem else ""
        raise LaunchError(f"{where}: expected a wp.array of {T.type_name(ptype.dtype)} (or, on "
                          f"the CPU, a NumPy array of {T.numpy_dtype(ptype.dtype)}{trailing}), "
                          f"got a NumPy array of {value.dtype} with shape {value.shape}")
    if device.is_cuda:  # a foreign CUDA array's memory, in place
        return array._wrap(value, ptype.dtype, device, ref=value)
    return array(value, dtype=ptype.dtype, copy=False, device=device)


def _scalar(where, ptype, value):
    if value is None or isinstance(value, (array, str, bytes)) or \
            isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) > 0:
        raise LaunchError(f"{where}: expected a {T.type_name(ptype)} scalar, got "
                          f"{type(value).__name__}")
    if T.is_int(ptype):
        if isinstance(value, (float, np.floating)) or not isinstance(
                value, (int, np.integer, bool, np.bool_)):
            raise LaunchError(f"{where}: expected an integer ({T.type_name(ptype)}), got "
                              f"{value!r}")
        info = np.iinfo(ptype._np_)
        if not info.min <= int(value) <= info.max:
            raise LaunchError(f"{where}: {int(value)} is out of range for "
                              f"{T.type_name(ptype)} ({info.min} to {info.max})")
        return ptype._np_(int(value))
    try:
        return kernel_scalar(ptype, value)
    except (TypeError, ValueError, OverflowError):
        raise LaunchError(f"{where}: expected a {T.type_name(ptype)}, got {value!r}") from None


def fast_converter(ptype):
    """A check-and-convert for the common cases, or one returning None (the caller then falls
    back to :func:`convert_arg`)."""
    if T.scalar_of(ptype.dtype if isinstance(ptype, T.ArrayType) else ptype) is T.float16:
        return lambda v, device: None  # the general path converts float16
    if isinstance(ptype, T.ArrayType):
        dt, nd = ptype.dtype, ptype.ndim

        def conv(v, device):
            if type(v) is array and v.dtype is dt and v._ndim == nd and v.device is device:
                return v._data
            return None
        return conv
    if T.is_float(ptype):
        np_t = ptype._np_

        def conv(v, device):
            return np_t(v) if type(v) is float or type(v) is np_t else None
        return conv
    if ptype in (T.int32, T.int64):
        np_t = ptype._np_
        info = np.iinfo(np_t)

        def conv(v, device):
            return np_t(v) if type(v) is int and info.min <= v <= info.max else None
        return conv
    return lambda v, device: None


# ------------------------------------------------------------------------ adjoints and tangents

def adjoint_arrays(ck, args):
    """The gradient arrays of ``args`` for the adjoint's parameters (None where none)."""
    out = []
    for p, a in zip(ck.abi.params, args):
        if p.adjoint is not None:
            g = a.grad if isinstance(a, array) else None
            out.append(None if g is None else kernel_data(g))
    return out


def grant_gradients(ck, args):
    """``wp.config.grad_all_arrays``: give each array argument of a differentiable parameter
    that has no gradient a zeroed one, before the launch is recorded on a tape."""
    for p, a in zip(ck.abi.params, args):
        if p.adjoint is not None and isinstance(a, array) and a.grad is None:
            a.requires_grad = True


def explicit_adjoints(ck, args, given):
    """``adj_inputs + adj_outputs`` of ``launch(adjoint=True)``: one entry per argument, arrays
    of the argument's shape and dtype, or None: the argument's own ``.grad`` (as Warp)."""
    if len(given) != len(ck.params):
        raise LaunchError(f"kernel '{ck.key}': adj_inputs + adj_outputs must give one entry per "
                          f"argument ({len(ck.params)}), got {len(given)}")
    out = []
    for p, a, g in zip(ck.abi.params, args, given):
        if p.adjoint is None:
            continue
        if g is None and isinstance(a, array):
            g = a.grad
        if g is None or not isinstance(g, array):
            out.append(None)
            continue
        if g.shape != a.shape or g.dtype != a.dtype or g.device != a.device:
            raise LaunchError(f"kernel '{ck.key}': the adjoint given for argument "
                              f"'{p.name}' has shape {g.shape}, dtype {T.type_name(g.dtype)} on "
                              f"{g.device}; the argument has shape {a.shape}, dtype "
                              f"{T.type_name(a.dtype)} on {a.device}")
        out.append(kernel_data(g))
    return out


def given_adjoints(ck, args, given):
    """The names of the parameters whose adjoint ``launch(adjoint=True)`` was given explicitly as
    an array other than the argument's own ``.grad``: Warp 1.19 leaves those unchanged (the
    adjoint of a store zeroes the stored array's own gradient only)."""
    out = set()
    for p, a, g in zip(ck.abi.params, args, given):
        if p.adjoint is not None and isinstance(g, array) and g is not getattr(a, "grad", None):
            out.add(p.name)
    return out


def retain_grads(ck, args, adj_values, keep=()):
    """Warp's ``retain_grad``: the adjoint of a store zeroes the stored elements' gradient,
    except for arrays made with ``retain_grad=True`` and the parameters named in ``keep``
    (adjoints given explicitly), whose adjoint then works on a copy."""
    if not ck.abi.stores:
        return adj_values
    slots = {p.name: k for k, p in enumerate(p for p in ck.abi.params if p.adjoint is not None)}
    out = list(adj_values)
    for name, accumulated in ck.abi.stores:
        a = args[ck.param_index(name)]
        k = slots.get(name)
        if k is None or out[k] is None or not (getattr(a, "retain_grad", False) or
                                               name in keep):
            continue
        if accumulated and not getattr(a, "retain_grad", False):
            continue  # weft cannot keep it and add the reads' gradient: consumed, as before
        if accumulated:
            raise LaunchError(f"kernel '{ck.key}' both stores into and reads array '{name}', "
                              "which has retain_grad=True: weft cannot keep the gradient of the "
                              "stored elements and add the reads' gradient")
        g = out[k]
        if isinstance(g, np.ndarray):
            out[k] = g.copy()
        else:
            from numba import cuda
            out[k] = cuda.device_array_like(g)
            out[k].copy_to_device(g)
    return out


def tangent_values(ck, args, tans, scalar_tangents, device):
    """The tangent entry's extra arguments: for each parameter with a tangent, the tangent array
    given in ``tans`` (aligned with ``args``; None for a zero tangent) or, for scalar and vector
    parameters, ``scalar_tangents.get(name)`` (default zero)."""
    out = []
    for p, (n, t), a, given in zip(ck.abi.params, ck.params, args, tans):
        if p.tangent is None:
            continue
        if isinstance(t, T.ArrayType):
            out.append(None if given is None else kernel_data(given))
            continue
        given = scalar_tangents.get(n)
        if given is None:
            given = np.zeros(t._length_) if T.is_composite(t) else 0
        out.append(convert_arg(f"kernel '{ck.key}' tangent of '{n}'", t, given, device))
    return out


def zeros_like_tangent(a):
    return array(np.zeros_like(a.numpy()), dtype=a.dtype, copy=False, device=a.device)
