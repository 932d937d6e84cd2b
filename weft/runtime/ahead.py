"""Compile ahead of launches: ``wp.load_module`` and ``wp.force_load``.

weft compiles lazily: a kernel's generated module on its first launch, each entry (forward,
adjoint) when it is first called, for the argument types of that call (Numba specialises on
them). Loading a module ahead transpiles every kernel of the module and compiles, for the CPU,
the forward and the adjoint threaded entries for the argument types a launch passes when its
arrays are contiguous and, for the adjoint, every differentiable array has a gradient (a
recorded launch under a tape with ``requires_grad=True`` arrays). A launch with other types
(a strided view, an array without a gradient) compiles that variant when it happens, as
without ``load_module``; nothing ahead changes what runs. Compiled code goes to the disk cache
as always, so a later process loads it.

With ``max_workers`` above 1 (Warp's argument; default ``wp.config.load_module_max_workers``),
the compiles are shared between this process and ``max_workers - 1`` worker processes, which
compile their share into the disk cache; this process then loads them. Each worker pays
Python's, NumPy's and Numba's start (about 0.5 s here), so this pays for modules of several
kernels. Without a writable cache the compiles run here.

Generic kernels (parameters typed ``Any``) compile for the types they are launched with, at
the launch; debug-mode kernels and kernels for CUDA devices are transpiled ahead and compile on
their first launch.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np

from ..core import config

WORKER = r'''
import pickle, sys
from weft.runtime.ahead import compile_entry
for job in pickle.load(open(sys.argv[1], "rb")):
    compile_entry(*job)
'''


def sample_values(ck):
    """The generated kernel's argument values for a launch with null arrays, zero scalars
    and zero vectors (the types a contiguous launch passes)."""
    from ..core import types as T
    from .args import convert_arg
    from .device import get_device
    device = get_device("cpu")
    out = []
    for name, t in ck.params:
        if isinstance(t, T.ArrayType):
            out.append(convert_arg(ck.where(name), t, None, device))
        elif T.is_composite(t):
            out.append(convert_arg(ck.where(name), t, np.zeros(t._length_), device))
        else:
            out.append(convert_arg(ck.where(name), t, 0, device))
    return out


def entry_jobs(ck):
    """``[(module name, function name, signature)]``: the threaded entries a typical launch
    of compiled kernel ``ck`` calls (forward and adjoint), for the types it passes."""
    import numba
    abi = ck.abi
    if abi.debug_sites is not None:
        return []
    values = sample_values(ck)
    head = [(0,) * max(1, abi.tid_dims)]  # the launch dimensions
    modname = ck.module.__name__
    arguments = {"forward": head + values}
    backward = ck.kernel.options.get("enable_backward",
                                     ck.kernel._module.options.get("enable_backward"))
    if not abi.no_derivative and not abi.tie_arrays and backward is not False:
        adj = [np.zeros_like(v) for p, v in zip(abi.params, values) if p.adjoint is not None]
        arguments["adjoint"] = head + values + adj
    return [(modname, abi.entries[kind]["cpu"], tuple(numba.typeof(a) for a in args))
            for kind, args in arguments.items()]


def compile_entry(modname, fname, sig):
    """Compile (or load from the disk cache) function ``fname`` of generated module
    ``modname`` for the argument types ``sig``; in any process whose cache holds the
    module (the compile workers here, the helper of :mod:`.background`)."""
    from . import cache
    mod = cache.load_or_build(modname.split(".", 1)[1], _not_cached(modname))
    getattr(mod, fname).compile(sig)


def helper_env():
    """The environment of a helper process: this weft and this cache, no helpers of its
    own."""
    from .cache import cache_dir
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [root, env.get("PYTHONPATH")] if p)
    env["WEFT_CACHE_DIR"] = cache_dir()
    env["WEFT_BACKGROUND_COMPILE"] = "0"
    return env


def _not_cached(modname):
    def build():
        raise RuntimeError(f"weft: generated module {modname} is not in the cache")
    return build


def _cost(job):
    """A compile's cost, guessed from the size of the function's source (a threaded entry's
    with its chunk's, which holds the kernel's body: ``compiled.function_source``)."""
    from .compiled import function_source
    modname, fname, _ = job
    src = getattr(sys.modules.get(modname), "__weft_source__", None)
    return len(function_source(src, fname)) if src else 1


def kernels_of(names):
    """The kernels declared in the Python modules ``names``."""
    from ..stdlib.funcs import DECLARED
    return [fn for name in names for fn in DECLARED.get(name, ())
            if getattr(fn, "_weft_kind", None) == "kernel"]  # (this module sits below .kernel)


def load_kernels(kernels, device_kind="cpu", max_workers=None):
    """Transpile ``kernels`` and compile their typical CPU entries, sharing the compiles with
    ``max_workers - 1`` worker processes. Returns the number of entries compiled or
    loaded."""
    from ..core import diskcache
    from .cache import cache_dir
    t0 = time.perf_counter()
    jobs = []
    kernels = [k for k in kernels if not k.is_generic]  # typed by their launches
    compiled = [k.compiled(device_kind) for k in kernels]
    if device_kind == "cpu":
        for ck in compiled:
            jobs += entry_jobs(ck)
    workers = config.load_module_max_workers if max_workers is None else max_workers
    workers = max(1, int(workers or 1))
    if workers > 1 and len(jobs) > 1 and cache_dir() is not None and diskcache.writable():
        _compile_shared(jobs, workers)
    else:
        for job in jobs:
            compile_entry(*job)
    took = time.perf_counter() - t0
    if took > config.compile_message_seconds and not config.quiet:
        print(f"Module load of {len(kernels)} kernel(s) on device '{device_kind}' took "
              f"{took * 1e3:.0f} ms (weft: {len(jobs)} entries compiled ahead with "
              f"{workers} worker(s))", file=sys.stderr, flush=True)
    return len(jobs)


def _compile_shared(jobs, workers):
    """Split ``jobs`` by cost between this process and ``workers - 1`` worker processes."""
    costed = sorted(((_cost(job), job) for job in jobs), key=lambda c: c[0], reverse=True)
    shares = [[] for _ in range(min(workers, len(jobs)))]
    loads = [0] * len(shares)
    for cost, job in costed:  # greedy: the dearest job to the least loaded
        k = loads.index(min(loads))
        shares[k].append(job)
        loads[k] += cost
    procs = []
    env = helper_env()
    for share in shares[1:]:
        fd, path = tempfile.mkstemp(suffix=".pkl")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(share, f)
        procs.append((subprocess.Popen([sys.executable, "-c", WORKER, path], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
                      path, share))
    for job in shares[0]:
        compile_entry(*job)
    for proc, path, share in procs:
        _, err = proc.communicate()
        os.unlink(path)
        if proc.returncode and not config.quiet:
            print(f"weft: a compile worker failed (compiled here instead): "
                  f"{err.decode(errors='replace').strip().splitlines()[-1:]}",
                  file=sys.stderr, flush=True)
        # loads what the worker put in the cache; compiles what it could not do
        for job in share:
            compile_entry(*job)
