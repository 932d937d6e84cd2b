"""``@wp.kernel`` and ``@wp.func``: user functions, compiled lazily through the transpiler."""
from __future__ import annotations

import functools
import operator
import os
import re
import sys
import traceback

from ..stdlib.funcs import (COMPILE_LOCK, Function, UserFunction, func, func_grad, func_replay,  # noqa: F401
    func_tangent)
from ..core import diskcache
from . import cache
from .compiled import function_source

_overloads = {}  # generic kernel -> list of argument-type lists (wp.overload, .declarations)


def declared_overloads(kernel):
    """The argument-type lists declared with ``wp.overload`` for ``kernel``
    (:mod:`weft.runtime.declarations`)."""
    return list(_overloads.get(kernel, ()))


class Kernel(UserFunction):
    """A ``@wp.kernel``. Launch it with ``wp.launch``; read its generated code with
    :meth:`source`.

    Example::

        @wp.kernel
        def scale(a: wp.array(dtype=float), s: float):
            i = wp.tid()
            a[i] = a[i] * s

        print(scale.source("adjoint"))
    """

    _weft_kind = "kernel"

    def __init__(self, func=None, key=None, module=None, options=None, code_transformers=None,
                 source=None, module_options=None):
        """``wp.Kernel(func=f, key="name", options={...})`` as Warp (``@wp.kernel`` makes one
        too). ``module``: whose options (:mod:`weft.runtime.modules`) the kernel compiles
        with, as Warp: the Python module of ``func`` by default, a module name or
        ``wp.Module``, or ``"unique"``: options of its own, Warp's defaults updated with
        ``module_options`` (weft compiles each kernel on its own either way)."""
        if func is None:
            raise TypeError("wp.Kernel() needs the kernel function (func=...)")
        super().__init__(func)
        self.key = func.__name__
        if key is not None:  # generated functions are named after the key: an identifier
            self.key = key if str(key).isidentifier() else re.sub(r"\W|^(?=\d)", "_", str(key))
        from .modules import module_of_kernel
        self._module_arg = module if module is None or isinstance(module, str) else \
            getattr(module, "name", module)
        self._module_options = dict(module_options) if module_options else None
        self._module = module_of_kernel(func, self.key, module, module_options)
        self.options = dict(options or {})
        self._compiled = {}
        self._fast = None  # launch.FastLaunch, once a small CPU launch has run
        self._declared = None
        self._generic = None

    def _weft_init_args(self):
        out = {"key": self.key, "options": dict(self.options)}
        if self._module_arg is not None:
            out["module"] = self._module_arg
        if self._module_options:
            out["module_options"] = dict(self._module_options)
        return out

    @property
    def fast_math(self):
        """Whether the kernel compiles with fast math: its module's ``fast_math`` option
        (``wp.set_module_options({"fast_math": True})``, or ``module_options`` of a
        ``module="unique"`` kernel)."""
        return bool(self._module.options.get("fast_math"))

    def _forget_compiled(self):
        """Drop the compiled kernels (module options changed): the next launch compiles, or
        loads from the cache, the variant for the current options."""
        self._compiled = {}
        self._fast = None

    def add_overload(self, arg_types):
        """Warp's ``kernel.add_overload(arg_types)``: declare an instance of this generic
        kernel (as ``wp.overload(kernel, arg_types)``, a list of every parameter's type). weft
        returns the generic kernel itself: a launch picks the instance for its arguments'
        types."""
        if not self.is_generic:
            raise RuntimeError(f"Only generic kernels can be overloaded.  Kernel {self.key} is "
                               "not generic")
        if not isinstance(arg_types, (list, tuple)) or len(arg_types) != len(self.declared):
            raise RuntimeError(f"Kernel {self.key} takes {len(self.declared)} arguments: "
                               "add_overload needs a list of as many types")
        _overloads.setdefault(self, []).append(list(arg_types))
        return self

    @property
    def overloads(self):
        """The argument-type lists declared for this generic kernel with ``wp.overload``."""
        return declared_overloads(self)

    @property
    def declared(self):
        """``[(name, type)]`` as annotated (None for ``Any``)."""
        if self._declared is None:
            from ..transpiler.abi import declared_params
            self._declared = [(n, t) for n, t, _ in declared_params(self.parsed(),
                                                                   generic_ok=False)]
        return self._declared

    @property
    def is_generic(self):
        """Whether some parameter takes its type from the launch (``Any``, ...)."""
        if self._generic is None:
            from ..transpiler.abi import is_generic
            self._generic = any(is_generic(t) for _, t in self.declared)
        return self._generic

    def compiled(self, device_kind="cpu", mode=None, types=None, lanes=None):
        """The kernel compiled for ``"cpu"`` or ``"cuda"`` in ``mode`` (``"release"`` or
        ``"debug"``; default: the kernel's ``mode`` option, else ``wp.config.mode``), for
        parameter ``types`` (a generic kernel's concrete types; see
        :mod:`weft.runtime.generics`): its generated module transpiled, or loaded from the
        cache, on first use; Numba compiles each entry on its first call."""
        if mode is None:
            from ..core import config
            mode = self.options.get("mode") or config.mode
        if types is None and self.is_generic:
            raise TypeError(f"kernel '{self.key}' is generic: it is compiled for the types of "
                            "the arguments it is launched with (or wp.overload's)")
        if lanes:
            return self._compiled_lanes(device_kind, mode, types, tuple(lanes))
        ck = self._compiled.get((device_kind, mode, types))
        if ck is None:
            with COMPILE_LOCK:  # threads of one process (a Dask worker's) compile one at a time
                ck = self._compiled.get((device_kind, mode, types))
                if ck is None:
                    ck = self._compile(device_kind, mode, types)
        return ck

    def _compiled_lanes(self, device_kind, mode, types, lanes):
        """The kernel compiled for cooperative CPU blocks ``lanes`` = ``(block_dim, tiled,
        launch dimensions)`` (:mod:`weft.transpiler.lanes`): its ``lanes`` attribute is the
        block size, or None when its lanes never interact and it is the usual compiled kernel
        (one lane per block)."""
        key = (device_kind, mode, types, lanes)
        ck = self._compiled.get(key)
        if ck is not None:
            return ck
        from ..transpiler.lanes import Uncoupled
        with COMPILE_LOCK:
            ck = self._compiled.get(key)
            if ck is not None:
                return ck
            try:
                ck = self._compile(device_kind, mode, types, lanes)
                ck.lanes = lanes[0]
            except Uncoupled:
                ck = None
        if ck is None:
            ck = self.compiled(device_kind, mode, types)
        self._compiled[key] = ck
        return ck

    def _compile(self, device_kind, mode, types, lanes=()):
        import time

        from ..core import config
        from .compiled import CompiledKernel
        t0 = time.perf_counter()
        module = self._load_module(device_kind, mode, types, lanes)
        took = time.perf_counter() - t0
        if took > config.compile_message_seconds and not config.quiet:
            print(f"Module {self.key} load on device '{device_kind}' took "
                  f"{took * 1e3:.0f} ms (weft: {mode} module transpiled and loaded; "
                  f"{self.statement_count()} statements)",
                  file=sys.stderr, flush=True)
        ck = CompiledKernel(self, device_kind, module, types)
        if _without_tangents(device_kind, mode):  # (see _load_module)
            ck.load_tangents = lambda: self._load_module(device_kind, mode, types, lanes, True)
        if not lanes:
            self._compiled[(device_kind, mode, types)] = ck
        return ck

    def _load_module(self, device_kind, mode, types=None, lanes=(), tangents=False):
        """The generated module of this kernel for ``device_kind`` and ``mode``. A CPU release
        module leaves out the kernel's tangent functions (a third of its code, which only
        ``wp.jvp`` and forward-mode launches run) but with ``tangents``: the first such
        launch loads that module (:meth:`CompiledKernel.tangent_module`). Debug and guarded
        modules, whose checked sites the whole module numbers, and CUDA ones keep them."""
        import dataclasses

        from ..transpiler.state import CompileOptions
        if mode not in ("release", "debug") and not mode.startswith("guarded"):  # (the runtime's)
            raise ValueError(f"kernel '{self.key}': mode must be 'release' or 'debug', got "
                             f"{mode!r}")
        options = CompileOptions.for_device(device_kind, mode, self.fast_math)
        extra = repr(options)
        if _without_tangents(device_kind, mode) and not tangents:
            options = dataclasses.replace(options, tangents=False)
            extra += " tangents=False"
        if lanes:  # cooperative CPU blocks (not in repr(options): other keys unchanged)
            options = dataclasses.replace(options, lanes=tuple(lanes))
            extra += f" lanes={tuple(lanes)}"
        if device_kind == "cuda":
            from ..transpiler.targets import CUDA_STACK
            extra += f" stack={CUDA_STACK}"
        if types is not None:
            extra += " types=" + ",".join(cache.type_key(t) for t in types)
        from ..transpiler.source import check_kernel_return_annotation
        check_kernel_return_annotation(self.parsed())
        key = cache.key_of(self, extra)
        kind = "" if mode == "release" else "_" + mode.split(":")[0]  # (guarded:a,b: the key)
        modname = self.key + ("" if device_kind == "cpu" else "_cuda") + kind + \
            ("_fastmath" if options.fast_math else "") + \
            (f"_lanes{lanes[0]}" if lanes else "") + f"_{key}"
        return cache.load_or_build(modname, lambda: self._build_source(options, types),
                                   cpu=device_kind != "cuda")

    def _build_source(self, options, types=None):
        from ..core.errors import InternalError, KernelError
        from ..transpiler import pipeline
        from ..transpiler.state import CompileState
        from ..stdlib import lanes as lanes_mod
        from ..transpiler.lanes import Uncoupled
        state = CompileState(roots=[self], options=options,
                             kernel_types={self: types} if types is not None else {})
        mode = lanes_mod.LaneMode(*options.lanes) if options.lanes else None
        state.lane_mode = mode
        state.share_library = options.targets[0] == "cpu" and options.mode == "release" and \
            diskcache.writable()  # (a usable cache directory, and writable)
        cuda = lanes_mod.CUDA.set(options.targets[0] == "cuda")
        try:
            with lanes_mod.active(mode):
                state = pipeline.run(state)
            return (state.source, state.library) if state.library else state.source
        except (KernelError, InternalError, Uncoupled):
            raise
        except RecursionError:
            raise KernelError(f"kernel '{self.key}' is nested too deeply to compile") from None
        except Exception as exc:  # anything else is weft's bug: say so, and name the kernel
            if os.environ.get("WEFT_TRACE"):  # the compiler's own traceback, for weft's developers
                traceback.print_exc()
            raise InternalError(f"while compiling kernel '{self.key}': "
                                f"{type(exc).__name__}: {exc}") from exc
        finally:
            lanes_mod.CUDA.reset(cuda)

    def entry(self, kind, target="cpu"):
        """The generated function itself: ``kind`` is ``"forward"``, ``"adjoint"`` or
        ``"tangent"``, ``target`` ``"cpu"``, ``"serial"`` or ``"cuda"`` (it takes the launch
        dimensions, then the arguments; see :class:`weft.transpiler.abi.KernelABI`)."""
        return self.compiled("cuda" if target == "cuda" else "cpu").entry(kind, target)

    @property
    def module(self):
        """Warp's ``kernel.module``: its ``options``, ``name`` and ``load`` are the Python
        module's (:mod:`weft.runtime.modules`); any other attribute is the generated CPU module's
        (transpiled on first use). ``compiled()`` gives weft's compiled kernel itself."""
        return _ModuleView(self)

    def source(self, kind="all", target="cpu"):
        """Generated Python source: ``"forward"``, ``"adjoint"``, ``"tangent"``,
        ``"second"`` (the adjoint's tangent, which ``tape.hvp`` runs; CPU) or ``"all"`` (the
        whole module, funcs included), for the ``"cpu"`` or ``"cuda"`` target."""
        ck = self.compiled("cuda" if target == "cuda" else "cpu")
        src = ck.tangent_module().__weft_source__  # (the whole module, as `weft transpile`)
        if kind == "all":
            return src
        if kind == "second":
            return function_source(ck.hvp_module().__weft_source__,
                                   ck.abi.entries["adjoint"][target] + "__hvp")
        return function_source(src, ck.abi.entries[kind]["cuda" if target == "cuda" else
                                                      target])


def _without_tangents(device_kind, mode):
    """Whether a kernel's module for ``device_kind`` and ``mode`` leaves its tangent functions
    to a module of their own (``Kernel._load_module``)."""
    return device_kind == "cpu" and mode == "release"


class _ModuleView:
    """``kernel.module``: Warp's module options in front of weft's generated module."""

    __slots__ = ("_kernel",)

    def __init__(self, kernel):
        object.__setattr__(self, "_kernel", kernel)

    _warp = property(operator.attrgetter("_kernel._module"))
    options = property(operator.attrgetter("_kernel._module.options"))
    name = property(operator.attrgetter("_kernel._module.name"))

    def load(self, device=None, block_dim=None):
        return self._warp.load(device, block_dim)

    def mark_modified(self):
        return self._warp.mark_modified()

    def hash_module(self):
        return self._warp.hash_module()

    def __getattr__(self, name):
        return getattr(self._kernel.compiled("cpu").module, name)


def kernel(f=None, *, enable_backward=None, module=None, module_options=None, name=None,
           **options):
    """Decorator making a Warp-style kernel (``@wp.kernel`` or ``@wp.kernel(...)``).
    ``module="unique"`` with ``module_options={"fast_math": True}`` gives one kernel options
    of its own, as Warp (``module_options`` needs ``module="unique"``); ``name`` is the
    kernel's key (an identifier, as Warp requires of a C++ name)."""
    if name is not None and not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier")
    if f is None:
        return functools.partial(kernel, enable_backward=enable_backward, module=module,
                                 module_options=module_options, name=name, **options)
    if enable_backward is not None:
        options["enable_backward"] = enable_backward   # as Warp: the kernel's own option
    return Kernel(f, key=name, module=module, options=options, module_options=module_options)


