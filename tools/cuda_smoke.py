"""Run a few weft programs on a real NVIDIA GPU and on the CPU, and compare every output.

    python tools/cuda_smoke.py

For a machine with a GPU (the suite's CUDA tests run under Numba's simulator unless
``WEFT_TEST_REAL_CUDA=1``): forward values, every ``.grad`` after a tape's backward pass,
forward-mode tangents, a tile reduction and matrix product, a captured graph's replay, and tile
gradients (the suite's ``shapes`` kernel, then one kernel per operation of it), each on
``"cuda"`` against the same program on ``"cpu"``. Prints one line per check and exits
non-zero if any differs. (Geometry is built on the CPU only: no mesh here.)
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import weft as wp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "data"))
import cuda_tile_kernels as tk  # noqa: E402 - the suite's tile kernels

FAILED = []


def check(name, got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape and got.size else 0.0
    print(f"{'ok  ' if ok else 'FAIL'} {name}: shape {got.shape}, max |cuda - cpu| {err:.3g}",
          flush=True)
    if not ok:
        FAILED.append(name)


@wp.func
def spring_force(p: wp.vec3, q: wp.vec3, rest: float):
    d = p - q
    n = wp.length(d)
    return d * ((n - rest) / wp.max(n, 1.0e-6))


@wp.kernel
def springs(x: wp.array(dtype=wp.vec3), k: float, steps: int, out: wp.array(dtype=float)):
    i = wp.tid()
    p = x[i]
    q = x[(i + 1) % x.shape[0]]
    e = float(0.0)
    for s in range(steps):  # loop-carried state
        f = spring_force(p, q, 0.5)
        p = p - k * f
        e = e + wp.dot(f, f)
    out[i] = e + wp.sin(p[0]) * wp.cos(p[1])


@wp.kernel
def rotate(q: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33),
           out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    r = wp.quat_rotate(wp.normalize(q[i]), v[i])
    out[i] = m[i] * r + wp.cross(r, v[i])


@wp.kernel
def scatter(idx: wp.array(dtype=int), val: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, idx[i], val[i] * val[i])


TILE = 32


@wp.kernel
def tile_sum_matmul(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
                    s: wp.array(dtype=float), c: wp.array2d(dtype=float)):
    ta = wp.tile_load(a, shape=(TILE, TILE))
    tb = wp.tile_load(b, shape=(TILE, TILE))
    wp.tile_store(s, wp.tile_sum(ta))
    wp.tile_store(c, wp.tile_matmul(ta, tb))


# ``tk.shapes`` is the suite's tile kernel whose ``a.grad`` was all zeros on an H200 in stop 78
# while its values matched; each ``tg_*`` kernel holds one of its operations, so that a run shows
# which adjoint differs
@wp.kernel
def tg_map(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_store(out, wp.tile_map(tk.bump, t) - t * 0.5, offset=(i * 4, 0))


@wp.kernel
def tg_gram(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_store(out, wp.tile_matmul(t, wp.tile_transpose(t)), offset=(i * 4, 0))


@wp.kernel
def tg_extremes(a: wp.array2d(dtype=float), r: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_store(r, wp.tile_max(t), offset=i * 2)
    wp.tile_store(r, wp.tile_min(t), offset=i * 2 + 1)


@wp.kernel
def tg_sum(a: wp.array2d(dtype=float), r: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_store(r, wp.tile_reduce(wp.add, t), offset=i)


@wp.kernel
def tg_int_output(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float),
                  ri: wp.array(dtype=int)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(4, 8), offset=(i * 4, 0))
    wp.tile_store(out, wp.tile_map(wp.sin, t), offset=(i * 4, 0))
    wp.tile_store(ri, wp.tile_argmax(t), offset=i)


def tile_gradient(kernel, outputs):
    """A program launching tile ``kernel`` over 2 blocks of 8 threads on an 8 x 8 ``a`` and
    ``outputs`` (shape, dtype), then backward from random seeds of its float outputs: returns
    the outputs' values and ``a.grad``."""
    def program(device):
        rng = np.random.default_rng(8)
        a = wp.array(rng.random((8, 8)).astype(np.float32), dtype=float, requires_grad=True,
                     device=device)
        outs = [wp.zeros(shape, dtype=dt, requires_grad=dt is float, device=device)
                for shape, dt in outputs]
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(kernel, dim=[2], inputs=[a, *outs], block_dim=8, device=device)
        seeds = {o: wp.array(rng.random(o.shape).astype(np.float32), dtype=float,
                             device=device) for o in outs if o.dtype == wp.float32}
        tape.backward(grads=seeds)
        return (*(o.numpy() for o in outs), a.grad.numpy())
    return program


def on(device, fn):
    with wp.ScopedDevice(device):
        return fn(device)


def program_springs(device):
    rng = np.random.default_rng(1)
    x = wp.array(rng.normal(size=(4096, 3)).astype(np.float32), dtype=wp.vec3,
                 requires_grad=True, device=device)
    out = wp.zeros(4096, dtype=float, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(springs, dim=4096, inputs=[x, 0.1, 7], outputs=[out], device=device)
    tape.backward(grads={out: wp.array(np.ones(4096, np.float32), device=device)})
    tan = wp.jvp(springs, 4096, inputs=[x, 0.1, 7], outputs=[out],
                 tangents={x: np.full((4096, 3), 0.5, np.float32)}, device=device)
    return out.numpy(), x.grad.numpy(), tan[out].numpy()


def program_rotate(device):
    rng = np.random.default_rng(2)
    n = 1000
    q = wp.array(rng.normal(size=(n, 4)).astype(np.float32), dtype=wp.quat,
                 requires_grad=True, device=device)
    v = wp.array(rng.normal(size=(n, 3)).astype(np.float32), dtype=wp.vec3,
                 requires_grad=True, device=device)
    m = wp.array(rng.normal(size=(n, 3, 3)).astype(np.float32), dtype=wp.mat33,
                 requires_grad=True, device=device)
    out = wp.zeros(n, dtype=wp.vec3, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(rotate, dim=n, inputs=[q, v, m], outputs=[out], device=device)
    tape.backward(grads={out: wp.array(np.ones((n, 3), np.float32), dtype=wp.vec3,
                                       device=device)})
    return out.numpy(), q.grad.numpy(), v.grad.numpy(), m.grad.numpy()


def program_scatter(device):
    rng = np.random.default_rng(3)
    n = 100000
    idx = wp.array(rng.integers(0, 97, n).astype(np.int32), dtype=int, device=device)
    val = wp.array(rng.random(n).astype(np.float32), dtype=float, requires_grad=True,
                   device=device)
    out = wp.zeros(97, dtype=float, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(scatter, dim=n, inputs=[idx, val], outputs=[out], device=device)
    tape.backward(grads={out: wp.array(np.arange(97, dtype=np.float32), device=device)})
    return out.numpy(), val.grad.numpy()


def program_tiles(device):
    rng = np.random.default_rng(4)
    a = wp.array(rng.random((TILE, TILE)).astype(np.float32), dtype=float, device=device)
    b = wp.array(rng.random((TILE, TILE)).astype(np.float32), dtype=float, device=device)
    s = wp.zeros(1, dtype=float, device=device)
    c = wp.zeros((TILE, TILE), dtype=float, device=device)
    wp.launch_tiled(tile_sum_matmul, dim=[1], inputs=[a, b], outputs=[s, c], block_dim=64,
                    device=device)
    return s.numpy(), c.numpy()


def program_capture(device):
    rng = np.random.default_rng(6)
    x = wp.array(rng.normal(size=(512, 3)).astype(np.float32), dtype=wp.vec3, device=device)
    out = wp.zeros(512, dtype=float, device=device)
    wp.launch(springs, dim=512, inputs=[x, 0.05, 3], outputs=[out], device=device)  # compiled
    if device != "cpu":
        with wp.ScopedCapture(device=device) as capture:
            for _ in range(3):
                wp.launch(springs, dim=512, inputs=[x, 0.05, 3], outputs=[out], device=device)
        wp.capture_launch(capture.graph)
    else:
        for _ in range(3):
            wp.launch(springs, dim=512, inputs=[x, 0.05, 3], outputs=[out], device=device)
    wp.synchronize()
    return (out.numpy(),)


def main():
    print("cuda available:", wp.is_cuda_available(), "devices:", wp.get_cuda_device_count(),
          flush=True)
    if not wp.is_cuda_available():
        return 1
    programs = [("springs (value, x.grad, tangent)", program_springs),
                ("rotate (value, q.grad, v.grad, m.grad)", program_rotate),
                ("scatter (value, val.grad)", program_scatter),
                ("tiles (sum, matmul)", program_tiles),
                ("graph capture replay", program_capture),
                ("tile shapes (values, a.grad)", tile_gradient(
                    tk.shapes, [((8, 8), float), ((6,), float), ((2,), int)])),
                ("tile map of a func (value, a.grad)", tile_gradient(tg_map, [((8, 8), float)])),
                ("tile t t^T (value, a.grad)", tile_gradient(tg_gram, [((8, 4), float)])),
                ("tile max, min (values, a.grad)", tile_gradient(tg_extremes, [((4,), float)])),
                ("tile sum stored (value, a.grad)", tile_gradient(tg_sum, [((2,), float)])),
                ("tile int output beside a float (values, a.grad)", tile_gradient(
                    tg_int_output, [((8, 8), float), ((2,), int)]))]
    for name, fn in programs:
        try:
            t0 = time.perf_counter()
            got = on("cuda:0", fn)
            t1 = time.perf_counter()
            want = on("cpu", fn)
            print(f"     {name}: cuda {t1 - t0:.1f} s (compile and run), cpu "
                  f"{time.perf_counter() - t1:.1f} s", flush=True)
            for j, (g, w) in enumerate(zip(got, want)):
                check(f"{name} [{j}]", g, w, rtol=2e-4, atol=2e-4)
        except Exception as exc:  # noqa: BLE001 (reported; the other programs still run)
            import traceback
            traceback.print_exc()
            print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
            FAILED.append(name)
    print("failed:", FAILED if FAILED else "none")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
