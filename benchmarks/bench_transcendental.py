"""A 1M-element vec3 transcendental kernel, forward and adjoint: weft against a hand-written
parallel Numba kernel doing the same float32 math (and NVIDIA Warp CPU / JAX when importable).

    python benchmarks/bench_transcendental.py [--n 1000000] [--repeat 15] [--markdown]
                                              [--fast-math]

weft is timed two ways: through ``wp.launch`` (argument checks and dispatch included) and
through the generated njit function itself (``kernel.entry(...)``). Times are the median of
``--repeat`` runs after warm-up, in ms. The hand-written adjoint is derived by hand; before
anything is timed the script checks that weft and the hand-written kernels agree (forward and
adjoint, np.allclose) and stops if they do not. ``--fast-math`` adds two columns: the kernel
with Warp's ``fast_math`` module option (``module="unique", module_options={"fast_math":
True}``) through ``wp.launch``, and the hand-written kernels compiled with ``fastmath=True``.
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numba
import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

RTOL, ATOL = 1e-5, 1e-5   # float32 math; libm calls may differ in the last bit


def build(wp, module_options=None):
    """The kernel, for weft or for NVIDIA Warp (same source, ``wp`` is either module), in a
    module of its own with ``module_options`` when given."""
    deco = wp.kernel if module_options is None else \
        wp.kernel(module="unique", module_options=module_options)

    @deco
    def transcendental(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        v = x[i]
        s = wp.vec3(wp.sin(v[0]) * wp.exp(v[1]), wp.cos(v[1]) * wp.log(1.0 + v[2] * v[2]),
                    wp.tanh(v[2]) + wp.sqrt(1.0 + v[0] * v[0]))
        y[i] = s * wp.length(v)
    return transcendental


# ---------------------------------------------------------------- hand-written Numba kernels
# Scalars on rows of (n, 3) float32 arrays; every constant is float32 so nothing is promoted
# to float64 (a bare Python int or float literal times a float32 gives float64 in Numba).
ONE, TWO, ZERO = np.float32(1.0), np.float32(2.0), np.float32(0.0)


@numba.njit(parallel=True, fastmath=False, error_model="numpy", cache=True)
def nb_forward(x, y):
    for i in numba.prange(x.shape[0]):
        a, b, c = x[i, 0], x[i, 1], x[i, 2]
        n = np.sqrt(a * a + b * b + c * c)                 # wp.length(v)
        y[i, 0] = np.sin(a) * np.exp(b) * n
        y[i, 1] = np.cos(b) * np.log(ONE + c * c) * n
        y[i, 2] = (np.tanh(c) + np.sqrt(ONE + a * a)) * n


@numba.njit(parallel=True, fastmath=False, error_model="numpy", cache=True)
def nb_adjoint(x, adj_y, adj_x):
    """adj_x += J(x)^T adj_y for y = s(x) * |x| (accumulates, as weft's adjoint does)."""
    for i in numba.prange(x.shape[0]):
        a, b, c = x[i, 0], x[i, 1], x[i, 2]
        n = np.sqrt(a * a + b * b + c * c)
        sa, ca, eb, cb, sb = np.sin(a), np.cos(a), np.exp(b), np.cos(b), np.sin(b)
        q = ONE + c * c
        lq, th, r = np.log(q), np.tanh(c), np.sqrt(ONE + a * a)
        g0, g1, g2 = adj_y[i, 0], adj_y[i, 1], adj_y[i, 2]
        # y_k = s_k * n: adj_s_k = g_k * n, adj_n = sum_k g_k * s_k; d n / d x = x / n
        gs0, gs1, gs2 = g0 * n, g1 * n, g2 * n
        gn = g0 * (sa * eb) + g1 * (cb * lq) + g2 * (th + r)
        gn = gn / n if n != ZERO else ZERO                  # wp.length's adjoint at 0 is 0
        adj_x[i, 0] += gs0 * ca * eb + gs2 * a / r + gn * a
        adj_x[i, 1] += gs0 * sa * eb - gs1 * sb * lq + gn * b
        adj_x[i, 2] += gs1 * cb * TWO * c / q + gs2 * (ONE - th * th) + gn * c


def hand_fastmath():
    """The hand-written kernels compiled with ``fastmath=True``."""
    jit = numba.njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
    return jit(nb_forward.py_func), jit(nb_adjoint.py_func)


# ----------------------------------------------------------------------------------- helpers
def median_ms(fns, repeat, warmup=2):
    """Median wall time in ms of each callable in ``fns`` (name -> fn) over ``repeat`` runs
    after ``warmup`` runs. The callables take turns, so a load spike on this shared machine
    slows all of them alike instead of one column."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def cpu_info():
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        return f"{names[0]} ({len(names)} logical CPUs)"
    except (OSError, IndexError):
        return f"{platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs)"


def check(name, got, want):
    """np.allclose of ``got`` against the hand-written result; returns the max |difference|."""
    diff = float(np.abs(got - want).max())
    ok = np.allclose(got, want, rtol=RTOL, atol=ATOL)
    print(f"  {name:<34} max |diff| {diff:.2e}  {'ok' if ok else 'MISMATCH'}")
    return ok


# ------------------------------------------------------------------------- optional columns
def setup_warp(xh, gyh, y_ref, gx_ref):
    """(forward, adjoint) callables for NVIDIA Warp on the CPU, checked against the
    hand-written results, or None when Warp is not importable."""
    try:
        import warp
    except ImportError:
        return None
    warp.config.quiet = True                                # Warp < 1.10
    warp.config.log_level = 40                              # Warp >= 1.10: errors only
    warp.init()
    k, n, dev = build(warp), xh.shape[0], "cpu"
    x = warp.array(xh, dtype=warp.vec3, requires_grad=True, device=dev)
    y = warp.zeros(n, dtype=warp.vec3, requires_grad=True, device=dev)
    y.grad.assign(gyh)
    fwd = lambda: warp.launch(k, dim=n, inputs=[x], outputs=[y], device=dev)  # noqa: E731
    adj = lambda: warp.launch(k, dim=n, inputs=[x], outputs=[y], adj_inputs=[x.grad],  # noqa
                              adj_outputs=[y.grad], adjoint=True, device=dev)
    fwd()
    adj()
    check("warp forward vs hand-written", y.numpy(), y_ref)
    check("warp adjoint vs hand-written", x.grad.numpy(), gx_ref)
    return fwd, adj


def setup_fast_math(wp, x, y, xh, gyh, y_ref, gx_ref):
    """Contenders with fast math: weft's kernel with the ``fast_math`` module option (through
    ``wp.launch``, on the arrays of the default kernel) and the hand-written kernels with
    ``fastmath=True``; each checked against the hand-written results."""
    k = build(wp, {"fast_math": True})
    n = xh.shape[0]
    fwd = lambda: wp.launch(k, dim=n, inputs=[x], outputs=[y])  # noqa: E731
    adj = lambda: wp.launch(k, dim=n, inputs=[x], outputs=[y], adjoint=True)  # noqa: E731
    fwd()
    x.grad.zero_()
    y.grad.assign(gyh)
    adj()
    check("weft fast_math forward vs hand-written", y.numpy(), y_ref)
    check("weft fast_math adjoint vs hand-written", x.grad.numpy(), gx_ref)
    y.grad.assign(gyh)
    nb_f, nb_a = hand_fastmath()
    y_f, gx_f = np.zeros_like(xh), np.zeros_like(xh)
    nb_f(xh, y_f)
    nb_a(xh, gyh, gx_f)
    check("hand fastmath forward vs hand-written", y_f, y_ref)
    check("hand fastmath adjoint vs hand-written", gx_f, gx_ref)
    return {"weft fast_math": (fwd, adj),
            "hand fastmath": (lambda: nb_f(xh, y_f), lambda: nb_a(xh, gyh, gx_f))}


def setup_jax(xh, gyh, y_ref, gx_ref):
    """(forward, adjoint) callables for jax.jit(vmap(...)) and its jax.vjp, or None."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def elem(v):                                            # one row, the same math
        a, b, c = v[0], v[1], v[2]
        s = jnp.stack([jnp.sin(a) * jnp.exp(b), jnp.cos(b) * jnp.log(1.0 + c * c),
                       jnp.tanh(c) + jnp.sqrt(1.0 + a * a)])
        return s * jnp.sqrt(a * a + b * b + c * c)
    f = jax.vmap(elem)
    fwd_j = jax.jit(f)
    adj_j = jax.jit(lambda x, g: jax.vjp(f, x)[1](g)[0])
    x, g = jnp.asarray(xh), jnp.asarray(gyh)
    check("jax forward vs hand-written", np.asarray(fwd_j(x)), y_ref)
    check("jax adjoint (vjp) vs hand-written", np.asarray(adj_j(x, g)), gx_ref)
    return lambda: fwd_j(x).block_until_ready(), lambda: adj_j(x, g).block_until_ready()


# ------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="number of vec3 elements")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per measurement")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--fast-math", action="store_true",
                    help="add weft with fast_math and hand-written Numba with fastmath=True")
    args = ap.parse_args()
    import weft as wp

    n, rep = args.n, args.repeat
    rng = np.random.default_rng(0)
    xh = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    gyh = rng.standard_normal((n, 3)).astype(np.float32)

    # weft: arrays with gradients; the generated functions take the same numpy buffers
    k = build(wp)
    x = wp.array(xh, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    y.grad.assign(gyh)
    fwd_raw, adj_raw = k.entry("forward"), k.entry("adjoint")
    xd, yd, gxd, gyd = x.numpy(), y.numpy(), x.grad.numpy(), y.grad.numpy()
    weft_fwd = lambda: wp.launch(k, dim=n, inputs=[x], outputs=[y])  # noqa: E731
    weft_adj = lambda: wp.launch(k, dim=n, inputs=[x], outputs=[y], adjoint=True)  # noqa: E731
    raw_fwd = lambda: fwd_raw((n,), xd, yd)  # noqa: E731
    raw_adj = lambda: adj_raw((n,), xd, yd, gxd, gyd)  # noqa: E731

    # hand-written: plain (n, 3) float32 arrays
    y_nb, gx_nb = np.zeros_like(xh), np.zeros_like(xh)
    hand_fwd = lambda: nb_forward(xh, y_nb)  # noqa: E731
    hand_adj = lambda: nb_adjoint(xh, gyh, gx_nb)  # noqa: E731

    # the two must agree before they are timed (adjoints accumulate: start from zero)
    print(f"agreement (np.allclose, rtol={RTOL:g}, atol={ATOL:g}):")
    weft_fwd()
    x.grad.zero_()
    weft_adj()
    hand_fwd()
    hand_adj()
    ok = check("weft forward vs hand-written", y.numpy(), y_nb)
    ok &= check("weft adjoint vs hand-written", x.grad.numpy(), gx_nb)
    y_raw = np.zeros_like(xh)
    fwd_raw((n,), xd, y_raw)
    ok &= check("weft entry() forward vs wp.launch", y_raw, y.numpy())
    if not ok:
        sys.exit("weft and the hand-written kernels disagree: not timing")
    y_ref, gx_ref = y_nb.copy(), gx_nb.copy()

    # every contender as (forward, adjoint) callables; optional ones when importable
    contenders = {"weft wp.launch": (weft_fwd, weft_adj), "weft entry()": (raw_fwd, raw_adj),
                  "hand numba": (hand_fwd, hand_adj)}
    if args.fast_math:
        contenders.update(setup_fast_math(wp, x, y, xh, gyh, y_ref, gx_ref))
    for name, setup in (("warp CPU", setup_warp), ("jax", setup_jax)):
        fns = setup(xh, gyh, y_ref, gx_ref)
        if fns is None:
            print(f"  ({name} not importable: column skipped)")
        else:
            contenders[name] = fns
    ms = {p: median_ms({c: f[j] for c, f in contenders.items()}, rep)
          for j, p in enumerate(("forward", "adjoint"))}

    print(f"\nCPU: {cpu_info()}; numba {numba.__version__}, {numba.get_num_threads()} threads "
          f"({numba.threading_layer()} layer); n = {n:,} vec3 float32; median of {rep} runs, "
          f"ms")
    base = ("weft wp.launch", "weft entry()", "hand numba")
    extra = [c for c in contenders if c not in base]
    head = ["pass", *base, "launch/hand", "entry/hand", *extra]
    table = []
    for p, t in ms.items():
        ratios = [f"{t[c] / t['hand numba']:.2f}x" for c in base[:2]]   # weft / hand-written
        table.append([p] + [f"{t[c]:.2f}" for c in base] + ratios
                     + [f"{t[c]:.2f}" for c in extra])
    if args.markdown:
        print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in table:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[c]) for r in table)) for c, h in enumerate(head)]
        for r in [head] + table:
            print("  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)))
    # compulsory traffic: the forward reads x and writes y (24 B per element), the adjoint reads
    # x and adj_y and adds into adj_x (48 B)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import machine
    bw = machine.peak()
    for p, nbytes in (("forward", 24 * n), ("adjoint", 48 * n)):
        gbs = nbytes / (ms[p]["weft wp.launch"] * 1e-3) / 1e9
        print(f"{p}: {nbytes / n:.0f} B per element compulsory traffic; weft moves {gbs:.2f} "
              f"GB/s, {100 * gbs / bw:.0f}% of the {bw:.1f} GB/s triad bandwidth (bound by "
              f"{'memory' if gbs > 0.6 * bw else 'the math, not memory'})")


if __name__ == "__main__":
    main()
