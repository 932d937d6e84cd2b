"""Cost of exact loop adjoints: forward vs adjoint time and stack memory, by trip count.

    python benchmarks/bench_loops.py [--threads 100000] [--markdown]

The kernel iterates the nonlinear recurrence x <- x - 0.1 sin(x) + 0.1 cos(y),
y <- 0.99 y + 0.01 x, with two carried float32 values per iteration; both tend to pi/4, so every
trip count computes on normal floats. (The recurrence used before, x <- x - 0.1 sin(x) +
0.01 x y, decays to zero: from about iteration 780 on its values are float32 subnormals, which
cost a microcode assist per operation on many x86 cores, so its 1000-iteration row measured the
subnormal penalty, 35x the 100-iteration row for 10x the work; see docs/loops.md.) The adjoint replays the loop, recording the carried values of each
iteration on a per-thread stack, then walks the iterations backwards recomputing each body.
"""
import argparse
import os
import resource
import time

import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")
import weft as wp  # noqa: E402


@wp.kernel
def recurrence(x0: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    x = x0[i]
    y = float(1.0)
    for k in range(n):
        x = x - 0.1 * wp.sin(x) + 0.1 * wp.cos(y)
        y = y * 0.99 + 0.01 * x
    out[i] = x + y


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    n_threads = args.threads
    x = wp.array(np.random.default_rng(0).random(n_threads).astype(np.float32),
                 requires_grad=True)
    out = wp.zeros(n_threads, dtype=float, requires_grad=True)
    out.grad.fill_(1.0)
    rows = []
    for n in (10, 100, 1000):
        fwd = lambda: wp.launch(recurrence, n_threads, inputs=[x, n], outputs=[out])  # noqa
        adj = lambda: wp.launch(recurrence, n_threads, inputs=[x, n], outputs=[out],  # noqa
                                adjoint=True)
        fwd()
        adj()  # compile and warm up
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tf = best_of(fwd, args.repeat)
        ta = best_of(adj, args.repeat)
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stack = n * 2 * 4  # two float32 carried values per iteration
        rows.append((n, tf * 1e3, ta * 1e3, ta / tf, stack, (rss1 - rss0) / 1024))
    head = ("iterations", "forward ms", "adjoint ms", "adjoint/forward",
            "stack bytes/thread", "peak RSS growth MiB")
    print(f"{n_threads} threads, {wp.get_device()} with {__import__('numba').get_num_threads()}"
          " Numba threads")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print(f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]:.2f} | {r[4]} | {r[5]:.1f} |")
    else:
        print("  ".join(f"{h:>18}" for h in head))
        for r in rows:
            print(f"{r[0]:>18}  {r[1]:>18.2f}  {r[2]:>18.2f}  {r[3]:>18.2f}  {r[4]:>18}  "
                  f"{r[5]:>18.1f}")


if __name__ == "__main__":
    main()
