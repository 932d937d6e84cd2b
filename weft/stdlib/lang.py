"""Builtins of the language itself: ``wp.tid()``, tuples, array shapes, ``wp.adjoint``."""
from __future__ import annotations

import ast

from ..core import types as T
from ..core.errors import KernelSyntaxError
from . import ir
from .exprs import Ex, attr_path, tup
from .registry import builtin, lookup, special_form


@builtin("tid", ["tid() -> int (one name) or a tuple (several names)"],
         lambda ts, a: T.int32, differentiable=False, public=False)
class tid:
    def primal(axis):
        # one name: the first launch index, as Warp (the thread index of a 1-D launch)
        return Ex(ast.Name("_first" if axis is None else f"_i{axis}", ast.Load()), T.int32)


def _assign_tid(ctx, target, call):
    """``i = wp.tid()`` (the first launch index, as Warp) or ``i, j = wp.tid()`` (one index
    per launch dimension)."""
    if isinstance(target, ast.Name):
        ctx.bind(target.id, _tid_value(ctx, call), target)
        return
    if ctx.kind != "kernel":
        raise ctx.fail(call, "wp.tid() can only be used in kernels", KernelSyntaxError)
    if call.args or call.keywords:
        raise ctx.fail(call, "wp.tid() takes no arguments", KernelSyntaxError)
    if isinstance(target, ast.Tuple) and 1 <= len(target.elts) <= 4:
        ctx.tid_dims = len(target.elts)
        for axis, t in enumerate(target.elts):
            v = ctx.emit(ir.Prim(lookup("tid"), [], {"axis": axis}), T.int32, call)
            ctx.tid_vars[v] = axis
            ctx.assign(t, v, call)
        return
    raise ctx.fail(target, "wp.tid() unpacks into 1 to 4 names", KernelSyntaxError)


def _tid_value(ctx, call):
    """``wp.tid()`` inside an expression (``a[wp.tid()] = v``): the first launch index."""
    if ctx.kind != "kernel":
        raise ctx.fail(call, "wp.tid() can only be used in kernels", KernelSyntaxError)
    if call.args or call.keywords:
        raise ctx.fail(call, "wp.tid() takes no arguments", KernelSyntaxError)
    v = ctx.emit(ir.Prim(lookup("tid"), [], {"axis": None}), T.int32, call)
    ctx.tid_dims = max(ctx.tid_dims, 1)
    ctx.tid_vars[v] = None
    return v


@special_form("tid", "The launch index of the calling thread (in kernels only).",
              lower_assign=_assign_tid)
def tid_form(ctx, node):
    return _tid_value(ctx, node)


# ``wp.adjoint[x]`` in a ``@wp.func_grad`` rule: the adjoint of input ``x`` (the specialiser
# rewrites it to the rule's local ``adj_x`` before lowering, finding this object by value)
adjoint = special_form("adjoint", "wp.adjoint[x]: the adjoint of input x, in func_grad rules")(
    None)


@builtin("array_shape", ["a.shape"], lambda ts, a=None: T.TupleType((T.int32,) * ts[0].ndim),
         differentiable=False, public=False)
class array_shape:
    def primal(a):
        return Ex(ast.Attribute(a.node, "shape", ast.Load()),
                  T.TupleType((T.int32,) * a.type.ndim))


@builtin("null_array", ["(an unset array member of a struct, passed to a func)"],
         lambda ts, type=None: type, differentiable=False, public=False)
class null_array:
    def primal(type):
        """Warp's null array, as a kernel receives ``None`` for an array: an empty array of
        the type (no element can be read or written; in-bounds checks see its zero extents)."""
        st = T.scalar_of(type.dtype)
        dt = "uint16" if st is T.float16 else "bool_" if st is T.bool else st.__name__
        shape = [ast.Constant(0)] * type.ndim + [ast.Constant(d)
                                                 for d in T.element_shape(type.dtype)]
        return Ex(ast.Call(attr_path("np.empty"), [ast.Tuple(shape, ast.Load()),
                                                   attr_path(f"np.{dt}")], []), type)


@builtin("make_slice", ["a[start:stop:step] (in an array subscript)"],
         lambda ts, a=None: T.SliceType(), differentiable=False, public=False)
class make_slice:
    def primal(*parts, present):
        """``slice(start, stop, step)`` with None for the parts not written."""
        given = iter(parts)
        args = [next(given).node if p else ast.Constant(None) for p in present]
        return Ex(ast.Call(ast.Name("slice", ast.Load()), args, []), T.SliceType())


@builtin("make_tuple", ["(a, b, ...)"], lambda ts, a=None: T.TupleType(tuple(ts)),
         public=False)
class make_tuple:
    def primal(*items):
        return tup(list(items), T.TupleType(tuple(i.type for i in items)))

    def adjoint(*items, ret, adj):
        adj = adj.atom()
        return [adj.comp(i) if T.is_differentiable(it.type) else None
                for i, it in enumerate(items)]

    def tangent(*args, ret):
        n = len(args) // 2
        items, tans = args[:n], args[n:]
        from .exprs import zero
        return tup([t if t is not None else zero(i.type) for i, t in zip(items, tans)],
                   T.TupleType(tuple(i.type for i in items)))


def _tuple_get_resolve(types, attrs):
    t = types[0]
    if isinstance(t, T.TupleType) and 0 <= attrs["index"] < len(t.types):
        return t.types[attrs["index"]]
    return None


@builtin("tuple_get", ["t[i] (constant i)"], _tuple_get_resolve, public=False)
class tuple_get:
    def primal(t, index):
        return t.comp(index)

    def adjoint(t, ret, adj, index):
        from .exprs import zero
        items = [adj if i == index else zero(x) for i, x in enumerate(t.type.types)]
        return [tup(items, t.type)]

    def tangent(t, tt, ret, index):
        return None if tt is None else tt.comp(index)


@builtin("alloc_local", ["alloc_local(dtype, size, value=0) -> a per-thread buffer"],
         lambda ts, a: None, differentiable=False, public=False)
class alloc_local:
    """Emitted by the generators themselves (a buffer is not an expression)."""

    def primal(value):
        raise NotImplementedError


# ``wp.static(expr)``: ``expr`` evaluated in Python when the kernel is compiled, with the
# kernel's globals and the variables of loops unrolled around it (Warp's wp.static); the
# lowering context evaluates it (ctx.static_call: weft.transpiler.statics)

@special_form("static", "static(expr): expr evaluated in Python when the kernel is compiled",
              host=lambda expr: expr)
def static(ctx, node):
    return ctx.static_call(node)


class GradOf:
    """``wp.grad(f)``: called in a kernel or func with ``f``'s inputs, the derivatives of its
    result with respect to each float input (Warp 1.11+); the backward pass treats them as
    constants."""

    def __init__(self, func):
        if not (hasattr(func, "lower_call") and hasattr(func, "__name__") or
                getattr(func, "differentiable", False)):
            raise TypeError(f"wp.grad() needs a wp.func or a builtin, got {func!r}")
        self.func = func
        self.__name__ = f"grad({getattr(func, '__name__', getattr(func, 'name', func))})"

    def lower_call(self, ctx, node):
        return ctx.grad_call(self.func, node)

    def assigned_args(self, node):
        return []


def grad_of(func):
    """``wp.grad(f)``: see :class:`GradOf`."""
    return GradOf(func)


grad_of._weft_compile_time = True  # called in a kernel, it runs while compiling
static._weft_compile_time = True
