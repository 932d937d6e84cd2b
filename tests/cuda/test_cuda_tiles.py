"""Cooperative tiles on CUDA (``weft.transpiler.cuda_tiles``, ``weft.native.cuda_tiles``): a tile
block is a CUDA block of ``block_dim`` threads sharing each tile operation, its tiles in shared
memory. Under Numba's CUDA simulator (CI) each thread is a Python thread and every barrier is
real, so these tests check the sharing itself: values, every gradient and tangents equal the
CPU's (one thread per block), and each generated function compiles to PTX for sm_90."""
import os
import re
import sys

import numpy as np
import pytest

import weft as wp
from tests.cuda import launch_dims
from weft.core.errors import KernelError, LaunchError

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
import cuda_tile_kernels as tk  # noqa: E402

from .test_cuda import _subprocess  # noqa: E402

pytestmark = pytest.mark.cudasim

R = np.random.default_rng(3)
A16x8 = R.random((16, 8)).astype(np.float32)
B8x8 = R.random((8, 8)).astype(np.float32)
A8x8 = R.random((8, 8)).astype(np.float32)
A30 = R.random(30).astype(np.float32)
COL8 = R.random(8).astype(np.float32)
A4x4 = (R.random((4, 4)) - 0.5).astype(np.float32)

# (kernel, grid, block_dim, inputs (numpy; float arrays get gradients), outputs (shape, dtype))
CASES = {
    "chain": (tk.chain, 2, 16, [A16x8, B8x8], [((16, 8), float), ((1,), float)]),
    "shapes": (tk.shapes, 2, 8, [A8x8], [((8, 8), float), ((6,), float), ((2,), int)]),
    "rows": (tk.rows, 2, 8, [A8x8], [((8,), float)]),
    "padded": (tk.padded, 2, 8, [A30], [((40,), float)]),
    "elements": (tk.elements, (2, 2), 4, [A8x8, COL8], [((8, 8), float)]),
    "scans": (tk.scans, 2, 4, [A4x4], [((4, 4), float)] * 4),
    "tile_funcs": (tk.tile_funcs, 2, 4, [A8x8, B8x8], [((8, 8), float), ((2,), float)]),
    "view_sets": (tk.view_sets, 2, 4, [A8x8], [((8, 8), float)]),
    "carried_rows": (tk.carried_rows, 1, 4, [A8x8[:4] + 0.5], [((4, 8), float)]),
    "axis_sums": (tk.axis_sums, 1, 4, [A8x8[:2, :3] - 0.5], [((3,), float), ((2,), float)]),
}
AGAINST_NUMPY = {"chain", "padded", "elements", "scans", "carried_rows", "axis_sums"}


def _run(name, dev):
    kernel, grid, bd, ins, outs = CASES[name]
    inputs = [wp.array(x, dtype=float, device=dev, requires_grad=True) for x in ins]
    outputs = [wp.zeros(shape, dtype=dt, device=dev, requires_grad=dt is float)
               for shape, dt in outs]
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(kernel, dim=grid, inputs=inputs + outputs, block_dim=bd, device=dev)
    seeds = {o: np.random.default_rng(7).random(o.shape).astype(np.float32)
             for o in outputs if o.dtype == wp.float32}
    tape.backward(grads={o: wp.array(s, dtype=float, device=dev) for o, s in seeds.items()})
    values = [o.numpy().copy() for o in outputs]
    grads = [x.grad.numpy().copy() for x in inputs]
    return values, grads


def _chain_reference(seed_c, seed_s, tangent_a=None):
    """``chain`` in float64 with numpy: per block ``c = 2 tanh(A_i B) + A_i``, ``s = sum(c)``;
    the gradients of ``sum(c * seed_c) + s * seed_s``, and the tangent of ``c`` along
    ``tangent_a``."""
    A, B = A16x8.astype(np.float64), B8x8.astype(np.float64)
    M = np.concatenate([A[8 * i:8 * i + 8] @ B for i in range(2)])
    c = 2 * np.tanh(M) + A
    G = seed_c + seed_s[0]
    H = 2 * G * (1 - np.tanh(M) ** 2)
    dA = G + np.concatenate([H[8 * i:8 * i + 8] @ B.T for i in range(2)])
    dB = sum(A[8 * i:8 * i + 8].T @ H[8 * i:8 * i + 8] for i in range(2))
    tan = None
    if tangent_a is not None:
        dM = np.concatenate([tangent_a[8 * i:8 * i + 8] @ B for i in range(2)])
        tan = 2 * (1 - np.tanh(M) ** 2) * dM + tangent_a
    return [c, np.array([c.sum()])], [dA, dB], tan


def test_chain_on_cuda_against_numpy():
    # a tile load, product, tile_map of tanh, scalar operators, a store, a sum and an atomic
    # add of it; values and every gradient against float64 numpy
    values, grads = _run("chain", "cuda")
    seeds = [np.random.default_rng(7).random(o.shape).astype(np.float32) for o in values]
    want_v, want_g, _ = _chain_reference(seeds[0], seeds[1])
    for g, w in zip(values, want_v):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    for g, w in zip(grads, want_g):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)


def test_elements_on_cuda_against_numpy():
    # element reads and a write, a reshape, a broadcast and a transpose; every thread of the
    # block runs the scalar code: the write counts once, the reads' adjoints add up right
    values, grads = _run("elements", "cuda")
    G = np.random.default_rng(7).random((8, 8))
    A, col = A8x8.astype(np.float64), COL8.astype(np.float64)
    want, dA, dcol = np.zeros((8, 8)), np.zeros((8, 8)), np.zeros(8)
    for i in range(2):
        for j in range(2):
            rs, cs = slice(4 * i, 4 * i + 4), slice(4 * j, 4 * j + 4)
            t = A[rs, cs].copy()
            t[0, 0] = t[1, 2] * 3 + t[3, 3]
            b = np.broadcast_to(col[cs], (4, 4))
            want[rs, cs] = t * b + t.T
            g = G[rs, cs]
            adj = g * b + g.T            # the adjoint of t after the write
            adj_x = adj[0, 0]
            adj[0, 0] = 0
            adj[3, 3] += adj_x
            adj[1, 2] += 3 * adj_x
            dA[rs, cs] += adj
            dcol[cs] += (g * t).sum(axis=0)
    np.testing.assert_allclose(values[0], want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(grads[0], dA, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grads[1], dcol, rtol=2e-5, atol=2e-5)


def test_funcs_of_tiles_inlined_values_and_gradients_against_numpy():
    # funcs taking, making and returning tiles (one calling another, one called twice): on
    # CUDA each call is the func's body, its tiles in the kernel's shared memory
    values, grads = _run("tile_funcs", "cuda")
    Go = np.random.default_rng(7).random((8, 8))
    Gs = np.random.default_rng(7).random(2)
    A, B = A8x8.astype(np.float64), B8x8.astype(np.float64)
    V = 2 * np.sin(A) + B
    R = V * B
    s = np.array([R[4 * i:4 * i + 4].sum() + A[4 * i:4 * i + 4].sum() for i in range(2)])
    np.testing.assert_allclose(values[0], R, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(values[1], s, rtol=2e-5, atol=2e-5)
    gs = np.repeat(Gs, 4)[:, None]             # each block's seed of s, on its rows
    dR = Go + gs
    dV = dR * B
    np.testing.assert_allclose(grads[0], dV * 2 * np.cos(A) + gs, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grads[1], dR * V + dV, rtol=2e-5, atol=2e-5)
    # the tangents (the funcs' own tangent functions, inlined) along a direction of a
    ins = [wp.array(x, dtype=float, device="cuda") for x in (A8x8, B8x8)]
    outs = [wp.zeros((8, 8), dtype=float, device="cuda"), wp.zeros(2, dtype=float, device="cuda")]
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.tile_funcs, dim=2, inputs=ins + outs, block_dim=4, device="cuda")
    dA = np.random.default_rng(11).random((8, 8))
    t = tape.forward(tangents={ins[0]: wp.array(dA.astype(np.float32), dtype=float,
                                                device="cuda")})
    dR = 2 * np.cos(A) * dA * B
    np.testing.assert_allclose(t[outs[0]].numpy(), dR, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(t[outs[1]].numpy(), [(dR + dA)[4 * i:4 * i + 4].sum()
                                                    for i in range(2)], rtol=2e-5, atol=2e-5)
    src = tk.tile_funcs.source("forward", target="cuda")
    kernel = "\n".join(ln for ln in src[src.index("def tile_funcs__fwd("):].splitlines()
                       if not ln.strip().startswith("#"))   # (comments quote the calls)
    assert "mix(" not in kernel and "rows_of(" not in kernel and "sines(" not in kernel
    assert "_wk.tile_load2_into(" in kernel      # rows_of's load, into shared memory


def test_rows_assigned_in_a_loop_as_the_cpu():
    A = R.random((4, 8)).astype(np.float32)
    got = {}
    for dev in ("cuda", "cpu"):
        out = wp.zeros((4, 8), dtype=float, device=dev)
        wp.launch_tiled(tk.row_copies, dim=1, inputs=[wp.array(A, dtype=float, device=dev), out],
                        block_dim=4, device=dev)
        got[dev] = out.numpy()
    want = np.zeros((4, 8), np.float32)
    want[:3] = A[3:0:-1]
    np.testing.assert_array_equal(got["cuda"], want)
    np.testing.assert_array_equal(got["cpu"], want)


def _per_thread(dev, direction=None, derivatives=True):
    A = np.linspace(0.1, 0.9, 8).astype(np.float32)
    V = (np.arange(24, dtype=np.float32).reshape(8, 3) - 7) / 10
    M = (np.arange(32, dtype=np.float32).reshape(8, 2, 2) - 9) / 8
    ins = [wp.array(A, dtype=float, device=dev, requires_grad=True),
           wp.array(V, dtype=wp.vec3, device=dev, requires_grad=True),
           wp.array(M, dtype=wp.mat22, device=dev, requires_grad=True)]
    outs = [wp.zeros(8, dtype=float, device=dev, requires_grad=True),
            wp.zeros(8, dtype=wp.vec3, device=dev, requires_grad=True),
            wp.zeros(8, dtype=wp.mat22, device=dev, requires_grad=True),
            wp.zeros(1, dtype=float, device=dev, requires_grad=True)]
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.per_thread, dim=2, inputs=ins + outs, block_dim=4, device=dev)
    if not derivatives:
        return [o.numpy() for o in outs]
    rng = np.random.default_rng(5)
    seeds = [rng.random(o.shape + tuple(o.dtype._shape_) if hasattr(o.dtype, "_shape_") else
                        o.shape).astype(np.float32) for o in outs]
    tan = tape.forward(tangents={ins[0]: wp.array(direction, dtype=float, device=dev)})
    tape.backward(grads={o: wp.array(g, dtype=o.dtype, device=dev) for o, g in zip(outs, seeds)})
    return ([o.numpy() for o in outs], [x.grad.numpy() for x in ins], seeds, (A, V, M),
            [tan[o].numpy() for o in outs])


def test_threads_values_into_tiles_and_back_against_numpy(monkeypatch):
    # wp.tile(x) and untile on CUDA: each thread writes its element of a tile in shared
    # memory; the kernel compiles for the launch's block size. Values, every gradient and
    # the tangents against numpy, and against cooperative CPU blocks (Warp's CPU semantics)
    d = np.random.default_rng(9).random(8).astype(np.float32)
    vals, grads, seeds, (A, V, M), tans = _per_thread("cuda", d)
    a, v, m = A.astype(np.float64), V.astype(np.float64), M.astype(np.float64)
    t = a * a
    np.testing.assert_allclose(vals[0], 2 * (np.sin(t) + t), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(vals[1], 3 * v, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(vals[2], m * a[:, None, None], rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(vals[3], [t.sum()], rtol=2e-6)
    go, gv, gm, gs = (x.astype(np.float64) for x in seeds)
    da = 2 * go * (np.cos(t) + 1) * 2 * a + (gm * m).sum(axis=(1, 2)) + gs[0] * 2 * a
    np.testing.assert_allclose(grads[0], da, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grads[1], 3 * gv, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(grads[2], gm * a[:, None, None], rtol=2e-6, atol=1e-6)
    dt = 2 * a * d
    np.testing.assert_allclose(tans[0], 2 * (np.cos(t) + 1) * dt, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(tans[2], m * d[:, None, None], rtol=2e-6, atol=1e-6)
    # (the CPU's cooperative blocks keep this kernel's lane values in per-lane buffers, for
    # which weft builds no derivatives there: its values only)
    monkeypatch.setattr(wp.config, "enable_cpu_blocks", True)
    for got, want in zip(vals, _per_thread("cpu", derivatives=False)):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    # compiled once for the block size, its CUDA code each thread's element
    src = open(tk.per_thread.compiled("cuda", lanes=(4, True, 1)).module.__file__).read()
    assert "_wk.tile_of_lanes_into(" in src and "_wk.tile_lane_value(" in src


def test_a_kernel_whose_funcs_tiles_are_all_dead_compiles():
    # (Warp's test_tile_load_scoped) the func's load and the kernel's are dead: nothing is
    # left of the inlined body; the kernel's blocks must still be valid Python
    @wp.func
    def scoped(a: wp.array2d[float]):
        t = wp.tile_load(a, shape=(4, 4), offset=(0, 0), storage="shared")  # noqa: F841

    @wp.kernel(module="unique")
    def dead(a: wp.array2d[float], b: wp.array2d[float]):
        scoped(a)
        u = wp.tile_load(b, shape=(4, 4), offset=(0, 0), storage="shared")  # noqa: F841

    a = wp.ones((4, 4), dtype=float, device="cuda")
    wp.launch_tiled(dead, dim=1, inputs=[a, a], block_dim=4, device="cuda")
    assert "pass" in dead.source("forward", target="cuda")


def test_wp_jvp_of_a_kernel_of_the_blocks_threads():
    # wp.jvp compiles a kernel using wp.tile(x) for its launch's block (8 threads, one block)
    A = np.arange(8, dtype=np.float32) / 8
    d = np.linspace(1, 2, 8).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda")
    out = wp.zeros(8, dtype=float, device="cuda")
    t = wp.jvp(tk.block_sines, dim=8, inputs=[a], outputs=[out],
               tangents={a: wp.array(d, dtype=float, device="cuda")}, device="cuda")
    x, dx = 2 * A.astype(np.float64), 2 * d.astype(np.float64)
    np.testing.assert_allclose(out.numpy(), np.sin(x) + x.sum(), rtol=1e-6)
    np.testing.assert_allclose(t[out].numpy(), np.cos(x) * dx + dx.sum(), rtol=1e-5)


def test_tile_from_thread_one_threads_value_and_its_derivatives():
    # a plain launch in blocks of 4: thread 3 of each block fills the tile with its a[i]^2
    A = np.linspace(0.1, 0.8, 8).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros(8, dtype=float, device="cuda", requires_grad=True)
    s = wp.zeros(1, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(tk.from_thread, dim=8, inputs=[a, out, s], block_dim=4, device="cuda")
    x = A.astype(np.float64)[[3, 7]] ** 2
    np.testing.assert_allclose(out.numpy(), np.repeat(x, 4) + np.arange(8), rtol=1e-6)
    np.testing.assert_allclose(s.numpy(), [6 * np.sin(x).sum()], rtol=1e-6)
    tape.backward(grads={out: wp.ones(8, dtype=float, device="cuda"),
                         s: wp.array([0.5], dtype=float, device="cuda")})
    g = np.zeros(8)
    for j in (3, 7):  # only the filling thread's value has a gradient
        g[j] = (4 + 0.5 * 6 * np.cos(A[j].astype(np.float64) ** 2)) * 2 * A[j]
    np.testing.assert_allclose(a.grad.numpy(), g, rtol=1e-5, atol=1e-7)
    d = np.linspace(1.0, 2.0, 8).astype(np.float32)
    tan = tape.forward(tangents={a: wp.array(d, dtype=float, device="cuda")})
    dx = 2 * A.astype(np.float64)[[3, 7]] * d[[3, 7]]
    np.testing.assert_allclose(tan[out].numpy(), np.repeat(dx, 4), rtol=1e-5)
    np.testing.assert_allclose(tan[s].numpy(), [6 * (np.cos(x) * dx).sum()], rtol=1e-5)


def test_each_threads_value_added_into_a_tile_element():
    # s[0, k] += x by the 8 threads of each block, k and x each thread's own: the element gains
    # every thread's x (Warp's tile_add_inplace: atomic in shared memory), not one thread's;
    # values, gradients and tangents against numpy
    K = np.array([0, 1, 2, 0, 0, 2, 1, 0, 2, 2, 1, 0, 1, 1, 2, 0], np.int32)
    V = np.linspace(0.2, 1.7, 16).astype(np.float32)
    G = R.random((2, 3)).astype(np.float32)
    D = R.random(16).astype(np.float32)
    v = wp.array(V, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros((2, 3), dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.lanes_add, dim=2, inputs=[wp.array(K, dtype=int, device="cuda"), v,
                                                     out], block_dim=8, device="cuda")
    tape.backward(grads={out: wp.array(G, dtype=float, device="cuda")})
    tan = tape.forward(tangents={v: wp.array(D, dtype=float, device="cuda")})
    x, d, g = V.astype(np.float64), D.astype(np.float64), G.astype(np.float64)
    want, grad, dout = np.zeros((2, 3)), np.zeros(16), np.zeros((2, 3))
    for n in range(16):
        b, k = n // 8, K[n]
        want[b, k] += 2 * x[n] ** 2
        want[b, 2 - k] -= 2 * x[n]
        grad[n] = 4 * x[n] * g[b, k] - 2 * g[b, 2 - k]
        dout[b, k] += 4 * x[n] * d[n]
        dout[b, 2 - k] -= 2 * d[n]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tan[out].numpy(), dout, rtol=1e-5, atol=1e-6)


def test_each_threads_vector_added_into_a_tile_element_and_what_cannot_be():
    # s[j % 2] += 2 a[j] for a tile of vec2: each component atomically; values, gradients and
    # tangents against numpy. A tile dtype CUDA cannot add atomically is refused (the threads'
    # read and write back would race), on the line
    A = R.random((8, 2)).astype(np.float32)
    G = R.random((4, 2)).astype(np.float32)
    D = R.random((8, 2)).astype(np.float32)
    a = wp.array(A, dtype=wp.vec2, device="cuda", requires_grad=True)
    out = wp.zeros(4, dtype=wp.vec2, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.vec_adds, dim=2, inputs=[a, out], block_dim=4, device="cuda")
    tape.backward(grads={out: wp.array(G, dtype=wp.vec2, device="cuda")})
    tan = tape.forward(tangents={a: wp.array(D, dtype=wp.vec2, device="cuda")})
    slot = [(n // 4) * 2 + (n % 4) % 2 for n in range(8)]
    want, dwant = np.zeros((4, 2)), np.zeros((4, 2))
    for n in range(8):
        want[slot[n]] += 2 * A[n].astype(np.float64)
        dwant[slot[n]] += 2 * D[n].astype(np.float64)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 2 * G[slot], rtol=1e-6)
    np.testing.assert_allclose(tan[out].numpy(), dwant, rtol=1e-6)

    @wp.kernel(module="unique")
    def halves(out: wp.array(dtype=wp.float16)):
        b, j = wp.tid()
        s = wp.tile_zeros(shape=2, dtype=wp.float16)
        s[0] += wp.float16(1.0)
        wp.tile_store(out, s)

    with pytest.raises(KernelError, match="adds every thread's value atomically") as e:
        wp.launch_tiled(halves, dim=1, inputs=[wp.zeros(2, dtype=wp.float16, device="cuda")],
                        block_dim=4, device="cuda")
    assert "s[0] += wp.float16(1.0)" in str(e.value)


def test_each_threads_scatters_values_gradients_and_tangents():
    # tile_scatter_add and tile_scatter_masked by the 8 threads of each block, against numpy
    A = np.linspace(0.3, 1.8, 16).astype(np.float32)
    G = R.random(16).astype(np.float32)
    D = R.random(16).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros(16, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.scatters, dim=2, inputs=[a, out], block_dim=8, device="cuda")
    tape.backward(grads={out: wp.array(G, dtype=float, device="cuda")})
    tan = tape.forward(tangents={a: wp.array(D, dtype=float, device="cuda")})
    x, g, d = A.astype(np.float64), G.astype(np.float64), D.astype(np.float64)
    want, grad, dout = np.zeros(16), np.zeros(16), np.zeros(16)
    for b in range(2):
        xs, gs, ds = x[8 * b:8 * b + 8], g[8 * b:8 * b + 8], d[8 * b:8 * b + 8]
        t, u, dt, du = np.zeros(4), np.zeros(8), np.zeros(4), np.zeros(8)
        for i in range(8):
            if i != 5:
                t[i % 4] += xs[i] ** 2
                dt[i % 4] += 2 * xs[i] * ds[i]
                grad[8 * b + i] += xs[i] * (gs[i % 4] + gs[i % 4 + 4])
            if i % 2 == 0:
                u[(i + 1) % 8] = 3 * xs[i]
                du[(i + 1) % 8] = 3 * ds[i]
                grad[8 * b + i] += 3 * gs[(i + 1) % 8]
        want[8 * b:8 * b + 8] = u + 0.5 * t[np.arange(8) % 4]
        dout[8 * b:8 * b + 8] = du + 0.5 * dt[np.arange(8) % 4]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tan[out].numpy(), dout, rtol=1e-5, atol=1e-6)


def test_random_tiles_as_the_cpus_blocks(monkeypatch):
    # element e of a random tile is lane e % B's draw e // B + 1 (Warp's register layout): on
    # CUDA blocks of 8 threads as the CPU's cooperative blocks of 8 lanes, of 1 thread as the
    # CPU's one-thread blocks, bit for bit
    got = {}
    for dev, bd, blocks in (("cuda", 8, False), ("cpu", 8, True), ("cuda", 1, False),
                            ("cpu", 1, False)):
        monkeypatch.setattr(wp.config, "enable_cpu_blocks", blocks)
        out = wp.zeros((8, 8), dtype=float, device=dev)
        outi = wp.zeros((8, 8), dtype=int, device=dev)
        wp.launch_tiled(tk.random_tiles, dim=2, inputs=[42, out, outi], block_dim=bd, device=dev)
        got[dev, bd] = out.numpy(), outi.numpy()
    for bd in (8, 1):
        for g, c in zip(got["cuda", bd], got["cpu", bd]):
            np.testing.assert_array_equal(g, c)
    f, n = got["cuda", 8]
    assert 0 <= f.min() and f.max() < 2 and 3 <= n.min() and n.max() < 50
    assert len(np.unique(f)) == 64 and not np.array_equal(f, got["cuda", 1][0])

    @wp.kernel(module="unique")
    def per_lane(out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        wp.tile_store(out, wp.tile_randf(shape=(4, 8), rng=wp.rand_init(3, j)), offset=(i, 0))

    with pytest.raises(LaunchError, match="differs between the threads"):
        wp.launch_tiled(per_lane, dim=1, inputs=[wp.zeros((4, 8), dtype=float, device="cuda")],
                        block_dim=8, device="cuda")


def test_tile_stacks_of_a_blocks_threads_as_warp():
    # a block's stack (Warp's tile_stack_t: slots by atomics on a shared count, clamped to
    # the capacity and to zero): 4 pushes, 4 more of which 2 fit, 8 pops of which 2 find it
    # empty (the dtype's zero, slot -1), a clear; which odd thread wins a slot is the order
    # of the atomics, so the values are compared as sets
    out = wp.full(16, -7, dtype=int, device="cuda")
    counts = wp.zeros(8, dtype=int, device="cuda")
    popped = wp.full(16, 5.0, dtype=float, device="cuda")
    vecs = wp.zeros(16, dtype=wp.vec2, device="cuda")
    slots = wp.full(16, 9, dtype=int, device="cuda")
    wp.launch_tiled(tk.stacks, dim=2, inputs=[out, counts, popped, vecs, slots], block_dim=8,
                    device="cuda")
    np.testing.assert_array_equal(counts.numpy().reshape(2, 4), [[4, 6, 0, 0]] * 2)
    for b, row in enumerate(out.numpy().reshape(2, 8)):
        got = sorted(row.tolist())
        for even in (b, 20 + b, 40 + b, 60 + b):
            got.remove(even)
        odd = [v for v in got if v >= 100]
        assert len(odd) == 2 and set(odd) <= {101, 103, 105, 107}, row
        assert sorted(v for v in got if v < 100) == [0, 0], row  # the two empty pops
    # the slots the 8 pops took: the 6 filled, top first in some thread order, and -1 twice
    for row in slots.numpy().reshape(2, 8):
        assert sorted(row.tolist()) == [-1, -1, 0, 1, 2, 3, 4, 5], row
    # thread 3 pushed its first slot (-1: it pushed nothing then); one thread pops it
    for row in popped.numpy().reshape(2, 8):
        assert sorted(row.tolist()) == [-1.0] + [0.0] * 7, row
    # a stack of vectors: each thread pops one of the block's 8 pushes
    for b, row in enumerate(vecs.numpy().reshape(2, 8, 2)):
        assert sorted(map(tuple, row.tolist())) == [(float(j), float(b)) for j in range(8)]


def test_a_tile_of_vectors_full_of_one_vector():
    # (Warp's test_tile_full_default_dtype) the vector's components fill every element;
    # values and gradients as the CPU's and numpy's
    A = R.random((2, 2)).astype(np.float32)
    G = R.random((2, 4, 3)).astype(np.float32)
    got = {}
    for dev in ("cuda", "cpu"):
        a = wp.array(A, dtype=float, device=dev, requires_grad=True)
        out = wp.zeros((2, 4), dtype=wp.vec3, device=dev, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.vec_full, dim=2, inputs=[a, out], block_dim=4, device=dev)
        tape.backward(grads={out: wp.array(G, dtype=wp.vec3, device=dev)})
        got[dev] = out.numpy(), a.grad.numpy()
    a64 = A.astype(np.float64)
    want = 2 * np.stack([a64[:, 0], np.full(2, 2.0), a64[:, 1] ** 2], axis=1)
    np.testing.assert_allclose(got["cuda"][0], np.repeat(want[:, None, :], 4, axis=1), rtol=1e-6)
    grad = np.stack([2 * G[:, :, 0].sum(1), 4 * a64[:, 1] * G[:, :, 2].sum(1)], axis=1)
    np.testing.assert_allclose(got["cuda"][1], grad, rtol=1e-5)
    for g, c in zip(got["cuda"], got["cpu"]):
        np.testing.assert_allclose(g, c, rtol=1e-6)


def test_each_threads_bits_combined_into_a_tile_element():
    # s[0] |= x, s[1] ^= x, s[2] &= x by the 8 threads of a block: every thread's bits
    A = np.array([0b10110110, 0xFFFF0F0F], np.uint32)
    out = wp.zeros(6, dtype=wp.uint32, device="cuda")
    wp.launch_tiled(tk.bits, dim=2, inputs=[wp.array(A, dtype=wp.uint32, device="cuda"), out],
                    block_dim=8, device="cuda")
    even = sum(1 << j for j in range(0, 8, 2))  # the bits the even threads clear
    want = [[a & 0xFF, 0xFF, 0xFFFFFFFF & ~even] for a in A.tolist()]
    np.testing.assert_array_equal(out.numpy().reshape(2, 3), want)


def test_each_thread_writes_a_row_of_its_own_matrix_element():
    # t[j][1] = v by each thread j (a composite element written by every thread, was thread
    # 0's only), values and gradients against numpy
    A = np.linspace(0.5, 1.2, 8).astype(np.float32)
    G = R.random((8, 2, 2)).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros(8, dtype=wp.mat22, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.own_rows, dim=2, inputs=[a, out], block_dim=4, device="cuda")
    tape.backward(grads={out: wp.array(G, dtype=wp.mat22, device="cuda")})
    D = R.random(8).astype(np.float32)
    tan = tape.forward(tangents={a: wp.array(D, dtype=float, device="cuda")})
    x = A.astype(np.float64)
    want = np.zeros((8, 2, 2))
    want[:, 1, 0], want[:, 1, 1] = 2 * x, 2 * x * x
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), 2 * G[:, 1, 0] + 4 * x * G[:, 1, 1], rtol=1e-5)
    dwant = np.zeros((8, 2, 2))
    dwant[:, 1, 0], dwant[:, 1, 1] = 2 * D, 4 * x * D
    np.testing.assert_allclose(tan[out].numpy(), dwant, rtol=1e-5)


def test_tiles_over_48_kib_take_dynamic_shared_memory():
    # 16 KiB tiles: each entry needs more than the 48 KiB of static shared memory, so its
    # buffers are parts of the block's dynamic shared memory, which the launch gives; values,
    # gradients and tangents against numpy, equal to the CPU's
    X = R.random((2, tk.BIG)).astype(np.float32)
    W = R.random((2, tk.BIG // 4))
    GO = R.random((2, tk.BIG)).astype(np.float32)
    GT = R.random(2)
    DX = R.random((2, tk.BIG)).astype(np.float32)
    got = {}
    for dev in ("cuda", "cpu"):
        x = wp.array(X, dtype=float, device=dev, requires_grad=True)
        w = wp.array(W, dtype=wp.float64, device=dev, requires_grad=True)
        out = wp.zeros((2, tk.BIG), dtype=float, device=dev, requires_grad=True)
        total = wp.zeros(2, dtype=wp.float64, device=dev, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.big_tiles, dim=2, inputs=[x, w, out, total], block_dim=32,
                            device=dev)
        tape.backward(grads={out: wp.array(GO, dtype=float, device=dev),
                             total: wp.array(GT, dtype=wp.float64, device=dev)})
        tan = tape.forward(tangents={x: wp.array(DX, dtype=float, device=dev),
                                     w: wp.array(W, dtype=wp.float64, device=dev)})
        got[dev] = [out.numpy(), total.numpy(), x.grad.numpy(), w.grad.numpy(),
                    tan[out].numpy(), tan[total].numpy()]
    shared = dict(tk.big_tiles.compiled("cuda").abi.dynamic_shared)
    assert set(shared) == {"forward", "adjoint", "tangent"}
    assert all(48 * 1024 < b <= 227 * 1024 for b in shared.values()), shared
    assert "cuda.shared.array(0, _wk.shared_float32)" in tk.big_tiles.source("forward",
                                                                             target="cuda")
    x64 = X.astype(np.float64)
    want = [x64 * x64 + np.sin(x64), (W * W).sum(axis=1), GO * (2 * x64 + np.cos(x64)),
            2 * W * GT[:, None], (2 * x64 + np.cos(x64)) * DX, (2 * W * W).sum(axis=1)]
    for g, c, w_ in zip(got["cuda"], got["cpu"], want):
        np.testing.assert_allclose(g, c, rtol=2e-6, atol=1e-6)
        np.testing.assert_allclose(g, w_, rtol=2e-6, atol=1e-6)


def test_tiles_over_what_any_gpu_gives_a_block_are_refused():
    # 32 KiB tiles: the forward fits in dynamic shared memory (96 KiB), the adjoint's tiles
    # would need more than 227 KiB: its CUDA derivatives are refused when launched, by name
    @wp.kernel(module="unique")
    def huge(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        a = wp.tile_load(x, shape=8192)
        wp.tile_store(out, a * a + wp.tile_map(wp.sin, a))

    x = wp.array(np.ones(8192, np.float32), device="cuda", requires_grad=True)
    out = wp.zeros(8192, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(huge, dim=1, inputs=[x, out], block_dim=32, device="cuda")
    np.testing.assert_allclose(out.numpy(), 1 + np.sin(1.0), rtol=1e-6)
    with pytest.raises(KernelError, match="more than the 232448 the largest CUDA GPUs"):
        tape.backward(grads={out: wp.ones(8192, dtype=float, device="cuda")})


def test_a_gpu_launch_opts_in_to_its_dynamic_shared_memory(monkeypatch):
    # no GPU here: the launch's opt-in checked against numba-cuda's driver calls, stood in for
    from numba import config as numba_config
    from numba import cuda
    from numba.cuda.cudadrv import driver as drv
    from weft.runtime.entries import _DynamicShared
    calls = []

    class Device:
        MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 100_000
        id = 0

    class Kernel:
        class _codelibrary:
            @staticmethod
            def get_cufunc():
                return type("F", (), {"handle": "h", "device": Device})()

    class Dispatcher:
        def __getitem__(self, config):
            calls.append(("config", config))
            return lambda *args: calls.append(("launch", args))

        def typeof_pyval(self, v):
            return type(v).__name__

        def compile(self, sig):
            calls.append(("compile", sig))
            return Kernel

    class Driver:
        def cuKernelSetAttribute(self, attr, value, handle, dev):
            calls.append(("attribute", attr.name, value, handle, dev))

    monkeypatch.setattr(numba_config, "ENABLE_CUDASIM", False)
    monkeypatch.setattr(cuda, "get_current_device", lambda: Device)
    monkeypatch.setattr(drv, "driver", Driver(), raising=False)  # (the simulator's module)
    ck = type("CK", (), {"key": "k"})()
    dispatcher = Dispatcher()
    _DynamicShared(ck, dispatcher, 3, 32, 80_000)((1,), 2.0)
    assert calls == [("config", (3, 32, 0, 80_000)), ("compile", ("tuple", "float")),
                     ("attribute", "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 80_000,
                      "h", 0), ("launch", ((1,), 2.0))]
    calls.clear()  # the next launch of the same signature: opted in already
    _DynamicShared(ck, dispatcher, 3, 32, 80_000)((1,), 3.0)
    assert calls == [("config", (3, 32, 0, 80_000)), ("launch", ((1,), 3.0))]
    calls.clear()
    with pytest.raises(LaunchError, match="need 120000 bytes .* more than the 100000"):
        _DynamicShared(ck, Dispatcher(), 3, 32, 120_000)((1,), 2.0)
    assert [c[0] for c in calls] == ["config"]  # nothing compiled, nothing launched


def test_what_a_func_of_tiles_cannot_do_on_cuda_is_refused_at_its_own_line():
    # a func carrying a tile through a loop of a trip count known only when running: its
    # forward runs (inlined); its adjoint needs a stack of the loop's tiles of a size not known
    # when compiling, which CUDA's shared memory cannot hold: refused at launch, with the line
    # in the func
    @wp.func
    def summed(t: wp.tile[float, 4], n: int):
        acc = wp.tile_zeros(shape=4, dtype=float)
        for k in range(n):
            acc = acc * t + t * float(k)
        return acc

    @wp.kernel(module="unique")
    def on_gpu(a: wp.array[float], out: wp.array[float], n: int):
        wp.tile_store(out, summed(wp.tile_load(a, shape=4), n))

    a = wp.array(np.arange(4, dtype=np.float32), device="cuda", requires_grad=True)
    out = wp.zeros(4, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(on_gpu, dim=1, inputs=[a, out, 3], block_dim=2, device="cuda")
    x = np.arange(4.0)
    np.testing.assert_array_equal(out.numpy(), x * x + 2 * x)  # acc: 0, t, t * t + 2 t
    with pytest.raises(KernelError, match=r"test_cuda_tiles.py:(\d+): kernel 'on_gpu': its "
                       r"adjoint and tangent on CUDA needs the adjoint of a loop carrying a "
                       r"tile, whose trip count is not known") as err:
        tape.backward(grads={out: wp.ones(4, dtype=float, device="cuda")})
    line = int(re.search(r"test_cuda_tiles.py:(\d+): kernel", str(err.value)).group(1))
    first = sys._getframe().f_code.co_firstlineno
    src = open(__file__).read().splitlines()
    loop = next(i + 1 for i in range(first, len(src)) if "for k in range(n):" in src[i])
    assert line in (loop, loop + 1), str(err.value)   # the func's loop, not the kernel's call


def _carried_rows64(t):
    b = np.zeros((4, 8))
    for i in range(3):
        b[i + 1] = np.sin(t[3 - i]) * b[i] + t[i]
    return b


def test_carried_rows_and_axis_sums_against_numpy():
    # a loop carrying a tile (its adjoint's stack in shared memory), sums along both axes:
    # values, and gradients against central differences of the float64 numpy (carried rows) or
    # their closed form (sums)
    values, grads = _run("carried_rows", "cuda")
    t = A8x8[:4].astype(np.float64) + 0.5
    np.testing.assert_allclose(values[0], _carried_rows64(t), rtol=2e-5, atol=2e-6)
    G = np.random.default_rng(7).random((4, 8))
    fd, h = np.zeros((4, 8)), 1e-6
    for idx in np.ndindex(4, 8):
        e = np.zeros((4, 8))
        e[idx] = h
        fd[idx] = ((_carried_rows64(t + e) - _carried_rows64(t - e)) * G).sum() / (2 * h)
    np.testing.assert_allclose(grads[0], fd, rtol=2e-4, atol=2e-5)
    values, grads = _run("axis_sums", "cuda")
    a = A8x8[:2, :3].astype(np.float64) - 0.5
    np.testing.assert_allclose(values[0], (a * a).sum(axis=0), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(values[1], np.sin(a).sum(axis=1), rtol=2e-6, atol=1e-6)
    gy, gz = (np.random.default_rng(7).random(n) for n in (3, 2))  # (_run's seeds)
    np.testing.assert_allclose(grads[0], 2 * a * gy[None, :] + np.cos(a) * gz[:, None],
                               rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(set(CASES) - AGAINST_NUMPY))
def test_tile_kernel_on_cuda_matches_cpu(name):
    cpu_vals, cpu_grads = _run(name, "cpu")
    gpu_vals, gpu_grads = _run(name, "cuda")
    for g, c in zip(gpu_vals, cpu_vals):
        if c.dtype.kind == "i":
            np.testing.assert_array_equal(g, c)
        else:  # the simulator does not fuse multiply-adds, the CPU's products do
            np.testing.assert_allclose(g, c, rtol=2e-5, atol=2e-6)
    for g, c in zip(gpu_grads, cpu_grads):
        np.testing.assert_allclose(g, c, rtol=2e-5, atol=2e-5)
    assert any(np.abs(c).sum() > 0 for c in cpu_grads)  # gradients are not trivially zero


def test_scans_against_numpy_and_their_tangents_against_the_cpu():
    # lane 0 scans each block's tile in the CPU's order: the same bits as the CPU's
    values, grads = _run("scans", "cuda")
    cpu_vals, cpu_grads = _run("scans", "cpu")
    for g, c in zip(values + grads, cpu_vals + cpu_grads):
        np.testing.assert_array_equal(g, c)
    rows = [A4x4[2 * i:2 * i + 2].reshape(-1).astype(np.float64) for i in range(2)]
    want = [np.cumsum(r * r) for r in rows], [np.cumsum(r) - r for r in rows], \
        [np.maximum.accumulate(r) for r in rows], [np.minimum.accumulate(r) for r in rows]
    for got, w in zip(values, want):
        np.testing.assert_allclose(got.reshape(2, 8), np.array(w), rtol=1e-6, atol=1e-7)
    direction = R.random((4, 4)).astype(np.float32)
    tangents = []
    for dev in ("cuda", "cpu"):
        a = wp.array(A4x4, dtype=float, device=dev, requires_grad=True)
        outs = [wp.zeros((4, 4), dtype=float, device=dev, requires_grad=True) for _ in range(4)]
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.scans, dim=2, inputs=[a] + outs, block_dim=4, device=dev)
        t = tape.forward(tangents={a: direction})
        tangents.append([t[o].numpy() for o in outs])
    for g, c in zip(*tangents):
        np.testing.assert_array_equal(g, c)
    d = [direction[2 * i:2 * i + 2].reshape(-1).astype(np.float64) for i in range(2)]
    arg = [np.array([np.argmax(r[:k + 1]) for k in range(8)]) for r in rows]
    np.testing.assert_allclose(tangents[0][2].reshape(2, 8),
                               np.array([di[ai] for di, ai in zip(d, arg)]), rtol=1e-6)
    np.testing.assert_allclose(tangents[0][0].reshape(2, 8),
                               np.array([np.cumsum(2 * r * di) for r, di in zip(rows, d)]),
                               rtol=1e-5, atol=1e-6)


def test_padded_load_and_store_gradient_is_analytic():
    # out[i*16 + 5 + k] = 2 * a[i*16 - 3 + k] for k < 16: block 0 loads three pads (zeros) and
    # a[0:13], block 1 a[13:29]; every element loaded is stored inside out, so d sum(out) / d a
    # is 2 there, and 0 for a[29], never loaded
    a = wp.array(A30, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros(40, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.padded, dim=2, inputs=[a, out], block_dim=8, device="cuda")
    tape.backward(grads={out: wp.ones(40, dtype=float, device="cuda")})
    want = np.zeros(40, np.float32)
    want[8:21] = 2 * A30[:13]
    want[21:37] = 2 * A30[13:29]
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(a.grad.numpy(), np.r_[np.full(29, 2.0), 0.0])


def test_tangents_against_numpy():
    dev = "cuda"
    a = wp.array(A16x8, dtype=float, device=dev)
    b = wp.array(B8x8, dtype=float, device=dev)
    c = wp.zeros((16, 8), dtype=float, device=dev)
    s = wp.zeros(1, dtype=float, device=dev)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.chain, dim=2, inputs=[a, b, c, s], block_dim=16, device=dev)
    direction = np.random.default_rng(11).random((16, 8)).astype(np.float32)
    t = tape.forward(tangents={a: direction})
    _, _, want = _chain_reference(np.zeros((16, 8)), np.zeros(1), direction.astype(np.float64))
    np.testing.assert_allclose(t[c].numpy(), want, rtol=2e-5, atol=2e-5)


def test_loops_of_trip_counts_known_when_running_values_and_gradients():
    # Warp's tiled GEMM (a K loop accumulating tile_matmul into a tile; the trip count from an
    # array's shape): its adjoint needs none of the loop's tiles back (the replay of the
    # carried tile is dead by flow, weft.transpiler.flowdead), so no stack: values and
    # gradients against float64 numpy. The same for Warp's tile_sum loop (s += a sum), whose
    # replay writes elementwise into fresh arrays that nothing reads back
    A = R.random((16, 12)).astype(np.float32)
    B = R.random((12, 8)).astype(np.float32)
    G = R.random((16, 8)).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda", requires_grad=True)
    b = wp.array(B, dtype=float, device="cuda", requires_grad=True)
    c = wp.zeros((16, 8), dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.gemm, dim=(2, 2), inputs=[a, b, c], block_dim=16, device="cuda")
    A64, B64, G64 = (x.astype(np.float64) for x in (A, B, G))
    np.testing.assert_allclose(c.numpy(), A64 @ B64, rtol=1e-5)
    tape.backward(grads={c: wp.array(G, dtype=float, device="cuda")})
    np.testing.assert_allclose(a.grad.numpy(), G64 @ B64.T, rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), A64.T @ G64, rtol=1e-5)
    X = R.random((3, 12)).astype(np.float32)
    x = wp.array(X, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros(3, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.row_sums, dim=3, inputs=[x, out], block_dim=4, device="cuda")
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(out.numpy(), 0.5 * np.sin(X64).sum(axis=1), rtol=1e-5)
    tape.backward(grads={out: wp.array(np.array([1.0, 2.0, 3.0], np.float32), device="cuda")})
    np.testing.assert_allclose(x.grad.numpy(), 0.5 * np.cos(X64) * [[1.0], [2.0], [3.0]],
                               rtol=1e-5)
    src = tk.row_sums.source("adjoint", target="cuda")
    assert "stack_slot" not in src and "tile_sum" in src  # no stack; the sum's adjoint runs


def test_launch_configuration_is_a_cuda_block_per_tile_block(monkeypatch):
    from weft.runtime import entries
    seen = []
    call = entries.call_once

    def spy(ck_, kind, fn, dims, values, extra=()):
        seen.append((kind, *launch_dims(fn), tuple(dims)))
        return call(ck_, kind, fn, dims, values, extra)
    monkeypatch.setattr(entries, "call_once", spy)
    a = wp.array(A8x8, dtype=float, device="cuda")
    out = wp.zeros(8, dtype=float, device="cuda")
    wp.launch_tiled(tk.rows, dim=2, inputs=[a, out], block_dim=8, device="cuda")
    assert seen == [("forward", (2, 1, 1), (8, 1, 1), (2, 8))]
    np.testing.assert_allclose(out.numpy(), np.prod(A8x8, axis=1), rtol=1e-6)
    # a plain launch makes blocks of block_dim consecutive threads; its launch index (here the
    # row block) differs between them: refused before anything runs
    with pytest.raises(LaunchError, match="computed from launch index 0"):
        wp.launch(tk.rows, dim=16, inputs=[a, out], block_dim=8, device="cuda")
    with pytest.raises(LaunchError, match="must be whole blocks of block_dim=8"):
        wp.launch(tk.rows, dim=12, inputs=[a, out], block_dim=8, device="cuda")
    with pytest.raises(LaunchError, match="block_dim must be from 1 to 1024"):
        wp.launch_tiled(tk.rows, dim=2, inputs=[a, out], block_dim=2048, device="cuda")


def test_a_plain_launch_makes_blocks_of_consecutive_threads():
    # Warp's wp.launch of a tile kernel: block_dim consecutive threads share the tiles; here
    # each block is one (i, j), every thread reads its own element of the block's tile
    A = R.random((16, 8)).astype(np.float32)
    out = {}
    for dev in ("cpu", "cuda"):
        a = wp.array(A, dtype=float, device=dev, requires_grad=True)
        b = wp.zeros((2, 2), dtype=float, device=dev, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(tk.extract, dim=(2, 2, 8, 4), inputs=[a, b], block_dim=32, device=dev)
        tape.backward(grads={b: wp.ones((2, 2), dtype=float, device=dev)})
        out[dev] = (b.numpy().copy(), a.grad.numpy().copy())
    want = 2 * A.reshape(2, 8, 2, 4).astype(np.float64).sum(axis=(1, 3))
    for dev in ("cpu", "cuda"):
        np.testing.assert_allclose(out[dev][0], want, rtol=1e-5)
        np.testing.assert_array_equal(out[dev][1], np.full((16, 8), 2.0))
    # 16 threads a block would put two tile blocks' indices in one CUDA block: refused
    with pytest.raises(LaunchError, match="computed from launch index 1"):
        wp.launch(tk.extract, dim=(2, 2, 8, 4), inputs=[wp.array(A, dtype=float, device="cuda"),
                                                       wp.zeros((2, 2), dtype=float,
                                                                device="cuda")],
                  block_dim=64, device="cuda")


def test_tiles_of_vectors_against_numpy():
    # a tile of vec3 (its components a trailing axis in shared memory): a load, operators, an
    # element read, a sum and a store; values and gradients against numpy
    A = R.random((16, 3)).astype(np.float32)
    a = wp.array(A, dtype=wp.vec3, device="cuda", requires_grad=True)
    out = wp.zeros(16, dtype=wp.vec3, device="cuda", requires_grad=True)
    n = wp.zeros(2, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.vectors, dim=2, inputs=[a, out, n], block_dim=4, device="cuda")
    tape.backward(grads={out: wp.ones(16, dtype=wp.vec3, device="cuda"),
                         n: wp.ones(2, dtype=float, device="cuda")})
    u = 2 * A.astype(np.float64) + 1
    np.testing.assert_allclose(out.numpy(), u, rtol=1e-6)
    blocks = u.reshape(2, 8, 3)
    v = blocks[:, 3]
    np.testing.assert_allclose(n.numpy(), np.linalg.norm(v, axis=1) + blocks[:, :, 1].sum(1),
                               rtol=1e-5)
    want = np.full((16, 3), 2.0)                    # from out
    want.reshape(2, 8, 3)[:, :, 1] += 2.0           # from s[0][1]
    want.reshape(2, 8, 3)[:, 3] += 2 * v / np.linalg.norm(v, axis=1, keepdims=True)
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-5)


def test_fft_and_ifft_against_numpy():
    # Warp's tile_fft/tile_ifft (unnormalized, along the last axis of a vec2d tile); their
    # adjoints are each other (as Warp's)
    X = R.random((8, 8, 2))
    x = wp.array(X, dtype=wp.vec2d, device="cuda", requires_grad=True)
    y = wp.zeros((8, 8), dtype=wp.vec2d, device="cuda", requires_grad=True)
    z = wp.zeros((8, 8), dtype=wp.vec2d, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.transforms, dim=(2, 1), inputs=[x, y, z], block_dim=4,
                        device="cuda")
    gy, gz = R.random((8, 8, 2)), R.random((8, 8, 2))
    tape.backward(grads={y: wp.array(gy, dtype=wp.vec2d, device="cuda"),
                         z: wp.array(gz, dtype=wp.vec2d, device="cuda")})

    def c(a):
        return a[..., 0] + 1j * a[..., 1]

    def pairs(a):
        return np.stack([a.real, a.imag], axis=-1)
    cx = c(X)
    np.testing.assert_allclose(y.numpy(), pairs(np.fft.fft(cx, axis=1)), atol=1e-12)
    want_z = np.zeros((8, 8, 2))
    want_z[:4, :6] = pairs(6 * np.fft.ifft(cx[:4, :6], axis=1))
    np.testing.assert_allclose(z.numpy(), want_z, atol=1e-12)
    grad = pairs(8 * np.fft.ifft(c(gy), axis=1))          # the adjoint of fft: ifft
    grad[:4, :6] += pairs(np.fft.fft(c(gz)[:4, :6], axis=1))  # of ifft: fft
    np.testing.assert_allclose(x.grad.numpy(), grad, atol=1e-12)


def test_cholesky_and_solves_against_numpy():
    r = np.random.default_rng(4)
    M = r.random((8, 8))
    A = (M @ M.T + 8 * np.eye(8)).astype(np.float32)
    B = r.random((8, 3)).astype(np.float32)
    Y = r.random(8).astype(np.float32)
    arrays = [wp.array(A, dtype=float, device="cuda", requires_grad=True),
              wp.array(B, dtype=float, device="cuda", requires_grad=True),
              wp.zeros((8, 8), dtype=float, device="cuda", requires_grad=True),
              wp.zeros((8, 3), dtype=float, device="cuda", requires_grad=True),
              wp.array(Y, dtype=float, device="cuda", requires_grad=True),
              wp.zeros(8, dtype=float, device="cuda", requires_grad=True)]
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.factor, dim=1, inputs=arrays, block_dim=4, device="cuda")
    A64 = A.astype(np.float64)
    np.testing.assert_allclose(arrays[2].numpy(), np.linalg.cholesky(A64), atol=1e-6)
    np.testing.assert_allclose(arrays[3].numpy(), np.linalg.solve(A64, B), atol=1e-6)
    np.testing.assert_allclose(arrays[5].numpy(), np.linalg.solve(A64, Y), atol=1e-6)
    # every gradient and tangent as the CPU's (the same phases, each entry's terms in the
    # CPU's order; the simulator does not fuse multiply-adds either)
    seeds = [r.random((8, 8)).astype(np.float32), r.random((8, 3)).astype(np.float32),
             r.random(8).astype(np.float32)]
    directions = [r.random((8, 8)).astype(np.float32), r.random((8, 3)).astype(np.float32),
                  r.random(8).astype(np.float32)]
    got = {}
    for dev in ("cuda", "cpu"):
        arrs = [wp.array(x, dtype=float, device=dev, requires_grad=True) for x in (A, B)] + \
            [wp.zeros(sh, dtype=float, device=dev, requires_grad=True)
             for sh in ((8, 8), (8, 3))] + \
            [wp.array(Y, dtype=float, device=dev, requires_grad=True),
             wp.zeros(8, dtype=float, device=dev, requires_grad=True)]
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.factor, dim=1, inputs=arrs, block_dim=4, device=dev)
        t = tape.forward(tangents={arrs[0]: directions[0], arrs[1]: directions[1],
                                   arrs[4]: directions[2]})
        tangents = [t[arrs[k]].numpy() for k in (2, 3, 5)]
        tape.backward(grads={arrs[2]: wp.array(seeds[0], device=dev),
                             arrs[3]: wp.array(seeds[1], device=dev),
                             arrs[5]: wp.array(seeds[2], device=dev)})
        got[dev] = [arrs[k].grad.numpy() for k in (0, 1, 4)] + tangents
    for g, c in zip(got["cuda"], got["cpu"]):
        np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-6)
    # and one against numpy: the tangent of the 3-column solve, A^-1 (dB - dA' x) with the
    # lower triangle of dA mirrored (the factor reads only the lower triangle)
    dA = np.tril(directions[0].astype(np.float64))
    dA = dA + np.tril(dA, -1).T
    x = np.linalg.solve(A64, B)
    np.testing.assert_allclose(got["cuda"][4], np.linalg.solve(A64, directions[1] - dA @ x),
                               rtol=1e-4, atol=1e-5)


def test_each_thread_writes_its_own_element():
    # Warp's idiom for filling a tile in parallel: thread l writes element l; block_dim() is
    # the CUDA block's. Each element's adjoint goes back to the thread that wrote it.
    A = R.random((8, 4)).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda", requires_grad=True)
    out = wp.zeros((8, 4), dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.own_elements, dim=2, inputs=[a, out], block_dim=16, device="cuda")
    G = R.random((8, 4)).astype(np.float32)
    tape.backward(grads={out: wp.array(G, dtype=float, device="cuda")})
    blocks = [slice(0, 4), slice(4, 8)]
    want = np.concatenate([2 * A[b].T for b in blocks]) + 16.0
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), np.concatenate([2 * G[b].T for b in blocks]),
                               rtol=1e-6)


def test_float16_tiles_values_and_gradients():
    # half arrays hold their bits; a float16 tile holds float32 values rounded to half
    rng = np.random.default_rng(7)
    a_np = rng.random((2, 4)).astype(np.float16)
    b_np = rng.random((4, 3)).astype(np.float32)
    a = wp.array(a_np, dtype=wp.float16, device="cuda", requires_grad=True)
    b = wp.array(b_np, device="cuda", requires_grad=True)
    out = wp.zeros((2, 3), dtype=wp.float16, device="cuda", requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(tk.half_tiles, dim=[1], inputs=[a, b, out], block_dim=8, device="cuda")
    u = b_np.astype(np.float16).astype(np.float32)
    want = (a_np.astype(np.float32) @ u).astype(np.float16).astype(np.float32) + a_np[:, :3]
    np.testing.assert_allclose(out.numpy().astype(np.float32), want, rtol=2e-3)
    tape.backward(grads={out: np.ones((2, 3), np.float16)})
    grad_a = np.ones((2, 3)) @ u.T
    grad_a[:, :3] += 1.0
    np.testing.assert_allclose(a.grad.numpy().astype(np.float32), grad_a, rtol=2e-3)
    np.testing.assert_allclose(b.grad.numpy(), a_np.astype(np.float32).T @ np.ones((2, 3)),
                               rtol=2e-3)


def test_gather_by_a_tile_of_indices():
    S = R.random((8, 4)).astype(np.float32)
    index = np.array([3, 1, 3, 6], np.int32)
    src = wp.array(S, dtype=float, device="cuda", requires_grad=True)
    dst = wp.zeros((4, 4), dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.gather_rows, dim=1, inputs=[src, wp.array(index, dtype=int,
                                                                    device="cuda"), dst],
                        block_dim=4, device="cuda")
    np.testing.assert_array_equal(dst.numpy(), S[index])
    G = R.random((4, 4)).astype(np.float32)
    tape.backward(grads={dst: wp.array(G, dtype=float, device="cuda")})
    want = np.zeros((8, 4))
    np.add.at(want, index, G)            # the repeated row adds up (one thread adds them)
    np.testing.assert_allclose(src.grad.numpy(), want, rtol=1e-6)


def test_negative_steps_and_tile_dot():
    A = R.random((4, 8)).astype(np.float32)
    U, V = R.random(16).astype(np.float32), R.random(16).astype(np.float32)
    a = wp.array(A, dtype=float, device="cuda", requires_grad=True)
    u = wp.array(U, dtype=float, device="cuda", requires_grad=True)
    v = wp.array(V, dtype=float, device="cuda", requires_grad=True)
    dst = wp.zeros((4, 3), dtype=float, device="cuda", requires_grad=True)
    d = wp.zeros(1, dtype=float, device="cuda", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(tk.reversed_dot, dim=1, inputs=[a, u, v, dst, d], block_dim=8,
                        device="cuda")
    np.testing.assert_array_equal(dst.numpy(), A[::-1, 6:1:-2])
    np.testing.assert_allclose(d.numpy()[0], U.astype(np.float64) @ V, rtol=1e-5)
    G = R.random((4, 3)).astype(np.float32)
    tape.backward(grads={dst: wp.array(G, dtype=float, device="cuda"),
                         d: wp.ones(1, dtype=float, device="cuda")})
    want = np.zeros((4, 8), np.float32)
    want[::-1, 6:1:-2] = G
    np.testing.assert_array_equal(a.grad.numpy(), want)
    np.testing.assert_allclose(u.grad.numpy(), V, rtol=1e-6)   # every element, not one
    np.testing.assert_allclose(v.grad.numpy(), U, rtol=1e-6)


def test_the_lane_in_scalar_code_and_in_a_tile_operation():
    a = wp.array(np.arange(16, dtype=np.float32), dtype=float, device="cuda")
    out = wp.zeros(2, dtype=float, device="cuda")
    # the lane only picks which thread stores a scalar: fine
    wp.launch_tiled(tk.lane_store, dim=2, inputs=[a, out], block_dim=8, device="cuda")
    np.testing.assert_array_equal(out.numpy(), [28.0, 92.0])
    # a tile load at an offset that differs between the block's threads: Warp's lanes would
    # each load their own elements; refused, not a silently different tile
    out8 = wp.zeros(16, dtype=float, device="cuda")
    with pytest.raises(LaunchError, match="differs between the threads of a CUDA block"):
        wp.launch_tiled(tk.lane_offset, dim=2, inputs=[a, out8], block_dim=8, device="cuda")
    assert not out8.numpy().any()


def test_a_scatter_by_every_thread_of_the_block_as_warp_on_each_device():
    # (refused on CUDA before stop 63) wp.tid() is the block's index: each of the 4 threads of
    # the CUDA block adds a[0] into t[0], as on Warp's GPU; the CPU's block is one thread
    @wp.kernel(module="unique")
    def k(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(a, shape=4)
        wp.tile_scatter_add(t, i % 4, a[i], True)
        wp.tile_store(out, t)

    for dev, want in (("cuda", [5, 2, 3, 4]), ("cpu", [2, 2, 3, 4])):
        a = wp.array(np.arange(1.0, 5.0, dtype=np.float32), dtype=float, device=dev)
        out = wp.zeros(4, dtype=float, device=dev)
        wp.launch_tiled(k, dim=1, inputs=[a, out], block_dim=4, device=dev)
        np.testing.assert_array_equal(out.numpy(), want)


PTX = """
import numpy as np, cuda_tile_kernels as tk
from weft.runtime.ptx import compile_ptx
f = lambda *s: np.zeros(s, np.float32)
cases = {"chain": (tk.chain, [f(16, 8), f(8, 8), f(16, 8), f(1)], (2, 16)),
         "gemm": (tk.gemm, [f(16, 12), f(12, 8), f(16, 8)], (2, 2, 16)),
         "elements": (tk.elements, [f(8, 8), f(8), f(8, 8)], (2, 2, 4)),
         "vectors": (tk.vectors, [f(16, 3), f(16, 3), f(2)], (2, 4)),
         "half": (tk.half_tiles, [np.zeros((2, 4), np.float16), f(4, 3),
                                  np.zeros((2, 3), np.float16)], (1, 8)),
         "factor": (tk.factor, [f(8, 8), f(8, 3), f(8, 8), f(8, 3), f(8), f(8)], (1, 4)),
         "transforms": (tk.transforms, [f(8, 8, 2).astype(np.float64)] * 3, (2, 1, 4)),
         "scans": (tk.scans, [f(4, 4)] * 5, (2, 4)),
         "sort": (tk.sort_pairs, [f(24), f(24, 2), f(24), f(24, 2)], (2, 4)),
         "scalar_uses": (tk.scalar_uses, [f(8), f(1), f(8), f(2, 2)], (2, 4)),
         "diag_axpy": (tk.diag_axpy, [f(4, 4), f(4), f(1), f(4), f(4, 4), f(4)], (1, 4)),
         "indexed": (tk.indexed, [f(6, 3), np.zeros(4, np.int32), f(6, 3), f(3, 6), f(6),
                                  f(6)], (1, 4)),
         "tile_funcs": (tk.tile_funcs, [f(8, 8), f(8, 8), f(8, 8), f(2)], (2, 4)),
         "view_sets": (tk.view_sets, [f(8, 8), f(8, 8)], (2, 4)),
         "row_copies": (tk.row_copies, [f(4, 8), f(4, 8)], (1, 4)),
         "per_thread": (tk.per_thread, [f(8), f(8, 3), f(8, 2, 2), f(8), f(8, 3), f(8, 2, 2),
                                        f(1)], (2, 4)),
         "carried_rows": (tk.carried_rows, [f(4, 8), f(4, 8)], (1, 4)),
         "axis_sums": (tk.axis_sums, [f(2, 3), f(3), f(2)], (1, 4)),
         "row_sums": (tk.row_sums, [f(3, 12), f(3)], (3, 4)),
         "from_thread": (tk.from_thread, [f(8), f(8), f(1)], (8,)),
         "big": (tk.big_tiles, [f(2, tk.BIG), np.zeros((2, tk.BIG // 4)), f(2, tk.BIG),
                                np.zeros(2)], (2, 32)),
         "lanes_add": (tk.lanes_add, [np.zeros(16, np.int32), f(16), f(2, 3)], (2, 8)),
         "scatters": (tk.scatters, [f(16), f(16)], (2, 8)),
         "random": (tk.random_tiles, [np.int32(42), f(8, 8), np.zeros((8, 8), np.int32)],
                    (2, 8)),
         "stacks": (tk.stacks, [np.zeros(16, np.int32), np.zeros(8, np.int32), f(16),
                                f(16, 2), np.zeros(16, np.int32)], (2, 8)),
         "vec_full": (tk.vec_full, [f(2, 2), f(2, 4, 3)], (2, 4)),
         "bits": (tk.bits, [np.zeros(2, np.uint32), np.zeros(6, np.uint32)], (2, 8)),
         "vec_adds": (tk.vec_adds, [f(8, 2), f(4, 2)], (2, 4))}
only = {"gemm": ("forward", "adjoint"), "sort": ("forward",), "row_copies": ("forward",),
        "carried_rows": ("adjoint",), "axis_sums": ("forward", "adjoint"),
        "row_sums": ("adjoint",), "from_thread": ("forward", "adjoint"), "big": ("forward",),
        "lanes_add": ("forward",), "scatters": ("forward", "adjoint"), "random": ("forward",),
        "stacks": ("forward",), "vec_full": ("forward",), "bits": ("forward",),
        "vec_adds": ("forward",)}
# where the checks read which memory an atomic addresses (global, shared), which NVVM's
# optimiser infers: compiled at its level 3 whatever NUMBA_OPT says (tests/conftest.py)
optimised = {"chain", "lanes_add", "scatters"}
for name, (k, args, dims) in cases.items():
    kinds = only.get(name, ("forward", "adjoint", "tangent"))
    opt = True if name in optimised else None
    for kind, text in compile_ptx(k, args, dims=dims, kinds=kinds, opt=opt).items():
        print(name, kind, ".target sm_90" in text, text.count("bar.sync"),
              ".shared" in text, "atom.global.add.f32" in text, ".extern .shared" in text,
              "atom.shared.add.f32" in text, "nocopy_reshape" in text)
"""


@pytest.mark.ptx
def test_cuda_tile_functions_compile_to_ptx_for_hopper(tmp_path):
    # (one process: split in two, each process compiled the helpers again, 45 s more in all)
    pytest.importorskip("numba.cuda")
    r = _subprocess(PTX, WEFT_CACHE_DIR=str(tmp_path))
    if "NvvmSupportError" in r.stderr or "libNVVM cannot be found" in r.stderr:
        pytest.skip("NVVM is not installed (pip install 'numba-cuda[cu13]')")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {(a, b): rest for a, b, *rest in (ln.split() for ln in r.stdout.splitlines())}
    assert len(rows) == 58, r.stdout
    for (name, kind), (sm90, barriers, shared, atomic, dynamic, _, reshape) in rows.items():
        assert sm90 == "True" and shared == "True", (name, kind)
        # views made in place, not numba-cuda's reshape: it links a CUDA C helper, and
        # numba-cuda's disk cache cannot keep a kernel that links one
        assert reshape == "False", (name, kind)
        assert int(barriers) >= 4, (name, kind)     # every operation between barriers
        # over 48 KiB of tiles: the block's dynamic shared memory; static below
        assert dynamic == str(name == "big"), (name, kind)
    assert rows[("chain", "forward")][3] == "True"  # tile_atomic_add: a real float atomic
    assert rows[("chain", "adjoint")][3] == "True"  # the loads' adjoints add atomically
    assert rows[("lanes_add", "forward")][5] == "True"  # t[i, j] += x: atomics in shared memory
    assert rows[("scatters", "forward")][5] == "True"   # tile_scatter_add too


def test_sort_keys_and_vector_values_as_the_cpu():
    # ties (kept in order: stable), -0.0 before +0.0, NaNs last; two blocks of 12 pairs
    keys = np.array([3, 1, np.nan, 0.0, -0.0, 1, -2, 5, np.nan, 1, 0.0, -7,
                     2, 2, 2, -1, 4, 0.5, -0.0, 9, 8, np.inf, -np.inf, 2], np.float32)
    vals = np.arange(48, dtype=np.float32).reshape(24, 2)
    got = {}
    for dev in ("cuda", "cpu"):
        ok = wp.zeros(24, dtype=float, device=dev)
        ov = wp.zeros(24, dtype=wp.vec2, device=dev)
        wp.launch_tiled(tk.sort_pairs, dim=2, inputs=[wp.array(keys, dtype=float, device=dev),
                                                      wp.array(vals, dtype=wp.vec2, device=dev),
                                                      ok, ov], block_dim=4, device=dev)
        got[dev] = ok.numpy(), ov.numpy()
    for g, c in zip(got["cuda"], got["cpu"]):
        np.testing.assert_array_equal(g.view(np.uint32), c.view(np.uint32))  # -0.0 too
    for b in range(2):
        k = keys[12 * b:12 * b + 12]
        # a stable order: by value, -0.0 before +0.0, NaNs last
        order = sorted(range(12), key=lambda i: (np.isnan(k[i]), 0.0 if np.isnan(k[i]) else
                                                 k[i], not np.signbit(k[i]), i))
        np.testing.assert_array_equal(got["cuda"][1][12 * b:12 * b + 12], vals[12 * b:][order])


def test_scalar_code_every_thread_runs_counts_once_in_gradients():
    # every thread of a block holds s[0], which `t * s[0]` takes once per block: its adjoint is
    # one thread's; every thread stores v[i]: one thread takes its adjoint (an atomic exchange,
    # not a read then a reset that the threads of a warp would each pass before any reset)
    A = R.random(8).astype(np.float32)
    S = np.array([1.25], np.float32)
    G = R.random(8).astype(np.float32)
    GV = R.random((2, 2)).astype(np.float32)
    got = {}
    for dev in ("cuda", "cpu"):
        a = wp.array(A, dtype=float, device=dev, requires_grad=True)
        s = wp.array(S, dtype=float, device=dev, requires_grad=True)
        out = wp.zeros(8, dtype=float, device=dev, requires_grad=True)
        v = wp.zeros(2, dtype=wp.vec2, device=dev, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.scalar_uses, dim=2, inputs=[a, s, out, v], block_dim=4,
                            device=dev)
        tape.backward(grads={out: wp.array(G, dtype=float, device=dev),
                             v: wp.array(GV, dtype=wp.vec2, device=dev)})
        got[dev] = [out.numpy(), v.numpy(), a.grad.numpy(), s.grad.numpy()]
    a64, s64, g64, gv = A.astype(np.float64), float(S[0]), G.astype(np.float64), \
        GV.astype(np.float64)
    m = s64 * a64.reshape(2, 4).sum(axis=1)
    dm = 3 * gv[:, 0] + 18 * m * gv[:, 1]          # d(3m, 9m^2) . g_v
    want_a = g64 * s64 + np.repeat(dm, 4) * s64
    want_s = g64 @ a64 + dm @ a64.reshape(2, 4).sum(axis=1)
    for dev in ("cuda", "cpu"):
        np.testing.assert_allclose(got[dev][1], np.stack([3 * m, 9 * m * m], axis=1), rtol=1e-5)
        np.testing.assert_allclose(got[dev][2], want_a, rtol=1e-5)
        np.testing.assert_allclose(got[dev][3], [want_s], rtol=1e-5)
    src = tk.scalar_uses.source("adjoint", target="cuda")
    assert "_wk.atomic_exch(adj_v, (i, 0)" in src and "_wk.tile_lane() == 0" in src


def test_diag_add_and_axpy_values_and_gradients():
    A = R.random((4, 4)).astype(np.float32)
    D, X = R.random(4).astype(np.float32), R.random(4).astype(np.float32)
    S = np.array([0.75], np.float32)
    G, GY = R.random((4, 4)).astype(np.float32), R.random(4).astype(np.float32)
    got = {}
    for dev in ("cuda", "cpu"):
        ins = [wp.array(v, dtype=float, device=dev, requires_grad=True) for v in (A, D, S, X)]
        out = wp.zeros((4, 4), dtype=float, device=dev, requires_grad=True)
        y = wp.zeros(4, dtype=float, device=dev, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.diag_axpy, dim=1, inputs=ins + [out, y], block_dim=4, device=dev)
        tape.backward(grads={out: wp.array(G, dtype=float, device=dev),
                             y: wp.array(GY, dtype=float, device=dev)})
        got[dev] = [out.numpy(), y.numpy()] + [v.grad.numpy() for v in ins]
    for g, c in zip(got["cuda"], got["cpu"]):
        np.testing.assert_array_equal(g, c)
    d64, g64, gy = D.astype(np.float64), G.astype(np.float64), GY.astype(np.float64)
    np.testing.assert_allclose(got["cuda"][0], A + np.diag(d64 * d64), rtol=1e-6)
    np.testing.assert_allclose(got["cuda"][1], X + S[0] * d64, rtol=1e-6)
    want = [g64, 2 * d64 * np.diag(g64) + S[0] * gy, [gy @ d64], gy]  # a, d, s, x
    for g, w in zip(got["cuda"][2:], want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_indexed_loads_stores_and_adds_as_the_cpu():
    # rows gathered (axis 0) and columns scattered (axis 1), a repeated index (the last write
    # stays, as on the CPU), an indexed atomic add; values and gradients against the CPU
    A = R.random((6, 3)).astype(np.float32)
    V = R.random(6).astype(np.float32)
    index = np.array([4, 0, 5, 0], np.int32)
    seeds = [R.random((6, 3)).astype(np.float32), R.random((3, 6)).astype(np.float32),
             R.random(6).astype(np.float32)]
    got = {}
    for dev in ("cuda", "cpu"):
        a = wp.array(A, dtype=float, device=dev, requires_grad=True)
        v = wp.array(V, dtype=float, device=dev, requires_grad=True)
        outs = [wp.zeros(x.shape, dtype=float, device=dev, requires_grad=True) for x in seeds]
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(tk.indexed, dim=1, inputs=[a, wp.array(index, dtype=int, device=dev),
                                                       outs[0], outs[1], v, outs[2]],
                            block_dim=4, device=dev)
        tape.backward(grads={o: wp.array(g, dtype=float, device=dev)
                             for o, g in zip(outs, seeds)})
        got[dev] = [o.numpy() for o in outs] + [a.grad.numpy(), v.grad.numpy()]
    for g, c in zip(got["cuda"], got["cpu"]):
        np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-7)
    rows = np.zeros((6, 3), np.float32)
    rows[index] = 2 * A[index]  # index 0 twice: the same value
    np.testing.assert_array_equal(got["cuda"][0], rows)
    cols = np.zeros((3, 6), np.float32)
    cols[:, index] = A[index].T
    np.testing.assert_array_equal(got["cuda"][1], cols)
    added = np.zeros(6)
    np.add.at(added, index, V[[0, 1, 2, 3]])
    np.testing.assert_allclose(got["cuda"][2], added, rtol=1e-6)


def test_tile_sum_in_the_cpu_order():
    """A reduction to one value on CUDA (every lane computes it from the shared tile) adds in
    the CPU's order (``simd.sum_flat``: 32 running sums, pairwise): the same bits, for lengths
    around the 32 lanes."""
    from numba import cuda

    from weft.native import cuda_tiles, tiles

    @cuda.jit
    def total(x, out):
        out[0] = cuda_tiles.tile_sum_scalar(x)

    r = np.random.default_rng(1)
    for n in (1, 13, 31, 32, 33, 100, 257):
        x = r.standard_normal(n).astype(np.float32)
        out = np.zeros(1, np.float32)
        total[1, 1](x, out)
        assert out[0] == tiles.tile_sum_scalar(x), n


def test_a_blocks_geometry_query_is_refused_on_cuda():
    # tile_bvh_query_next / tile_mesh_query_aabb_next run on the CPU only (docs/tiles.md; weft
    # builds its BVHs and meshes on the CPU only): refused when compiled, at the line
    @wp.kernel(module="unique")
    def tiled_query(bvh: wp.uint64, hits: wp.array(dtype=int)):
        query = wp.tile_bvh_query_aabb(bvh, wp.vec3(0.0), wp.vec3(1.0))
        while wp.tile_query_valid(query):
            item = wp.untile(wp.tile_bvh_query_next(query))
            if item >= 0:
                wp.atomic_add(hits, item, 1)

    hits = wp.zeros(4, dtype=int, device="cuda")
    with pytest.raises(KernelError, match=r"test_cuda_tiles.py:\d+:\d+: in kernel 'tiled_query'"
                       r"(.|\n)*tile_bvh_query_next is not supported on CUDA yet"):
        wp.launch_tiled(tiled_query, dim=1, inputs=[wp.uint64(0), hits], block_dim=4,
                        device="cuda")
