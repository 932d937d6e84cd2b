"""The transpiler as a visible list of passes.

``PIPELINE`` names every pass that runs, in order, on a
:class:`~weft.transpiler.state.CompileState`; each pass is a module whose docstring states the
invariant it guarantees:

============ ======================= ===========================================================
pass         module                  after it
============ ======================= ===========================================================
lower        ``specialize``,         the kernels and every func they call (once per argument
             ``lowering/``           types) as typed, structured IR; user errors reported
verify       ``verify``              the IR keeps its invariants (else weft's bug is reported)
lanes        ``lanes``               cooperative CPU blocks only: the kernel as loops over its
                                     lanes between the block's barriers
analyze      ``analyze``             per-function facts: accesses, own-element reads, hazards
generate     ``generate`` (with      forward, adjoint and tangent functions per target, and the
             ``forward``,            kernels' ABI
             ``adjoint``,
             ``tangent``,
             ``targets``)
prune        ``prune``               no dead assignment left in adjoint and tangent functions
index_wraps  ``index_wraps``         integer temporaries that only index arrays unwrapped to 64
                                     bits (C's wrap-around kept for every other integer)
tile_views   ``tile_views``          tile loads nothing can write over while the tile lives
                                     read their array in place
cuda_tiles   ``cuda_tiles``          CUDA kernels only: tiles in shared memory, each tile
                                     operation shared by the threads of a block
assemble     ``assemble``            the module's source text
second_order ``second_order``        the tangents of the adjoint kernels (``tape.hvp``)
============ ======================= ===========================================================

Three pipelines are made of that list (:func:`passes`):

- ``"kernel"`` (:data:`KERNEL`): a module of kernels, every pass but ``second_order``;
- ``"second_order"`` (:data:`SECOND_ORDER`): ``second_order`` alone, on demand, from the text
  of a module ``"kernel"`` built (perhaps in an earlier process: the cache keeps the text);
- ``"host"`` (:data:`HOST`): a builtin called at Python scope (:mod:`weft.runtime.host`), from
  ``lower`` to ``assemble`` in their host forms (a synthetic func as the root; plain Python
  text), without ``index_wraps``, ``tile_views``, ``cuda_tiles`` (nothing compiles that code) and
  ``second_order``.

``WEFT_DUMP=lower,analyze,...`` (pass names, or ``all``) prints the state after those passes,
``stats`` the generated code size per function.
"""
from __future__ import annotations

import ast
import copy
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

from . import (analyze, assemble, cuda_tiles, generate, index_wraps, lanes, prune, second_order,
               specialize, tile_views, verify)
from ..stdlib.ir import Assign, If, Loop
from ..core.startup import collector_paused
from .state import CompileState


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


@dataclass(frozen=True)
class Pass:
    """One pass: ``run`` on a kernel module's state, ``show`` what ``WEFT_DUMP`` prints after
    it, ``host`` its form for a Python-scope call (None: it does not run there)."""

    name: str
    run: Callable
    show: Callable
    host: Optional[Callable] = None


PIPELINE = [
    Pass("lower", specialize.run, _dump_ir, host=specialize.run_host),
    Pass("verify", verify.run, lambda state: "IR verified", host=verify.run),
    Pass("lanes", lanes.run, _dump_ir),
    Pass("analyze", analyze.run, _dump_facts, host=analyze.run),
    Pass("generate", generate.run, _dump_defs, host=generate.run),
    Pass("prune", prune.run, _dump_defs, host=prune.run),
    Pass("index_wraps", index_wraps.run, _dump_defs),
    Pass("tile_views", tile_views.run, _dump_defs),
    Pass("cuda_tiles", cuda_tiles.run, _dump_defs),
    Pass("assemble", assemble.run, lambda state: state.source, host=assemble.run_host),
    Pass("second_order", second_order.run, lambda state: state.second_source),
]


def passes(kind="kernel"):
    """The ``(name, function, show)`` of each pass of pipeline ``kind`` (``"kernel"``,
    ``"host"``, ``"second_order"``: see the module's docstring), in order."""
    if kind == "kernel":
        return [(p.name, p.run, p.show) for p in PIPELINE if p.name != "second_order"]
    if kind == "second_order":
        return [(p.name, p.run, p.show) for p in PIPELINE if p.name == "second_order"]
    if kind == "host":
        return [(p.name, p.host, p.show) for p in PIPELINE if p.host is not None]
    raise ValueError(f"no pipeline {kind!r}")


KERNEL, SECOND_ORDER, HOST = passes("kernel"), passes("second_order"), passes("host")


def _dump_stats(state):
    """Generated code size per function: what Numba will have to compile."""
    lines = []
    for d in state.defs:
        text = ast.unparse(ast.fix_missing_locations(copy.deepcopy(d)))
        lines.append(f"    {d.name}: {text.count(chr(10)) + 1} lines, {len(text)} characters")
    return "generated code size per function:\n" + "\n".join(lines)


def run(state, kind="kernel"):
    """Run every pass of pipeline ``kind`` on ``state``; ``WEFT_DUMP`` names passes whose
    state to print, ``stats`` the generated code size per function (after ``prune``), ``all``
    everything."""
    dump = {p.strip() for p in os.environ.get("WEFT_DUMP", "").split(",") if p.strip()}
    with collector_paused():
        for pass_name, fn, show in passes(kind):
            state = fn(state)
            if pass_name in dump or "all" in dump:
                print(f"# ---- weft: after pass '{pass_name}' ----\n{show(state)}",
                      file=sys.stderr)
            if pass_name == "prune" and ("stats" in dump or "all" in dump):
                print(f"# ---- weft: stats ----\n{_dump_stats(state)}", file=sys.stderr)
    return state


def second_order_source(source, abi):
    """The text of the second-order module of a kernel module's text ``source`` whose kernel
    has ABI ``abi`` (the ``second_order`` pipeline)."""
    state = CompileState(roots=[], abis={abi.kernel: abi}, source=source)
    return run(state, "second_order").second_source


