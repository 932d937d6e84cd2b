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

import operator

import numpy as np

import weft as wp  # module attributes are looked up at call time (tests patch them)

from ...core import types as T
from . import get_jax_device  # noqa: F401  (tests patch ffi.get_jax_device)
from . import xla_ffi as X
from .ffi_args import (FfiArg, _as_dims, _check_array, _check_shapes, _dtype_of_value, _hashable,
                       _input_values, _is_generic, _make_static, _same_type, _scratch,
                       _static_value, _wrap, _zeroed_outputs, get_jax_output_type,
                       get_jax_output_type_metadata, get_warp_shape)
from .ffi_callable import (JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX, ExecutionContext, FfiBuffer,
                           FfiCallable, clear_jax_callable_graph_cache, jax_callable,
                           register_ffi_callback)
from .ffi_modes import (GraphMode, JaxCallableGraphMode, JaxModulePreloadMode, ModulePreloadMode,
                        _get_ffi_block_dim, _KernelLoad, _load_ffi_module)
from .ffi_primitive import _SECOND_ORDER, _prims
from .ffi_targets import (_FFI_CALLABLE_REGISTRY, _FFI_CALLBACK_LOCK, _FFI_CALLBACK_REGISTRY,
                          _FFI_DIFF_KERNEL_REGISTRY, _FFI_KERNEL_REGISTRY, _FFI_REGISTRY_LOCK,
                          _check_cpu, _desc_of, _get_jax, _in_out_layout, _register,
                          check_jax_version, generate_unique_name)

__all__ = ["jax_kernel", "jax_callable", "JaxCallableGraphMode", "JaxModulePreloadMode",
           "clear_jax_callable_graph_cache", "register_ffi_callback"]

_MISSING = object()

_TID_MAX_EXTENT = 2 ** 31 - 1  # Warp's wp.tid() is a 32-bit index

# names of Warp's ``warp._src.jax.ffi`` that moved to the modules above, importable from here
# (Warp's tests and programs reach them there); those this module's code does not use
_MOVED = (JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX, ExecutionContext, FfiBuffer, FfiCallable,
          GraphMode, ModulePreloadMode, _get_ffi_block_dim, _FFI_CALLABLE_REGISTRY,
          _FFI_CALLBACK_REGISTRY, generate_unique_name)


# ---------------------------------------------------------------------------------------------
# module preloading (Warp's semantics; weft compiles one kernel, not a module)
# (this function stays in this module: Warp's tests patch ffi.get_jax_device and ffi._get_jax
# and call it; the helpers are in ffi_modes)

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


# ---------------------------------------------------------------------------------------------
# launch dimensions (trace-time checks; the handler checks its launch with the same function)
# (in this module: Warp's tests patch ffi._build_kernel_launch_bounds and trace a jax_kernel, so
# it, its callers and the kernel wrappers that call them, below, stay here)

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


def _validate_ffi_kernel_launch_bounds(dim, kernel, block_dim=None, types=None):
    """Trace-time checks of ``dim`` for every target the call may run on."""
    cuda_block_dim = 256 if block_dim is None else block_dim
    _build_kernel_launch_bounds(dim, kernel, cuda_block_dim, types)
    if any(e > _TID_MAX_EXTENT for e in dim) and cuda_block_dim != 1:
        _build_kernel_launch_bounds(dim, kernel, 1, types)


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
