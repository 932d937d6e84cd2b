"""Funcs of the kernel language: ``@wp.func``, its custom rules, and the stdlib's builtins
written in the kernel language.

This module is what the transpiler consumes and the stdlib declares with; it imports neither
the runtime nor the transpiler. Everything a kernel can call answers ``lower_call(ctx, node)``
(lower one call in the lowering context ``ctx``) and ``assigned_args(node)`` (the argument
expressions the call assigns, which loops then carry); a func's answers depend on what it
declares about itself (signatures, output arguments), never on its name.
"""
from __future__ import annotations

import inspect
import threading

HOST_CALL = None  # set by weft.runtime.host

#: held while a kernel or func is parsed and while a kernel is transpiled and loaded: the
#: transpiler keeps no per-thread state, and CPython 3.11's ast module fails when threads use it
#: at once ("AST constructor recursion depth mismatch"), so threads of one process (a Dask
#: worker's) compile one at a time
COMPILE_LOCK = threading.RLock()


class UserFunction:
    """Base of kernels and funcs: a Python function whose source the transpiler reads."""

    _weft_kind = None

    def __init__(self, pyfunc):
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"@wp.{self._weft_kind or 'func'} needs a Python function defined "
                            f"with def, got {pyfunc!r} ({type(pyfunc).__name__})")
        self.func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__qualname__ = pyfunc.__qualname__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        self.__wrapped__ = pyfunc
        self._parsed = None
        pyfunc._weft_kind = self._weft_kind

    def parsed(self):
        """The parsed source (:class:`weft.transpiler.state.Source`), read once."""
        if self._parsed is None:
            from .transpiler.source import parse
            with COMPILE_LOCK:
                if self._parsed is None:
                    self._parsed = parse(self.func)
        return self._parsed

    def custom_rules(self):
        return []

    def assigned_args(self, node):
        return []

    # pickling (weft.serialize): by reference to the module, or by source
    def __reduce__(self):
        from .serialize import reduce_function
        return reduce_function(self)

    def __setstate__(self, state):
        from .serialize import set_state
        set_state(self, state)

    def _weft_init_args(self):
        """Keyword arguments that re-create this object around its function."""
        return {}

    def _weft_extra_state(self):
        return {}

    def _weft_set_extra_state(self, extra):
        pass


class Function(UserFunction):
    """A ``@wp.func``: callable from kernels and other funcs.

    ``signatures`` (stdlib builtins only): the accepted argument types, checked at each call
    (see :mod:`weft.stdlib.signatures`); ``outputs``: the number of Warp-style output arguments
    (``wp.svd3(A, U, sigma, V)`` assigns its last three arguments).

    Example::

        @wp.func
        def square(x: float):
            return x * x
    """

    _weft_kind = "func"

    def __init__(self, pyfunc, signatures=None, outputs=0):
        super().__init__(pyfunc)
        self._weft_custom = {}
        self.overloads = [self]  # user funcs: the overloads of this name, first declared first
        self.signatures = list(signatures) if signatures is not None else None
        self.outputs = outputs

    def __call__(self, *args, **kwargs):
        """At Python scope: a user func runs its own Python code (as in Warp); a stdlib builtin
        runs the forward code weft generates for it (``weft.runtime.host``)."""
        if self.signatures is not None and HOST_CALL is not None:
            return HOST_CALL(self, args, kwargs)
        for o in self.overloads[1:] if len(self.overloads) > 1 else ():
            try:  # overloads: the first declared one the arguments bind to
                inspect.signature(o.func).bind(*args, **kwargs)
            except TypeError:
                continue
            try:
                inspect.signature(self.func).bind(*args, **kwargs)
                break
            except TypeError:
                return o.func(*args, **kwargs)
        return self.func(*args, **kwargs)

    def custom_rules(self):
        return list(self._weft_custom.values())

    def _weft_init_args(self):
        return {"signatures": self.signatures, "outputs": self.outputs}

    def _weft_extra_state(self):
        return {"overloads": list(self.overloads), "custom": dict(self._weft_custom)}

    def _weft_set_extra_state(self, extra):
        self.overloads = list(extra["overloads"])
        self._weft_custom = dict(extra["custom"])

    def n_inputs(self):
        return len(inspect.signature(self.func).parameters)

    def lower_call(self, ctx, node):
        if len(self.overloads) > 1:
            return ctx.call_overloaded(self, node)
        return ctx.call_func(self, node)

    def assigned_args(self, node):
        """Output arguments (``wp.svd3(A, U, sigma, V)``): the trailing variables it assigns."""
        if self.outputs and len(node.args) > self.n_inputs():
            return list(node.args[-self.outputs:])
        return []


def func(f):
    """Decorator making a func callable from kernels (``@wp.func``).

    A second module-level func of the same name with other parameter types is an overload of
    the first (as in Warp): a call picks the overload whose declared types match its arguments
    exactly, else the first whose generic types (``Any``, ``wp.Float``) fit them."""
    new = Function(f)
    previous = f.__globals__.get(f.__name__) if "<locals>" not in f.__qualname__ else None
    if isinstance(previous, Function) and previous.signatures is None and \
            previous.__qualname__ == f.__qualname__ and previous.__module__ == f.__module__:
        same = [o for o in previous.overloads if _annotations(o.func) == _annotations(f)]
        previous.overloads = [o for o in previous.overloads if o not in same] + [new]
        return previous
    return new


def _annotations(f):
    sig = inspect.signature(f)
    return [(p.kind, p.annotation) for p in sig.parameters.values()]


#: the stdlib's builtins written in the kernel language, by name (filled by ``builtin_func``)
BUILTIN_FUNCS = {}


def builtin_func(sigs, outputs=0):
    """Declare a stdlib builtin written in the kernel language: a func with its signatures
    (checked at every call, so a wrong call is reported where it is written) and, for Warp's
    output-argument builtins, how many trailing arguments it assigns::

        @builtin_func(["quat_to_axis_angle(q: quat, axis: vec3, angle: Float)  "
                       "(axis, angle are outputs)"], outputs=2)
        def quat_to_axis_angle(q):
            return _axis_angle(q)
    """
    def deco(f):
        fn = BUILTIN_FUNCS[f.__name__] = Function(f, signatures=sigs, outputs=outputs)
        return fn
    return deco


def kernel_language_builtins(namespace):
    """The public builtins of a stdlib module written in the kernel language
    (``FUNCS = kernel_language_builtins(globals())``): funcs that declare signatures."""
    return {n: v for n, v in dict(namespace).items()
            if isinstance(v, Function) and v.signatures is not None}


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
