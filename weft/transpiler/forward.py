"""The forward generator: IR -> Python statements computing the primal values.

Invariant: the statements assign every IR variable by its IR name, with the semantics of the
user's source. The adjoint generator reuses this class with ``replay=True``: array stores and
atomics are then skipped (their values are not needed to run backwards) and each array view
also gets the matching view of the adjoint array.
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..stdlib import ir
from .codegen import (Gen, assign, is_half, located, not_none, plain_int, round_half,
                      storage_dtype_node, tag, wk_call)
from ..stdlib.exprs import const, name, zero


# builtins whose float16 result is made of their float16 operands (moved, picked or negated)
# or of constants, so it needs no rounding (conversions from other precisions already emit
# ``float16(...)``)
EXACT_BUILTINS = frozenset({"neg", "pos", "extract", "insert", "construct", "transpose",
                            "identity", "tuple_get", "select", "where", "min", "max", "abs",
                            "clamp", "sign", "floor", "ceil", "trunc", "rint", "round"})


class Forward(Gen):
    def __init__(self, fir, names, facts, target, replay=False, shadow="adj"):
        super().__init__(fir, names, facts, target)
        self.replay = replay
        self.shadow_prefix = shadow  # of the shadow arrays that views must follow
        self.pass_kind = "adjoint" if replay else "forward"

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        return getattr(self, "s_" + type(s).__name__)(s)

    # --------------------------------------------------------------------------------- assign
    def s_Assign(self, s):
        e = s.expr
        if isinstance(e, ir.Copy):
            out = [assign(s.dst.name, self.ex(e.src).node, s.loc)]
            if (isinstance(s.dst.type, T.ArrayType) and isinstance(e.src, ir.Var)
                    and (self.replay or self.shadow_prefix == "tan")
                    and T.is_differentiable(s.dst.type) and not s.dst.type.local):
                # a named view (``row = a[i]``) brings its shadow view along
                p = self.shadow_prefix
                out.append(assign(self.shadow(p, s.dst), name(self.shadow(p, e.src)), s.loc))
            return out
        if isinstance(e, ir.Prim) and e.builtin.name == "alloc_local":
            return self.alloc_local(s)
        if isinstance(e, ir.Prim) and e.builtin.name == "null_array":
            out = [assign(s.dst.name, self.primal(e, [], s.dst.type).node, s.loc)]
            if (self.replay or self.shadow_prefix == "tan") and T.is_differentiable(s.dst.type):
                # its shadow: none (the CPU) or another empty array (CUDA takes arrays)
                shadow = ast.Constant(None) if self.target.optional_shadows else \
                    self.primal(e, [], s.dst.type).node
                out.append(assign(self.shadow(self.shadow_prefix, s.dst), shadow, s.loc))
            return out
        if isinstance(e, ir.Prim) and self.replay and \
                getattr(e.builtin, "array_access", None) == "accumulate":
            # the adjoint's replay adds nothing into arrays (the forward pass did); the values
            # such an add replaced are not known again: zeros
            return [assign(s.dst.name, zero(s.dst.type).node, s.loc)]
        if isinstance(e, ir.Prim):
            args = [self.ex(a) for a in e.args]
            stmts, result = self.build(lambda: self.primal(e, args, s.dst.type), s.loc)
            return stmts + [assign(s.dst.name, result.node, s.loc)]
        if isinstance(e, ir.Load):
            return self.load(s)
        if isinstance(e, ir.GradCall):
            return self.grad_call(s)
        if isinstance(e, ir.Call):
            keep = primal_args(e.func)
            if keep is not None and self.shadow_prefix != "tan":
                # a func whose value the primal code never uses (weft's recomputations that
                # only supply derivatives): its arguments stand in for it
                items = [self.ex(e.args[k]).node for k in keep]
                value = items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())
                return [assign(s.dst.name, value, s.loc)]
            fname = e.func.name
            if self.replay and "replay" in e.func.custom:
                fname = e.func.custom["replay"].name
            call = self.call_generated(fname, [self.ex(a).node for a in e.args], "forward")
            if e.func.ret_type is None:
                return [located(ast.Expr(call), s.loc)]
            return [assign(s.dst.name, call, s.loc)]
        raise TypeError(e)

    def grad_call(self, s):
        """``wp.grad(f)(args)``: ``f``'s adjoint with the result's adjoint 1."""
        f = s.expr.func
        one = const(1.0, f.ret_type).node
        call = self.call_generated(f"{f.name}__adj", [self.ex(a).node for a in s.expr.args] +
                                   [one], "adjoint")
        if not isinstance(s.dst.type, T.TupleType):
            call = ast.Subscript(call, ast.Constant(0), ast.Load())
        return [assign(s.dst.name, call, s.loc)]

    def primal(self, e, args, type_):
        """A builtin's primal value; float16 results are rounded to half precision, as each
        operation on Warp's ``half`` rounds (builtins whose result is one of their operands or
        its negation need no rounding)."""
        result = e.builtin.primal(*args, **e.attrs)
        if is_half(type_) and e.builtin.name not in EXACT_BUILTINS:
            result = round_half(result)
        return result

    def alloc_local(self, s):
        """``buf = np.empty(size, dtype)`` then a fill loop (``cuda.local.array`` on CUDA)."""
        t = s.dst.type
        shape = ast.Constant(t.size) if not T.is_composite(t.dtype) else ast.Tuple(
            [ast.Constant(t.size)] + [ast.Constant(d) for d in T.element_shape(t.dtype)],
            ast.Load())
        alloc = assign(s.dst.name, self.target.local_array(shape, storage_dtype_node(t.dtype)),
                       s.loc)
        j = self.names.fresh("j") if self.names is not None else "_j"
        fill = self.store_element(s.dst.name, [name(j)], const(s.expr.attrs["value"], t.dtype),
                                  s.loc, checked=False)
        loop = ast.For(ast.Name(j, ast.Store()), ast.Call(name("range"), [ast.Constant(t.size)],
                                                          []), fill, [])
        return [alloc, located(loop, s.loc)]

    def load(self, s):
        e = s.expr
        idx = self.idx_nodes(e.index)
        arr = e.array.name
        if isinstance(s.dst.type, T.ArrayType):  # a view (slices are clamped by Python's rules)
            idx = self.checked(arr, idx, s.loc,
                               skip={k for k, i in enumerate(e.index)
                                     if isinstance(i.type, T.SliceType)})
            sl = idx[0] if len(idx) == 1 else ast.Tuple(idx, ast.Load())
            out = [assign(s.dst.name, ast.Subscript(name(arr), sl, ast.Load()), s.loc)]
            if self.replay or self.shadow_prefix == "tan":
                out.append(self.shadow_view(s.dst.name, arr, sl, s.loc))
            return out
        return [assign(s.dst.name, self.load_element(arr, idx, e.array.type.dtype, s.loc).node,
                       s.loc)]

    def shadow_view(self, dst, arr, sl, loc):
        """The view of the adjoint (or tangent) array that follows a view of ``arr``; where the
        target may pass None for it, None follows None."""
        p = self.shadow_prefix
        view = assign(self.shadow(p, dst), ast.Subscript(name(self.shadow(p, arr)), sl,
                                                         ast.Load()), loc)
        if not self.target.optional_shadows:
            return view
        st = ast.If(not_none(self.shadow(p, arr)), [view], [assign(self.shadow(p, dst),
                                                                   ast.Constant(None))])
        return tag([st], loc)[0]

    # --------------------------------------------------------------------------------- arrays
    # arrays whose stores the adjoint's replay performs, and how (Adjoint.replay_store)
    replayed, replay_store = (), None
    # integer counters whose atomics the replay performs (Adjoint: analyze.atomic_replays)
    atomic_replayed = ()

    def s_Store(self, s):
        if self.replay and s.array in self.replayed:
            return self.replay_store(s)
        if self.replay and not s.array.type.local:  # thread-local buffers must be replayed
            return []
        return self.store_element(s.array.name, self.idx_nodes(s.index), self.ex(s.value), s.loc)

    def s_AtomicRMW(self, s):
        idx = self.idx_nodes(s.index)
        if self.replay and s.array in self.replayed:
            return self.replay_store(s)
        if self.replay and s.array.name not in self.atomic_replayed:
            if s.dst is None:
                return []
            # the old value is not recorded: re-read the element (exact only when no other
            # thread updated it meanwhile)
            return [assign(s.dst.name, self.load_element(s.array.name, idx,
                                                         s.array.type.dtype, s.loc).node, s.loc)]
        used = s.dst is not None and id(s.dst) in self.facts.used
        return self.atomic_element(s.op, s.array.name, idx, self.ex(s.value), s.loc,
                                   dst=s.dst.name if used else None,
                                   compare=None if s.compare is None else self.ex(s.compare))

    def s_Effect(self, s):
        """A side effect (print, expect_*): not replayed by the adjoint."""
        if self.replay:
            return []
        if s.builtin.name == "kernel_assert":
            return self.kernel_assert(s)
        args = [self.ex(a) for a in s.args]
        stmts, result = self.build(lambda: s.builtin.primal(*args, **s.attrs), s.loc)
        return stmts + [located(ast.Expr(result.node), s.loc)]

    def kernel_assert(self, s):
        """``assert``: in debug builds a failed condition is reported through the error word
        (the index check's report with axis -1: :func:`weft.runtime.checks.index_error`);
        release builds check nothing, as Warp's."""
        if not getattr(self.target, "check_all", False):  # (release and guarded builds)
            return []
        site = self.target.site("assert", s.loc, self.pass_kind)
        # the index check of index 0 on an axis of length 0 (it fails), axis -1 marking it
        report = ast.Expr(wk_call("chk", plain_int(0), plain_int(0), plain_int(site),
                                  plain_int(-1), name("_dbg")))
        test = ast.UnaryOp(ast.Not(), self.ex(s.args[0]).node)
        return [located(ast.If(test, [report], []), s.loc)]

    # --------------------------------------------------------------------------------- control
    def s_If(self, s):
        st = ast.If(self.ex(s.cond).node, self.block(s.body), self.block(s.orelse))
        return [located(st, s.loc)]

    def s_Return(self, s):
        return [located(ast.Return(self.ex(s.value).node if s.value is not None else None),
                        s.loc)]

    def loop_tail(self, s):
        tail = [assign(h.name, name(e.name), s.loc) for h, e in s.carried]
        if s.brk is not None:
            tail.append(located(ast.If(name(s.brk.name), [ast.Break()], []), s.loc))
        return tail

    def loop_header(self, s, body):
        if s.kind == "for":
            rng = ast.Call(name("range"), [self.ex(s.start).node, self.ex(s.stop).node,
                                           self.ex(s.step).node], [])
            st = ast.For(ast.Name(s.var.name, ast.Store()), rng, body, [])
        else:
            st = ast.While(ast.Constant(True), body, [])
        return located(st, s.loc)

    def s_Loop(self, s):
        return [self.loop_header(s, self.block(s.body) + self.loop_tail(s))]


def primal_args(fir):
    """``weft_primal_args`` of a func's Python function: the positions of the arguments whose
    tuple (or the one argument) the forward and replayed code take as the call's value instead
    of calling it (for
    weft's own funcs that recompute a query's result only for its derivatives; the tangent and
    adjoint call it). None for every other func."""
    src = getattr(fir, "source", None)
    return getattr(getattr(src, "pyfunc", None), "weft_primal_args", None)
