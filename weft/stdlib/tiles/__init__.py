"""Tiles: Warp's block-level values (``wp.tile_load``, ``wp.tile_matmul``, ``wp.tile_map``, ...).

A tile is a value of :class:`weft.core.typecore.TileType` (a dtype and a static shape). On the
CPU a tile block is one thread, as in Warp (``block_dim`` resolves to 1 there), and a tile is a
numpy array in generated code (:mod:`weft.native.tiles`): operators on tiles are numpy's
elementwise arithmetic, so the derivative rules of the scalar builtins apply to whole tiles,
and ``tile_map`` runs a func or builtin per element in a loop the generated code spells out.

Tile operations that read or write arrays (``tile_load``, ``tile_store``) are builtins with
``array_args``: the adjoint and tangent generators hand their rules the adjoint (tangent)
arrays of their array arguments (``adj_arrays`` / ``tan_arrays``, None where an array has
none), and the analysis records their accesses (a load may read another block's elements, so
its adjoint adds atomically).

The package's modules (each registers its builtins and special forms when imported; this
module imports them all, in the order their code first appeared in the former single module
``stdlib/tiles.py``):

- :mod:`.common`: the generated-code and lowering helpers the others share;
- :mod:`.construction`: ``tile_zeros``/``ones``/``full``/``empty``, ``tile_arange``, random tiles;
- :mod:`.memory`: ``tile_load``/``store``, ``tile_atomic_add`` and their indexed forms;
- :mod:`.elements`: elements (``t[i, j]``), operators on tiles, ``tile_map``;
- :mod:`.reductions`: ``tile_sum``/``max``/``min``/``argmax``/``argmin``, ``tile_reduce``;
- :mod:`.shape`: ``tile_transpose``, ``tile_astype``, ``tile_reshape``/``squeeze``/``broadcast``;
- :mod:`.threads`: ``wp.tile``, ``untile``, ``tile_from_thread``, ``block_dim``, per-lane scatters;
- :mod:`.views`: ``tile_view``, ``tile_assign`` and subscripts of tiles;
- :mod:`.stacks`: tile stacks;
- :mod:`.queries`: a block's BVH and mesh queries (``tile_bvh_query_aabb``, ...).

The dense linear algebra and the transforms are :mod:`weft.stdlib.tiles_algebra`.
"""
from __future__ import annotations

# each registers its builtins and special forms when imported (this order)
from . import common  # noqa: F401
from . import construction  # noqa: F401
from . import memory  # noqa: F401
from . import elements  # noqa: F401
from . import reductions  # noqa: F401
from . import shape  # noqa: F401
from . import threads  # noqa: F401
from . import views  # noqa: F401
from . import stacks  # noqa: F401
from . import queries  # noqa: F401
from .common import store_back
from .elements import tile_operator
from .views import assign_subscript, atomic_subscript, check_augmented, subscript

__all__ = ["assign_subscript", "atomic_subscript", "check_augmented", "store_back", "subscript",
           "tile_operator"]
