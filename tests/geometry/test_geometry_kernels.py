"""wp.Volume and wp.HashGrid in kernels: the builtins reach the objects by id and give the
query cores' values (the cores are checked bit for bit against Warp 1.19 in the other tests of
this folder); samples differentiate with respect to the sample point (reverse and forward mode,
against the analytic gradient of the trilinear interpolation and finite differences); hash-grid
neighbour sums against brute force, with gradients against the analytic ones; bad ids are
launch errors; the CUDA target under the simulator gives the CPU's values."""
import gc

import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError, LaunchError

from .conftest import path


@pytest.fixture(scope="module")
def torus():
    return wp.Volume.load_from_nvdb(path("torus.nvdb"))


@pytest.fixture(scope="module")
def plain():
    """The query cores as plain Python (the reference the kernels must equal)."""
    from weft.native.geometry import volume_query
    return volume_query.compile_for(lambda f: f)


def inside_points(vol, n, seed=0):
    lo, hi = (np.array(b, np.float32) for b in vol.get_world_bounds())
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, 3)).astype(np.float32)


@wp.kernel
def sample_world(v: wp.uint64, pts: wp.array(dtype=wp.vec3), mode: int,
                 out: wp.array(dtype=float), uvw_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    uvw = wp.volume_world_to_index(v, pts[i])
    uvw_out[i] = uvw
    out[i] = wp.volume_sample_f(v, uvw, mode)


@pytest.mark.parametrize("mode", [wp.Volume.CLOSEST, wp.Volume.LINEAR])
def test_samples_and_maps_equal_the_cores(torus, plain, mode):
    p = inside_points(torus, 64)
    pts = wp.array(p, dtype=wp.vec3)
    out = wp.zeros(64, dtype=float)
    uvw = wp.zeros(64, dtype=wp.vec3)
    wp.launch(sample_world, 64, inputs=[torus.id, pts, mode, out, uvw])
    tree, values = torus.arrays()
    for n in range(64):
        want_uvw = plain["volume_world_to_index"](torus.xform_f, *p[n])
        np.testing.assert_array_equal(uvw.numpy()[n], np.array(want_uvw, np.float32))
        want = plain["volume_sample_f"](tree, values, torus.gtype, *want_uvw, mode)
        assert out.numpy()[n] == np.float32(want)
    assert np.count_nonzero(out.numpy()) > 10  # the points do reach the surface band


@wp.kernel
def lookups(v: wp.uint64, ijk: wp.array(dtype=wp.vec3i), f: wp.array(dtype=float),
            w: wp.array(dtype=wp.vec3)):
    n = wp.tid()
    c = ijk[n]
    f[n] = wp.volume_lookup_f(v, c[0], c[1], c[2])
    w[n] = wp.volume_index_to_world(v, wp.vec3(float(c[0]), float(c[1]), float(c[2])))


def test_lookups_stores_and_index_to_world(torus, plain):
    rng = np.random.default_rng(3)
    (lo, hi) = torus.get_index_bounds()
    ijk = rng.integers(lo, np.array(hi) + 1, size=(32, 3)).astype(np.int32)
    f = wp.zeros(32, dtype=float)
    w = wp.zeros(32, dtype=wp.vec3)
    wp.launch(lookups, 32, inputs=[torus.id, wp.array(ijk, dtype=wp.vec3i), f, w])
    tree, values = torus.arrays()
    for n in range(32):
        assert f.numpy()[n] == plain["volume_lookup_f"](tree, values, torus.gtype, *ijk[n])
        np.testing.assert_array_equal(w.numpy()[n], np.array(
            plain["volume_index_to_world"](torus.xform_f, *ijk[n]), np.float32))


@wp.kernel
def store_then_lookup(v: wp.uint64, out: wp.array(dtype=float)):
    wp.volume_store_f(v, 1, 2, 3, 7.5)
    out[0] = wp.volume_lookup_f(v, 1, 2, 3)
    out[1] = wp.volume_lookup(v, 1, 2, 3, dtype=float)


def test_store_writes_a_leaf_voxel():
    vol = wp.Volume.allocate((-4.0, -4.0, -4.0), (4.0, 4.0, 4.0), voxel_size=1.0, bg_value=0.0)
    out = wp.zeros(2, dtype=float)
    wp.launch(store_then_lookup, 1, inputs=[vol.id, out])
    np.testing.assert_array_equal(out.numpy(), [7.5, 7.5])


@wp.kernel
def vec_and_int(v3: wp.uint64, vi: wp.uint64, uvw: wp.array(dtype=wp.vec3),
                out3: wp.array(dtype=wp.vec3), outi: wp.array(dtype=int)):
    n = wp.tid()
    out3[n] = wp.volume_sample_v(v3, uvw[n], wp.Volume.LINEAR)
    outi[n] = wp.volume_sample(vi, uvw[n], wp.Volume.CLOSEST, dtype=int)


def test_vector_and_integer_grids(plain):
    vec = wp.Volume.load_from_nvdb(path("test_vec_grid.nvdb"))
    ints = wp.Volume.load_from_nvdb(path("test_int32_grid.nvdb"))
    rng = np.random.default_rng(5)
    lo, hi = (np.array(b, np.float32) for b in vec.get_index_bounds())
    u = rng.uniform(lo, hi, size=(16, 3)).astype(np.float32)
    o3 = wp.zeros(16, dtype=wp.vec3)
    oi = wp.zeros(16, dtype=int)
    wp.launch(vec_and_int, 16, inputs=[vec.id, ints.id, wp.array(u, dtype=wp.vec3), o3, oi])
    for n in range(16):
        t, vals = vec.arrays()
        want = plain["volume_sample_v"](t, vals, vec.gtype, *u[n], 1)
        np.testing.assert_array_equal(o3.numpy()[n], np.array(want, np.float32))
        t, vals = ints.arrays()
        assert oi.numpy()[n] == plain["volume_sample_i"](t, vals, ints.gtype, *u[n])


@wp.kernel
def sample_and_grad(v: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float),
                    grads: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    uvw = wp.volume_world_to_index(v, pts[i])
    g = wp.vec3()
    out[i] = wp.volume_sample_grad_f(v, uvw, wp.Volume.LINEAR, g)
    grads[i] = g


def test_gradients_of_a_sample_in_reverse_and_forward_mode(torus, plain):
    n = 48
    p = inside_points(torus, n, seed=7)
    pts = wp.array(p, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    grads = wp.zeros(n, dtype=wp.vec3)
    tape = wp.Tape()
    with tape:
        wp.launch(sample_and_grad, n, inputs=[torus.id, pts, out, grads])
    tape.backward(grads={out: np.ones(n, np.float32)})
    tree, values = torus.arrays()
    inv = torus.xform_f[9:18].reshape(3, 3).astype(np.float64)  # d uvw / d world
    want = np.zeros((n, 3))
    for k in range(n):
        uvw = plain["volume_world_to_index"](torus.xform_f, *p[k])
        _, g = plain["volume_sample_grad_f"](tree, values, torus.gtype, *uvw, 1)
        np.testing.assert_array_equal(grads.numpy()[k], np.array(g, np.float32))
        want[k] = inv.T @ np.array(g, np.float64)  # the chain rule through the map
    np.testing.assert_allclose(pts.grad.numpy(), want, rtol=1e-5, atol=1e-6)
    assert np.abs(want).max() > 0.1
    # forward mode: the directional derivative along x of every point
    t = wp.jvp(sample_and_grad, n, inputs=[torus.id, pts], outputs=[out, grads],
               tangents={pts: np.tile(np.float32([1.0, 0.0, 0.0]), (n, 1))})
    np.testing.assert_allclose(t[out].numpy(), want[:, 0], rtol=1e-5, atol=1e-6)
    # finite differences (float64 arithmetic on the float32 samples; points inside cells)
    eps = 1e-3
    for axis in range(3):
        lo_p, hi_p = p.copy(), p.copy()
        lo_p[:, axis] -= eps
        hi_p[:, axis] += eps
        vals = []
        for q in (hi_p, lo_p):
            o = wp.zeros(n, dtype=float)
            wp.launch(sample_and_grad, n, inputs=[torus.id, wp.array(q, dtype=wp.vec3), o,
                                                  wp.zeros(n, dtype=wp.vec3)])
            vals.append(o.numpy().astype(np.float64))
        fd = (vals[0] - vals[1]) / (2 * eps)
        same_cell = np.abs(fd - want[:, axis]) < 0.05 * (1 + np.abs(want[:, axis]))
        assert same_cell.mean() > 0.8  # the rest straddle a cell boundary within eps


@wp.kernel
def neighbour_count(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float,
                    out: wp.array(dtype=int)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    x = pts[i]
    c = int(0)
    for j in wp.hash_grid_query(grid, x, r):
        if wp.length(pts[j] - x) <= r:
            c += 1
    out[i] = c


@wp.kernel
def pair_energy(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float,
                e: wp.array(dtype=float)):
    i = wp.tid()
    x = pts[i]
    query = wp.hash_grid_query(grid, x, r)
    j = int(0)
    s = float(0.0)
    while wp.hash_grid_query_next(query, j):
        d = wp.length(pts[j] - x)
        if d < r and j != i:
            s += (r - d) * (r - d)
    wp.atomic_add(e, 0, s)


def brute_counts(p, r):
    d = np.linalg.norm(p[:, None].astype(np.float64) - p[None], axis=2)
    return d, (d <= r).sum(1)


def test_hash_grid_neighbours_and_rebuilds_against_brute_force():
    rng = np.random.default_rng(1)
    grid = wp.HashGrid(8, 8, 8)
    for n, r in ((150, 0.7), (400, 0.5)):  # the second build grows the grid's buffers
        p = rng.uniform(0, 4, size=(n, 3)).astype(np.float32)
        pts = wp.array(p, dtype=wp.vec3)
        grid.build(pts, r)
        out = wp.zeros(n, dtype=int)
        wp.launch(neighbour_count, n, inputs=[grid.id, pts, r, out])
        _, want = brute_counts(p, r)
        np.testing.assert_array_equal(out.numpy(), want)


def test_hash_grid_neighbour_sum_gradient_is_exact():
    n, r = 120, 0.8
    p = np.random.default_rng(2).uniform(0, 3, size=(n, 3)).astype(np.float32)
    pts = wp.array(p, dtype=wp.vec3, requires_grad=True)
    grid = wp.HashGrid(16, 16, 16)
    grid.build(pts, r)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(pair_energy, n, inputs=[grid.id, pts, r, e])
    tape.backward(e)
    d, _ = brute_counts(p, r)
    m = (d < r) & ~np.eye(n, dtype=bool)
    assert e.numpy()[0] == pytest.approx(((r - d[m]) ** 2).sum(), rel=1e-5)
    want = np.zeros((n, 3))
    for i in range(n):
        for j in np.nonzero(m[i])[0]:  # both (i, j) and (j, i) terms move x_i
            want[i] += -4.0 * (r - d[i, j]) * (p[i] - p[j]) / d[i, j]
    np.testing.assert_allclose(pts.grad.numpy(), want, rtol=1e-4, atol=1e-4)


def test_ids_are_checked_at_launch(torus):
    out = wp.zeros(1, dtype=float)
    g = wp.HashGrid(2, 2, 2)
    with pytest.raises(LaunchError, match="id of a wp.HashGrid, not of a wp.Volume"):
        wp.launch(store_then_lookup, 1, inputs=[g.id, out])
    with pytest.raises(LaunchError, match="not the id of a live wp.Volume"):
        wp.launch(store_then_lookup, 1, inputs=[12345, out])
    vol = wp.Volume.allocate((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), voxel_size=1.0)
    vid = vol.id
    del vol
    gc.collect()
    with pytest.raises(LaunchError, match="has been freed"):
        wp.launch(store_then_lookup, 1, inputs=[vid, out])


def test_wrong_argument_types_are_located_kernel_errors():
    @wp.kernel
    def bad(v: wp.uint64, out: wp.array(dtype=float)):
        out[0] = wp.volume_sample_f(v, 1.0, wp.Volume.LINEAR)

    with pytest.raises(KernelError, match="volume_sample_f"):
        wp.launch(bad, 1, inputs=[0, wp.zeros(1, dtype=float)])


def test_cuda_target_under_the_simulator_equals_the_cpu(torus):
    pytest.importorskip("numba.cuda")
    from numba import config
    if not config.ENABLE_CUDASIM:
        pytest.skip("runs under Numba's CUDA simulator (the test session's default)")
    n = 8
    p = inside_points(torus, n, seed=11)
    outs = {}
    for dev in ("cpu", "cuda"):
        out = wp.zeros(n, dtype=float, device=dev)
        wp.launch(sample_world, n, inputs=[torus.id, wp.array(p, dtype=wp.vec3, device=dev),
                                           1, out, wp.zeros(n, dtype=wp.vec3, device=dev)],
                  device=dev)
        outs[dev] = out.numpy()
    np.testing.assert_array_equal(outs["cpu"], outs["cuda"])


@pytest.mark.ptx
def test_geometry_kernels_compile_to_ptx_for_hopper():
    import os
    import subprocess
    import sys
    pytest.importorskip("numba.cuda")
    script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "geometry_ptx.py")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env,
                       timeout=900)
    if "NvvmSupportError" in r.stderr or "libNVVM cannot be found" in r.stderr:
        pytest.skip("NVVM is not installed (pip install 'numba-cuda[cu13]')")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln.split() for ln in r.stdout.splitlines()]
    assert {(k, e) for k, e, _ in lines} == {(k, e) for k in ("vol", "hg", "mesh")
                                            for e in ("forward", "adjoint", "tangent")}
    assert all(ok == "True" for _, _, ok in lines)


@wp.kernel
def sample_vec(v: wp.uint64, uvw: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.volume_sample_v(v, uvw[i], wp.Volume.LINEAR)


def test_vector_sample_derivatives_are_the_trilinear_jacobian(plain):
    vec = wp.Volume.load_from_nvdb(path("test_vec_grid.nvdb"))
    n = 16
    lo, hi = (np.array(b, np.float32) for b in vec.get_index_bounds())
    u = np.random.default_rng(9).uniform(lo, hi, size=(n, 3)).astype(np.float32)
    w = np.random.default_rng(10).standard_normal((n, 3)).astype(np.float32)
    uvw = wp.array(u, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sample_vec, n, inputs=[vec.id, uvw, out])
    tape.backward(grads={out: w})
    dirs = np.random.default_rng(11).standard_normal((n, 3)).astype(np.float32)
    t = wp.jvp(sample_vec, n, inputs=[vec.id, uvw], outputs=[out], tangents={uvw: dirs})
    tree, values = vec.arrays()
    for k in range(n):
        _, jac = plain["volume_sample_grad_v3"](tree, values, vec.gtype, plain["GRID_VEC3F"],
                                                np.float32(0), *u[k], 1)
        J = np.array(jac, np.float64).reshape(3, 3)  # d value_r / d uvw_c
        np.testing.assert_allclose(uvw.grad.numpy()[k], J.T @ w[k], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(t[out].numpy()[k], J @ dirs[k], rtol=1e-5, atol=1e-5)
