"""The query cores for CUDA: compiled with ``cuda.jit(device=True)`` they run under Numba's CUDA
simulator with the CPU's results, and a kernel calling them compiles to PTX for cc 9.0 (without
a GPU: in a subprocess without the simulator)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.geometry.conftest import path
from weft.native.geometry import hashgrid as H
from weft.native.geometry import volume_query as Q
from weft.native.geometry.hashgrid import HashGrid
from weft.native.geometry.volume import Volume

pytestmark = pytest.mark.cudasim
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VOLUME_KERNEL = '''
def vol_kernel(tree, vals, gt, xf, idxv, data, pts, out):
    t = cuda.grid(1)
    if t < pts.shape[0]:
        x = pts[t, 0]
        y = pts[t, 1]
        z = pts[t, 2]
        s = volume_sample_f(tree, vals, gt, x, y, z, 1)
        v, g = volume_sample_grad_f(tree, vals, gt, x, y, z, 1)
        a = volume_sample_v(tree, vals, gt, x, y, z, 1)
        j = volume_sample_grad_v3(tree, vals, gt, 6, np.float32(0), x, y, z, 1)
        w = volume_world_to_index(xf, x, y, z)
        wd = volume_index_to_world_dir(xf, x, y, z)
        i = volume_lookup_index(tree, idxv, gt, 1, 2, 3)
        d = volume_sample_index_s(tree, idxv, gt, data, np.float32(2), np.float32(0),
                                  x, y, z, 1)
        c = volume_corners_s(tree, vals, gt, 1, np.float32(0), x, y, z)
        n = volume_sample_i(tree, vals, gt, x, y, z)
        r8 = volume_read8_c1(vals, volume_corner_slots(tree, gt, 1, x, y, z, 1), np.float32(0))
        e8 = volume_index_corners(tree, idxv, gt, x, y, z, 1)
        volume_store_f(tree, vals, gt, 3, 4, 5, s)
        out[t, 0] = s
        out[t, 1] = v + g[0] + g[1] + g[2]
        out[t, 2] = a[0] + a[1] + a[2] + j[0][1] + j[1][4]
        out[t, 3] = w[0] + w[1] + w[2] + wd[2]
        out[t, 4] = i + n
        out[t, 5] = d + c[3] + r8[2] + np.float32(e8[1] % 1000)
'''

HASH_KERNEL = '''
def hash_kernel(grid, keys, inv, q, r, out):
    t = cuda.grid(1)
    if t < q.shape[0]:
        state = hash_grid_query(grid, keys, inv, q[t, 0], q[t, 1], q[t, 2], r, 0, 0)
        n = 0
        acc = 0
        while True:
            ok, idx, state = hash_grid_query_next(grid, keys, state)
            if not ok:
                break
            n += 1
            acc += idx
        out[t, 0] = n
        out[t, 1] = acc + hash_grid_point_id(grid, t)
'''


def _kernels(ns):
    from numba import cuda
    ns = dict(ns, cuda=cuda, np=np)
    exec(VOLUME_KERNEL, ns)
    exec(HASH_KERNEL, ns)
    return ns


def _volume_inputs():
    v = Volume.load_from_nvdb(path("torus.nvdb"))
    rng = np.random.default_rng(0)
    pts = rng.uniform(-12, 12, (16, 3)).astype(np.float32)
    data = np.arange(v.get_voxel_count(), dtype=np.float32)
    return v, (*v.arrays(), v.gtype, v.xform_f, np.zeros(1, np.int64), data, pts)


def _hash_inputs():
    rng = np.random.default_rng(1)
    pts = rng.uniform(-2, 2, (500, 3)).astype(np.float32)
    g = HashGrid(8, 8, 8)
    g.build(pts, 0.5)
    return (*g.arrays(), g.cell_width_inv, pts[:16], np.float32(0.5))


def test_cores_under_the_cuda_simulator():
    from numba import cuda
    assert "simulator" in cuda.jit.__module__     # NUMBA_ENABLE_CUDASIM, set by tests/conftest.py
    dev = _kernels({**Q.compile_for(cuda.jit(device=True)),
                    **H.compile_for(cuda.jit(device=True))})
    host = _kernels({**{n: getattr(Q, n) for n in Q.PORTABLE},
                     **{n: getattr(H, n) for n in H.PORTABLE}})
    v, args = _volume_inputs()
    out = np.zeros((16, 6), np.float32)
    cuda.jit(dev["vol_kernel"])[1, 16](*[a.copy() if isinstance(a, np.ndarray) else a
                                         for a in args], out)
    want = np.zeros((16, 6), np.float32)
    for t in range(16):                       # the same kernel body as plain Python, per thread
        host["cuda"] = _FakeCuda(t)
        host["vol_kernel"](*[a.copy() if isinstance(a, np.ndarray) else a for a in args], want)
    np.testing.assert_array_equal(out, want)
    hargs = _hash_inputs()
    out = np.zeros((16, 2), np.int64)
    cuda.jit(dev["hash_kernel"])[1, 16](*hargs, out)
    want = np.zeros((16, 2), np.int64)
    for t in range(16):
        host["cuda"] = _FakeCuda(t)
        host["hash_kernel"](*hargs, want)
    np.testing.assert_array_equal(out, want)
    assert np.all(out[:, 0] > 0)


class _FakeCuda:
    def __init__(self, t):
        self.t = t

    def grid(self, _):
        return self.t


PTX_SCRIPT = '''
import numpy as np
from numba import cuda, types as nt
from weft.runtime.ptx import _assume_compute_capability
from weft.native.geometry import volume_query as Q, hashgrid as H
from tests.geometry.test_geometry_cuda import _kernels
ns = _kernels({**Q.compile_for(cuda.jit(device=True)), **H.compile_for(cuda.jit(device=True))})
A = lambda t, n=1: nt.Array(t, n, "C")
vol_sig = (A(nt.int32), A(nt.float32), nt.int64, A(nt.float32), A(nt.int64), A(nt.float32),
           A(nt.float32, 2), A(nt.float32, 2))
hash_sig = (A(nt.int32), A(nt.int64), nt.float32, A(nt.float32, 2), nt.float32, A(nt.int64, 2))
with _assume_compute_capability((9, 0)):
    for name, sig in (("vol_kernel", vol_sig), ("hash_kernel", hash_sig)):
        ptx, _ = cuda.compile_ptx(ns[name], sig, cc=(9, 0))
        assert ".target sm_90" in ptx and ".entry" in ptx, name
        print(name, len(ptx))
'''


@pytest.mark.ptx
def test_cores_compile_to_ptx():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", PTX_SCRIPT], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "vol_kernel" in r.stdout and "hash_kernel" in r.stdout
