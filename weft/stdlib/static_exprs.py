"""``wp.static(expr)`` at declaration: the static expressions a kernel or func evaluates when it
is declared (``@wp.kernel`` or ``@wp.func`` runs), and what Warp's ``kernel.adj`` tells about
them.

As in Warp, a static expression that names nothing of the function's own (no parameter, local
or loop variable) is evaluated once, when the kernel or func is declared, with the globals and
closure of its definition; its value is kept per occurrence in the source
(:attr:`weft.stdlib.source.Source.statics`) and enters the cache key, so a side effect runs
once and a warm cache never serves a stale value. The others (those naming a loop variable, or
a name not defined yet at declaration) are evaluated while the kernel is built
(:mod:`weft.transpiler.statics`).
"""
from __future__ import annotations

import ast
import sys

from ..core.errors import KernelError
from .source import error

def position(node):
    """The key of one occurrence in the source."""
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def definition_scope(pyfunc):
    """The globals and closure values a function's names refer to."""
    scope = dict(pyfunc.__globals__)
    if pyfunc.__closure__:
        for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # a closure variable not bound yet
                pass
    return scope


def _static_form():
    from .registry import NAMESPACE
    return NAMESPACE.get("static")


def mentions_static(pyfunc):
    """Whether the function's code can call ``wp.static`` (cheap: its names only)."""
    code = pyfunc.__code__
    if "static" in code.co_names:
        return True
    registry = sys.modules.get("weft.stdlib.registry")  # not loaded yet: nothing aliases it
    static = getattr(registry, "NAMESPACE", {}).get("static")
    if static is None:
        return False
    glob = pyfunc.__globals__
    if any(glob.get(n) is static for n in code.co_names):
        return True
    for cell in pyfunc.__closure__ or ():
        try:
            if cell.cell_contents is static:
                return True
        except ValueError:
            pass
    return False


def _resolve(node, scope):
    """The object a Name/Attribute chain names in ``scope``, or None."""
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, scope)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def local_names(fdef):
    """Names the function binds itself: parameters, assignments, loop variables."""
    args = fdef.args
    names = {a.arg for a in args.args + args.kwonlyargs + args.posonlyargs}
    names |= {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)
              and isinstance(n.ctx, (ast.Store, ast.Del))}
    return names


def free_names(expr):
    """The names ``expr`` reads."""
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def is_static_call(node, scope):
    return isinstance(node, ast.Call) and _resolve(node.func, scope) is _static_form()


def check_value(value, where):
    """Warp's rule for what a static expression may give (raises ``ValueError``)."""
    from ..core import types as T
    if value is None:
        raise ValueError("Static expression returns an unsupported value: None is returned")
    from ..core.typeinfo import _is_array_object
    if _is_array_object(value):
        raise ValueError("Static expression returns an unsupported value: a Warp array cannot "
                         "be created inside Warp kernels")
    cls = type(value)
    if T.is_struct(cls):
        path = _array_member(value, cls.__name__)
        if path is not None:
            raise ValueError("Static expression returns an unsupported value: the returned "
                             "Warp struct contains a data type that cannot be constructed "
                             "inside Warp kernels: a Warp array cannot be created inside Warp "
                             f"kernels at {path}")


def _array_member(value, path):
    from ..core import types as T
    for name, t in type(value)._wp_struct_.fields.items():
        if isinstance(t, T.ArrayType):
            return f"{path}.{name}"
        if T.is_struct(t):
            inner = _array_member(getattr(value, name), f"{path}.{name}")
            if inner is not None:
                return inner
    return None


def _located(src, node, message):
    return error(src, node, message)


def evaluate_eager(src):
    """Evaluate the static expressions of ``src`` (a :class:`~weft.stdlib.source.Source`)
    that name nothing local; fill ``src.statics``. Raises ``KernelError`` when one fails for
    another reason than a name not defined yet."""
    scope = definition_scope(src.pyfunc)
    local = local_names(src.tree)

    def visit(node):
        if is_static_call(node, scope) and len(node.args) == 1 and not node.keywords:
            expr = node.args[0]
            if not (free_names(expr) & local):
                code = compile(ast.fix_missing_locations(ast.Expression(expr)),
                               src.filename, "eval")
                try:
                    value = eval(code, dict(scope))  # noqa: S307 - the user's own expression
                except NameError:
                    return  # defined later in the module: evaluated when the kernel is built
                except Exception as exc:  # noqa: BLE001 - reported where it is written
                    raise _located(src, node, f"Error evaluating static expression: {exc}")
                try:
                    check_value(value, node)
                except ValueError as exc:
                    raise _located(src, node, str(exc)) from None
                src.statics[position(node)] = value
                return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in src.tree.body:
        visit(stmt)


def declare(fn):
    """At ``@wp.kernel``/``@wp.func``: parse and evaluate the eager static expressions when the
    function can call ``wp.static``."""
    if not mentions_static(fn.func):
        return
    try:
        src = fn.parsed()
    except KernelError:
        return  # no source to read: the build reports it
    evaluate_eager(src)


class AdjointView:
    """``kernel.adj``: the parts of Warp's ``Adjoint`` that describe the declaration."""

    def __init__(self, fn):
        self._src = fn.parsed()

    @property
    def source(self):
        return ast.unparse(self._src.tree)

    @property
    def tree(self):
        return self._src.tree

    @property
    def resolved_static_expressions(self):
        """``{source text of the wp.static call: its value}`` for those evaluated at
        declaration."""
        out = {}
        for node in ast.walk(self._src.tree):
            if isinstance(node, ast.Call) and hasattr(node, "end_col_offset") and \
                    position(node) in self._src.statics:
                out[ast.unparse(node)] = self._src.statics[position(node)]
        return out

    @property
    def has_unresolved_static_expressions(self):
        """Whether some ``wp.static`` waits for the build (it names a loop variable)."""
        scope = definition_scope(self._src.pyfunc)
        todo = list(self._src.tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Call) and hasattr(node, "end_col_offset") and \
                    position(node) in self._src.statics:
                continue
            if is_static_call(node, scope):
                return True
            todo.extend(ast.iter_child_nodes(node))
        return False
