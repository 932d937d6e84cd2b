"""Side effects in kernels: ``print``, ``wp.printf`` and Warp's ``wp.expect_eq``,
``wp.expect_neq``, ``wp.expect_near`` (which print what failed, as Warp does, and go on).

Each lowers to an IR ``Effect``: the forward and tangent kernels run it, the adjoint's replay
does not (so a kernel prints once per launch, not again when differentiated).
"""
from __future__ import annotations

import ast
import builtins as py
import re

import numpy as np

from ..core import types as T
from . import ir
from .exprs import Ex, call, name, tup
from .registry import builtin, special_form

VOID = T.TupleType(())


def _void(types, attrs=None):
    return VOID


@builtin("print_values", ["print(values...)"], _void, differentiable=False, public=False)
class _print_values:
    def primal(*args, texts=()):
        """``texts[k]``: the string printed in place of argument k (None: the value)."""
        values = iter(args)
        nodes = [ast.Constant(t) if t is not None else next(values).node for t in texts]
        return Ex(ast.Call(name("print"), nodes, []), VOID)


def _effect(ctx, node, builtin_, args, **attrs):
    ctx.add(ir.Effect(builtin_, args, ctx.loc(node), attrs))


def _printed(ctx, nodes):
    """Strings as themselves, anything else lowered: (operands, texts)."""
    args, texts = [], []
    for n in nodes:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            texts.append(n.value)
        else:
            v = ctx.expr(n)
            args.append(ir.Const(v.value, v.type) if isinstance(v, ir.Const) else v)
            texts.append(None)
            if T.is_tile_type(getattr(v, "type", None)):
                # Warp's suffix (weft's tiles have no storage kind: Warp's default, register)
                shape = ",".join(str(d) for d in v.type.shape)
                texts.append(f"= tile(shape=({shape}), storage=register)")
    return args, tuple(texts)


def _lower_print(ctx, node):
    if node.keywords:
        raise ctx.fail(node, "print() in kernels takes positional arguments only")
    args, texts = _printed(ctx, node.args)
    _effect(ctx, node, _print_values, args, texts=texts)


print_form = special_form("print", "print(values...): prints from every thread")(_lower_print)


@builtin("tile_sync", ["WP_TILE_SYNC()"], _void, differentiable=False, public=False)
class tile_sync:
    """Warp's tile barrier, the snippet of ``wp.func_native(snippet="WP_TILE_SYNC();")``: on
    the CPU a tile block is one thread, so nothing waits; weft's CUDA target (no cooperative
    blocks yet) refuses a kernel that calls it."""

    def primal():
        return Ex(ast.Constant(None), VOID)


def _lower_tile_sync(ctx, node):
    if node.args or node.keywords:
        raise ctx.fail(node, "a WP_TILE_SYNC() snippet takes no arguments")
    _effect(ctx, node, tile_sync, [])


def native_snippet_form(name_, snippet):
    """The kernel-language meaning of a ``wp.func_native`` snippet weft can supply (None for
    any other): ``WP_TILE_SYNC();``, the tile barrier."""
    from .registry import SpecialForm
    if "".join(snippet.split()) == "WP_TILE_SYNC();":
        return SpecialForm(name_, "WP_TILE_SYNC(): the tile barrier", _lower_tile_sync, None,
                           None, False)
    return None


@builtin("kernel_assert", ["assert condition"], _void, differentiable=False, public=False)
class kernel_assert:
    """``assert cond`` in a kernel: checked in debug builds (the code generator reports a failure
    through the debug error word, :class:`weft.KernelAssertionError` after the launch); nothing
    in release builds, as Warp (whose asserts compile away without debug)."""

    def primal(cond):
        return Ex(ast.Constant(None), VOID)


def lower_assert(ctx, s):
    """The IR of ``assert test[, message]``: the condition, then the effect that checks it."""
    cond = ctx.condition(s.test)
    _effect(ctx, s, kernel_assert, [cond])

_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[diouxXfFeEgGcsp%]")


@special_form("printf", "printf(fmt, args...): C's printf (values printed with Python's "
              "formatting)")
def printf(ctx, node):
    if not node.args or not (isinstance(node.args[0], ast.Constant) and
                             isinstance(node.args[0].value, str)):
        raise ctx.fail(node, "wp.printf(fmt, args...) needs a string literal format")
    fmt = node.args[0].value
    pieces, k, values = [], 0, list(node.args[1:])
    for m in _SPEC.finditer(fmt):
        pieces.append(ast.Constant(fmt[k:m.start()]))
        if m.group() == "%%":
            pieces.append(ast.Constant("%"))
        else:
            if not values:
                raise ctx.fail(node, f"wp.printf: the format has more conversions than the "
                               f"{len(node.args) - 1} value(s) given")
            pieces.append(values.pop(0))
        k = m.end()
    pieces.append(ast.Constant(fmt[k:].rstrip("\n")))
    if values:
        raise ctx.fail(node, "wp.printf: more values than conversions in the format")
    args, texts = _printed(ctx, [p for p in pieces if not (isinstance(p, ast.Constant) and
                                                           p.value == "")])
    _effect(ctx, node, _print_values, args, texts=texts)


def _same_type_args(ctx, node, n, name_):
    if len(node.args) != n or node.keywords:
        raise ctx.fail(node, f"wp.{name_}() takes {n} arguments")
    args = [ctx.expr(a) for a in node.args]
    anchor = next((a.type for a in args if not (isinstance(a, ir.Const) and a.literal)),
                  args[0].type)
    args = [ctx.adapt_literal(a, anchor) for a in args]
    args = [ir.Const(a.value, a.type) if isinstance(a, ir.Const) else a for a in args]
    return args


def _compare_form(form_name, helper):
    @builtin(f"{form_name}_check", [f"{form_name}(actual, expected)"], _void,
             differentiable=False, public=False)
    class rules:
        def primal(actual, expected):
            return call(helper, actual, expected, type_=VOID)

    def lower(ctx, node):
        a, b = _same_type_args(ctx, node, 2, form_name)
        if a.type != b.type:
            raise ctx.fail(node, f"wp.{form_name}() got {T.type_name(a.type)} and "
                           f"{T.type_name(b.type)}. Can't test equality for objects with "
                           "different types")
        _effect(ctx, node, rules, [a, b])

    def host(actual, expected):
        """At Python scope (a func run as Python): the same check and printout."""
        same = np.array_equal(np.asarray(actual), np.asarray(expected))
        if same != (form_name == "expect_eq"):
            print(f"Error, {form_name}() failed:")
            print("\t Expected: ", expected)
            print("\t Actual: ", actual)

    return special_form(form_name, f"{form_name}(actual, expected): prints an error when the "
                        "check fails (as Warp)", host=host)(lower)


expect_eq = _compare_form("expect_eq", "_wk.expect_eq")
expect_neq = _compare_form("expect_neq", "_wk.expect_neq")


def _expect_near_host(actual, expected, tolerance=1e-6):
    diff = float(np.max(np.abs(np.asarray(actual, dtype=np.float64) -
                               np.asarray(expected, dtype=np.float64))))
    if diff > tolerance:
        print("Error, expect_near() failed with tolerance ", tolerance)
        print("    Expected: ", expected)
        print("    Actual: ", actual)
        print("    Absolute difference: ", diff)


@builtin("expect_near_check", ["expect_near(actual, expected, tolerance)"], _void,
         differentiable=False, public=False)
class _expect_near:
    def primal(actual, expected, tolerance):
        if T.is_composite(actual.type):
            a, e = actual.atom(), expected.atom()
            diffs = [call("abs", x - y) for x, y in zip(a.items(), e.items())]
            diff = diffs[0]
            for d in diffs[1:]:
                diff = call("max", diff, d)
        else:
            diff = call("abs", actual - expected)
        return call("_wk.expect_near", diff, tolerance, actual, expected, type_=VOID)


@special_form("expect_near", "expect_near(actual, expected, tolerance=1e-6): prints an error "
              "when |actual - expected| > tolerance (componentwise maximum for vectors)",
              host=_expect_near_host)
def expect_near(ctx, node):
    nodes = list(node.args) + [k.value for k in node.keywords if k.arg == "tolerance"]
    if len(nodes) == 2:
        nodes.append(ast.Constant(1e-6))
    if len(nodes) != 3:
        raise ctx.fail(node, "wp.expect_near(actual, expected, tolerance) takes 2 or 3 "
                       "arguments")
    a, b = (ctx.expr(n) for n in nodes[:2])
    b = ctx.adapt_literal(b, a.type)
    a = ctx.adapt_literal(a, b.type)
    tol = ctx.adapt_literal(ctx.expr(nodes[2]), T.scalar_of(a.type))
    if a.type != b.type or tol.type != T.scalar_of(a.type):
        raise ctx.fail(node, f"wp.expect_near() takes two values of one float type and a "
                       f"tolerance of its scalar type, got {T.type_name(a.type)}, "
                       f"{T.type_name(b.type)}, {T.type_name(tol.type)}")
    args = [ir.Const(x.value, x.type) if isinstance(x, ir.Const) else x for x in (a, b, tol)]
    _effect(ctx, node, _expect_near, args)


PRINT = {py.print: print_form}
__all__ = ["print_form", "printf", "expect_eq", "expect_neq", "expect_near", "tup"]
