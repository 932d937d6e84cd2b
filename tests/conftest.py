"""Test session set-up: generated modules go to a private cache for the whole session.

Each pytest-xdist worker shares the same folder (keyed by the parent's pid), so kernels
compiled by one worker are reused by the others.
"""
import os
import tempfile


def pytest_configure(config):
    # CUDA-target tests run under Numba's CUDA simulator unless a real GPU is asked for
    # (WEFT_TEST_REAL_CUDA=1 on a machine with an NVIDIA GPU). It must be set before numba.cuda
    # is first imported; CPU kernels are unaffected by it.
    if not os.environ.get("WEFT_TEST_REAL_CUDA"):
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if "WEFT_CACHE_DIR" not in os.environ:
        tag = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
        path = os.path.join(tempfile.gettempdir(), f"weft-test-cache-{tag}")
        os.makedirs(path, exist_ok=True)
        os.environ["WEFT_CACHE_DIR"] = path
