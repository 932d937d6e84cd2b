"""wp.HashGrid's public API as Warp 1.19's: grids of every precision and grouped grids queried
in kernels (candidates against numpy brute force in the grid's own arithmetic), query types in
func annotations, argument validation, graph capture of builds."""
from typing import Any

import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError

PRECISIONS = [(wp.float16, wp.vec3h, np.float16), (wp.float32, wp.vec3f, np.float32),
              (wp.float64, wp.vec3d, np.float64)]
MAX_CAND = 400


@wp.kernel
def collect(grid: wp.uint64, radius: Any, queries: wp.array(dtype=Any),
            out: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
    tid = wp.tid()
    n = int(0)
    for j in wp.hash_grid_query(grid, queries[tid], radius):
        if n < MAX_CAND:
            out[tid, n] = j
        n += 1
    counts[tid] = n


@wp.kernel
def collect_grouped(grid: wp.uint64, radius: Any, queries: wp.array(dtype=Any),
                    groups: wp.array(dtype=wp.int32), out: wp.array2d(dtype=int),
                    counts: wp.array(dtype=int)):
    tid = wp.tid()
    query = wp.hash_grid_query(grid, queries[tid], radius, groups[tid])
    n = int(0)
    j = int(0)
    while wp.hash_grid_query_next(query, j):
        if n < MAX_CAND:
            out[tid, n] = j
        n += 1
    counts[tid] = n


def _cells(pts, inv, dims):
    """numpy: the physical cells of points ``pts`` (of the grid's float type)."""
    v = (pts * inv).astype(np.float64)
    with np.errstate(invalid="ignore"):
        f = np.floor(v)
        f = np.where(np.isnan(f), 0, np.clip(f, -2.0 ** 31, 2.0 ** 31 - 2)).astype(np.int64)
    m = f % np.array(dims)
    return m[:, 2] * dims[0] * dims[1] + m[:, 1] * dims[0] + m[:, 0]


def _expected(pts, q, r, radius, dims, np_t):
    """The candidates of each query: every point of the cells within ``r`` of it, each cell
    once, in numpy's arithmetic of the grid's type."""
    inv = np_t(1) / np_t(radius)
    cells = _cells(pts, inv, dims)
    out = []
    for t in range(len(q)):
        lo = np.floor(((q[t] - np_t(r)) * inv).astype(np.float64))
        hi = np.floor(((q[t] + np_t(r)) * inv).astype(np.float64))
        hi = np.where(hi - lo >= np.array(dims), lo + np.array(dims) - 1, hi)
        axes = [np.arange(lo[k], hi[k] + 1).astype(np.int64) % dims[k] for k in range(3)]
        visit = {z * dims[0] * dims[1] + y * dims[0] + x
                 for z in axes[2] for y in axes[1] for x in axes[0]}
        out.append(np.sort(np.nonzero(np.isin(cells, list(visit)))[0]))
    return out


def _launch(kernel, grid, scalar, r, qarr, extra=()):
    n = qarr.shape[0]
    out = wp.full((n, MAX_CAND), -1, dtype=int)
    counts = wp.zeros(n, dtype=int)
    wp.launch(kernel, n, inputs=[grid.id, scalar(r), qarr, *extra, out, counts])
    o, c = out.numpy(), counts.numpy()
    assert c.max() <= MAX_CAND
    return [np.sort(o[t, :c[t]]) for t in range(n)]


@pytest.mark.parametrize("scalar,vec,np_t", PRECISIONS, ids=["f16", "f32", "f64"])
def test_every_precision_queries_in_kernels(scalar, vec, np_t):
    rng = np.random.default_rng(3)
    dims, radius, r = (9, 8, 7), 0.75, 0.6
    pts = rng.uniform(-3, 3, (300, 3)).astype(np_t)
    q = np.concatenate([pts[:20], rng.uniform(-3.5, 3.5, (20, 3)).astype(np_t)])
    grid = wp.HashGrid(*dims, dtype=scalar)
    assert grid.dtype is scalar
    grid.build(wp.array(pts, dtype=vec), radius)
    got = _launch(collect, grid, scalar, r, wp.array(q, dtype=vec))
    want = _expected(pts, q, r, radius, dims, np_t)
    for t in range(len(q)):
        np.testing.assert_array_equal(got[t], want[t])
        d = np.linalg.norm(pts.astype(np.float64) - q[t].astype(np.float64), axis=1)
        assert set(np.nonzero(d <= r * 0.98)[0]) <= set(got[t].tolist())


@pytest.mark.parametrize("scalar,vec,np_t", PRECISIONS, ids=["f16", "f32", "f64"])
def test_grouped_queries_return_only_their_group(scalar, vec, np_t):
    rng = np.random.default_rng(4)
    dims, radius = (6, 6, 6), 0.5
    n = 400
    pts = rng.uniform(-2, 2, (n, 3)).astype(np_t)
    choices = np.array([np.iinfo(np.int32).min, -1, 0, 7, np.iinfo(np.int32).max], np.int32)
    groups = choices[rng.integers(0, len(choices), n)]
    qgroups = np.concatenate([groups[:30], np.full(5, 99, np.int32)])  # 99: no such group
    q = np.concatenate([pts[:30], pts[30:35]])
    grid = wp.HashGrid(*dims, dtype=scalar)
    garr = wp.array(groups, dtype=wp.int32)
    grid.build(wp.array(pts, dtype=vec), radius, groups=garr)
    assert grid.groups is garr
    qarr = wp.array(q, dtype=vec)
    got = _launch(collect_grouped, grid, scalar, radius, qarr,
                  [wp.array(qgroups, dtype=wp.int32)])
    every = _launch(collect, grid, scalar, radius, qarr)
    want = _expected(pts, q, radius, radius, dims, np_t)
    for t in range(len(q)):
        np.testing.assert_array_equal(every[t], want[t])     # no group: every point
        np.testing.assert_array_equal(got[t], want[t][groups[want[t]] == qgroups[t]])
    assert all(len(got[t]) == 0 for t in range(30, 35))
    # built without groups, a grouped query visits every point (as Warp)
    grid.build(wp.array(pts, dtype=vec), radius)
    assert grid.groups is None
    got = _launch(collect_grouped, grid, scalar, radius, qarr,
                  [wp.array(qgroups, dtype=wp.int32)])
    for t in range(len(q)):
        np.testing.assert_array_equal(got[t], want[t])


@wp.func
def closest_in(query: wp.HashGridQuery[wp.float64], center: wp.vec3d,
               points: wp.array(dtype=wp.vec3d), radius: wp.float64):
    best = int(-1)
    best_d = radius * radius
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        o = points[index] - center
        if wp.dot(o, o) <= best_d:
            best = index
            best_d = wp.dot(o, o)
    return best


@wp.kernel
def closest_kernel(grid: wp.uint64, queries: wp.array(dtype=wp.vec3d),
                   points: wp.array(dtype=wp.vec3d), radius: wp.float64,
                   out: wp.array(dtype=int)):
    tid = wp.tid()
    out[tid] = closest_in(wp.hash_grid_query(grid, queries[tid], radius), queries[tid], points,
                          radius)


def test_query_types_in_func_annotations():
    rng = np.random.default_rng(5)
    pts = rng.uniform(0, 4, (200, 3))
    q = rng.uniform(0, 4, (50, 3))
    grid = wp.HashGrid(8, 8, 8, dtype=wp.float64)
    parr = wp.array(pts, dtype=wp.vec3d)
    grid.build(parr, 0.5)
    out = wp.zeros(50, dtype=int)
    wp.launch(closest_kernel, 50, inputs=[grid.id, wp.array(q, dtype=wp.vec3d), parr, 0.3, out])
    d2 = ((q[:, None] - pts[None]) ** 2).sum(-1)
    want = np.where(d2.min(1) <= 0.09, d2.argmin(1), -1)
    np.testing.assert_array_equal(out.numpy(), want)


def test_query_type_surface():
    t = wp.types.hash_grid_query_type
    assert t(wp.float32) is wp.HashGridQuery is wp.hash_grid_query_t
    assert t(wp.float16) is wp.HashGridQuery[wp.float16] is not wp.HashGridQuery
    assert t(wp.float64) is wp.HashGridQuery[wp.float64] is not t(wp.float16)
    assert wp.HashGridQuery[wp.float32] is wp.HashGridQuery
    with pytest.raises(TypeError, match="Unsupported dtype"):
        t(wp.int32)


def test_validation_as_warp():
    with pytest.raises(TypeError, match="Unsupported dtype"):
        wp.HashGrid(4, 4, 4, dtype=wp.int32)
    assert wp.HashGrid(4, 4, 4).dtype is wp.float32
    g = wp.HashGrid(4, 4, 4, dtype=wp.float64)
    assert g.reserved is False and g.groups is None
    with pytest.raises(TypeError, match="should have type vec3d"):
        g.build(wp.zeros(3, dtype=wp.vec3f), 1.0)
    pts = wp.zeros(3, dtype=wp.vec3d)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="must be positive"):
            g.build(pts, bad)
    with pytest.raises(RuntimeError, match="type wp.int32"):
        g.build(pts, 1.0, groups=wp.zeros(3, dtype=wp.float32))
    with pytest.raises(RuntimeError, match="same length"):
        g.build(pts, 1.0, groups=wp.zeros(2, dtype=wp.int32))
    assert g.reserved is False                 # nothing built by the refused calls
    g.build(pts, 1.0)
    assert g.reserved is True
    g2 = wp.HashGrid(4, 4, 4)
    g2.reserve(10, with_groups=True)
    assert g2.reserved is True
    bare = wp.HashGrid.__new__(wp.HashGrid)    # never initialised: __del__ is harmless
    assert bare.id is None
    bare.__del__()


@wp.kernel
def count_near(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3),
               groups: wp.array(dtype=wp.int32), counts: wp.array(dtype=int)):
    tid = wp.tid()
    p = points[tid]
    c = int(0)
    for j in wp.hash_grid_query(grid, p, radius, groups[tid]):
        if wp.length(points[j] - p) <= radius:
            c += 1
    counts[tid] = c


def test_builds_are_replayed_by_captured_graphs():
    pts = wp.array(np.zeros((2, 2, 3), np.float32), dtype=wp.vec3)   # any shape, flattened
    groups = wp.array(np.array([[0, 0], [1, 1]], np.int32), dtype=wp.int32)
    counts = wp.zeros(4, dtype=int)
    grid = wp.HashGrid(16, 16, 16)
    with wp.ScopedCapture() as capture:
        grid.build(pts, 0.25, groups=groups)
        wp.launch(count_near, 4, inputs=[grid.id, 0.25, pts.flatten(), groups.flatten(),
                                         counts])
    assert counts.numpy().sum() == 0           # nothing runs during capture
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 2, 2])
    groups.assign(np.full((2, 2), 3, np.int32))    # contents at replay time are used
    pts.assign(np.array([[[0, 0, 0], [0.1, 0, 0]], [[2, 0, 0], [2.1, 0, 0]]], np.float32))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 2, 2])
    pts.assign(np.array([[[0, 0, 0], [1, 0, 0]], [[2, 0, 0], [3, 0, 0]]], np.float32))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 1, 1])


def test_capture_refusals_as_warp():
    grid = wp.HashGrid(4, 4, 4)
    grid.reserve(4)
    with pytest.raises(NotImplementedError, match="reserve before capture"):
        with wp.ScopedCapture():
            grid.reserve(8)
    with pytest.raises(NotImplementedError, match="serialization is not yet supported"):
        with wp.ScopedCapture(apic=True):
            grid.build(wp.zeros(1, dtype=wp.vec3), 1.0)
    assert not wp.is_capturing()


def test_wrong_query_arguments_are_kernel_errors():
    @wp.kernel
    def bad(grid: wp.uint64, out: wp.array(dtype=int)):
        for j in wp.hash_grid_query(grid, wp.vec3i(0, 0, 0), 1.0):
            out[0] = j

    with pytest.raises(KernelError, match="hash_grid_query"):
        wp.launch(bad, 1, inputs=[wp.HashGrid(2, 2, 2).id, wp.zeros(1, dtype=int)])
