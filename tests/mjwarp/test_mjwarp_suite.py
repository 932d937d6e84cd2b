"""MuJoCo Warp's own test files on the CPU under weft (``tools/mjwarp_tests.py``): every test
Warp 1.19 passes in them passes under weft.

Warp's counts were measured on this project's machine with ``tools/mjwarp_tests.py --impl
warp`` (docs/mujoco-warp.md): ``math_test`` 27 passed, ``smooth_test`` 108, ``io_test`` 178
(4 skipped). Marked ``mjwarp`` and run only with ``-m mjwarp``: the three files compile several
hundred kernels cold (about an hour on 2 cores); CI does not run them."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WARP_PASSES = {"math_test": 27, "smooth_test": 108, "io_test": 178}


@pytest.mark.mjwarp
@pytest.mark.parametrize("name", sorted(WARP_PASSES))
def test_every_test_warp_passes_passes(request, name):
    expr = request.config.getoption("markexpr") or ""
    if "mjwarp" not in expr or "not mjwarp" in expr:
        pytest.skip("MuJoCo Warp's own tests run only with -m mjwarp")
    pytest.importorskip("mujoco")
    spec = importlib.util.find_spec("mujoco_warp")
    if spec is None:
        pytest.skip("mujoco-warp is not installed")
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import mjwarp_tests
    finally:
        sys.path.pop(0)
    counts, causes = mjwarp_tests.run(os.path.dirname(spec.origin), name, "weft", 7200)
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0, causes
    assert counts.get("passed", 0) == WARP_PASSES[name], counts
