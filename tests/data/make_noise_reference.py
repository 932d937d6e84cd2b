"""Reference values of ``wp.noise``, ``wp.pnoise`` and ``wp.curlnoise`` from NVIDIA Warp.

Run with a Python that has Warp 1.19 installed (CPU is enough)::

    python tests/data/make_noise_reference.py > /tmp/ref.py

and paste what it prints over the block between the ``BEGIN WARP REFERENCE`` and
``END WARP REFERENCE`` markers of ``tests/stdlib/test_noise.py``. Floats are printed as the
shortest decimal that reads back as the same float32, so the test can compare bit for bit.

``tests/stdlib/test_noise.py`` imports this module (without Warp) and runs the same kernels,
``kernels(weft)``, at the same ``points()``.
"""
import contextlib
import sys
import textwrap

import numpy as np

SEEDS = (42, 1234567)
PERIODS = {1: (4,), 2: (3, 5), 3: (2, 4, 3), 4: (3, 2, 4, 5)}
CURL_ARGS = (3, 1.7, 0.6)      # octaves, lacunarity, gain of the non-default curlnoise calls
N = 20


def points(n=N):
    """The first ``n`` of ``N`` float32 points in each of 1 to 4 dimensions, ``{dim: array}``
    (a flat one in 1-D): random ones in [-6, 6), with negative and exactly-integer coordinates
    among them."""
    x = {}
    for dim in (1, 2, 3, 4):
        rng = np.random.default_rng(2024 + dim)
        p = rng.uniform(-6.0, 6.0, (N, dim))
        p[0] = 0.0                                   # the origin
        p[1] = -2.0                                  # a negative lattice point
        p[2] = np.arange(dim) + 1.0                  # a positive lattice point
        p[3, 0] = -3.0                               # one integer coordinate
        p[4] = -0.25                                 # just below zero
        p[5] = 1e-3
        p[6] = 5.999
        x[dim] = p[:n, 0].astype(np.float32) if dim == 1 else p[:n].astype(np.float32)
    return x


def kernels(wp):
    """The kernels, compiled by ``wp`` (``warp`` or ``weft``): the values of noise, pnoise and
    curlnoise in 1-D to 4-D (curlnoise with its default and with given arguments), and two
    losses whose gradients Warp pins."""

    @wp.kernel
    def values(seed: int, x1: wp.array(dtype=float), x2: wp.array(dtype=wp.vec2),
               x3: wp.array(dtype=wp.vec3), x4: wp.array(dtype=wp.vec4), octaves: wp.uint32,
               lacunarity: float, gain: float, out: wp.array2d(dtype=float),
               c2: wp.array2d(dtype=wp.vec2), c3: wp.array2d(dtype=wp.vec3),
               c4: wp.array2d(dtype=wp.vec3)):
        i = wp.tid()
        s = wp.rand_init(seed)
        out[i, 0] = wp.noise(s, x1[i])
        out[i, 1] = wp.noise(s, x2[i])
        out[i, 2] = wp.noise(s, x3[i])
        out[i, 3] = wp.noise(s, x4[i])
        out[i, 4] = wp.pnoise(s, x1[i], 4)
        out[i, 5] = wp.pnoise(s, x2[i], 3, 5)
        out[i, 6] = wp.pnoise(s, x3[i], 2, 4, 3)
        out[i, 7] = wp.pnoise(s, x4[i], 3, 2, 4, 5)
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

    return {"values": values, "grad": k_grad, "curl_grad": k_curl_grad}


def run_values(wp, kernel, seed, x, octaves=CURL_ARGS[0], lacunarity=CURL_ARGS[1],
               gain=CURL_ARGS[2], device="cpu"):
    """``kernel`` (values of ``kernels(wp)``) at the points ``x`` (as ``points()`` gives them):
    (noise and pnoise of each dimension as the columns of one array, {dim: curlnoise with
    default arguments and with the given ones})."""
    n = len(x[1])
    vec = {2: wp.vec2, 3: wp.vec3, 4: wp.vec4}
    arrs = [wp.array(x[1], dtype=float, device=device)] + [
        wp.array(x[d], dtype=vec[d], device=device) for d in (2, 3, 4)]
    out = wp.zeros((n, 8), dtype=float, device=device)
    curl = {2: wp.zeros((n, 2), dtype=wp.vec2, device=device),
            3: wp.zeros((n, 2), dtype=wp.vec3, device=device),
            4: wp.zeros((n, 2), dtype=wp.vec3, device=device)}
    wp.launch(kernel, n, inputs=[seed, *arrs, wp.uint32(octaves), lacunarity, gain, out,
                                 curl[2], curl[3], curl[4]], device=device)
    return out.numpy(), {d: c.numpy() for d, c in curl.items()}


def f32(values):
    """A list literal of float32 values, wrapped at 99 columns."""
    items = [np.format_float_positional(np.float32(v), unique=True, trim="0") + ","
             for v in np.ravel(values)]
    return "[\n" + textwrap.fill(" ".join(items), 99, initial_indent="    ",
                                 subsequent_indent="    ") + "\n]"


def main(out):
    import warp as wp

    wp.init()
    wp.set_device("cpu")
    K = kernels(wp)
    p = print
    p("# --- BEGIN WARP REFERENCE (tests/data/make_noise_reference.py, Warp "
      f"{wp.config.version}, CPU)", file=out)
    p("NOISE, PNOISE, CURL, GRAD, CURL_GRAD = {}, {}, {}, {}, {}", file=out)
    for seed in SEEDS:
        o, curl = run_values(wp, K["values"], seed, points())
        for d in range(4):
            p(f"NOISE[{seed}, {d + 1}] = {f32(o[:, d])}", file=out)
        for d in range(4):
            p(f"PNOISE[{seed}, {d + 1}] = {f32(o[:, d + 4])}", file=out)
        for d, c in curl.items():
            for j, what in enumerate(("default", "octaves")):
                p(f"CURL[{seed}, {d}, {what!r}] = {f32(c[:, j])}", file=out)

    # gradients (Warp's analytic adjoints), first 6 points, seed 42
    n = 6
    seed = SEEDS[0]
    vec = {1: float, 2: wp.vec2, 3: wp.vec3, 4: wp.vec4}
    g = {d: wp.array(x, dtype=vec[d], requires_grad=True) for d, x in points(n).items()}
    o = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K["grad"], n, inputs=[seed, g[1], g[2], g[3], g[4], o])
    tape.backward(grads={o: wp.ones(n, dtype=float)})
    for d in (1, 2, 3, 4):
        p(f"GRAD[{d}] = {f32(g[d].grad.numpy())}", file=out)
    for d in (2, 3, 4):
        g[d].grad.zero_()
    o = wp.zeros(n, dtype=float, requires_grad=True)
    w2, w3 = wp.vec2(0.3, -0.7), wp.vec3(0.5, 0.25, -1.0)
    tape = wp.Tape()
    with tape:
        wp.launch(K["curl_grad"], n, inputs=[seed, g[2], g[3], g[4], w2, w3, o])
    tape.backward(grads={o: wp.ones(n, dtype=float)})
    for d in (2, 3, 4):
        p(f"CURL_GRAD[{d}] = {f32(g[d].grad.numpy())}", file=out)
    p("# --- END WARP REFERENCE", file=out)


if __name__ == "__main__":
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # Warp's own messages
        main(real_stdout)
