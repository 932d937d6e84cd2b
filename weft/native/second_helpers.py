"""Helpers of second-order generated code (:mod:`weft.transpiler.second_order`), as ``_w2``.

``tzero(x)``: a zero with the structure and types of ``x`` (a number or nested tuples of them);
``like(x, c)``: the Python constant ``c`` as a number of ``x``'s type. Both are plain Python
(for ``NUMBA_DISABLE_JIT``) and overloaded for Numba, where only the type of ``x`` matters.
"""
from __future__ import annotations

from numba import types
from numba.extending import overload


def tzero(x):
    if isinstance(x, tuple):
        return tuple(tzero(v) for v in x)
    return type(x)(0)


def like(x, c):
    return type(x)(c)


def _number(t):
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


@overload(tzero, jit_options={"nogil": True})
def _tzero(x):
    if isinstance(x, types.BaseTuple):
        n = len(x)
        src = "def impl(x):\n    return (" + "".join(f"tzero(x[{k}]), " for k in range(n)) + ")\n"
        ns = {"tzero": tzero}
        exec(src, ns)  # noqa: S102 - a fixed template
        return ns["impl"]
    if isinstance(x, types.Boolean):
        return lambda x: False
    if _number(x):
        ty = x

        def impl(x):
            return ty(0)
        return impl
    return None


@overload(like, jit_options={"nogil": True})
def _like(x, c):
    if isinstance(x, (types.Float, types.Integer)):
        ty = x

        def impl(x, c):
            return ty(c)
        return impl
    return None
