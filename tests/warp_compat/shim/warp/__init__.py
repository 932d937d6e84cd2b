"""``import warp`` answered by weft, for running Warp's own unit tests against weft.

Re-exports only: every attribute of ``weft`` under the name ``warp``, and the submodules
that weft also has (``warp.types``, ``warp.config``). Nothing weft lacks is added here, so a
test that needs a missing API fails with AttributeError / ImportError, as it should.
"""
import sys as _sys

import weft as _weft

for _k, _v in vars(_weft).items():
    if not (_k.startswith("__") and _k.endswith("__")):
        globals()[_k] = _v

for _sub in ("types", "config"):
    _sys.modules[__name__ + "." + _sub] = getattr(_weft, _sub)

# Warp's tests reach some public names through warp._src.types; map that namespace to weft's
# types module (only the namespace: a name weft lacks still fails).
import types as _types_mod  # noqa: E402

_src = _types_mod.ModuleType(__name__ + "._src")
_src.__path__ = []  # a package, so that warp._src.jax.ffi and the like import through _WeftAlias
_src.types = _weft.types
_sys.modules[__name__ + "._src"] = _src
_sys.modules[__name__ + "._src.types"] = _weft.types
# and warp._src.context to a namespace of the one name weft has of it (type_str)
_src.context = _types_mod.ModuleType(__name__ + "._src.context")
_src.context.type_str = _weft.typeinfo.type_str
_sys.modules[__name__ + "._src.context"] = _src.context
# tests ask the native core whether NVIDIA's MathDx is built in (weft has none) and for the CUDA
# toolkit's version (none)
_src.context.runtime = _types_mod.SimpleNamespace(core=_types_mod.SimpleNamespace(
    wp_is_mathdx_enabled=lambda: False, wp_cuda_toolkit_version=lambda: 0))



# ``import warp.optim`` and the other Warp subpackages: answered by weft's module of the same name
# when weft has one (weft.optim, weft.utils; weft.render, weft.fem, ... raise a clear ImportError).
import importlib as _importlib  # noqa: E402
import importlib.abc as _abc  # noqa: E402
import importlib.util as _util  # noqa: E402


# Warp's modules that its interop, sparse and solver tests import by their internal paths
_SRC = {"_src.dlpack": "weft.runtime.dlpack", "_src.jax": "weft.integrations.jax",
        "_src.jax.ffi": "weft.integrations.jax.ffi", "_src.torch": "weft.integrations.torch",
        "_src.sparse": "weft.libs.sparse", "_src.optim": "weft.libs.optim",
        "_src.optim.linear": "weft.libs.optim.linear"}


def _src_getattr(name):  # wp._src.dlpack, ... without an import statement, as in Warp
    if "_src." + name in _SRC:
        return _importlib.import_module(__name__ + "._src." + name)
    raise AttributeError(f"module 'warp._src' has no attribute {name!r}")


_src.__getattr__ = _src_getattr


class _WeftAlias(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        weft_name = _SRC.get(fullname[len(__name__) + 1:])
        if weft_name is None and fullname.startswith((__name__ + ".tests", __name__ + "._src")):
            return None
        weft_name = weft_name or "weft" + fullname[len(__name__):]
        try:
            found = _util.find_spec(weft_name)
        except ImportError:
            found = None
        if found is None:
            return None
        return _util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return _importlib.import_module(_SRC.get(spec.name[len(__name__) + 1:]) or
                                        "weft" + spec.name[len(__name__):])

    def exec_module(self, module):
        pass


if not any(isinstance(f, _WeftAlias) for f in _sys.meta_path):
    _sys.meta_path.insert(0, _WeftAlias())

del _k, _v, _sub


def __getattr__(name):  # weft's lazily imported names (wp.from_jax, wp.jax_kernel, ...)
    return getattr(_weft, name)


class _Forwarding(_types_mod.ModuleType):
    """Warp's tests patch ``warp.X`` (``mock.patch.object(wp, "get_device", ...)``) for Warp's
    own internals to see: setting or deleting a name weft has sets or deletes it on weft too."""

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if not name.startswith("_"):
            setattr(_weft, name, value)

    def __delattr__(self, name):
        super().__delattr__(name)
        if not name.startswith("_") and name in vars(_weft):
            delattr(_weft, name)


_sys.modules[__name__].__class__ = _Forwarding
