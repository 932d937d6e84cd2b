"""weft kernels inside JAX through XLA's foreign-function interface: ``wp.jax_kernel`` and
``wp.jax_callable`` (Warp 1.19's API).

``wp.jax_kernel(kernel)`` is a function of JAX arrays that launches ``kernel`` when the JAX
program runs: each call is a ``jax.ffi.ffi_call`` of a target registered with
``jax.ffi.register_ffi_target`` (typed XLA FFI, API version 1), so it works under ``jax.jit``
and ``jax.vmap`` (``vmap_method``). The target is a C handler made by :mod:`ctypes`
(:mod:`.xla_ffi`) that wraps XLA's buffers as weft arrays without copying and launches::

    @wp.kernel
    def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float,
             out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a * x[i] + y[i]

    f = wp.jax_kernel(axpy, enable_backward=True)
    out, = jax.jit(lambda x, y: f(x, y, 2.0))(x, y)

The first ``num_outputs`` trailing parameters are outputs (allocated by XLA, zeroed before the
launch); ``in_out_argnames`` names inputs that are outputs too. Scalars are static (Python
values at trace time, part of the compiled call). Launch dimensions default to the shape of
the first array input.

Derivatives (``enable_backward=True``): the wrapper is a ``jax.custom_jvp`` function whose JVP
runs weft's *tangent* kernel through a JAX primitive that is linear in the tangents; the
primitive's transpose runs weft's *adjoint* kernel. So ``jax.jvp`` (forward mode, beyond
Warp) and ``jax.grad``/``jax.vjp`` (reverse mode) both work, under ``jax.jit`` and
``jax.vmap``.

``wp.jax_callable(func)`` does the same for a Python function annotated like a kernel that
launches kernels (no derivatives).

CPU only: weft's arrays share host memory with XLA's CPU buffers. A JAX program placed on a GPU
finds no CUDA target for these calls.
"""
from __future__ import annotations

import collections
import ctypes
import inspect
import math
import operator
import threading
import typing
from enum import IntEnum

import numpy as np

import weft as wp  # module attributes are looked up at call time (tests patch them)

from ...core import types as T
from ...runtime.array import array as _ARRAY
from . import get_jax_device  # noqa: F401  (tests patch ffi.get_jax_device)
from . import xla_ffi as X

__all__ = ["jax_kernel", "jax_callable", "JaxCallableGraphMode", "JaxModulePreloadMode",
           "clear_jax_callable_graph_cache", "register_ffi_callback"]

_FFI_REGISTRY_LOCK = threading.Lock()
_FFI_CALLBACK_LOCK = threading.RLock()
_FFI_KERNEL_REGISTRY = {}
_FFI_DIFF_KERNEL_REGISTRY = {}
_FFI_CALLABLE_REGISTRY = {}
_FFI_CALLBACK_REGISTRY = {}
_MISSING = object()

JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX = 32
_TID_MAX_EXTENT = 2 ** 31 - 1  # Warp's wp.tid() is a 32-bit index


def _get_jax():
    import jax  # noqa: PLC0415
    return jax


def check_jax_version():
    jax = _get_jax()
    if jax.__version_info__ < (0, 5, 0):
        raise RuntimeError("weft's jax_kernel() and jax_callable() need JAX 0.5.0 or newer, found "
                           f"{jax.__version__}")


class JaxCallableGraphMode(IntEnum):
    """CUDA graph capture modes of ``wp.jax_callable`` (Warp's). On the CPU ``NONE`` and
    ``JAX`` run the function directly; ``WARP``, ``WARP_STAGED`` and ``WARP_STAGED_EX`` need
    CUDA and fail there."""

    NONE = 0
    JAX = 1
    WARP = 2
    WARP_STAGED = 3
    WARP_STAGED_EX = 4


GraphMode = JaxCallableGraphMode


class JaxModulePreloadMode(IntEnum):
    """When kernels compile: ``CURRENT_DEVICE`` (default) at trace time for the current JAX
    device, ``ALL_DEVICES`` for every device, ``NONE`` at the first launch."""

    NONE = 0
    CURRENT_DEVICE = 1
    ALL_DEVICES = 2


ModulePreloadMode = JaxModulePreloadMode


# ---------------------------------------------------------------------------------------------
# module preloading (Warp's semantics; weft compiles one kernel, not a module)

def _is_cpu(device):
    v = getattr(device, "is_cpu", None)
    return bool(v) if v is not None else not getattr(device, "is_cuda", False)


def _get_ffi_block_dim(device, block_dim=None):
    """The block size a launch on ``device`` uses: 256 threads (or ``block_dim``) on CUDA; 1
    on the CPU unless ``wp.config.enable_cpu_blocks``."""
    if _is_cpu(device):
        return block_dim if (block_dim is not None and
                             getattr(wp.config, "enable_cpu_blocks", False)) else 1
    return 256 if block_dim is None else block_dim


def _load_ffi_module(module, device, block_dim=None):
    loaded = module.load(device, _get_ffi_block_dim(device, block_dim))
    if loaded is None:
        raise RuntimeError(f"Failed to load Warp module '{getattr(module, 'name', module)}' on "
                           f"device '{device}' after a previous build failure")
    return loaded


def _preload_ffi_module(module, mode, block_dim=None):
    """Compile ahead (``module.load(device, block_dim)``) for the devices ``mode`` names."""
    if mode == JaxModulePreloadMode.NONE:
        return
    if mode == JaxModulePreloadMode.CURRENT_DEVICE:
        try:
            device = wp.device_from_jax(get_jax_device())
        except (IndexError, RuntimeError):
            return
        _load_ffi_module(module, device, block_dim)
        return
    if mode == JaxModulePreloadMode.ALL_DEVICES:
        jax = _get_jax()
        devices, seen = [], set()
        for backend in ("cpu", "cuda"):
            try:
                found = jax.local_devices(backend=backend)
            except RuntimeError:
                continue
            for jd in found:
                try:
                    d = wp.device_from_jax(jd)
                except (IndexError, RuntimeError):
                    continue
                if id(d) not in seen:
                    seen.add(id(d))
                    devices.append(d)
        for d in devices:
            _load_ffi_module(module, d, block_dim)
        return
    raise ValueError(f"Unsupported JAX module preload mode '{mode}'")


class _KernelLoad:
    """What preloading a jax_kernel compiles: its one kernel (for the argument types of the
    call, when generic), on the CPU."""

    def __init__(self, kernel, types):
        self.kernel, self.types, self.name = kernel, types, kernel.key

    def load(self, device, block_dim=None):
        if _is_cpu(device):
            self.kernel.compiled("cpu", types=self.types if self.kernel.is_generic else None)
        return True


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


_TID_DIMS = {}


def _tid_dims(kernel, types):
    key = (kernel, types if kernel.is_generic else None)
    got = _TID_DIMS.get(key, _MISSING)
    if got is _MISSING:
        try:
            got = kernel.compiled("cpu", types=key[1]).abi.tid_dims
        except Exception:  # noqa: BLE001 - the launch reports the kernel's own errors
            got = None
        _TID_DIMS[key] = got
    return got


def _build_kernel_launch_bounds(dim, kernel, block_dim, types=None):
    """Check launch dimensions ``dim`` against the 32-bit thread indices of ``wp.tid()``
    (``block_dim``: the block size of the target checked; weft's CPU blocks are one thread)."""
    tid_dims = _tid_dims(kernel, types)
    n = len(dim) if tid_dims is None else tid_dims
    for d, extent in enumerate(dim[:n]):
        if extent > _TID_MAX_EXTENT:
            raise ValueError(f"Warp cannot launch a kernel using wp.tid() with extent {extent} "
                             f"in dimension {d} (at most {_TID_MAX_EXTENT})")
    return tuple(dim)


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


def _validate_ffi_kernel_launch_bounds(dim, kernel, block_dim=None, types=None):
    """Trace-time checks of ``dim`` for every target the call may run on."""
    cuda_block_dim = 256 if block_dim is None else block_dim
    _build_kernel_launch_bounds(dim, kernel, cuda_block_dim, types)
    if any(e > _TID_MAX_EXTENT for e in dim) and cuda_block_dim != 1:
        _build_kernel_launch_bounds(dim, kernel, 1, types)


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


def _register(call, func):
    """The parts a ``jax_kernel`` and a ``jax_callable`` set up alike once their arguments are
    known: the first array input, which inputs alias outputs (``in_out``), the descriptor
    table, and the FFI target (named after ``func``) whose handler is ``call._handle``."""
    call.first_array_arg = next((i for i, a in enumerate(call.input_args) if a.is_array), None)
    arrays = [a for a in call.input_args if a.is_array]
    call.input_output_aliases = {i: k for k, i in enumerate(
        i for i, a in enumerate(arrays) if a.in_out)}
    call._descs = _Descriptors()
    call.name = generate_unique_name(func)
    call.callback_func = _target(call.name, call._handle)


def _check_cpu():
    if not wp.is_cpu_available():
        raise X.FfiError("This Warp build does not include CPU support",
                         X.ERROR_FAILED_PRECONDITION)


def _target(name, fn, traits=0):
    """Register handler ``fn(frame)`` as XLA FFI target ``name`` on the CPU; the C callback is
    kept alive in the registry."""
    jax = _get_jax()
    h = X.handler(fn, traits)
    capsule = jax.ffi.pycapsule(ctypes.cast(h, ctypes.c_void_p).value)
    jax.ffi.register_ffi_target(name, capsule, platform="cpu", api_version=1)
    _FFI_CALLBACK_REGISTRY[name] = h
    return h


_name_counts = collections.Counter()


def generate_unique_name(func):
    key = f"weft_{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', func)}"
    key = "".join(c if c.isalnum() or c in "._" else "_" for c in key)
    with _FFI_REGISTRY_LOCK:
        n = _name_counts[key]
        _name_counts[key] += 1
    return f"{key}_{n}"


class _Descriptors:
    """Per-call data the handler needs (resolved types, static values, launch dimensions),
    interned: the call passes its index as attribute ``desc``."""

    def __init__(self):
        self.items, self.index = [], {}

    def intern(self, key, make):
        i = self.index.get(key)
        if i is None:
            with _FFI_REGISTRY_LOCK:
                i = self.index.get(key)
                if i is None:
                    self.items.append(make())
                    i = self.index[key] = len(self.items) - 1
        return i


def _desc_of(frame, descs):
    a = X.decode_attrs(frame)
    try:
        return descs.items[int(a["desc"])], int(a.get("mode", 0))
    except (KeyError, IndexError, TypeError):
        raise X.FfiError("weft FFI call without a valid 'desc' attribute") from None


def _in_out_layout(names, num_outputs, in_out_argnames, what):
    """Split parameters into inputs (in-out ones included) and outputs, checking
    ``in_out_argnames`` as Warp does."""
    listed = list(in_out_argnames or [])
    in_out = set(listed)
    if len(listed) != len(in_out):
        raise ValueError("in_out_argnames must not contain duplicate names")
    n = len(names)
    num_inputs = n - num_outputs + len(in_out)
    if num_outputs < 1:
        raise ValueError("At least one output is required")
    if num_outputs > n:
        raise ValueError(f"Number of outputs cannot be greater than the number of {what} "
                         "arguments")
    if num_outputs < len(in_out):
        raise ValueError("Number of outputs cannot be smaller than the number of "
                         "in_out_argnames")
    left = set(in_out)
    for k, name in enumerate(names):
        if name in left:
            if k >= num_inputs:
                raise ValueError(f"Expected an output-only argument for argument {name}. "
                                 "in_out arguments should be placed before output-only "
                                 "arguments.")
            left.discard(name)
    if left:
        raise ValueError(f"in_out_argnames: '{left}' did not match any function argument names.")
    return num_inputs, in_out


# ---------------------------------------------------------------------------------------------
# jax_kernel

class _KernelDesc:
    __slots__ = ("inputs", "outputs", "statics", "launch_dims")

    def __init__(self, inputs, outputs, statics, launch_dims):
        self.inputs, self.outputs, self.statics, self.launch_dims = \
            inputs, outputs, statics, launch_dims


class FfiKernel:
    """``wp.jax_kernel(kernel)`` without derivatives (see :func:`jax_kernel`)."""

    # under vmap (broadcast_all) the batch folds into the first array dimension, and into the
    # first of explicit launch dimensions (Warp's jax_kernel; its differentiable wrapper keeps
    # explicit launch dimensions as given: the kernel covers the batch itself, if at all)
    _roll_batch = True

    def __init__(self, kernel, num_outputs, vmap_method, launch_dims, block_dim, output_dims,
                 in_out_argnames, module_preload_mode, has_side_effect=False):
        self.kernel = kernel
        self.num_outputs = num_outputs
        self.vmap_method = vmap_method
        self.launch_dims = launch_dims
        self.block_dim = block_dim
        self.output_dims = output_dims
        self.module_preload_mode = module_preload_mode
        self.has_side_effect = has_side_effect
        declared = kernel.declared
        names = [n for n, _ in declared]
        self.num_kernel_args = len(names)
        self.num_inputs, in_out = _in_out_layout(names, num_outputs, in_out_argnames, "kernel")
        self.num_in_out = len(in_out)
        self.input_args = [FfiArg(n, t, n in in_out) for n, t in declared[:self.num_inputs]]
        self.output_args = []
        for n, t in declared[self.num_inputs:]:
            a = FfiArg(n, t)
            if not a.is_array:
                raise TypeError("All output arguments must be arrays")
            self.output_args.append(a)
        for a in self.input_args:
            if a.in_out and not a.is_array:
                raise TypeError(f"in-out argument '{a.name}' must be an array")
        _register(self, kernel.func)

    # ----------------------------------------------------------------------- trace time
    def _resolve(self, args):
        """Inputs checked and made concrete: (input FfiArgs, output FfiArgs, array values,
        static values (type, value) per input, the kernel's concrete types or None)."""
        if len(args) != self.num_inputs:
            raise ValueError(f"Expected {self.num_inputs} inputs, but got {len(args)}")
        ins, arrays, statics = [], [], []
        for a, v in zip(self.input_args, args):
            if a.is_array:
                if not hasattr(v, "dtype"):
                    raise TypeError(f"Argument '{a.name}' must be an array, got "
                                    f"{type(v).__name__}")
                if a.generic:
                    a = a.concrete(_dtype_of_value(a, v))
                _check_array(a, v)
                arrays.append(v)
                statics.append(None)
            else:
                t, val = _static_value(a, v)
                if a.generic or a.type is None:
                    a = FfiArg(a.name, t)
                statics.append((t, val))
            ins.append(a)
        outs = list(self.output_args)
        types = None
        if any(a.generic for a in outs) or any(a.generic for a in self.input_args):
            in_types = [T.ArrayType(a.dtype, a.ndim) if a.is_array else a.type for a in ins]
            match = None
            for ov in self.kernel.overloads:
                if len(ov) == self.num_kernel_args and all(
                        _is_generic(o) or _same_type(o, t) or
                        (isinstance(o, T.ArrayType) and isinstance(t, T.ArrayType) and
                         _same_type(o.dtype, t.dtype) and o.ndim == t.ndim)
                        for o, t in zip(ov[:self.num_inputs], in_types)):
                    match = ov
                    break
            first = next((a.dtype for a, s in zip(ins, self.input_args) if a.is_array and
                          s.generic), None)
            for k, a in enumerate(outs):
                if a.generic:
                    ot = match[self.num_inputs + k] if match is not None else None
                    d = ot.dtype if isinstance(ot, T.ArrayType) and not _is_generic(ot) else first
                    if d is None:
                        raise TypeError(f"cannot tell the dtype of generic output '{a.name}' of "
                                        f"kernel '{self.kernel.key}': declare an overload "
                                        "(wp.overload) or give typed inputs")
                    outs[k] = a.concrete(d)
            types = tuple([*in_types, *(T.ArrayType(a.dtype, a.ndim) for a in outs)])
        return ins, outs, arrays, statics, types

    def __call__(self, *args, output_dims=None, launch_dims=None, vmap_method=None):
        jax = _get_jax()
        launch_dims = self.launch_dims if launch_dims is None else launch_dims
        output_dims = self.output_dims if output_dims is None else output_dims
        vmap_method = self.vmap_method if vmap_method is None else vmap_method
        ins, outs, arrays, statics, types = self._resolve(args)
        meta = get_jax_output_type_metadata(arrays)
        out_types = [get_jax_output_type(a, v.shape, meta)
                     for a, v in zip(ins, args) if a.is_array and a.in_out]
        infer = launch_dims is None
        if infer:
            if self.first_array_arg is None:
                raise RuntimeError("Failed to determine launch dimensions")
            dims = get_warp_shape(ins[self.first_array_arg], args[self.first_array_arg].shape)
        else:
            dims = _as_dims(launch_dims)
        _validate_ffi_kernel_launch_bounds(dims, self.kernel, self.block_dim, types)
        if isinstance(output_dims, dict):
            for a in outs:
                d = output_dims.get(a.name)
                if d is None:
                    raise ValueError(f"Missing output dimensions for argument '{a.name}'")
                out_types.append(get_jax_output_type(a, d, meta))
        else:
            od = dims if output_dims is None else output_dims
            for a in outs:
                out_types.append(get_jax_output_type(a, od, meta))
        _check_shapes(self.kernel, types, dims, list(zip(ins, args)), outs,
                      [o.shape for o in out_types[self.num_in_out:]])
        call = jax.ffi.ffi_call(self.name, out_types, vmap_method=vmap_method,
                                input_output_aliases=self.input_output_aliases,
                                has_side_effect=self.has_side_effect)
        _preload_ffi_module(_KernelLoad(self.kernel, types), self.module_preload_mode,
                            self.block_dim)
        key = (tuple(ins_key(a) for a in ins), tuple(ins_key(a) for a in outs),
               tuple(statics), None if infer else dims)
        i = self._descs.intern(key, lambda: _KernelDesc(ins, outs, statics,
                                                        None if infer else dims))
        return call(*arrays, desc=np.int64(i))

    # ----------------------------------------------------------------------- run time
    def _arrays(self, desc, ins_bufs, out_bufs, batch):
        """The kernel's inputs and outputs as weft arrays over the buffers (outputs zeroed)."""
        return (_input_values(desc.inputs, desc.statics, ins_bufs, batch),
                _zeroed_outputs(desc.outputs, out_bufs, batch))

    def _dims(self, desc, inputs, batch):
        if desc.launch_dims is None:
            arr = inputs[self.first_array_arg]
            dims = tuple(arr.shape)
        else:
            dims = desc.launch_dims
            if batch[0] is not None and self._roll_batch:
                dims = (batch[0] * dims[0], *dims[1:])
        return _build_kernel_launch_bounds(dims, self.kernel, 1)

    def _handle(self, frame):
        with _FFI_CALLBACK_LOCK:
            desc, mode = _desc_of(frame, self._descs)
            ins = X.buffers(frame.contents.args)
            rets = X.buffers(frame.contents.rets)
            _check_cpu()
            if mode:
                return self._derivative(mode, desc, ins, rets)
            n_arr = sum(1 for a in desc.inputs if a.is_array)
            if len(ins) != n_arr or len(rets) != self.num_outputs:
                raise X.FfiError(f"Expected {n_arr} JAX FFI input buffers and "
                                 f"{self.num_outputs} output buffers, got {len(ins)} and "
                                 f"{len(rets)}")
            batch = [None]
            inputs, outputs = self._arrays(desc, ins, rets[self.num_in_out:], batch)
            dims = self._dims(desc, inputs, batch)
            wp.launch(self.kernel, dim=dims[0] if len(dims) == 1 else dims, inputs=inputs,
                      outputs=outputs, device="cpu", record_tape=False,
                      block_dim=self.block_dim)

    def _derivative(self, mode, desc, ins, rets):
        raise X.FfiError("this jax_kernel has no derivatives (enable_backward=False)")


def ins_key(a):
    return (a.name, a.dtype if hasattr(a, "dtype") else a.type)


# ---------------------------------------------------------------------------------------------
# derivatives: the tangent and adjoint kernels

class _DiffFfiKernel(FfiKernel):
    """The FFI kernel of a differentiable ``jax_kernel``: mode 0 runs the kernel, mode 1 its
    tangent kernel (inputs: primal arrays, then tangents of the float arrays; outputs: the
    outputs' tangents), mode 2 its adjoint kernel (inputs: primal arrays, then the outputs'
    cotangents; outputs: the cotangents of the float array inputs), mode 3 the tangent of the
    adjoint along the primals (inputs: primal arrays, cotangents, tangents of the float array
    inputs; outputs: the tangents of their cotangents), for forward over reverse."""

    _roll_batch = False

    def diff_inputs(self, desc):
        return [k for k, a in enumerate(a for a in desc.inputs if a.is_array)
                if np.issubdtype(a.np_dtype, np.floating)]

    def call(self, mode, desc_index, arrays, out_types, vmap_method):
        jax = _get_jax()
        call = jax.ffi.ffi_call(self.name, out_types, vmap_method=vmap_method,
                                has_side_effect=self.has_side_effect)
        return call(*arrays, desc=np.int64(desc_index), mode=np.int64(mode))

    def _derivative(self, mode, desc, ins, rets):
        arr_args = [a for a in desc.inputs if a.is_array]
        n = len(arr_args)
        batch = [None]
        inputs = _input_values(desc.inputs, desc.statics, ins, batch)
        arrays_in = [x for x, a in zip(inputs, desc.inputs) if a.is_array]
        diff = self.diff_inputs(desc)
        if mode == 1:  # tangent
            if len(ins) != n + len(diff) or len(rets) != len(desc.outputs):
                raise X.FfiError("tangent call with unexpected buffer counts")
            tans = {}
            for j, k in enumerate(diff):
                tans[arrays_in[k]] = _wrap(arr_args[k], ins[n + j], batch)
            outputs = []
            for a, buf in zip(desc.outputs, rets):
                t = _wrap(a, buf, batch)
                t._data.fill(0)
                o = _scratch(a, t)
                tans[o] = t
                outputs.append(o)
            dims = self._dims(desc, inputs, batch)
            wp.jvp(self.kernel, dims, inputs=inputs, outputs=outputs, tangents=tans,
                   device="cpu")
            return
        if mode == 2:  # adjoint
            if len(ins) != n + len(desc.outputs) or len(rets) != len(diff):
                raise X.FfiError("adjoint call with unexpected buffer counts")
            adj_outs, outputs = [], []
            for j, a in enumerate(desc.outputs):
                ct = _wrap(a, ins[n + j], batch)
                seed = _scratch(a, ct)
                seed._data[...] = ct._data  # the adjoint may clear its seeds: keep XLA's intact
                adj_outs.append(seed)
                outputs.append(_scratch(a, ct))
            grads = {}
            for j, k in enumerate(diff):
                g = _wrap(arr_args[k], rets[j], batch)
                g._data.fill(0)
                grads[k] = g
            adj_ins, k = [], 0
            for a in desc.inputs:
                if a.is_array:
                    adj_ins.append(grads.get(k))
                    k += 1
                else:
                    adj_ins.append(None)
            dims = self._dims(desc, inputs, batch)
            wp.launch(self.kernel, dim=dims, inputs=inputs, outputs=outputs,
                      adj_inputs=adj_ins, adj_outputs=adj_outs, adjoint=True, device="cpu",
                      record_tape=False, block_dim=self.block_dim)
            return
        if mode == 3:  # second order: the tangent of the adjoint along the primal tangents
            if len(ins) != n + len(desc.outputs) + len(diff) or len(rets) != len(diff):
                raise X.FfiError("second-order call with unexpected buffer counts")
            self._second_order(desc, ins, rets, inputs, arrays_in, diff, n, batch)
            return
        raise X.FfiError(f"unknown weft FFI mode {mode}")

    def _second_order(self, desc, ins, rets, inputs, arrays_in, diff, n, batch):
        """``d/de adjoint(x + e dx, ct)``: the kernel recorded on a tape over copies of the
        inputs, then ``tape.hvp`` seeded with the cotangents ``ct`` (forward over reverse:
        weft's adjoint-tangent kernel)."""
        from ...runtime.array import array
        arr_args = [a for a in desc.inputs if a.is_array]
        inputs = list(inputs)
        owned = {}
        for k in diff:  # copies that carry gradients (XLA's buffers stay untouched)
            src = arrays_in[k]
            c = array._wrap(np.array(src._data), src.dtype, src.device)
            c.requires_grad = True
            owned[k] = c
        k = 0
        for pos, a in enumerate(desc.inputs):
            if a.is_array:
                if k in owned:
                    inputs[pos] = owned[k]
                k += 1
        outputs, seeds = [], {}
        for j, a in enumerate(desc.outputs):
            ct = _wrap(a, ins[n + j], batch)
            o = _scratch(a, ct)
            o.requires_grad = True
            outputs.append(o)
            seeds[o] = np.array(ct._data)
        vectors = {owned[k]: np.array(_wrap(arr_args[k], ins[n + len(desc.outputs) + j],
                                            batch)._data) for j, k in enumerate(diff)}
        dims = self._dims(desc, inputs, batch)
        tape = wp.Tape()
        with tape:
            wp.launch(self.kernel, dim=dims, inputs=inputs, outputs=outputs, device="cpu",
                      block_dim=self.block_dim)
        hv = tape.hvp(None, vectors, grads=seeds)
        for j, k in enumerate(diff):
            out = _wrap(arr_args[k], rets[j], batch)
            out._data[...] = hv[owned[k]].numpy().reshape(out._data.shape)


_PRIMS = {}
_SECOND_ORDER = ("weft: this derivative through a jax_kernel is not supported (forward over "
                 "reverse is: jax.jvp of jax.grad, jax.hessian; reverse over reverse and third "
                 "derivatives are not)")


def _prims():
    """The JAX primitive of a differentiable jax_kernel's tangent: ``weft_tangent(*primals,
    *tangents)`` -> output tangents, linear in the tangents; its transpose runs the adjoint."""
    if _PRIMS:
        return _PRIMS["tangent"]
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415
    from jax.extend.core import Primitive  # noqa: PLC0415
    from jax.interpreters import ad, batching, mlir  # noqa: PLC0415

    p = Primitive("weft_kernel_tangent")
    p.multiple_results = True

    def split(args, wrapper, nb):
        n = wrapper.n_arrays
        return args[:n], args[n:]

    def impl(*args, wrapper, statics, nb):
        primals, tans = split(args, wrapper, nb)
        return wrapper.tangent_call(primals, tans, statics, nb)

    def abstract(*avals, wrapper, statics, nb):
        primals = avals[:wrapper.n_arrays]
        return [jax.core.ShapedArray(s.shape, s.dtype)
                for s in wrapper.out_types(primals, statics, nb)]

    def transpose(cts, *args, wrapper, statics, nb):
        primals, tans = split(args, wrapper, nb)
        if any(ad.is_undefined_primal(x) for x in primals):
            raise NotImplementedError("weft: the tangent of a jax_kernel is linear in the "
                                      "tangents only (no derivative through the primal inputs "
                                      "here)")
        outs = wrapper.out_types(primals, statics, nb)
        cts = [jnp.zeros(o.shape, o.dtype) if type(c) is ad.Zero else c
               for c, o in zip(cts, outs)]
        grads = wrapper.adjoint_call(primals, cts, statics, nb)
        return [None] * len(primals) + list(grads)

    def batch(args, dims, *, wrapper, statics, nb):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        if wrapper.vmap_method == "sequential":  # one call per batch element, as the forward
            outs = [p.bind(*(jnp.take(a, b, axis=d) if d is not None else a
                             for a, d in zip(args, dims)),
                           wrapper=wrapper, statics=statics, nb=nb) for b in range(size)]
            return [jnp.stack(o) for o in zip(*outs)], [0] * len(outs[0])
        moved = [jnp.moveaxis(a, d, 0) if d is not None else
                 jnp.broadcast_to(a, (size, *a.shape)) for a, d in zip(args, dims)]
        out = p.bind(*moved, wrapper=wrapper, statics=statics, nb=nb + 1)
        return out, [0] * len(out)

    def no_jvp(primals, tangents, **params):
        raise NotImplementedError(_SECOND_ORDER)

    p.def_impl(impl)
    p.def_abstract_eval(abstract)
    ad.primitive_jvps[p] = no_jvp
    ad.primitive_transposes[p] = transpose
    batching.primitive_batchers[p] = batch
    mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=True))
    _PRIMS["tangent"] = p
    return p


class _DiffKernel:
    """A differentiable ``jax_kernel``: a ``jax.custom_jvp`` function per set of static
    values, whose JVP is the tangent primitive (see :func:`_prims`)."""

    def __init__(self, kernel, num_outputs, vmap_method, launch_dims, block_dim,
                 module_preload_mode, has_side_effect):
        self.ffi = _DiffFfiKernel(kernel, num_outputs, vmap_method, launch_dims, block_dim,
                                  None, None, module_preload_mode, has_side_effect)
        if self.ffi.num_in_out:
            raise NotImplementedError("jax_kernel(): Input-output arguments (in_out_argnames) "
                                      "are not supported when enable_backward=True.")
        self.n_arrays = sum(1 for a in self.ffi.input_args if a.is_array)
        self.block_dim = block_dim
        self.launch_dims = _as_dims(launch_dims)
        self.vmap_method = vmap_method
        self._fns = {}
        self._descs = {}

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __call__(self, *args, launch_dims=_MISSING, output_dims=_MISSING, vmap_method=_MISSING):
        if launch_dims is not _MISSING:
            raise TypeError("jax_kernel(): launch_dims cannot be overridden per-call when "
                            "enable_backward=True (this wrapper was created with "
                            f"launch_dims={self.launch_dims!r}); call jax_kernel() again with "
                            "other launch_dims for a new wrapper.")
        if output_dims is not _MISSING:
            raise TypeError("jax_kernel(): output_dims is not supported when "
                            "enable_backward=True.")
        if vmap_method is not _MISSING:
            raise TypeError("jax_kernel(): vmap_method cannot be overridden per-call when "
                            "enable_backward=True; it is fixed at construction time.")
        ins, outs, arrays, statics, types = self.ffi._resolve(args)
        key = tuple(statics)
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = self._make(key)
        return list(fn(*arrays))

    # ----------------------------------------------------------------------- helpers
    def _desc(self, avals, statics, nb):
        """(descriptor index, outputs' ShapeDtypeStructs) for primal arrays of shapes
        ``avals`` (with ``nb`` leading batch dimensions)."""
        jax = _get_jax()
        shapes = tuple((tuple(a.shape[nb:]), np.dtype(a.dtype)) for a in avals)
        key = (shapes, statics, nb)
        got = self._descs.get(key)
        if got is not None:
            return got
        fake, k = [], 0
        for a, s in zip(self.ffi.input_args, statics):
            if a.is_array:
                fake.append(jax.ShapeDtypeStruct(*shapes[k]))
                k += 1
            else:
                fake.append(_make_static(*s))
        ins, outs, _, st, types = self.ffi._resolve(fake)
        first = self.ffi.first_array_arg
        # outputs take the shape of the first array input (as Warp's differentiable wrapper),
        # which launch_dims need not cover (a kernel may loop over an outer axis itself)
        shape = get_warp_shape(ins[first], fake[first].shape) if first is not None else None
        dims = shape if self.launch_dims is None else self.launch_dims
        if dims is None:
            raise RuntimeError("Unable to determine launch dimensions, at least one input array "
                               "is required")
        _validate_ffi_kernel_launch_bounds(dims, self.ffi.kernel, self.block_dim, types)
        _check_shapes(self.ffi.kernel, types, dims, list(zip(ins, fake)), outs,
                      [get_jax_output_type(a, shape if shape is not None else dims).shape
                       for a in outs])
        prefix = tuple(avals[0].shape[:nb]) if nb else ()
        out_types = [jax.ShapeDtypeStruct(
            (*prefix, *get_jax_output_type(a, shape if shape is not None else dims).shape),
            a.np_dtype) for a in outs]
        i = self.ffi._descs.intern(
            (tuple(ins_key(a) for a in ins), tuple(ins_key(a) for a in outs), tuple(st),
             self.launch_dims),
            lambda: _KernelDesc(ins, outs, st, self.launch_dims))
        _preload_ffi_module(_KernelLoad(self.ffi.kernel, types), self.ffi.module_preload_mode,
                            self.block_dim)
        self._descs[key] = got = (i, out_types)
        return got

    def out_types(self, primals, statics, nb):
        return self._desc(primals, statics, nb)[1]

    def forward_call(self, arrays, statics):
        i, outs = self._desc(arrays, statics, 0)
        meta = get_jax_output_type_metadata(arrays)
        if meta:
            outs = [o.update(**meta) for o in outs]
        return self.ffi.call(0, i, arrays, outs, self.vmap_method)

    def tangent_call(self, primals, tans, statics, nb):
        i, outs = self._desc(primals, statics, nb)
        return self.ffi.call(1, i, [*primals, *tans], outs, self.vmap_method)

    def adjoint_call(self, primals, cts, statics, nb):
        jax = _get_jax()
        i, _ = self._desc(primals, statics, nb)
        desc = self.ffi._descs.items[i]
        diff = self.ffi.diff_inputs(desc)
        outs = [jax.ShapeDtypeStruct(primals[k].shape, primals[k].dtype) for k in diff]

        @jax.custom_jvp
        def adjoint(*arrays):
            return tuple(self.ffi.call(2, i, list(arrays), outs, self.vmap_method))

        n_out = len(cts)
        tangent_outs = outs

        @jax.custom_jvp
        def second(*arrays):  # (x, ct, dx) -> the second-order part of the adjoint's tangent
            return tuple(self.ffi.call(3, i, list(arrays), tangent_outs, self.vmap_method))

        @second.defjvp
        def _(primals_, tangents_):
            raise NotImplementedError(_SECOND_ORDER)

        @adjoint.defjvp
        def adjoint_jvp(primals_, tangents_):
            """Forward over reverse: the adjoint is linear in the cotangents (their tangents
            pass through the adjoint itself) and its derivative along the primals is weft's
            adjoint-tangent kernel (``tape.hvp``)."""
            n = len(primals_) - n_out
            x, ct = primals_[:n], primals_[n:]
            dx, dct = tangents_[:n], tangents_[n:]
            out = adjoint(*primals_)
            dx_diff = [dx[k] for k in diff]
            curvature = second(*x, *ct, *dx_diff)
            linear = adjoint(*x, *dct)
            return out, tuple(a + b for a, b in zip(curvature, linear))

        return list(adjoint(*primals, *cts))

    def _make(self, statics):
        import jax  # noqa: PLC0415
        import jax.numpy as jnp  # noqa: PLC0415
        prim = _prims()
        wrapper = self

        @jax.custom_jvp
        def f(*arrays):
            return tuple(wrapper.forward_call(list(arrays), statics))

        @f.defjvp
        def f_jvp(primals, tangents):
            outs = f(*primals)
            i, _ = wrapper._desc(primals, statics, 0)
            diff = wrapper.ffi.diff_inputs(wrapper.ffi._descs.items[i])
            tans = [tangents[k] for k in diff]
            touts = prim.bind(*primals, *tans, wrapper=wrapper, statics=statics, nb=0)
            touts = [t if np.issubdtype(np.dtype(o.dtype), np.floating) else
                     np.zeros(o.shape, jax.dtypes.float0) for t, o in zip(touts, outs)]
            return outs, tuple(touts)

        del jnp
        return f


def jax_kernel(kernel, num_outputs=1, vmap_method="broadcast_all", launch_dims=None,
               output_dims=None, in_out_argnames=None,
               module_preload_mode=JaxModulePreloadMode.CURRENT_DEVICE,
               enable_backward: bool = False, has_side_effect: bool = False,
               block_dim: int | None = None):
    """A JAX function launching weft ``kernel`` (Warp 1.19's ``wp.jax_kernel``).

    Called with the kernel's inputs (JAX arrays; scalars as static Python values), it returns
    the list of its ``num_outputs`` outputs (the trailing parameters; ``in_out_argnames``:
    inputs that are also outputs, counted in ``num_outputs``). ``launch_dims`` (default: the
    shape of the first array input) and ``output_dims`` (default: the launch dimensions; a
    dict by output name) may be given per call too, as ``vmap_method`` (how ``jax.vmap``
    batches the call: ``"broadcast_all"`` folds the batch into the first dimension,
    ``"sequential"`` loops).

    ``enable_backward=True`` makes the function differentiable: ``jax.grad``/``jax.vjp`` run
    weft's adjoint kernel, ``jax.jvp`` its tangent kernel (beyond Warp); ``launch_dims`` is
    then fixed here, and ``output_dims`` and ``in_out_argnames`` are not supported.
    ``block_dim`` is kept for Warp compatibility (weft's CPU blocks are one thread).
    """
    check_jax_version()
    if block_dim is not None:
        if isinstance(block_dim, bool):
            raise TypeError("jax_kernel(): block_dim must be an integer or None.")
        try:
            block_dim = operator.index(block_dim)
        except TypeError:
            raise TypeError("jax_kernel(): block_dim must be an integer or None.") from None
        if block_dim <= 0:
            raise ValueError("jax_kernel(): block_dim must be positive.")
    if not hasattr(kernel, "declared") or not hasattr(kernel, "compiled"):
        raise TypeError(f"jax_kernel() needs a weft kernel (@wp.kernel), got "
                        f"{type(kernel).__name__}")
    hl = _hashable(_as_dims(launch_dims)) if launch_dims is not None else None
    ho = _hashable(output_dims)
    hio = tuple(in_out_argnames) if in_out_argnames else None
    if not enable_backward:
        key = (kernel, num_outputs, vmap_method, hl, ho, hio, module_preload_mode,
               has_side_effect, block_dim)
        with _FFI_REGISTRY_LOCK:
            found = _FFI_KERNEL_REGISTRY.get(key)
        if found is None:
            found = FfiKernel(kernel, num_outputs, vmap_method, launch_dims, block_dim,
                              output_dims, hio, module_preload_mode, has_side_effect)
            with _FFI_REGISTRY_LOCK:
                found = _FFI_KERNEL_REGISTRY.setdefault(key, found)
        return found
    if in_out_argnames:
        raise NotImplementedError("jax_kernel(): Input-output arguments (in_out_argnames) are "
                                  "not supported when enable_backward=True.")
    if output_dims is not None:
        raise NotImplementedError("jax_kernel(): output_dims is not yet supported when "
                                  "enable_backward=True.")
    key = (kernel, num_outputs, vmap_method, module_preload_mode, has_side_effect, hl,
           block_dim)
    with _FFI_REGISTRY_LOCK:
        found = _FFI_DIFF_KERNEL_REGISTRY.get(key)
    if found is None:
        found = _DiffKernel(kernel, num_outputs, vmap_method, launch_dims, block_dim,
                            module_preload_mode, has_side_effect)
        with _FFI_REGISTRY_LOCK:
            found = _FFI_DIFF_KERNEL_REGISTRY.setdefault(key, found)
    return found


# ---------------------------------------------------------------------------------------------
# jax_callable

class _CallDesc:
    __slots__ = ("statics",)

    def __init__(self, statics):
        self.statics = statics


def _annotations(func):
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        raise TypeError(f"jax_callable() needs a Python function, got {func!r}") from None
    ann = dict(getattr(func, "__annotations__", {}) or {})
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    out = []
    for p in params:
        t = ann.get(p.name, p.annotation)
        if t is inspect.Parameter.empty:
            raise RuntimeError(f"Incomplete argument annotations on function "
                               f"{getattr(func, '__qualname__', func)}")
        if isinstance(t, str):
            hints = typing.get_type_hints(func)
            t = hints.get(p.name, t)
        if getattr(t, "_weft_array_", False):  # wp.array(dtype=...): an annotation instance
            t = t._weft_array_type_
        if not isinstance(t, T.ArrayType) and t is not typing.Any:
            try:
                t = T.type_to_warp(t)
            except Exception:  # noqa: BLE001 - FfiArg reports it
                pass
        out.append((p.name, t))
    ret = ann.get("return", None)
    if ret is not None and ret is not type(None):
        raise TypeError("Function must not return a value")
    return out


class FfiCallable:
    """``wp.jax_callable(func)`` (see :func:`jax_callable`)."""

    def __init__(self, func, num_outputs, graph_mode, vmap_method, output_dims,
                 in_out_argnames, stage_in_argnames, stage_out_argnames, graph_cache_max,
                 module_preload_mode, has_side_effect=False):
        self.func = func
        self.num_outputs = num_outputs
        self.graph_mode = graph_mode
        self.vmap_method = vmap_method
        self.output_dims = output_dims
        self.module_preload_mode = module_preload_mode
        self.has_side_effect = has_side_effect
        self._graph_cache_max = graph_cache_max
        self.captures = collections.OrderedDict()  # CUDA graphs (none on the CPU)
        self.stage_in_argnames = set(stage_in_argnames) if stage_in_argnames else None
        self.stage_out_argnames = set(stage_out_argnames) if stage_out_argnames else None
        declared = _annotations(func)
        names = [n for n, _ in declared]
        self.num_inputs, in_out = _in_out_layout(names, num_outputs, in_out_argnames,
                                                 "kernel")
        self.num_in_out = len(in_out)
        self.args = [FfiArg(n, t, n in in_out) for n, t in declared]
        for a in self.args:
            if a.generic:
                raise TypeError(f"jax_callable(): argument '{a.name}' needs a concrete type "
                                "annotation")
        self.input_args = self.args[:self.num_inputs]
        self.output_args = self.args[self.num_inputs:]
        for a in self.output_args:
            if not a.is_array:
                raise TypeError("All output arguments must be arrays")
        _register(self, func)

    @property
    def graph_cache_max(self):
        return self._graph_cache_max

    @graph_cache_max.setter
    def graph_cache_max(self, value):
        self._graph_cache_max = value
        while value is not None and len(self.captures) > value:
            self.captures.popitem(last=False)

    @property
    def graph_cache_size(self):
        return len(self.captures)

    def __call__(self, *args, output_dims=None, vmap_method=None):
        jax = _get_jax()
        if len(args) != self.num_inputs:
            names = ", ".join(a.name for a in self.input_args)
            s = "" if self.num_inputs == 1 else "s"
            raise ValueError(f"Expected {self.num_inputs} input{s} ({names}), but got "
                             f"{len(args)}")
        vmap_method = self.vmap_method if vmap_method is None else vmap_method
        output_dims = self.output_dims if output_dims is None else output_dims
        arrays, statics = [], []
        for a, v in zip(self.input_args, args):
            if a.is_array:
                _check_array(a, v)
                arrays.append(v)
                statics.append(None)
            else:
                statics.append(_static_value(a, v))
        meta = get_jax_output_type_metadata(arrays)
        out_types = [get_jax_output_type(a, v.shape, meta)
                     for a, v in zip(self.input_args, args) if a.is_array and a.in_out]
        if isinstance(output_dims, dict):
            for a in self.output_args:
                d = output_dims.get(a.name)
                if d is None:
                    raise ValueError(f"Missing output dimensions for argument '{a.name}'")
                out_types.append(get_jax_output_type(a, d, meta))
        else:
            if output_dims is None:
                if self.first_array_arg is None:
                    raise ValueError("Unable to determine output dimensions")
                output_dims = get_warp_shape(self.input_args[self.first_array_arg],
                                             args[self.first_array_arg].shape)
            for a in self.output_args:
                out_types.append(get_jax_output_type(a, output_dims, meta))
        call = jax.ffi.ffi_call(self.name, out_types, vmap_method=vmap_method,
                                input_output_aliases=self.input_output_aliases,
                                has_side_effect=self.has_side_effect)
        statics = tuple(statics)
        i = self._descs.intern(statics, lambda: _CallDesc(statics))
        return call(*arrays, desc=np.int64(i))

    def _handle(self, frame):
        with _FFI_CALLBACK_LOCK:
            desc, _ = _desc_of(frame, self._descs)
            ins = X.buffers(frame.contents.args)
            rets = X.buffers(frame.contents.rets)
            n_arr = sum(1 for a in self.input_args if a.is_array)
            if len(ins) != n_arr or len(rets) != self.num_outputs:
                raise X.FfiError(f"Expected {n_arr} JAX FFI input buffers and "
                                 f"{self.num_outputs} output buffers, got {len(ins)} and "
                                 f"{len(rets)}")
            if self.graph_mode not in (JaxCallableGraphMode.NONE, JaxCallableGraphMode.JAX):
                raise X.FfiError(f"JaxCallableGraphMode.{self.graph_mode.name} is not supported "
                                 "for JAX CPU FFI calls (it captures CUDA graphs)")
            _check_cpu()
            batch = [None]
            values = _input_values(self.input_args, desc.statics, ins, batch) + \
                _zeroed_outputs(self.output_args, rets[self.num_in_out:], batch)
            with wp.ScopedDevice("cpu"):
                self.func(*values)


def jax_callable(func, num_outputs: int = 1,
                 graph_mode: JaxCallableGraphMode = JaxCallableGraphMode.JAX,
                 vmap_method: str | None = "broadcast_all", output_dims=None,
                 in_out_argnames=None, stage_in_argnames=None, stage_out_argnames=None,
                 graph_cache_max: int | None = JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX,
                 module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
                 has_side_effect: bool = False):
    """A JAX function calling ``func``, a Python function annotated like a kernel (arrays and
    scalars; the last ``num_outputs`` parameters are outputs, allocated by XLA and zeroed)
    that launches weft kernels (Warp 1.19's ``wp.jax_callable``). The arrays it receives are
    weft arrays over XLA's buffers (no copy). ``output_dims`` (default: the shape of the first
    array input; a dict by name) may be given per call, as ``vmap_method``. Graph modes other
    than ``NONE`` and ``JAX`` need CUDA; staging arguments are accepted and unused on the
    CPU. Kernels compile on their first launch."""
    check_jax_version()
    graph_mode = JaxCallableGraphMode(graph_mode)
    ho = _hashable(output_dims)
    key = (func, num_outputs, graph_mode, vmap_method, ho,
           tuple(in_out_argnames) if in_out_argnames else None,
           tuple(stage_in_argnames) if stage_in_argnames else None,
           tuple(stage_out_argnames) if stage_out_argnames else None,
           module_preload_mode, has_side_effect)
    with _FFI_REGISTRY_LOCK:
        found = _FFI_CALLABLE_REGISTRY.get(key)
    if found is None:
        found = FfiCallable(func, num_outputs, graph_mode, vmap_method, output_dims,
                            key[5], key[6], key[7], graph_cache_max, module_preload_mode,
                            has_side_effect)
        with _FFI_REGISTRY_LOCK:
            found = _FFI_CALLABLE_REGISTRY.setdefault(key, found)
    else:
        found.graph_cache_max = graph_cache_max
    return found


def clear_jax_callable_graph_cache(callable=None):  # noqa: A002 - Warp's name
    """Clear the CUDA graph cache of one ``jax_callable`` (or all of them); weft captures none
    on the CPU."""
    if callable is not None:
        callable.captures.clear()
        return
    with _FFI_REGISTRY_LOCK:
        for c in _FFI_CALLABLE_REGISTRY.values():
            c.captures.clear()


# ---------------------------------------------------------------------------------------------
# plain callbacks

class FfiBuffer:
    """An XLA buffer handed to a ``register_ffi_callback`` function: ``dtype`` (numpy),
    ``shape``, ``data`` (address), and ``numpy()`` (a view, no copy). As a weft kernel argument
    it is an array of its scalar type (``__array_interface__``)."""

    def __init__(self, buf):
        self.dtype = np.dtype(X.DTYPES.get(buf.dtype, np.uint8))
        self.shape = X.buffer_shape(buf)
        self.data = buf.data
        self._buf = buf

    def numpy(self):
        return X.buffer_view(self._buf)

    @property
    def __array_interface__(self):
        return self.numpy().__array_interface__


class ExecutionContext:
    """The call's context: ``stage`` and ``stream`` (None on the CPU)."""

    def __init__(self, frame):
        self.stage = frame.stage
        self.stream = None


def register_ffi_callback(name: str, func, graph_compatible: bool = True) -> None:
    """Register ``func(inputs, outputs, attrs, ctx)`` as XLA FFI target ``name`` (CPU), to be
    called with ``jax.ffi.ffi_call(name, ...)``: ``inputs`` and ``outputs`` are
    :class:`FfiBuffer` lists, ``attrs`` the call's attributes. Exceptions fail the JAX call."""
    check_jax_version()

    def run(frame):
        with _FFI_CALLBACK_LOCK:
            attrs = X.decode_attrs(frame)
            ins = [FfiBuffer(b) for b in X.buffers(frame.contents.args)]
            outs = [FfiBuffer(b) for b in X.buffers(frame.contents.rets)]
            func(ins, outs, attrs, ExecutionContext(frame.contents))

    _target(name, run)
