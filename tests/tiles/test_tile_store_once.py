"""A tile region stored by several threads or blocks passes its adjoint on once, and on
cooperative CPU blocks a tile atomic add is the block's (once) and a store at offsets that
differ between lanes stores each lane's elements (Warp's layout). Before these, the gradient of
``x`` below was counted once per thread or block that stored the tile (16 and 6 where it is 2),
and a tile atomic add in a ``wp.launch`` with ``enable_cpu_blocks`` added the tile once per
lane: silently wrong. Expected values are worked out by hand (Warp 1.19 gives the same)."""
import numpy as np
import pytest

import weft as wp

X = np.arange(4, dtype=np.float32) + 1.0


@wp.kernel
def same_region(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=4)
    wp.tile_store(out, t * 2.0)


@wp.kernel
def same_region_and_add(x: wp.array(dtype=float), out: wp.array(dtype=float),
                        acc: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=4)
    wp.tile_store(out, t * 2.0)
    wp.tile_atomic_add(acc, t)


def _backward(kernel, launch, extra=()):
    x = wp.array(X, dtype=float, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    more = [wp.zeros(4, dtype=float, requires_grad=True) for _ in extra]
    tape = wp.Tape()
    with tape:
        launch(kernel, [x, out] + more)
    tape.backward(grads={out: wp.ones(4, dtype=float)})
    return out, x, more, tape


@pytest.mark.parametrize("how", ["launch", "tiled"])
def test_a_region_every_thread_stores_passes_its_adjoint_on_once(how):
    def launch(k, args):
        if how == "launch":  # 8 threads, each storing the whole tile
            wp.launch(k, dim=8, inputs=args)
        else:  # 3 blocks storing the same region
            wp.launch_tiled(k, dim=[3], inputs=args, block_dim=4)

    out, x, _, _ = _backward(same_region, launch)
    np.testing.assert_array_equal(out.numpy(), 2 * X)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))  # d(2x)/dx
    np.testing.assert_array_equal(out.grad.numpy(), np.zeros(4))  # taken, as a scalar store's


def test_an_atomic_add_reads_the_adjoint_without_taking_it():
    @wp.kernel
    def add_only(x: wp.array(dtype=float), acc: wp.array(dtype=float)):
        t = wp.tile_load(x, shape=4)
        wp.tile_atomic_add(acc, t * 3.0)

    x = wp.array(X, dtype=float, requires_grad=True)
    acc = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(add_only, dim=[2], inputs=[x, acc], block_dim=4)
    tape.backward(grads={acc: wp.ones(4, dtype=float)})
    np.testing.assert_array_equal(acc.numpy(), 6 * X)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 6.0))  # 2 blocks x 3
    np.testing.assert_array_equal(acc.grad.numpy(), np.ones(4))


@pytest.mark.parametrize("blocks", [False, True])
def test_a_tile_atomic_add_is_the_blocks(blocks, request):
    if blocks:
        request.getfixturevalue("cpu_blocks")
    out, x, (acc,), _ = _backward(
        same_region_and_add,
        lambda k, args: wp.launch(k, dim=8, inputs=args, block_dim=4), extra=[1])
    # cooperative blocks: 2 blocks of 4 lanes add the tile twice; without them every thread
    # is a block of its own (as Warp's CPU): 8 times
    np.testing.assert_array_equal(acc.numpy(), (2 if blocks else 8) * X)
    np.testing.assert_array_equal(out.numpy(), 2 * X)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))


def test_lanes_storing_at_their_own_offsets_store_their_own_elements(cpu_blocks):
    @wp.kernel
    def block_sum(output: wp.array(dtype=int)):
        i = wp.tid()
        output[i] = 0
        s = wp.tile_sum(wp.tile(i))
        wp.tile_store(output, s, offset=i)  # element 0 is lane 0's: stored at its offset

    for B in (4, 8):
        out = wp.zeros(32, dtype=int)
        wp.launch(block_sum, dim=32, inputs=[out], block_dim=B)
        want = np.zeros(32, np.int32)
        for o in range(0, 32, B):
            want[o] = np.arange(o, o + B).sum()
        np.testing.assert_array_equal(out.numpy(), want)


def test_lane_partitioned_2d_store_values_and_gradient(cpu_blocks):
    @wp.kernel
    def rows(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        t = wp.tile_load(x, shape=(2, 3))
        i = wp.tid()  # (2 * i made before the load would live across it: no adjoint then)
        wp.tile_store(out, t * 2.0, offset=(2 * i, 1))  # lane regions do not overlap

    rng = np.random.default_rng(1)
    xv = rng.normal(size=(2, 3)).astype(np.float32)
    w = rng.normal(size=(15, 4)).astype(np.float32)
    x = wp.array(xv, dtype=float, requires_grad=True)
    out = wp.zeros((15, 4), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rows, dim=8, inputs=[x, out], block_dim=4)
    tape.backward(grads={out: wp.array(w, dtype=float)})
    # lane l of the block stores elements e = l, l + 4 of the 2 x 3 tile (row-major) at
    # (2 i + e // 3, 1 + e % 3); rows past 14 are skipped
    want, grad = np.zeros((15, 4), np.float32), np.zeros(6, np.float32)
    for i in range(8):
        for e in range(i % 4, 6, 4):
            r, c = 2 * i + e // 3, 1 + e % 3
            if r < 15:
                want[r, c] = 2 * xv.ravel()[e]
                grad[e] += 2 * w[r, c]
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_allclose(x.grad.numpy().ravel(), grad, rtol=1e-6)
    stored = np.zeros((15, 4), bool)
    for i in range(8):
        for e in range(i % 4, 6, 4):
            if 2 * i + e // 3 < 15:
                stored[2 * i + e // 3, 1 + e % 3] = True
    # the stored elements' adjoint was taken (as a scalar store's), the others' left
    np.testing.assert_array_equal(out.grad.numpy(), np.where(stored, 0.0, w))


def test_an_indexed_region_every_block_stores_passes_its_adjoint_on_once():
    @wp.kernel
    def gather_store(x: wp.array(dtype=float), idx: wp.array(dtype=int),
                     out: wp.array(dtype=float)):
        t = wp.tile_load(x, shape=4)
        rows = wp.tile_load(idx, shape=4)
        wp.tile_store_indexed(out, rows, t * 2.0)   # out[idx[k]] = 2 x[k]

    x = wp.array(X, dtype=float, requires_grad=True)
    idx = wp.array(np.array([5, 0, 3, 1], np.int32), dtype=int)
    out = wp.zeros(6, dtype=float, requires_grad=True)
    w = np.arange(6, dtype=np.float32) + 10.0
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gather_store, dim=[3], inputs=[x, idx, out], block_dim=4)
    tape.backward(grads={out: wp.array(w, dtype=float)})
    want = np.zeros(6, np.float32)
    want[[5, 0, 3, 1]] = 2 * X
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(x.grad.numpy(), 2 * w[[5, 0, 3, 1]])  # once, not 3 times
    np.testing.assert_array_equal(out.grad.numpy(), np.where(want != 0, 0.0, w))


def test_lanes_adding_at_their_own_offsets_add_their_own_elements(cpu_blocks):
    @wp.kernel
    def lane_add(x: wp.array(dtype=float), acc: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=4)
        wp.tile_atomic_add(acc, t * 3.0, offset=i)

    @wp.kernel
    def view_add(x: wp.array(dtype=float), acc: wp.array2d(dtype=float)):
        b = wp.tid() // 4
        t = wp.tile_load(x, shape=4)
        wp.tile_atomic_add(acc[b], t * 3.0)   # the lanes' views are their block's row

    x = wp.array(X, dtype=float, requires_grad=True)
    acc = wp.zeros(16, dtype=float, requires_grad=True)
    w = np.arange(16, dtype=np.float32) + 1.0
    tape = wp.Tape()
    with tape:
        wp.launch(lane_add, dim=8, inputs=[x, acc], block_dim=4)
    tape.backward(grads={acc: wp.array(w, dtype=float)})
    # lane l of block b (i = 4 b + l) adds element e = l at i + e
    want, grad = np.zeros(16, np.float32), np.zeros(4, np.float32)
    for i in range(8):
        e = i % 4
        want[i + e] += 3 * X[e]
        grad[e] += 3 * w[i + e]
    np.testing.assert_array_equal(acc.numpy(), want)
    np.testing.assert_array_equal(x.grad.numpy(), grad)

    rows = wp.zeros((2, 4), dtype=float)
    wp.launch(view_add, dim=8, inputs=[wp.array(X, dtype=float), rows], block_dim=4)
    np.testing.assert_array_equal(rows.numpy(), np.tile(3 * X, (2, 1)))  # once per block


def test_a_lane_offset_atomic_add_whose_old_values_are_read_is_refused(cpu_blocks):
    @wp.kernel
    def lane_add_old(x: wp.array(dtype=float), acc: wp.array(dtype=float),
                     old: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=4)
        before = wp.tile_atomic_add(acc, t, offset=i)
        wp.tile_store(old, before)

    x = wp.array(X, dtype=float)
    acc = wp.zeros(16, dtype=float)
    old = wp.zeros(4, dtype=float)
    with pytest.raises(wp.KernelError, match="replaced values are read"):
        wp.launch(lane_add_old, dim=8, inputs=[x, acc, old], block_dim=4)
    assert not acc.numpy().any()  # refused before anything ran


def test_on_cuda_too():
    """The same rule on the CUDA target (Numba's simulator here: its blocks run one after
    another; on a GPU, blocks storing one region at once may each read it before a reset)."""
    pytest.importorskip("numba.cuda")
    x = wp.array(X, dtype=float, requires_grad=True, device="cuda")
    out = wp.zeros(4, dtype=float, requires_grad=True, device="cuda")
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(same_region, dim=[3], inputs=[x, out], block_dim=4, device="cuda")
    tape.backward(grads={out: wp.ones(4, dtype=float, device="cuda")})
    np.testing.assert_array_equal(out.numpy(), 2 * X)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))
    np.testing.assert_array_equal(out.grad.numpy(), np.zeros(4))
