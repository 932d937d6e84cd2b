"""The typed, structured IR that the lowering pass produces and the code generators read.

Invariants (guaranteed by ``lower``):
- Every value is a :class:`Var` assigned exactly once on each path (SSA without phi nodes):
  where paths join, each incoming path ends with a :class:`Assign` of a :class:`Copy` to the
  merged variable. The only variables assigned more than once are loop header variables
  (``Loop.carried``), reassigned only by the loop itself.
- ``break``, ``continue`` and ``return`` are gone: loop exits set ``Loop.brk`` and a func's
  result is one ``Return`` at the end of its body.
- Operands of expressions are variables or constants, never nested expressions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Loc:
    """Where a statement came from in the user's source."""

    filename: str
    lineno: int
    col: int = 0

    def comment(self):
        import os
        return f"{os.path.basename(self.filename)}:{self.lineno}"


@dataclass(eq=False)
class Var:
    """A value in the IR. Identity matters; ``name`` is unique within one function."""

    name: str
    type: Any

    def __repr__(self):
        return f"Var({self.name})"


@dataclass(frozen=True)
class Const:
    """A constant. ``literal`` constants (numbers written in the source) take the scalar type
    of the other operand when it is of the same kind (an int or float literal)."""

    value: Any
    type: Any
    literal: bool = False


# ----------------------------------------------------------------------------- expressions

@dataclass
class Prim:
    """A builtin primitive applied to operands: emitted inline with its rules."""

    builtin: Any  # stdlib.registry.Builtin
    args: list
    attrs: dict = field(default_factory=dict)


@dataclass
class Call:
    """A call of a specialised func (user ``wp.func`` or a template builtin)."""

    func: Any  # transpiler.state.FuncIR
    args: list


@dataclass
class GradCall:
    """``wp.grad(f)(args)``: the derivatives of func ``f``'s scalar result with respect to its
    differentiable inputs at ``args`` (one value, or a tuple), computed by ``f``'s adjoint. A
    value like any other for the kernel: its own derivative is zero (as Warp)."""

    func: Any  # transpiler.state.FuncIR
    args: list


@dataclass
class Load:
    """``array[index]``: a full element, or a view when fewer indices than dimensions."""

    array: Var
    index: list


@dataclass
class Copy:
    src: Any


@dataclass
class Assign:
    dst: Var
    expr: Any
    loc: Loc


@dataclass
class Store:
    """``array[index] = value``."""

    array: Var
    index: list
    value: Any
    loc: Loc


@dataclass
class AtomicRMW:
    """``wp.atomic_add(array, index, value)`` and friends; ``dst`` receives the old value."""

    op: str  # "add" or "sub", "min", "max", "exch", "cas"
    array: Var
    index: list
    value: Any
    dst: Optional[Var]
    loc: Loc
    compare: Any = None  # "cas": the value the element must hold for ``value`` to be stored


@dataclass
class If:
    cond: Any
    body: list
    orelse: list
    loc: Loc


@dataclass
class Loop:
    """A dynamic loop.

    ``kind == "for"``: ``for var in range(start, stop, step)``; ``kind == "while"``: an endless
    loop left through ``brk``. ``carried`` lists ``(header, end)`` pairs: ``header`` holds the
    value at the start of an iteration (and after the loop); every path through ``body`` assigns
    ``end``; after the body the loop copies ``end`` into ``header`` and leaves if ``brk``.
    """

    kind: str
    var: Optional[Var]
    start: Any
    stop: Any
    step: Any
    body: list
    carried: list
    brk: Optional[Var]
    loc: Loc


@dataclass
class Return:
    value: Any
    loc: Loc


@dataclass
class Effect:
    """A builtin run for its side effect only (``print``, ``wp.expect_eq``): the forward and
    tangent kernels run it, the adjoint's replay does not."""

    builtin: Any
    args: list
    loc: Loc
    attrs: dict = field(default_factory=dict)


def walk(stmts):
    """Yield every statement, depth first, loops and branches included."""
    stack = [iter(stmts)]  # (not recursive: a generator per block took a tenth of lowering)
    while stack:
        for s in stack[-1]:
            yield s
            if isinstance(s, If):
                stack.append(iter(s.orelse))
                stack.append(iter(s.body))
                break
            if isinstance(s, Loop):
                stack.append(iter(s.body))
                break
        else:
            stack.pop()


def defined_vars(stmts):
    """All variables assigned in ``stmts`` (in order of first assignment)."""
    seen = {}
    for s in walk(stmts):
        if isinstance(s, Assign):
            seen.setdefault(id(s.dst), s.dst)
        elif isinstance(s, AtomicRMW) and s.dst is not None:
            seen.setdefault(id(s.dst), s.dst)
        elif isinstance(s, Loop):
            if s.var is not None:
                seen.setdefault(id(s.var), s.var)
            for h, e in s.carried:
                seen.setdefault(id(h), h)
                seen.setdefault(id(e), e)
            if s.brk is not None:
                seen.setdefault(id(s.brk), s.brk)
    return list(seen.values())


def used_vars(stmts):
    """Ids of every variable read as an operand somewhere in ``stmts``."""
    used = set()

    def add(*ops):
        for o in ops:
            if isinstance(o, Var):
                used.add(id(o))

    for s in walk(stmts):
        if isinstance(s, Assign):
            e = s.expr
            if isinstance(e, (Prim, Call, GradCall)):
                add(*e.args)
            elif isinstance(e, Load):
                add(e.array, *e.index)
            elif isinstance(e, Copy):
                add(e.src)
        elif isinstance(s, (Store, AtomicRMW)):
            add(s.array, s.value, *s.index)
            if isinstance(s, AtomicRMW) and s.compare is not None:
                add(s.compare)
        elif isinstance(s, If):
            add(s.cond)
        elif isinstance(s, Loop):
            add(s.start, s.stop, s.step, s.brk, *(e for _, e in s.carried))
        elif isinstance(s, Return):
            add(s.value)
        elif isinstance(s, Effect):
            add(*s.args)
    return used
