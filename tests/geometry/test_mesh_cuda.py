"""The mesh and BVH cores for CUDA: compiled with ``cuda.jit(device=True)`` they run under
Numba's CUDA simulator with the CPU's results (traversal stacks in ``cuda.local`` arrays), and
a kernel calling every entry point compiles to PTX for cc 9.0 without a GPU (in a subprocess
without the simulator), with hardware FMAs and local-memory stacks."""
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.geometry import mesh_scenes as S
from tests.geometry.mesh_fixtures import cpu_cores
from weft.native.geometry import mesh_query as MQ
from weft.native.geometry.mesh import Bvh, Mesh

pytestmark = [pytest.mark.cudasim, pytest.mark.cold,
              pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNEL = '''
def mesh_kernel(b, l, p, tris, props, pts, idx, avg, q, d, bb, bl, bp, lo, up, out, face):
    t = cuda.grid(1)
    if t < q.shape[0]:
        x = q[t, 0]
        y = q[t, 1]
        z = q[t, 2]
        big = np.float32(1e6)
        r = mesh_query_point(b, l, p, tris, x, y, z, big)
        s = mesh_query_point_sign_normal(b, l, p, tris, avg, x, y, z, big, np.float32(1e-3))
        w = mesh_query_point_sign_winding_number(b, l, p, tris, props, x, y, z, big,
                                                 np.float32(2.0), np.float32(0.5))
        f = mesh_query_furthest_point_no_sign(b, l, p, tris, x, y, z, np.float32(0.0))
        h = mesh_query_ray(b, l, p, tris, x, y, z, d[t, 0], d[t, 1], d[t, 2], big)
        e = mesh_eval_position(pts, idx, r[1], r[2], r[3])
        n = 0
        st = mesh_query_aabb(l, x - np.float32(0.3), y - np.float32(0.3), z - np.float32(0.3),
                             x + np.float32(0.3), y + np.float32(0.3), z + np.float32(0.3))
        while True:
            ok, fi, st = mesh_query_next(b, l, p, tris, st)
            if not ok:
                break
            n += 1 + fi
        m = 0
        st = bvh_query_ray(bl, -1, x, y, z, d[t, 0], d[t, 1], d[t, 2])
        while True:
            ok, it, st = bvh_query_next(bb, bl, bp, lo, up, st, np.float32(np.inf))
            if not ok:
                break
            m += 1 + it
        out[t, 0] = r[2]
        out[t, 1] = r[3]
        out[t, 2] = r[4]
        out[t, 3] = s[2]
        out[t, 4] = s[4]
        out[t, 5] = w[4]
        out[t, 6] = f[2]
        out[t, 7] = f[3]
        out[t, 8] = h[1]
        out[t, 9] = h[2]
        out[t, 10] = h[4]
        out[t, 11] = h[5]
        out[t, 12] = h[7]
        out[t, 13] = e[0]
        out[t, 14] = e[1]
        out[t, 15] = e[2]
        face[t, 0] = r[1]
        face[t, 1] = h[8]
        face[t, 2] = n
        face[t, 3] = m
        face[t, 4] = mesh_query_ray_count_intersections(b, l, tris, x, y, z, d[t, 0], d[t, 1],
                                                        d[t, 2])


def mesh_kernel2(b, l, p, tris, props, pts, idx, q, d, bb, bl, bp, lo, up, out, cnt):
    t = cuda.grid(1)
    if t < q.shape[0]:
        x = q[t, 0]
        y = q[t, 1]
        z = q[t, 2]
        big = np.float32(1e6)
        r = mesh_query_point_no_sign(b, l, p, tris, x, y, z, big)
        s = mesh_query_point_sign_parity(b, l, p, tris, x, y, z, big, np.int32(3),
                                         np.float32(0.1))
        out[t, 0] = r[2]
        out[t, 1] = r[3]
        out[t, 2] = s[4]
        out[t, 3] = mesh_winding_number(l, tris, props, x, y, z, np.float32(2.0))
        nrm = mesh_eval_face_normal(pts, idx, r[1])
        g = mesh_get_point(pts, idx, 3 * r[1] + 1)
        out[t, 4] = nrm[0] + nrm[1] * g[2]
        e = closest_point_edge_edge(x, y, z, d[t, 0], d[t, 1], d[t, 2], g[0], g[1], g[2],
                                    np.float32(0.0), np.float32(1.0), np.float32(0.5),
                                    np.float32(1e-6))
        out[t, 5] = e[0]
        out[t, 6] = e[1]
        out[t, 7] = e[2]
        cnt[t, 0] = r[1]
        cnt[t, 1] = 1 if mesh_query_ray_anyhit(b, l, tris, x, y, z, d[t, 0], d[t, 1], d[t, 2],
                                               np.float32(0.8)) else 0
        cnt[t, 2] = intersect_tri_tri(x, y, z, g[0], g[1], g[2], np.float32(0.0),
                                      np.float32(0.0), np.float32(0.0), np.float32(0.5), y, z,
                                      np.float32(-1.0), np.float32(0.2), np.float32(0.3),
                                      np.float32(1.0), np.float32(1.0), np.float32(-0.5))
        n = 0
        st = mesh_query_sphere(l, x, y, z, np.float32(0.4))
        while True:
            ok, fi, st = mesh_query_next(b, l, p, tris, st)
            if not ok:
                break
            n += 1 + fi
        cnt[t, 3] = n
        m = 0
        st = bvh_query_aabb(bl, -1, x - np.float32(0.4), y - np.float32(0.4),
                            z - np.float32(0.4), x + np.float32(0.4), y + np.float32(0.4),
                            z + np.float32(0.4))
        while True:
            ok, it, st = bvh_query_next(bb, bl, bp, lo, up, st, np.float32(np.inf))
            if not ok:
                break
            m += 1 + it
        cnt[t, 4] = m
        m = 0
        st = bvh_query_sphere(bl, -1, x, y, z, np.float32(0.5))
        while True:
            ok, it, st = bvh_query_next(bb, bl, bp, lo, up, st, np.float32(np.inf))
            if not ok:
                break
            m += 1 + it
        cnt[t, 5] = m
        m = 0
        st = bvh_query_capsule(bl, -1, x, y, z, d[t, 0], d[t, 1], d[t, 2], np.float32(0.1))
        while True:
            ok, it, st = bvh_query_next(bb, bl, bp, lo, up, st, np.float32(2.0))
            if not ok:
                break
            m += 1 + it
        cnt[t, 6] = m
'''


def inputs2(n=16):
    m = Mesh(*S.torus(12, 8, noise=0.1), support_winding_number=True)
    t = Bvh(*S.boxes(60))
    q = S.points(n, seed=63)
    q[:2] = [[1.0, 0.05, 0.02], [-0.1, -0.95, -0.1]]  # inside the torus' tube
    o, d = S.rays(n, seed=64)
    return (*m.arrays(), m.points, m.indices, q, d, *t.arrays(), np.zeros((n, 8), np.float32),
            np.zeros((n, 7), np.int64))


def kernels(ns):
    from numba import cuda
    ns = dict(ns, cuda=cuda, np=np)
    exec(KERNEL, ns)
    return ns


def inputs(n=16):
    m = Mesh(*S.torus(12, 8, noise=0.1), support_winding_number=True)
    t = Bvh(*S.boxes(60))
    q = S.points(n, seed=61)
    o, d = S.rays(n, seed=62)
    return (*m.arrays(), m.points, m.indices, m.average_edge_length, q, d, *t.arrays(),
            np.zeros((n, 16), np.float32), np.zeros((n, 5), np.int64))


class _FakeCuda:
    def __init__(self, t):
        self.t = t

    def grid(self, _):
        return self.t


def test_cores_under_the_cuda_simulator():
    from numba import cuda
    assert "simulator" in cuda.jit.__module__
    with np.errstate(divide="ignore"):     # 1/0 of axis-aligned rays in the Python cores
        _simulate(cuda)


def _simulate(cuda):
    dev = kernels(MQ.compile_for(cuda.jit(device=True)))
    args = inputs()
    cuda.jit(dev["mesh_kernel"])[1, 16](*args)
    host = kernels(cpu_cores())
    want = inputs()
    for t in range(16):           # the same kernel body with the CPU cores, thread by thread
        host["cuda"] = _FakeCuda(t)
        host["mesh_kernel"](*want)
    np.testing.assert_array_equal(args[-2], want[-2])
    np.testing.assert_array_equal(args[-1], want[-1])
    assert (want[-1][:, 1] >= 0).any() and (want[-1][:, 2] > 0).any()
    # the other query kinds (no-sign and parity closest points, winding numbers, any-hit,
    # sphere and BVH AABB/sphere/capsule iterators, edge-edge, tri-tri, normals)
    args = inputs2()
    cuda.jit(dev["mesh_kernel2"])[1, 16](*args)
    want = inputs2()
    for t in range(16):
        host["cuda"] = _FakeCuda(t)
        host["mesh_kernel2"](*want)
    # the simulator runs the cores as Python, where math.sqrt/acos of a float32 round once
    # in double: these values (winding numbers, normals, edge-edge) agree to float32 rounding
    np.testing.assert_allclose(args[-2], want[-2], rtol=2e-5, atol=1e-6)
    np.testing.assert_array_equal(args[-1], want[-1])
    c = want[-1]
    assert (c[:, 1] > 0).any() and (c[:, 3] > 0).any() and (c[:, 4] > 0).any()
    assert (c[:, 5] > 0).any() and (c[:, 6] > 0).any() and (want[-2][:, 2] < 0).any()


PTX_SCRIPT = '''
import numpy as np
from numba import cuda, types as nt
from weft.runtime.ptx import _assume_compute_capability
from weft.native.geometry import mesh_query as MQ
from tests.geometry.test_mesh_cuda import kernels
ns = kernels(MQ.compile_for(cuda.jit(device=True)))
A = lambda t, n=1: nt.Array(t, n, "C")
f2, i2 = A(nt.float32, 2), A(nt.int32, 2)
sig = (f2, i2, A(nt.int32), f2, f2, f2, A(nt.int32), nt.float32, f2, f2, f2, i2, A(nt.int32),
       f2, f2, f2, A(nt.int64, 2))
sig2 = (f2, i2, A(nt.int32), f2, f2, f2, A(nt.int32), f2, f2, f2, i2, A(nt.int32), f2, f2, f2,
        A(nt.int64, 2))
with _assume_compute_capability((9, 0)):
    ptx, _ = cuda.compile_ptx(ns["mesh_kernel"], sig, cc=(9, 0))
    ptx2, _ = cuda.compile_ptx(ns["mesh_kernel2"], sig2, cc=(9, 0))
assert ".target sm_90" in ptx and ".entry" in ptx
assert "fma.rn.f32" in ptx and ".local" in ptx
assert ".target sm_90" in ptx2 and ".entry" in ptx2
print("mesh_kernel", len(ptx), "mesh_kernel2", len(ptx2))
'''


@pytest.mark.ptx
def test_cores_compile_to_ptx():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", PTX_SCRIPT], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "mesh_kernel" in r.stdout and "mesh_kernel2" in r.stdout


def test_mesh_kernels_on_the_cuda_target_under_the_simulator():
    """weft kernels calling the mesh builtins, launched on device 'cuda' (Numba's simulator):
    the forward results and the gradients (query points, rays and the mesh's points) equal the
    CPU target's."""
    from numba import config
    if not config.ENABLE_CUDASIM:
        pytest.skip("runs under Numba's CUDA simulator (the test session's default)")
    import weft as wp
    from tests.geometry.test_mesh_point_grads import ORIGINS, D, P, surface_loss
    pts, idx = S.torus(10, 6, noise=0.05, seed=3)
    lo, up = S.boxes(30, seed=4)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(up, dtype=wp.vec3))
    results = {}
    for dev in ("cpu", "cuda"):
        points = wp.array(pts, dtype=wp.vec3, requires_grad=True)
        mesh = wp.Mesh(points=points, indices=wp.array(idx, dtype=wp.int32))
        ins = [wp.array(x, dtype=wp.vec3, device=dev, requires_grad=True)
               for x in (P, ORIGINS, D)]
        out = wp.zeros(len(P), dtype=float, device=dev, requires_grad=True)
        counts = wp.zeros(2 * len(P), dtype=int, device=dev)
        tape = wp.Tape()
        with tape:
            wp.launch(surface_loss, len(P), inputs=[mesh.id, *ins, out], device=dev)
        wp.launch(iterate, len(P), inputs=[mesh.id, bvh.id, ins[0], counts], device=dev)
        tape.backward(grads={out: wp.array(np.ones(len(P), np.float32), dtype=float,
                                            device=dev)})
        results[dev] = [out.numpy(), counts.numpy(), points.grad.numpy()] + \
            [a.grad.numpy() for a in ins]
    for cpu, sim in zip(results["cpu"], results["cuda"]):
        np.testing.assert_allclose(sim, cpu, rtol=1e-6, atol=1e-6)
    assert np.abs(results["cpu"][2]).max() > 0.1 and results["cpu"][1].sum() > 0


def _iterate_kernel():
    import weft as wp

    @wp.kernel
    def iterate(mid: wp.uint64, bid: wp.uint64, p: wp.array(dtype=wp.vec3),
                counts: wp.array(dtype=int)):
        i = wp.tid()
        n = int(0)
        for f in wp.mesh_query_aabb(mid, p[i] - wp.vec3(0.6), p[i] + wp.vec3(0.6)):
            n += 1 + f
        m = int(0)
        for j in wp.bvh_query_aabb(bid, p[i] - wp.vec3(0.5), p[i] + wp.vec3(0.5)):
            m += 1 + j
        counts[2 * i] = n
        counts[2 * i + 1] = m
    return iterate


iterate = _iterate_kernel()
