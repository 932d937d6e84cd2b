"""Sweeps and batched gradients on a Dask ``LocalCluster`` of 2 worker processes.

The kernels are defined in this test module, which is registered with cloudpickle to travel
by value: the workers rebuild the kernels from their source, as for a script's ``__main__``
or a test module they cannot import. One cluster serves the whole module."""
import os
import signal
import subprocess
import sys
import uuid

import numpy as np
import pytest

import weft as wp

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

import weft.integrations.distributed as wd  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

vec = wp.vec2d
f64 = wp.float64
STEPS, DT = 40, 0.02


@wp.kernel
def fly(x: wp.array(dtype=vec), v: wp.array(dtype=vec), c: wp.array(dtype=f64), dt: f64,
        x_out: wp.array(dtype=vec), v_out: wp.array(dtype=vec)):
    """One step of a projectile with quadratic drag ``c |v| v``."""
    i = wp.tid()
    vi = v[i]
    a = vec(f64(0.0), f64(-9.81)) - c[i] * wp.length(vi) * vi
    vn = vi + a * dt
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


@wp.kernel
def reach(x: wp.array(dtype=vec), loss: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i][0] + f64(0.1) * x[i][1])


def flight(params):
    """(loss, final position, {"v0", "c"} gradients) of one projectile launched at
    ``(speed, angle, drag)``: ``loss = x + 0.1 y`` after ``STEPS`` steps."""
    speed, angle, drag = params
    v0 = wp.array([[speed * np.cos(angle), speed * np.sin(angle)]], dtype=vec,
                  requires_grad=True)
    c = wp.array([drag], dtype=f64, requires_grad=True)
    x = wp.zeros(1, dtype=vec, requires_grad=True)
    v = v0
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(STEPS):
            xn = wp.zeros(1, dtype=vec, requires_grad=True)
            vn = wp.zeros(1, dtype=vec, requires_grad=True)
            wp.launch(fly, 1, inputs=[x, v, c, DT], outputs=[xn, vn])
            x, v = xn, vn
        wp.launch(reach, 1, inputs=[x], outputs=[loss])
    tape.backward(loss)
    return loss, x, wp.grad({"v0": v0, "c": c})


SWEEP = [(speed, angle, drag) for speed in (4.0, 6.0) for angle in (0.3, 0.6, 0.9, 1.2)
         for drag in (0.0, 0.05)]  # 16 runs


def in_process(params):
    return wd.to_numpy(flight(params))


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster
    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)  # kernels and functions travel by source
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", worker_dashboard_address=":0")
    c = Client(cluster)
    # (a cluster's workers register after it starts: a test that asks about them at once
    # found none in a warm rerun on a loaded machine)
    c.wait_for_workers(2, timeout=120)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
        cloudpickle.unregister_pickle_by_value(module)


def _check_same(got, want):
    assert len(got) == len(want)
    for (l1, x1, g1), (l2, x2, g2) in zip(got, want):
        np.testing.assert_allclose(l1, l2, rtol=1e-12, atol=0)
        np.testing.assert_allclose(x1, x2, rtol=1e-12, atol=0)
        for k in ("v0", "c"):
            np.testing.assert_allclose(g1[k], g2[k], rtol=1e-12, atol=0)


def test_sweep_of_16_runs_matches_one_process_and_the_derivatives(client):
    got = wd.map(flight, SWEEP, client=client)
    want = [in_process(p) for p in SWEEP]
    _check_same(got, want)
    assert all(isinstance(g["v0"], np.ndarray) for _, _, g in got)
    # without drag the flight is linear in v0: d(x + 0.1 y)/dv0 = STEPS dt (1, 0.1) exactly
    for (speed, angle, drag), (_, _, g) in zip(SWEEP, got):
        if drag == 0.0:
            np.testing.assert_allclose(g["v0"][0], [STEPS * DT, 0.1 * STEPS * DT], rtol=1e-12)
    # with drag: central differences of the loss (float64)
    k = SWEEP.index((6.0, 0.6, 0.05))
    speed, angle, drag = SWEEP[k]
    h = 1e-6
    fd_c = (in_process((speed, angle, drag + h))[0] - in_process((speed, angle, drag - h))[0])
    np.testing.assert_allclose(got[k][2]["c"], fd_c / (2 * h), rtol=1e-6)
    # the gradient through the launch angle: dL/dangle = dL/dv0 . dv0/dangle
    fd_a = (in_process((speed, angle + h, drag))[0] - in_process((speed, angle - h, drag))[0])
    dv = speed * np.array([-np.sin(angle), np.cos(angle)])
    np.testing.assert_allclose(got[k][2]["v0"][0] @ dv, fd_a[0] / (2 * h), rtol=1e-6)


def kill_once(item, marker):
    """Runs ``flight``, except that the first attempt of item 5 kills its own worker process
    (as a crash or an out-of-memory kill would)."""
    index, params = item
    if index == 5 and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    import numba
    return flight(params), os.getpid(), numba.get_num_threads()


def test_a_worker_killed_mid_batch_has_its_tasks_rerun_with_the_same_results(client, tmp_path):
    marker = str(tmp_path / f"killed-{uuid.uuid4().hex}")
    before = set(client.scheduler_info()["workers"])
    out = wd.map(kill_once, list(enumerate(SWEEP)), marker, client=client)
    with open(marker) as f:
        killed = int(f.read())  # a worker did die
    _check_same([r for r, _, _ in out], [in_process(p) for p in SWEEP])
    assert out[5][1] != killed  # item 5 ran again in another process
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    import numba
    # a restarted worker (new address, same machine) gets the machine's share of threads too
    assert {n for _, _, n in out} == {min(max(1, cores // 2), numba.config.NUMBA_NUM_THREADS)}
    client.wait_for_workers(2, timeout=60)
    assert set(client.scheduler_info()["workers"]) != before  # the nanny restarted it


def _fresh_kernel():
    """A kernel no process has compiled yet (a new constant each run)."""
    salt = float(np.random.default_rng().integers(1, 1 << 30))

    @wp.kernel
    def salted(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i] * a[i] + salt
    return salted, salt


def _launch_and_count(kernel):
    from weft.runtime.cache import STATS
    before = {k: len(v) for k, v in STATS.items()}
    a = wp.array(np.arange(5.0), dtype=float)
    out = wp.zeros(5, dtype=float)
    wp.launch(kernel, 5, inputs=[a], outputs=[out])
    return out.numpy().tolist(), {k: len(v) - before[k] for k, v in STATS.items()}


def test_workers_compiling_the_same_new_kernel_at_once_agree_and_fill_one_cache(
        client, tmp_path):
    kernel, salt = _fresh_kernel()
    workers = sorted(client.scheduler_info()["workers"])
    futures = [client.submit(_launch_and_count, kernel, workers=[w], pure=False)
               for w in workers]
    results = client.gather(futures)
    want = (np.arange(5.0, dtype=np.float32) ** 2 + np.float32(salt)).tolist()
    assert all(r[0] == want for r in results)
    assert sum(r[1]["compiled"] for r in results) > 0
    # a new process on this machine loads it from the cache both filled: nothing compiled
    (tmp_path / "k.pkl").write_bytes(cloudpickle.dumps(kernel))
    code = (f"import pickle, sys; sys.path.insert(0, {ROOT!r})\n"
            f"from tests.distributed.test_dask import _launch_and_count\n"
            f"print(_launch_and_count(pickle.load(open({str(tmp_path / 'k.pkl')!r}, 'rb'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-3000:]
    values, counts = eval(r.stdout.strip().splitlines()[-1])
    assert values == want and counts == {"transpiled": 0, "compiled": 0}


def test_warm_compiles_on_one_worker_per_machine_and_the_others_load_it(client):
    kernel, salt = _fresh_kernel()
    report = wd.warm(client, [kernel], example=lambda: _launch_and_count(kernel))
    assert len(report) == 2
    first, second = (report[w] for w in sorted(report, key=lambda w: -report[w]["compiled"]))
    assert first["transpiled"] == 1 and first["compiled"] > 0
    assert second["transpiled"] == 0 and second["compiled"] == 0
    # after warm, a sweep compiles nothing anywhere
    counts = wd.map(lambda i: _launch_and_count(kernel)[1], range(4), client=client)
    assert counts == [{"transpiled": 0, "compiled": 0}] * 4


def test_map_compiles_a_new_kernel_once_per_machine(client):
    """compile_first: the first item runs alone, the other workers of the machine then load
    what it compiled."""
    kernel, _ = _fresh_kernel()
    counts = wd.map(lambda i: _launch_and_count(kernel)[1], range(6), client=client)
    assert counts[0]["transpiled"] == 1 and counts[0]["compiled"] > 0
    assert counts[1:] == [{"transpiled": 0, "compiled": 0}] * 5


def test_numba_threads_share_the_machines_cores(client):
    per_task = wd.numba_threads_per_task(client)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert set(per_task.values()) == {max(1, cores // 2)}  # 2 workers x 1 thread here
    import numba
    got = wd.map(lambda i: (numba.get_num_threads(), os.environ.get("OMP_WAIT_POLICY")),
                 range(2), client=client)
    want = os.environ.get("OMP_WAIT_POLICY", "PASSIVE")  # OpenMP threads sleep, not spin
    assert got == [(min(max(1, cores // 2), numba.config.NUMBA_NUM_THREADS), want)] * 2


def _grad_of_shared(i, x):
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(reach, len(x), inputs=[x], outputs=[loss])
    tape.backward(loss)
    return x.grad


def test_each_task_gets_its_own_copy_of_shared_inputs(client):
    """Gradients that tasks accumulate into an input they share do not mix."""
    x = wp.array(np.ones((3, 2)), dtype=vec, requires_grad=True)
    grads = wd.map(_grad_of_shared, range(6), x, client=client)
    for g in grads:
        np.testing.assert_array_equal(g, [[1.0, 0.1]] * 3)
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)  # the client's array is untouched


def test_errors_in_tasks_reach_the_caller(client):
    def bad(i):
        wp.launch(fly, 1, inputs=[wp.zeros(1, dtype=vec)], outputs=[])
    with pytest.raises(wp.LaunchError, match="kernel 'fly' takes 6 arguments"):
        wd.map(bad, [0], client=client)

