"""One dispatcher per generated function in a process: a func several kernels call compiles once.

Each kernel is a generated module of its own, and holds the funcs it calls: a func that ten
kernels call is defined in ten modules, and Numba types, lowers and optimises each definition
on its own. In MuJoCo Warp's first step, 20,448 of the 27,338 lines of funcs the kernels call
(forward code) were such repeats: 37% of the forward code Numba compiled.

After a CPU module is loaded, each of its generated functions whose text is that of a function
an earlier module defined, and whose every global name is bound to the same object (the other
generated functions it calls matched the same way), is replaced in the module by the earlier
one's dispatcher, before anything of the module is compiled. Its kernels then call that
dispatcher, which compiles (or loads from its own module's cache) each signature once. Two such
functions are the same Python function (same code, same globals, no closure), so nothing but the
compile count changes. A kernel compiled from a module's cache links the func's code into its
own, as before: a new process that loads it needs nothing of the other module.
"""
from __future__ import annotations

import hashlib

_BY_KEY = {}  # key -> the dispatcher of the first module that defined the function


def _is_dispatcher(value):
    from numba.core.dispatcher import Dispatcher
    return isinstance(value, Dispatcher)


def _global_names(code):
    out = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            out |= _global_names(const)
    return out


def _starts(lines):
    """1-based numbers of the lines that begin a top-level statement."""
    return [i + 1 for i, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "#")]


def share(mod, text):
    """Replace the generated functions of loaded module ``mod`` (its source ``text``) that an
    earlier module defined identically by that module's dispatchers."""
    env = vars(mod)
    own = {name: value for name, value in env.items()
           if _is_dispatcher(value) and getattr(value.py_func, "__module__", None) ==
           mod.__name__ and value.py_func.__name__ == name}
    if not own:
        return mod
    lines = text.splitlines()
    starts = _starts(lines)
    keys = {}

    def block(fn):
        """The definition's text: its decorators, ``def`` line and body."""
        first = fn.__code__.co_firstlineno
        at = first
        while at <= len(lines) and not lines[at - 1].startswith("def "):
            at += 1
        end = next((s for s in starts if s > at), len(lines) + 1)
        return "\n".join(lines[first - 1:end - 1])

    def key(name):
        if name in keys:
            return keys[name]
        keys[name] = None  # (a cycle: not shared)
        fn = own[name].py_func
        if fn.__closure__ or fn.__defaults__ or fn.__kwdefaults__:
            return None
        parts = [block(fn)]
        for ref in sorted(_global_names(fn.__code__)):
            if ref not in env:
                continue  # a builtin, or an attribute's name
            if ref in own:
                sub = key(ref)
                if sub is None:
                    return None
                parts.append(f"{ref}={sub}")
            else:
                parts.append(f"{ref}@{id(env[ref])}")  # the same object in both modules
        keys[name] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
        return keys[name]

    for name in own:
        k = key(name)
        if k is None:
            continue
        first = _BY_KEY.setdefault(k, own[name])
        if first is not own[name]:
            env[name] = first
    return mod
