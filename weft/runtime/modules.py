"""Warp's module API: options per Python module, loading, and the kernel cache.

Warp groups the kernels of a Python module into one compiled module with its own options;
weft compiles each kernel on its own (cached on disk, see :mod:`weft.runtime.cache`) but keeps
the registry of options per module with Warp's names and defaults, so programs that set them
run unchanged. weft honours ``fast_math`` (its kernels and the funcs they call compile with
Numba's ``fastmath=True``; part of each kernel's cache key); the other options are stored::

    wp.set_module_options({"fast_math": True})     # this Python module's kernels
    wp.get_module_options()["fast_math"]           # -> True

Changing an option that changes generated code through :func:`set_module_options` (or
``Module.mark_modified()``) makes the module's kernels compile again, or load the matching
variant from the cache, on their next launch, as Warp reloads a modified module.
"""
from __future__ import annotations

import os
import shutil
import sys

from ..core import config


def _defaults():
    """Warp 1.19's module options, from the current ``wp.config`` where Warp takes them."""
    return {
        "max_unroll": config.max_unroll,
        "enable_backward": config.enable_backward,
        "enable_mathdx_gemm": None,
        "enable_mathdx_solver": None,
        "enable_mathdx_fft": None,
        "fast_math": False,
        "fuse_fp": True,
        "lineinfo": config.lineinfo,
        "cuda_output": None,
        "mode": None,
        "optimization_level": None,
        "cpu_compiler_flags": None,
        "block_dim": 256,
        "compile_time_trace": config.compile_time_trace,
        "strip_hash": False,
        "extra_build_options": None,
        "deterministic": config.deterministic,
        "deterministic_max_records": config.deterministic_max_records,
        "default_grid_stride": None,
    }


#: module options that change the generated code (and so the kernels' cache keys)
COMPILE_OPTIONS = ("fast_math",)


class Module:
    """The options of the kernels of one Python module (Warp's ``wp.Module``, reduced to its
    name and ``options``; weft compiles kernels one by one, so there is nothing to load)."""

    def __init__(self, name, options=None):
        self.name = name
        self.options = _defaults()
        if options:
            self.options.update(options)

    def load(self, device=None, block_dim=None):
        """Compile this module's kernels ahead (:func:`load_module`). Returns True, as Warp's
        successful load."""
        _load([self.name], device, None)
        return True

    def hash_module(self):
        """A hash of what the module's kernels and funcs compile to (their cache keys: source,
        what they refer to, ``wp.static`` values), as Warp's ``Module.hash_module``."""
        import hashlib

        from ..stdlib.funcs import DECLARED
        from . import cache
        h = hashlib.sha256()
        for fn in DECLARED.get(self.name, ()):
            h.update(f"{fn._weft_kind}:{fn.__qualname__}:{cache.key_of(fn)}".encode())
        return h.hexdigest()

    def mark_modified(self):
        """Make this module's kernels compile again (or load from the cache) on their next
        launch, with the module's current options (weft's cache keys follow the source)."""
        from ..stdlib.funcs import DECLARED
        for fns in list(DECLARED.values()):
            for fn in fns:
                if getattr(fn, "_module", None) is self:
                    fn._forget_compiled()

    def __repr__(self):
        return f"Module({self.name!r})"


_modules = {}


def get_module(name):
    """The :class:`Module` of Python module ``name`` (created on first use)."""
    name = str(name)
    m = _modules.get(name)
    if m is None:
        m = _modules[name] = Module(name)
    return m


def _module_of(module, depth):
    if isinstance(module, Module):
        return module
    if module is None:
        # the caller's frame (``inspect.stack()`` would read every frame's source lines: 0.13 s
        # a call in MuJoCo Warp, which sets its modules' options at import)
        frame = sys._getframe(depth)
        name = frame.f_globals.get("__name__", "__main__")
    elif isinstance(module, str):
        name = module
    else:
        name = module.__name__
    return get_module(name)


def set_module_options(options, module=None):
    """Set options of the kernels of a Python module (the calling one by default; else a
    name, a Python module or a :class:`Module`). See :func:`_defaults` for the names."""
    m = _module_of(module, 2)
    before = [m.options.get(k) for k in COMPILE_OPTIONS]
    m.options.update(options)
    if before != [m.options.get(k) for k in COMPILE_OPTIONS]:
        m.mark_modified()


def module_of_kernel(func, key, module=None, module_options=None):
    """The :class:`Module` whose options kernel ``key`` (Python function ``func``) compiles
    with, from ``@wp.kernel``'s ``module`` and ``module_options`` as Warp reads them."""
    if module_options is not None:
        if not isinstance(module_options, dict):
            raise TypeError(f"@wp.kernel for '{func.__name__}': module_options must be a dict, "
                            f"got {type(module_options).__name__}.")
        if module != "unique":
            raise ValueError(f"@wp.kernel for '{func.__name__}': module_options requires "
                             'module="unique". Use wp.set_module_options() to set module-level '
                             "options for a shared module.")
        unknown = sorted(set(module_options) - set(_defaults()))
        if unknown:
            raise ValueError(f"@wp.kernel for '{func.__name__}': unknown module_options: "
                             f"{', '.join(repr(k) for k in unknown)}")
    if module is None:
        return get_module(func.__module__)
    if module == "unique":  # options of its own, from Warp's defaults
        return Module(f"{key}_unique", module_options)
    return module if isinstance(module, Module) else get_module(module)


def get_module_options(module=None):
    """The options dict of a Python module (the calling one by default)."""
    return _module_of(module, 2).options


def load_module(module=None, device=None, recursive=False, block_dim=None, max_workers=None):
    """Compile the kernels of a Python module ahead of their launches (the calling module by
    default; else a module, its name or a :class:`Module`; ``recursive``: its submodules'
    too), as Warp's ``wp.load_module``. ``max_workers`` above 1 shares the compiles with
    worker processes (default ``wp.config.load_module_max_workers``). See
    :mod:`weft.runtime.ahead` for what is compiled."""
    m = _module_of(module, 2)
    names = [m.name]
    if recursive:
        from ..stdlib.funcs import DECLARED
        names += [n for n in DECLARED if isinstance(n, str) and n.startswith(m.name + ".")]
    _load(names, device, max_workers)


def force_load(device=None, modules=None, block_dim=None, max_workers=None):
    """Compile ahead the kernels of every Python module that declared one (or of
    ``modules``), as Warp's ``wp.force_load`` (see :func:`load_module`)."""
    from ..stdlib.funcs import DECLARED
    if modules is None:
        names = list(DECLARED)
    else:
        names = [_module_of(m, 2).name for m in modules]
    _load(names, device, max_workers)


def _load(names, device, max_workers):
    from .ahead import kernels_of, load_kernels
    from .device import get_device
    devices = device if isinstance(device, (list, tuple)) else [device]
    for d in devices:
        dev = get_device(d)
        load_kernels(kernels_of(names), "cuda" if dev.is_cuda else "cpu", max_workers)


def clear_kernel_cache():
    """Delete weft's cached generated modules and their compiled code (the contents of the
    cache directory, ``$WEFT_CACHE_DIR`` or ``~/.cache/weft``; the directory itself stays).
    Kernels already loaded in this process keep working."""
    from ..core import diskcache
    from .cache import cache_dir
    root = cache_dir()
    if root is None or not diskcache.writable() or not os.path.isdir(root):
        return  # nothing cached, or a read-only cache that is not ours to empty
    for entry in os.scandir(root):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass
