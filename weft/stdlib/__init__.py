"""Layer 3, the kernel language and its library: what a kernel can say. The language's own
objects (``funcs``: ``@wp.func`` and its custom rules; ``ir`` and ``exprs``: the typed IR every
declaration lowers into), and everything a kernel can call, each declared once in the module of
its domain with its typing, derivative rules or lowering (see :mod:`.registry` for the
declaration forms): scalars, vectors, quaternions, random numbers, geometry queries, ...

Imports core and native; never the compiler's passes or the runtime.

Importing this package registers the primitive builtins and special forms
(:data:`registry.NAMESPACE`); the builtins written in the kernel language (quaternions,
linear algebra, interpolation, noise, decompositions) are collected by :func:`namespace`, which
``weft/__init__.py`` re-exports as ``wp.<name>``.
"""
from . import registry  # noqa: F401
from . import arith, arrays, effects, geometry, lang, mesh, random, scalar, vector  # noqa: F401
from . import geometry_volume  # noqa: F401,E402 - after geometry (the builtins' order)
from . import tiles, tiles_algebra  # noqa: F401,E402
from . import textures  # noqa: F401,E402


def namespace():
    """``{name: declaration}`` of every public name kernels can call."""
    from . import decomp, interp, linalg, noise, quat, spatial
    out = dict(registry.NAMESPACE)
    for module in (quat, interp, linalg, noise, decomp, spatial):
        out.update(module.FUNCS)
    return out
