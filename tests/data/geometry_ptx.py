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


@wp.kernel
def mesh_k(mid: wp.uint64, bid: wp.uint64, pts: wp.array(dtype=wp.vec3),
           out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point(mid, pts[i], 10.0)
    s = float(0.0)
    if q.result:
        s += wp.length(pts[i] - wp.mesh_eval_position(mid, q.face, q.u, q.v)) * q.sign
    r = wp.mesh_query_ray(mid, pts[i], wp.vec3(1.0, 0.2, 0.1), 10.0)
    if r.result:
        s += r.t + r.u + wp.mesh_get_point(mid, r.face * 3)[0]
    for f in wp.mesh_query_aabb(mid, pts[i] - wp.vec3(0.5), pts[i] + wp.vec3(0.5)):
        s += wp.mesh_eval_velocity(mid, f, 0.3, 0.3)[1]
    for j in wp.bvh_query_ray(bid, pts[i], wp.vec3(0.0, 1.0, 0.0)):
        s += float(j)
    out[i] = s


volume = wp.Volume.load_from_nvdb(os.path.join(HERE, "nvdb", "torus.nvdb"))
grid = wp.HashGrid(4, 4, 4)
p = wp.zeros(4, dtype=wp.vec3)
o = wp.zeros(4, dtype=float)
mesh = wp.Mesh(wp.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=wp.vec3),
               wp.array([0, 1, 2], dtype=wp.int32))
bvh = wp.Bvh(wp.zeros(2, dtype=wp.vec3), wp.ones(2, dtype=wp.vec3))
for name, k, a in (("vol", vol, [volume.id, p, o]), ("hg", hg, [grid.id, p, o]),
                   ("mesh", mesh_k, [mesh.id, bvh.id, p, o])):
    for kind, text in compile_ptx(k, a, dims=(4,)).items():
        print(name, kind, ".target sm_90" in text)
