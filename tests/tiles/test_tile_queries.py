"""A block's BVH and mesh queries (``tile_bvh_query_aabb``/``_ray``, ``tile_mesh_query_aabb``,
their ``_next`` and ``tile_query_valid``; weft/stdlib/tiles/queries.py).

Expected sets are worked out with numpy from the boxes and triangles (overlap and slab tests),
not from another query: each item is reported exactly once, one block at a time or with
``block_dim`` cooperative lanes, and the loop ends after the first step that finds nothing.
"""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError


@wp.kernel
def bvh_boxes(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array(dtype=int),
              steps: wp.array(dtype=int)):
    b, lane = wp.tid()
    query = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(query):
        item = wp.untile(wp.tile_bvh_query_next(query))
        if item >= 0:
            wp.atomic_add(hits, item, 1)
        if lane == 0:
            wp.atomic_add(steps, b, 1)


@wp.kernel
def bvh_ray(bvh: wp.uint64, start: wp.vec3, d: wp.vec3, hits: wp.array(dtype=int)):
    query = wp.tile_bvh_query_ray(bvh, start, d)
    while wp.tile_query_valid(query):
        item = wp.untile(wp.tile_bvh_query_next(query))
        if item >= 0:
            wp.atomic_add(hits, item, 1)


@wp.kernel
def mesh_boxes(mesh: wp.uint64, lo: wp.vec3, hi: wp.vec3, hits: wp.array(dtype=int)):
    query = wp.tile_mesh_query_aabb(mesh, lo, hi)
    while wp.tile_query_valid(query):
        t = wp.tile_mesh_query_aabb_next(query)
        face = wp.untile(t)
        if face >= 0:
            wp.atomic_add(hits, face, 1)


@wp.func
def plus_one(x: int):
    return x + 1


@wp.kernel
def bvh_sum_of_items(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, total: wp.array(dtype=int)):
    # the step's tile used as a tile: the block's sum of its found items + 1 (-1, none: 0)
    b = wp.tid()
    query = wp.bvh_query_aabb_tiled(bvh, lo, hi)   # Warp's former names
    while wp.tile_query_valid(query):
        t = wp.bvh_query_next_tiled(query)
        s = wp.tile_sum(wp.tile_map(plus_one, t))
        wp.tile_atomic_add(total, s, offset=b)


def _boxes(n=120, seed=3, size=2.0):
    rng = np.random.default_rng(seed)
    lo = (rng.random((n, 3)) * 6.0).astype(np.float32)
    hi = (lo + rng.random((n, 3)) * size).astype(np.float32)
    return lo, hi


def _overlap(lo, hi, qlo, qhi):
    return np.all((lo <= np.asarray(qhi)) & (hi >= np.asarray(qlo)), axis=1)


def _ray_hits(lo, hi, o, d):
    """Slab test in float64: the one-sided ray meets the box."""
    o, d = np.asarray(o, np.float64), np.asarray(d, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t0 = (lo.astype(np.float64) - o) * inv
        t1 = (hi.astype(np.float64) - o) * inv
    tmin = np.max(np.minimum(t0, t1), axis=1)
    tmax = np.min(np.maximum(t0, t1), axis=1)
    return (tmax >= np.maximum(tmin, 0.0))


@pytest.fixture(params=[False, True], ids=["block", "cpu_blocks"])
def lanes(request):
    prev = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = request.param
    yield request.param
    wp.config.enable_cpu_blocks = prev


@pytest.mark.parametrize("block_dim", [1, 8, 64])
def test_bvh_aabb_each_item_once_and_the_steps(lanes, block_dim):
    lo, hi = _boxes()
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    qlo, qhi = (1.5, 1.0, 2.0), (4.5, 5.0, 4.0)
    expected = _overlap(lo, hi, qlo, qhi)
    assert 10 < expected.sum() < 100
    blocks = 3
    hits = wp.zeros(len(lo), dtype=int)
    steps = wp.zeros(blocks, dtype=int)
    wp.launch_tiled(bvh_boxes, dim=[blocks], inputs=[bvh.id, wp.vec3(*qlo), wp.vec3(*qhi), hits,
                                                       steps], block_dim=block_dim)
    np.testing.assert_array_equal(hits.numpy(), blocks * expected.astype(int))
    # one result per lane and step (a block is one lane without cooperative blocks), then one
    # step that finds nothing ends the loop
    lanes_per_block = block_dim if lanes else 1
    n = int(expected.sum())
    np.testing.assert_array_equal(steps.numpy(), [-(-n // lanes_per_block) + 1] * blocks)


@pytest.mark.parametrize("block_dim", [1, 16])
def test_bvh_ray(lanes, block_dim):
    lo, hi = _boxes(seed=7, size=4.0)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    o, d = (-1.0, -0.5, -1.2), (1.0, 1.1, 0.9)
    expected = _ray_hits(lo, hi, o, d)
    assert expected.sum() > 5
    hits = wp.zeros(len(lo), dtype=int)
    wp.launch_tiled(bvh_ray, dim=[2], inputs=[bvh.id, wp.vec3(*o), wp.vec3(*d), hits],
                    block_dim=block_dim)
    np.testing.assert_array_equal(hits.numpy(), 2 * expected.astype(int))


def test_mesh_aabb_faces(lanes):
    # a grid of triangles in the z = 0 plane, two per unit square
    m = 6
    xs, ys = np.meshgrid(np.arange(m + 1), np.arange(m + 1), indexing="ij")
    pts = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1).astype(np.float32)
    idx = []
    for i in range(m):
        for j in range(m):
            a, b, c, e = i * (m + 1) + j, (i + 1) * (m + 1) + j, i * (m + 1) + j + 1, \
                (i + 1) * (m + 1) + j + 1
            idx += [a, b, c, b, e, c]
    idx = np.array(idx, dtype=np.int32)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3), indices=wp.array(idx, dtype=wp.int32))
    tri = pts[idx.reshape(-1, 3)]
    qlo, qhi = (1.2, 2.5, -0.5), (3.7, 4.1, 0.5)
    expected = _overlap(tri.min(axis=1), tri.max(axis=1), qlo, qhi)
    hits = wp.zeros(len(tri), dtype=int)
    wp.launch_tiled(mesh_boxes, dim=[1], inputs=[mesh.id, wp.vec3(*qlo), wp.vec3(*qhi), hits],
                    block_dim=8)
    np.testing.assert_array_equal(hits.numpy(), expected.astype(int))


@pytest.mark.filterwarnings("ignore:wp.bvh_query:DeprecationWarning")  # the former names
@pytest.mark.parametrize("block_dim", [1, 8])
def test_the_step_is_a_tile(lanes, block_dim):
    lo, hi = _boxes(seed=11)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    qlo, qhi = (2.0, 2.0, 2.0), (5.0, 5.0, 5.0)
    found = np.nonzero(_overlap(lo, hi, qlo, qhi))[0]
    total = wp.zeros(2, dtype=int)
    wp.launch_tiled(bvh_sum_of_items, dim=[2], inputs=[bvh.id, wp.vec3(*qlo), wp.vec3(*qhi),
                                                         total], block_dim=block_dim)
    np.testing.assert_array_equal(total.numpy(), [int((found + 1).sum())] * 2)


def test_refusals():
    def not_a_name(bvh: wp.uint64, out: wp.array(dtype=int)):
        t = wp.tile_bvh_query_next(wp.tile_bvh_query_aabb(bvh, wp.vec3(0.0), wp.vec3(1.0)))
        out[0] = wp.untile(t)

    def scalar_query(bvh: wp.uint64, out: wp.array(dtype=int)):
        q = wp.bvh_query_aabb(bvh, wp.vec3(0.0), wp.vec3(1.0))
        t = wp.tile_bvh_query_next(q)
        out[0] = wp.untile(t)

    def wrong_kind(mesh: wp.uint64, out: wp.array(dtype=int)):
        q = wp.tile_mesh_query_aabb(mesh, wp.vec3(0.0), wp.vec3(1.0))
        t = wp.tile_bvh_query_next(q)
        out[0] = wp.untile(t)

    out = wp.zeros(1, dtype=int)
    for fn, msg in ((not_a_name, "takes the variable"), (scalar_query, "not a tiled BVH query"),
                    (wrong_kind, "not a tiled BVH query")):
        k = wp.kernel(fn)
        with pytest.raises(KernelError, match=msg):
            wp.launch_tiled(k, dim=[1], inputs=[wp.uint64(0), out], block_dim=1)


def test_warps_former_names_warn_at_the_kernels_line():
    # Warp 1.18 renamed bvh_query_aabb_tiled & co.; compiling the old names warns (Warp too),
    # at the line of the kernel that uses them
    def former(bvh: wp.uint64, hits: wp.array(dtype=int)):
        q = wp.bvh_query_aabb_tiled(bvh, wp.vec3(0.0), wp.vec3(1.0))
        while wp.tile_query_valid(q):
            i = wp.untile(wp.bvh_query_next_tiled(q))
            if i >= 0:
                hits[i] = 1

    import inspect

    from weft.transpiler import pipeline
    from weft.transpiler.state import CompileOptions, CompileState
    first = inspect.getsourcelines(former)[1]
    k = wp.kernel(former, module="unique")
    with pytest.warns(DeprecationWarning) as record:   # a transpile (no cache in between)
        pipeline.run(CompileState(roots=[k], options=CompileOptions.for_device(
            "cpu", "release", False)))
    got = {(str(w.message).split("()")[0], w.lineno) for w in record
           if issubclass(w.category, DeprecationWarning) and w.filename == __file__}
    assert ("wp.bvh_query_aabb_tiled", first + 1) in got
    assert ("wp.bvh_query_next_tiled", first + 3) in got


@wp.kernel
def squares_of_found(bvh: wp.uint64, x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    q = wp.tile_bvh_query_aabb(bvh, wp.vec3(0.0), wp.vec3(3.0))
    while wp.tile_query_valid(q):
        i = wp.untile(wp.tile_bvh_query_next(q))
        if i >= 0:
            wp.atomic_add(loss, 0, x[i] * x[i])


def test_gradients_through_a_blocks_query(lanes):
    # the query's results are discrete; what the loop computes from them is differentiated
    lo, hi = _boxes(n=40, seed=1, size=0.5)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    hit = _overlap(lo, hi, (0.0, 0.0, 0.0), (3.0, 3.0, 3.0))
    xv = np.random.default_rng(2).random(40).astype(np.float32)
    x = wp.array(xv, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(squares_of_found, dim=[1], inputs=[bvh.id, x, loss], block_dim=8)
    tape.backward(loss)
    np.testing.assert_allclose(loss.numpy()[0], (xv[hit].astype(np.float64) ** 2).sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * xv * hit, rtol=1e-6)
    # forward mode over the same recording: the loss's tangent along dx
    dx = np.random.default_rng(3).random(40).astype(np.float32)
    dloss = tape.forward({x: dx})[loss].numpy()[0]
    np.testing.assert_allclose(dloss, (2.0 * xv * dx)[hit].astype(np.float64).sum(), rtol=1e-5)
