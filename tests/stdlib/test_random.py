"""Random numbers: Warp's streams, bit for bit.

Expected values come from two independent sources: a plain-Python transcription of Warp's
``rand.h`` (the PCG hash of Jarzynski & Olano), and numbers printed by NVIDIA Warp 1.19 on the
CPU for the same kernel (seed 42, thread 0).
"""
import math

import numpy as np

import weft as wp

M = 0xFFFFFFFF


def pcg(s):
    b = (s * 747796405 + 2891336453) & M
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & M
    return (c >> 22) ^ c


def i32(u):
    return u - (1 << 32) if u >= 1 << 31 else u


def f32(u):
    return np.float32(u >> 8) * np.float32(1.0 / 16777216.0)


@wp.kernel
def draw(seed: int, outf: wp.array2d(dtype=float), outi: wp.array2d(dtype=int),
         outn: wp.array2d(dtype=float)):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    for k in range(4):
        outf[tid, k] = wp.randf(state)
        outi[tid, k] = wp.randi(state)
        outn[tid, k] = wp.randn(state)
    outi[tid, 4] = wp.randi(state, -5, 17)
    outf[tid, 4] = wp.randf(state, 2.0, 3.0)
    outn[tid, 4] = float(wp.randu(state) % wp.uint32(1000))


def _run(seed=42, n=6):
    f = wp.zeros((n, 5), dtype=float)
    i = wp.zeros((n, 5), dtype=int)
    g = wp.zeros((n, 5), dtype=float)
    wp.launch(draw, n, inputs=[seed, f, i, g])
    return f.numpy(), i.numpy(), g.numpy()


def _reference(seed, tid):
    s = pcg((seed + pcg(tid)) & M)
    f, i, g = [], [], []
    for _ in range(4):
        s = pcg(s)
        f.append(f32(s))
        s = pcg(s)
        i.append(i32(s))
        s = pcg(s)
        u1 = f32(s)
        s = pcg(s)
        u2 = f32(s)
        g.append(np.float32(math.sqrt(-2.0 * math.log(u1 + np.float32(5.96e-8))))
                 * np.float32(math.cos(np.float32(2.0 * np.pi) * u2)))
    s = pcg(s)
    i.append(i32((s % ((17 - -5) & M) + -5) & M))
    s = pcg(s)
    f.append(np.float32(1.0) * f32(s) + np.float32(2.0))
    s = pcg(s)
    g.append(float(s % 1000))
    return np.array(f, np.float32), np.array(i), np.array(g, np.float32)


def test_streams_match_warps_algorithm():
    f, i, g = _run()
    for tid in range(6):
        rf, ri, rg = _reference(42, tid)
        np.testing.assert_array_equal(f[tid], rf)
        np.testing.assert_array_equal(i[tid], ri)
        np.testing.assert_allclose(g[tid], rg, rtol=2e-6)  # libm log/cos may differ by an ulp


def test_streams_match_numbers_printed_by_warp():
    f, i, g = _run()
    np.testing.assert_array_equal(f[0], np.array([0.8659751415252686, 0.8265858292579651,
                                                  0.6210899949073792, 0.5942437052726746,
                                                  2.8112874031066895], np.float32))
    np.testing.assert_array_equal(i[0], [798497746, -865574100, -572175448, -665265446, 7])
    np.testing.assert_allclose(g[0], [0.7695993781089783, -0.10110349208116531,
                                      0.4943672716617584, 0.1863674819469452, 525.0], rtol=2e-6)


def test_uniform_statistics():
    f, _, g = _run(seed=7, n=2000)
    u = f[:, :4].ravel()
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.02
    z = g[:, :4].ravel()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1.0) < 0.05


@wp.kernel
def samplers(out3: wp.array2d(dtype=wp.vec3), out2: wp.array2d(dtype=wp.vec2)):
    tid = wp.tid()
    state = wp.rand_init(3, tid)
    out3[tid, 0] = wp.sample_unit_sphere_surface(state)
    out3[tid, 1] = wp.sample_unit_sphere(state)
    out2[tid, 0] = wp.sample_unit_disk(state)
    out2[tid, 1] = wp.sample_unit_ring(state)
    out2[tid, 2] = wp.sample_triangle(state)


def test_samplers_match_numbers_printed_by_warp():
    a = wp.zeros((64, 2), dtype=wp.vec3)
    b = wp.zeros((64, 3), dtype=wp.vec2)
    wp.launch(samplers, 64, inputs=[a, b])
    got = np.concatenate([a.numpy()[0].ravel(), b.numpy()[0].ravel()])
    warp = [0.01368514820933342, -0.9953870177268982, 0.09495992213487625, 0.5527376532554626,
            0.588601291179657, 0.05949430912733078, 0.10330351442098618, 0.7290728688240051,
            0.04765184596180916, -0.9988639950752258, 0.2738490104675293, 0.31791189312934875]
    np.testing.assert_allclose(got, warp, rtol=2e-6, atol=1e-7)
    sphere = np.linalg.norm(a.numpy()[:, 0], axis=1)
    ball = np.linalg.norm(a.numpy()[:, 1], axis=1)
    np.testing.assert_allclose(sphere, 1.0, rtol=1e-5)
    assert (ball <= 1.0 + 1e-6).all() and (np.linalg.norm(b.numpy()[:, 0], axis=1) <= 1.0).all()
    np.testing.assert_allclose(np.linalg.norm(b.numpy()[:, 1], axis=1), 1.0, rtol=1e-5)
    tri = b.numpy()[:, 2]
    assert (tri >= 0).all() and (tri.sum(1) <= 1.0 + 1e-6).all()
