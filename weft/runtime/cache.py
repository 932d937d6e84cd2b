"""Generated modules on disk, keyed by a hash of everything that affects them.

Modules live in ``$WEFT_CACHE_DIR`` (default ``~/.cache/weft``, created 0700) as
``<kernel>_<hash>.py`` and are imported from there, so Numba's ``cache=True`` keeps their
machine code next to them and a new process neither transpiles nor recompiles.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile

import numpy as np

from .. import __version__


def cache_dir():
    root = os.environ.get("WEFT_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "weft")
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def _fingerprint(value, seen, out):
    kind = getattr(value, "_weft_kind", None)
    if kind in ("func", "kernel"):
        if id(value) in seen:
            return
        seen.add(id(value))
        src = value.parsed()
        out.append(f"{kind}:{value.__name__}:" + ast.dump(src.tree, include_attributes=False))
        for dep in value.custom_rules():
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


def referenced_values(obj):
    """Python values that the names of ``obj``'s source refer to (globals and closure)."""
    src = obj.parsed()
    fn = src.pyfunc
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for n, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[n] = cell.cell_contents
            except ValueError:
                pass
    out = []
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Attribute):
            chain = []
            base = node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in scope:
                value = scope[base.id]
                for a in reversed(chain):
                    value = getattr(value, a, None)
                if value is not None:
                    out.append(value)
        elif isinstance(node, ast.Name) and node.id in scope:
            out.append(scope[node.id])
    return out


_CODE_HASH = []


def _weft_code_hash():
    """Hash of weft's own code generators, so that a changed weft never reuses stale modules."""
    if not _CODE_HASH:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for sub in ("transpiler", "stdlib"):
            folder = os.path.join(root, sub)
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), "rb") as f:
                        h.update(name.encode() + f.read())
        _CODE_HASH.append(h.hexdigest()[:16])
    return _CODE_HASH[0]


def key_of(kernel, extra=""):
    out = [f"weft {__version__} {_weft_code_hash()}", extra]
    _fingerprint(kernel, set(), out)
    return hashlib.sha256("\n".join(out).encode()).hexdigest()[:20]


def load_or_build(modname, build_source):
    """Import cached module ``modname`` (building its source with ``build_source()`` first if
    absent) and return it."""
    if modname in sys.modules:
        return sys.modules[modname]
    path = os.path.join(cache_dir(), modname + ".py")
    if not os.path.exists(path):
        text = build_source()
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[modname]
        raise
    return mod


__all__ = ["cache_dir", "key_of", "load_or_build", "referenced_values", "inspect"]
