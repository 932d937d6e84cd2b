"""The helpers bind the geometry queries lazily (``weft.native.helpers.use_geometry``): a
program without geometry never builds them, a generated module whose kernels call them
binds them at its import, and each query's dispatcher (with the cores it calls) is made at
its first lookup (``weft.native.geometry.portable.Namespace``). Regression: binding them at the first typing of ``_wk.geo_*``, inside
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
made = {{n for n in vars(helpers) if n.startswith("geo_")}}  # (warm: none; the kernel's
assert made <= {{"geo_hg_query", "geo_hg_next"}}, made      # cached code holds the queries)
assert sys.argv[1] == "warm" or "geo_hg_query" in made, made  # of about 100 queries
from numba.core.registry import CPUDispatcher
assert isinstance(helpers.geo_vol_lookup_float32, CPUDispatcher)  # made when looked up
assert "geo_vol_lookup_float32" in vars(helpers)
print(out.numpy().tolist())
"""


def test_first_geometry_use_compiling_a_kernel_in_a_new_process(tmp_path):
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "hashgrid_count.py"  # kernels need a source file
    script.write_text(PROGRAM.format(root=ROOT))
    for run in ("cold", "warm"):
        out = subprocess.run([sys.executable, str(script), run], env=env,
                             capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr
        counts = eval(out.stdout.strip().splitlines()[-1])
        # candidates of the cells around each point (not distance-filtered, as Warp)
        assert counts[0] == counts[1] >= 2 and counts[2] >= 1


def _double(x):
    return 2 * x


def _quad(x):
    return _double(_double(x))


def _triple(x):
    return 3 * x


def test_namespace_makes_each_value_once_at_its_first_lookup():
    from weft.native.geometry.portable import Namespace, compile_into, variant

    made = []

    def jit(fn):
        made.append(fn.__name__)
        return fn

    six = variant(_quad, "six", scope={"_triple": _triple}, _double="_triple")
    fns = [("_double", _double), ("_quad", _quad), ("_triple", _triple), ("six", six)]
    ns = compile_into(Namespace({"__name__": __name__}), fns, jit)
    assert made == [] and "_quad" in ns and "missing" not in ns
    assert dict(ns) == {"__name__": __name__}  # nothing made yet
    assert ns["_quad"](5) == 20 and made == ["_quad", "_double"]  # (_double: at the call)
    assert ns["six"](2) == 18 and made == ["_quad", "_double", "six", "_triple"]
    assert ns["_quad"] is ns["_quad"] and made.count("_quad") == 1
    assert ns.get("missing") is None and ns.get("_triple") is ns["_triple"]
    child = Namespace(parent=ns)
    child.later("k", lambda: 7)
    assert child["k"] == 7 and child["_double"] is ns["_double"] and "_quad" in child
    bound = ns.child({"_double": _triple})  # (a variant's globals)
    assert bound["_double"](2) == 6 and bound["_quad"] is ns["_quad"]
    assert bound["__name__"] == __name__
    whole = compile_into(Namespace({"__name__": __name__}), fns[:1], jit).made()
    assert type(whole) is dict and sorted(whole) == ["__name__", "_double"]
