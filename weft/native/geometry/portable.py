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
import threading
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


class Namespace(dict):
    """A namespace whose compiled functions are made at their first lookup.

    A kernel calls a few of the hundreds of queries and cores; making a dispatcher (and its
    cache) costs about 0.2 ms, so binding them all took 0.07-0.09 s of a warm geometry
    program's first launch (``docs/performance.md``, stop 74). A name is registered with its
    recipe (:meth:`later`), and the first lookup of it (``ns[name]``: Python running the
    functions whose globals this is, Numba reading their globals while it compiles them) makes
    the value and keeps it. ``parent`` answers the names this one does not hold (a variant's
    globals: its module's namespace with a few names bound otherwise). ``in`` counts the
    names not yet made; ``get``, ``dict(ns)`` and ``{**ns}`` see only those made
    (:meth:`made` makes them all)."""

    def __init__(self, items=(), parent=None):
        super().__init__(items)
        self._recipes = {}
        self._parent = parent

    def later(self, name, recipe):
        """Make ``name``'s value with ``recipe()`` at its first lookup."""
        dict.pop(self, name, None)
        self._recipes[name] = recipe

    def take(self, other):
        """Hold every name of ``other`` (another namespace's values, made there)."""
        for name in list(other._recipes) if isinstance(other, Namespace) else ():
            self.later(name, lambda name=name: other[name])
        self.update(dict.items(other))

    def child(self, items=()):
        """A namespace answering with ``items`` first, then with this one (its module name
        kept: cached code needs one)."""
        return Namespace({"__name__": dict.get(self, "__name__"), **dict(items)}, parent=self)

    def __missing__(self, name):
        with _LOCK:  # (two threads compiling: one value)
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
            recipe = self._recipes.get(name)
            if recipe is not None:
                value = recipe()
                dict.__setitem__(self, name, value)
                del self._recipes[name]
                return value
        if self._parent is not None:
            return self._parent[name]
        raise KeyError(name)

    def __contains__(self, name):
        return dict.__contains__(self, name) or name in self._recipes or \
            (self._parent is not None and name in self._parent)

    def get(self, name, default=None):
        return self[name] if name in self else default

    def made(self):
        """This namespace with every value made (a plain dict)."""
        for name in list(self._recipes):
            self[name]  # noqa: B018 (makes it)
        return dict(self)


_LOCK = threading.RLock()


def compile_into(ns, fns, jit, inline_jit=None, inline=(), native=None):
    """Compile every ``(name, function)`` of ``fns`` into the namespace ``ns`` (a
    :class:`Namespace`, whose values are made at their first lookup): each with ``jit`` (with
    ``inline_jit`` when given and the name is in ``inline``), its globals ``ns`` itself so that
    the functions call each other's compiled versions, a name in ``native`` (``{name:
    compiled}``) taken from there instead. A variant's globals are a namespace over ``ns``
    with its bindings applied. Returns ``ns``."""
    native = native or {}
    for name, fn in fns:
        if name in native:
            ns[name] = native[name]
            continue
        bindings = getattr(fn, "bindings", None)
        glb = ns
        if bindings is not None:
            glb = ns.child()
            for k, v in bindings.items():
                if isinstance(v, str):
                    glb.later(k, lambda v=v: _resolve(v, ns))
                else:
                    glb[k] = v
        compile_fn = inline_jit if inline_jit is not None and name in inline else jit
        ns.later(name, lambda fn=fn, glb=glb, name=name, compile_fn=compile_fn:
                 compile_fn(rebind(fn, glb, name)))
    return ns
