"""A kernel or func's source as it was declared: parsed once, remembered with where it came from
(file, lines, indentation), for the compiler to read and for errors to point into.

Declaring a kernel or func (:mod:`.funcs`) reads its source here; the transpiler lowers the
:class:`Source` and reports its errors located with :func:`error`.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import threading
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import KernelError

#: held while a kernel or func is parsed and while a kernel is transpiled and loaded: the
#: transpiler keeps no per-thread state, and CPython 3.11's ast module fails when threads use it
#: at once ("AST constructor recursion depth mismatch"), so threads of one process (a Dask
#: worker's) compile one at a time
COMPILE_LOCK = threading.RLock()


@dataclass
class Source:
    """A kernel or func's parsed source and where it lives in its file."""

    pyfunc: Any
    filename: str
    first_line: int          # line number of the ``def`` (1-based, in the file)
    col_offset: int          # indentation removed before parsing
    lines: list              # the file's lines, for error messages
    tree: ast.FunctionDef
    statics: dict = field(default_factory=dict)  # wp.static values evaluated at declaration


def parse(pyfunc, saved_lines=None):
    """Parse ``pyfunc``'s source into a :class:`Source` whose line numbers match the file
    (``saved_lines``: the file's lines read when it was declared, which hold the text the
    function was made from: read there directly, as ``inspect`` would find them, without its
    search of ``sys.modules`` for each function, 1 s of MuJoCo Warp's warm first step)."""
    code = getattr(pyfunc, "__code__", None)
    try:
        if saved_lines and code is not None and 0 < code.co_firstlineno <= len(saved_lines) \
                and not code.co_filename.startswith("<"):
            filename, first = code.co_filename, code.co_firstlineno
            lines = inspect.getblock(saved_lines[first - 1:])
        else:
            filename = inspect.getsourcefile(pyfunc) or inspect.getfile(pyfunc)
            lines, first = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError) as exc:
        first = pyfunc.__code__.co_firstlineno
        if not saved_lines or first > len(saved_lines):
            hint = ""
            if getattr(getattr(pyfunc, "__code__", None), "co_filename", "") == \
                    "<dynamic-code>":
                hint = (" (it was declared inside a function that cloudpickle sent by value, "
                        "whose source does not travel: declare kernels where the sender runs, "
                        "at the top level of the script or module, and send them; see "
                        "docs/distributed.md)")
            raise KernelError(f"cannot read the source of {pyfunc.__qualname__}: {exc}{hint}") \
                from None
        filename = pyfunc.__code__.co_filename
        lines = inspect.getblock(saved_lines[first - 1:])  # from the first decorator
        linecache.cache.setdefault(filename, (None, None, saved_lines, filename))
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
    # blank lines before it give the file's line numbers (``ast.increment_lineno`` walked the
    # whole tree for that)
    tree = ast.parse("\n" * (first - 1) + dedented)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise KernelError(f"{pyfunc.__qualname__} is not a plain function definition")
    file_lines = linecache.getlines(filename) or lines
    return Source(pyfunc, filename, fdef.lineno, indent, file_lines, fdef)


def error(src: Source, node, message, cls=KernelError, kind=None):
    """Build a located error for ``node`` of ``src``."""
    lineno = getattr(node, "lineno", src.first_line)
    col = getattr(node, "col_offset", 0) + src.col_offset
    line = src.lines[lineno - 1] if 0 < lineno <= len(src.lines) else None
    kind = kind or ("kernel" if getattr(src.pyfunc, "_weft_kind", "kernel") == "kernel" else "func")
    return cls(message, src.filename, lineno, col, line, src.pyfunc.__name__, kind)
