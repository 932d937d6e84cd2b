"""Errors raised by weft.

User mistakes in kernel source are :class:`KernelError` (or a subclass) and print
``file.py:LINE:COL: in kernel 'k':``, the source line, a caret, then the message.
Launch argument mistakes are :class:`LaunchError`. Anything else that escapes weft is a bug in
weft and says so (:class:`InternalError`). An object that belongs to this process (a tape,
a graph capture, a geometry object) refuses to be pickled with :func:`refuse`'s ``TypeError``.

Warp's exception classes (``WarpCodegenError`` and its siblings, with Warp 1.19's bases) are
defined here too, and weft's errors are also instances of the ones Warp raises for the same
mistake, so code written for Warp catches them::

    try:
        wp.launch(k, ...)
    except wp.WarpCodegenTypeError:       # or TypeError: a KernelTypeError is both
        ...
"""
from __future__ import annotations


class WarpCodegenError(RuntimeError):
    """Warp's general code-generation error (Warp 1.19: a ``RuntimeError``)."""


class WarpCodegenTypeError(TypeError):
    """Warp's type error during code generation (a ``TypeError``)."""


class WarpCodegenAttributeError(AttributeError):
    """Warp's attribute error during code generation (an ``AttributeError``)."""


class WarpCodegenIndexError(IndexError):
    """Warp's index error during code generation (an ``IndexError``)."""


class WarpCodegenKeyError(KeyError):
    """Warp's key error during code generation (a ``KeyError``)."""


class WarpCodegenValueError(ValueError):
    """Warp's value error during code generation (a ``ValueError``)."""


class WarpDeterminismError(RuntimeError):
    """Warp's error for operations that cannot run deterministically (a ``RuntimeError``)."""


class KernelError(WarpCodegenError):
    """An error in a kernel or func's source, located at ``file:line:col``.

    Also a ``WarpCodegenError`` (hence a ``RuntimeError``), as Warp's code-generation errors.

    Example::

        weft.KernelError: demo.py:7:12: in kernel 'k':
            y = x + d
                ^
        cannot add float32 and float64
    """

    def __init__(self, message, filename=None, lineno=None, col=None, source_line=None,
                 func_name=None, kind="kernel"):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.func_name = func_name
        self.kind = kind
        super().__init__(self._format())

    def __str__(self):
        # the formatted text, also for the KeyError-derived subclass (KeyError quotes its text)
        return self.args[0] if self.args else ""

    def _format(self):
        """``file:line:col: in kernel 'k':``, the source line, a caret under the column, then
        the message (last, as Python's and Warp's own errors end with theirs)."""
        where = ""
        if self.filename is not None:
            where = f"{self.filename}:{self.lineno}:{(self.col or 0) + 1}: "
        who = f"in {self.kind} '{self.func_name}': " if self.func_name else ""
        if not where and self.source_line is None:
            return f"{who}{self.message}"
        text = f"{where}{who}".rstrip()
        if self.source_line is not None:
            line = self.source_line.rstrip("\n")
            stripped = line.lstrip()
            indent = len(line) - len(stripped)
            caret = " " * max((self.col or 0) - indent, 0) + "^"
            text += f"\n    {stripped}\n    {caret}"
        return f"{text}\n{self.message}"


class KernelTypeError(KernelError, WarpCodegenTypeError):
    """A type mismatch or a call with argument types no signature accepts.

    Also a ``WarpCodegenTypeError`` (a ``TypeError``), as Warp raises for such mistakes."""


class KernelValueError(KernelError, WarpCodegenValueError):
    """A value of the right kind but the wrong size (a slice assigned a vector of another
    length)."""


class KernelSyntaxError(KernelError):
    """Python syntax that the kernel language does not support (a ``WarpCodegenError``, as
    Warp's "Construct ... not supported in kernels")."""


class KernelNameError(KernelError, WarpCodegenKeyError, WarpCodegenAttributeError):
    """A name that is not defined in the kernel, its module or weft.

    Also a ``KeyError`` (Warp: "Referencing undefined symbol") and an ``AttributeError``
    (Warp: "Could not find function wp.x", "`y` is not an attribute of ...")."""


class LaunchError(TypeError):
    """A launch with wrong arguments (count, dtype, ndim, shape or device); raised before running."""


class InternalError(RuntimeError):
    """A fault inside weft itself: please report it with the kernel that caused it."""

    def __init__(self, message):
        super().__init__(f"internal weft error (this is weft's bug, please report it): {message}")


class KernelIndexError(IndexError):
    """An array index out of range (or negative) in a kernel compiled in debug mode."""


class KernelAssertionError(AssertionError):
    """An ``assert`` in a kernel that failed, in a kernel compiled in debug mode (in release
    mode kernels' asserts are not checked, as Warp's)."""


class KernelFloatError(FloatingPointError):
    """A NaN or Inf written by a launch while ``wp.config.verify_fp`` is on."""


# ---------------------------------------------------------------------- what cannot be pickled

def refuse(obj, why):
    """Raise ``TypeError``: ``obj`` cannot be pickled, and why (what to send instead)."""
    raise TypeError(f"cannot pickle {_describe(obj)}: {why}")


def _describe(obj):
    cls = type(obj)
    name = getattr(obj, "key", None) or getattr(obj, "__name__", None)
    what = f"{cls.__module__.split('.')[0]}.{cls.__qualname__}"
    if cls.__module__.startswith("weft"):
        what = "wp." + cls.__qualname__
    return f"{what} {name!r}" if isinstance(name, str) else what
