"""Funcs of the kernel language: ``@wp.func``, its custom rules, and the stdlib's builtins
written in the kernel language.

This module is what the transpiler consumes and the stdlib declares with; it imports neither
the runtime nor the transpiler (a declaration's source is read by :mod:`.source`, its
``wp.static`` expressions evaluated by :mod:`.static_exprs`, and it pickles through
:mod:`.func_pickle`). Everything a kernel can call answers ``lower_call(ctx, node)``
(lower one call in the lowering context ``ctx``) and ``assigned_args(node)`` (the argument
expressions the call assigns, which loops then carry); a func's answers depend on what it
declares about itself (signatures, output arguments), never on its name.
"""
from __future__ import annotations

import inspect
import sys
import typing

from . import func_pickle
from .source import COMPILE_LOCK, parse  # noqa: F401  (COMPILE_LOCK: also the runtime's)
from .static_exprs import AdjointView, declare

HOST_CALL = None  # set by weft.runtime.host
DECLARED = {}     # Python module name -> [each kernel and func declared there]


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
        # the file's lines as they are now (shared with linecache): a kernel declared from a
        # file that is gone by the time it compiles (exec'd temporary files) still has them
        import linecache
        linecache.checkcache(pyfunc.__code__.co_filename)  # a file edited since it was cached
        self._file_lines = linecache.getlines(pyfunc.__code__.co_filename)
        declare(self)  # wp.static expressions that name nothing local run now, as in Warp
        DECLARED.setdefault(pyfunc.__module__, []).append(self)

    @property
    def adj(self):
        """What Warp's ``kernel.adj`` tells about the declaration: ``source``, ``tree``,
        ``resolved_static_expressions`` and ``has_unresolved_static_expressions``."""
        return AdjointView(self)

    def parsed(self):
        """The parsed source (:class:`weft.stdlib.source.Source`), read once."""
        if self._parsed is None:
            with COMPILE_LOCK:
                if self._parsed is None:
                    self._parsed = parse(self.func, getattr(self, "_file_lines", None))
        return self._parsed

    def statement_count(self):
        """The size of the declaration, as the compile messages give it: its statements
        (nested ones included, the ``def`` not)."""
        import ast
        tree = self.parsed().tree
        return sum(isinstance(n, ast.stmt) for n in ast.walk(tree)) - 1

    def custom_rules(self):
        return []

    def assigned_args(self, node):
        return []

    # pickling (weft.serialize): by reference to the module, or by source
    def __reduce__(self):
        return func_pickle.reduce_function(self)

    def __setstate__(self, state):
        func_pickle.set_state(self, state)

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
        """At Python scope: a user func runs its own Python code (as in Warp: the overload
        whose declared types the arguments have, else a ``RuntimeError``); a stdlib builtin
        runs the forward code weft generates for it (``weft.runtime.host``)."""
        if self.signatures is not None and HOST_CALL is not None:
            return HOST_CALL(self, args, kwargs)
        for o in self.overloads:
            try:
                bound = inspect.signature(o.func).bind(*args, **kwargs)
            except TypeError:
                continue
            ann = o.func.__annotations__
            if all(_fits(ann.get(n), v) for n, v in bound.arguments.items()):
                return o.func(*args, **kwargs)
        raise RuntimeError(f"Error calling function '{self.__name__}', no overload found for "
                           f"arguments {args}")

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
        return ctx.call_func(self.overloads[0], node)  # a redeclaration replaces the first

    def assigned_args(self, node):
        """Output arguments (``wp.svd3(A, U, sigma, V)``): the trailing variables it assigns."""
        if self.outputs and len(node.args) > self.n_inputs():
            return list(node.args[-self.outputs:])
        return []


@typing.overload
def func(f: typing.Callable) -> "Function": ...


@typing.overload
def func(f: None = None, *, module=None, **options) -> typing.Callable[[typing.Callable],
                                                                      "Function"]: ...


def func(f=None, *, module=None, **options):
    """Decorator making a func callable from kernels (``@wp.func``, also ``@wp.func()`` and
    ``@wp.func(module=...)`` as Warp; weft compiles funcs with the kernels that call them, so
    ``module`` changes nothing).

    A second module-level func of the same name with other parameter types is an overload of
    the first (as in Warp): a call picks the overload whose declared types match its arguments
    exactly, else the first whose generic types (``Any``, ``wp.Float``) fit them."""
    if f is None:
        return lambda g: _declare_func(g, sys._getframe(1))
    return _declare_func(f, sys._getframe(1))


def _declare_func(f, frame):
    """``frame``: where the decorator runs (a func declared inside a function overloads or
    redefines the one of the same name in that function's locals); it is not kept."""
    new = Function(f)
    if "<locals>" in f.__qualname__:
        previous = frame.f_locals.get(f.__name__) if frame is not None else None
    else:
        previous = f.__globals__.get(f.__name__)
    del frame
    if isinstance(previous, Function) and previous.signatures is None and \
            previous.__qualname__ == f.__qualname__ and previous.__module__ == f.__module__:
        if any(_annotations(o.func) == _annotations(f) for o in previous.overloads):
            # a redefinition (as Warp): a new func object in the old one's place among the
            # overloads; references taken before keep the old bodies
            new.overloads = [new if _annotations(o.func) == _annotations(f) else o
                             for o in previous.overloads]
            return new
        previous.overloads = previous.overloads + [new]  # an overload of the first
        return previous
    return new


def _fits(annotation, value):
    """Whether a Python-scope argument has the type a func parameter declares (Warp's rule:
    a Python ``float`` is a float32, an ``int`` an int32; ``Any`` and generics take all)."""
    import typing

    import numpy as np

    from ..core import types as T
    from ..core.typeinfo import is_array, types_equal
    if annotation is None or annotation is inspect.Parameter.empty or annotation is typing.Any \
            or isinstance(annotation, (str, typing.TypeVar)) or \
            getattr(annotation, "_wp_generic_", False):  # Any, wp.Float, vector(length=Any)
        return True
    if is_array(annotation):
        if not is_array(value):
            return False
        want = getattr(annotation, "dtype", typing.Any)
        return want is typing.Any or types_equal(want, value.dtype)
    if isinstance(value, bool):
        vt = T.bool
    elif isinstance(value, np.generic):
        vt = T.as_scalar_type(value.dtype)
    elif isinstance(value, float):
        vt = T.float32
    elif isinstance(value, int):
        vt = T.int32
    else:
        vt = type(value)
    if isinstance(annotation, type) and isinstance(value, annotation):
        return True
    try:
        return types_equal(annotation, vt)
    except Exception:  # noqa: BLE001 - not a type weft compares: let the func decide
        return True


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
