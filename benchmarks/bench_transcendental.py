"""A 1M-element vec3 transcendental kernel, forward and adjoint: weft against hand-written
parallel Numba (and NVIDIA Warp / JAX when importable).

    python benchmarks/bench_transcendental.py [--n 1000000] [--repeat 10] [--markdown]

The hand-written adjoint is derived by hand and checked against weft's before timing.
"""
import argparse
import os
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def build(wp):
    @wp.kernel
    def transcendental(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v = x[i]
        s = wp.vec3(wp.sin(v[0]) * wp.exp(v[1]), wp.cos(v[1]) * wp.log(1.0 + v[2] * v[2]),
                    wp.tanh(v[2]) + wp.sqrt(1.0 + v[0] * v[0]))
        y[i] = s * wp.length(v)
    return transcendental


@numba.njit(parallel=True, cache=True, error_model="numpy")
def nb_forward(x, y):
    for i in numba.prange(x.shape[0]):
        a, b, c = x[i, 0], x[i, 1], x[i, 2]
        n = np.sqrt(a * a + b * b + c * c)
        y[i, 0] = np.sin(a) * np.exp(b) * n
        y[i, 1] = np.cos(b) * np.log(np.float32(1.0) + c * c) * n
        y[i, 2] = (np.tanh(c) + np.sqrt(np.float32(1.0) + a * a)) * n


@numba.njit(parallel=True, cache=True, error_model="numpy")
def nb_adjoint(x, gy, gx):
    one = np.float32(1.0)
    for i in numba.prange(x.shape[0]):
        a, b, c = x[i, 0], x[i, 1], x[i, 2]
        n = np.sqrt(a * a + b * b + c * c)
        sa, ca, eb = np.sin(a), np.cos(a), np.exp(b)
        cb, sb = np.cos(b), np.sin(b)
        l1 = np.log(one + c * c)
        th = np.tanh(c)
        r = np.sqrt(one + a * a)
        s0, s1, s2 = sa * eb, cb * l1, th + r
        g0, g1, g2 = gy[i, 0], gy[i, 1], gy[i, 2]
        gn = (g0 * s0 + g1 * s1 + g2 * s2) / n      # through the length
        ga = g0 * n * ca * eb + g2 * n * a / r + gn * a
        gb = g0 * n * sa * eb - g1 * n * sb * l1 + gn * b
        gc = g1 * n * cb * 2 * c / (one + c * c) + g2 * n * (one - th * th) + gn * c
        gx[i, 0] += ga
        gx[i, 1] += gb
        gx[i, 2] += gc


def best(fn, repeat):
    fn()
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    import weft as wp
    n = args.n
    rng = np.random.default_rng(0)
    xh = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    gyh = rng.standard_normal((n, 3)).astype(np.float32)
    k = build(wp)
    x = wp.array(xh, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    y.grad.assign(gyh)
    fwd_launch = lambda: wp.launch(k, n, inputs=[x], outputs=[y])  # noqa: E731
    adj_launch = lambda: wp.launch(k, n, inputs=[x], outputs=[y], adjoint=True)  # noqa: E731
    f_raw, a_raw = k.entry("forward"), k.entry("adjoint")
    xd, yd, gxd, gyd = x.numpy(), y.numpy(), x.grad.numpy(), y.grad.numpy()
    y_nb, gx_nb = np.zeros_like(xh), np.zeros_like(xh)

    # the two must agree before they are timed
    fwd_launch()
    x.grad.zero_()
    adj_launch()
    nb_forward(xh, y_nb)
    nb_adjoint(xh, gyh, gx_nb)
    err_f = float(np.abs(y.numpy() - y_nb).max())
    err_a = float(np.abs(x.grad.numpy() - gx_nb).max() / np.abs(gx_nb).max())
    assert err_f < 1e-4 and err_a < 1e-4, (err_f, err_a)

    rows = [("forward", best(fwd_launch, args.repeat), best(lambda: f_raw((n,), xd, yd),
                                                            args.repeat),
             best(lambda: nb_forward(xh, y_nb), args.repeat)),
            ("adjoint", best(adj_launch, args.repeat),
             best(lambda: a_raw((n,), xd, yd, gxd, gyd), args.repeat),
             best(lambda: nb_adjoint(xh, gyh, gx_nb), args.repeat))]
    extra = {}
    try:
        import warp
        warp.config.quiet = True
        kw = build(warp)
        xw = warp.array(xh, dtype=warp.vec3, requires_grad=True)
        yw = warp.zeros(n, dtype=warp.vec3, requires_grad=True)
        yw.grad.assign(gyh)
        extra["warp"] = (best(lambda: warp.launch(kw, n, inputs=[xw], outputs=[yw]),
                              args.repeat),
                         best(lambda: warp.launch(kw, n, inputs=[xw], outputs=[yw],
                                                  adj_inputs=[xw.grad], adj_outputs=[yw.grad],
                                                  adjoint=True), args.repeat))
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        def f(v):
            a, b, c = v[:, 0], v[:, 1], v[:, 2]
            nn = jnp.sqrt(a * a + b * b + c * c)
            return jnp.stack([jnp.sin(a) * jnp.exp(b), jnp.cos(b) * jnp.log(1 + c * c),
                              jnp.tanh(c) + jnp.sqrt(1 + a * a)], 1) * nn[:, None]
        xj, gj = jnp.asarray(xh), jnp.asarray(gyh)
        fj = jax.jit(f)
        vj = jax.jit(lambda v, g: jax.vjp(f, v)[1](g)[0])
        extra["jax"] = (best(lambda: fj(xj).block_until_ready(), args.repeat),
                        best(lambda: vj(xj, gj).block_until_ready(), args.repeat))
    except ImportError:
        pass

    print(f"{n} vec3 elements, {numba.get_num_threads()} threads; weft and hand-written "
          f"agree: forward max |diff| {err_f:.1e}, adjoint max rel diff {err_a:.1e}")
    head = ["pass", "weft wp.launch (ms)", "weft generated fn (ms)", "hand-written numba (ms)",
            "weft/numba"] + [f"{k} (ms)" for k in extra]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    else:
        print("  ".join(f"{h:>24}" for h in head))
    for j, (name, tl, tr, tn) in enumerate(rows):
        cells = [name, f"{tl * 1e3:.2f}", f"{tr * 1e3:.2f}", f"{tn * 1e3:.2f}", f"{tl / tn:.2f}"]
        cells += [f"{v[j] * 1e3:.2f}" for v in extra.values()]
        print(("| " + " | ".join(cells) + " |") if args.markdown else
              "  ".join(f"{c:>24}" for c in cells))


if __name__ == "__main__":
    main()
