"""The ``wp`` the stdlib's kernel-language builtins are written against::

    from weft.stdlib import kernel_scope as wp

    @wp.func
    def _helper(q):
        return wp.quaternion(-q[0], -q[1], -q[2], q[3])

It offers what a kernel can name (the types, every declared builtin and special form, the
kernel-language builtins, ``func`` and its rule decorators) without importing the runtime, so
the stdlib's declarations stay below it. Names are looked up when a kernel using them is
compiled, so modules of the stdlib can refer to one another's builtins.
"""
from ..core import constants as _constants
from ..core import types as _types
from .funcs import (BUILTIN_FUNCS, builtin_func, func, func_grad, func_replay, func_tangent)  # noqa: F401
from .registry import NAMESPACE


def __getattr__(name):
    if hasattr(_types, name):
        return getattr(_types, name)
    if name in _constants.__all__:
        return getattr(_constants, name)
    if name in _types.VECTOR_ALIASES:
        return _types.VECTOR_ALIASES[name]
    decl = NAMESPACE.get(name) or BUILTIN_FUNCS.get(name)
    if decl is None:
        raise AttributeError(f"no kernel name '{name}'")
    return decl


def array(dtype=_types.float32, ndim=1):
    """``wp.array(dtype=..., ndim=...)`` in an annotation: the array type."""
    return _types.ArrayType(_types.as_value_type(dtype), ndim)
