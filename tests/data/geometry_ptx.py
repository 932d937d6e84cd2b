"""Compiles kernels calling the geometry builtins to PTX for cc 9.0 (run by tests/geometry in a
process without the CUDA simulator): prints kernel, entry, whether it targets sm_90."""
import os

import weft as wp
from weft.runtime.ptx import compile_ptx

HERE = os.path.dirname(os.path.abspath(__file__))


@wp.kernel
def vol(v: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    uvw = wp.volume_world_to_index(v, pts[i])
    g = wp.vec3()
    s = wp.volume_sample_f(v, uvw, wp.Volume.LINEAR)
    out[i] = s + wp.volume_sample_grad_f(v, uvw, 1, g) + g[0]
    wp.volume_store_f(v, 0, 0, 0, 1.0)


@wp.kernel
def hg(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in wp.hash_grid_query(grid, pts[i], 0.5):
        s += wp.length(pts[j] - pts[i])
    out[i] = s


volume = wp.Volume.load_from_nvdb(os.path.join(HERE, "nvdb", "torus.nvdb"))
grid = wp.HashGrid(4, 4, 4)
p = wp.zeros(4, dtype=wp.vec3)
o = wp.zeros(4, dtype=float)
for name, k, a in (("vol", vol, [volume.id, p, o]), ("hg", hg, [grid.id, p, o])):
    for kind, text in compile_ptx(k, a, dims=(4,)).items():
        print(name, kind, ".target sm_90" in text)
