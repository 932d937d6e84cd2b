"""examples/sweep_dask.py runs as a script (its kernels travel to the workers by source) on a
local cluster of 2 workers, passes its own checks (the cluster's values and gradients equal the
client's; a gradient equals finite differences) and writes its plot."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("distributed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_sweep_example_on_two_workers(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "sweep_dask.py"),
                        "--workers", "2", "--angles", "6", "--speeds", "12", "--batch", "16",
                        "--check", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert "cluster == this process for all 6 launches: True" in r.stdout
    assert "all checks pass" in r.stdout
    assert "the mean range is longest at" in r.stdout
    try:
        import PIL  # noqa: F401
    except ImportError:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            assert "no plot" in r.stdout
            return
    assert (tmp_path / "sweep_dask.png").stat().st_size > 1000
