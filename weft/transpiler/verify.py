"""Pass ``verify``: check that the lowered IR keeps the invariants stated in :mod:`.ir`.

Invariant: after this pass every function of ``state.funcs`` has been checked; a violation is
weft's bug and raises :class:`~weft.errors.InternalError` naming the function and the line. The
checks: operands are variables or constants, never nested expressions; every variable is
defined before it is read, on every path to the read (branches define what they merge on both
sides; a loop's end variables are assigned on every path through its body); a copy keeps its
type; distinct variables have distinct names; a function returns once, at its end (kernels
never).
"""
from __future__ import annotations

from ..core import types as T
from ..core.errors import InternalError
from ..stdlib import ir


class _Checker:
    def __init__(self, fir):
        self.fir = fir
        self.names = {}
        # one log per open branch or loop body: the ids it defined, taken back out when it
        # closes (copying the defined set per branch made checking quadratic in their number)
        self.journal = []

    def fail(self, msg, loc=None):
        where = f" (line {loc.lineno})" if loc is not None else ""
        raise InternalError(f"invalid IR in {self.fir.kind} '{self.fir.name}'{where}: {msg}")

    def var(self, v, loc):
        if not isinstance(v, ir.Var):
            return
        other = self.names.setdefault(v.name, v)
        if other is not v:
            self.fail(f"two variables are named '{v.name}'", loc)
        if v.type is None:
            self.fail(f"variable '{v.name}' has no type", loc)

    def operand(self, o, defined, loc):
        if isinstance(o, ir.Const):
            return
        if not isinstance(o, ir.Var):
            self.fail(f"operand {o!r} is neither a variable nor a constant", loc)
        self.var(o, loc)
        if id(o) not in defined:
            self.fail(f"'{o.name}' is read before it is defined on every path", loc)

    def define(self, v, defined, loc):
        self.var(v, loc)
        self._add(defined, id(v))

    def _add(self, defined, key):
        if key not in defined:
            defined.add(key)
            if self.journal:
                self.journal[-1].append(key)

    def _scoped(self, stmts, defined):
        """Check branch ``stmts`` on ``defined``; returns the ids it defined, which leave
        ``defined`` again."""
        self.journal.append([])
        self.block(stmts, defined)
        added = self.journal.pop()
        defined.difference_update(added)
        return set(added)

    def block(self, stmts, defined, top=False):
        for k, s in enumerate(stmts):
            loc = getattr(s, "loc", None)
            if isinstance(s, ir.Assign):
                e = s.expr
                ops = e.args if isinstance(e, (ir.Prim, ir.Call, ir.GradCall)) else \
                    [e.array, *e.index] if isinstance(e, ir.Load) else \
                    [e.src] if isinstance(e, ir.Copy) else None
                if ops is None:
                    self.fail(f"unknown expression {type(e).__name__}", loc)
                for o in ops:
                    self.operand(o, defined, loc)
                if isinstance(e, ir.Copy) and e.src.type != s.dst.type and not (
                        isinstance(e.src, ir.Const) and T.is_scalar(s.dst.type)):
                    self.fail(f"copy of a {T.type_name(e.src.type)} into '{s.dst.name}' of "
                              f"type {T.type_name(s.dst.type)}", loc)
                self.define(s.dst, defined, loc)
            elif isinstance(s, (ir.Store, ir.AtomicRMW)):
                for o in [s.array, s.value, *s.index] + (
                        [s.compare] if getattr(s, "compare", None) is not None else []):
                    self.operand(o, defined, loc)
                if isinstance(s, ir.AtomicRMW) and s.dst is not None:
                    self.define(s.dst, defined, loc)
            elif isinstance(s, ir.If):
                self.operand(s.cond, defined, loc)
                a = self._scoped(s.body, defined)
                b = self._scoped(s.orelse, defined)
                for key in b & a:
                    self._add(defined, key)
            elif isinstance(s, ir.Loop):
                for o in (s.start, s.stop, s.step):
                    if o is not None:
                        self.operand(o, defined, loc)
                for h, _ in s.carried:
                    self.operand(h, defined, loc)  # headers are set before the loop
                self.journal.append([])
                if s.var is not None:
                    self.define(s.var, defined, loc)
                self.block(s.body, defined)
                for h, e in s.carried:
                    if id(e) not in defined:
                        self.fail(f"loop end variable '{e.name}' is not assigned on every path",
                                  loc)
                    self.var(e, loc)
                if s.brk is not None and id(s.brk) not in defined:
                    self.fail(f"loop exit flag '{s.brk.name}' is not assigned on every path", loc)
                defined.difference_update(self.journal.pop())
            elif isinstance(s, ir.Effect):
                for o in s.args:
                    self.operand(o, defined, loc)
            elif isinstance(s, ir.Return):
                if not top or k != len(stmts) - 1:
                    self.fail("a return that is not the last statement of the function", loc)
                if self.fir.kind == "kernel" and s.value is not None:
                    self.fail("a kernel returns a value", loc)
                if s.value is not None:
                    self.operand(s.value, defined, loc)
            else:
                self.fail(f"unknown statement {type(s).__name__}", loc)
        return defined


def verify(fir):
    """Check one function's IR (raises InternalError)."""
    c = _Checker(fir)
    defined = set()
    for p in fir.params:
        c.define(p, defined, None)
    c.block(fir.body, defined, top=True)


def run(state):
    for fir in state.funcs:
        verify(fir)
        for rule in fir.custom.values():
            verify(rule)
    return state
