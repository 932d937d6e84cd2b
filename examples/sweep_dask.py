"""A parameter sweep with gradients on Dask: the mean range of a projectile with uncertain air
drag, and its derivatives with respect to the launch angle and speed, over a grid of launches.

Each task is one launch (speed, angle): an ensemble of ``--batch`` projectiles whose quadratic
drag coefficients are drawn around a nominal value fly ``STEPS`` steps (one kernel launch per
step, recorded on a tape); the landing point of each is interpolated where it crosses the ground
(differentiable), averaged, and ``tape.backward`` gives d(mean range)/d(launch velocity), which
the chain rule turns into d/d(angle) and d/d(speed). The kernels are defined in this script
(``__main__``): weft sends them to the workers by source.

The sweep runs on a local cluster (``--workers N``, worker processes with one thread each) or
on an existing one (``--scheduler tcp://host:8786``); ``--check`` also runs it in this process
and compares values and gradients, and checks one gradient against finite differences;
``--scaling`` times the sweep in this process and on 1 and 2 local workers. Writes
``sweep_dask.png`` (matplotlib when installed, else Pillow, else no plot).

Run: python examples/sweep_dask.py [--workers 2 | --scheduler ADDRESS] [--check] [--scaling]
"""
import argparse
import os
import time

import numpy as np

import weft as wp

f64 = wp.float64
vec = wp.vec2d
G, DT, STEPS = 9.81, 0.01, 400
DRAG, SPREAD = 0.02, 0.25  # nominal drag coefficient (1/m) and its relative spread


@wp.kernel
def start(v0: wp.array(dtype=vec), x: wp.array(dtype=vec), v: wp.array(dtype=vec)):
    i = wp.tid()
    x[i] = vec(f64(0.0), f64(0.0))
    v[i] = v0[0]


@wp.kernel
def step(x: wp.array(dtype=vec), v: wp.array(dtype=vec), c: wp.array(dtype=f64), dt: f64,
         weight: f64, x_out: wp.array(dtype=vec), v_out: wp.array(dtype=vec),
         mean_range: wp.array(dtype=f64)):
    """One step of symplectic Euler with gravity and drag ``c |v| v``; a projectile crossing
    the ground adds its interpolated landing point (times ``weight``) to ``mean_range``."""
    i = wp.tid()
    vi = v[i]
    a = vec(f64(0.0), f64(-G)) - c[i] * wp.length(vi) * vi
    vn = vi + a * dt
    xi = x[i]
    xn = xi + vn * dt
    x_out[i] = xn
    v_out[i] = vn
    if xi[1] >= f64(0.0) and xn[1] < f64(0.0):
        land = xi[0] + (xn[0] - xi[0]) * xi[1] / (xi[1] - xn[1])
        wp.atomic_add(mean_range, 0, land * weight)


def drags(batch, seed=7):
    """The ensemble's drag coefficients (the same for every launch of the sweep)."""
    rng = np.random.default_rng(seed)
    return DRAG * np.clip(1.0 + SPREAD * rng.standard_normal(batch), 0.1, None)


def mean_range(launch, c_np):
    """``(mean range, d/d angle, d/d speed)`` of the ensemble launched at ``(speed, angle)``."""
    speed, angle = launch
    n = len(c_np)
    v0 = wp.array([[speed * np.cos(angle), speed * np.sin(angle)]], dtype=vec,
                  requires_grad=True)
    c = wp.array(c_np, dtype=f64)
    x = wp.zeros(n, dtype=vec, requires_grad=True)
    v = wp.zeros(n, dtype=vec, requires_grad=True)
    out = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(start, n, inputs=[v0], outputs=[x, v])
        for _ in range(STEPS):
            xn = wp.zeros(n, dtype=vec, requires_grad=True)
            vn = wp.zeros(n, dtype=vec, requires_grad=True)
            wp.launch(step, n, inputs=[x, v, c, DT, 1.0 / n], outputs=[xn, vn, out])
            x, v = xn, vn
    tape.backward(out)
    g = v0.grad.numpy()[0]  # d mean / d v0
    d_angle = g @ (speed * np.array([-np.sin(angle), np.cos(angle)]))
    d_speed = g @ np.array([np.cos(angle), np.sin(angle)])
    return float(out.numpy()[0]), float(d_angle), float(d_speed)


def grid(angles, speeds):
    return [(s, a) for s in speeds for a in np.linspace(0.15, 1.35, angles)]


def sweep(client, launches, c_np, numba_threads="auto"):
    """The sweep on the cluster: kernels warmed on every worker (the example runs one launch
    of the sweep, so that Numba compiles the same specializations, parallel ones included,
    as the tasks: once per machine), then one task per launch."""
    import weft.integrations.distributed as wd
    t0 = time.perf_counter()
    wd.warm(client, [start, step], example=lambda: mean_range(launches[0], c_np))
    t1 = time.perf_counter()
    out = wd.map(mean_range, launches, c_np, client=client, numba_threads=numba_threads,
                 compile_first=False)  # warm compiled already
    return out, t1 - t0, time.perf_counter() - t1


def local_client(workers):
    from dask.distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    return Client(cluster), cluster


def check(launches, results, c_np):
    """The cluster's values and gradients equal this process's; one gradient equals central
    finite differences."""
    ok = True
    for launch, got in zip(launches, results):
        want = mean_range(launch, c_np)
        ok &= np.allclose(got, want, rtol=1e-12, atol=0)
    speed, angle = launches[len(launches) // 3]
    h = 1e-6
    fd_a = (mean_range((speed, angle + h), c_np)[0] - mean_range((speed, angle - h), c_np)[0]) \
        / (2 * h)
    fd_s = (mean_range((speed + h, angle), c_np)[0] - mean_range((speed - h, angle), c_np)[0]) \
        / (2 * h)
    _, d_angle, d_speed = mean_range((speed, angle), c_np)
    err = max(abs(d_angle - fd_a) / abs(fd_a), abs(d_speed - fd_s) / abs(fd_s))
    print(f"cluster == this process for all {len(launches)} launches: {ok}; gradient vs "
          f"finite differences at speed {speed}, angle {angle:.3f}: relative error {err:.1e}")
    return ok and err < 1e-5


def best_angles(launches, results):
    """Per speed, the angle where d(mean range)/d(angle) crosses zero (linear interpolation)."""
    out = {}
    for s in sorted({sp for sp, _ in launches}):
        rows = [(a, r) for (sp, a), r in zip(launches, results) if sp == s]
        for (a0, r0), (a1, r1) in zip(rows, rows[1:]):
            if r0[1] > 0 >= r1[1]:
                out[s] = a0 + (a1 - a0) * r0[1] / (r0[1] - r1[1])
    return out


def plot(path, launches, results):
    """Mean range against angle per speed, with each point's tangent from its gradient."""
    speeds = sorted({s for s, _ in launches})
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for s in speeds:
            rows = [(a, r) for (sp, a), r in zip(launches, results) if sp == s]
            a = np.degrees([r[0] for r in rows])
            m = np.array([r[1][0] for r in rows])
            line, = ax.plot(a, m, "o-", ms=3, label=f"speed {s:g} m/s")
            for (ang, (mr, da, _)) in rows:  # tangents: slope per degree
                d = np.radians(4.0)
                ax.plot(np.degrees([ang - d, ang + d]), [mr - da * d, mr + da * d],
                        color=line.get_color(), lw=0.8, alpha=0.7)
        ax.set_xlabel("launch angle (degrees)")
        ax.set_ylabel("mean range (m)")
        ax.set_title("range under uncertain drag, with d/d(angle) tangents")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        return path
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        print("neither matplotlib nor Pillow is installed: no plot "
              "(pip install 'weft[examples]')")
        return None
    w, h, pad = 720, 460, 40
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    angles = np.degrees([a for _, a in launches])
    ranges = np.array([r[0] for r in results])
    lo, hi = np.array([angles.min(), 0.0]), np.array([angles.max(), ranges.max() * 1.05])

    def px(a_deg, m):
        q = (np.array([a_deg, m]) - lo) / (hi - lo)
        return float(pad + q[0] * (w - 2 * pad)), float(h - pad - q[1] * (h - 2 * pad))
    d.line([px(lo[0], 0), px(hi[0], 0)], fill=(150, 150, 150))
    for a_deg in range(int(np.ceil(lo[0] / 15.0)) * 15, int(hi[0]) + 1, 15):  # axis ticks
        x0, y0 = px(a_deg, 0)
        d.line([(x0, y0), (x0, y0 + 4)], fill=(150, 150, 150))
        d.text((x0 - 6, y0 + 6), f"{a_deg}", fill="black")
    for m in range(0, int(hi[1]) + 1, 5):
        x0, y0 = px(lo[0], m)
        d.text((x0 - 24, y0 - 6), f"{m}", fill="black")
    colours = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]
    for k, s in enumerate(speeds):
        col = colours[k % len(colours)]
        rows = [(a, r) for (sp, a), r in zip(launches, results) if sp == s]
        d.line([px(np.degrees(a), r[0]) for a, r in rows], fill=col, width=2)
        for a, (mr, da, _) in rows:
            dd = np.radians(4.0)
            d.line([px(np.degrees(a - dd), mr - da * dd), px(np.degrees(a + dd), mr + da * dd)],
                   fill=(120, 120, 120))
        d.text((pad + 10, pad + 16 * k), f"speed {s:g} m/s", fill=col)
    d.text((pad, 8), "mean range (m) against launch angle (degrees), tangents from d/d(angle)",
           fill="black")
    img.save(path)
    return path


def scaling(launches, c_np, repeat=1):
    """Seconds for the sweep in this process and on 1 and 2 local workers (warm caches), with
    Numba's pool at 1 thread and at the machine's cores; the best of ``repeat`` runs each."""
    import numba
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count()
    mean_range(launches[0], c_np)  # compile here first (and fill the machine's cache)
    rows = []
    for nt in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(nt)
        best = []
        for _ in range(repeat):
            t = time.perf_counter()
            for launch in launches:
                mean_range(launch, c_np)
            best.append(time.perf_counter() - t)
        rows.append((f"this process, Numba {nt} thread(s)", min(best), 0.0))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for n, threads in ((1, 1), (1, "auto"), (2, "auto")):
        client, cluster = local_client(n)
        try:
            runs = [sweep(client, launches, c_np, numba_threads=threads)
                    for _ in range(repeat)]
        finally:
            client.close()
            cluster.close()
        nt = max(1, cores // n) if threads == "auto" else threads
        rows.append((f"{n} worker(s) x 1 task thread, Numba {nt}", min(r[2] for r in runs),
                     runs[0][1]))
    print(f"\n{len(launches)} launches x {len(c_np)} projectiles x {STEPS} steps, forward and "
          f"backward ({cores} cores; best of {repeat}; warm: the first warm-up)")
    print(f"{'':40s} {'sweep (s)':>10s} {'warm (s)':>9s} {'speed-up':>9s}")
    for name, s, w in rows:
        print(f"{name:40s} {s:10.2f} {w:9.2f} {rows[0][1] / s:9.2f}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scheduler", help="address of a running Dask scheduler "
                    "(tcp://host:8786); default: a local cluster")
    ap.add_argument("--workers", type=int, default=2, help="local worker processes")
    ap.add_argument("--angles", type=int, default=24, help="launch angles per speed")
    ap.add_argument("--speeds", type=float, nargs="+", default=[12.0, 18.0])
    ap.add_argument("--batch", type=int, default=512, help="projectiles per launch")
    ap.add_argument("--check", action="store_true", help="compare with this process")
    ap.add_argument("--scaling", action="store_true", help="time 1 and 2 local workers")
    ap.add_argument("--repeat", type=int, default=1, help="--scaling: best of this many runs")
    ap.add_argument("--out", default=".", help="folder for the plot")
    args = ap.parse_args(argv)
    launches = grid(args.angles, args.speeds)
    c_np = drags(args.batch)
    if args.scaling:
        scaling(launches, c_np, args.repeat)
        return True
    if args.scheduler:
        from dask.distributed import Client
        client, cluster = Client(args.scheduler), None
    else:
        client, cluster = local_client(args.workers)
    try:
        results, warm_s, run_s = sweep(client, launches, c_np)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(f"{len(launches)} launches on the cluster: warm {warm_s:.2f} s, sweep {run_s:.2f} s")
    print(f"{'speed':>6s} {'angle':>6s} {'mean range':>11s} {'d/d angle':>10s} "
          f"{'d/d speed':>10s}")
    for (s, a), (m, da, ds) in zip(launches, results):
        print(f"{s:6.1f} {np.degrees(a):6.1f} {m:11.4f} {da:10.4f} {ds:10.4f}")
    for s, a in best_angles(launches, results).items():
        print(f"speed {s:g} m/s: the mean range is longest at {np.degrees(a):.1f} degrees "
              "(where its angle derivative crosses zero)")
    ok = check(launches, results, c_np) if args.check else True
    os.makedirs(args.out, exist_ok=True)
    path = plot(os.path.join(args.out, "sweep_dask.png"), launches, results)
    if path:
        print(f"wrote {path}")
    print("all checks pass" if ok else "CHECK FAILED")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
