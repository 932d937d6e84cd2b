"""Data passed between the transpiler's passes."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Optional

from ..stdlib.source import Source  # noqa: F401  (a declaration's parsed source: the stdlib's)


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
    ret_struct: Any = None    # the layout of a returned struct or tuple holding one, returned
    #                           as the tuple of its plain leaves (lowering/structs.py)
    takes_ret: bool = False   # custom grad/tangent rules: given the func's result as ``ret``
    writes_back: tuple = ()   # funcs changing tile parameters in place: (their names, the
    #                           result's item count, whether it is a tuple); lowering/tile_params

    def __repr__(self):
        return f"FuncIR({self.name})"


@dataclass(frozen=True)
class CompileOptions:
    """What a compilation produces: ``targets`` (``("cpu", "serial")`` for a CPU module that
    holds each kernel with and without threads, ``("cuda",)``), ``mode`` (``"release"``;
    ``"debug"`` checks every array access) and ``fast_math`` (Warp's module option: the
    module's functions compile with Numba's ``fastmath=True``)."""

    targets: tuple = ("cpu", "serial")
    mode: str = "release"
    fast_math: bool = False
    # cooperative CPU blocks: (block_dim, tiled, launch dimensions) or () (one lane per
    # block); out of repr, which keys the cache of every other module
    lanes: tuple = field(default=(), repr=False)
    # False: the kernels' tangent (forward-mode) functions are left out, a third of a kernel's
    # generated code; the runtime's CPU release modules, whose tangents a first forward-mode
    # launch builds in a module of their own (``CompiledKernel.tangent_module``). Funcs keep
    # theirs, so weft's library modules (and the machine code shipped for them) are the same.
    # Out of repr, as ``lanes``: the runtime keys such a module itself.
    tangents: bool = field(default=True, repr=False)

    @classmethod
    def for_device(cls, device_kind, mode="release", fast_math=False):
        return cls(("cuda",) if device_kind == "cuda" else ("cpu", "serial"), mode,
                   bool(fast_math))


@dataclass
class CompileState:
    """What the pipeline works on: one kernel (or a set of kernels for the CLI); a Python-scope
    call (``host_call``, the host pipeline); a generated module's text (second order)."""

    roots: list                                        # user Kernel objects
    kernel_types: dict = field(default_factory=dict)   # generic kernel -> its concrete types
    options: CompileOptions = field(default_factory=CompileOptions)
    funcs: list = field(default_factory=list)          # lower: FuncIR of every kernel and func
    facts: dict = field(default_factory=dict)          # analyze: FuncIR -> FuncFacts
    defs: list = field(default_factory=list)           # generate: generated ast.FunctionDefs
    abis: dict = field(default_factory=dict)           # generate: kernel name -> KernelABI
    owners: dict = field(default_factory=dict)         # generate: a func's function -> FuncIR
    share_library: bool = False  # the runtime's release CPU modules: weft's own funcs also
    #                              written as modules of their own (assemble.library_modules)
    library: dict = field(default_factory=dict)        # assemble: module name -> (names, text)
    source: str = ""                                   # assemble: the module's source text
    second_source: str = ""                            # second_order: the hvp module's text
    host_call: Any = None       # the host pipeline: (func, argument types) of a Python-scope call
    host_root: Any = None       # ... and its FuncIR, lowered
