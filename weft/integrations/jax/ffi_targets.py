"""What the FFI wrappers of :mod:`.ffi` share: the JAX import and version check, the
registries and their locks, and the FFI targets (registration with XLA, unique names, the
per-call descriptor table, the in/out layout of the parameters)."""
from __future__ import annotations

import collections
import ctypes
import threading

import weft as wp  # module attributes are looked up at call time (tests patch them)

from . import xla_ffi as X

_FFI_REGISTRY_LOCK = threading.Lock()
_FFI_CALLBACK_LOCK = threading.RLock()
_FFI_KERNEL_REGISTRY = {}
_FFI_DIFF_KERNEL_REGISTRY = {}
_FFI_CALLABLE_REGISTRY = {}
_FFI_CALLBACK_REGISTRY = {}


def _get_jax():
    import jax  # noqa: PLC0415
    return jax


def check_jax_version():
    jax = _get_jax()
    if jax.__version_info__ < (0, 5, 0):
        raise RuntimeError("weft's jax_kernel() and jax_callable() need JAX 0.5.0 or newer, found "
                           f"{jax.__version__}")


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
