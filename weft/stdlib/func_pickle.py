"""Pickling kernels and funcs (:class:`weft.stdlib.funcs.UserFunction`): by reference to their
module, or by source, rebuilt in the receiving process (see :mod:`weft.serialize`, which
describes everything weft sends to other processes).
"""
from __future__ import annotations

import __future__
import ast
import builtins
import hashlib
import importlib
import inspect
import linecache
import sys
import textwrap
import uuid
import weakref

from ..core.errors import refuse
from .source import COMPILE_LOCK
from .static_exprs import definition_scope

_LOCAL = weakref.WeakValueDictionary()  # token -> kernel/func pickled from this process
_REBUILT = {}                            # token -> kernel/func rebuilt here from its source


def _token(obj):
    tok = obj.__dict__.get("_weft_token")
    if tok is None:
        tok = obj.__dict__["_weft_token"] = uuid.uuid4().hex
    _LOCAL[tok] = obj
    return tok


def _registered_by_value(modname):
    cp = sys.modules.get("cloudpickle")
    check = getattr(getattr(cp, "cloudpickle", None), "_is_registered_pickle_by_value", None)
    mod = sys.modules.get(modname)
    try:
        return bool(check and mod is not None and check(mod))
    except Exception:  # noqa: BLE001 - an older cloudpickle: nothing is registered
        return False


def _reference(obj):
    """``(module, qualname)`` when ``obj`` is reachable by name from an importable module."""
    modname, qualname = obj.__module__, obj.__qualname__
    if modname in (None, "__main__", "__mp_main__") or "<locals>" in qualname or \
            _registered_by_value(modname):
        return None
    mod = sys.modules.get(modname)
    if mod is None or getattr(mod, "__file__", None) is None and \
            getattr(mod, "__spec__", None) is None:
        return None
    value = mod
    for part in qualname.split("."):
        value = getattr(value, part, None)
    return (modname, qualname) if value is obj else None


class _Module:
    """A module read by a shipped kernel (``wp``, ``math``, ``np``), imported by name."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (_Module, (self.name,))


#: the public namespace, the package ``weft``, whose names a shipped kernel's scope sends by name;
#: ``weft/__init__.py`` hands itself over when it is imported (it stands above every layer, so
#: it is not imported here)
PUBLIC = None


class _WeftName:
    """A public name of ``weft`` (``wp.sin`` imported as ``sin``): looked up by name."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (_WeftName, (self.name,))


_WEFT_NAMES = {}


def _weft_name(value):
    weft = PUBLIC
    if weft is None:
        return None
    if not _WEFT_NAMES:
        _WEFT_NAMES.update({id(v): n for n, v in vars(weft).items()
                            if not n.startswith("_") and not inspect.ismodule(v)})
        _WEFT_NAMES[None] = None
    name = _WEFT_NAMES.get(id(value))
    if name is not None:
        if getattr(weft, name, None) is value:
            return name
    return None


def _names_read(tree):
    """Names the ``def`` reads when it is declared (decorators, annotations, defaults) or run
    (its body), other than those its body binds itself."""
    args = tree.args
    decl = list(tree.decorator_list)
    decl += [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs
             if a.annotation is not None]
    decl += [d for d in args.defaults + args.kw_defaults if d is not None]
    if tree.returns is not None:
        decl.append(tree.returns)
    bound = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, (ast.Store, ast.Del))}
    names = []
    for node in decl:
        names += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    for stmt in tree.body:
        names += [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Load) and n.id not in bound]
    return list(dict.fromkeys(names))


def _scope_values(obj):
    """``{name: value}`` of the globals and closure variables ``obj``'s source reads, modules
    and weft's own names replaced by markers imported by name on the other side."""
    scope = definition_scope(obj.func)
    out = {}
    for name in _names_read(obj.parsed().tree):
        if name not in scope:
            continue  # a builtin (range, float, ...) or a name that is not defined
        value = scope[name]
        if inspect.ismodule(value):
            value = _Module(value.__name__)
        else:
            wn = _weft_name(value)
            if wn is not None:
                value = _WeftName(wn)
        out[name] = value
    return out


_SIMPLE = (bool, int, float, complex, str, bytes, type(None), _Module, _WeftName)


def _simple(value):
    """Whether ``value`` surely pickles anywhere (a reference's source fallback may hold it)."""
    import numpy as np
    if isinstance(value, _SIMPLE + (np.generic, np.ndarray)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_simple(v) for v in value)
    if getattr(value, "_weft_kind", None) in ("kernel", "func") and \
            not isinstance(value, type):
        return True
    if isinstance(value, type):
        mod = getattr(value, "__module__", "") or ""
        return mod.startswith("weft.") or (mod not in ("__main__", "__mp_main__") and
                                           "<locals>" not in value.__qualname__)
    return False


def _source_state(obj):
    """What rebuilds ``obj`` from source: its text, where it was, the values it reads."""
    fn = obj.func
    lines, first = inspect.getsourcelines(fn)
    filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    flags = fn.__code__.co_flags & __future__.annotations.compiler_flag
    return {"kind": obj._weft_kind, "name": fn.__name__, "qualname": fn.__qualname__,
            "module": fn.__module__, "filename": filename, "first": first,
            "lines": list(lines), "flags": flags, "scope": _scope_values(obj),
            "init": obj._weft_init_args(), "extra": obj._weft_extra_state()}


def reduce_function(obj):
    """``__reduce__`` of a kernel or func (see the module docstring)."""
    token = _token(obj)
    ref = _reference(obj)
    try:
        state = _source_state(obj)
    except (OSError, TypeError) as exc:  # no source (a func built by exec without a file)
        if ref is None:
            refuse(obj, f"it is not importable by name and its source is not available ({exc})")
        state = None
    if ref is not None and state is not None and \
            not all(_simple(v) for v in state["scope"].values()):
        state = None  # by reference only: the names it reads may not pickle everywhere
    return (_resolve, (type(obj), token, ref), state)


def _resolve(cls, token, ref):
    """The kernel or func a pickle names: this process's own (the original, or one already
    rebuilt), the module's by reference, else an empty one that ``__setstate__`` builds from
    its source."""
    obj = _LOCAL.get(token) or _REBUILT.get(token)
    if obj is not None:
        return obj
    if ref is not None:
        modname, qualname = ref
        try:
            value = importlib.import_module(modname)
            for part in qualname.split("."):
                value = getattr(value, part)
        except (ImportError, AttributeError):
            value = None
        if isinstance(value, cls):
            return value
    obj = cls.__new__(cls)
    obj.__dict__["_weft_pending"] = (token, ref)
    _REBUILT[token] = obj
    return obj


def set_state(obj, state):
    """``__setstate__`` of a kernel or func: declare it from its shipped source when it is an
    empty one made by :func:`_resolve` (else it is already complete: nothing to do)."""
    with COMPILE_LOCK:  # two threads unpickling the same new kernel: the first declares it
        if obj.__dict__.get("_weft_pending") is not None:
            _set_state(obj, state)


def _set_state(obj, state):
    token, ref = obj.__dict__["_weft_pending"]
    if state is None:
        del _REBUILT[token]
        raise ImportError(f"weft: cannot rebuild {cls_name(obj)} {ref[1]!r}: module "
                          f"{ref[0]!r} cannot be imported here and no source was sent with "
                          "it (install the module on the workers, or register it with "
                          "cloudpickle.register_pickle_by_value to send kernels by source)")
    try:
        fn = _declare(state, obj)
    except BaseException:
        del _REBUILT[token]
        raise
    type(obj).__init__(obj, fn, **state["init"])
    obj.__dict__["_weft_token"] = token
    obj._weft_set_extra_state(state["extra"])
    obj.parsed()  # read the source now, while linecache surely holds it
    del obj.__dict__["_weft_pending"]


def cls_name(obj):
    return "kernel" if getattr(obj, "_weft_kind", None) == "kernel" else "func"


def _identity(f):
    return f


#: what a shipped declaration's file name gets after the sender's (one name per shipped text)
SHIPPED = " (weft: shipped "


def origin_filename(filename):
    """The sender's file name of a declaration shipped by source (else ``filename``)."""
    return filename.split(SHIPPED, 1)[0]


def _declare(state, obj):
    """Execute the shipped ``def`` (decorators replaced by the identity) in a namespace of the
    values it reads; its text goes to ``linecache`` at its original line numbers, so weft
    reads the same source (same cache key, same error locations)."""
    lines, first = state["lines"], state["first"]
    text = "".join(lines)
    key = hashlib.sha256(f"{state['filename']}:{first}:{text}".encode()).hexdigest()[:12]
    filename = f"{state['filename']}{SHIPPED}{key})"
    padded = ["\n"] * (first - 1) + lines
    linecache.cache[filename] = (sum(len(s) for s in padded), None, padded, filename)
    tree = ast.parse(textwrap.dedent(text))
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    fdef.decorator_list = [ast.copy_location(ast.Name("__weft_identity__", ast.Load()), d)
                           for d in fdef.decorator_list]
    namespace = {"__name__": state["module"], "__builtins__": builtins,
                 "__weft_identity__": _identity}
    for name, value in state["scope"].items():
        if isinstance(value, _Module):
            value = importlib.import_module(value.name)
        elif isinstance(value, _WeftName):
            value = getattr(PUBLIC, value.name)
        namespace[name] = value
    code = compile(tree, filename, "exec", flags=state["flags"], dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - the kernel's own source, as its sender declared it
    fn = namespace[state["name"]]
    fn.__qualname__ = state["qualname"]
    namespace.pop("__weft_identity__")
    namespace[state["name"]] = obj  # in its module the name is the kernel, not the function
    return fn
