"""Host side of ``wp.Volume``: sparse NanoVDB volumes as flat arrays for compiled lookups.

    >>> from weft.native.geometry.volume import Volume
    >>> v = Volume.load_from_nvdb(open("torus.nvdb", "rb"))
    >>> v.get_grid_info().type_str, v.get_voxel_size()
    ('float', (0.10000000149011612, 0.10000000149011612, 0.10000000149011612))
    >>> tree, values = v.arrays()                                  # for volume_query

A :class:`Volume` holds the arrays described in ``weft/geometry/volume_query.py`` (the query
cores read them), plus ``gtype`` (the NanoVDB grid type), ``xform_f``/``xform_d`` (the
index-to-world map, its inverse and the translation, in float32/float64) and metadata. It is
built from a ``.nvdb`` file (``load_from_nvdb``), a dense numpy array (``load_from_numpy``) or a
box or set of 8^3 tiles (``allocate``, ``allocate_by_tiles``), with Warp 1.19's conventions:
leaves in NanoVDB's breadth-first order (upper nodes sorted by origin, then children by table
position), so that ``volume_lookup_index`` and ``get_voxels`` agree with Warp.
"""
from __future__ import annotations

import math
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from . import nanovdb as nv
from .nanovdb import NanoVDBError, NanoVDBGrid

__all__ = ["Volume", "NanoVDBError"]

_TYPE_CODES = {name: code for code, name in nv.GRID_TYPE_NAMES.items()}
_ALLOCATABLE = ("int32", "uint32", "int64", "float", "double", "Vec3f", "Vec3d", "Vec4f", "Vec4d")
_NUMPY_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
                np.dtype(np.int32): "int32", np.dtype(np.int64): "int64",
                np.dtype(np.uint32): "uint32"}


class Volume:
    """A sparse volume (see the module docstring). Construct with the class methods."""

    CLOSEST = 0
    LINEAR = 1

    class GridInfo(NamedTuple):
        """As Warp's ``Volume.GridInfo`` (translation and transform as float32 numpy arrays)."""
        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: np.ndarray
        transform_matrix: np.ndarray

    class ActiveStats(NamedTuple):
        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class FeatureArrayInfo(NamedTuple):
        """As Warp's: ``ptr`` is the address of the (host) bytes."""
        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    def __init__(self, grid: NanoVDBGrid, next_grids=()):
        self.grid = grid
        self._next = list(next_grids)
        self.gtype = int(grid.grid_type)
        self.tree = grid.tree
        self.values = grid.values
        self.channels = grid.channels
        self.xform_f = np.concatenate([grid.mat_f.ravel(), grid.inv_mat_f.ravel(),
                                       grid.vec_f]).astype(np.float32)
        self.xform_d = np.concatenate([grid.mat_d.ravel(), grid.inv_mat_d.ravel(),
                                       grid.vec_d]).astype(np.float64)

    # ------------------------------------------------------------------ construction
    @classmethod
    def load_from_nvdb(cls, file_or_buffer) -> Volume:
        """A volume from a NanoVDB file (path, binary file object, or bytes); the file's first
        grid (``load_next_grid`` gives the others). Raises :class:`NanoVDBError` (a
        ``ValueError``) for malformed, truncated or unsupported files."""
        grids = nv.read_nvdb(file_or_buffer)
        if not grids:
            raise NanoVDBError("NanoVDB file holds no grids")
        return cls(grids[0], next_grids=grids[1:])

    def load_next_grid(self) -> Volume | None:
        """The next grid of the file this volume came from, or ``None``."""
        if not self._next:
            return None
        return type(self)(self._next[0], next_grids=self._next[1:])

    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0):
        """A volume holding a dense array ``ndarray[i, j, k]`` (``[i, j, k, 3]`` for a vec3
        volume, made when ``bg_value`` has a length) at index (i, j, k), world origin
        ``min_world``; an ``int`` ``bg_value`` makes an int32 volume, otherwise float32. The
        array is padded to whole 8^3 tiles with ``bg_value``, as Warp."""
        vs = _normalize_voxel_size(voxel_size)
        a = np.asarray(ndarray)
        vector = hasattr(bg_value, "__len__")
        if vector:
            if a.ndim != 4 or a.shape[3] != 3:
                raise ValueError("a vector bg_value needs an array of shape (nx, ny, nz, 3)")
            dtype = "Vec3f"
        else:
            if a.ndim != 3:
                raise ValueError("load_from_numpy needs a 3-D array (or 4-D with a vector "
                                 "bg_value)")
            dtype = "int32" if isinstance(bg_value, int) and not isinstance(bg_value, bool) \
                else "float"
        shape = tuple(int(math.ceil(n / 8) * 8) for n in a.shape[:3])
        max_world = [min_world[d] + (shape[d] - 1) * vs[d] for d in range(3)]
        vol = cls.allocate(min_world, max_world, vs, bg_value=bg_value,
                           translation=min_world, points_in_world_space=True, dtype=dtype)
        if min(a.shape[:3]) > 0:
            vol._store_dense(a)
        return vol

    @classmethod
    def allocate(cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                 points_in_world_space=False, dtype=None) -> Volume:
        """A volume with every 8^3 tile that meets the box [min, max] (inclusive; index space,
        or world space when ``points_in_world_space``), all voxels active and equal to
        ``bg_value``, whose type also sets the grid type (``None``: an index grid); ``dtype``
        (a NanoVDB type name such as ``"Vec3d"``) overrides it."""
        vs = _normalize_voxel_size(voxel_size)
        if points_in_world_space:
            v = np.asarray(vs, dtype=np.float32)
            min = np.around((np.array(min, dtype=np.float32) - translation) / v)
            max = np.around((np.array(max, dtype=np.float32) - translation) / v)
        tile_min = np.array(min, dtype=np.int32) // 8
        tile_max = np.array(max, dtype=np.int32) // 8
        axes = [np.arange(tile_min[d], tile_max[d] + 1, dtype=np.int64) for d in range(3)]
        tiles = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3) * 8
        return cls.allocate_by_tiles(tiles.astype(np.int32), vs, bg_value, translation,
                                     dtype=dtype)

    @classmethod
    def allocate_by_tiles(cls, tile_points, voxel_size=None, bg_value=0.0,
                          translation=(0.0, 0.0, 0.0), transform=None, dtype=None) -> Volume:
        """A volume with an 8^3 tile (leaf) at each of ``tile_points``: an (N, 3) integer array
        of index-space points, or a float array of world-space points (rounded to the nearest
        voxel through the inverse map). Either ``voxel_size`` or ``transform`` (3x3, index to
        world) gives the map."""
        mat_f = _transform_matrix(voxel_size, transform)
        vec_f = np.asarray(translation, dtype=np.float32).reshape(3)
        type_str = dtype if dtype is not None else _grid_type_of(bg_value)
        if type_str not in _ALLOCATABLE and type_str != "Index":
            raise ValueError(f"unsupported volume type {type_str!r}; supported: "
                             f"{', '.join(_ALLOCATABLE)} and Index (bg_value None)")
        pts = np.asarray(tile_points)
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError("tile_points must be an (N, 3) array")
        mat_d, inv_d = _map_matrices(mat_f)
        if np.issubdtype(pts.dtype, np.floating):
            inv_f = inv_d.astype(np.float32)
            p = pts.astype(np.float32) - vec_f
            idx = p @ inv_f.T
            ijk = np.floor(idx.astype(np.float64) + 0.5)
            if not np.all(np.isfinite(ijk)):
                raise ValueError("tile_points must be finite")
            pts = ijk.astype(np.int64)
        origins = np.unique((np.asarray(pts, dtype=np.int64) >> 3) << 3, axis=0)
        if origins.size and (origins.min() < -(1 << 31) or origins.max() >= (1 << 31)):
            raise ValueError("tile_points lie outside the int32 index range")
        grid = _grid_from_leaves(origins, type_str, bg_value, mat_f, mat_d, inv_d, vec_f)
        return cls(grid)

    def _store_dense(self, a):
        """Write ``a[i, j, k(, c)]`` at voxels (i, j, k) (all inside allocated leaves)."""
        nx, ny, nz = a.shape[:3]
        i, j, k = (g.ravel() for g in np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz),
                                                  indexing="ij"))
        slots = _leaf_slots(self, i, j, k)
        c = self.channels
        vals = a.reshape(-1, c).astype(self.values.dtype)
        v = self.values.reshape(-1, c)
        v[slots] = vals

    # ------------------------------------------------------------------ the query arrays
    def arrays(self):
        """``(tree, values)``, the query cores' arrays."""
        return self.tree, self.values

    @property
    def index_values(self):
        """The int64 voxel-data indices of an index grid (an empty array for other grids)."""
        return self.values if self.is_index else np.zeros(0, np.int64)

    # ------------------------------------------------------------------ metadata (as Warp)
    type_str = property(attrgetter("grid.type_str"))
    is_index = property(attrgetter("grid.is_index"))

    @property
    def value_dtype(self):
        """The numpy scalar type of the values and the channel count, e.g. (float32, 3); for
        index grids ``None``."""
        if self.is_index:
            return None
        return self.values.dtype, self.channels

    def get_voxel_size(self):
        """The voxel size as Warp returns it (float32 values)."""
        return tuple(float(np.float32(v)) for v in self.grid.voxel_size)

    def get_grid_info(self) -> Volume.GridInfo:
        g = self.grid
        return Volume.GridInfo(g.name, int(g.grid_size), int(g.grid_index), int(g.grid_count),
                               g.type_str, g.vec_f.copy(), g.mat_f.copy())

    def get_voxel_count(self):
        """Voxels that can hold data: the active voxels of OnIndex grids, else all leaf
        voxels (512 per leaf), as Warp."""
        if self.gtype in (nv.ON_INDEX, nv.ON_INDEX_MASK):
            return int(self.grid.tree_voxel_count)
        return int(self.grid.leaf_count) * 512

    def get_tile_count(self):
        return int(self.grid.leaf_count)

    def get_tiles(self):
        """(leaves, 3) int32 origins of the leaves, in the grid's leaf order."""
        return self.grid.leaf_origins.copy()

    def get_voxels(self):
        """(voxel_count, 3) int32: the coordinates of each voxel-data index's voxel (zeros for
        an index no voxel has, as in a rebuildable volume below its capacity)."""
        idx, ijk = self.voxel_index_rows()
        out = np.zeros((self.get_voxel_count(), 3), np.int32)
        out[idx] = ijk
        return out

    def voxel_index_rows(self):
        """``(indices, coordinates)`` of the voxels that have a voxel-data index below
        ``get_voxel_count()``."""
        count = self.get_voxel_count()
        origins = self.grid.leaf_origins.astype(np.int64)
        n = np.arange(512)
        local = np.stack([(n >> 6) & 7, (n >> 3) & 7, n & 7], axis=1)
        ijk = (origins[:, None, :] + local[None]).reshape(-1, 3)
        idx = self.values[:len(ijk)] if self.is_index else np.arange(len(ijk))
        ok = (idx >= 0) & (idx < count)
        return idx[ok], ijk[ok]

    def get_active_stats(self) -> Volume.ActiveStats:
        g = self.grid
        return Volume.ActiveStats(self.get_voxel_count(), int(g.leaf_count), int(g.lower_count),
                                  int(g.upper_count))

    def get_active_voxel_count(self):
        """Active voxels in leaves (from the leaves' masks; active tiles not counted)."""
        m = self.grid.leaf_masks
        return int(np.unpackbits(m.view(np.uint8)).sum()) if m.size else 0

    def get_index_bounds(self):
        """((imin, jmin, kmin), (imax, jmax, kmax)), inclusive, of the active values (the
        root's bounding box)."""
        b = self.grid.index_bbox
        return tuple(int(v) for v in b[0]), tuple(int(v) for v in b[1])

    def get_world_bounds(self):
        """The grid's world-space bounding box, ((xmin, ymin, zmin), (xmax, ymax, zmax))."""
        b = self.grid.world_bbox
        return tuple(float(v) for v in b[0]), tuple(float(v) for v in b[1])

    def get_feature_array_count(self):
        return len(self.grid.blind_data)

    def get_feature_array_info(self, index) -> Volume.FeatureArrayInfo:
        b = self.grid.blind_data[index]
        return Volume.FeatureArrayInfo(b.name, int(b.data.ctypes.data), b.value_size,
                                       b.value_count, b.type_str)

    def feature_array(self, index, dtype=None):
        """A copy of blind-data array ``index`` as numpy (raw bytes unless ``dtype`` given)."""
        b = self.grid.blind_data[index]
        return b.data.view(dtype) if dtype is not None else b.data.copy()


# ---------------------------------------------------------------------- helpers
def _normalize_voxel_size(voxel_size):
    if isinstance(voxel_size, (int, float, np.floating, np.integer)) and \
            not isinstance(voxel_size, bool):
        s = float(voxel_size)
        vs = (s, s, s)
    elif isinstance(voxel_size, (list, tuple, np.ndarray)):
        vs = tuple(float(v) for v in np.asarray(voxel_size).ravel())
        if len(vs) != 3:
            raise ValueError(f"voxel_size must be a scalar or a 3-element sequence, got length "
                             f"{len(vs)}")
    else:
        raise TypeError(f"voxel_size must be a numeric scalar or a sequence of 3 floats, got "
                        f"{type(voxel_size).__name__}")
    if not all(math.isfinite(v) and v > 0.0 for v in vs):
        raise ValueError(f"All voxel_size components must be finite and positive, got {vs}")
    return vs


def _transform_matrix(voxel_size, transform):
    if transform is None:
        if voxel_size is None:
            raise ValueError("Either 'voxel_size' or 'transform' must be provided")
        vs = _normalize_voxel_size(voxel_size)
        return np.diag(np.asarray(vs, dtype=np.float32))
    if voxel_size is not None:
        raise ValueError("Only one of 'voxel_size' or 'transform' must be provided")
    return np.asarray(transform, dtype=np.float32).reshape(3, 3)


def _map_matrices(mat_f):
    """(matd, invmatd) as Warp's builder stores them: the float32 matrix in double, and the
    inverse of its transpose by cofactors, transposed back."""
    m = mat_f.astype(np.float64).T      # Warp inverts the transposed matrix
    r0, r1, r2 = m
    cross = (r1[1] * r2[2] - r1[2] * r2[1], r1[2] * r2[0] - r1[0] * r2[2],
             r1[0] * r2[1] - r1[1] * r2[0])
    det = r0[0] * cross[0] + r0[1] * cross[1] + r0[2] * cross[2]
    if det == 0.0:
        raise ValueError("the volume transform is singular")
    b = np.empty((3, 3))
    b[0, 0] = m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]
    b[1, 0] = m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2]
    b[2, 0] = m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]
    b[0, 1] = m[0, 2] * m[2, 1] - m[0, 1] * m[2, 2]
    b[1, 1] = m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0]
    b[2, 1] = m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1]
    b[0, 2] = m[0, 1] * m[1, 2] - m[0, 2] * m[1, 1]
    b[1, 2] = m[0, 2] * m[1, 0] - m[0, 0] * m[1, 2]
    b[2, 2] = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
    inv_t = b * (1.0 / det)
    return mat_f.astype(np.float64), inv_t.T.copy()


def _grid_type_of(bg_value):
    """The NanoVDB type name a ``bg_value`` makes, as Warp's ``allocate_by_tiles`` (Python
    int: int32, float: float, sequences of 3 or 4: Vec3f/Vec4f, weft vectors keep their
    precision); numpy scalars, which Warp refuses, keep their type."""
    if bg_value is None:
        return "Index"
    if isinstance(bg_value, bool):
        raise ValueError("bool volumes are not supported")
    if hasattr(type(bg_value), "_wp_scalar_type_") or isinstance(bg_value, np.generic):
        a = np.asarray(bg_value)        # weft vectors and numpy scalars keep their precision
        if a.ndim == 0:
            if a.dtype in _NUMPY_TYPES:
                return _NUMPY_TYPES[a.dtype]
        elif a.size in (3, 4) and a.dtype in (np.float32, np.float64):
            return f"Vec{a.size}{'f' if a.dtype == np.float32 else 'd'}"
        raise ValueError(f"unsupported bg_value {bg_value!r} for a volume")
    if isinstance(bg_value, int):
        return "int32"
    if isinstance(bg_value, float):
        return "float"
    if hasattr(bg_value, "__len__"):
        n = len(bg_value)
        if n in (3, 4):
            return f"Vec{n}f"           # plain sequences make single-precision grids
    raise ValueError(f"unsupported bg_value {bg_value!r} for a volume")


def _grid_from_leaves(origins, type_str, bg_value, mat_f, mat_d, inv_d, vec_f):
    """A NanoVDBGrid holding leaves at ``origins`` (unique multiples of 8, int64 (N, 3)), in
    Warp's order, every voxel active and equal to the background."""
    gtype = _TYPE_CODES[type_str]
    index = gtype == nv.INDEX
    if index:
        scalar, channels = np.int64, 1
        bg = np.full(1, -1, np.int64)
    else:
        scalar, channels = nv.VALUE_TYPES[gtype]
        bg = np.asarray(bg_value if bg_value is not None else 0, dtype=scalar).reshape(-1)
        if bg.size == 1 and channels > 1:
            bg = np.repeat(bg, channels)
        if bg.size != channels:
            raise ValueError(f"bg_value {bg_value!r} does not fit a {type_str} volume")
    x, y, z = origins[:, 0], origins[:, 1], origins[:, 2]
    keys = nv.root_key(x, y, z)
    ukeys, uid = np.unique(keys, return_inverse=True)
    uid = uid.ravel()
    ubit = (((x & 4095) >> 7) << 10) | (((y & 4095) >> 7) << 5) | ((z & 4095) >> 7)
    lbit = (((x & 127) >> 3) << 8) | (((y & 127) >> 3) << 4) | ((z & 127) >> 3)
    lkey = uid * 32768 + ubit
    lkeys, lid = np.unique(lkey, return_inverse=True)
    lid = lid.ravel()
    order = np.lexsort((lbit, lid))                 # Warp's leaf order
    origins, lid, lbit = origins[order], lid[order], lbit[order]
    n_leaf, n_lower, n_upper = len(origins), len(lkeys), len(ukeys)
    bg_slot = n_leaf * 512
    bg_code = -(bg_slot + 1)
    if bg_slot > nv.MAX_SLOTS:
        raise ValueError(f"{n_leaf} tiles are more than weft's volumes hold")
    upper = np.full(n_upper * 32768, bg_code, np.int64)
    upper[lkeys] = np.arange(n_lower)               # lkeys = upper index * 32768 + bit
    lower = np.full(n_lower * 4096, bg_code, np.int64)
    lower[lid * 4096 + lbit] = np.arange(n_leaf)
    if index:
        values = np.append(np.arange(bg_slot, dtype=np.int64), -1)
    else:
        values = np.tile(bg, bg_slot + 1).astype(scalar)
    uo = origins[np.searchsorted(keys[order], ukeys)] if n_leaf else np.zeros((0, 3), np.int64)
    tree = nv.pack_tree((uo >> 12) << 12, np.arange(n_upper), upper, lower, n_upper, n_lower,
                        bg_code)
    if n_leaf:
        lo, hi = origins.min(axis=0), origins.max(axis=0) + 7
    else:
        lo, hi = np.zeros(3, np.int64), np.full(3, -1, np.int64)
    vec_d = vec_f.astype(np.float64)
    corners = np.array([[a, b, c] for a in (lo[0], hi[0] + 1) for b in (lo[1], hi[1] + 1)
                        for c in (lo[2], hi[2] + 1)], np.float64)
    world = corners @ mat_d.T + vec_d
    voxel_size = (mat_d.sum(axis=1) + vec_d) - vec_d
    layout = nv.node_layout(gtype)
    size = (nv.GRID_SIZE + nv.TREE_SIZE + layout.root_size + n_upper * layout.tile_size
            + n_upper * layout.upper_size + n_lower * layout.lower_size
            + n_leaf * layout.leaf_size)
    return NanoVDBGrid(
        name="", grid_type=gtype, grid_class=8 if index else 0,
        version=(nv.MAJOR_VERSION, 8, 0), flags=nv.FLAG_BREADTH_FIRST, grid_index=0,
        grid_count=1, grid_size=size, checksum=0, mat_f=mat_f.copy(),
        inv_mat_f=inv_d.astype(np.float32), vec_f=vec_f.copy(), mat_d=mat_d, inv_mat_d=inv_d,
        vec_d=vec_d, world_bbox=np.stack([world.min(axis=0), world.max(axis=0)]),
        voxel_size=voxel_size, index_bbox=np.stack([lo, hi]).astype(np.int32),
        upper_count=n_upper, lower_count=n_lower, leaf_count=n_leaf, tile_counts=(0, 0, 0),
        tree_voxel_count=n_leaf * 512, background=bg, tree=tree, values=values,
        channels=channels,
        leaf_origins=origins.astype(np.int32),
        leaf_masks=np.full((n_leaf, 8), np.iinfo(np.uint64).max, np.uint64))


def _leaf_slots(vol, i, j, k):
    """Leaf slots of voxels (i, j, k) (int arrays), -1 outside leaves (host-side, numpy)."""
    i, j, k = (np.asarray(a, np.int64) for a in (i, j, k))
    rk, rcodes, upper, lower, _ = nv.tree_parts(vol.tree)
    keys = nv.root_key(i, j, k)
    n = len(rk)
    pos = np.minimum(np.searchsorted(rk, keys), max(n - 1, 0))
    found = (rk[pos] == keys) if n else np.zeros(len(keys), bool)
    code = np.where(found, rcodes[pos] if n else -1, -1).astype(np.int64)
    ub = (((i & 4095) >> 7) << 10) | (((j & 4095) >> 7) << 5) | ((k & 4095) >> 7)
    ok = code >= 0
    code[ok] = upper[code[ok], ub[ok]]
    lb = (((i & 127) >> 3) << 8) | (((j & 127) >> 3) << 4) | ((k & 127) >> 3)
    ok = code >= 0
    code[ok] = lower[code[ok], lb[ok]]
    n_local = ((i & 7) << 6) | ((j & 7) << 3) | (k & 7)
    return np.where(code >= 0, code * 512 + n_local, -1)
