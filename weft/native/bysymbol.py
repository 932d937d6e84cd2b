"""Calling a compiled core by its symbol, not by linking its code into the caller.

A kernel that calls a Numba function links that function's LLVM bitcode (and everything it
calls) into its own module, and LLVM optimises all of it again for every kernel: for the tile
helpers, most of a small tile kernel's compile (``docs/performance.md``, stop 58). Their
machine code is already loaded (shipped, or cached), so a kernel may call it by symbol instead:
:func:`by_symbol` wraps a dispatcher in an ``@intrinsic`` that types a call by compiling (or
loading) the core's signature and emits a call to the core's symbol, with its error status
propagated as Numba propagates a callee's. The caller's module then holds only a declaration.

A symbol names one compiled function (Numba puts a per-process id in it), so a kernel cached in
one process must meet the same compiled core in the next. Each call site adds to the caller's
``reload_init`` (run before cached code is loaded) a :func:`load` of the core that checks the
symbol; when it differs (the core's cache entry lost, the shipped store not used) it raises
:class:`~weft.core.diskcache.StaleCaller`, and weft's cache (``core/diskcache.py``) treats
the kernel as not cached: it is compiled again, against the core as it is now. Never an
unresolved symbol.

Only for cores whose work dwarfs a call (a whole tile's copy or transform): nothing of the
core is specialised for the caller's constants, and nothing is inlined.
"""
from __future__ import annotations

import functools
import importlib
import inspect

from numba.core import cgutils, types
from numba.extending import intrinsic

from ..core.diskcache import StaleCaller


#: (module, name) -> the dispatcher :func:`by_symbol` wrapped (for :func:`load`)
TARGETS = {}


def load(module, name, sig, symbol):
    """Compile or load core ``module.name`` for ``sig`` (before a cached caller is loaded), and
    check that it defines ``symbol``."""
    getattr(importlib.import_module(module), name)  # (binds the helpers on first use)
    disp = TARGETS[(module, name)]
    disp.compile(sig)
    got = disp.overloads[sig].fndesc.mangled_name
    if got != symbol:
        raise StaleCaller(f"{module}.{name}{sig}: cached caller wants {symbol}, found {got}")


def by_symbol(disp, module, name):
    """An intrinsic calling dispatcher ``disp`` (bound as ``module.name``) by symbol; it takes
    the same positional parameters."""
    TARGETS[(module, name)] = disp
    params = list(inspect.signature(disp.py_func).parameters)

    def typer(typingctx, *args):
        sig = tuple(types.unliteral(a) for a in args)
        disp.compile(sig)
        cres = disp.overloads[sig]
        rsig = cres.signature
        symbol = cres.fndesc.mangled_name

        def codegen(context, builder, signature, llargs):
            fnty = context.call_conv.get_function_type(rsig.return_type, rsig.args)
            fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            vals = [context.cast(builder, v, a, b)
                    for v, a, b in zip(llargs, signature.args, rsig.args)]
            status, res = context.call_conv.call_function(builder, fn, rsig.return_type,
                                                          rsig.args, vals)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            context.active_code_library._reload_init.add(
                functools.partial(load, module, name, sig, symbol))
            return res
        return rsig.return_type(*args), codegen

    # an intrinsic's typer takes the call's parameters by name
    ns = {"typer": typer}
    exec(f"def {name}(typingctx, {', '.join(params)}):\n"  # noqa: S102 - names of our own
         f"    return typer(typingctx, {', '.join(params)})\n", ns)
    return intrinsic(ns[name])
