"""Cloth benchmarks (issue: CPU performance).

    python benchmarks/bench_cloth.py [--sizes 64 128 256] [--markdown]

1. Forward: time per frame (16 substeps) at N x N for weft, hand-written Numba, NVIDIA Warp on
   the CPU and NumPy.
2. Differentiable: 64 steps into fresh state arrays, a loss on the final positions, gradient
   with respect to the initial velocities; forward and backward times for weft, Warp (Tape) and
   JAX (value_and_grad over lax.scan), and the largest gradient difference between them.
Warp and JAX columns appear when they are importable.
"""
import argparse
import os
import sys
import time

import numba
import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

sys.path.insert(0, os.path.dirname(__file__))
import cloth  # noqa: E402
import machine  # noqa: E402

SUBSTEPS = 16


def substep_bytes(n_particles, n_springs):
    """Compulsory memory traffic of one substep: zeroing f (12 B per particle); the spring pass
    reads its pair and rest length (12 B per spring), x and v (24 B per particle) and adds into
    f (24); the integration reads x, v, f and the inverse mass and writes x and v (64)."""
    return 12 * n_springs + 124 * n_particles


def timeit(fn, repeat=5):
    """Best of ``repeat`` timed calls after one untimed call."""
    return machine.best(fn, repeat)


class Sim:
    """One simulation on a Warp-like module ``wp`` (weft or warp)."""

    def __init__(self, wp, n, steps_state=1, requires_grad=False):
        self.wp = wp
        self.k = cloth.build(wp)
        x, inv_mass, pairs, rest = cloth.make_cloth(n)
        dev = "cpu"
        rg = requires_grad
        self.xs = [wp.array(x, dtype=wp.vec3, device=dev, requires_grad=rg)
                   for _ in range(steps_state + 1)]
        self.vs = [wp.zeros(n * n, dtype=wp.vec3, device=dev, requires_grad=rg)
                   for _ in range(steps_state + 1)]
        self.fs = [wp.zeros(n * n, dtype=wp.vec3, device=dev, requires_grad=rg)
                   for _ in range(steps_state)]
        self.inv_mass = wp.array(inv_mass, dtype=float, device=dev)
        self.pairs = wp.array(pairs.reshape(-1), dtype=int, device=dev)
        self.rest = wp.array(rest, dtype=float, device=dev)
        self.n_springs = len(rest)
        self.n = n * n
        self.loss = wp.zeros(1, dtype=float, device=dev, requires_grad=rg)

    def step(self, i, o, f):
        wp, k = self.wp, self.k
        f.zero_()
        wp.launch(k["eval_springs"], self.n_springs, inputs=[self.xs[i], self.vs[i], self.pairs,
                                                              self.rest, cloth.KE, cloth.KD, f])
        wp.launch(k["integrate"], self.n, inputs=[self.xs[i], self.vs[i], f, self.inv_mass,
                                                  wp.vec3(*cloth.GRAVITY), cloth.DT],
                  outputs=[self.xs[o], self.vs[o]])

    def frame(self):
        for s in range(SUBSTEPS):
            a = s % 2
            self.step(a, 1 - a, self.fs[0])


# ------------------------------------------------------------------------ hand-written Numba

@numba.njit(cache=True, fastmath=False)
def nb_springs(x, v, pairs, rest, ke, kd, f):
    f[:] = 0.0
    for s in range(rest.shape[0]):
        i, j = pairs[s, 0], pairs[s, 1]
        dx, dy, dz = x[i, 0] - x[j, 0], x[i, 1] - x[j, 1], x[i, 2] - x[j, 2]
        l = np.sqrt(dx * dx + dy * dy + dz * dz)
        nx, ny, nz = dx / l, dy / l, dz / l
        dcdt = nx * (v[i, 0] - v[j, 0]) + ny * (v[i, 1] - v[j, 1]) + nz * (v[i, 2] - v[j, 2])
        m = ke * (l - rest[s]) + kd * dcdt
        f[i, 0] -= nx * m
        f[i, 1] -= ny * m
        f[i, 2] -= nz * m
        f[j, 0] += nx * m
        f[j, 1] += ny * m
        f[j, 2] += nz * m


@numba.njit(parallel=True, cache=True)
def nb_integrate(x, v, f, inv_mass, g, dt, x_out, v_out):
    for i in numba.prange(x.shape[0]):
        w = inv_mass[i]
        for c in range(3):
            gc = g[c] if w > 0.0 else np.float32(0.0)
            v1 = v[i, c] + (f[i, c] * w + gc) * dt
            x_out[i, c] = x[i, c] + v1 * dt
            v_out[i, c] = v1


def numba_frame(state):
    x, v, x2, v2, f, pairs, rest, inv_mass, g = state
    for s in range(SUBSTEPS):
        nb_springs(x, v, pairs, rest, np.float32(cloth.KE), np.float32(cloth.KD), f)
        nb_integrate(x, v, f, inv_mass, g, np.float32(cloth.DT), x2, v2)
        x, v, x2, v2 = x2, v2, x, v


def numpy_frame(state):
    x, v, pairs, rest, inv_mass, g = state
    i, j = pairs[:, 0], pairs[:, 1]
    w = inv_mass[:, None]
    gm = np.where(w > 0, g, 0).astype(np.float32)
    for s in range(SUBSTEPS):
        d = x[i] - x[j]
        l = np.linalg.norm(d, axis=1)
        n = d / l[:, None]
        m = cloth.KE * (l - rest) + cloth.KD * np.einsum("ij,ij->i", n, v[i] - v[j])
        fs = n * m[:, None]
        f = np.zeros_like(x)
        for c in range(3):
            f[:, c] = np.bincount(j, fs[:, c], len(x)) - np.bincount(i, fs[:, c], len(x))
        v = v + (f * w + gm) * cloth.DT
        x = x + v * cloth.DT


def forward_table(sizes, repeat):
    import weft
    try:
        import warp
        warp.config.quiet = True
        warp.init()
    except ImportError:
        warp = None
    rows = []
    for n in sizes:
        row = {"N": n}
        sim = Sim(weft, n)
        row["weft"] = timeit(sim.frame, repeat)
        row["MB/frame"] = SUBSTEPS * substep_bytes(sim.n, sim.n_springs) / 1e6
        machine.traffic(row, "weft", row["MB/frame"] * 1e6, row["weft"])
        x, inv_mass, pairs, rest = cloth.make_cloth(n)
        g = np.array(cloth.GRAVITY, np.float32)
        st = (x.copy(), np.zeros_like(x), x.copy(), np.zeros_like(x), np.zeros_like(x), pairs,
              rest, inv_mass, g)
        row["numba"] = timeit(lambda: numba_frame(st), repeat)
        row["numpy"] = timeit(lambda: numpy_frame((x.copy(), np.zeros_like(x), pairs, rest,
                                                   inv_mass, g)), max(1, repeat // 2))
        if warp is not None:
            wsim = Sim(warp, n)
            row["warp"] = timeit(lambda: (wsim.frame(), warp.synchronize()), repeat)
            a = np.asarray(sim.xs[0].numpy())
            b = wsim.xs[0].numpy()
            row["max |x_weft - x_warp|"] = float(np.abs(a - b).max())
        rows.append(row)
    return rows


STEPS = 64


def diff_weft_like(wp, n, repeat):
    """Forward (recorded) and backward times of 64 steps, and d loss / d v0."""
    sim = Sim(wp, n, steps_state=STEPS, requires_grad=True)
    tape = wp.Tape()

    def forward():
        nonlocal tape
        tape = wp.Tape()
        sim.loss.zero_()
        with tape:
            for s in range(STEPS):
                sim.step(s, s + 1, sim.fs[s])
            wp.launch(sim.k["height_loss"], sim.n, inputs=[sim.xs[STEPS], sim.loss])
        if hasattr(wp, "synchronize"):
            wp.synchronize()

    def backward():
        for a in sim.xs + sim.vs + sim.fs:  # a fresh tape's zero() clears nothing (Warp)
            a.grad.zero_()
        tape.backward(sim.loss)
        if hasattr(wp, "synchronize"):
            wp.synchronize()

    forward()
    backward()
    tf = timeit(forward, repeat)
    tb = float("inf")
    for _ in range(repeat):
        forward()
        t = time.perf_counter()
        backward()
        tb = min(tb, time.perf_counter() - t)
    return tf, tb, float(sim.loss.numpy()[0]), np.array(sim.vs[0].grad.numpy())


def diff_jax(n, repeat):
    import jax
    import jax.numpy as jnp
    x0, inv_mass, pairs, rest = cloth.make_cloth(n)
    i, j = jnp.asarray(pairs[:, 0]), jnp.asarray(pairs[:, 1])
    w = jnp.asarray(inv_mass)[:, None]
    g = jnp.where(w > 0, jnp.asarray(cloth.GRAVITY, jnp.float32), 0.0)
    rest = jnp.asarray(rest)

    def step(state, _):
        x, v = state
        d = x[i] - x[j]
        l = jnp.linalg.norm(d, axis=1)
        nrm = d / l[:, None]
        m = cloth.KE * (l - rest) + cloth.KD * jnp.sum(nrm * (v[i] - v[j]), axis=1)
        fs = nrm * m[:, None]
        f = jax.ops.segment_sum(fs, j, len(x0)) - jax.ops.segment_sum(fs, i, len(x0))
        v = v + (f * w + g) * cloth.DT
        return (x + v * cloth.DT, v), None

    def loss(v0):
        (x, _), _ = jax.lax.scan(step, (jnp.asarray(x0), v0), None, length=STEPS)
        return jnp.sum(x[:, 1] ** 2 + 0.1 * x[:, 0])

    v0 = jnp.zeros_like(jnp.asarray(x0))
    fwd = jax.jit(loss)
    both = jax.jit(jax.value_and_grad(loss))
    tf = timeit(lambda: fwd(v0).block_until_ready(), repeat)
    tfb = timeit(lambda: both(v0)[1].block_until_ready(), repeat)
    value, grad = both(v0)
    return tf, max(tfb - tf, 0.0), float(value), np.asarray(grad)


def diff_table(sizes, repeat):
    import weft
    rows = []
    for n in sizes:
        row = {"N": n}
        tf, tb, lw, gw = diff_weft_like(weft, n, repeat)
        row.update({"weft fwd": tf, "weft bwd": tb, "weft total": tf + tb})
        scale = np.abs(gw).max()
        try:
            import warp
            warp.config.quiet = True
            tf2, tb2, lw2, gw2 = diff_weft_like(warp, n, repeat)
            row.update({"warp fwd": tf2, "warp bwd": tb2, "weft/warp": (tf + tb) / (tf2 + tb2),
                        "grad diff vs warp": float(np.abs(gw - gw2).max() / scale)})
        except ImportError:
            pass
        try:
            tf3, tb3, lw3, gw3 = diff_jax(n, repeat)
            row.update({"jax fwd": tf3, "jax bwd": tb3, "weft/jax": (tf + tb) / (tf3 + tb3),
                        "grad diff vs jax": float(np.abs(gw - gw3).max() / scale)})
        except ImportError:
            pass
        rows.append(row)
    return rows


def print_table(title, rows, markdown, ms_keys):
    print(f"\n{title}")
    keys = list(rows[0].keys())
    for r in rows[1:]:
        keys += [k for k in r if k not in keys]
    fmt = []
    for k in keys:
        fmt.append(k + (" (ms)" if k in ms_keys else ""))
    if markdown:
        print("| " + " | ".join(fmt) + " |")
        print("|" + "---|" * len(fmt))
    else:
        print("  ".join(f"{h:>14}" for h in fmt))
    for r in rows:
        cells = []
        for k in keys:
            v = r.get(k, "")
            if k in ms_keys and v != "":
                v = f"{v * 1e3:.2f}"
            elif isinstance(v, float):
                v = f"{v:.3g}"
            cells.append(str(v))
        print(("| " + " | ".join(cells) + " |") if markdown else
              "  ".join(f"{c:>14}" for c in cells))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512])
    ap.add_argument("--diff-sizes", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(machine.describe())
    rows = forward_table(args.sizes, args.repeat)
    for r in rows:
        if "warp" in r:
            r["weft/warp"] = r["weft"] / r["warp"]
        r["weft/numba"] = r["weft"] / r["numba"]
    print_table(f"Cloth forward, time per frame ({SUBSTEPS} substeps)", rows, args.markdown,
                {"weft", "numba", "numpy", "warp"})
    rows = diff_table(args.diff_sizes, args.repeat)
    print_table(f"Differentiable cloth, {STEPS} steps, loss on final positions, gradient to "
                "initial velocities (grad diff: max |difference| / max |weft gradient|)", rows,
                args.markdown, {"weft fwd", "weft bwd", "weft total", "warp fwd", "warp bwd",
                                "jax fwd", "jax bwd"})


if __name__ == "__main__":
    main()
