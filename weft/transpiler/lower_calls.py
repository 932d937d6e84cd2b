"""Func calls for the ``lower`` pass: positional, keyword and default arguments (as Warp),
signature checks of the stdlib's kernel-language builtins, specialisation, and Warp's
output-argument builtins (``wp.svd3(A, U, sigma, V)`` or ``U, sigma, V = wp.svd3(A)``)."""
from __future__ import annotations

import ast
import inspect

from .. import types as T
from ..errors import KernelSyntaxError, KernelTypeError
from . import ir


class CallLowering:
    """Mixin of :class:`weft.transpiler.lower_expr.ExprLowerer` (``self`` lowers expressions,
    specialises funcs through ``self.ctx`` and assigns)."""

    def call_func(self, func, node):
        nout = getattr(func, "_weft_outputs", 0)
        if nout:
            if node.keywords:
                raise self.fail(node, "keyword arguments to funcs with output arguments are "
                                "not supported yet", KernelSyntaxError)
            return self.call_with_outputs(func, node, nout)
        return self.call_func_plain(func, node, *self.func_call_args(func, node))

    def func_call_args(self, func, node):
        """The lowered arguments of a func call in parameter order: the positional ones, then
        keyword arguments and the Python defaults of parameters not given (as Warp); and how
        many leading ones the call gives (up to the last one given)."""
        args = [self.lower_expr(a) for a in node.args]
        params = inspect.signature(func.func).parameters
        names = list(params)
        if not node.keywords and len(args) >= len(names):
            return args, len(args)
        given = {}
        for k in node.keywords:
            if k.arg not in names[len(args):]:
                raise self.fail(k, f"{func.__name__}() got an unexpected keyword argument "
                                f"'{k.arg}'", KernelTypeError)
            given[k.arg] = self.lower_expr(k.value)
        for n in names[len(args):]:
            if n in given:
                args.append(given[n])
            elif params[n].default is not inspect.Parameter.empty:
                args.append(self.python_constant(params[n].default, node))
            else:
                raise self.fail(node, f"{func.__name__}() takes {len(names)} arguments, got "
                                f"{len(node.args) + len(node.keywords)} (no '{n}')",
                                KernelTypeError)
        return args, max([len(node.args)] + [names.index(n) + 1 for n in given])

    def call_func_plain(self, func, node, args=None, n_given=None):
        if args is None:
            args = [self.lower_expr(a) for a in node.args]
        if func.__module__.startswith("weft.stdlib."):  # a kernel-language builtin
            from ..stdlib.signatures import check_call
            shown = args[:n_given]  # the signatures describe the arguments as written
            msg = check_call(func.__name__, [a.type for a in shown],
                             [isinstance(a, ir.Const) and a.literal for a in shown])
            if msg:
                raise self.fail(node, msg, KernelTypeError)
        fir = self.ctx.specialize(func, args, node, self)
        args = self.flatten_call_args(args, node)
        args = [self.adapt_literal(a, p.type) for a, p in zip(args, fir.params)]
        args = [ir.Const(a.value, a.type) if isinstance(a, ir.Const) and a.literal else a
                for a in args]
        if fir not in self.callees:
            self.callees.append(fir)
        if fir.ret_type is None:
            self.block.append(ir.Assign(self.new_temp(T.TupleType(()), "void"),
                                        ir.Call(fir, args), self.loc(node)))
            return None
        out = self.emit(ir.Call(fir, args), fir.ret_type, node)
        if fir.ret_struct is not None:
            return self.unpack_struct_return(fir.ret_struct, out, node)
        return out

    def call_with_outputs(self, func, node, nout):
        """Warp's output-argument builtins (``wp.svd3(A, U, sigma, V)``): the func returns the
        outputs, which are assigned to the trailing argument variables. Called with the inputs
        only, they return the outputs instead (``U, sigma, V = wp.svd3(A)``), as Warp's
        value-returning overloads."""
        n_inputs = len(inspect.signature(func.func).parameters)
        if len(node.args) == n_inputs:
            return self.call_func_plain(func, node)
        if len(node.args) != n_inputs + nout:
            raise self.fail(node, f"wp.{func.__name__}() takes {n_inputs} input(s), then "
                            f"either nothing (it returns its {nout} outputs) or {nout} output "
                            f"variables; got {len(node.args)} arguments")
        targets = node.args[-nout:]
        call = ast.copy_location(ast.Call(node.func, node.args[:-nout], []), node)
        result = self.call_func_plain(func, call)
        values = [result] if nout == 1 else [
            self.apply_builtin("tuple_get", [result], node, attrs={"index": k})
            for k in range(nout)]
        for target, value in zip(targets, values):
            if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
                raise self.fail(target, f"output argument of wp.{func.__name__}() must be a "
                                "variable")
            if isinstance(target, ast.Name) and target.id in self.env and \
                    self.env[target.id].type != value.type:
                raise self.fail(target, f"output argument '{target.id}' of wp.{func.__name__}() "
                                f"has type {T.type_name(self.env[target.id].type)}; it needs "
                                f"{T.type_name(value.type)}")
            self.assign(target, value, node)
        return None
