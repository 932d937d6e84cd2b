"""Cooperative CPU blocks (``wp.config.enable_cpu_blocks = True``): ``block_dim`` lanes per
tile block on the CPU, as Warp's fibers (``weft/transpiler/lanes.py``; docs/tiles.md).

Values are worked out with numpy from the lanes' own indices; a kernel whose lanes never
interact runs one lane per block as without the option, gradients included.
"""
import numpy as np
import pytest

import weft as wp

B = 8
CAP = wp.constant(16)


@wp.kernel
def gather_sum(x: wp.array(dtype=float), out: wp.array(dtype=float), lanes: wp.array(dtype=int)):
    i, lane = wp.tid()
    v = x[i * wp.block_dim() + lane] * 2.0
    t = wp.tile(v)                      # every lane's v
    s = wp.tile_sum(t)
    out[i * wp.block_dim() + lane] = s[0] + float(lane)
    lanes[i] = wp.block_dim()


def test_gather_and_block_dim(cpu_blocks):
    x_np = np.arange(3 * B, dtype=np.float32) * 0.5
    x = wp.array(x_np)
    out = wp.zeros(3 * B, dtype=float)
    lanes = wp.zeros(3, dtype=int)
    wp.launch_tiled(gather_sum, dim=[3], inputs=[x, out, lanes], block_dim=B)
    sums = (2.0 * x_np).reshape(3, B).sum(axis=1)
    expected = np.repeat(sums, B) + np.tile(np.arange(B), 3)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(lanes.numpy(), [B] * 3)


@wp.kernel
def untile_scan(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i, lane = wp.tid()
    t = wp.tile_load(x, shape=B, offset=i * B)
    c = wp.tile_scan_inclusive(t)
    mine = wp.untile(c)                 # this lane's element
    out[i * B + lane] = mine * float(lane + 1)


def test_untile_gives_each_lane_its_element(cpu_blocks):
    x_np = np.linspace(1.0, 2.0, 2 * B, dtype=np.float32)
    x = wp.array(x_np)
    out = wp.zeros(2 * B, dtype=float)
    wp.launch_tiled(untile_scan, dim=[2], inputs=[x, out], block_dim=B)
    scan = np.cumsum(x_np.reshape(2, B), axis=1)
    np.testing.assert_allclose(out.numpy(), (scan * np.arange(1, B + 1)).ravel(), rtol=1e-6)


@wp.kernel
def survivors(count: wp.array(dtype=int), popped: wp.array(dtype=int)):
    tid = wp.tid()
    lane = tid % B
    if lane % 3 == 0:
        return                          # these lanes leave the block's later barriers
    s = wp.tile_stack(capacity=CAP, dtype=int)
    wp.tile_stack_push(s, tid * 10, True)
    count[tid] = wp.tile_stack_count(s)
    val, slot = wp.tile_stack_pop(s)
    if slot >= 0:
        popped[tid] = val


def test_stack_counts_lanes_of_partial_blocks(cpu_blocks):
    n = 2 * B + 3                       # the third block has 3 lanes
    count = wp.full(n, -1, dtype=int)
    popped = wp.full(n, -1, dtype=int)
    wp.launch(survivors, dim=n, inputs=[count, popped], block_dim=B)
    c = count.numpy()
    p = popped.numpy()
    for start in range(0, n, B):
        tids = [t for t in range(start, min(start + B, n)) if (t % B) % 3 != 0]
        np.testing.assert_array_equal(c[tids], len(tids))
        # every pushed value comes back once, to some surviving lane of the same block
        assert sorted(p[tids].tolist()) == sorted(10 * t for t in tids)
        others = [t for t in range(start, min(start + B, n)) if t not in tids]
        np.testing.assert_array_equal(c[others], -1)


@wp.kernel
def lanes_write_a_tile(bits: wp.array(dtype=wp.uint32), out: wp.array(dtype=wp.uint32),
                       firsts: wp.array(dtype=float)):
    i, lane = wp.tid()
    s = wp.tile_zeros(shape=1, dtype=wp.uint32)
    s[0] |= bits[i * B + lane]          # lanes OR into one element in turn
    t = wp.tile_zeros(shape=B, dtype=float)
    t[(lane + 1) % B] = float(lane)     # each lane fills another lane's element
    firsts[i * B + lane] = t[lane]
    out[i] = s[0]


def test_lanes_writing_one_tile(cpu_blocks):
    rng = np.random.default_rng(3)
    bits_np = (1 << rng.integers(0, 32, size=2 * B)).astype(np.uint32)
    bits = wp.array(bits_np, dtype=wp.uint32)
    out = wp.zeros(2, dtype=wp.uint32)
    firsts = wp.zeros(2 * B, dtype=float)
    wp.launch_tiled(lanes_write_a_tile, dim=[2], inputs=[bits, out, firsts], block_dim=B)
    expected = np.bitwise_or.reduce(bits_np.reshape(2, B), axis=1)
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(firsts.numpy(), np.tile((np.arange(B) - 1) % B, 2))


@wp.kernel
def from_thread(out: wp.array(dtype=float)):
    tid = wp.tid()
    v = float(tid) * 2.5 + 1.0
    t = wp.tile_from_thread(shape=(1,), value=v, thread_idx=3)
    out[tid] = wp.tile_extract(t, 0)


def test_tile_from_thread_broadcasts_one_lane(cpu_blocks):
    out = wp.zeros(2 * B, dtype=float)
    wp.launch(from_thread, dim=2 * B, inputs=[out], block_dim=B)
    expected = np.repeat([3 * 2.5 + 1.0, (B + 3) * 2.5 + 1.0], B)
    np.testing.assert_allclose(out.numpy(), expected)


@wp.kernel
def scaled_copy(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(2, 4), offset=(i * 2, 0))
    wp.tile_store(b, wp.tile_map(wp.sin, t) * 3.0, offset=(i * 2, 0))


def test_uncoupled_kernel_keeps_one_lane_and_its_gradient(cpu_blocks):
    """No lane interaction: the usual compiled kernel (one lane per block), adjoint included;
    the gradient against float64 central differences."""
    rng = np.random.default_rng(4)
    a_np = rng.random((4, 4)).astype(np.float32)
    a = wp.array(a_np, requires_grad=True)
    b = wp.zeros((4, 4), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(scaled_copy, dim=[2], inputs=[a, b], block_dim=B)
    np.testing.assert_allclose(b.numpy(), 3.0 * np.sin(a_np), rtol=1e-6)
    w = rng.random((4, 4))
    tape.backward(grads={b: wp.array(w.astype(np.float32))})
    a64, h = a_np.astype(np.float64), 1e-6
    fd = np.zeros_like(a64)
    for idx in np.ndindex(a64.shape):
        ap, am = a64.copy(), a64.copy()
        ap[idx] += h
        am[idx] -= h
        fd[idx] = np.sum(w * (3.0 * np.sin(ap) - 3.0 * np.sin(am))) / (2 * h)
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-5, atol=1e-6)


def _central(f, x, h=1e-6):
    g = np.zeros_like(x)
    for k in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp.flat[k] += h
        xm.flat[k] -= h
        g.flat[k] = (f(xp) - f(xm)) / (2 * h)
    return g


def test_gather_gradient(cpu_blocks):
    """The lane loops are ordinary loops to the adjoint: d/dx of a gather's sum against float64
    central differences."""
    rng = np.random.default_rng(5)
    x_np = rng.random(2 * B).astype(np.float32)
    w = rng.random(2 * B)
    x = wp.array(x_np, requires_grad=True)
    out = wp.zeros(2 * B, dtype=float, requires_grad=True)
    lanes = wp.zeros(2, dtype=int)
    with wp.Tape() as tape:
        wp.launch_tiled(gather_sum, dim=[2], inputs=[x, out, lanes], block_dim=B)
    tape.backward(grads={out: wp.array(w.astype(np.float32))})

    def f(xv):
        sums = (2.0 * xv).reshape(2, B).sum(axis=1)
        return np.sum(w * (np.repeat(sums, B) + np.tile(np.arange(B), 2)))

    np.testing.assert_allclose(x.grad.numpy(), _central(f, x_np.astype(np.float64)),
                               rtol=1e-5)


@wp.kernel
def scatter_sum(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    _b, lane = wp.tid()
    t = wp.tile_zeros(shape=2, dtype=float)
    wp.tile_scatter_add(t, lane % 2, x[lane] * x[lane], True)   # every lane adds, in turn
    if lane == 0:
        out[0] = wp.tile_extract(t, 0) - 2.0 * wp.tile_extract(t, 1)


def test_scatter_add_values_and_gradient(cpu_blocks):
    rng = np.random.default_rng(6)
    x_np = rng.random(B).astype(np.float32)
    x = wp.array(x_np, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(scatter_sum, dim=[1], inputs=[x, out], block_dim=B)

    def f(xv):
        return np.sum(xv[0::2] ** 2) - 2.0 * np.sum(xv[1::2] ** 2)

    np.testing.assert_allclose(out.numpy()[0], f(x_np.astype(np.float64)), rtol=1e-5)
    tape.backward(grads={out: wp.ones(1, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), _central(f, x_np.astype(np.float64)),
                               rtol=1e-5)


@wp.kernel
def kept_lane_value(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    _b, lane = wp.tid()
    v = x[lane] * 3.0
    s = wp.tile_sum(wp.tile(v))
    out[lane] = v * s[0]            # v lives across the gather: a per-lane buffer


def test_adjoint_through_per_lane_buffers_is_refused(cpu_blocks):
    x_np = np.arange(B, dtype=np.float32)
    x = wp.array(x_np, requires_grad=True)
    out = wp.zeros(B, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(kept_lane_value, dim=[1], inputs=[x, out], block_dim=B)
    np.testing.assert_allclose(out.numpy(), 3.0 * x_np * np.sum(3.0 * x_np), rtol=1e-6)
    with pytest.raises(wp.KernelError, match="per-lane buffers"):
        tape.backward(grads={out: wp.ones(B, dtype=float)})


@wp.kernel
def lane_loop_bound(out: wp.array(dtype=float)):
    i, lane = wp.tid()
    acc = wp.tile_zeros(shape=1, dtype=float)
    for k in range(lane):               # a bound that differs between lanes ...
        acc = acc + wp.tile(float(k))[0:1]  # ... around a gather
    out[i] = acc[0]


def test_lane_varying_loop_around_tile_operations_is_refused(cpu_blocks):
    out = wp.zeros(1, dtype=float)
    with pytest.raises(wp.KernelError, match="bounds differ between lanes"):
        wp.launch_tiled(lane_loop_bound, dim=[1], inputs=[out], block_dim=B)


@wp.kernel
def rand_tile(seed: int, x: wp.array2d(dtype=int)):
    i, j = wp.tid()
    rng = wp.rand_init(seed, i * 2 + j)
    wp.tile_store(x, wp.tile_randi(shape=(2, 2), rng=rng), offset=(i * 2, j * 2))


def test_random_tiles_draw_per_lane(cpu_blocks):
    # Warp 1.19's values (CUDA and CPU blocks: element e is lane e's stream)
    x = wp.zeros((4, 4), dtype=int)
    wp.launch_tiled(rand_tile, dim=[2, 2], inputs=[42, x], block_dim=64)
    expected = [[798497746, 1803297529, -955788638, 17806966],
                [1788185933, 1320194893, 2073257406, -2009156320],
                [-257534450, -1138585923, 1145322783, -321794125],
                [-2096177388, -1835610841, 1159339128, -652221052]]
    np.testing.assert_array_equal(x.numpy(), expected)


@wp.kernel
def branch_tile(a: wp.array(dtype=float), out: wp.array(dtype=float), flag: int):
    t = wp.tile_load(a, shape=4)
    if flag == 1:
        u = t * 2.0
    elif flag == 2:
        u = t + 1.0
    wp.tile_store(out, u)               # u is zeros when no branch assigned it (as Warp)


def test_tile_assigned_on_some_branches_is_zeros_elsewhere():
    a_np = np.arange(4, dtype=np.float32)
    a = wp.array(a_np)
    for flag, expected in ((1, 2.0 * a_np), (2, a_np + 1.0), (0, np.zeros(4))):
        out = wp.full(4, -1.0, dtype=float)
        wp.launch_tiled(branch_tile, dim=[1], inputs=[a, out, flag], block_dim=4)
        np.testing.assert_allclose(out.numpy(), expected)


@wp.kernel
def print_tile(a: wp.array(dtype=int)):
    t = wp.tile_load(a, shape=4)
    print(t)


def test_print_of_a_tile_has_warps_suffix(capfd):
    wp.launch_tiled(print_tile, dim=[1], inputs=[wp.array([1, 2, 3, 4], dtype=int)],
                    block_dim=4)
    wp.synchronize()
    assert "[1 2 3 4] = tile(shape=(4), storage=register)" in capfd.readouterr().out


m33 = wp.types.matrix(shape=(3, 3), dtype=wp.float32)


@wp.kernel
def matrix_lane_values(x: wp.array(dtype=m33), out: wp.array(dtype=m33)):
    _b, lane = wp.tid()
    m = x[lane] * 2.0                   # kept in a per-lane buffer across the gather
    s = wp.tile_sum(wp.tile(m, preserve_type=True))
    out[lane] = m + s[0]


def test_matrix_values_kept_per_lane(cpu_blocks):
    xs = np.random.default_rng(10).random((B, 3, 3)).astype(np.float32)
    out = wp.zeros(B, dtype=m33)
    wp.launch_tiled(matrix_lane_values, dim=[1], inputs=[wp.array(xs, dtype=m33), out],
                    block_dim=B)
    np.testing.assert_allclose(out.numpy(), 2 * xs + (2 * xs).sum(axis=0), rtol=1e-6)


@wp.kernel
def vector_gather(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    _b, lane = wp.tid()
    v = wp.vec3(x[lane], 2.0 * x[lane] * x[lane], 1.0)
    t = wp.tile(v)                      # shape (3, B): a column per lane
    back = wp.untile(t * 3.0)           # this lane's column, as a vec3
    s = wp.tile_sum(t, axis=1)          # (3,)
    out[lane] = back[1] + s[0] * s[1]


def test_vector_gather_untile_and_gradient(cpu_blocks):
    rng = np.random.default_rng(11)
    x_np = rng.random(B).astype(np.float32)
    x = wp.array(x_np, requires_grad=True)
    out = wp.zeros(B, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(vector_gather, dim=[1], inputs=[x, out], block_dim=B)

    def f(xv):
        return 6.0 * xv ** 2 + xv.sum() * np.sum(2.0 * xv ** 2)

    np.testing.assert_allclose(out.numpy(), f(x_np.astype(np.float64)), rtol=1e-5)
    w = rng.random(B)
    tape.backward(grads={out: wp.array(w.astype(np.float32))})
    np.testing.assert_allclose(x.grad.numpy(),
                               _central(lambda xv: np.dot(w, f(xv)), x_np.astype(np.float64)),
                               rtol=1e-4)


def test_many_blocks_run_on_the_threads(cpu_blocks):
    """Enough blocks for the threaded entry (one block per iteration of its loop)."""
    n = 600
    x_np = np.random.default_rng(12).random(n * B).astype(np.float32)
    out = wp.zeros(n * B, dtype=float)
    lanes = wp.zeros(n, dtype=int)
    wp.launch_tiled(gather_sum, dim=[n], inputs=[wp.array(x_np), out, lanes], block_dim=B)
    sums = (2.0 * x_np).reshape(n, B).sum(axis=1)
    np.testing.assert_allclose(out.numpy(), np.repeat(sums, B) + np.tile(np.arange(B), n),
                               rtol=1e-5)


@wp.func
def gather_in_func(v: float):
    return wp.tile_sum(wp.tile(v))[0]


@wp.kernel
def calls_gathering_func(out: wp.array(dtype=float)):
    _b, lane = wp.tid()
    out[lane] = gather_in_func(float(lane))


def test_gather_inside_a_func_is_refused(cpu_blocks):
    with pytest.raises(wp.KernelError, match="not in a @wp.func"):
        wp.launch_tiled(calls_gathering_func, dim=[1], inputs=[wp.zeros(B, dtype=float)],
                        block_dim=B)


@wp.kernel
def view_across_tiles(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    b = i // 4
    row = out[b]                       # a lane's view, made before the tile operations
    t = wp.tile(x[b, i % 4])
    s = wp.tile_sum(t)
    row[i % 4] = s[0] + x[b, i % 4]    # read after them: the view is made again there


def test_a_view_a_lane_makes_is_read_after_tile_operations(cpu_blocks):
    # (before stop 65: "the value 'row' (an array) differs between lanes and lives across a
    # tile operation", a KernelError)
    xv = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5
    out = wp.zeros((3, 4), dtype=float)
    wp.launch(view_across_tiles, dim=12, inputs=[wp.array(xv), out], block_dim=4)
    np.testing.assert_array_equal(out.numpy(), xv.sum(axis=1, keepdims=True) + xv)
