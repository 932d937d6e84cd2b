"""The public module paths that name weft's modules by what they are for, not by the layer
that holds them: ``weft.types`` is :mod:`weft.core.types`, ``weft.optim`` is
:mod:`weft.libs.optim`, ... (Warp's ``warp.types``, ``warp.optim``, ... under the import shim).

Each is the same module object as its home (imported when first named), so classes, pickles
and ``isinstance`` agree whichever path a program used.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: weft's layers, bottom first: each one folder of ``weft/``. A module imports its own layer and
#: those below it; a tuple is one level whose members do not import each other. Checked by
#: ``tests/test_layering.py`` (see ``docs/architecture.md``).
LAYERS = ("core", "native", "stdlib", "transpiler", "runtime", "autodiff",
          ("libs", "integrations"))

#: public path below ``weft`` -> the module that answers it
PUBLIC = {
    "types": "core.types", "config": "core.config", "errors": "core.errors",
    "constants": "core.constants", "typeinfo": "core.typeinfo", "timing": "core.timing",
    "pytree": "core.pytree",
    "tree": "autodiff.tree",
    "checkpoint": "autodiff.checkpoint",
    "utils": "libs.utils", "optim": "libs.optim", "render": "libs.render", "fem": "libs.fem",
    "sim": "libs.sim", "sparse": "libs.sparse", "examples": "libs.examples",
    "serialize": "integrations.serialize", "distributed": "integrations.distributed",
    "cli": "integrations.cli",
    "dlpack": "runtime.dlpack", "jax": "integrations.jax", "torch": "integrations.torch",
}

#: top-level names answered by an interop module, imported when first named, so that ``import
#: weft`` imports neither JAX nor PyTorch nor the modules that speak to them
LAZY_NAMES = {
    **dict.fromkeys(("from_jax", "to_jax", "dtype_from_jax", "dtype_to_jax", "device_from_jax",
                     "device_to_jax"), "integrations.jax"),
    **dict.fromkeys(("jax_kernel", "jax_callable", "JaxCallableGraphMode", "JaxModulePreloadMode",
                     "clear_jax_callable_graph_cache"), "integrations.jax.ffi"),
    **dict.fromkeys(("from_torch", "to_torch", "dtype_from_torch", "dtype_to_torch",
                     "device_from_torch", "device_to_torch", "stream_from_torch",
                     "stream_to_torch"), "integrations.torch"),
    "ScopedStream": "runtime.device",  # Warp's stream scope (None only): what interop code opens
}


def home(fullname):
    """The module that answers ``fullname`` (``weft.optim.sgd`` -> ``weft.libs.optim.sgd``), or
    None when it is not a public path."""
    parts = fullname.split(".")
    if len(parts) < 2 or parts[0] != "weft" or parts[1] not in PUBLIC:
        return None
    return ".".join(["weft", PUBLIC[parts[1]]] + parts[2:])


class _Paths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._own_spec = {}

    def find_spec(self, fullname, path, target=None):
        target_name = home(fullname)
        if target_name is None or importlib.util.find_spec(target_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(home(spec.name))
        self._own_spec[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # the import machinery stamped the public path's spec on the module: give it back its own
        module.__spec__ = self._own_spec.pop(module.__name__, module.__spec__)


def install():
    if not any(isinstance(f, _Paths) for f in sys.meta_path):
        sys.meta_path.insert(0, _Paths())


def alias_imported(package):
    """Enter in ``sys.modules`` under its public path each module ``package`` (``weft``) holds
    under that name (``weft.types``, which is ``weft.core.types``), as a submodule imported by
    that path would be: what looks a module up there without importing it finds it, as
    cloudpickle does for the classes it sends by reference (``weft.types.vec2d``; without the
    entry it sends a copy of the class, a type of its own in the receiving process). The other
    public paths enter when they are imported."""
    for name, target in PUBLIC.items():
        module = vars(package).get(name)
        if getattr(module, "__name__", None) == f"weft.{target}":
            sys.modules.setdefault(f"{package.__name__}.{name}", module)


class _AsWarp(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """After :func:`as_warp`: ``import warp.X`` answered by ``weft.X`` (the same module)."""

    def __init__(self):
        self._own_spec = {}

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("warp."):
            return None
        try:
            found = importlib.util.find_spec("weft" + fullname[4:])
        except ImportError:
            found = None
        return None if found is None else importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module("weft" + spec.name[4:])
        self._own_spec[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._own_spec.pop(module.__name__, module.__spec__)


def as_warp():
    """Make ``import warp`` (and ``import warp.sparse``, ``warp.types``, ...) give weft, for
    programs and libraries written for Warp (MuJoCo Warp: ``import weft; weft.as_warp()``,
    then ``import mujoco_warp``). Returns weft. Call it before anything imports Warp: when
    the real ``warp`` is already imported, a module that imported it keeps it, so this
    raises ``ImportError``."""
    weft = importlib.import_module("weft")
    current = sys.modules.get("warp")
    if current is not None and current is not weft:
        raise ImportError(f"weft.as_warp(): the module 'warp' is already imported (from "
                          f"{getattr(current, '__file__', current)!r}); call weft.as_warp() "
                          f"before anything imports warp")
    sys.modules["warp"] = weft
    if not any(isinstance(f, _AsWarp) for f in sys.meta_path):
        sys.meta_path.insert(0, _AsWarp())
    return weft
