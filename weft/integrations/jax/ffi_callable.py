"""``wp.jax_callable`` (a Python function that launches kernels, called by XLA) and
``wp.register_ffi_callback`` (a plain Python FFI target)."""
from __future__ import annotations

import collections
import inspect
import typing

import numpy as np

import weft as wp  # module attributes are looked up at call time (tests patch them)

from ...core import types as T
from . import xla_ffi as X
from .ffi_args import (FfiArg, _check_array, _hashable, _input_values, _static_value,
                       _zeroed_outputs, get_jax_output_type, get_jax_output_type_metadata,
                       get_warp_shape)
from .ffi_modes import JaxCallableGraphMode, JaxModulePreloadMode
from .ffi_targets import (_FFI_CALLABLE_REGISTRY, _FFI_CALLBACK_LOCK, _FFI_REGISTRY_LOCK,
                          _check_cpu, _desc_of, _get_jax, _in_out_layout, _register, _target,
                          check_jax_version)

JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX = 32


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
