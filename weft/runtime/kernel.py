"""``@wp.kernel`` and ``@wp.func``: user functions, compiled lazily through the transpiler."""
from __future__ import annotations

import functools

from ..errors import KernelError
from . import cache


class _UserFunction:
    _weft_kind = None

    def __init__(self, pyfunc):
        self.func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__qualname__ = pyfunc.__qualname__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        self.__wrapped__ = pyfunc
        self._parsed = None
        pyfunc._weft_kind = self._weft_kind

    def parsed(self):
        if self._parsed is None:
            from ..transpiler.source import parse
            self._parsed = parse(self.func)
        return self._parsed

    def custom_rules(self):
        return []


class Function(_UserFunction):
    """A ``@wp.func``: callable from kernels and other funcs.

    Example::

        @wp.func
        def square(x: float):
            return x * x
    """

    _weft_kind = "func"

    def __init__(self, pyfunc):
        super().__init__(pyfunc)
        self._weft_custom = {}

    def __call__(self, *args, **kwargs):
        raise KernelError(f"wp.func '{self.__name__}' can only be called inside a kernel or func")

    def custom_rules(self):
        return list(self._weft_custom.values())


class Kernel(_UserFunction):
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


def func(f):
    """Decorator making a func callable from kernels (``@wp.func``)."""
    return Function(f)


def func_with_outputs(n):
    """For builtins with Warp's output arguments (``wp.svd3(A, U, sigma, V)``): the decorated
    func takes the inputs and returns the ``n`` outputs (a tuple when ``n > 1``); a call
    ``f(inputs..., out1, ..., outn)`` assigns them to the trailing argument variables."""
    def deco(f):
        from ..transpiler.lower import OUTPUT_ARGS
        fn = Function(f)
        fn._weft_outputs = n
        OUTPUT_ARGS[fn.__name__] = n  # loops carry the variables such a call assigns
        return fn
    return deco


def _custom_rule(kind):
    def register(target):
        if not isinstance(target, Function):
            raise TypeError(f"@wp.func_{kind}(f) needs a @wp.func, got {target!r}")

        def deco(rule):
            fn = Function(rule)
            target._weft_custom[kind] = fn
            return fn
        return deco
    return register


func_grad = _custom_rule("grad")
func_grad.__doc__ = """Give ``f`` a hand-written adjoint (Warp's API)::

    @wp.func_grad(safe_sqrt)
    def adj_safe_sqrt(x: float, adj_ret: float):
        if x > 0.0:
            wp.adjoint[x] += adj_ret / (2.0 * wp.sqrt(x))
"""
func_replay = _custom_rule("replay")
func_replay.__doc__ = """Give ``f`` a replay function: the adjoint recomputes ``f``'s value with it."""
func_tangent = _custom_rule("tangent")
func_tangent.__doc__ = """Give ``f`` a hand-written tangent (forward mode): it takes ``f``'s inputs
and then the tangents of its float inputs, and returns the tangent of the output::

    @wp.func_tangent(safe_sqrt)
    def tan_safe_sqrt(x: float, tan_x: float):
        return wp.where(x > 0.0, tan_x / (2.0 * wp.sqrt(x)), 0.0)
"""
