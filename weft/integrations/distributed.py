"""Ensembles, sweeps and batched gradients on a Dask cluster (``pip install weft[distributed]``).

weft's objects pickle (:mod:`weft.serialize`): arrays with their gradients, kernels and funcs
(by reference to their module, or by source when defined in ``__main__``), structs, PyTree
containers. So plain ``client.map(fn, items)`` works; this module removes the rest of the
boilerplate:

- :func:`map`: runs ``fn(item, *args, **kwargs)`` on the workers, one task per item, each task
  with Numba's thread pool sized so that the workers of a machine do not oversubscribe its
  cores, and gathers the results with every ``wp.array`` in them turned into numpy (return
  ``wp.grad(params)`` for gradients);
- :func:`warm`: loads (transpiles once per machine) the kernels on every worker ahead, and runs
  an example once on every worker so Numba compiles what the tasks will run: one worker per
  machine first, the others then load its machine code from the machine's cache.

Example::

    from dask.distributed import Client, LocalCluster
    import weft.integrations.distributed as wd

    def run(angle):
        ...                                   # launches kernels, tape.backward(loss)
        return loss.numpy()[0], wp.grad(params)

    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        wd.warm(client, [step, miss], example=lambda: run(0.5))
        results = wd.map(run, angles, client=client)

Importing this module does not import Dask; its functions do. See ``docs/distributed.md``.
"""
from __future__ import annotations

import builtins
import os
import threading
import time

__all__ = ["map", "warm", "to_numpy", "numba_threads_per_task"]


def _client(client):
    if client is not None:
        return client
    try:
        from dask.distributed import get_client
    except ImportError:
        raise ImportError("weft.distributed needs Dask: pip install 'weft[distributed]' "
                          "(or 'dask[distributed]')") from None
    try:
        return get_client()
    except ValueError:
        raise ValueError("weft.distributed: no Dask client: pass client=Client(...) or "
                         "create one first (Client(LocalCluster(...)) or "
                         "Client('tcp://scheduler:8786'))") from None


def to_numpy(tree):
    """``tree`` with every ``wp.array`` replaced by its data as numpy (a PyTree: lists,
    tuples, dicts, dataclasses; other values are kept). ``wp.grad(params)`` gives the
    gradients of a PyTree of parameters as such a tree."""
    from ..core.pytree import flatten, is_array, unflatten
    if is_array(tree):
        return tree.numpy()
    arrays, spec = flatten(tree)
    if not arrays:
        return tree
    return unflatten(spec, [a.numpy() for a in arrays])


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def numba_threads_per_task(client):
    """``{worker address: n}``: Numba threads for each task of each worker, so that the tasks
    running at once on a machine use its cores once: the machine's cores divided by the Dask
    threads of all its workers (at least 1)."""
    info = _workers(client)
    by_host = _threads_by_host(client, info)
    return {addr: by_host[w["host"]] for addr, w in info.items()}


def _threads_by_host(client, info=None):
    """``{host: Numba threads per task}`` (see :func:`numba_threads_per_task`); by host, so
    that a worker restarted under a new address (after a crash) gets its share too."""
    info = _workers(client) if info is None else info
    cores = client.run(_cores)
    by_host = {}
    for addr, w in info.items():
        h = by_host.setdefault(w["host"], [0, 0])
        h[0] = max(h[0], cores.get(addr, 1))
        h[1] += w["nthreads"]
    return {host: builtins.max(1, c // builtins.max(1, t)) for host, (c, t) in by_host.items()}


def _workers(client):
    """``{address: info}`` of every worker (recent Dask lists 5 unless asked for all)."""
    import inspect
    try:
        every = "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):
        every = False
    info = client.scheduler_info(n_workers=-1) if every else client.scheduler_info()
    return info["workers"]


_LOCK = threading.Lock()


def _threadsafe_numba():
    """Whether Numba's threading layer allows parallel launches from several threads at once
    (TBB and OpenMP do; the ``workqueue`` layer, Numba's fallback, aborts the process)."""
    import numba
    try:
        from numba.np.ufunc import parallel
        parallel._launch_threads()
        return numba.threading_layer() in ("tbb", "omp")
    except Exception:  # noqa: BLE001 - an unknown layer: assume it is not
        return False


def _prepare_process():
    """Once per worker process, before Numba starts its pool: OpenMP threads that wait for
    work sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, unless set already). On a
    machine whose cores are all taken (by the other workers), a spinning OpenMP thread holds a
    core that a thread of the same launch needs, and every launch of a parallel kernel then
    waits for a scheduler time slice: measured 19 s instead of 0.3 s on this repository's test
    machine (``docs/distributed.md``). No effect once OpenMP has started in the process."""
    if not _PREPARED:
        _PREPARED.append(True)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


_PREPARED = []


def _in_task(threads, fn, *args, **kwargs):
    """Call ``fn`` in a task on a worker with Numba's pool sized for this worker (the size is
    per thread in Numba: set in the task's own thread)."""
    _prepare_process()
    import numba
    n = threads if isinstance(threads, int) else None
    try:
        from distributed import get_worker
        from distributed.comm import get_address_host
        worker = get_worker()
        if isinstance(threads, dict):
            n = threads.get(get_address_host(worker.address))
        several = worker.state.nthreads > 1
    except (ImportError, ValueError, AttributeError):
        several = False
    if n:
        numba.set_num_threads(builtins.min(n, numba.config.NUMBA_NUM_THREADS))
    if several and not _threadsafe_numba():
        with _LOCK:  # the workqueue layer must not run two parallel launches at once
            return fn(*args, **kwargs)
    return fn(*args, **kwargs)


def _run(item, fn, args, kwargs, threads):
    """One task of :func:`map`: ``fn(item, ...)``, arrays in the result as numpy."""
    return to_numpy(_in_task(threads, fn, item, *args, **kwargs))


def map(fn, items, *args, client=None, numba_threads="auto", compile_first=True, retries=None,
        pure=False, **kwargs):  # noqa: A001 - the name says what it does, as client.map
    """``[fn(item, *args, **kwargs) for item in items]`` run on the Dask workers, one task per
    item, results in order with every ``wp.array`` in them as numpy (:func:`to_numpy`).

    ``fn`` launches kernels and may record a tape and call ``tape.backward``; return
    ``wp.grad(params)`` (or ``a.grad``) for gradients. ``fn`` and what it reads are pickled
    with cloudpickle (kernels and funcs of ``__main__`` by source, see :mod:`weft.serialize`);
    ``args``/``kwargs`` are sent with every task: each task gets its own copy (gradients
    accumulated into a shared input do not mix; for large shared data, ``client.scatter``
    it and read it without writing). ``client``: a ``dask.distributed.Client``
    (default: the current one). ``numba_threads``: Numba threads per task, ``"auto"`` (the
    machine's cores over the Dask threads of its workers: see :func:`numba_threads_per_task`),
    an int, or None to leave Numba's default. ``compile_first``: the first items run first,
    one on one worker of each machine, and the others start once they are done, so that each
    machine compiles the kernels once and its other workers load them from its cache (with
    warm caches this costs one task's time; :func:`warm` does it ahead instead).
    ``retries``: Dask's retries of a task that
    raised (a task whose worker died is rerun by Dask anyway). ``pure``: Dask's, False by
    default (a task may draw random numbers)."""
    client = _client(client)
    items = list(items)
    threads = _threads_by_host(client) if numba_threads == "auto" else \
        None if numba_threads is None else int(numba_threads)
    common = dict(fn=fn, args=tuple(args), kwargs=dict(kwargs), threads=threads,
                  retries=retries, pure=pure)
    first = []
    if compile_first and len(items) > 1:
        info = _workers(client)
        hosts = {}
        for addr in sorted(info):
            hosts.setdefault(info[addr]["host"], addr)
        if len(info) > len(hosts):  # some machine has several workers
            first = [client.submit(_run, item, workers=[addr], allow_other_workers=True,
                                   **common)
                     for item, addr in zip(items, hosts.values())]
            client.gather(first)
    rest = client.map(_run, items[len(first):], **common) if len(items) > len(first) else []
    return client.gather(first) + client.gather(rest)


def _warm_on_worker(kernels, example):
    from ..runtime.cache import STATS
    before = {k: len(v) for k, v in STATS.items()}
    t0 = time.perf_counter()
    from ..runtime.ahead import load_kernels
    load_kernels(list(kernels), "cpu", 1)  # as wp.load_module: forward and adjoint
    if example is not None:
        example()
    return {"seconds": time.perf_counter() - t0,
            **{k: len(v) - before[k] for k, v in STATS.items()}}


def warm(client, kernels=(), example=None):
    """Compile ahead on every worker. Each kernel's generated module is loaded (transpiled
    once per machine: the others read the machine's cache) and its forward and adjoint
    compiled as ``wp.load_module`` does (contiguous arrays); ``example``, a function of no
    arguments (``lambda: run(items[0])``), runs once on every worker so that Numba compiles
    the kernels for any other argument types the tasks use. One worker per machine goes
    first; the others then load the machine code it cached. Generic kernels are compiled by
    ``example`` only (their types come from the launch).

    Returns ``{worker address: {"seconds", "transpiled", "compiled"}}``: what each worker
    did (``transpiled``: generated modules built; ``compiled``: functions Numba compiled
    rather than loaded)."""
    client = _client(client)
    kernels = list(kernels)
    info = _workers(client)
    threads = _threads_by_host(client, info)
    first, rest = {}, []
    for addr in sorted(info):
        host = info[addr]["host"]
        if host in first:
            rest.append(addr)
        else:
            first[host] = addr
    out = {}
    for group in (list(first.values()), rest):
        # a task pinned to each worker (run in its task thread, not its event loop)
        futures = {addr: client.submit(_in_task, threads, _warm_on_worker, kernels, example,
                                       workers=[addr], allow_other_workers=False, pure=False)
                   for addr in group}
        out.update(zip(futures, client.gather(list(futures.values()))))
    return out
