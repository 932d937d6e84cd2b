"""Reference values of ``wp.noise``, ``wp.pnoise`` and ``wp.curlnoise`` from NVIDIA Warp.

Run with a Python that has Warp 1.19 installed (CPU is enough)::

    python tests/data/make_noise_reference.py > /tmp/ref.py

and paste what it prints over the block between the ``BEGIN WARP REFERENCE`` and
``END WARP REFERENCE`` markers of ``tests/stdlib/test_noise.py``. Floats are printed as the
shortest decimal that reads back as the same float32, so the test can compare bit for bit.

``tests/stdlib/test_noise.py`` imports ``points`` and the constants from here (without Warp).
"""
import contextlib
import sys
import textwrap

import numpy as np

try:
    import warp as wp
except ImportError:  # the tests import points() from here without Warp
    wp = None

SEEDS = (42, 1234567)
PERIODS = {1: (4,), 2: (3, 5), 3: (2, 4, 3), 4: (3, 2, 4, 5)}
CURL_ARGS = (3, 1.7, 0.6)      # octaves, lacunarity, gain of the non-default curlnoise calls
N = 20


def points(dim):
    """``N`` float32 points of ``dim`` coordinates: random ones in [-6, 6), with negative and
    exactly-integer coordinates among them."""
    rng = np.random.default_rng(2024 + dim)
    p = rng.uniform(-6.0, 6.0, (N, dim))
    p[0] = 0.0                                   # the origin
    p[1] = -2.0                                  # a negative lattice point
    p[2] = np.arange(dim) + 1.0                  # a positive lattice point
    p[3, 0] = -3.0                               # one integer coordinate
    p[4] = -0.25                                 # just below zero
    p[5] = 1e-3
    p[6] = 5.999
    return p.astype(np.float32)


def _kernels():
    @wp.kernel
    def k_noise(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
                x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4),
                out: wp.array2d(dtype=float)):
        i = wp.tid()
        s = wp.rand_init(seed)
        out[i, 0] = wp.noise(s, x1[i])
        out[i, 1] = wp.noise(s, x2[i])
        out[i, 2] = wp.noise(s, x3[i])
        out[i, 3] = wp.noise(s, x4[i])

    @wp.kernel
    def k_pnoise(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
                 x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4),
                 out: wp.array2d(dtype=float)):
        i = wp.tid()
        s = wp.rand_init(seed)
        out[i, 0] = wp.pnoise(s, x1[i], 4)
        out[i, 1] = wp.pnoise(s, x2[i], 3, 5)
        out[i, 2] = wp.pnoise(s, x3[i], 2, 4, 3)
        out[i, 3] = wp.pnoise(s, x4[i], 3, 2, 4, 5)

    @wp.kernel
    def k_curl(seed: int, x2: wp.array(dtype=wp.vec2), x3: wp.array(dtype=wp.vec3),
               x4: wp.array(dtype=wp.vec4), octaves: wp.uint32, lacunarity: float, gain: float,
               c2: wp.array2d(dtype=wp.vec2), c3: wp.array2d(dtype=wp.vec3),
               c4: wp.array2d(dtype=wp.vec3)):
        i = wp.tid()
        s = wp.rand_init(seed)
        c2[i, 0] = wp.curlnoise(s, x2[i])
        c3[i, 0] = wp.curlnoise(s, x3[i])
        c4[i, 0] = wp.curlnoise(s, x4[i])
        c2[i, 1] = wp.curlnoise(s, x2[i], octaves, lacunarity, gain)
        c3[i, 1] = wp.curlnoise(s, x3[i], octaves, lacunarity=lacunarity, gain=gain)
        c4[i, 1] = wp.curlnoise(s, x4[i], octaves, lacunarity, gain)

    @wp.kernel
    def k_grad(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
               x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4),
               out: wp.array(dtype=float)):
        i = wp.tid()
        s = wp.rand_init(seed)
        out[i] = (wp.noise(s, x1[i]) + wp.noise(s, x2[i]) + wp.noise(s, x3[i])
                  + wp.noise(s, x4[i]) + wp.pnoise(s, x3[i], 2, 4, 3))

    @wp.kernel
    def k_curl_grad(seed: int, x2: wp.array(dtype=wp.vec2), x3: wp.array(dtype=wp.vec3),
                    x4: wp.array(dtype=wp.vec4), w2: wp.vec2, w3: wp.vec3,
                    out: wp.array(dtype=float)):
        i = wp.tid()
        s = wp.rand_init(seed)
        out[i] = (wp.dot(w2, wp.curlnoise(s, x2[i], wp.uint32(2), 2.0, 0.5))
                  + wp.dot(w3, wp.curlnoise(s, x3[i])) + wp.dot(w3, wp.curlnoise(s, x4[i])))

    return k_noise, k_pnoise, k_curl, k_grad, k_curl_grad


def f32(values):
    """A list literal of float32 values, wrapped at 99 columns."""
    items = [np.format_float_positional(np.float32(v), unique=True, trim="0") + ","
             for v in np.ravel(values)]
    return "[\n" + textwrap.fill(" ".join(items), 99, initial_indent="    ",
                                 subsequent_indent="    ") + "\n]"


def main(out):
    wp.init()
    VEC = {2: wp.vec2, 3: wp.vec3, 4: wp.vec4}
    k_noise, k_pnoise, k_curl, k_grad, k_curl_grad = _kernels()
    xs = {d: points(d) for d in (1, 2, 3, 4)}
    arr = {1: wp.array(xs[1][:, 0], dtype=float)}
    arr.update({d: wp.array(xs[d], dtype=VEC[d]) for d in (2, 3, 4)})
    p = print
    p("# --- BEGIN WARP REFERENCE (tests/data/make_noise_reference.py, Warp "
      f"{wp.config.version}, CPU)", file=out)
    p("NOISE, PNOISE, CURL, GRAD, CURL_GRAD = {}, {}, {}, {}, {}", file=out)
    for seed in SEEDS:
        o = wp.zeros((N, 4), dtype=float)
        wp.launch(k_noise, N, inputs=[seed, arr[1], arr[2], arr[3], arr[4], o])
        for d in range(4):
            p(f"NOISE[{seed}, {d + 1}] = {f32(o.numpy()[:, d])}", file=out)
        o = wp.zeros((N, 4), dtype=float)
        wp.launch(k_pnoise, N, inputs=[seed, arr[1], arr[2], arr[3], arr[4], o])
        for d in range(4):
            p(f"PNOISE[{seed}, {d + 1}] = {f32(o.numpy()[:, d])}", file=out)
        c2 = wp.zeros((N, 2), dtype=wp.vec2)
        c3 = wp.zeros((N, 2), dtype=wp.vec3)
        c4 = wp.zeros((N, 2), dtype=wp.vec3)
        wp.launch(k_curl, N, inputs=[seed, arr[2], arr[3], arr[4], wp.uint32(CURL_ARGS[0]),
                                     CURL_ARGS[1], CURL_ARGS[2], c2, c3, c4])
        for name, c in (("2", c2), ("3", c3), ("4", c4)):
            for j, what in enumerate(("default", "octaves")):
                p(f"CURL[{seed}, {name}, {what!r}] = {f32(c.numpy()[:, j])}", file=out)

    # gradients (Warp's analytic adjoints), first 6 points, seed 42
    n = 6
    seed = SEEDS[0]
    g = {1: wp.array(xs[1][:n, 0], dtype=float, requires_grad=True)}
    g.update({d: wp.array(xs[d][:n], dtype=VEC[d], requires_grad=True) for d in (2, 3, 4)})
    o = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k_grad, n, inputs=[seed, g[1], g[2], g[3], g[4], o])
    tape.backward(grads={o: wp.ones(n, dtype=float)})
    for d in (1, 2, 3, 4):
        p(f"GRAD[{d}] = {f32(g[d].grad.numpy())}", file=out)
    for d in (2, 3, 4):
        g[d].grad.zero_()
    o = wp.zeros(n, dtype=float, requires_grad=True)
    w2, w3 = wp.vec2(0.3, -0.7), wp.vec3(0.5, 0.25, -1.0)
    tape = wp.Tape()
    with tape:
        wp.launch(k_curl_grad, n, inputs=[seed, g[2], g[3], g[4], w2, w3, o])
    tape.backward(grads={o: wp.ones(n, dtype=float)})
    for d in (2, 3, 4):
        p(f"CURL_GRAD[{d}] = {f32(g[d].grad.numpy())}", file=out)
    p("# --- END WARP REFERENCE", file=out)


if __name__ == "__main__":
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # Warp's own messages
        main(real_stdout)
