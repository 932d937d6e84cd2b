"""The tangent generator: IR -> Python statements computing primal values and their tangents.

Invariant: after each statement, ``tan_<name>`` holds the directional derivative of every
differentiable variable ``<name>`` along the input tangents (forward mode, JVP). Adjoint-free:
loops need no stacks, the tangent simply runs alongside the primal.
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..stdlib import ir
from .analyze import call_varies
from .codegen import (assign, component_indices, diff, index_node, located, not_none,
                      zero_node)
from ..stdlib.exprs import Ex, name, structural_zero
from .forward import Forward


class Tangent(Forward):
    def __init__(self, fir, names, facts, target):
        super().__init__(fir, names, facts, target, replay=False, shadow="tan")
        self.pass_kind = "tangent"

    def tex(self, o):
        """Tangent of an operand as an Ex (zero for constants); None when not differentiable."""
        if not diff(o):
            return None
        if isinstance(o, ir.Const) or id(o) not in self.facts.varied:
            return structural_zero(o.type)
        return Ex(name(self.tan(o)), o.type)

    def s_Assign(self, s):
        out = super().s_Assign(s)
        e = s.expr
        d = s.dst
        if isinstance(e, ir.Call) and e.func.ret_type is None:
            return self.call_jvp(s, void=True) if call_varies(e, self.facts.varied) else out
        if isinstance(d.type, T.ArrayType) or not diff(d):
            return out
        if id(d) not in self.facts.varied:  # no input varies it: a constant zero tangent
            return out + [assign(self.tan(d), zero_node(d.type), s.loc)]
        if isinstance(e, ir.Copy):
            return out + [assign(self.tan(d), self.tex(e.src).node, s.loc)]
        if isinstance(e, ir.Prim):
            b = e.builtin
            t = None
            if b.differentiable and (b.own_derivatives or any(diff(a) for a in e.args)):
                args = [self.ex(a) for a in e.args]
                tans = [self.tex(a) for a in e.args]
                ret = Ex(name(d.name), d.type)
                extra = {"tan_arrays": self.shadow_arrays(e.args)} if getattr(
                    b, "array_args", False) else {}
                stmts, t = self.build(lambda: b.tangent(*args, *tans, ret=ret, **e.attrs,
                                                        **extra), s.loc)
                out += stmts
            return out + [assign(self.tan(d), t.node if t is not None else zero_node(d.type),
                                 s.loc)]
        if isinstance(e, ir.Load) and e.array.type.local:
            return out + [assign(self.tan(d), zero_node(d.type), s.loc)]
        if isinstance(e, ir.Load):
            arr = e.array.name
            load = self.load_element(self.tan(arr), self.idx_nodes(e.index), d.type, s.loc)
            st = ast.If(not_none(self.tan(arr)), [assign(self.tan(d), load.node, s.loc)],
                        [assign(self.tan(d), zero_node(d.type), s.loc)])
            return out + [located(st, s.loc)]
        if isinstance(e, ir.Call):
            return self.call_jvp(s, void=False)
        if isinstance(e, ir.GradCall):  # constant along any direction, as in Warp
            return out + [assign(self.tan(d), zero_node(d.type), s.loc)]
        raise TypeError(e)

    def call_jvp(self, s, void):
        f = s.expr.func
        args = [self.ex(a).node for a in s.expr.args]
        for p, a in zip(f.params, s.expr.args):
            if isinstance(p.type, T.ArrayType):
                if T.is_differentiable(p.type):
                    args.append(name(self.tan(a)))
            elif diff(p):
                args.append(self.tex(a).node)
        call = self.call_generated(f"{f.name}__jvp", args, "tangent")
        if void:
            return [located(ast.Expr(call), s.loc)]
        if not diff(s.dst):
            return [assign(s.dst.name, ast.Subscript(call, ast.Constant(0), ast.Load()), s.loc)]
        target = ast.Tuple([ast.Name(s.dst.name, ast.Store()),
                            ast.Name(self.tan(s.dst), ast.Store())], ast.Store())
        return [assign(target, call, s.loc)]

    def shadow_arrays(self, args):
        """Per argument: the Ex of its tangent array where it is a differentiable array."""
        return [Ex(name(self.tan(a)), a.type)
                if isinstance(a, ir.Var) and isinstance(a.type, T.ArrayType) and
                T.is_differentiable(a.type) and not a.type.local else None for a in args]

    def s_Effect(self, s):
        out = super().s_Effect(s)
        rule = getattr(s.builtin, "effect_tangent", None)
        if rule is None:
            return out
        args = [self.ex(a) for a in s.args]
        tans = [self.tex(a) for a in s.args]
        stmts, _ = self.build(lambda: rule(args, tans, self.shadow_arrays(s.args), **s.attrs) or
                              Ex(ast.Constant(None), None), s.loc)
        return out + stmts

    def _tangent_store(self, s):
        out = super().s_Store(s)
        if not T.is_differentiable(s.array.type):
            return out
        arr = self.tan(s.array)
        body = self.store_element(arr, self.idx_nodes(s.index), self.tex(s.value), s.loc)
        return out + [located(ast.If(not_none(arr), body, []), s.loc)]

    def phased(self, stmts, phase=0):
        """In a kernel with tie sites (two phases, see ``analyze.atomic_tie_sites``), writes
        happen in phase 0 only; the tie sites' sharing in phase 1."""
        if not self.facts.tie_sites or not stmts:
            return stmts
        test = ast.Compare(name("_phase"), [ast.Eq()], [ast.Constant(phase)])
        return [located(ast.If(test, stmts, []), getattr(stmts[0], "_weft_loc", None))]

    def s_Store(self, s):
        if s.array.type.local:  # thread-local buffers are written in both phases
            return self._tangent_store(s)
        return self.phased(self._tangent_store(s))

    def s_AtomicRMW(self, s):
        k = self.facts.tie_index(s)
        if k is not None:
            out = self.phased(Forward.s_AtomicRMW(self, s))
            if s.dst is not None and diff(s.dst):
                out.append(assign(self.tan(s.dst), zero_node(s.dst.type), s.loc))
            return out + self.phased(self.tie_share(s, k), phase=1)
        return self.phased(self._tangent_atomic(s))

    def tie_share(self, s, k):
        """Phase 1 at a tie site: every thread whose value is the result adds its tangent and
        counts itself (the runtime divides the sum by the count)."""
        idx = self.idx_nodes(s.index)
        dtype = s.array.type.dtype
        cur = self.load_element(s.array.name, idx, dtype, s.loc)
        val, tval = self.ex(s.value), self.tex(s.value)
        out = []
        for c, extra in enumerate(component_indices(dtype)):  # per component for vectors
            where = index_node(list(idx) + [ast.Constant(e) for e in extra])
            parts = (cur.comp(c), val.comp(c), tval.comp(c)) if T.is_composite(dtype) else \
                (cur, val, tval)
            tied = ast.Compare(parts[0].node, [ast.Eq()], [parts[1].node])
            add = [ast.Expr(self.target.atomic("atomic_add", [name(f"_tsum{k}"), where,
                                                              parts[2].node])),
                   ast.Expr(self.target.atomic("atomic_add", [name(f"_ties{k}"), where,
                                                              ast.Constant(1)]))]
            out.append(located(ast.If(tied, add, []), s.loc))
        return out

    def _tangent_atomic(self, s):
        out = super().s_AtomicRMW(s)
        if not T.is_differentiable(s.array.type):
            return out
        arr = self.tan(s.array)
        idx = self.idx_nodes(s.index)
        if s.op in ("add", "sub"):
            body = self.atomic_element(s.op, arr, idx, self.tex(s.value), s.loc)
        else:  # min/max: the tangent of the value that ended up in the array
            dtype = s.array.type.dtype
            cur = self.load_element(s.array.name, idx, dtype, s.loc)
            val, tval = self.ex(s.value), self.tex(s.value)
            if T.is_composite(dtype):  # componentwise, as the atomics themselves
                body = []
                for c, extra in enumerate(component_indices(dtype)):
                    cond = ast.Compare(cur.comp(c).node, [ast.Eq()], [val.comp(c).node])
                    where = list(idx) + [ast.Constant(e) for e in extra]
                    body.append(ast.If(cond, self.store_element(arr, where, tval.comp(c),
                                                                s.loc), []))
            else:
                cond = ast.Compare(cur.node, [ast.Eq()], [val.node])
                body = [ast.If(cond, self.store_element(arr, idx, tval, s.loc), [])]
        st = located(ast.If(not_none(arr), body, []), s.loc)
        if s.dst is not None and diff(s.dst):
            out.append(assign(self.tan(s.dst), zero_node(s.dst.type), s.loc))
        return out + [st]

    def s_Return(self, s):
        v = s.value
        if v is None:
            return super().s_Return(s)
        t = self.tex(v)
        value = ast.Tuple([self.ex(v).node, t.node if t is not None else ast.Constant(0)],
                          ast.Load())
        return [located(ast.Return(value), s.loc)]

    def loop_tail(self, s):
        tail = [assign(self.tan(h), name(self.tan(e)), s.loc) for h, e in s.carried if diff(h)]
        return tail + super().loop_tail(s)

    def func_params(self):
        """Parameter names of ``<func>__jvp``: params, then tangents of differentiable
        params."""
        return [p.name for p in self.fir.params] + [
            self.tan(p) for p in self.fir.params if T.is_differentiable(p.type)] + \
            self.target.extra_params("tangent")
