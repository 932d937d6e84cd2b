"""Pass ``forward``: IR -> Python statements computing the primal values.

Invariant: the statements assign every IR variable by its IR name, with the semantics of the
user's source. The adjoint generator reuses this class with ``replay=True``: array stores and
atomics are then skipped (their values are not needed to run backwards) and each array view
also gets the matching view of the adjoint array.
"""
from __future__ import annotations

import ast

from .. import types as T
from . import ir
from .codegen import Gen, assign, is_half, not_none, round_half, storage_dtype_node, tag
from .exprs import name


# builtins whose float16 result is made of their float16 operands (moved, picked or negated)
# or of constants, so it needs no rounding (conversions from other precisions already emit
# ``float16(...)``)
EXACT_BUILTINS = frozenset({"neg", "pos", "extract", "insert", "construct", "transpose",
                            "identity", "tuple_get", "select", "where", "min", "max", "abs",
                            "clamp", "sign", "floor", "ceil", "trunc", "rint", "round"})


class Forward(Gen):
    def __init__(self, fir, names, replay=False, shadow="adj"):
        super().__init__(fir, names)
        self.replay = replay
        self.shadow = shadow  # prefix of the shadow arrays that views must follow

    @property
    def used_vars(self):
        if getattr(self, "_used", None) is None:
            self._used = ir.used_vars(self.fir.body)
        return self._used

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
                    and (self.replay or self.shadow == "tan")
                    and T.is_differentiable(s.dst.type) and not s.dst.type.local):
                # a named view (``row = a[i]``) brings its shadow view along
                p = self.shadow
                out.append(assign(f"{p}_{s.dst.name}", name(f"{p}_{e.src.name}"), s.loc))
            return out
        if isinstance(e, ir.Prim) and e.builtin.name == "alloc_local":
            return self.alloc_local(s)
        if isinstance(e, ir.Prim):
            args = [self.ex(a) for a in e.args]
            stmts, result = self.build(lambda: self.primal(e, args, s.dst.type), s.loc)
            return stmts + [assign(s.dst.name, result.node, s.loc)]
        if isinstance(e, ir.Load):
            return self.load(s)
        if isinstance(e, ir.Call):
            fname = e.func.name
            if self.replay and "replay" in e.func.custom:
                fname = e.func.custom["replay"].name
            call = ast.Call(name(fname), [self.ex(a).node for a in e.args], [])
            if e.func.ret_type is None:
                st = ast.Expr(call)
                st._weft_loc = s.loc
                return [st]
            return [assign(s.dst.name, call, s.loc)]
        raise TypeError(e)

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
        dt = storage_dtype_node(t.dtype)
        alloc = assign(s.dst.name, ast.Call(ast.Attribute(name("np"), "empty", ast.Load()),
                                            [shape, dt], []), s.loc)
        j = self.names.fresh("j") if self.names is not None else "_j"
        from .exprs import const
        fill = self.store_element(s.dst.name, [name(j)], const(s.expr.attrs["value"], t.dtype),
                                  s.loc)
        loop = ast.For(ast.Name(j, ast.Store()), ast.Call(name("range"), [ast.Constant(t.size)],
                                                          []), fill, [])
        loop._weft_loc = s.loc
        return [alloc, loop]

    def load(self, s):
        e = s.expr
        idx = self.idx_nodes(e.index)
        arr = e.array.name
        if isinstance(s.dst.type, T.ArrayType):  # a view
            sl = idx[0] if len(idx) == 1 else ast.Tuple(idx, ast.Load())
            out = [assign(s.dst.name, ast.Subscript(name(arr), sl, ast.Load()), s.loc)]
            if self.replay or self.shadow == "tan":
                out.append(self.shadow_view(s.dst.name, arr, sl, s.loc))
            return out
        return [assign(s.dst.name, self.load_element(arr, idx, e.array.type.dtype).node, s.loc)]

    def shadow_view(self, dst, arr, sl, loc):
        p = self.shadow
        st = ast.If(not_none(f"{p}_{arr}"),
                    [assign(f"{p}_{dst}", ast.Subscript(name(f"{p}_{arr}"), sl, ast.Load()))],
                    [assign(f"{p}_{dst}", ast.Constant(None))])
        return tag([st], loc)[0]

    # --------------------------------------------------------------------------------- arrays
    def s_Store(self, s):
        if self.replay and not s.array.type.local:  # thread-local buffers must be replayed
            return []
        return self.store_element(s.array.name, self.idx_nodes(s.index), self.ex(s.value), s.loc)

    def s_AtomicRMW(self, s):
        idx = self.idx_nodes(s.index)
        if self.replay:
            if s.dst is None:
                return []
            # the old value is not recorded: re-read the element (exact only when no other
            # thread updated it meanwhile)
            return [assign(s.dst.name, self.load_element(s.array.name, idx,
                                                         s.array.type.dtype).node, s.loc)]
        used = s.dst is not None and id(s.dst) in self.used_vars
        return self.atomic_element(s.op, s.array.name, idx, self.ex(s.value), s.loc,
                                   dst=s.dst.name if used else None,
                                   compare=None if s.compare is None else self.ex(s.compare))

    # --------------------------------------------------------------------------------- control
    def s_If(self, s):
        st = ast.If(self.ex(s.cond).node, self.block(s.body) or [ast.Pass()],
                    self.block(s.orelse))
        st._weft_loc = s.loc
        return [st]

    def s_Return(self, s):
        st = ast.Return(self.ex(s.value).node if s.value is not None else None)
        st._weft_loc = s.loc
        return [st]

    def loop_tail(self, s):
        tail = [assign(h.name, name(e.name), s.loc) for h, e in s.carried]
        if s.brk is not None:
            br = ast.If(name(s.brk.name), [ast.Break()], [])
            br._weft_loc = s.loc
            tail.append(br)
        return tail

    def loop_header(self, s, body):
        if s.kind == "for":
            rng = ast.Call(name("range"), [self.ex(s.start).node, self.ex(s.stop).node,
                                           self.ex(s.step).node], [])
            st = ast.For(ast.Name(s.var.name, ast.Store()), rng, body, [])
        else:
            st = ast.While(ast.Constant(True), body, [])
        st._weft_loc = s.loc
        return st

    def s_Loop(self, s):
        return [self.loop_header(s, self.block(s.body) + self.loop_tail(s))]
