"""``@wp.kernel`` and ``@wp.func``: user functions, compiled lazily through the transpiler."""
from __future__ import annotations

import functools

from ..errors import KernelError
from ..lang import (Function, UserFunction, func, func_grad, func_replay,  # noqa: F401
                    func_tangent)
from . import cache


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

    def __init__(self, pyfunc, options=None):
        super().__init__(pyfunc)
        self.key = pyfunc.__name__
        self.options = dict(options or {})
        self._module = None
        self._meta = None
        self._entries = {}
        self._modules = {}
        self._serial_forward = None  # set by the first small CPU launch (see launch.py)

    @property
    def module(self):
        """The imported generated CPU module (transpiled and cached on first use)."""
        if self._module is None:
            self._module = self.module_for("cpu")
            self._meta = self._module.WEFT_KERNELS[self.key]
        return self._module

    def module_for(self, target):
        """The generated module for ``"cpu"`` or ``"cuda"``."""
        mod = self._modules.get(target)
        if mod is None:
            extra = target
            if target == "cuda":
                from ..transpiler.cuda import CUDA_STACK
                extra += f" stack={CUDA_STACK}"
            key = cache.key_of(self, extra)
            modname = f"{self.key}_{key}" if target == "cpu" else f"{self.key}_{target}_{key}"
            mod = cache.load_or_build(modname, lambda: self._build_source(target),
                                      cpu=target != "cuda")
            self._modules[target] = mod
        return mod

    def _build_source(self, target="cpu"):
        from ..transpiler import pipeline
        from ..transpiler.state import CompileState
        state = pipeline.run(CompileState(roots=[self], options={"target": target}))
        return state.source

    def source(self, kind="all", target="cpu"):
        """Generated Python source: ``"forward"``, ``"adjoint"``, ``"tangent"`` or ``"all"``
        (the whole module, funcs included), for the ``"cpu"`` or ``"cuda"`` target."""
        mod = self.module if target == "cpu" else self.module_for(target)
        src = mod.__weft_source__
        if kind == "all":
            return src
        suffix = {"forward": "__fwd", "adjoint": "__adj", "tangent": "__jvp"}[kind]
        return _extract_function(src, f"{self.key}{suffix}")

    @property
    def meta(self):
        if self._meta is None:
            self.module
        return self._meta

    def entry(self, kind, target="cpu"):
        """The generated function: ``"forward"``, ``"adjoint"`` or ``"tangent"``."""
        fn = self._entries.get((kind, target))
        if fn is None:
            suffix = {"forward": "__fwd", "adjoint": "__adj", "tangent": "__jvp"}[kind]
            mod = self.module if target == "cpu" else self.module_for(target)
            fn = self._entries[(kind, target)] = getattr(mod, f"{self.key}{suffix}")
        return fn


def _extract_function(src, fname):
    lines = src.splitlines()
    out = []
    inside = False
    for i, line in enumerate(lines):
        if line.startswith(f"def {fname}("):
            inside = True
            if i > 0 and lines[i - 1].startswith("@"):
                out.append(lines[i - 1])
        elif inside and line and not line[0].isspace():
            break
        if inside:
            out.append(line)
    return "\n".join(out) + "\n"


def kernel(f=None, *, enable_backward=None, module=None, **options):
    """Decorator making a Warp-style kernel (``@wp.kernel`` or ``@wp.kernel(...)``)."""
    if f is None:
        return functools.partial(kernel, enable_backward=enable_backward, module=module, **options)
    return Kernel(f, options)


