"""A long differentiable rollout through ``wp.loop`` against recording every step.

    python benchmarks/bench_loop_checkpoint.py [--size 32] [--steps 1000] [--markdown]

The cloth of ``benchmarks/cloth.py`` (N x N particles, about 6 springs each, two fixed
corners), ``--steps`` semi-implicit Euler steps, each a spring-force launch into a fresh force
array and an integration launch into fresh state arrays; the loss is the cloth's height term on
the final positions; gradients with respect to the initial velocities and the spring rest
lengths (a parameter the step reads without carrying it in the state).

Rows: ``full`` records every launch on the tape (every step's arrays stay alive until
backward); ``loop`` is ``wp.loop`` with the default ``round(sqrt(steps))`` checkpoints;
``loop k=...`` and ``revolve k=...`` other schedules. Columns: forward and backward time (best
of ``--repeat``), peak memory allocated by Python/NumPy during forward + backward (tracemalloc,
measured in a separate run), the states the node stored at most, and the largest gradient
difference from ``full`` (0 means bitwise equal). The spring kernel accumulates forces with
atomics, so with several threads the summation order may differ between runs: by default every
launch runs on one thread (deterministic, and steady on a shared machine); ``--parallel`` uses
weft's multi-threaded launches.
"""
import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

sys.path.insert(0, os.path.dirname(__file__))
import cloth  # noqa: E402

import weft as wp  # noqa: E402

K = cloth.build(wp)


class Rollout:
    """The cloth's arrays and its step as a ``wp.loop`` body."""

    def __init__(self, n):
        x, inv_mass, pairs, rest = cloth.make_cloth(n)
        self.x0 = x
        self.n = n * n
        self.inv_mass = wp.array(inv_mass, dtype=float)
        self.pairs = wp.array(pairs.reshape(-1), dtype=int)
        self.rest_np = rest
        self.n_springs = len(rest)
        self.gravity = wp.vec3(*cloth.GRAVITY)

    def fresh(self):
        """(x0, v0, rest) with gradients."""
        return (wp.array(self.x0, dtype=wp.vec3, requires_grad=True),
                wp.zeros(self.n, dtype=wp.vec3, requires_grad=True),
                wp.array(self.rest_np, dtype=float, requires_grad=True))

    def body(self, rest):
        def step(i, s):
            x, v = s
            f = wp.zeros(self.n, dtype=wp.vec3, requires_grad=True)
            xn = wp.empty(self.n, dtype=wp.vec3, requires_grad=True)
            vn = wp.empty(self.n, dtype=wp.vec3, requires_grad=True)
            wp.launch(K["eval_springs"], self.n_springs,
                      inputs=[x, v, self.pairs, rest, cloth.KE, cloth.KD, f])
            wp.launch(K["integrate"], self.n, inputs=[x, v, f, self.inv_mass, self.gravity,
                                                     cloth.DT], outputs=[xn, vn])
            return xn, vn
        return step

    def run(self, steps, mode, k=None):
        """Forward and backward; returns (forward s, backward s, grads, tape)."""
        x0, v0, rest = self.fresh()
        body = self.body(rest)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        t0 = time.perf_counter()
        with tape:
            if mode == "full":
                s = (x0, v0)
                for i in range(steps):
                    s = body(i, s)
            else:
                s = wp.loop(body, (x0, v0), steps, checkpoints=k,
                            schedule="revolve" if mode == "revolve" else "uniform")
            wp.launch(K["height_loss"], self.n, inputs=[s[0]], outputs=[loss])
        t1 = time.perf_counter()
        tape.backward(loss)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, (v0.grad.numpy().copy(), rest.grad.numpy().copy()), tape


def measure(sim, steps, mode, k, repeat):
    best_f = best_b = float("inf")
    for _ in range(repeat):
        tf, tb, grads, tape = sim.run(steps, mode, k)
        best_f, best_b = min(best_f, tf), min(best_b, tb)
        del tape
    tracemalloc.start()
    tracemalloc.reset_peak()
    _, _, _, tape = sim.run(steps, mode, k)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    node = tape.launches[0]
    stats = getattr(node, "stats", None)
    return {"fwd": best_f, "bwd": best_b, "peak": peak, "grads": grads,
            "stored": stats["stored_peak"] if stats else steps + 1,
            "recorded": stats["recorded_peak"] if stats else steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--parallel", action="store_true", help="multi-threaded launches")
    args = ap.parse_args()
    if not args.parallel:
        wp.config.serial_threshold = 1 << 62
    sim = Rollout(args.size)
    sim.run(3, "full")  # compile (or load) the kernels and their adjoints
    sim.run(3, "loop")
    k_small = max(2, int(round(np.log2(args.steps))))
    rows = [("full (every launch recorded)", "full", None), ("loop (default)", "loop", None),
            (f"loop k={4 * int(round(np.sqrt(args.steps)))}", "loop",
             4 * int(round(np.sqrt(args.steps)))),
            (f"revolve k={k_small}", "revolve", k_small)]
    results = {name: measure(sim, args.steps, mode, k, args.repeat) for name, mode, k in rows}
    ref = results[rows[0][0]]["grads"]
    mib = 1024 * 1024
    state_mib = sim.n * 3 * 4 * 2 / mib
    head = ["schedule", "forward s", "backward s", "total s", "peak MiB", "states stored",
            "steps recorded at once", "max |grad - full|"]
    out = []
    for name, r in results.items():
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(r["grads"], ref))
        out.append([name, f"{r['fwd']:.3f}", f"{r['bwd']:.3f}", f"{r['fwd'] + r['bwd']:.3f}",
                    f"{r['peak'] / mib:.1f}", str(r["stored"]), str(r["recorded"]),
                    f"{diff:.1e}" if diff else "0 (bitwise)"])
    title = (f"cloth {args.size}x{args.size} ({sim.n} particles, {sim.n_springs} springs), "
             f"{args.steps} steps, {'parallel' if args.parallel else 'serial'} launches; one "
             f"state (x, v) = {state_mib:.3f} MiB")
    print(title)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in out:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[c]) for r in out)) for c, h in enumerate(head)]
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for row in out:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    full, loop = results[rows[0][0]], results[rows[1][0]]
    print(f"\nwp.loop (default) against full recording: peak memory "
          f"{loop['peak'] / full['peak']:.3f}x, time "
          f"{(loop['fwd'] + loop['bwd']) / (full['fwd'] + full['bwd']):.2f}x")


if __name__ == "__main__":
    main()
