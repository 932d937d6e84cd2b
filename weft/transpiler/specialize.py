"""Pass ``specialize``: lowers a kernel and every func it calls, each func once per argument
types. Invariant: ``state.funcs`` lists each reachable FuncIR once, callees before callers."""
from __future__ import annotations

import ast
import copy
import dataclasses
import re

import numpy as np

from ..core import types as T
from ..core.errors import KernelSyntaxError, KernelTypeError
from ..stdlib import ir
from .abi import declared_params, fits, is_generic
from .lowering.context import Lowering
from .lowering.stmts import lower_function
from .source import error


class Specializer:
    def __init__(self):
        self.cache = {}
        self.active = set()
        self.order = []

    # -------------------------------------------------------------------------- entry points
    def lower_kernel(self, kernel, types=None):
        """Lower ``kernel``; ``types``: the concrete parameter types of a generic kernel."""
        src = kernel.parsed()
        params = [(n, t) for n, t, _ in declared_params(src, generic_ok=False)]
        if types is not None:
            params = [(n, t) for (n, _), t in zip(params, types)]
        elif any(t is None for _, t in params):
            raise error(src, src.tree, f"kernel '{kernel.key}' has generic parameters: it "
                        "is compiled for the types it is launched with", KernelTypeError)
        lw = Lowering(src, "kernel", self)
        body = lower_function(lw, params)
        fir = self._finish(lw, kernel.key, "kernel", body, src)
        return fir

    def lower_func(self, func, types):
        """Lower ``func`` with parameters of ``types`` as a root (Python-scope calls)."""
        src = func.parsed()
        lw = Lowering(src, "func", self)
        names = [a.arg for a in src.tree.args.args]
        body = lower_function(lw, list(zip(names, types)))
        return self._finish(lw, func.__name__, "func", body, src)

    def specialize(self, func, args, node, caller):
        src = func.parsed()
        params = declared_params(src, generic_ok=True)
        if len(args) != len(params):
            raise caller.fail(node, f"{func.__name__}() takes {len(params)} arguments, "
                              f"got {len(args)}", KernelTypeError)
        bound = []
        # a number literal passed to a generic parameter takes the precision of the first
        # other argument of its kind (lerp(a, b, 0.25) with float64 a and b is all float64;
        # pnoise(state, x, 4) keeps 4 an integer); an int literal with no integer argument
        # beside it stays int32, except in the stdlib's builtins, whose declared signatures
        # (already checked) say a Float is meant there (lerp(a, b, 1))
        typed = [a.type for a in args if not (isinstance(a, ir.Const) and a.literal)]
        anchor_int = next((t for t in typed if T.is_int(T.scalar_of(t))), None)
        anchor_float = next((t for t in typed if T.is_float(T.scalar_of(t))), None)
        stdlib = func.__module__.startswith("weft.stdlib.")  # where it is declared
        for (pname, ptype, pnode), a in zip(params, args):
            if ptype is not None and is_generic(ptype):
                if not fits(ptype, a.type):
                    raise caller.fail(node, f"argument '{pname}' of {func.__name__}() has "
                                      f"type {T.type_name(a.type)}, which does not fit the "
                                      f"generic {T.type_name(ptype)}", KernelTypeError)
                t = a.type
            elif ptype is None:
                t = a.type
                if isinstance(a, ir.Const) and a.literal:
                    anchor = anchor_float if T.is_float(a.type) else (
                        anchor_int or (anchor_float if stdlib else None))
                    if anchor is not None:
                        t = caller.adapt_literal(a, anchor).type
            else:
                t = ptype
                a2 = caller.adapt_literal(a, ptype)
                if a2.type != ptype:
                    raise caller.fail(node, f"argument '{pname}' of {func.__name__}() has type "
                                      f"{T.type_name(ptype)}, got {T.type_name(a.type)}",
                                      KernelTypeError)
            bound.append((pname, t))
        key = (func, tuple(t for _, t in bound))
        fir = self.cache.get(key)
        if fir is not None:
            return fir
        if key in self.active:
            raise caller.fail(node, f"recursive call of {func.__name__}() is not supported",
                              KernelSyntaxError)
        self.active.add(key)
        try:
            lw = Lowering(src, "func", self)
            body = lower_function(lw, bound)
            name = func.__name__
            if any(t is None or is_generic(t) for _, t, _ in params):
                name += "__" + "_".join(_mangle(t) for _, t in bound)
            fir = self._finish(lw, name, "func", body, src)
        finally:
            self.active.discard(key)
        self.cache[key] = fir
        for kind, user_fn in getattr(func, "_weft_custom", {}).items():
            fir.custom[kind] = self.lower_custom(kind, user_fn, fir)
        return fir

    def lower_custom(self, kind, user_fn, fir):
        """Lower a ``func_grad`` / ``func_replay`` / ``func_tangent`` rule of ``fir``.

        grad: ``(inputs..., adj_ret)``; it adds into ``wp.adjoint[x]``, which becomes the local
        ``_wp_adjoint_x``; the lowered function returns the tuple of those (the ``__adj``
        convention).
        replay: the same inputs as the func, used when the adjoint replays the forward.
        tangent: ``(inputs..., tangents of the float inputs...)``, returns the output tangent.

        A grad or tangent rule with one parameter more, named ``ret``, after the inputs, is
        given the func's result (weft's extension: the adjoint has replayed it and the tangent
        computed it, so a rule of a decomposition need not compute it again).
        """
        src = user_fn.parsed()
        names = [a.arg for a in src.tree.args.args]
        inputs = [(n, p.type) for n, p in zip(names, fir.params)]
        diff = [(n, t) for n, t in inputs if T.is_differentiable(t)
                and not isinstance(t, T.ArrayType)]
        prebound, epilogue, tree = {}, [], src.tree
        takes_ret = self._takes_ret(kind, names, inputs, fir)
        first = len(inputs) + takes_ret  # where the adjoints or tangents of the rule begin
        if kind == "grad":
            if any(isinstance(p.type, T.ArrayType) for p in fir.params):
                raise error(src, src.tree, "func_grad of a func with array parameters is not "
                            "supported", KernelSyntaxError)
            rets = [fir.ret_type] if fir.ret_type is not None else []
            if isinstance(fir.ret_type, T.TupleType) and \
                    len(names) == first + len(fir.ret_type.types):
                rets = list(fir.ret_type.types)  # adj_ret0, adj_ret1, ... (as Warp)
            # else one adjoint of the whole result (a tuple for several values)
            extra = [(names[first + k], t) for k, t in enumerate(rets) if first + k < len(names)]
            tree = _AdjointRefs(src).visit(copy.deepcopy(src.tree))
            prebound = {ADJ.format(n): ir.Const(_zero_value(t), t) for n, t in diff}
            epilogue = [ast.Return(ast.Tuple([ast.Name(ADJ.format(n), ast.Load()) for n, _ in diff],
                                             ast.Load()))]
            for node in ast.walk(epilogue[0]):
                ast.copy_location(node, src.tree.body[-1])
        elif kind == "tangent":
            extra = [(names[first + i], t) for i, (_, t) in enumerate(diff)
                     if first + i < len(names)]
        else:
            extra = []
        wanted = first + (len(rets) if kind == "grad" else len(diff) if kind == "tangent"
                          else 0)
        if takes_ret:
            extra = [("ret", fir.ret_type)] + extra
        if len(names) != wanted:
            raise error(src, src.tree, f"a {kind} rule for {fir.name}() takes {wanted} "
                        f"parameters, got {len(names)}", KernelTypeError)
        src = dataclasses.replace(src, tree=tree)
        lw = Lowering(src, "func", self)
        body = lower_function(lw, inputs + extra, prebound, epilogue)
        suffix = {"grad": "__adj", "replay": "__replay", "tangent": "__tangent"}[kind]
        rule = self._finish(lw, fir.name + suffix, "func", body, src, register=False)
        rule.takes_ret = takes_ret
        return rule

    @staticmethod
    def _takes_ret(kind, names, inputs, fir):
        """Whether rule parameters ``names`` start their extras with ``ret`` (see above)."""
        return kind in ("grad", "tangent") and fir.ret_type is not None and \
            len(names) > len(inputs) and names[len(inputs)] == "ret"

    def _finish(self, lw, name, kind, body, src, register=True):
        from .state import FuncIR
        fir = FuncIR(name=name, kind=kind, params=lw.params, body=body, ret_type=lw.ret_type,
                     callees=lw.callees, tid_dims=lw.tid_dims, source=src,
                     tid_vars=lw.tid_vars, ret_struct=lw.ret_struct,
                     writes_back=lw.writes_back)
        if register:
            self.order.append(fir)
        return fir


#: the local a func_grad rule's ``wp.adjoint[x]`` becomes: not ``adj_x``, which users name
#: their own locals (Warp's test_grad test_name_clash)
ADJ = "_wp_adjoint_{}"


class _AdjointRefs(ast.NodeTransformer):
    """``wp.adjoint[x]`` -> the local name ``adj_x`` (in func_grad rules), where the subscripted
    name denotes weft's ``adjoint`` object."""

    def __init__(self, src):
        from ..stdlib.lang import adjoint
        self.form = adjoint
        self.scope = dict(src.pyfunc.__globals__)

    def denotes_adjoint(self, node):
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.scope:
            return False
        value = self.scope[node.id]
        for a in reversed(chain):
            value = getattr(value, a, None)
        return value is self.form

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if self.denotes_adjoint(node.value) and isinstance(node.slice, ast.Name):
            return ast.copy_location(ast.Name(ADJ.format(node.slice.id), node.ctx), node)
        return node


def _zero_value(t):
    return tuple(np.zeros(t._length_).tolist()) if T.is_composite(t) else 0.0


def _mangle(t):
    """A part of a Python identifier naming type ``t`` (a generic func's specialisation)."""
    if isinstance(t, T.ArrayType):
        return f"arr{t.ndim}{_mangle(t.dtype)}"
    if isinstance(t, T.TupleType):
        return "tup" + "".join(_mangle(x) for x in t.types)
    if isinstance(t, T.TileType):
        return f"tile{'x'.join(map(str, t.shape))}{_mangle(t.dtype)}"
    return re.sub(r"\W", "_", T.type_name(t))


def run(state):
    """Lower every root kernel of ``state`` (and, through them, their funcs)."""
    sp = Specializer()
    for k in state.roots:
        sp.lower_kernel(k, state.kernel_types.get(k))
    names = {}
    for fir in sp.order:
        base = fir.name
        n = names.get(base, 0)
        names[base] = n + 1
        if n:
            fir.name = f"{base}_{n}"
    state.funcs = sp.order
    return state


def run_host(state):
    """The ``lower`` pass of the host pipeline (``pipeline.HOST``): ``state.host_call``, a
    func and its argument types, lowered as the root (``state.host_root``)."""
    sp = Specializer()
    func, types = state.host_call
    state.host_root = sp.lower_func(func, types)
    state.funcs = sp.order
    return state
