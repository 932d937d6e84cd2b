"""First use: Warp's example programs, whole-process wall time, cold and warm, weft against Warp
(issue 38).

    python benchmarks/bench_first_use.py [--warp-python PY] [--frames 3] [--markdown]
                                         [core/example_mesh ...]

Each example is copied from the warp-lang installation with only the import changed
(``tools/warp_examples.py``'s rewrite) and run as a new process: ``Example(stage_path=None)``
and ``--frames`` steps (or an example's ``test_*`` functions). **Cold** starts from empty caches
(``WEFT_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` for weft, ``WARP_CACHE_PATH`` for Warp), as on a
new machine after ``pip install``: weft's own machine code comes from what ships with it
(``weft.native.shipped``). **Warm** reruns against the caches the cold run filled (best of
``--repeat``). Rows alternate weft and Warp; after each weft run the benchmark waits for weft's
background compile helper, so no measurement shares the cores with it. A ratio is weft's time
over Warp's. Warp (``--warp-python``, default ``$WARP_PYTHON``) runs in its own environment; it
is never a dependency of weft.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import machine  # noqa: E402
from bench_startup import _wait_for_helpers  # noqa: E402
from warp_examples import DRIVER, weftify  # noqa: E402

#: Warp 1.19's examples that weft runs on a CPU: the core and optim examples that need no
#: extra package (``core/example_mesh`` and ``optim/example_diffray`` read their assets with
#: ``usd-core``), the tile examples that do not ask for ``cuda:0``, and the JAX interop examples
#: (``jax``). Not here: those Warp cannot run on a CPU either (CuPy, PyTorch, OpenGL, custom
#: allocators, MPI/NCCL), ``tile/example_tile_mlp`` (fails under Warp too), and what weft does
#: not have: ``warp.fem`` and ``warp.geometry`` (marching cubes).
EXAMPLES = (
    "core/example_wave", "core/example_fluid", "core/example_sph", "core/example_dem",
    "core/example_mesh", "core/example_mesh_intersect", "core/example_raycast",
    "core/example_raymarch", "core/example_sample_mesh", "core/example_nvdb",
    "core/example_graph_capture", "core/example_work_queue", "core/example_spin_lock",
    "core/example_fft_poisson_navier_stokes_2d", "core/example_fdtd_3d",
    "optim/example_diffray", "optim/example_particle_repulsion", "optim/example_fluid_checkpoint",
    "optim/example_fluid_checkpoint_custom_backward", "optim/example_navier_stokes_perturbation",
    "tile/example_tile_matmul", "tile/example_tile_block_cholesky", "tile/example_tile_cholesky",
    "tile/example_tile_mcgp", "tile/example_tile_stream_compaction", "tile/example_tile_nbody",
    "interop/example_jax_callable", "interop/example_jax_kernel",
)


def _run(python, driver, script, frames, impl, env):
    """(wall seconds, None) or (None, reason)."""
    t = time.perf_counter()
    r = subprocess.run([python, driver, script, str(frames), "", impl, "release"],
                       capture_output=True, text=True, env=env, timeout=3600)
    took = time.perf_counter() - t
    if impl == "weft":
        _wait_for_helpers()
    if r.returncode == 0 and "RESULT " in r.stdout:
        return took, None
    lines = [x for x in r.stderr.strip().splitlines() if x.strip()] or ["(no output)"]
    return None, f"{impl}: {lines[-1].strip()[:150]}"


def _env(impl, cache, assets):
    env = dict(os.environ, WEFT_ASSET_DIR=assets)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package runs
    if impl == "weft":
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env["WEFT_CACHE_DIR"] = os.path.join(cache, "weft")
        env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
        os.makedirs(env["WEFT_CACHE_DIR"], mode=0o700)
    else:
        env["WARP_CACHE_PATH"] = os.path.join(cache, "warp")
    return env


def measure(example, warp_python, warp_root, frames, repeat, tmp):
    """{impl: (cold, warm) or reason} for one example."""
    original = os.path.join(warp_root, "examples", example + ".py")
    copy = os.path.join(tmp, os.path.basename(example) + ".py")
    with open(original) as f, open(copy, "w") as g:
        g.write(weftify(f.read()))
    driver = os.path.join(tmp, "driver.py")
    with open(driver, "w") as f:
        f.write(DRIVER)
    assets = os.path.join(warp_root, "examples", "assets")
    out = {}
    for impl, python, script in (("weft", sys.executable, copy),
                                 ("warp", warp_python, original)):
        cache = tempfile.mkdtemp(prefix=f"first-use-{impl}-", dir=tmp)
        env = _env(impl, cache, assets)
        cold, why = _run(python, driver, script, frames, impl, env)
        if cold is None:
            out[impl] = why
            continue
        warm = min(_run(python, driver, script, frames, impl, env)[0] or float("inf")
                   for _ in range(repeat))
        out[impl] = (cold, warm)
        shutil.rmtree(cache, ignore_errors=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", nargs="*", default=EXAMPLES)
    ap.add_argument("--warp-python", default=os.environ.get("WARP_PYTHON"))
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    if not a.warp_python:
        sys.exit("bench_first_use: give --warp-python (a Python with warp-lang installed)")
    warp_root = subprocess.run([a.warp_python, "-c", "import os, warp; print(os.path.dirname("
                                "warp.__file__))"], capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ex in a.examples:
            r = measure(ex, a.warp_python, warp_root, a.frames, a.repeat, tmp)
            mine, theirs = r["weft"], r["warp"]
            if isinstance(mine, tuple) and isinstance(theirs, tuple):
                rows.append([ex, f"{mine[0]:.2f}", f"{theirs[0]:.2f}", f"{mine[0] / theirs[0]:.2f}x",
                             f"{mine[1]:.2f}", f"{theirs[1]:.2f}", f"{mine[1] / theirs[1]:.2f}x", ""])
            else:
                cell = (lambda v, i: f"{v[i]:.2f}" if isinstance(v, tuple) else "-")
                rows.append([ex, cell(mine, 0), cell(theirs, 0), "-", cell(mine, 1),
                             cell(theirs, 1), "-",
                             "; ".join(v for v in (mine, theirs) if isinstance(v, str))])
            print(json.dumps({"example": ex, **{k: v for k, v in r.items()}}), flush=True)
    head = ["example", "weft cold s", "Warp cold s", "cold ratio", "weft warm s", "Warp warm s",
            "warm ratio", "note"]
    print(f"\nWhole-process wall time, {a.frames} frames, best of {a.repeat} warm runs "
          f"({os.cpu_count()} cores)")
    print(machine.text_table(head, rows, a.markdown))


if __name__ == "__main__":
    main()
