"""What the kernel builtins of geometry objects (volumes, hash grids, meshes: :mod:`.geometry`,
:mod:`.geometry_volume`, :mod:`.mesh`) share: the id type, vec3 arguments split into
components, signatures by argument kinds, and the tag telling the launch which kind of object
a builtin's first argument is the id of.
"""
from __future__ import annotations

from ..core import types as T
from . import registry


def _is_id(t):
    return t is T.uint64 or t is T.int64


def _xyz(v):
    v = v.atom()
    return [v.comp(0), v.comp(1), v.comp(2)]


def _sig(*kinds):
    """A resolve rule: argument kinds in order ('id', 'vec3', 'int', 'float32', ..., or a value
    type, which the argument must have)."""
    def check(t, kind):
        if not isinstance(kind, str):
            return t == kind
        if kind == "id":
            return _is_id(t)
        if kind == "int":
            return T.is_int(t)
        if kind == "vec3":
            return T.is_vector(t) and t._length_ == 3 and T.scalar_of(t) is T.float32
        if kind in ("float32", "float64", "int32"):
            return t is getattr(T, kind)
        return False

    def resolve(ret):
        return lambda ts, attrs=None: ret if len(ts) == len(kinds) and all(
            check(t, k) for t, k in zip(ts, kinds)) else None
    return resolve


def mark_kinds(prefixes):
    """Tag the builtins whose names start with a key of ``prefixes`` with the kind of object
    (the value) their first argument is the id of (the launch checks those ids, see
    ``weft.transpiler.analyze.geometry_ids``)."""
    for name, b in registry.REGISTRY.items():
        for prefix, kind in prefixes.items():
            if name.startswith(prefix):
                b.geometry_kind = kind


def _kinds():
    """The kinds of the volume and hash-grid builtins, by name prefix (for :func:`mark_kinds`)."""
    from ..native.geometry.descriptors import KIND_HASH_GRID, KIND_VOLUME
    return {"volume_": KIND_VOLUME, "_volume_": KIND_VOLUME, "hash_grid_": KIND_HASH_GRID}
