"""Errors raised by weft.

User mistakes in kernel source are :class:`KernelError` (or a subclass) and print
``file.py:LINE:COL: in kernel 'k':``, the source line, a caret, then the message.
Launch argument mistakes are :class:`LaunchError`. Anything else that escapes weft is a bug in
weft and says so (:class:`InternalError`).
"""
from __future__ import annotations


class KernelError(Exception):
    """An error in a kernel or func's source, located at ``file:line:col``.

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


class KernelTypeError(KernelError):
    """A type mismatch or a call with argument types no signature accepts."""


class KernelValueError(KernelError, ValueError):
    """A value of the right kind but the wrong size (a slice assigned a vector of another
    length)."""


class KernelSyntaxError(KernelError):
    """Python syntax that the kernel language does not support."""


class KernelNameError(KernelError):
    """A name that is not defined in the kernel, its module or weft."""


class LaunchError(TypeError):
    """A launch with wrong arguments (count, dtype, ndim, shape or device); raised before running."""


class InternalError(RuntimeError):
    """A fault inside weft itself: please report it with the kernel that caused it."""

    def __init__(self, message):
        super().__init__(f"internal weft error (this is weft's bug, please report it): {message}")


class KernelIndexError(IndexError):
    """An array index out of range (or negative) in a kernel compiled in debug mode."""


class KernelFloatError(FloatingPointError):
    """A NaN or Inf written by a launch while ``wp.config.verify_fp`` is on."""
