"""The host side of ``wp.Bvh`` and ``wp.Mesh``: validation, build, refit, and the flat arrays
the query cores read.

    >>> bvh = Bvh(lowers, uppers)              # (n, 3) float32 boxes; leaf_size=1 (Warp's)
    >>> bvh.arrays()                           # (bounds, links, prims, lowers, uppers)
    >>> mesh = Mesh(points, indices)           # (p, 3) float32, (3m,) int32; leaf_size=4
    >>> mesh.arrays()                          # (bounds, links, prims, tris, props)

A mesh keeps, besides its BVH over the triangles' boxes, ``tris`` (float32 (m, TRI_COLS),
10 columns): row k holds the vertices of triangle ``prims[k]`` (leaf order, so the triangles
a leaf holds are contiguous and a query reads them without indirection) and, in column 9,
Warp's sliver flag (1 when ``|n| / (|e0|^2 + |e1|^2 + |e2|^2) < 1e-6``: the closest-point
queries skip such a face); with ``support_winding_number=True``, ``props``, the
winding-number expansions of every node (``mesh_winding``); and ``average_edge_length``
(float32, summed in triangle order exactly as Warp's refit sums it; the scale of
``mesh_query_point_sign_normal``'s epsilon), computed when first read after a build or refit:
only that query reads it, and a serial float32 sum cannot be split across threads without
changing its value.

Bad input is a ``ValueError`` (``TypeError`` for a wrong dtype or shape) naming the argument:
non-finite coordinates, indices out of range or not a multiple of 3, ``leaf_size`` < 1, an
unknown constructor. Empty meshes and BVHs are valid: every query on them finds nothing.
Degenerate triangles are valid: rays miss them (zero determinant), closest-point queries skip
them (slivers), AABB queries return them.
"""
import numba
import numpy as np
from numba import prange

from ...core.diskcache import njit

from . import bvh_build, bvh_groups, bvh_refit, mesh_geom, mesh_winding
from ..vectorise import assume_shape, nonneg
from .bvh_refit import _union_children
from .mesh_query import TRI_COLS  # 40-byte rows: writing them is most of a refit's time

CONSTRUCTORS = {"sah": bvh_build.SAH, "median": bvh_build.MEDIAN, "lbvh": bvh_build.SAH}
_JIT = dict(cache=True, nogil=True, error_model="numpy")


def _constructor(value):
    if value is None:
        return bvh_build.SAH
    key = getattr(value, "name", value)
    if isinstance(key, str) and key.lower() in CONSTRUCTORS:
        return CONSTRUCTORS[key.lower()]
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1, 2):
        return bvh_build.MEDIAN if int(value) == 1 else bvh_build.SAH
    raise ValueError(f"Unknown BVH constructor {value!r}, expected one of 'sah', 'median', "
                     f"'lbvh'")


def _leaf_size(value, default):
    if value is None:
        return default
    try:
        n = int(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"leaf_size must be an integer, got {value!r}") from e
    if n < 1:
        raise ValueError(f"leaf_size must be greater than or equal to 1, current value: {n}")
    return n


def _vec3_array(a, what, allow_none=False):
    """``a`` as a C-contiguous (n, 3) float32 array (no copy when it already is one)."""
    if a is None and allow_none:
        return None
    arr = np.asarray(a)
    if arr.dtype != np.float32:
        raise TypeError(f"{what} should be an array of float32 vec3 (got dtype {arr.dtype})")
    if arr.ndim == 1 and arr.shape[0] == 0:
        arr = arr.reshape(0, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise TypeError(f"{what} should have shape (n, 3), got {arr.shape}")
    return np.ascontiguousarray(arr)


def _groups(groups, n, what):
    """Warp's per-item group ids as a contiguous int32 (n,) array (None: ungrouped)."""
    if groups is None:
        return None
    g = np.asarray(groups)
    if g.dtype != np.int32 or g.ndim != 1:
        raise TypeError(f"groups should be a 1d array of int32 (got dtype {g.dtype}, "
                        f"shape {g.shape})")
    if g.shape[0] != n:
        raise ValueError(f"groups must have the same length as {what} ({g.shape[0]} != {n})")
    return np.ascontiguousarray(g)


def _check_finite(a, what):
    """A ValueError naming ``what`` when ``a`` holds NaN or infinities (NumPy's vectorised
    test: about 0.1 ms per million floats, and no parallel region)."""
    if a.size and not np.isfinite(a).all():
        raise ValueError(f"{what} contains NaN or infinite coordinates")


class Bvh:
    """A BVH over boxes (``wp.Bvh`` on the CPU): Warp's SAH (or median) tree, refittable."""

    def __init__(self, lowers, uppers, constructor=None, groups=None, leaf_size=1):
        self.lowers = _vec3_array(lowers, "lowers")
        self.uppers = _vec3_array(uppers, "uppers")
        if self.lowers.shape[0] != self.uppers.shape[0]:
            raise ValueError("The same number of lower and upper bounds must be provided")
        self.groups = _groups(groups, self.lowers.shape[0], "lowers/uppers")
        self.constructor = _constructor(constructor)
        self.leaf_size = _leaf_size(leaf_size, 1)
        self.rebuild()

    @property
    def num_items(self):
        return self.lowers.shape[0]

    def rebuild(self, constructor=None):
        """Build the tree anew from the current boxes."""
        if constructor is not None:
            self.constructor = _constructor(constructor)
        self._build(check=True)

    def _build(self, check):
        if check:
            _check_finite(self.lowers, "lowers")
            _check_finite(self.uppers, "uppers")
        self._split = None
        if self.num_items == 0:
            self.bounds = np.zeros((0, 6), np.float32)
            self.links = np.zeros((0, 4), np.int32)
            self.prims = np.zeros(0, np.int32)
        elif self.groups is not None:
            self.bounds, self.links, self.prims, self.group_table = bvh_groups.build_grouped(
                self.lowers, self.uppers, self.groups, self.leaf_size, self.constructor)
            return
        else:
            self.bounds, self.links, self.prims = bvh_build.build(
                self.lowers, self.uppers, self.leaf_size, self.constructor)
        self.group_table = bvh_groups.ungrouped_table(self.links.shape[0])

    def refit(self):
        """Recompute the node boxes from the current ``lowers``/``uppers`` (same topology)."""
        _check_finite(self.lowers, "lowers")
        _check_finite(self.uppers, "uppers")
        if self.num_items:
            if self._split is None:
                self._split = bvh_build.split_top(self.links)
            bvh_build.refit(self.bounds, self.links, self.prims, self.lowers, self.uppers,
                            self._split)

    def arrays(self):
        """``(bounds, links, prims, lowers, uppers)`` for ``bvh_query``."""
        return self.bounds, self.links, self.prims, self.lowers, self.uppers


# ------------------------------------------------------------------------------ mesh
@njit(inline="always", **_JIT)
def mesh_geom_length(x, y, z):
    return np.float32(np.sqrt(x * x + y * y + z * z))


_tri_edges = njit(inline="always", **_JIT)(mesh_geom.tri_edges)
_cross3 = njit(inline="always", **_JIT)(mesh_geom.cross3)


@njit(inline="always", **_JIT)
def _sliver(ax, ay, az, bx, by, bz, cx, cy, cz):
    """``(is_sliver, s)``: ``mesh_geom.is_sliver`` (Warp's float32 ``|n| / s < 1e-6``, ``s``
    the sum of the squared edge lengths), decided first on squares (no square root or
    division), which is enough unless the ratio is within 0.1% of the threshold or the squares
    leave float32's normal range: then the float32 square root and division decide, exactly as
    Warp computes them. ``s`` is infinite or NaN when a vertex is (or the edges overflow)."""
    e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = _tri_edges(ax, ay, az, bx, by, bz, cx, cy, cz)
    nx, ny, nz = _cross3(e0x, e0y, e0z, e1x, e1y, e1z)
    s = (e0x * e0x + e0y * e0y + e0z * e0z) + (e1x * e1x + e1y * e1y + e1z * e1z) + \
        (e2x * e2x + e2y * e2y + e2z * e2z)
    n2 = nx * nx + ny * ny + nz * nz
    t2 = np.float32(1e-12) * (s * s)
    if n2 > np.float32(1.001) * t2 and t2 > np.float32(1e-30) and n2 < np.float32(1e30):
        return False, s
    if n2 < np.float32(0.999) * t2 and n2 > np.float32(1e-30) and t2 < np.float32(1e30):
        return True, s
    return mesh_geom_length(nx, ny, nz) / s < np.float32(1e-6), s


@njit(inline="always", **_JIT)
def _store_vertices(ax, ay, az, bx, by, bz, cx, cy, cz, tris, k):
    """Columns 0-8 of row k of ``tris``: the triangle's vertices."""
    tris[k, 0] = ax
    tris[k, 1] = ay
    tris[k, 2] = az
    tris[k, 3] = bx
    tris[k, 4] = by
    tris[k, 5] = bz
    tris[k, 6] = cx
    tris[k, 7] = cy
    tris[k, 8] = cz


@njit(inline="always", **_JIT)
def _fill_row(ax, ay, az, bx, by, bz, cx, cy, cz, tris, k):
    """Row k of ``tris``: the vertices and the sliver flag; returns 1 when the triangle may
    have a vertex that is not finite (its squared edges do not sum to a finite number), else
    0."""
    _store_vertices(ax, ay, az, bx, by, bz, cx, cy, cz, tris, k)
    sliver, s = _sliver(ax, ay, az, bx, by, bz, cx, cy, cz)
    tris[k, 9] = 1.0 if sliver else 0.0
    return 0 if s < np.float32(np.inf) else 1


@njit(inline="always", **_JIT)
def _box(ax, ay, az, bx, by, bz, cx, cy, cz, t, items):
    """Triangle t's box (Warp's ``bounds3::add_point`` of its vertices) into ``items[t]``
    (lower, upper)."""
    items[t, 0] = min(min(ax, bx), cx)
    items[t, 1] = min(min(ay, by), cy)
    items[t, 2] = min(min(az, bz), cz)
    items[t, 3] = max(max(ax, bx), cx)
    items[t, 4] = max(max(ay, by), cy)
    items[t, 5] = max(max(az, bz), cz)


@njit(inline="always", **_JIT)
def _vertices(points, indices, t):
    i = indices[3 * t]
    j = indices[3 * t + 1]
    m = indices[3 * t + 2]
    return (points[i, 0], points[i, 1], points[i, 2], points[j, 0], points[j, 1], points[j, 2],
            points[m, 0], points[m, 1], points[m, 2])


@njit(parallel=True, **_JIT)
def _triangle_boxes(points, indices, items, ids):
    """Before a build: every triangle's box (the builder's items, numbered), in triangle
    order."""
    for t in prange(items.shape[0]):
        ax, ay, az, bx, by, bz, cx, cy, cz = _vertices(points, indices, t)
        _box(ax, ay, az, bx, by, bz, cx, cy, cz, t, items)
        ids[t] = t


@njit(parallel=True, **_JIT)
def _fill_tris(points, indices, prims, tris, rows):
    """After a build: the rows in leaf order (row k is triangle ``prims[k]``'s, written
    sequentially) and their vertex indices ``rows`` (a refit rewrites the rows from them
    sequentially)."""
    for k in prange(prims.shape[0]):
        t = prims[k]
        for j in range(3):
            rows[k, j] = indices[3 * t + j]
        ax, ay, az, bx, by, bz, cx, cy, cz = _vertices(points, indices, t)
        _fill_row(ax, ay, az, bx, by, bz, cx, cy, cz, tris, k)


@njit(inline="always", **_JIT)
def _refit_subtree(points, rows, prims, tris, bounds, links, r):
    """A refit of the subtree at position r in one reverse sweep: a leaf's rows (vertices,
    sliver flag) are rewritten and its box is their union (in leaf order, Warp's refit
    order), an internal node's box the union of its children's. Returns how many of its
    triangles may have a vertex that is not finite (``Mesh.refit`` then checks the points:
    a separate pass over them cost a twentieth of the refit).

    LLVM is told the arrays' row lengths and that node, row and vertex indices are not
    negative (``weft.native.vectorise``: all hold, the indices were checked at construction),
    which drops Python's wraparound and run-time strides from every access: 7.1 -> 5.6 ms on
    one thread, 4.2 -> 3.1 ms on two (259,200 triangles)."""
    assume_shape(points, 3, 0)
    assume_shape(rows, 3, 0)
    assume_shape(tris, TRI_COLS, 0)
    assume_shape(bounds, 6, 0)
    assume_shape(links, 4, 0)
    suspect = 0
    for q in range(links[r, 2] - 1, r - 1, -1):
        p = nonneg(q)
        first = links[p, 0]
        if first < 0:
            _union_children(bounds, links, p)
            continue
        b0 = np.float32(3.4028234663852886e38)
        b1 = b0
        b2 = b0
        b3 = -b0
        b4 = -b0
        b5 = -b0
        for kk in range(first, links[p, 1]):
            k = nonneg(kk)
            i = nonneg(np.int64(rows[k, 0]))
            j = nonneg(np.int64(rows[k, 1]))
            m = nonneg(np.int64(rows[k, 2]))
            ax, ay, az = points[i, 0], points[i, 1], points[i, 2]
            bx, by, bz = points[j, 0], points[j, 1], points[j, 2]
            cx, cy, cz = points[m, 0], points[m, 1], points[m, 2]
            suspect += _fill_row(ax, ay, az, bx, by, bz, cx, cy, cz, tris, k)
            b0 = min(b0, min(min(ax, bx), cx))
            b1 = min(b1, min(min(ay, by), cy))
            b2 = min(b2, min(min(az, bz), cz))
            b3 = max(b3, max(max(ax, bx), cx))
            b4 = max(b4, max(max(ay, by), cy))
            b5 = max(b5, max(max(az, bz), cz))
        bounds[p] = (b0, b1, b2, b3, b4, b5)
    return suspect


@njit(parallel=True, **_JIT)
def _refit_tasks(points, rows, prims, tris, bounds, links, roots):
    suspect = 0
    for j in prange(roots.shape[0]):
        suspect += _refit_subtree(points, rows, prims, tris, bounds, links, roots[j])
    return suspect


@njit(**_JIT)
def _refit_serial(points, rows, prims, tris, bounds, links, roots):
    suspect = 0
    for j in range(roots.shape[0]):
        suspect += _refit_subtree(points, rows, prims, tris, bounds, links, roots[j])
    return suspect


def _lengths(v):
    """Float32 ``sqrt((x*x + y*y) + z*z)`` of each row, as Warp's ``length``."""
    return np.sqrt((v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1]) + v[:, 2] * v[:, 2])


class Mesh:
    """A triangle mesh with its BVH (``wp.Mesh`` on the CPU)."""

    def __init__(self, points, indices, velocities=None, support_winding_number=False,
                 bvh_constructor=None, bvh_leaf_size=None, groups=None):
        self._points = _vec3_array(points, "Mesh points")
        idx = np.asarray(indices)
        if idx.dtype != np.int32:
            raise TypeError(f"Mesh indices should be an array of int32 (got dtype {idx.dtype})")
        if idx.ndim != 1:
            raise TypeError("Mesh indices should be a flattened 1d array of indices")
        if idx.shape[0] % 3:
            raise ValueError(f"Mesh indices: the length ({idx.shape[0]}) is not a multiple "
                             f"of 3")
        if idx.shape[0] and (idx.min() < 0 or idx.max() >= self._points.shape[0]):
            bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
            raise ValueError(f"Mesh indices: index {bad} out of range for "
                             f"{self._points.shape[0]} points")
        self.groups = _groups(groups, idx.shape[0] // 3, "indices / 3")
        self.indices = np.ascontiguousarray(idx)
        self._velocities = self._check_velocities(velocities)
        self.support_winding_number = bool(support_winding_number)
        self.constructor = _constructor(bvh_constructor)
        self.leaf_size = _leaf_size(bvh_leaf_size, 4)
        self.props = np.zeros((0, mesh_winding.PROPS), np.float32)
        self.build()

    def _check_velocities(self, v):
        if v is None:
            return np.zeros((0, 3), np.float32)
        v = _vec3_array(v, "Mesh velocities")
        if v.shape[0] != self._points.shape[0]:
            raise ValueError(f"Mesh velocities: {v.shape[0]} rows for "
                             f"{self._points.shape[0]} points")
        return v

    @property
    def num_tris(self):
        return self.indices.shape[0] // 3

    @property
    def points(self):
        return self._points

    @points.setter
    def points(self, new):
        """Assigning new points (same shape) refits, as Warp's setter does."""
        new = _vec3_array(new, "Mesh points")
        if new.shape != self._points.shape:
            raise ValueError(f"The new points and the original points must have the same "
                             f"shape, the new points' shape is {new.shape}, while the old "
                             f"points' shape is {self._points.shape}.")
        self._points = new
        self.refit()

    @property
    def lowers(self):
        """The triangles' box lower corners ((m, 3) float32, triangle order), computed from the
        current points on access (the build keeps them only as its items)."""
        return self._tri_points().min(axis=1)

    @property
    def uppers(self):
        """The triangles' box upper corners, as ``lowers``."""
        return self._tri_points().max(axis=1)

    def _tri_points(self):
        return self._points[self.indices.reshape(-1, 3)]

    @property
    def velocities(self):
        return self._velocities

    @velocities.setter
    def velocities(self, new):
        self._velocities = self._check_velocities(new)

    def build(self):
        """Build the BVH anew from the current points."""
        _check_finite(self._points, "Mesh points")
        m = self.num_tris
        self.tris = np.empty((m, TRI_COLS), np.float32)
        self._rows = np.empty((m, 3), np.int32)   # each row's vertex indices (leaf order)
        # the tree's arrays; the triangles' boxes exist only as the builder's items
        self.bvh = b = Bvh.__new__(Bvh)
        b.lowers = b.uppers = None
        b.constructor, b.leaf_size = self.constructor, self.leaf_size
        if m:
            items = np.empty((m, 6), np.float32)
            ids = np.empty(m, np.int32)
            _triangle_boxes(self._points, self.indices, items, ids)
            if self.groups is None:
                b.bounds, b.links, b.prims, self._split = bvh_build.build_items(
                    items, ids, self.leaf_size, self.constructor)
            else:                                   # ids are 0..m-1: items are by triangle
                b.bounds, b.links, b.prims, b.group_table = bvh_groups.build_grouped(
                    items[:, :3], items[:, 3:], self.groups, self.leaf_size, self.constructor)
                self._split = bvh_refit.split_top(b.links)
            _fill_tris(self._points, self.indices, b.prims, self.tris, self._rows)
        else:
            b.bounds = np.zeros((0, 6), np.float32)
            b.links = np.zeros((0, 4), np.int32)
            b.prims = np.zeros(0, np.int32)
            self._split = bvh_refit.split_top(b.links)
        if self.groups is None or not m:
            b.group_table = bvh_groups.ungrouped_table(b.links.shape[0])
        self._finish()

    def refit(self):
        """Refit to the current points (same topology): boxes, ``tris``, expansions.

        Points that are not finite are a ``ValueError``, raised after the sweep that found
        them (the boxes and rows then hold them until the points are fixed and the mesh
        refitted); points no triangle uses are not read, as no query reads them."""
        b = self.bvh
        if self.num_tris:
            roots, tops = self._split
            args = (self._points, self._rows, b.prims, self.tris, b.bounds, b.links, roots)
            if roots.shape[0] > 1 and numba.get_num_threads() > 1:
                with numba.parallel_chunksize(1):
                    suspect = _refit_tasks(*args)
            else:
                suspect = _refit_serial(*args)
            if suspect:   # a vertex not finite, or finite edges whose squares overflow
                _check_finite(self._points[self.indices], "Mesh points")
            bvh_refit._refit_tops(b.bounds, b.links, tops)
        self._finish()

    @property
    def average_edge_length(self):
        """Warp's average edge length of the current triangles (float32; NaN for none),
        computed on the first read after a build or refit."""
        if self._average is None:
            t = self._tri_points()      # (m, 3, 3); Warp's order of the edges and of the sum
            e = (_lengths(t[:, 0] - t[:, 1]) + _lengths(t[:, 0] - t[:, 2])) + \
                _lengths(t[:, 2] - t[:, 1])
            total = np.add.accumulate(e, dtype=np.float32)[-1] if e.shape[0] else \
                np.float32(0)   # accumulate adds in order (a reduction would add pairwise)
            with np.errstate(invalid="ignore"):
                self._average = np.float32(total / np.float32(3 * e.shape[0]))
        return self._average

    def _finish(self):
        m = self.num_tris
        self._average = None
        if self.support_winding_number and m:
            if self.props.shape[0] != self.bvh.links.shape[0]:
                self.props = np.empty((self.bvh.links.shape[0], mesh_winding.PROPS), np.float32)
            mesh_winding.build_props(self.bvh.links, self.tris, self.props)

    def arrays(self):
        """``(bounds, links, prims, tris, props)`` for the query cores."""
        b = self.bvh
        return b.bounds, b.links, b.prims, self.tris, self.props
