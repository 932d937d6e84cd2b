"""The transpiler as a visible list of passes.

``PIPELINE`` is the list that runs, in order, on a :class:`~weft.transpiler.state.CompileState`;
each pass is a module whose docstring states the invariant it guarantees:

========== ====================== =============================================================
pass       module                 after it
========== ====================== =============================================================
lower      ``specialize``,        the kernels and every func they call (once per argument
           ``lowering/``          types) as typed, structured IR; user errors reported
verify     ``verify``             the IR keeps its invariants (else weft's bug is reported)
analyze    ``analyze``            per-function facts: accesses, own-element reads, hazards
generate   ``generate`` (with     forward, adjoint and tangent functions per target, and the
           ``forward``,           kernels' ABI
           ``adjoint``,
           ``tangent``,
           ``targets``)
assemble   ``assemble``           the module's source text
========== ====================== =============================================================

``WEFT_DUMP=lower,analyze,...`` (pass names, or ``all``) prints the state after those passes.
"""
from __future__ import annotations

import ast
import contextlib
import copy
import gc
import os
import sys

from . import analyze, assemble, generate, specialize, verify
from ..stdlib.ir import Assign, If, Loop


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


def _dump_facts(state):
    lines = []
    for fir, f in state.facts.items():
        lines.append(f"{fir.kind} {fir.name}:")
        for p, acc in f.accesses.items():
            kinds = ", ".join(f"{a.kind}{'(own)' if a.own else ''}@{a.line}" for a in acc)
            lines.append(f"    {p.name}: {kinds or 'unused'}")
        if fir.kind == "kernel":
            fwd, adj = f.private_accumulators()
            lines.append(f"    private buffers: forward {fwd}, adjoint {adj}")
            lines.append(f"    overwritten: {f.overwritten()}; stored: {f.stored()}")
    return "\n".join(lines)


def _dump_defs(state):
    return "\n\n".join(assemble.unparse(d) for d in state.defs)


PIPELINE = [
    ("lower", specialize.run, _dump_ir),
    ("verify", verify.run, lambda state: "IR verified"),
    ("analyze", analyze.run, _dump_facts),
    ("generate", generate.run, _dump_defs),
    ("assemble", assemble.run, lambda state: state.source),
]


def _dump_stats(state):
    """Generated code size per function: what Numba will have to compile."""
    lines = []
    for d in state.defs:
        text = ast.unparse(ast.fix_missing_locations(copy.deepcopy(d)))
        lines.append(f"    {d.name}: {text.count(chr(10)) + 1} lines, {len(text)} characters")
    return "generated code size per function:\n" + "\n".join(lines)


def run(state):
    """Run every pass; ``WEFT_DUMP`` names passes whose state to print, ``stats`` the generated
    code size per function, ``all`` everything."""
    dump = {p.strip() for p in os.environ.get("WEFT_DUMP", "").split(",") if p.strip()}
    with collector_paused():
        for pass_name, fn, show in PIPELINE:
            state = fn(state)
            if pass_name in dump or "all" in dump:
                print(f"# ---- weft: after pass '{pass_name}' ----\n{show(state)}",
                      file=sys.stderr)
            if pass_name == "generate" and ("stats" in dump or "all" in dump):
                print(f"# ---- weft: stats ----\n{_dump_stats(state)}", file=sys.stderr)
    return state


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector off while the passes run (as it was after). The passes keep
    every IR node and generated ``ast`` node alive until the source is written (about 600
    objects per statement of a kernel), and each full collection walks them all: with the
    collector on, a 3,000-statement kernel spent two thirds of its transpile in it. What the
    passes drop is freed by reference counting; the few cycles wait for the next collection."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
