"""Builtins called at Python scope: ``q = wp.quat_rpy(0.1, 0.2, 0.3)`` in a program.

A builtin, special form or stdlib func called outside a kernel runs the forward code weft
generates for it, as plain Python: the call becomes a small func taking the call's weft values
as parameters (floats, numpy scalars, vectors, matrices, ...) and its other arguments (Python
ints, types, strings) as constants; it is lowered and generated once per callee, argument
types and constants, and then called. Results come back as weft values (``wp.vec3``, numpy
scalars). User funcs run their own Python code, as in Warp.
"""
from __future__ import annotations

import itertools
import linecache

import numpy as np

from ..core import types as T
from ..core.errors import KernelError

_CACHE = {}
_COUNTER = itertools.count()


def _param_type(value):
    """The weft type of a value passed as a parameter, or None (then it is a constant)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return T.float32
    if isinstance(value, T.Composite):
        return type(value)
    if isinstance(value, np.generic) and not isinstance(value, np.bool_):
        return T.as_scalar_type(value.dtype)
    return None


def _key(value):
    t = _param_type(value)
    if t is not None:
        return ("param", t)
    try:
        hash(value)
        return ("const", type(value), value)
    except TypeError:
        return ("const", type(value), id(value))


def call(callee, args, kwargs):
    key = (id(callee), tuple(_key(a) for a in args),
           tuple((k, _key(v)) for k, v in sorted(kwargs.items())))
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = _build(callee, args, kwargs)
    fn, param_positions, ret_type = hit
    values = [_as_kernel_value(v) for v in _params(args, kwargs, param_positions)]
    return _as_weft_value(fn(*values), ret_type)


def _params(args, kwargs, positions):
    return [args[p] if isinstance(p, int) else kwargs[p] for p in positions]


def _as_kernel_value(v):
    from .args import kernel_scalar, kernel_tuple
    if isinstance(v, T.Composite):
        return kernel_tuple(np.asarray(v).reshape(-1))
    if isinstance(v, float):
        return np.float32(v)
    if isinstance(v, np.generic):
        return kernel_scalar(T.as_scalar_type(v.dtype), v)
    return v


def _as_weft_value(v, t):
    if t is None:
        return None
    if isinstance(t, T.TupleType):
        return tuple(_as_weft_value(x, tt) for x, tt in zip(v, t.types))
    if T.is_composite(t):
        return t(*[T.scalar_of(t)._np_(x) for x in v])
    if T.is_scalar(t):
        return T.scalar_of(t)._np_(v)
    return v


def _build(callee, args, kwargs):
    """Generate the plain-Python forward code of ``callee`` applied to these arguments (the
    host pipeline, ``weft.transpiler.pipeline.HOST``)."""
    n = next(_COUNTER)
    scope = {"_callee": callee}
    params, types, positions, actual = [], [], [], []
    # each argument: a parameter of the generated function (a typed value) or a constant in its
    # scope (anything else), passed positionally or by keyword
    slots = [(k, a, f"p{k}", f"c{k}", "") for k, a in enumerate(args)] + \
        [(name, v, f"k_{name}", f"kc_{name}", f"{name}=") for name, v in sorted(kwargs.items())]
    for key, v, param, const, kw in slots:
        t = _param_type(v)
        if t is not None:
            params.append(param)
            types.append(t)
            positions.append(key)
            actual.append(kw + param)
        else:
            scope[const] = v
            actual.append(kw + const)
    disk = _disk_key(callee, slots)
    hit = _load(disk)
    if hit is not None:
        source, root, ret_type = hit
        return _run(source, root, n), positions, ret_type
    from ..stdlib.funcs import Function
    from ..transpiler import pipeline
    from ..transpiler.state import CompileOptions, CompileState
    filename = f"<weft host call {n}: {getattr(callee, '__name__', callee)}>"
    text = f"def _weft_host({', '.join(params)}):\n    return _callee({', '.join(actual)})\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), scope)  # noqa: S102 - weft's own text
    state = CompileState(roots=[], options=CompileOptions(("host",)),
                         host_call=(Function(scope["_weft_host"]), types))
    try:
        state = pipeline.run(state, "host")
    except KernelError as exc:
        raise TypeError(f"{getattr(callee, '__name__', callee)}() at Python scope: "
                        f"{exc.message}") from None
    fn = _run(state.source, state.host_root.name, n)
    _save(disk, state.source, state.host_root.name, state.host_root.ret_type)  # (once it ran)
    return fn, positions, state.host_root.ret_type


def _run(source, root, n):
    """Function ``root`` of the generated host module ``source`` (the ``n``-th built)."""
    module = {"__name__": f"weft_host_{n}"}
    exec(compile(source, f"<weft host module {n}>", "exec"), module)  # noqa: S102
    return module[root]


# -- generated host code kept in weft's cache ---------------------------------------------------
#
# Building a builtin's host function runs the transpiler (importing it the first time): about
# 25 ms per builtin and argument types, in every process. Warp's `example_mesh_intersect` calls
# `wp.normalize` and `wp.quat_from_axis_angle` at Python scope, so a warm run of it paid 40-50
# ms for what an earlier run had generated (``docs/performance.md``, stop 74). The generated
# text is plain Python and depends only on the callee, its parameters' types, its constants and
# weft's code, so it is kept in a sealed file of weft's cache under a hash of those.

def _identity(callee):
    """A name for ``callee`` stable across processes (a builtin, a special form, one of weft's
    own funcs), or None (not kept)."""
    from ..stdlib.funcs import Function
    from ..stdlib.registry import Builtin, SpecialForm
    if isinstance(callee, (Builtin, SpecialForm)):
        return f"{type(callee).__name__}:{callee.name}"
    if isinstance(callee, Function) and str(callee.__module__).startswith("weft."):
        return f"func:{callee.__module__}.{callee.__qualname__}"
    return None


def _constant(value):
    """A stable text of a constant argument, or None (not kept)."""
    if value is None or type(value) in (bool, int, str):
        return repr(value)
    if isinstance(value, type) and str(value.__module__).startswith(("weft.", "numpy")):
        return f"type:{value.__module__}.{value.__qualname__}"
    return None


def _disk_key(callee, slots):
    """The cache file's name for this build, or None when it is not kept."""
    ident = _identity(callee)
    if ident is None:
        return None
    parts = [ident]
    for key, v, *_ in slots:
        t = _param_type(v)
        text = f"param {T.type_name(t)} {t.__module__}.{t.__qualname__}" if t is not None \
            else _constant(v)
        if text is None:
            return None
        parts.append(f"{key}={text}")
    import hashlib

    from .cache import _weft_code_hash
    from ..core.version import __version__
    parts.append(f"weft {__version__} {_weft_code_hash()}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _path(disk):
    import os

    from ..core.diskcache import cache_root
    root = cache_root()
    return None if disk is None or root is None else os.path.join(root, "host", disk + ".bin")


def _load(disk):
    """``(source, root name, return type)`` kept for ``disk``, or None."""
    import pickle

    from ..core.diskcache import read_sealed
    path = _path(disk)
    payload = read_sealed(path) if path is not None else None
    try:
        return pickle.loads(payload) if payload is not None else None
    except Exception:  # noqa: BLE001 - unreadable (a type gone): built again
        return None


def _save(disk, source, root, ret_type):
    import pickle

    from ..core.diskcache import writable, write_sealed
    path = _path(disk)
    if path is None or not writable():
        return
    try:
        payload = pickle.dumps((source, root, ret_type), protocol=-1)
        write_sealed(path, payload)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass  # (not kept: built again next time)


def install():
    """Make weft's declarations callable at Python scope through :func:`call`."""
    from ..stdlib import funcs as lang
    from ..stdlib import registry
    from ..core import values
    registry.HOST_CALL = call
    lang.HOST_CALL = call
    values.HOST_PRODUCT = product


_MUL = []


def product(a, b):
    """``a * b`` of two weft values by the kernel language's ``*`` (``weft.core.values``)."""
    if not _MUL:
        from ..stdlib.funcs import Function
        from . import host_ops
        _MUL.append(Function(host_ops.mul))
    try:
        return call(_MUL[0], (a, b), {})
    except TypeError:  # Warp's error for operands no signature of mul takes
        raise RuntimeError(f"Couldn't find a function 'mul' compatible with the arguments "
                           f"'{T.type_name(type(a))}, {T.type_name(type(b))}'") from None
