"""HashGrid: the parallel build and the query iterator, against Warp 1.19's candidate sequences
(``hashgrid_reference.py``, from ``make_hashgrid_reference.py``) and against brute force on
random point sets (true neighbours within the radius are among the candidates, and the
candidates are exactly the points of the cells a query visits)."""
import numba
import numpy as np
import pytest

from tests.geometry import hashgrid_reference as W
from tests.geometry.drivers import digest
from tests.geometry.make_hashgrid_reference import MAX_CAND, cases
from weft.native.geometry import hashgrid as H
from weft.native.geometry.hashgrid import HashGrid

CASES = cases()


def loop_query(begin, nxt, grid, keys, inv, q, r, group, filt, out, counts):
    for t in range(q.shape[0]):
        state = begin(grid, keys, inv, q[t, 0], q[t, 1], q[t, 2], r, group, filt)
        n = 0
        while True:
            ok, idx, state = nxt(grid, keys, state)
            if not ok:
                break
            if n < out.shape[1]:
                out[t, n] = idx
            n += 1
        counts[t] = n


jit_query = numba.njit(cache=False)(loop_query)


def run_queries(hq, grid, q, r, group=0, filt=0, compiled=True):
    out = np.full((len(q), MAX_CAND), -1, np.int32)
    counts = np.zeros(len(q), np.int64)
    name = {np.float32: "hash_grid_query", np.float64: "hash_grid_query_d",
            np.float16: "hash_grid_query_h"}[grid.dtype.type]
    inv, r = grid.cell_width_inv, grid.dtype.type(r)
    if grid.dtype == np.float16:  # the half cores take halves held as float32
        inv, q, r = np.float32(inv), q.astype(np.float32), np.float32(r)
    args = (*grid.arrays(), inv, q, r, group, filt, out, counts)
    if compiled:
        jit_query(hq[name], hq["hash_grid_query_next"], *args)
    else:
        loop_query(getattr(H, name), H.hash_grid_query_next, *args)
    seqs = [out[t, :counts[t]] for t in range(len(q))]
    return counts, seqs


def build(c):
    g = HashGrid(*c["dims"], dtype=c["dtype"])
    g.build(c["points"], c["radius"], groups=c["groups"])
    return g


@pytest.mark.parametrize("compiled", [True, False], ids=["jit", "python"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_candidates_in_warps_order(hq, name, compiled):
    c = CASES[name]
    g = build(c)
    q = c["queries"] if compiled else c["queries"][:12]
    for grp in c["query_groups"] or (None,):
        key = name if grp is None else f"{name}_G{grp}".replace("-", "M")
        counts, seqs = run_queries(hq, g, q, c["query_radius"], 0 if grp is None else grp,
                                   0 if grp is None else 1, compiled)
        want = getattr(W, f"{key}_COUNTS")
        np.testing.assert_array_equal(counts, want[:len(q)])
        np.testing.assert_array_equal(seqs[0], getattr(W, f"{key}_FIRST"))
        if compiled:
            assert digest(np.concatenate(seqs).astype(np.int32)) == getattr(W, f"{key}_DIGEST")
    ids = np.array([hq["hash_grid_point_id"](g.grid, i) for i in range(len(c["points"]))],
                   np.int32)
    assert digest(ids) == getattr(W, f"{name}_POINT_IDS_DIGEST")


def _cell_of(g, p):
    """Independent numpy computation of the physical cells of points ``p``."""
    v = (p * g.cell_width_inv).astype(np.float64)
    with np.errstate(invalid="ignore"):
        f = np.floor(v)
        f = np.where(np.isnan(f), 0, np.clip(f, -2.0 ** 31, 2.0 ** 31 - 2)).astype(np.int64)
    dims = np.array([g.dim_x, g.dim_y, g.dim_z])
    m = f % dims
    return m[:, 2] * g.dim_x * g.dim_y + m[:, 1] * g.dim_x + m[:, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("seed", range(4))
def test_against_brute_force(hq, seed, dtype):
    """Every precision: cells and visited cells computed by numpy in the grid's own arithmetic
    (numpy's float16 operations round each result to half, as Warp's ``half``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    dims = tuple(int(d) for d in rng.integers(1, 24, 3))
    scale = float(rng.uniform(0.5, 20))
    pts = (rng.uniform(-1, 1, (n, 3)) * scale).astype(dtype)
    pts[rng.integers(0, n, n // 10)] = pts[0]              # duplicates
    radius = float(rng.uniform(0.05, 3.0))
    g = HashGrid(*dims, dtype=dtype)
    g.build(pts, radius)
    # the build: a stable sort of the points by cell
    cells = _cell_of(g, pts)
    np.testing.assert_array_equal(g.point_ids, np.argsort(cells, kind="stable"))
    np.testing.assert_array_equal(g.point_cells, cells[g.point_ids])
    for c in np.unique(cells):
        run = np.nonzero(cells[g.point_ids] == c)[0]
        assert (g.cell_starts[c], g.cell_ends[c]) == (run[0], run[-1] + 1)
    empty = np.setdiff1d(np.arange(g.n_cells), cells)
    assert np.all(g.cell_starts[empty] == 0) and np.all(g.cell_ends[empty] == 0)
    # the queries
    q = np.concatenate([pts[:50], (rng.uniform(-1.5, 1.5, (50, 3)) * scale)]).astype(dtype)
    qr = float(dtype(rng.uniform(0.0, 2.5 * radius)))
    # half rounding of coordinates near 2 * scale moves cell bounds by a few of their ulps
    tol = 4 * float(np.spacing(np.float16(2 * scale + 2 * qr))) if dtype == np.float16 else 0
    counts, seqs = run_queries(hq, g, q, qr)
    for t in range(len(q)):
        cand = seqs[t]
        assert len(np.unique(cand)) == len(cand)             # no cell visited twice
        d = np.linalg.norm(pts.astype(np.float64) - q[t], axis=1)
        within = np.nonzero(d <= qr * (1 - 1e-6) - tol)[0]
        assert set(within) <= set(cand.tolist())
        lo = np.floor(((q[t] - dtype(qr)) * g.cell_width_inv).astype(np.float64))
        hi = np.floor(((q[t] + dtype(qr)) * g.cell_width_inv).astype(np.float64))
        dims_a = np.array(dims)
        hi = np.where(hi - lo >= dims_a, lo + dims_a - 1, hi)
        xs, ys, zs = (np.arange(lo[k], hi[k] + 1).astype(np.int64) % dims_a[k] for k in range(3))
        visit = set((zz * dims[0] * dims[1] + yy * dims[0] + xx) for zz in zs for yy in ys
                    for xx in xs)
        assert sorted(cand.tolist()) == sorted(np.nonzero(np.isin(cells, list(visit)))[0])


def test_groups_partition_cells(hq):
    rng = np.random.default_rng(9)
    pts = rng.uniform(-3, 3, (2000, 3)).astype(np.float32)
    groups = rng.integers(-3, 4, 2000).astype(np.int32)
    g = HashGrid(8, 8, 8)
    g.build(pts, 0.6, groups=groups)
    assert np.all(np.diff(g.point_keys) >= 0)
    cells = _cell_of(g, pts)
    key = (cells.astype(np.int64) << 32) | (groups.astype(np.int64) & 0xFFFFFFFF)
    np.testing.assert_array_equal(g.point_ids, np.argsort(key, kind="stable"))
    q = pts[:40]
    _, all_seqs = run_queries(hq, g, q, 0.6)
    for grp in (-3, 0, 3, 17):
        _, seqs = run_queries(hq, g, q, 0.6, grp, 1)
        for t in range(len(q)):
            assert np.all(groups[seqs[t]] == grp)
            np.testing.assert_array_equal(
                np.sort(seqs[t]), np.sort(all_seqs[t][groups[all_seqs[t]] == grp]))
    # a rebuild without groups forgets them: a group filter then keeps every point
    g.build(pts, 0.6)
    _, s2 = run_queries(hq, g, q, 0.6, 1, 1)
    assert sum(map(len, s2)) == sum(map(len, all_seqs))


def test_edge_cases(hq):
    g = HashGrid(4, 5, 6)
    q = np.zeros((1, 3), np.float32)
    counts, _ = run_queries(hq, g, q, 1.0)                   # never built
    assert counts[0] == W.UNBUILT_COUNT == 0
    assert hq["hash_grid_point_id"](g.grid, 0) == -1
    g.build(np.zeros((0, 3), np.float32), 1.0)               # empty
    assert run_queries(hq, g, q, 5.0)[0][0] == 0
    p = np.array([[np.nan, 0, 0], [np.inf, 1, 1], [-np.inf, 2, 2], [1e30, 0, 0],
                  [0.5, 0.5, 0.5]], np.float32)
    g.build(p, 1.0)                                          # non-finite points are bucketed
    np.testing.assert_array_equal(np.sort(g.point_ids), np.arange(5))
    counts, seqs = run_queries(hq, g, np.array([[0.1, 0.1, 0.1]], np.float32), 0.2)
    assert 4 in seqs[0].tolist() and 0 in seqs[0].tolist()   # NaN -> virtual cell 0
    g.reserve(10000)
    big = np.random.default_rng(0).uniform(0, 4, (8000, 3)).astype(np.float32)
    grid = g.grid
    g.build(big, 1.0)
    assert g.grid is grid and g.num_points == 8000            # no reallocation
    g.build(big[:10], 1.0)                                   # a smaller rebuild
    assert sorted(g.point_ids.tolist()) == list(range(10))
    assert hq["hash_grid_point_id"](g.grid, 10) == -1
    with pytest.raises(RuntimeError):
        HashGrid(0, 1, 1)
    with pytest.raises(RuntimeError):
        HashGrid(2048, 2048, 1024)
    with pytest.raises(TypeError):
        HashGrid(1.5, 1, 1)
    with pytest.raises(ValueError):
        g.build(big, 0.0)
    with pytest.raises(TypeError):
        g.build(big.astype(np.float64), 1.0)


def test_large_build_is_parallel_and_stable():
    rng = np.random.default_rng(5)
    pts = rng.uniform(-10, 10, (60000, 3)).astype(np.float32)
    g = HashGrid(32, 32, 32)
    g.build(pts, 0.3)
    cells = _cell_of(g, pts)
    np.testing.assert_array_equal(g.point_ids, np.argsort(cells, kind="stable"))
