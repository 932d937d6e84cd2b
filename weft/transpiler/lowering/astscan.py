"""What a block of kernel source does, read from its AST before lowering it: the names it
rebinds, whether it can leave early, whether a loop's variable is read after the loop, whether
it holds a ``wp.static`` still to evaluate."""
from __future__ import annotations

import ast

from ...core import types as T
from ...stdlib.constructors import declaration_of
from . import literals


def assigned_names(ctx, stmts):
    """Names a statement list (re)binds, in order of appearance, loop variables excluded: the
    targets of assignments, and the arguments that calls assign (a random draw advances its
    state variable, an output-argument builtin assigns its outputs), as the callees declare."""
    out, seen = [], set()
    inplace, views = set(), {}  # names changed in place; view name -> the tile it views

    def add(target):
        if isinstance(target, ast.Name):
            if target.id not in seen:
                seen.add(target.id)
                out.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                add(t)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            add(target.value)  # component assignment rebinds a local value

    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    add(t)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                add(node.target)
            elif isinstance(node, ast.For):
                add(node.target)
            elif isinstance(node, ast.Call):
                try:
                    callee = ctx.resolve(node.func)
                except Exception:  # noqa: BLE001 - reported where the call is lowered
                    callee = None
                decl = declaration_of(callee) if callee is not None else None
                for a in decl.assigned_args(node) if decl is not None else ():
                    add(a)
                    inplace.add(getattr(a, "id", None))
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        inplace.add(t.value.id)
                    elif isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
                        inplace.add(t.id)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name):
                src = _viewed_tile(ctx, node.value)
                if src is not None:
                    views[node.targets[0].id] = src
    # a tile view changed in place changes the tile it views (tiles.store_back): that tile is
    # rebound too
    changed = True
    while changed:
        changed = False
        for v, base in views.items():
            if v in inplace and base not in seen:
                add(ast.Name(base, ast.Load()))
                inplace.add(base)
                changed = True
    return out


def _viewed_tile(ctx, value):
    """The name of the tile ``value`` (an expression) takes a view of (``t[i]``,
    ``t[1:3, :]``, ``wp.tile_view(t, ...)``), if it is a tile bound now, else None."""
    base = None
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
        base = value.value.id
    elif isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name) \
            and getattr(value.func, "attr", getattr(value.func, "id", None)) == "tile_view":
        base = value.args[0].id
    if base is None or not T.is_tile_type(getattr(ctx.env.get(base), "type", None)):
        return None
    return base


def may_exit(stmts, loop_level=True):
    """True if ``stmts`` can leave the enclosing block early (break/continue/return)."""
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if loop_level and isinstance(s, (ast.Break, ast.Continue)):
            return True
        if isinstance(s, ast.If) and (may_exit(s.body, loop_level) or
                                      may_exit(s.orelse, loop_level)):
            return True
        if isinstance(s, (ast.For, ast.While)) and may_exit(s.body, loop_level=False):
            return True
    return False


def breaks_out(stmts):
    """True if ``stmts`` (a loop body) has a ``break`` of that loop."""
    for s in stmts:
        if isinstance(s, ast.Break):
            return True
        if isinstance(s, ast.If) and (breaks_out(s.body) or breaks_out(s.orelse)):
            return True
    return False


def read_after(ctx, s, name):
    """A hidden name to carry the loop variable ``name`` out of loop ``s`` when the function
    reads ``name`` after the loop (None otherwise: most loops need not carry it)."""
    if not live_after(ctx, s, name):
        return None
    return f"{name}__last_{s.lineno}_{s.col_offset}"


def uses_static(ctx, stmts):
    """Whether ``stmts`` hold a ``wp.static`` left to evaluate while building (one that names
    a loop variable: those evaluated at declaration need no unrolling)."""
    from ...stdlib.lang import static
    from ...transpiler.statics import position
    done = ctx.src.statics if ctx.src is not None else {}
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and hasattr(node, "end_col_offset") and \
                position(node) in done:
            continue  # nor the static expressions inside it
        if isinstance(node, ast.Call):
            try:
                if literals.resolve_global(ctx, node.func) is static:
                    return True
            except Exception:  # noqa: BLE001 - reported where it is lowered
                pass
        todo.extend(ast.iter_child_nodes(node))
    return False


def live_after(ctx, s, name):
    """Whether the function may read ``name`` after loop ``s`` before binding it anew: a read
    that follows ``s`` (in its block, then in the enclosing blocks; and in the next iteration of
    an enclosing loop) with no plain ``name = <value not reading name>`` at a block level
    between. Conservative: a read anywhere inside a later compound statement counts."""
    return name in live_after_many(ctx, s, [name])


def live_after_many(ctx, s, names):
    """The set of ``names`` that are :func:`live_after` loop ``s``, found in one walk (a walk
    per name made lowering a loop body of N assignments quadratic)."""
    tree = ctx.src.tree if ctx.src is not None else None
    path = _path_to(tree.body, s, tree) if tree is not None else None
    pending, live = set(names), set()
    reads = {}
    for block, idx, owner in reversed(path or []):
        if not pending:
            break
        for n, v in _first_uses(block[idx + 1:], pending, reads).items():
            pending.discard(n)
            if v:
                live.add(n)
        if isinstance(owner, (ast.For, ast.While)) and pending:
            hit = set()
            if isinstance(owner, ast.While):
                hit |= _names_read(owner.test, reads) & pending
            # the next iteration, up to here (and the other parts of the statement holding s)
            hit |= {n for n, v in _first_uses(block[:idx], pending - hit, reads).items() if v}
            hit |= _names_read_outside(block[idx], s) & pending
            live |= hit
            pending -= hit
    return live


def _names_read_outside(node, s):
    """The names ``node`` reads outside the subtree of ``s``."""
    out, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n is s:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        todo.extend(ast.iter_child_nodes(n))
    return out


def _path_to(block, s, owner):
    """``[(block, index, owner)]`` from the function body down to the block holding ``s``."""
    for i, t in enumerate(block):
        if t is s:
            return [(block, i, owner)]
        for field in ("body", "orelse"):
            inner = getattr(t, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                sub = _path_to(inner, s, t)
                if sub is not None:
                    return [(block, i, owner)] + sub
    return None


def _first_uses(stmts, names, reads):
    """``{name: True or False}`` for the ``names`` whose first use in ``stmts`` is decided:
    True if ``stmts`` may read it before rebinding it, False if every path through them
    rebinds it first (undecided names are left out). One walk for all the names (``reads``:
    memo of :func:`_names_read`)."""
    pending, out = set(names), {}

    def settle(found, value):
        for n in found:
            out[n] = value
        pending.difference_update(found)

    for t in stmts:
        if not pending:
            break
        if isinstance(t, ast.If):
            settle(_names_read(t.test, reads) & pending, True)
            if not pending:
                break
            a = _first_uses(t.body, pending, reads)
            b = _first_uses(t.orelse, pending, reads)
            # (a and b decide names of ``pending`` only: walked by their entries, not by
            # ``pending``, which holds every name of a long body)
            settle({n for part in (a, b) for n, v in part.items() if v is True}, True)
            settle({n for n, v in a.items() if v is False and b.get(n) is False and n in pending},
                   False)
        elif isinstance(t, (ast.For, ast.While)):  # its body may run no iteration
            head = t.iter if isinstance(t, ast.For) else t.test
            settle(_names_read(head, reads) & pending, True)
            # (the body reads the loop's own variable)
            own = t.target.id if isinstance(t, ast.For) and isinstance(t.target, ast.Name) \
                else None
            inner = _first_uses(t.body, pending - {own}, reads)
            settle({n for n, v in inner.items() if v is True}, True)
        elif isinstance(t, (ast.Assign, ast.AnnAssign)) and t.value is not None:
            value_reads = _names_read(t.value, reads)
            bound = {x.id for x in (t.targets if isinstance(t, ast.Assign) else [t.target])
                     if isinstance(x, ast.Name)}
            settle({n for n in bound if n in pending and n not in value_reads}, False)
            settle(_names_read(t, reads) & pending, True)
        else:
            settle(_names_read(t, reads) & pending, True)
    return out


def _names_read(node, memo):
    """The names ``node`` reads (``ast.Load``), memoised by node in ``memo`` (the nodes live as
    long as the memo: their ids are not reused)."""
    hit = memo.get(id(node))
    if hit is None:
        hit = memo[id(node)] = {n.id for n in ast.walk(node)
                                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return hit
