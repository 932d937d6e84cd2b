"""Generated modules on disk, keyed by a hash of everything that affects them.

Modules live in the cache directory (``$WEFT_CACHE_DIR``, default ``~/.cache/weft``; see
:mod:`weft.core.diskcache` for when a directory is trusted) as ``<kernel>_<hash>.py`` beside
``<kernel>_<hash>.py.sha256``, and are imported from there, so Numba caches their machine code
and a new process neither transpiles nor recompiles. A module whose text no longer matches its
recorded hash is rebuilt; generated code that is not valid Python is never written.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import os
import sys

import numpy as np

from ..core import diskcache
from ..core.version import __version__
from ..stdlib.func_pickle import origin_filename


def cache_dir():
    """The trusted cache directory (see :mod:`weft.core.diskcache`), or None: compile in memory."""
    return diskcache.cache_root()


def _fingerprint(value, seen, out):
    kind = getattr(value, "_weft_kind", None)
    if kind in ("func", "kernel"):
        if id(value) in seen:
            return
        seen.add(id(value))
        src = value.parsed()
        dumped = getattr(src, "_weft_dump", None)  # once per declaration (a func in many keys)
        if dumped is None:
            dumped = src._weft_dump = ast.dump(src.tree, include_attributes=False)
        out.append(f"{kind}:{value.__name__}:" + dumped)
        # where it is: generated code, its comments and the ABI's messages give file:line, so a
        # declaration moved within its file (lines added above it) is a new module, not one
        # whose errors point at the lines it had
        # (a declaration shipped by source to another process keeps its sender's file and lines)
        origin = origin_filename(src.filename)
        out.append(f"at:{os.path.basename(origin)}:{src.first_line}:{src.col_offset}")
        for pos, static in sorted(src.statics.items()):  # wp.static values of its declaration
            out.append(f"static:{pos}")
            _fingerprint(static, seen, out)
        for dep in value.custom_rules():
            _fingerprint(dep, seen, out)
        for dep in getattr(value, "overloads", ()):  # redeclarations and overloads of a func
            _fingerprint(dep, seen, out)
        for dep in referenced_values(value):
            _fingerprint(dep, seen, out)
        return
    if isinstance(value, (bool, int, float, str, np.number, np.ndarray)):
        out.append(f"value:{type(value).__name__}:{np.asarray(value).tolist()!r}")
        return
    struct = getattr(value, "_wp_struct_", None) if isinstance(value, type) else None
    if struct is not None:
        out.append(f"struct:{value.__name__}:{struct.signature()}")
        return
    out.append(_describe(value, seen, out))


def _describe(value, seen, out):
    """A key for any other value a kernel names: distinct values must give distinct keys (a
    kernel closing over ``wp.sin`` and one over ``wp.cos`` differ only here), so anything
    without a stable name falls back to its ``repr`` (at worst a cache miss, never a stale
    hit)."""
    from ..stdlib.registry import Builtin
    if isinstance(value, Builtin):
        return f"builtin:{value.name}"
    if isinstance(value, (tuple, list)):
        for item in value:
            _fingerprint(item, seen, out)
        return f"seq:{type(value).__name__}:{len(value)}"
    if value is None:
        return "none"
    if isinstance(value, type):
        return (f"type:{value.__module__}.{value.__qualname__}:{getattr(value, '_shape_', '')}:"
                f"{getattr(getattr(value, '_wp_scalar_type_', None), '__name__', '')}")
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if name is None and isinstance(getattr(value, "name", None), str):
        name = value.name  # weft's special forms (wp.tid, wp.atomic_add, ...)
    if isinstance(name, str):
        return f"obj:{type(value).__qualname__}:{getattr(value, '__module__', '')}.{name}"
    return f"obj:{type(value).__qualname__}:{value!r}"


def type_key(t):
    """A key for a kernel parameter type (distinct types, distinct keys)."""
    from ..core import types as T
    if isinstance(t, T.ArrayType):
        return f"array({type_key(t.dtype)},{t.ndim},{t.local},{t.size})"
    if T.is_struct(t):
        return f"struct:{t.__module__}.{t.__qualname__}:{t._wp_struct_.signature()}"
    scalar = getattr(getattr(t, "_wp_scalar_type_", None), "__name__", "")
    return f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', t)}:" \
        f"{getattr(t, '_shape_', '')}:{scalar}"


def referenced_values(obj):
    """Python values that the names of ``obj``'s source refer to (globals and closure)."""
    from ..transpiler.statics import definition_scope, position
    src = obj.parsed()
    fn = src.pyfunc
    scope = definition_scope(fn)
    # names the function binds itself (parameters, assigned variables, loop variables) are not
    # the globals of the same name: a kernel parameter ``x`` beside a global array ``x`` must
    # not put that array's contents into the key
    local = {a.arg for a in src.tree.args.args}
    local |= {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    out = []

    def visit(node):
        if isinstance(node, ast.Call) and src.statics and hasattr(node, "end_col_offset") and \
                position(node) in src.statics:
            return  # a wp.static evaluated at declaration: its value is in the key instead
        if isinstance(node, ast.Attribute):
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name):
                # only the value the whole chain names (``params.dt``, ``wp.sin``): the objects
                # along it are not constants of the kernel, and their repr may hold addresses
                if base.id in scope and base.id not in local:
                    value = scope[base.id]
                    for a in reversed(chain):
                        value = getattr(value, a, None)
                    if value is not None:
                        out.append(value)
                return
        elif isinstance(node, ast.Name):
            if node.id in scope and node.id not in local:
                out.append(scope[node.id])
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(src.tree)
    # the evaluated annotations: a name used only in an annotation is not in the function's
    # closure, so a kernel made per dtype by a factory (``def make(dtype): @wp.kernel def
    # k(a: wp.array(dtype=dtype))``) would otherwise get one key for every dtype
    for a in src.tree.args.args:
        ann = getattr(fn, "__annotations__", {}).get(a.arg)
        if ann is not None and not isinstance(ann, str):
            out.append(ann)
    return out


_CODE_HASH = []


def _weft_code_hash():
    """Hash of weft's own code generators, of the geometry cores that kernels link in (their
    machine code is cached inside the kernels') and of the float32 ``tanh`` compiled into them
    (``libm_tanh``), so that a changed weft never reuses stale modules."""
    if not _CODE_HASH:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for sub in ("transpiler", os.path.join("transpiler", "lowering"), "stdlib",
                    os.path.join("stdlib", "tiles"), "native", os.path.join("native", "geometry")):
            folder = os.path.join(root, sub)
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), "rb") as f:
                        h.update(name.encode() + f.read())
        with open(os.path.join(root, "runtime", "libm_tanh.py"), "rb") as f:
            h.update(f.read())  # (compiled into kernels in place of the C library's tanhf)
        # modules cached before Numba's function ids were drawn at random
        # (``numba_start.unique_function_ids``) may share symbols with each other's code
        h.update(b"function ids: random")
        _CODE_HASH.append(h.hexdigest()[:16])
    return _CODE_HASH[0]


def key_of(kernel, extra=""):
    from .libm_tanh import variant
    out = [f"weft {__version__} {_weft_code_hash()} tanhf:{variant()}", extra]
    _fingerprint(kernel, set(), out)
    return hashlib.sha256("\n".join(out).encode()).hexdigest()[:20]


_PREFIX = "weft_generated."  # generated modules' names in sys.modules

#: what this process has built: generated modules transpiled, and functions of weft (generated
#: or its own helpers) that Numba compiled rather than loaded from the cache
STATS = {"transpiled": [], "compiled": []}


def _watch_compiles():
    from numba.core import event

    class _Count(event.Listener):
        """Counts outermost compiles of weft's functions (a helper compiled inside a user's
        own ``numba.njit`` function is the user's compile, not weft's)."""

        depth = 0

        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            if self.depth == 0 and fn.__module__.startswith((_PREFIX, "weft.")):
                STATS["compiled"].append(f"{fn.__module__}.{fn.__qualname__}")
            self.depth += 1

        def on_end(self, ev):
            self.depth -= 1

    event.register("numba:compile", _Count())


_watch_compiles()


_exit_registered = []


def _quick_exit():
    """At interpreter exit, once kernels were compiled or loaded: collect what is garbage now
    (it is finalized as without this), then freeze the collector (``gc.freeze``), so that the
    interpreter's last collection does not walk and tear down Numba's compiler state (its LLVM
    modules, typing and target registries), which only becomes garbage as modules are
    cleared. Measured: 0.2-0.3 s of every process that compiled a kernel, 0.05-0.1 s of one
    that loaded cached kernels. Objects in reference cycles that are still reachable at exit
    are then not finalized, which CPython never promised (its documentation of ``__del__``);
    ``WEFT_QUICK_EXIT=0`` turns this off."""
    import gc
    gc.collect()
    gc.freeze()


def _register_quick_exit():
    if not _exit_registered and os.environ.get("WEFT_QUICK_EXIT", "1") != "0":
        import atexit
        _exit_registered.append(True)
        atexit.register(_quick_exit)


def load_or_build(modname, build_source, cpu=True):
    """Import generated module ``modname``: from the cache when a verified copy is there, else
    built with ``build_source()`` (which raises ``KernelError`` for bad kernels), written to
    the cache when it is writable and imported; in memory when there is no usable cache.
    ``cpu``: the module's functions are ``numba.njit`` ones (given weft's verified cache)."""
    full = _PREFIX + modname
    mod = sys.modules.get(full)
    if mod is not None:
        return mod
    _register_quick_exit()
    root = cache_dir()
    path = os.path.join(root, modname + ".py") if root is not None else None
    text, table = _read_verified(path) if path is not None else (None, None)
    library = _load_library(table, path) if table else None
    code = None
    if text is None or library is None and table:
        built = build_source()
        text, new = built if isinstance(built, tuple) else (built, {})
        STATS["transpiled"].append(modname)
        written = path is not None and diskcache.writable()
        code = _check_source(text, modname, path if written else None, cpu)
        library = None
        if written:
            table = _write_library(new, path)
            library = _load_library(table, path, new) if table else None
            _write(path, text, table if library else None)
        else:
            path = code = None
    mod = _import(full, path, text, cpu, code)
    if library:
        _bind_library(mod, library)
    return mod


# ---------------------------------------------------------------- weft's own funcs, once per cache
#
# The funcs weft itself declares in the kernel language (the quaternion and transform helpers,
# the decompositions, noise, the differentiable part of the mesh queries) are written into each
# generated module that calls them, and Numba would compile them again for every such module.
# Each is also written, with the funcs it calls, as a module of its own under
# ``<cache>/library/`` (``assemble.library_modules``: the same definitions, so the same code).
# A module's ``.sha256`` record lists which of its names come from which library module; the
# library modules are imported first, and the module's names bound to their functions before
# anything compiles. So each compiles once per cache, and :mod:`weft.native.shipped` ships the
# common ones like weft's other machine code. The text (``source()``, ``weft transpile``) is
# unchanged. A library module that is missing or damaged makes its module be built again (its
# cached machine code was linked against the library's), like any damaged module.

LIBRARY = "library"
_library_folders = set()


def _write_library(library, path):
    """Write the library modules of a module just built (those not there yet); returns its
    table ``{library module: [names]}`` (None: none, or they could not be written)."""
    if not library:
        return None
    folder = os.path.join(os.path.dirname(path), LIBRARY)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    for name, (_, lib_text) in library.items():
        lib_path = os.path.join(folder, name + ".py")
        if _read_verified(lib_path, quiet=True)[0] != lib_text:
            _write(lib_path, lib_text)
    return {name: list(names) for name, (names, _) in library.items()}


def _load_library(table, path, built=None):
    """The library modules ``table`` of cached module ``path`` names, imported (once per
    process): ``{name: (module, names)}``, or None (reported) when one cannot be read or is
    damaged. ``built``: the texts of the modules just written (not read back)."""
    folder = os.path.join(os.path.dirname(path), LIBRARY)
    if folder not in _library_folders:
        from ..native import shipped
        diskcache.register_shipped(folder, shipped.STORE)
        _library_folders.add(folder)
    out = {}
    for name, names in table.items():
        full = _PREFIX + LIBRARY + "." + name
        lib = sys.modules.get(full)
        if lib is None:
            lib_path = os.path.join(folder, name + ".py")
            lib_text = built[name][1] if built else _read_verified(lib_path)[0]
            if lib_text is None:
                _damaged(path, f"needs the library module {lib_path!r}, which is missing or "
                         "damaged")
                return None
            lib = _import(full, lib_path, lib_text, True)
        out[name] = (lib, names)
    return out


def _bind_library(mod, library):
    """Bind the names of generated module ``mod`` to the library modules' functions of the
    same names."""
    from numba.core.registry import CPUDispatcher
    for lib, names in library.values():
        for n in names:
            f = vars(lib).get(n)
            if isinstance(f, CPUDispatcher) and isinstance(vars(mod).get(n), CPUDispatcher):
                setattr(mod, n, f)


def _digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _read_verified(path, quiet=False):
    """``(text, library table)`` of cached module ``path`` when its text matches its recorded
    hash (the table: the record's second line, see :func:`_write_library`; None when it has
    none); ``(None, None)`` when absent. A module that was edited, truncated or garbled, or
    whose record is, is reported (unless ``quiet``) and rebuilt."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if not quiet:
            _damaged(path, f"cannot be read ({exc.strerror})")
        return None, None
    try:
        with open(path + ".sha256") as f:
            recorded, _, rest = f.read().partition("\n")
    except OSError:
        recorded = rest = None
    table = _library_table(rest) if rest and rest.strip() else None
    if table is False:
        recorded = None  # a damaged record: rebuilt
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        text = None
    if text is None or recorded != _digest(text):
        if not quiet:
            _damaged(path, "does not match the hash weft recorded when it wrote it (edited or "
                     "damaged)")
        return None, None
    return text, table


def _library_table(line):
    """The library table written as JSON on a record's second line, or False when damaged."""
    import json
    try:
        table = json.loads(line)
    except ValueError:
        return False
    ok = isinstance(table, dict) and all(
        isinstance(n, list) and all(isinstance(x, str) for x in n) for n in table.values())
    return table if ok else False


def _damaged(path, why):
    import warnings
    warnings.warn(f"weft: the cached module {path!r} {why}; rebuilding it",
                  diskcache.CacheWarning, stacklevel=4)


def _runnable(text, path, cpu):
    """The text a module runs: CPU modules' functions get weft's verified cache
    (diskcache.protect), not Numba's own (which would also create __pycache__ folders), and
    without a file they compile in memory."""
    return text.replace("cache=True", "cache=False") if cpu or path is None else text


def _check_source(text, modname, path, cpu):
    """Generated code must be valid Python: anything else is weft's bug, and is never cached.
    Returns the code object of the module as it will run from ``path`` (None: it has none)."""
    try:
        if path is None:
            compile(text, modname + ".py", "exec")
            return None
        return compile(_runnable(text, path, cpu), path, "exec")
    except SyntaxError as exc:
        from ..core.errors import InternalError
        where = ""
        try:  # kept for the report (never loaded: the name is not a module's)
            path = os.path.join(cache_dir(), modname + ".invalid.py.txt")
            with open(path, "w") as f:
                f.write(text)
            where = f"; the code is in {path}"
        except OSError:
            pass
        raise InternalError(f"the code generated for {modname} is not valid Python "
                            f"(line {exc.lineno}: {exc.msg}){where}") from None


def _write(path, text, library=None):
    """Write the module's hash (and its ``library`` table: see :func:`_write_library`), then
    the module, each atomically: a reader never sees a module without its hash, and two
    processes writing the same module agree."""
    record = _digest(text) + "\n"
    if library:
        import json
        record += json.dumps(library, sort_keys=True) + "\n"
    try:
        diskcache.write_replacing(path + ".sha256", record.encode())
        diskcache.write_replacing(path, text.encode())
    except OSError as exc:
        import warnings
        warnings.warn(f"weft: could not write {path!r} to the cache ({exc.strerror}); "
                      "compiling in memory", diskcache.CacheWarning, stacklevel=4)


#: beside each cached module, its code object (``<module>.py.code``): Python's magic number,
#: the sha256 of the text it was compiled from and of the file's own path, the sha256 of the
#: marshalled code, then the code. A new process reads it instead of compiling the module's
#: text again (MuJoCo Warp's step loads 96 modules, 14 MB of source: 4.2 s of compiling).
_CODE_SUFFIX = ".code"


def _code_header(runnable, path):
    import importlib.util
    return importlib.util.MAGIC_NUMBER + hashlib.sha256(
        (path + "\0" + runnable).encode()).digest()


def _load_code(path, runnable):
    """The code object saved beside ``path`` for exactly ``runnable``, or None (absent, from
    another text, path or Python, or damaged: each is compiled again)."""
    import marshal
    try:
        with open(path + _CODE_SUFFIX, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    head = _code_header(runnable, path)
    n = len(head)
    if raw[:n] != head or hashlib.sha256(raw[n + 32:]).digest() != raw[n:n + 32]:
        return None
    try:
        return marshal.loads(raw[n + 32:])
    except (EOFError, ValueError, TypeError):
        return None


def _save_code(path, runnable, code):
    import marshal
    if not diskcache.writable():
        return
    blob = marshal.dumps(code)
    data = _code_header(runnable, path) + hashlib.sha256(blob).digest() + blob
    try:
        diskcache.write_replacing(path + _CODE_SUFFIX, data)
    except OSError:
        pass  # only the next process's start-up depends on it


def _import(full, path, text, cpu, code=None):
    """Execute the module (from its file when it has one, so Numba can cache its machine
    code beside it) and register it in ``sys.modules``. ``code``: the module's code object,
    compiled already (a module just built)."""
    import types
    if cpu:
        from .numba_start import start
        start()
    mod = types.ModuleType(full)
    runnable = _runnable(text, path, cpu)
    if path is None:
        mod.__file__ = "<weft:" + full + ">"
        import linecache  # so tracebacks and pdb show the generated lines
        linecache.cache[mod.__file__] = (len(text), None, text.splitlines(True), mod.__file__)
        code = compile(runnable, mod.__file__, "exec")
    else:
        mod.__file__ = path
        if code is None:
            code = _load_code(path, runnable)
            if code is None:
                code = compile(runnable, path, "exec")
                _save_code(path, runnable, code)
        else:  # built just now
            _save_code(path, runnable, code)
    mod.__weft_source__ = text
    sys.modules[full] = mod
    try:
        exec(code, mod.__dict__)  # noqa: S102 - weft's own generated code, verified above
    except BaseException:
        del sys.modules[full]
        raise
    if cpu:
        from .numba_start import use_generated_code_compiler
        use_generated_code_compiler(mod)
    return diskcache.protect(mod) if path is not None and cpu else mod


__all__ = ["cache_dir", "key_of", "load_or_build", "referenced_values", "inspect"]
