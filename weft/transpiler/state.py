"""Data passed between the transpiler's passes."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class Source:
    """A kernel or func's parsed source and where it lives in its file."""

    pyfunc: Any
    filename: str
    first_line: int          # line number of the ``def`` (1-based, in the file)
    col_offset: int          # indentation removed before parsing
    lines: list              # the file's lines, for error messages
    tree: ast.FunctionDef


@dataclass(eq=False)
class FuncIR:
    """One function (kernel or a func specialised to argument types) in typed IR."""

    name: str                 # name in generated code
    kind: str                 # "kernel" or "func"
    params: list              # [Var]
    body: list                # IR statements
    ret_type: Any = None      # None when the func returns nothing
    callees: list = field(default_factory=list)   # FuncIR called, in first-call order
    tid_dims: int = 0         # kernels: how many launch dimensions wp.tid() was unpacked into
    tid_vars: dict = field(default_factory=dict)  # kernels: Var -> launch axis (None: first)
    source: Optional[Source] = None
    custom: dict = field(default_factory=dict)    # custom adjoint/tangent FuncIRs (func_grad)
    ret_struct: Any = None    # the struct class when the func returns one (as a member tuple)

    def __repr__(self):
        return f"FuncIR({self.name})"


@dataclass
class CompileState:
    """What the pipeline works on: one kernel (or a set of kernels for the CLI)."""

    roots: list                       # user Kernel objects
    funcs: list = field(default_factory=list)        # FuncIR of every kernel and callee
    modules: dict = field(default_factory=dict)      # part name -> list[ast.stmt]
    source: str = ""                                  # final emitted module source
    options: dict = field(default_factory=dict)
