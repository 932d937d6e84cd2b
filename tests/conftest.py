"""Test session set-up: generated modules go to a private cache for the whole session.

Each pytest-xdist worker shares the same folder (keyed by the parent's pid), so kernels
compiled by one worker are reused by the others.
"""
import os
import subprocess
import sys
import tempfile

import pytest

# Test kernels compile without LLVM's optimiser (Numba's level 0; NVVM's too, which numba-cuda
# gives the same level), unless the environment sets NUMBA_OPT: a test checks what a kernel
# computes, which the optimiser must not change, and optimising was most of the suite's compile
# time (docs/performance.md, stop 67). What the optimiser itself makes (a vectorised loop,
# optnone marks, PTX shaped by address-space inference) is checked at level 3: tests marked
# ``optimised`` run in a process of their own at level 3, and the shipped store's build runs the
# whole suite at level 3 (weft/native/shipped.py). Set before anything imports Numba.
os.environ.setdefault("NUMBA_OPT", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "cold: compiles anew on every run by design (exempt from "
                            "the warm-cache check)")
    # CUDA-target tests run under Numba's CUDA simulator unless a real GPU is asked for
    # (WEFT_TEST_REAL_CUDA=1 on a machine with an NVIDIA GPU). It must be set before numba.cuda
    # is first imported; CPU kernels are unaffected by it.
    if not os.environ.get("WEFT_TEST_REAL_CUDA"):
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    # tiered compiles run a kernel's serial twin until a helper process has compiled the
    # threaded entry: tests check the threaded code, and the helpers would compete with the
    # test workers for the cores; tests/runtime/test_tiered.py turns it on in its programs
    os.environ.setdefault("WEFT_TIERED_COMPILE", "0")
    if "WEFT_CACHE_DIR" not in os.environ:
        tag = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
        path = os.path.join(tempfile.gettempdir(), f"weft-test-cache-{tag}")
        os.makedirs(path, exist_ok=True)
        os.environ["WEFT_CACHE_DIR"] = path
    # a launch recorded on a tape asks a helper process to compile its adjoint meanwhile
    # (weft.runtime.background): in the test workers the helpers would compete with the workers
    # for the cores, and compile adjoints that no test runs backward through. Off in the workers
    # (not by the environment: tests/runtime/test_background.py and test_tiered.py run programs
    # with it on)
    from weft.core import config as weft_config
    weft_config.background_compile = False


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked ``optimised`` checks what LLVM's optimiser makes: where this process
    compiles at level 0, it runs in a new process at level 3 (its outcome is this test's)."""
    if pyfuncitem.get_closest_marker("optimised") is None or \
            os.environ.get("NUMBA_OPT", "3") != "0":
        return None
    env = dict(os.environ, NUMBA_OPT="3")
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID",
                 "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    root = str(pyfuncitem.config.rootpath)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:xdist", pyfuncitem.nodeid], cwd=root, env=env,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"at NUMBA_OPT=3, in a process of its own:\n{r.stdout[-6000:]}"
                    f"\n{r.stderr[-2000:]}", pytrace=False)
    if " passed" not in r.stdout:  # (skipped there: skipped here)
        pytest.skip(f"at NUMBA_OPT=3: {r.stdout.strip().splitlines()[-1]}")
    return True


def pytest_collection_modifyitems(config, items):
    config.addinivalue_line("markers", "cold: compiles anew on every run by design (exempt from "
                            "the warm-cache check)")


@pytest.fixture(autouse=True)
def _warm_cache_check(request):
    """With ``WEFT_EXPECT_WARM=1`` (the second test run of ``.ci/run``, against the cache the
    first run filled) a test that transpiles or compiles anything fails: a new process must load
    every kernel from the cache."""
    if not os.environ.get("WEFT_EXPECT_WARM") or request.node.get_closest_marker("cold"):
        yield
        return
    from weft.runtime.cache import STATS
    before = {k: len(v) for k, v in STATS.items()}
    yield
    new = {k: v[before[k]:] for k, v in STATS.items() if len(v) > before[k]}
    if new:
        pytest.fail(f"work done again on a warm cache: {new}", pytrace=False)
