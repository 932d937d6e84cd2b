"""Binding the portable cores to a target, shared by every ``compile_for`` (``mesh_query``,
``volume_query``, ``hashgrid``).

A portable function calls the others by global name, so compiling means rebinding each one's
code to one namespace that maps every name to its compiled version (``compile_into``).

``variant`` makes a second function from one function's code with some of its globals bound
otherwise: the box tests for operands that cannot be NaN are the NaN-safe ones with Python's
``min``/``max`` (selects) for Warp's ``fminf``/``fmaxf``; the float64 overloads of the volume
transforms are the float32 ones with ``np.float64`` for the cast. One text, two compiled
functions: a variant compiles exactly as the copy it replaces did.
"""
import builtins
import types


def rebind(fn, glb, name):
    """``fn``'s code as function ``name`` with the globals ``glb``. Another name gets a code
    object of its own: code objects compare by content, and Numba keys compiled functions by
    theirs (two equal ones would share one compiled instance), and its cache names an entry by
    qualified name and line."""
    code = fn.__code__
    if code.co_name != name:
        names = {"co_name": name}
        if hasattr(code, "co_qualname"):  # Python 3.11+
            names["co_qualname"] = name
        code = code.replace(**names)
    out = types.FunctionType(code, glb, name, fn.__defaults__)
    out.__qualname__ = name
    out.__doc__ = fn.__doc__
    return out


def _resolve(value, names):
    """A binding's value: a string names a function of ``names`` (or a builtin), anything else
    stands for itself."""
    if not isinstance(value, str):
        return value
    return names[value] if value in names else getattr(builtins, value)


def variant(fn, name, doc=None, scope=None, **bindings):
    """Function ``name`` running ``fn``'s code with the globals named by ``bindings`` bound to
    their values: a string names a function, rebound per target by ``compile_into`` and here
    looked up in ``scope`` (default: ``fn``'s module; pass ``globals()`` to make a variant in
    another module) or among the builtins; another value stands for itself. ``fn``'s module
    must define, before this call, every global the code reads (a name bound only by
    ``compile_into`` stays unbound in the uncompiled module function, as in ``fn`` itself)."""
    names = scope if scope is not None else fn.__globals__
    glb = dict(fn.__globals__)
    glb.update({k: _resolve(v, names) for k, v in bindings.items()
                if not isinstance(v, str) or v in names or hasattr(builtins, v)})
    out = rebind(fn, glb, name)
    out.__doc__ = doc or f"``{fn.__name__}`` with {', '.join(sorted(bindings))} rebound."
    out.bindings = bindings
    return out


def compile_into(ns, fns, jit, inline_jit=None, inline=(), native=None):
    """Compile every ``(name, function)`` of ``fns`` into the namespace ``ns``: each with
    ``jit`` (with ``inline_jit`` when given and the name is in ``inline``), its globals ``ns``
    itself so that the functions call each other's compiled versions, a name in ``native``
    (``{name: compiled}``) taken from there instead. A variant's globals are ``ns`` with its
    bindings applied, filled in once every function is there (compiling is lazy). Returns
    ``ns``."""
    native = native or {}
    variants = []
    for name, fn in fns:
        if name in native:
            ns[name] = native[name]
            continue
        bindings = getattr(fn, "bindings", None)
        glb = ns if bindings is None else dict(ns)    # (its module's name, for caching)
        if bindings is not None:
            variants.append((glb, bindings))
        ns[name] = (inline_jit if inline_jit is not None and name in inline else jit)(
            rebind(fn, glb, name))
    for glb, bindings in variants:
        glb.update(ns)
        glb.update({k: _resolve(v, ns) for k, v in bindings.items()})
    return ns
