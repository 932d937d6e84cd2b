"""What a block of kernel source does, read from its AST before lowering it: the names it
rebinds, whether it can leave early, whether a loop's variable is read after the loop, whether
it holds a ``wp.static`` still to evaluate."""
from __future__ import annotations

import ast

from ...stdlib.constructors import declaration_of
from . import literals


def assigned_names(ctx, stmts):
    """Names a statement list (re)binds, in order of appearance, loop variables excluded: the
    targets of assignments, and the arguments that calls assign (a random draw advances its
    state variable, an output-argument builtin assigns its outputs), as the callees declare."""
    out = []

    def add(target):
        if isinstance(target, ast.Name):
            if target.id not in out:
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
    return out


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
    tree = ctx.src.tree if ctx.src is not None else None
    if tree is None:
        return None
    end = (s.end_lineno, s.end_col_offset)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) \
                and (node.lineno, node.col_offset) > end:
            return f"{name}__last_{s.lineno}_{s.col_offset}"
    return None


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
