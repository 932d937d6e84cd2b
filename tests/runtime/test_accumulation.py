"""Scattered accumulation under parallel launches large enough for threads to collide: the
per-thread private buffers (arrays only accumulated into) and the atomic path (arrays also
read), forward and adjoint, with exact expected sums."""
import numpy as np

import weft as wp

N = 200_000  # far above the serial threshold: the parallel kernels run


@wp.kernel
def scatter(vals: wp.array(dtype=wp.float64), bins: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(bins, i % 7, vals[i])
    bins[i % 5] -= wp.float64(0.5)


@wp.kernel
def scatter_and_read(vals: wp.array(dtype=wp.float64), bins: wp.array(dtype=wp.float64),
                     seen: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(bins, i % 7, vals[i])
    if i == 0:
        seen[0] = bins[6] * wp.float64(0.0)  # a read: bins is no longer accumulate-only


@wp.kernel
def gather(x: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = x[i % 11]
    y[i] = p[0] * wp.float64(2.0) + p[2]


def _expected_bins(vals):
    out = np.bincount(np.arange(N) % 7, weights=vals, minlength=7)
    out[:5] -= 0.5 * np.bincount(np.arange(N) % 5, minlength=5)
    return out


def test_private_buffers_forward():
    vals = np.random.default_rng(0).integers(0, 8, N).astype(np.float64) * 0.25  # exact sums
    bins = wp.zeros(7, dtype=wp.float64)
    wp.launch(scatter, N, inputs=[wp.array(vals, dtype=wp.float64), bins])
    assert "_acc_bins" in scatter.source("forward")  # the private-buffer path was generated
    np.testing.assert_array_equal(bins.numpy(), _expected_bins(vals))


def test_atomic_path_forward():
    vals = np.full(N, 0.5)
    bins = wp.zeros(7, dtype=wp.float64)
    seen = wp.zeros(1, dtype=wp.float64)
    wp.launch(scatter_and_read, N, inputs=[wp.array(vals, dtype=wp.float64), bins, seen])
    assert "_acc_bins" not in scatter_and_read.source("forward")
    np.testing.assert_array_equal(bins.numpy(), 0.5 * np.bincount(np.arange(N) % 7))


def test_private_buffers_adjoint_of_a_gather():
    x = wp.array(np.random.default_rng(1).random((11, 3)), dtype=wp.vec3d, requires_grad=True)
    y = wp.zeros(N, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(gather, N, inputs=[x], outputs=[y])
    tape.backward(grads={y: np.ones(N)})
    assert "_acc_adj_x" in gather.source("adjoint")
    counts = np.bincount(np.arange(N) % 11, minlength=11).astype(np.float64)
    expected = np.stack([2.0 * counts, np.zeros(11), counts], 1)
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_private_buffers_with_one_thread_and_all():
    """Thread 0 adds into the array itself, the others into their copies: the sums are exact
    with one thread running (no copy used) and with every thread."""
    import numba
    vals = np.random.default_rng(2).integers(0, 8, N).astype(np.float64) * 0.25
    src = scatter.source("forward")
    assert "_wk.thread_id()" in src and "_w == 0" in src
    old = numba.get_num_threads()
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            bins = wp.zeros(7, dtype=wp.float64)
            wp.launch(scatter, N, inputs=[wp.array(vals, dtype=wp.float64), bins])
            np.testing.assert_array_equal(bins.numpy(), _expected_bins(vals))
    finally:
        numba.set_num_threads(old)


def test_reduce_of_copies_adds_in_copy_order_by_blocks():
    """The threads' copies are summed into the array block by block (``_reduce_rows_py``):
    for each element the same float additions, in copy order, as one element at a time, over
    ranges that do not fill a block."""
    from weft.native.threads import _REDUCE_BLOCK, _reduce_rows_py
    rng = np.random.default_rng(3)
    n = 2 * _REDUCE_BLOCK + 77
    a0 = rng.standard_normal(n).astype(np.float32) * 1e3
    acc = (rng.standard_normal((3, n)) * np.array([[1e-3], [1e4], [1.0]])).astype(np.float32)
    expected = a0.copy()
    for i in range(5, n - 9):
        s = expected[i]
        for w in range(3):
            s = np.float32(s + acc[w, i])
        expected[i] = s
    a = a0.copy()
    _reduce_rows_py(5, 1000, a, acc)        # two blocks of the range [5, n - 9)
    _reduce_rows_py(1000, n - 9, a, acc)
    np.testing.assert_array_equal(a, expected)
    assert not np.array_equal(a, a0 + (acc[0] + acc[1] + acc[2]))  # the order matters here


def test_copies_come_from_a_pool_kept_between_launches_and_start_at_zero():
    """The per-thread copies are lent from ``threads._pool`` and given back after the launch's
    reduction: the next launch of the same size reuses the buffer (zeroed again: the sums stay
    exact, never the previous launch's added in), and none stays lent."""
    import numba

    from weft.native import threads
    if numba.config.NUMBA_NUM_THREADS < 2:
        import pytest
        pytest.skip("one thread: no copies")
    vals = np.random.default_rng(4).integers(0, 8, N).astype(np.float64) * 0.25
    nbytes = 7 * 8 * (numba.get_num_threads() - 1)  # the copies of bins: (threads - 1) x 7
    seen = []
    for _ in range(3):
        bins = wp.zeros(7, dtype=wp.float64)
        wp.launch(scatter, N, inputs=[wp.array(vals, dtype=wp.float64), bins])
        np.testing.assert_array_equal(bins.numpy(), _expected_bins(vals))
        assert not threads._lent  # given back
        free = threads._pool.get(nbytes, [])
        assert free  # kept for the next launch
        seen.append(free[-1].ctypes.data)
    assert seen[0] == seen[1] == seen[2]  # the same buffer each time
    # the adjoint's copies as well (x's gradient: every thread reads x)
    x = wp.array(np.random.default_rng(1).random((11, 3)), dtype=wp.vec3d, requires_grad=True)
    counts = np.bincount(np.arange(N) % 11, minlength=11).astype(np.float64)
    expected = np.stack([2.0 * counts, np.zeros(11), counts], 1)
    for _ in range(2):
        x.grad.zero_()
        y = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(gather, N, inputs=[x], outputs=[y])
        tape.backward(grads={y: np.ones(N)})
        np.testing.assert_array_equal(x.grad.numpy(), expected)
        assert not threads._lent
