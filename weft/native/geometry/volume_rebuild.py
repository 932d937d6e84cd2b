"""Warp 1.19's volume API that writes NanoVDB or rebuilds topology, as a mixin of ``wp.Volume``:
``array()``, ``save_to_nvdb``, ``allocate_by_voxels``, the ``rebuildable``/capacity/``status``/
``point_mask`` arguments of ``allocate_by_tiles``, ``rebuild``, ``is_rebuildable``,
``get_rebuild_info`` and the ``REBUILD_*`` flags.

Semantics (checked against Warp 1.19 on the CPU):

- ``allocate_by_voxels`` makes an OnIndex grid whose active voxels are the given points
  (deduplicated), indices ranked in leaf order (leaves as ``allocate_by_tiles`` orders them,
  voxels by ``i << 6 | j << 3 | k`` in a leaf).
- ``point_mask`` (int32, one per point): points with 0 are ignored.
- A rebuildable volume reserves capacities (``RebuildInfo``): tiles: ``max_tiles`` (default: the
  point count), lower and upper nodes (default: the previous capacity), voxels = 512 per tile;
  voxels: ``max_active_voxels`` (default: the point count), then leaves, lower, upper nodes
  each defaulting to the previous. ``get_voxel_count``/``get_tile_count`` report the capacity
  (Warp's buffer), ``get_active_stats`` the current topology.
- ``rebuild(points)`` replaces the topology: every voxel holds the background again (values are
  not carried over) and OnIndex indices are ranked anew. A topology over any capacity sets
  the ``REBUILD_*_CAPACITY_EXCEEDED`` flags in ``status`` (all that apply) and keeps the previous
  topology (an initial allocation over capacity is left empty); non-finite or out-of-range
  points set ``REBUILD_INVALID_INPUT``. The transform, grid type and background stay those of
  the allocation (a later change to the ``bg_value`` object does not matter).
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from . import nanovdb_format as F
from .nanovdb_write import grid_buffer, world_bbox, write_nvdb

__all__ = ["VolumeRebuildMixin"]

_INT32 = (-(1 << 31), (1 << 31) - 1)


class RebuildInfo(NamedTuple):
    """Capacities reserved for :meth:`rebuild` (``kind`` ``None``: not rebuildable)."""
    kind: str | None
    max_voxel_count: int
    max_leaf_node_count: int
    max_lower_node_count: int
    max_upper_node_count: int


def _numpy(a):
    """Host numpy data of a ``wp.array`` or array-like."""
    if a is None:
        return None
    return a.numpy() if hasattr(a, "numpy") and not isinstance(a, np.ndarray) else np.asarray(a)


def _points(points, what):
    p = _numpy(points)
    if p.ndim == 1 and p.dtype.fields is None and p.size == 0:
        p = p.reshape(0, 3)
    if p.ndim != 2 or p.shape[1] != 3 or not (np.issubdtype(p.dtype, np.integer)
                                             or np.issubdtype(p.dtype, np.floating)):
        raise RuntimeError(f"{what} must be contiguous and either a 1D array of vec3f or vec3i or "
                           "a 2D n-by-3 array of int32 or float32")
    return p


def _masked(points, point_mask):
    if point_mask is None:
        return points
    m = _numpy(point_mask)
    if m.ndim != 1 or m.dtype != np.int32:
        raise RuntimeError("point_mask must be a contiguous 1D array with dtype int32")
    if m.shape[0] < points.shape[0]:
        raise RuntimeError(f"point_mask must have at least {points.shape[0]} entries")
    return points[m[:points.shape[0]] != 0]


def _capacity(value, default, name):
    c = default if value is None else value
    try:
        c = int(c)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an integer") from err
    if c <= 0:
        raise ValueError(f"{name} must be positive, got {c}")
    if c >= 2**32:
        raise ValueError(f"{name} must fit in uint32, got {c}")
    return c


def _status_array(status):
    if status is None:
        return None
    data = status._data if hasattr(status, "_data") else status
    if not isinstance(data, np.ndarray) or data.dtype != np.uint32 or data.size < 1:
        raise RuntimeError("status must be an array with dtype uint32 and at least one element")
    return data


def _index_coords(points, grid):
    """(N, 3) int64 index coordinates of integer (index-space) or float (world-space, rounded
    to the nearest voxel through the grid's float32 inverse map) points; None if any is
    non-finite or outside int32."""
    if np.issubdtype(points.dtype, np.integer):
        ijk = points.astype(np.int64)
    else:
        rel = points.astype(np.float32) - grid.vec_f
        with np.errstate(invalid="ignore", over="ignore"):
            ijk = np.floor(np.matmul(rel, grid.inv_mat_f.T).astype(np.float64) + 0.5)
        if not np.isfinite(ijk).all():
            return None
    if ijk.size and (ijk.min() < _INT32[0] or ijk.max() > _INT32[1]):
        return None
    return ijk.astype(np.int64)


def _node_counts(ijk):
    """(voxels, leaves, lower, upper) of the distinct points ``ijk``."""
    if not len(ijk):
        return 0, 0, 0, 0
    return tuple(len(np.unique(ijk >> s, axis=0)) for s in (0, 3, 7, 12))


def _exceeded(counts, caps):
    flags = 0
    for have, cap, flag in zip(counts, caps, (8, 1, 2, 4)):
        if have > cap:
            flags |= flag
    return flags


class VolumeRebuildMixin:
    """Methods of ``wp.Volume`` (see the module docstring); mixed in before the host Volume,
    whose ``allocate_by_tiles`` builds the grids. Subclasses may override ``_set_device`` and
    ``_grid_changed`` (refresh what kernels read)."""

    RebuildInfo = RebuildInfo
    REBUILD_SUCCESS = 0
    REBUILD_LEAF_CAPACITY_EXCEEDED = 1 << 0
    REBUILD_LOWER_CAPACITY_EXCEEDED = 1 << 1
    REBUILD_UPPER_CAPACITY_EXCEEDED = 1 << 2
    REBUILD_VOXEL_CAPACITY_EXCEEDED = 1 << 3
    REBUILD_INVALID_INPUT = 1 << 4

    _rebuild_info = RebuildInfo(None, 0, 0, 0, 0)
    _rebuild_type = None        # (type string, background) for tile rebuilds

    # ------------------------------------------------------------------ writing NanoVDB
    def array_bytes(self) -> bytes:
        """This grid's NanoVDB buffer with the current values, followed by the file's next
        grids (as Warp's ``Volume.array()`` of a file's first grid)."""
        bufs = [grid_buffer(self.grid, self.tree, self.values)]
        bufs += [grid_buffer(g, g.tree, g.values) for g in getattr(self, "_next", ())]
        return b"".join(bufs)

    def array(self):
        """The NanoVDB buffer as a ``uint8`` array (built on demand: a copy, so writing it does
        not change the volume)."""
        return np.frombuffer(self.array_bytes(), np.uint8).copy()

    def save_to_nvdb(self, path, codec="none"):
        """Write this volume (and the next grids of the file it came from) to a ``.nvdb`` file;
        ``codec``: ``"none"``, ``"zip"`` or ``"blosc"`` (needs the ``blosc`` module)."""
        if self.grid.grid_index > 0:
            raise RuntimeError("Saving of aliased Volumes is not supported. Use `save_to_nvdb` on "
                               "the original volume, before any `load_next_grid` calls.")
        grids = [(self.grid, self.tree, self.values)]
        grids += [(g, g.tree, g.values) for g in getattr(self, "_next", ())]
        if codec not in ("none", "zip", "blosc"):
            raise RuntimeError(f"Unsupported codec requested: {codec}")
        return write_nvdb(path, [grid_buffer(*g) for g in grids], codec)

    # ------------------------------------------------------------------ rebuild metadata
    @property
    def is_rebuildable(self) -> bool:
        return self._rebuild_info.kind is not None

    def get_rebuild_info(self) -> RebuildInfo:
        return self._rebuild_info

    def get_voxel_count(self):
        if self.is_rebuildable:
            return self._rebuild_info.max_voxel_count
        return super().get_voxel_count()

    def get_tile_count(self):
        if self.is_rebuildable:
            return self._rebuild_info.max_leaf_node_count
        return super().get_tile_count()

    def get_active_stats(self):
        g = self.grid
        voxels = int(g.tree_voxel_count) if g.grid_type in (F.ON_INDEX, F.ON_INDEX_MASK) \
            else int(g.leaf_count) * 512
        return type(self).ActiveStats(voxels, int(g.leaf_count), int(g.lower_count),
                                      int(g.upper_count))

    # ------------------------------------------------------------------ construction
    def _set_device(self, device):
        """Hook: place a new volume on ``device`` (the runtime checks it is the CPU)."""

    def _grid_changed(self):
        """Hook: the grid's arrays were replaced (the runtime refreshes the kernels' id)."""

    def _set_grid(self, grid):
        self.grid = grid
        self.gtype = int(grid.grid_type)
        self.tree, self.values, self.channels = grid.tree, grid.values, grid.channels
        self._grid_changed()

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size=None, bg_value=0.0,
                          translation=(0.0, 0.0, 0.0), device=None, transform=None,
                          rebuildable=False, max_tiles=None, max_lower_nodes=None,
                          max_upper_nodes=None, status=None, point_mask=None, dtype=None):
        """Warp's ``allocate_by_tiles`` (see the module docstring for the rebuild arguments)."""
        pts = _points(tile_points, "tile_points")
        rebuildable = rebuildable or any(c is not None for c in
                                         (max_tiles, max_lower_nodes, max_upper_nodes))
        status = _status_array(status) if rebuildable else None
        mask = _masked(pts, point_mask)
        if rebuildable:
            tiles = _capacity(max_tiles, pts.shape[0], "max_tiles")
            lower = _capacity(max_lower_nodes, tiles, "max_lower_nodes")
            upper = _capacity(max_upper_nodes, lower, "max_upper_nodes")
            mask = mask[:0]     # built empty, then rebuilt from the points
        vol = super().allocate_by_tiles(mask, voxel_size, bg_value, translation,
                                        transform=transform, dtype=dtype)
        vol._set_device(device)
        if rebuildable:
            vol._rebuild_info = RebuildInfo("tiles", tiles * 512, tiles, lower, upper)
            vol._rebuild_type = (vol.type_str, None if vol.is_index else
                                 np.array(vol.values[-vol.channels:]))
            vol._rebuild_from(pts, status, point_mask, initial=True)
        return vol

    @classmethod
    def allocate_by_voxels(cls, voxel_points, voxel_size=None, translation=(0.0, 0.0, 0.0),
                           device=None, transform=None, rebuildable=False, max_active_voxels=None,
                           max_leaf_nodes=None, max_lower_nodes=None, max_upper_nodes=None,
                           status=None, point_mask=None):
        """An OnIndex volume whose active voxels are ``voxel_points`` (integer: index space;
        float: world space), see the module docstring."""
        pts = _points(voxel_points, "voxel_points")
        caps = (max_active_voxels, max_leaf_nodes, max_lower_nodes, max_upper_nodes)
        rebuildable = rebuildable or any(c is not None for c in caps)
        status = _status_array(status) if rebuildable else None
        vol = super().allocate_by_tiles(np.zeros((0, 3), np.int32), voxel_size, None,
                                        translation, transform=transform, dtype="Index")
        vol._set_device(device)
        if rebuildable:
            names = ("max_active_voxels", "max_leaf_nodes", "max_lower_nodes", "max_upper_nodes")
            c = pts.shape[0]
            out = []
            for value, name in zip(caps, names):
                c = _capacity(value, c, name)
                out.append(c)
            vol._rebuild_info = RebuildInfo("voxels", *out)
            vol._rebuild_from(pts, status, point_mask, initial=True)
            return vol
        ijk = _index_coords(_masked(pts, point_mask), vol.grid)
        if ijk is None:
            raise ValueError("voxel_points must be finite and inside the int32 index range")
        vol._set_grid(_voxel_grid(type(vol), vol.grid, ijk))
        return vol

    def rebuild(self, points, status=None, point_mask=None):
        """Rebuild the topology in place from tile or voxel points (as allocated); returns
        ``status``. Raises ``RuntimeError`` if the volume is not rebuildable."""
        if not self.is_rebuildable:
            raise RuntimeError("Volume is not rebuildable")
        what = "tile_points" if self._rebuild_info.kind == "tiles" else "voxel_points"
        self._rebuild_from(_points(points, what), _status_array(status), point_mask)
        return status

    def _rebuild_from(self, pts, status, point_mask, initial=False):
        info = self._rebuild_info
        ijk = _index_coords(_masked(pts, point_mask), self.grid)
        flags = 0
        if ijk is None:
            flags = self.REBUILD_INVALID_INPUT
        else:
            if info.kind == "tiles":
                ijk = (ijk >> 3) << 3
            counts = list(_node_counts(ijk))
            if info.kind == "tiles":
                counts[0] = counts[1] * 512
            flags = _exceeded(counts, info[1:])
        if status is not None:
            status[0] = flags
        if flags and not initial:
            return
        if flags:
            ijk = ijk[:0] if ijk is not None else np.zeros((0, 3), np.int64)
        if info.kind == "voxels":
            grid = _voxel_grid(type(self), self.grid, ijk)
        else:
            from .volume import Volume as HostVolume
            type_str, bg = self._rebuild_type
            g = self.grid
            grid = HostVolume.allocate_by_tiles(ijk, None, bg, g.vec_f, transform=g.mat_f,
                                                dtype=type_str).grid
        self._set_grid(grid)


def _voxel_grid(cls, template, ijk):
    """An OnIndex NanoVDBGrid with the distinct voxels ``ijk`` active, map of ``template``."""
    from .volume import Volume as HostVolume, _leaf_slots
    g = template
    vox = np.unique(np.asarray(ijk, np.int64).reshape(-1, 3), axis=0)
    base = HostVolume.allocate_by_tiles((vox >> 3) << 3, None, None, g.vec_f,
                                        transform=g.mat_f, dtype="Index").grid
    n_leaf = base.leaf_count
    slots = np.zeros(0, np.int64)
    if n_leaf:
        probe = HostVolume(base)
        slots = _leaf_slots(probe, vox[:, 0], vox[:, 1], vox[:, 2])
    active = np.zeros(n_leaf * 512, bool)
    active[slots] = True
    values = np.full(n_leaf * 512 + 1, -1, np.int64)
    values[:-1][active] = np.arange(int(active.sum()))
    masks = np.packbits(active.reshape(n_leaf, 512), axis=1, bitorder="little").view(
        np.uint64).reshape(n_leaf, 8) if n_leaf else np.zeros((0, 8), np.uint64)
    if len(vox):
        lo, hi = vox.min(axis=0), vox.max(axis=0)
    else:
        lo, hi = np.zeros(3, np.int64), np.full(3, -1, np.int64)
    return dataclasses.replace(
        base, grid_type=F.ON_INDEX, values=values, leaf_masks=np.ascontiguousarray(masks),
        tree_voxel_count=len(vox), index_bbox=np.stack([lo, hi]).astype(np.int32),
        world_bbox=world_bbox(lo, hi, base.mat_d, base.vec_d), mat_d=g.mat_d,
        inv_mat_d=g.inv_mat_d, inv_mat_f=g.inv_mat_f, vec_d=g.vec_d)
