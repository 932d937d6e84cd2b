"""Numba's first pass over generated CPU code: the same program in fewer blocks and statements.

Numba's front end costs about 1.5-2 ms per IR statement, and several of its passes (SSA
reconstruction, rewrites, legalization, variable lifetimes) walk every block once per variable,
so their time grows with blocks times variables (``docs/performance.md``, stop 53). Generated
code has more blocks and statements than it needs, for reasons the IR shows plainly:

* **Tests of an argument against None.** An adjoint guards each accumulation into an array's
  gradient with ``if adj_a is not None:``, so that one compiled function serves launches with
  and without that gradient. Numba specialises on the argument's type, and it prunes the test
  when the argument is None, but not when it is an array. Here both are pruned: an argument of
  a type that can never be None (not ``none``, ``Optional`` or ``Omitted``) is not None.
* **Casts of constants.** ``float32(0.5)`` is a global, a constant and a call to type and lower;
  it becomes one global holding the NumPy scalar (typed and lowered as a constant of that type;
  only where the conversion is exact, or a float rounded to a narrower float, as the call
  would round it). A global, not a constant: Numba's array expressions inline their block's
  constants into Python source, where a NumPy scalar is not a valid constant.
* **``bool()`` around comparisons.** Python 3.11's jumps make Numba call ``bool`` on every
  branch condition; a condition made by a comparison is branched on directly (lowering casts a
  branch condition to a boolean either way).
* **Blocks of at most** :data:`BLOCK_STATEMENTS` **statements.** After the pruning, the blocks
  left form chains; each chain is joined into blocks of at most that many statements, and a
  longer block (a long straight-line kernel) is cut into such blocks joined by jumps. Not one
  block: LLVM's SROA grows quadratically with the length of a block holding Numba's temporary
  array structures (a 300-statement adjoint joined whole spent 6.7 s in SROA; in blocks of 100,
  all of LLVM took 0.25 s); a 1,000-statement chain's forward compiled in 41 s as one block,
  20 s cut into blocks of 100 (one run each).

The pass runs first, before ``IRProcessing``, so every later pass sees the smaller function. The
machine code computes the same values; the generated source text is unchanged.
"""
from __future__ import annotations

import operator
from collections import Counter, defaultdict

import numpy as np
from numba.core import ir, ir_utils, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.compiler_machinery import FunctionPass, register_pass

#: the longest block joining chains makes, and the length long blocks are cut to (IR statements)
BLOCK_STATEMENTS = 100

_FLOATS = (np.float32, np.float64)
_INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)
_COMPARISONS = (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
                operator.is_, operator.is_not)
_MAYBE_NONE = (types.NoneType, types.Optional, types.Omitted, types.Undefined)


def _constant_cast(kind, value):
    """``kind(value)`` as the constant a compiled call would make, or None where folding it
    could differ from the call (an integer out of range, a big integer into a float, ...)."""
    if type(value) is bool:
        return None
    if kind in _FLOATS and type(value) is float:
        with np.errstate(over="ignore"):  # to inf, as the compiled cast rounds
            return kind(value)
    if type(value) is not int:
        return None
    if kind in _INTS:
        info = np.iinfo(kind)
        return kind(value) if info.min <= value <= info.max else None
    if kind in _FLOATS and abs(value) <= 2 ** 24:
        return kind(value)
    return None


class _Defs:
    """The single definition of a variable, before SSA: None where there are several."""

    def __init__(self, func_ir):
        self.defs = func_ir._definitions

    def __call__(self, var):
        found = self.defs.get(var.name, ())
        return found[0] if len(found) == 1 else None


def _bool_of(defs, var):
    """``x`` where ``var`` is defined as ``bool(x)`` (Numba's branch conditions), else None."""
    call = defs(var)
    if isinstance(call, ir.Expr) and call.op == "call" and len(call.args) == 1 \
            and not call.kws and call.vararg is None:
        head = defs(call.func)
        if isinstance(head, ir.Global) and head.value is bool:
            return call.args[0]
    return None


def _none_test(defs, cond, arg_types):
    """For a branch on ``cond``: (True or False, the test's variables) where ``cond`` tests an
    argument against None and the argument's type decides it; None where it does not."""
    names = [cond.name]
    inner = _bool_of(defs, cond)
    if inner is not None:
        names.append(inner.name)
        cond = inner
    test = defs(cond)
    if not (isinstance(test, ir.Expr) and test.op == "binop"
            and test.fn in (operator.is_, operator.is_not)):
        return None
    lhs, rhs = defs(test.lhs), defs(test.rhs)
    if isinstance(lhs, ir.Const) and lhs.value is None:
        lhs, rhs = rhs, lhs
    if not (isinstance(rhs, ir.Const) and rhs.value is None and isinstance(lhs, ir.Arg)):
        return None
    if lhs.index >= len(arg_types):
        return None
    kind = arg_types[lhs.index]
    if kind is types.none or isinstance(kind, types.NoneType):
        is_none = True
    elif isinstance(kind, _MAYBE_NONE):
        return None
    else:
        is_none = False
    return (is_none if test.fn is operator.is_ else not is_none), names


def _uses(blocks):
    counts = Counter()
    for block in blocks.values():
        for stmt in block.body:
            counts.update(v.name for v in stmt.list_vars())
            if isinstance(stmt, ir.Assign):
                counts[stmt.target.name] -= 1
    return counts


def _fold_statements(blocks, defs):
    """Constant casts into constants, ``bool(comparison)`` conditions into the comparison.
    Returns the names of the assignments changed, and of the ``bool`` calls left unread."""
    folded, bools = set(), set()
    for block in blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Branch):
                inner = _bool_of(defs, stmt.cond)
                compared = defs(inner) if inner is not None else None
                if isinstance(compared, ir.Expr) and compared.op == "binop" \
                        and compared.fn in _COMPARISONS:
                    bools.add(stmt.cond.name)
                    stmt.cond = inner
                continue
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                    and stmt.value.op == "call" and len(stmt.value.args) == 1
                    and not stmt.value.kws and stmt.value.vararg is None):
                continue
            call = stmt.value
            head, arg = defs(call.func), defs(call.args[0])
            if not (isinstance(head, (ir.Global, ir.FreeVar)) and isinstance(arg, ir.Const)):
                continue
            kind = head.value
            if not (kind in _FLOATS or kind in _INTS):
                continue
            value = _constant_cast(kind, arg.value)
            if value is None:
                continue
            # a global, not a constant: array expressions inline the constants of their
            # block into Python source, where a NumPy scalar is not a valid constant
            stmt.value = ir.Global(f"{kind.__name__}({arg.value!r})", value, call.loc)
            folded.add(stmt.target.name)
    return folded, bools


def _drop_unused(blocks, candidates):
    """Remove the assignments of ``candidates`` that nothing reads, and then those that only the
    removed ones read (each is a global, a constant, a comparison or ``bool`` of one: no effect
    but its value)."""
    uses = _uses(blocks)
    where = {}
    for label, block in blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.target.name in candidates:
                where[stmt.target.name] = (label, stmt)
    work = [name for name in where if uses[name] == 0]
    dropped = defaultdict(set)  # block -> ids of its statements to drop
    while work:
        label, stmt = where.pop(work.pop())
        dropped[label].add(id(stmt))
        for var in stmt.value.list_vars() if isinstance(stmt.value, ir.Inst) else ():
            uses[var.name] -= 1
            if uses[var.name] == 0 and var.name in where:
                work.append(var.name)
    for label, ids in dropped.items():
        block = blocks[label]
        block.body = [s for s in block.body if id(s) not in ids]


def _join_chains(blocks, limit):
    """Join each block with its only successor when it is that successor's only predecessor,
    while the joined block stays within ``limit`` statements."""
    cfg = compute_cfg_from_blocks(blocks)
    removed = set()
    for label in list(blocks):
        if label in removed:
            continue
        block = blocks[label]
        succs = list(cfg.successors(label))
        while len(succs) == 1:
            nxt = succs[0][0]
            preds = list(cfg.predecessors(nxt))
            if nxt in removed or nxt == label or len(preds) != 1 or preds[0][0] != label:
                break
            following = blocks[nxt]
            if len(block.body) + len(following.body) - 1 > limit:
                break
            succs = list(cfg.successors(nxt))
            block.body.pop()  # the jump
            block.body.extend(following.body)
            del blocks[nxt]
            removed.add(nxt)
            label = nxt
    return bool(removed)


def _split_long_blocks(blocks, limit):
    """Cut each block of more than ``limit`` statements into blocks of at most ``limit`` (the
    last a jump to the next; new labels after the largest). Returns the new mapping when
    something was cut, else None."""
    if all(len(b.body) <= limit for b in blocks.values()):
        return None
    out, fresh = {}, max(blocks) + 1
    for label, block in blocks.items():
        body = block.body
        while len(body) > limit:
            piece, body = body[:limit - 1], body[limit - 1:]  # and a jump
            part = ir.Block(scope=block.scope, loc=piece[0].loc)
            part.body = piece + [ir.Jump(fresh, piece[-1].loc)]
            out[label] = part
            label, fresh = fresh, fresh + 1
        rest = ir.Block(scope=block.scope, loc=body[0].loc)
        rest.body = body
        out[label] = rest
    return out


@register_pass(mutates_CFG=True, analysis_only=False)
class SimplifyGeneratedCode(FunctionPass):
    """Prune argument None tests, fold constant casts and ``bool()`` around comparisons, join
    the chains of blocks that are left and cut long blocks (see the module's text)."""

    _name = "weft_simplify_generated_code"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        func_ir = state.func_ir
        blocks = func_ir.blocks
        defs = _Defs(func_ir)
        arg_types = tuple(state.args or ())
        pruned = set()  # the variables of the pruned tests
        for block in blocks.values():
            last = block.body[-1] if block.body else None
            if isinstance(last, ir.Branch):
                decided = _none_test(defs, last.cond, arg_types)
                if decided is not None:
                    taken, names = decided
                    block.body[-1] = ir.Jump(last.truebr if taken else last.falsebr, last.loc)
                    pruned.update(names)
        folded, bools = _fold_statements(blocks, defs)
        if pruned:
            cfg = compute_cfg_from_blocks(blocks)
            for label in cfg.dead_nodes():
                del blocks[label]
        if folded or bools or pruned:
            single = {name for name, found in func_ir._definitions.items() if len(found) == 1}
            _drop_unused(blocks, single & (bools | pruned | {
                name for name in single
                if isinstance(func_ir._definitions[name][0], (ir.Global, ir.Const))}))
        joined = _join_chains(blocks, BLOCK_STATEMENTS)
        cut = _split_long_blocks(blocks, BLOCK_STATEMENTS)
        if cut is not None:
            func_ir.blocks = blocks = cut
        changed = bool(folded or bools or pruned or joined or cut is not None)
        if changed:
            func_ir._definitions = ir_utils.build_definitions(blocks)
        return changed
