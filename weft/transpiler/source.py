"""Getting a kernel or func's source: parse it and remember where it came from."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from ..core.errors import KernelError
from .state import Source


def parse(pyfunc, saved_lines=None):
    """Parse ``pyfunc``'s source into a :class:`Source` whose line numbers match the file
    (``saved_lines``: the file's lines read when it was declared, used when the file is gone)."""
    try:
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
    tree = ast.parse(dedented)
    ast.increment_lineno(tree, first - 1)
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


KERNEL_RETURN = ("Warp kernels cannot return values. Write results to output arguments, and "
                 "omit the return annotation or use `-> None`.")


def check_kernel_return_annotation(src: Source):
    """A kernel annotated to return anything but None: Warp's error (checked before the cache
    is looked up, as the annotation is not part of the kernel's code)."""
    ann = src.tree.returns
    if ann is None:
        return
    value = src.pyfunc.__annotations__.get("return", None)
    if isinstance(value, str):  # ``from __future__ import annotations``
        value = None if value in ("None", "types.NoneType", "NoneType") else value
    if value is not None and value is not type(None):
        from ..core.errors import KernelTypeError
        raise error(src, ann, KERNEL_RETURN, KernelTypeError)
