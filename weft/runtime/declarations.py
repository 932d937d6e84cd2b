"""Warp's Python-scope declarations about kernels: ``wp.overload`` and ``wp.func_native``.

``wp.overload`` declares concrete argument types for a generic kernel (one annotated with
``typing.Any``), in Warp's two forms::

    wp.overload(scale, {"a": wp.array(dtype=wp.float64)})      # call form: returns the kernel

    @wp.overload
    def scale(a: wp.array(dtype=wp.float16), s: wp.float16):   # decorator form: a stub
        ...

In Warp an overload compiles that instance ahead of launches. weft specializes a kernel for the
types it is launched with, so declaring an overload checks it and records it
(:func:`declared_overloads`, for a later compile-ahead mode) and returns the generic kernel;
launching generic kernels is the compiler's part (typing.Any in kernels).

``wp.func_native(snippet, adj_snippet=...)`` declares a function written as C++/CUDA source.
weft compiles Python, not C++: the declaration is accepted so a module that has one still
imports, and the function raises NotImplementedError when called (a kernel that calls it fails
to compile with a KernelError naming the snippet). The snippets whose meaning weft can supply
work: ``WP_TILE_SYNC();``, the tile barrier (MuJoCo Warp's), is nothing to wait for on the CPU.
"""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
import types
import typing

from ..core import types as T
from .kernel import Kernel, _overloads, declared_overloads  # noqa: F401  (declared here)


def _is_generic(annotation):
    if annotation is typing.Any:
        return True
    at = annotation if isinstance(annotation, T.ArrayType) else \
        getattr(annotation, "_weft_array_type_", None)
    if at is not None:
        return at.dtype is typing.Any
    return bool(getattr(annotation, "_wp_generic_", False))


def _params(kernel):
    try:
        sig = inspect.signature(kernel.func, eval_str=True)  # postponed annotations evaluated
    except Exception:  # noqa: BLE001 - an annotation that cannot be evaluated here stays text
        sig = inspect.signature(kernel.func)
    return [(name, p.annotation) for name, p in sig.parameters.items()]


def is_generic(kernel):
    """Whether ``kernel`` has a parameter annotated with ``typing.Any`` (or an array or vector
    type with ``Any`` in it)."""
    return any(_is_generic(a) for _, a in _params(kernel))


def overload(kernel, arg_types=None):
    """Declare an instance of generic ``kernel`` with ``arg_types`` (a list of every parameter's
    type, or a dict of the generic parameters' types); or, used as a decorator on a stub whose
    body is ``...``/``pass``, declare the instance of the same-named kernel of its module given by
    the stub's annotations. Returns the generic kernel."""
    if isinstance(kernel, Kernel):
        if not is_generic(kernel):
            raise RuntimeError(f"Only generic kernels can be overloaded.  Kernel {kernel.key} is "
                               "not generic")
        params = _params(kernel)
        if isinstance(arg_types, list):
            if len(arg_types) != len(params):
                raise RuntimeError(f"Kernel {kernel.key} takes {len(params)} arguments, the "
                                   f"overload gives {len(arg_types)}")
            arg_list = list(arg_types)
        elif isinstance(arg_types, dict):
            names = [n for n, _ in params]
            arg_list = [a for _, a in params]
            for name, t in arg_types.items():
                if name not in names:
                    raise RuntimeError(f"Invalid argument name '{name}' in overload of kernel "
                                       f"{kernel.key}")
                arg_list[names.index(name)] = t
        elif arg_types is None:
            arg_list = []
        else:
            raise TypeError("Kernel overload types must be given in a list or dict")
        _overloads.setdefault(kernel, []).append(arg_list)
        return kernel
    if isinstance(kernel, types.FunctionType):
        # the kernel the stub names, where the stub is written (a function's locals included)
        caller = sys._getframe(1)
        found = caller.f_locals.get(kernel.__name__, caller.f_globals.get(kernel.__name__))
        return _overload_stub(kernel, found)
    raise RuntimeError("wp.overload() needs a kernel, or decorates a kernel overload stub")


def _declared_kernel(fn):
    """The kernel declared in ``fn``'s module from a function of the same qualified name
    (the stub may have replaced the kernel's name in the module, as in Warp's tests)."""
    from ..stdlib.funcs import DECLARED
    found = [k for k in DECLARED.get(fn.__module__, ()) if isinstance(k, Kernel)
             and k.func.__qualname__ == fn.__qualname__]
    if len({k.key for k in found}) > 1:
        raise RuntimeError(f"Ambiguous kernel lookup for '{fn.__qualname__}' in module "
                           f"{fn.__module__}: kernels " + ", ".join(sorted(k.key for k in found))
                           + " come from it; use the call form wp.overload(kernel, arg_types)")
    return found[-1] if found else None


def _overload_stub(fn, kernel):
    if not isinstance(kernel, Kernel):
        kernel = _declared_kernel(fn)
    if not isinstance(kernel, Kernel):
        raise RuntimeError(f"Failed to find a kernel named '{fn.__name__}' in module "
                           f"{fn.__module__}")
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    if body is None:
        raise RuntimeError(f"Kernel overload '{fn.__name__}' must begin with a function "
                           "definition")
    for node in body:
        if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(
                node.value, ast.Constant) and (node.value.value is ... or
                                               isinstance(node.value.value, str))):
            continue
        raise RuntimeError("Illegal statement in kernel overload definition.  Only pass, "
                           "ellipsis (...), comments, or docstrings are allowed")
    sig = inspect.signature(fn)
    if sig.return_annotation not in (inspect.Signature.empty, None, type(None)):
        raise TypeError("Return annotations are not allowed on @wp.overload stubs; omit the "
                        "return annotation or use `-> None`.")
    if any(p.annotation is inspect.Parameter.empty for p in sig.parameters.values()):
        raise RuntimeError(f"Incomplete argument annotations on kernel overload {fn.__name__}")
    return overload(kernel, [p.annotation for p in sig.parameters.values()])


class NativeFunction:
    """A function declared with :func:`func_native` (C++/CUDA source, which weft does not
    compile)."""

    def __init__(self, func, snippet, adj_snippet, replay_snippet):
        self.func = func
        functools.update_wrapper(self, func, updated=())   # its name, doc and module
        self.snippet = snippet
        self.adj_snippet = adj_snippet
        self.replay_snippet = replay_snippet

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"'{self.__name__}' is a native (C++/CUDA) snippet declared "
                                  "with wp.func_native; weft cannot run native snippets")


def func_native(snippet, adj_snippet=None, replay_snippet=None):
    """Warp's decorator for a function written as a C++/CUDA snippet (see the module
    docstring: accepted, not runnable in weft), except the snippets whose meaning weft supplies:
    ``WP_TILE_SYNC();`` (the tile barrier) is callable in kernels."""
    def deco(f):
        from ..stdlib.effects import native_snippet_form
        form = native_snippet_form(f.__name__, snippet)
        if form is not None and adj_snippet is None and replay_snippet is None:
            return form
        return NativeFunction(f, snippet, adj_snippet, replay_snippet)
    return deco
