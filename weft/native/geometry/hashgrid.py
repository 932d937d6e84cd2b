"""``wp.HashGrid``: points bucketed into a periodic grid of cells, for neighbour queries.

    >>> g = HashGrid(128, 128, 128)
    >>> g.build(points, radius=0.1)            # (N, 3) float32 array; parallel on the CPU
    >>> grid, point_keys = g.arrays()           # for the query cores

Semantics of Warp 1.19 (checked against it in the tests):

- a point p falls in the virtual cell ``floor(p * (1 / cell_width))`` per axis (float32 products,
  out-of-range values clamped to [INT_MIN, INT_MAX - 1], NaN to 0), hashed to the physical cell
  ``(z mod dz) * dx * dy + (y mod dy) * dx + (x mod dx)`` (non-negative modulo, so space wraps
  periodically);
- ``build`` sorts the point indices by cell (stably: equal cells keep index order) into
  ``point_ids``; ``cell_starts[c]``/``cell_ends[c]`` bound cell c's run (0, 0 when empty). With
  ``groups``, points are sorted by (cell, uint32(group)) and ``point_keys`` holds
  ``cell << 32 | uint32(group)`` so grouped queries can binary-search their group's sub-run;
- a query around p with radius r visits the virtual cells from ``floor((p - r) / w)`` to
  ``floor((p + r) / w)`` (at most ``dim`` cells per axis, so no physical cell twice), x fastest,
  then y, then z, and yields *every* point of those cells in ``point_ids`` order: candidates
  are not filtered by distance (callers test ``length(q - p) <= r`` themselves);
- ``hash_grid_point_id(i)`` is ``point_ids[i]``: the index of the i-th point in sorted order.

Data: one int32 array ``grid`` = ``[dim_x, dim_y, dim_z, num_points, capacity, sorted point ids
(capacity entries), then per cell its start and end (2 * cells)]`` (one array, because every
array argument of a compiled call costs seven machine words, and start and end of a cell share
a cache line), plus ``point_keys`` (int64) for grouped builds, empty otherwise.

Query cores (portable, see ``weft/stdlib/_portable.py``): ``hash_grid_query(grid, point_keys,
inv, px, py, pz, radius, group, filter)`` returns the start state, a tuple of 13 ints ``(x0,
y0, z0, x1, y1, z1, x, y, z, cursor, cursor_end, group, filter)`` (no hidden buffers, so an
adjoint can replay a loop from recorded states), and ``hash_grid_query_next(grid, point_keys,
state)`` returns ``(found, point_index, next_state)``; its common case (another point in the
current cell) is a few instructions, the cell walk is in ``hg_advance``.

Build: points' cells in parallel, then a parallel, stable LSD radix sort of the cell keys
(11-bit digits, per-thread histograms; as many passes as the cell count needs, more for group
bits), then the cell table: the cells the previous build filled are reset (the table starts
zeroed, so a rebuild is O(points), not O(cells)) and each run of equal cells is marked.
``reserve(n)`` keeps buffers for n points (Warp's 1.5x capacity rule).
"""
import math
import operator

import numba
import numpy as np
from numba import prange

from ...core.diskcache import njit

from .._portable import f2h, h2f
from .portable import Namespace, compile_into, variant

#: Numba options for compiling these cores for the CPU: ``numba.njit(**CPU_JIT_OPTIONS)``.
#: ``_nrt=False`` because the cores allocate nothing: with Numba's reference counting on, every
#: call increments and decrements the count of each array argument (atomic operations on a
#: shared cache line), measured to make a LINEAR sample 3x slower and to stop it scaling
#: across threads.
CPU_JIT_OPTIONS = dict(nogil=True, error_model="numpy", _nrt=False)
MAX_CELL_COUNT = (1 << 31) - 1
DIGIT_BITS = 11
INT_MIN = -2147483648
INT_MAX_1 = 2147483646


# ------------------------------------------------------------------------------ portable cores
def hg_cell_coord(v):
    """Warp's ``hash_grid_cell_coord``: ``floor(v)`` as an int32, clamped to [INT_MIN,
    INT_MAX - 1], NaN to 0 (``v`` a float32 or float64 product, compared in float64)."""
    d = float(v)
    if d != d:
        return 0
    if d >= 2147483646.0:
        return INT_MAX_1
    if d < -2147483648.0:
        return INT_MIN
    t = int(d)
    if t > d:
        t -= 1
    return t


def hg_cell_index(dim_x, dim_y, dim_z, x, y, z):
    """The physical cell of virtual cell (x, y, z): coordinates wrap modulo the dimensions
    (non-negative remainders; the divisions are skipped for coordinates already in range)."""
    if x < 0 or x >= dim_x:
        x = x % dim_x
    if y < 0 or y >= dim_y:
        y = y % dim_y
    if z < 0 or z >= dim_z:
        z = z % dim_z
    return z * (dim_x * dim_y) + y * dim_x + x


def hg_point_cell(dim_x, dim_y, dim_z, inv, px, py, pz):
    """The cell of a point (its coordinates and ``inv`` = 1 / cell width of one float type)."""
    return hg_cell_index(dim_x, dim_y, dim_z, hg_cell_coord(px * inv), hg_cell_coord(py * inv),
                         hg_cell_coord(pz * inv))


def hg_lower_bound(keys, lo, hi, key):
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


def hg_cell_range(grid, keys, cell, group, filt):
    """[start, end) of cell ``cell`` in the sorted point ids (of group ``group`` if ``filt``
    and the grid was built with groups, i.e. ``keys`` is not empty)."""
    r = 5 + grid[4] + 2 * np.int64(cell)
    start = np.int64(grid[r])
    end = np.int64(grid[r + 1])
    if filt != 0 and keys.shape[0] > 0:
        key = (np.int64(cell) << 32) | (np.int64(group) & 0xFFFFFFFF)
        start = hg_lower_bound(keys, start, end, key)
        end = hg_lower_bound(keys, start, end, key + 1)
    return start, end


def hg_query_end(start, end, dim):
    """Visit each physical cell once: at most ``dim`` cells from ``start``."""
    if end - start >= dim:
        return start + (dim - 1)
    return end


def hg_query_begin(grid, keys, x0, y0, z0, x1, y1, z1, group, filt):
    dim_x = np.int64(grid[0])
    dim_y = np.int64(grid[1])
    dim_z = np.int64(grid[2])
    x1 = hg_query_end(x0, x1, dim_x)
    y1 = hg_query_end(y0, y1, dim_y)
    z1 = hg_query_end(z0, z1, dim_z)
    s, e = hg_cell_range(grid, keys, hg_cell_index(dim_x, dim_y, dim_z, x0, y0, z0), group,
                         filt)
    return (np.int64(x0), np.int64(y0), np.int64(z0), np.int64(x1), np.int64(y1), np.int64(z1),
            np.int64(x0), np.int64(y0), np.int64(z0), s, e, np.int64(group), np.int64(filt))


#: the precision of ``hash_grid_query``: ``np.float64`` in ``hash_grid_query_d`` (the same code,
#: ``portable.variant``)
real = np.float32


def hash_grid_query(grid, keys, inv, px, py, pz, radius, group, filt):
    """``wp.hash_grid_query`` on a float32 grid (``inv`` = float32 1 / cell width): the start
    state of the iteration over the cells within ``radius`` of (px, py, pz); ``filt`` 1 keeps
    only points of ``group`` (Warp's 4-argument form), 0 all points."""
    x = real(px)
    y = real(py)
    z = real(pz)
    r = real(radius)
    w = real(inv)
    return hg_query_begin(grid, keys, hg_cell_coord((x - r) * w), hg_cell_coord((y - r) * w),
                          hg_cell_coord((z - r) * w), hg_cell_coord((x + r) * w),
                          hg_cell_coord((y + r) * w), hg_cell_coord((z + r) * w), group, filt)


hash_grid_query_d = variant(hash_grid_query, "hash_grid_query_d", "``hash_grid_query`` on a "
                            "float64 grid (all arithmetic in float64).", real=np.float64)


def hg_half(x):
    """``x`` rounded to float16, as a float32 (half arithmetic: a float32 sum or product of
    halves rounded once to half is the half result, float32 having more than 2 * 11 + 1
    bits)."""
    return h2f(f2h(x))


def hg_half_coord(a, b, w):
    """Warp's float16 ``hash_grid_cell_coord((a + b) * w)``, each operation in half."""
    return hg_cell_coord(hg_half(hg_half(a + b) * w))


def hash_grid_query_h(grid, keys, inv, px, py, pz, radius, group, filt):
    """``hash_grid_query`` on a float16 grid: every operation rounded to half, as Warp's
    ``half`` arithmetic (``inv`` the half 1 / cell width, as float32)."""
    x = hg_half(np.float32(px))
    y = hg_half(np.float32(py))
    z = hg_half(np.float32(pz))
    r = hg_half(np.float32(radius))
    w = np.float32(inv)
    return hg_query_begin(grid, keys, hg_half_coord(x, -r, w), hg_half_coord(y, -r, w),
                          hg_half_coord(z, -r, w), hg_half_coord(x, r, w),
                          hg_half_coord(y, r, w), hg_half_coord(z, r, w), group, filt)


def hg_advance(grid, keys, state):
    """The next non-empty cell of a query whose current cell is exhausted."""
    x0, y0, z0, x1, y1, z1, x, y, z, cur, end, group, filt = state
    dim_x = np.int64(grid[0])
    dim_y = np.int64(grid[1])
    dim_z = np.int64(grid[2])
    while cur >= end:
        x += 1
        if x > x1:
            x = x0
            y += 1
        if y > y1:
            y = y0
            z += 1
        if z > z1:
            return (x0, y0, z0, x1, y1, z1, x, y, z, cur, end, group, filt)
        cur, end = hg_cell_range(grid, keys, hg_cell_index(dim_x, dim_y, dim_z, x, y, z), group,
                                 filt)
    return (x0, y0, z0, x1, y1, z1, x, y, z, cur, end, group, filt)


def hash_grid_query_next(grid, keys, state):
    """``(found, point_index, next_state)``: the next candidate of a query, in Warp's order."""
    if state[9] >= state[10]:
        state = hg_advance(grid, keys, state)
        if state[9] >= state[10]:
            return False, np.int32(-1), state
    cur = state[9]
    return (True, np.int32(grid[5 + cur]),
            (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7],
             state[8], cur + 1, state[10], state[11], state[12]))


def hash_grid_point_id(grid, index):
    """``wp.hash_grid_point_id``: the original index of the ``index``-th point in sorted order
    (-1 out of range or before any build; Warp does not check the range)."""
    if index >= 0 and index < grid[3]:
        return np.int32(grid[5 + index])
    return np.int32(-1)


#: functions worth inlining into their callers (``compile_for``'s ``inline_jit``): the
#: iterator step runs once per candidate and the cell walk once per cell, and calls passing
#: the 13-int state and the arrays made a neighbour count twice as slow on the CPU
INLINE = ("hash_grid_query_next", "hg_advance")

PORTABLE = ("f2h", "h2f", "hg_cell_coord", "hg_cell_index", "hg_point_cell", "hg_lower_bound",
            "hg_cell_range", "hg_query_end", "hg_query_begin", "hash_grid_query",
            "hash_grid_query_d", "hg_half", "hg_half_coord", "hash_grid_query_h", "hg_advance",
            "hash_grid_query_next", "hash_grid_point_id")


def compile_for(jit, inline_jit=None, lazy=False):
    """Every function of ``PORTABLE`` compiled with ``jit`` (a namespace dict), as in
    ``weft.native.geometry.volume_query.compile_for``; those in ``INLINE`` with ``inline_jit`` when
    given. For the CPU: ``compile_for(numba.njit(**CPU_JIT_OPTIONS),
    numba.njit(inline="always", **CPU_JIT_OPTIONS))`` (``compile_cpu()``); for CUDA
    ``compile_for(cuda.jit(device=True))``. ``lazy``: a ``portable.Namespace`` making each
    at its first lookup."""
    ns = Namespace({"math": math, "np": np, "INT_MIN": INT_MIN, "INT_MAX_1": INT_MAX_1,
                    "real": real, "__name__": __name__})  # (cached code: a module name)
    ns = compile_into(ns, [(name, globals()[name]) for name in PORTABLE], jit, inline_jit,
                      INLINE)
    return ns if lazy else ns.made()


def compile_cpu(cache=False):
    """The query cores compiled for the CPU with the recommended options."""
    return compile_for(numba.njit(cache=cache, **CPU_JIT_OPTIONS),
                       numba.njit(cache=cache, inline="always", **CPU_JIT_OPTIONS))


# ------------------------------------------------------------------------------ host build
_cell_coord = njit(nogil=True, inline="always")(hg_cell_coord)
_f2h = njit(nogil=True, inline="always")(f2h)
_h2f = njit(nogil=True, inline="always")(h2f)


@njit(nogil=True, inline="always")
def _half(x):
    return _h2f(_f2h(x))
_cell_index = njit(nogil=True, inline="always")(hg_cell_index)


@njit(nogil=True, inline="always")
def _fast_coord(v):
    """``hg_cell_coord`` with a branch-light path for in-range values (same results)."""
    if v >= -2147483648.0 and v < 2147483646.0:
        return np.int64(np.floor(v))
    return _cell_coord(v)


# The build is a few parallel regions, each a prange over ``nchunks`` contiguous chunks of the
# points (one per thread): a region costs little on an idle machine but up to milliseconds on
# a busy one (a thread waits for its core), so work that can share a region does, and no
# region is implicit (no array creation inside these functions: Numba parallelises it).

@njit(nogil=True, parallel=True)
def _start(points, inv, half, dim_x, dim_y, dim_z, groups, keys, ids, shift, bits, hist, grid,
           point_cells, n_prev):
    """One region: reset the cells the previous build filled (its ``point_cells``; the table
    starts zeroed, so a rebuild costs O(points), not O(cells)), compute each point's key (its
    cell, ``<< 32 | uint32(group)`` with groups) and id, and each chunk's histogram of the
    first radix digit. ``half``: float16 points (given as float32), products rounded to
    half."""
    n = points.shape[0]
    nchunks = hist.shape[0]
    grouped = groups.shape[0] > 0
    base = 5 + np.int64(grid[4])
    mask = (1 << bits) - 1
    step = (n + nchunks - 1) // nchunks
    step_prev = (n_prev + nchunks - 1) // nchunks
    for t in prange(nchunks):
        for i in range(t * step_prev, min(n_prev, (t + 1) * step_prev)):
            r = base + 2 * np.int64(point_cells[i])
            grid[r] = 0
            grid[r + 1] = 0
        for d in range(hist.shape[1]):
            hist[t, d] = 0
        for i in range(t * step, min(n, (t + 1) * step)):
            if half:
                x = _fast_coord(_half(points[i, 0] * inv))
                y = _fast_coord(_half(points[i, 1] * inv))
                z = _fast_coord(_half(points[i, 2] * inv))
            else:
                x = _fast_coord(points[i, 0] * inv)
                y = _fast_coord(points[i, 1] * inv)
                z = _fast_coord(points[i, 2] * inv)
            c = np.int64(_cell_index(dim_x, dim_y, dim_z, x, y, z))
            if grouped:
                c = (c << 32) | (np.int64(groups[i]) & 0xFFFFFFFF)
            keys[i] = c
            ids[i] = i
            hist[t, (c >> shift) & mask] += 1


@njit(nogil=True, parallel=True)
def _histogram(kin, shift, bits, hist):
    """Each chunk's histogram of digit ``(key >> shift) & (2**bits - 1)``."""
    n = kin.shape[0]
    nchunks = hist.shape[0]
    mask = (1 << bits) - 1
    step = (n + nchunks - 1) // nchunks
    for t in prange(nchunks):
        for d in range(hist.shape[1]):
            hist[t, d] = 0
        for i in range(t * step, min(n, (t + 1) * step)):
            hist[t, (kin[i] >> shift) & mask] += 1


@njit(nogil=True, parallel=True)
def _scatter(kin, vin, kout, vout, shift, bits, hist):
    """A stable counting-sort pass from the chunks' histograms: one scan (digit-major,
    chunk-minor), then each chunk scatters its points in index order."""
    n = kin.shape[0]
    nchunks = hist.shape[0]
    mask = (1 << bits) - 1
    total = 0
    for d in range(1 << bits):
        for t in range(nchunks):
            c = hist[t, d]
            hist[t, d] = total
            total += c
    step = (n + nchunks - 1) // nchunks
    for t in prange(nchunks):
        for i in range(t * step, min(n, (t + 1) * step)):
            d = (kin[i] >> shift) & mask
            p = hist[t, d]
            hist[t, d] = p + 1
            kout[p] = kin[i]
            vout[p] = vin[i]


@njit(nogil=True, parallel=True)
def _finish(keys, shift, ids, grid, point_cells, point_keys, keep_keys):
    """Store the sorted ids, each point's cell, and the [start, end) of every run of equal
    cells (the table holds zeros elsewhere: ``_start`` reset the previous build's cells)."""
    base = 5 + np.int64(grid[4])
    n = keys.shape[0]
    for i in prange(n):
        c = keys[i] >> shift
        point_cells[i] = c
        grid[5 + i] = ids[i]
        if keep_keys:
            point_keys[i] = keys[i]
        if i == 0 or (keys[i - 1] >> shift) != c:
            grid[base + 2 * c] = i
        if i == n - 1 or (keys[i + 1] >> shift) != c:
            grid[base + 2 * c + 1] = i + 1


def _digit_passes(lo_bit, hi_bit):
    """(shift, bits) of the LSD passes covering bits [lo_bit, hi_bit)."""
    out = []
    b = lo_bit
    while b < hi_bit:
        w = min(DIGIT_BITS, hi_bit - b)
        out.append((b, w))
        b += w
    return out


class HashGrid:
    """A hash grid of ``dim_x * dim_y * dim_z`` cells over float16, float32 or float64 points.

    ``grid`` (int32) holds everything the queries read: ``[dim_x, dim_y, dim_z, num_points,
    capacity, sorted point ids (capacity), then per cell its [start, end) (2 * cells)]``;
    ``point_keys`` (int64) the (cell, group) keys of a grouped build (empty otherwise)."""

    def __init__(self, dim_x, dim_y, dim_z, dtype=np.float32):
        try:
            dims = tuple(operator.index(d) for d in (dim_x, dim_y, dim_z))
        except TypeError as e:
            raise TypeError("HashGrid dimensions must be integers") from e
        if min(dims) <= 0:
            raise RuntimeError("Hash grid dimensions must be positive")
        if dims[0] * dims[1] * dims[2] > MAX_CELL_COUNT:
            raise RuntimeError(f"Hash grid cell count exceeds supported limit: "
                               f"{dims[0]} * {dims[1]} * {dims[2]} > {MAX_CELL_COUNT}")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float16, np.float32, np.float64):
            raise TypeError("HashGrid supports float16, float32 and float64 points")
        self.dim_x, self.dim_y, self.dim_z = dims
        self.n_cells = dims[0] * dims[1] * dims[2]
        self.cell_width = self.dtype.type(0)
        self.cell_width_inv = self.dtype.type(0)
        self.num_points = 0
        self.has_groups = False
        self.reserved = False
        self._capacity = -1
        self._n_prev = 0
        self.point_keys = np.zeros(0, np.int64)
        self._allocate(0)

    def _allocate(self, capacity):
        """Buffers for ``capacity`` points; the cell table starts zeroed (np.zeros: pages the
        OS zeroes lazily)."""
        self.grid = np.zeros(5 + capacity + 2 * self.n_cells, np.int32)
        self.grid[:5] = (self.dim_x, self.dim_y, self.dim_z, 0, capacity)
        self._cells = np.zeros(capacity, np.int32)
        self._scratch = (np.empty(capacity, np.int64), np.empty(capacity, np.int64),
                         np.empty(capacity, np.int32), np.empty(capacity, np.int32),
                         np.empty(capacity, np.int64))
        self._capacity = capacity
        self._n_prev = 0

    def reserve(self, num_points, with_groups=False):
        """Keep buffers for ``num_points`` points (1.5x, as Warp), so that builds of up to that
        many points allocate nothing."""
        num_points = operator.index(num_points)
        if num_points > self._capacity:
            self._allocate(num_points * 3 // 2)
        self.reserved = True

    @property
    def point_ids(self):
        """The point indices sorted by cell (``hash_grid_point_id``'s table)."""
        return self.grid[5:5 + self.num_points]

    @property
    def point_cells(self):
        """The cell of each sorted point."""
        return self._cells[:self.num_points]

    @property
    def cell_starts(self):
        return self.grid[5 + self._capacity::2]

    @property
    def cell_ends(self):
        return self.grid[6 + self._capacity::2]

    def build(self, points, radius, groups=None):
        """Bucket ``points`` ((N, 3) array of the grid's float type) into cells of width
        ``radius``; ``groups`` (N int32) partitions each cell by group id."""
        pts = np.ascontiguousarray(points)
        if pts.ndim != 2 or pts.shape[1] != 3 or pts.dtype != self.dtype:
            raise TypeError(f"Hash grid points should be an (N, 3) array of {self.dtype}")
        if not radius > 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        n = pts.shape[0]
        if groups is not None:
            groups = np.ascontiguousarray(groups).reshape(-1)
            if groups.dtype != np.int32:
                raise RuntimeError("groups should be an array of type int32")
            if groups.shape[0] != n:
                raise RuntimeError("groups must have the same length as points")
        self.reserve(n, groups is not None)
        k0, k1, v0, v1, keys = (b[:n] for b in self._scratch)
        self.cell_width = self.dtype.type(radius)
        self.cell_width_inv = self.dtype.type(1) / self.cell_width
        half = self.dtype == np.float16
        if half:  # the build computes with halves held as float32
            pts = pts.astype(np.float32)
        inv = np.float32(self.cell_width_inv) if half else self.cell_width_inv
        grp = groups if groups is not None else np.zeros(0, np.int32)
        passes = _digit_passes(32, 32 + max(1, (self.n_cells - 1).bit_length()))
        if groups is None:
            passes = [(s - 32, b) for s, b in passes]
        elif n:
            top = int((grp.astype(np.int64) & 0xFFFFFFFF).max()).bit_length()
            passes = _digit_passes(0, top) + passes
        nchunks = max(1, min(numba.get_num_threads(), n // 4096))
        hist = np.empty((nchunks, 1 << DIGIT_BITS), np.int64)
        for p, (shift, bits) in enumerate(passes):
            if p == 0:
                _start(pts, inv, half, self.dim_x, self.dim_y, self.dim_z, grp, k0,
                       v0, shift, bits, hist, self.grid, self._cells, self._n_prev)
            else:
                _histogram(k0, shift, bits, hist)
            _scatter(k0, v0, k1, v1, shift, bits, hist)
            k0, k1, v0, v1 = k1, k0, v1, v0
        _finish(k0, 32 if groups is not None else 0, v0, self.grid, self._cells, keys,
                groups is not None)
        self.grid[3] = n
        self._n_prev = n
        self.point_keys = keys if groups is not None else np.zeros(0, np.int64)
        self.num_points = n
        self.has_groups = groups is not None

    def arrays(self):
        """``(grid, point_keys)`` for the query cores (``point_keys`` is empty unless the grid
        was built with groups)."""
        return self.grid, self.point_keys
