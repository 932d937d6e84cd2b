"""Tests of the CUDA target (under Numba's simulator unless ``WEFT_TEST_REAL_CUDA=1``)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def without_simulator(code, *argv, **env):
    """Run ``code`` in a new process without Numba's CUDA simulator, weft and ``tests/data``
    importable."""
    e = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    e["PYTHONPATH"] = ROOT + os.pathsep + os.path.join(ROOT, "tests", "data")
    e.update(env)
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env=e, timeout=900)


def launch_dims(launch):
    """The grid and block of a configured CUDA launch (``kernel[grid, block]``) as 3-tuples,
    from numba-cuda's launch configuration (``griddim``, ``blockdim``, as given) or the
    simulator's kernel (``grid_dim``, ``block_dim``, normalised already)."""
    if hasattr(launch, "griddim"):
        from numba.cuda.errors import normalize_kernel_dimensions
        return tuple(tuple(d) for d in normalize_kernel_dimensions(launch.griddim,
                                                                   launch.blockdim))
    return tuple(launch.grid_dim), tuple(launch.block_dim)
