"""The transpiler as a visible list of passes.

``PIPELINE`` runs in order on a :class:`~weft.transpiler.state.CompileState`. Set
``WEFT_DUMP=lower,emit`` (pass names, or ``all``) to print the state after the named passes:
the typed IR after ``lower``, the generated module after ``emit``.
"""
from __future__ import annotations

import os
import sys

from . import emit, specialize
from .ir import Assign, If, Loop


def _dump_ir(state):
    lines = []

    def show(stmts, depth):
        for s in stmts:
            pad = "    " * depth
            if isinstance(s, If):
                lines.append(f"{pad}if {getattr(s.cond, 'name', s.cond)}:")
                show(s.body, depth + 1)
                lines.append(f"{pad}else:")
                show(s.orelse, depth + 1)
            elif isinstance(s, Loop):
                carried = ", ".join(f"{h.name}<-{e.name}" for h, e in s.carried)
                lines.append(f"{pad}loop {s.kind} {getattr(s.var, 'name', '')} "
                             f"carried[{carried}] brk={getattr(s.brk, 'name', None)}:")
                show(s.body, depth + 1)
            elif isinstance(s, Assign):
                lines.append(f"{pad}{s.dst.name}: {getattr(s.dst.type, '__name__', s.dst.type)}"
                             f" = {s.expr}")
            else:
                lines.append(f"{pad}{s}")

    for fir in state.funcs:
        lines.append(f"{fir.kind} {fir.name}({', '.join(p.name for p in fir.params)}):")
        show(fir.body, 1)
    return "\n".join(lines)


PIPELINE = [("lower", specialize.run), ("emit", emit.run)]


def run(state):
    dump = {p.strip() for p in os.environ.get("WEFT_DUMP", "").split(",") if p.strip()}
    for pass_name, fn in PIPELINE:
        state = fn(state)
        if pass_name in dump or "all" in dump:
            text = _dump_ir(state) if pass_name == "lower" else state.source
            print(f"# ---- weft: after pass '{pass_name}' ----\n{text}", file=sys.stderr)
    return state
