"""CPU kernels run on every core through weft's pool (weft.stdlib.pool): each worker runs a
slice of the launch (kernels measured cheap run in the calling thread); arrays only
accumulated into are added into directly by worker 0 and through private copies by the
others (summed after the join), also for strided arrays, where worker 0 has a copy too.
Results are checked against NumPy, for launches from several Python threads at once and with
one Numba thread."""
import threading
import time

import numba
import numpy as np
import pytest

import weft as wp
from weft.stdlib import pool


@wp.kernel
def scatter(x: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, idx[i], x[i])


@wp.kernel
def scale(x: wp.array(dtype=float), s: float, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = s * x[i]


@pytest.fixture(autouse=True)
def every_launch_threaded(monkeypatch):
    """Small test launches would run in the calling thread once measured as cheap."""
    monkeypatch.setattr(pool, "LONG_SECONDS", 0.0)


def test_the_faster_way_is_measured(monkeypatch):
    monkeypatch.setattr(pool, "LONG_SECONDS", 1.0)
    calls = []
    slow_pool = [True]

    def chunk(dim, lo, hi, w, *args):
        calls.append(w)
        if w == 0 and hi - lo < 10_000 and slow_pool[0]:  # a slice: the pool looks slow
            time.sleep(0.01)

    def launch():
        calls.clear()
        pool.run(chunk, (10_000,), ())
        return sorted(calls)

    t = numba.get_num_threads()
    assert launch() == list(range(t))  # first: the pool (may compile, untimed)
    assert launch() == list(range(t))  # timed with the pool
    assert launch() == [0]             # timed on one thread
    assert launch() == [0]             # one thread was faster
    for _ in range(pool.PROBE_EVERY):  # the pool is tried again now and then
        slow_pool[0] = False
        if len(launch()) == t:
            break
    else:
        raise AssertionError("the pool was not timed again")


def _data(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 8, n).astype(np.float32), rng.integers(0, m, n).astype(np.int32)


def _expected(x, idx, m):
    ref = np.zeros(m)
    np.add.at(ref, idx, x.astype(np.float64))
    return ref


@pytest.mark.parametrize("n", [5, 1000, 100_000])
def test_private_accumulation_matches_numpy(n):
    x, idx = _data(n, 13)
    out = wp.zeros(13, dtype=float)
    wp.launch(scatter, n, inputs=[wp.array(x), wp.array(idx), out])
    # integers in float32: every order of the sums is exact
    np.testing.assert_array_equal(out.numpy(), _expected(x, idx, 13))


def test_strided_target_gets_private_copies_for_every_worker():
    n = 50_000
    x, idx = _data(n, 13, seed=1)
    base = wp.zeros(26, dtype=float)
    view = base[::2]  # not contiguous: worker 0 adds into a copy too
    assert not view.numpy().flags.c_contiguous
    wp.launch(scatter, n, inputs=[wp.array(x), wp.array(idx), view])
    np.testing.assert_array_equal(base.numpy()[::2], _expected(x, idx, 13))
    assert not base.numpy()[1::2].any()


def test_gradient_through_private_adjoint():
    n = 20_000
    x, idx = _data(n, 7, seed=2)
    xa = wp.array(x, requires_grad=True)
    out = wp.zeros(7, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scatter, n, inputs=[xa, wp.array(idx), out])
    out.grad = wp.array(np.arange(7, dtype=np.float32))
    tape.backward()
    np.testing.assert_array_equal(xa.grad.numpy(), idx.astype(np.float32))


def test_launches_from_several_python_threads():
    n = 30_000
    x, idx = _data(n, 11, seed=3)
    xs, ids = wp.array(x), wp.array(idx)
    outs = [wp.zeros(11, dtype=float) for _ in range(4)]
    ys = [wp.zeros(n, dtype=float) for _ in range(4)]
    errors = []

    def work(k):
        try:
            for _ in range(5):
                wp.launch(scatter, n, inputs=[xs, ids, outs[k]])
                wp.launch(scale, n, inputs=[xs, float(k), ys[k]])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in range(4):
        np.testing.assert_array_equal(outs[k].numpy(), 5 * _expected(x, idx, 11))
        np.testing.assert_array_equal(ys[k].numpy(), k * x)


def test_one_numba_thread_runs_in_the_caller():
    calls = []

    def chunk(dim, lo, hi, w, *args):
        calls.append((lo, hi, w, threading.current_thread() is threading.main_thread()))
        return w

    saved = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert pool.run(chunk, (1000,), ()) == [0]
    finally:
        numba.set_num_threads(saved)
    assert calls == [(0, 1000, 0, True)]


def test_slices_cover_the_launch_and_errors_reach_the_caller():
    seen = []
    lock = threading.Lock()

    def chunk(dim, lo, hi, w, *args):
        with lock:
            seen.append((lo, hi))
        return hi - lo

    res = pool.run(chunk, (10, 100), ())
    assert sum(res) == 1000
    assert sorted(seen)[0][0] == 0 and sorted(seen)[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(sorted(seen), sorted(seen)[1:]))

    def failing(dim, lo, hi, w, *args):
        if w == numba.get_num_threads() - 1:
            raise ValueError(f"worker {w} failed")
        return 0

    with pytest.raises(ValueError, match="failed"):
        pool.run(failing, (1000,), ())
