"""The helpers bind the geometry queries lazily (``weft.native.helpers.use_geometry``): a
program without geometry never builds them, and a generated module whose kernels call them
binds them at its import. Regression: binding them at the first typing of ``_wk.geo_*``, inside
Numba's compile, left their globals unresolved (``NameError: view_i64``) for a new process whose
first geometry use was compiling a kernel (Warp's hash-grid neighbour count)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = r"""
import sys
sys.path.insert(0, {root!r})
import numpy as np
import weft as wp
from weft.native import helpers
assert "geo_hg_query" not in vars(helpers)  # nothing bound by importing weft

@wp.kernel
def count(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float, out: wp.array(dtype=int)):
    i = wp.tid()
    c = int(0)
    for j in wp.hash_grid_query(grid, pts[i], r):
        c += 1
    out[i] = c

p = np.array([[0.0, 0.0, 0.0], [0.01, 0.0, 0.0], [0.5, 0.5, 0.5]], np.float32)
pts = wp.array(p, dtype=wp.vec3)
g = wp.HashGrid(8, 8, 8)
g.build(pts, 0.05)
out = wp.zeros(3, dtype=int)
wp.launch(count, 3, inputs=[g.id, pts, 0.05, out])
print(out.numpy().tolist())
"""


def test_first_geometry_use_compiling_a_kernel_in_a_new_process(tmp_path):
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "hashgrid_count.py"  # kernels need a source file
    script.write_text(PROGRAM.format(root=ROOT))
    for _ in range(2):  # cold, then warm
        out = subprocess.run([sys.executable, str(script)], env=env,
                             capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr
        counts = eval(out.stdout.strip().splitlines()[-1])
        # candidates of the cells around each point (not distance-filtered, as Warp)
        assert counts[0] == counts[1] >= 2 and counts[2] >= 1
