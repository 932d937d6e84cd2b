"""Warp's own unit tests against weft, as a regression guard (pytest marker ``warp``).

Each selected Warp test file runs in its own process through the shim (``run.py``), and every
test that passed under weft at the last recorded run (``expected_passing.json``, written by
``summarize.py --record-passing``) must still pass. Skipped unless warp-lang is importable and the
run is asked for, because it takes tens of minutes and needs warp-lang's test files::

    python -m pytest tests/warp_compat -m warp -p no:xdist        # all files
    python -m pytest tests/warp_compat -m warp -k test_array      # one file

(CI runs without ``-m warp``, so these are skipped there.)
"""
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("weft_warp_suite_run", HERE / "run.py")
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)

EXPECTED = HERE / "expected_passing.json"

pytestmark = pytest.mark.warp


def _wanted(config):
    expr = config.getoption("markexpr") or ""
    return "warp" in expr and "not warp" not in expr


@pytest.fixture(scope="module")
def warp_tests_dir(request):
    if not _wanted(request.config):
        pytest.skip("Warp's test suite runs only with -m warp")
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang is not installed")
    return harness.real_tests_dir(sys.executable)


def _expected():
    return json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}


# the selection, and the files outside it whose passing tests were recorded too (tiles,
# interop, sparse and solvers: run on their own with run.py -k =name)
@pytest.mark.parametrize("module", harness.SELECTED + sorted(set(_expected()) -
                                                           set(harness.SELECTED)))
def test_no_regression(module, warp_tests_dir):
    rec = harness.run_file(sys.executable, "weft", module, warp_tests_dir, timeout=900,
                           test_timeout=300)
    passing = {t for t, e in rec["tests"].items() if e["outcome"] == "passed"}
    lost = sorted(set(_expected().get(module, [])) - passing)
    assert not lost, (f"{len(lost)} Warp test(s) of {module} passed under weft before and do "
                      f"not now: " + ", ".join(lost[:20]) +
                      (f" ... ({rec['import_error']['error']})" if rec["import_error"] else ""))


def test_shim_imports_weft_as_warp(warp_tests_dir, tmp_path):
    """The shim answers ``import warp`` with weft (and nothing of warp-lang)."""
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE / "shim"), str(harness.REPO)]),
               WARP_SUITE_TESTS_DIR=warp_tests_dir)
    out = subprocess.run([sys.executable, "-c", "import warp, weft, warp.optim; "
                          "print(warp.array is weft.array, warp.optim.SGD is weft.optim.SGD)"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert out.stdout.split() == ["True", "True"]
