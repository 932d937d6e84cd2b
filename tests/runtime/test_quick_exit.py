"""Interpreter exit after kernels ran (``weft.runtime.cache._quick_exit``): the garbage of that
moment is still finalized, the collector is frozen for the rest of the shutdown, and
``WEFT_QUICK_EXIT=0`` leaves the exit as Python's."""
import os
import subprocess
import sys

PROGRAM = r'''
import atexit, gc, sys
out = sys.argv[1]
# registered before weft's handler, so it runs after it (atexit runs the last one first)
atexit.register(lambda: open(out, "a").write(f"frozen {gc.get_freeze_count() > at_import}\n"))
import numpy as np
import weft as wp
at_import = gc.get_freeze_count()        # what weft's import froze (weft.core.startup)

@wp.kernel
def twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]

x = wp.array(np.arange(4, dtype=np.float32))
y = wp.zeros(4, dtype=float)
wp.launch(twice, 4, inputs=[x, y])
open(out, "a").write(f"sum {y.numpy().sum()}\n")

class Node:                      # unreachable cyclic garbage at exit, with a finalizer
    def __init__(self):
        self.me = self
    def __del__(self):
        open(out, "a").write("finalized\n")

Node()
'''


def _run(tmp_path, env_extra):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "out.txt"
    env = {**os.environ, "WEFT_CACHE_DIR": str(tmp_path / "cache"), **env_extra}
    r = subprocess.run([sys.executable, str(prog), str(out)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return out.read_text().splitlines()


def test_exit_finalizes_garbage_then_freezes(tmp_path):
    lines = _run(tmp_path, {})
    assert lines[0] == "sum 12.0"
    assert lines[1:] == ["finalized", "frozen True"]   # collected first, then frozen


def test_quick_exit_can_be_turned_off(tmp_path):
    lines = _run(tmp_path, {"WEFT_QUICK_EXIT": "0"})
    assert lines[0] == "sum 12.0"
    assert "frozen False" in lines and "finalized" in lines  # (by the interpreter's own exit)
