"""Run a walk script (a sweep that prints ``OK ...`` / ``FAIL ...`` lines) as plain Python in a
subprocess (``NUMBA_DISABLE_JIT=1``, a private cache) and fail on any ``FAIL`` line."""
import os
import subprocess
import sys


def run_walk(script, cache_dir):
    """The script's output lines, after checking it exited cleanly and reported no failure."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", WEFT_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    failures = [ln for ln in lines if ln.startswith("FAIL")]
    assert not failures, "\n".join(failures)
    return lines
