"""Launch overhead and warm start-up (issue: CPU performance).

    python benchmarks/bench_launch.py [--launches 10000] [--markdown]

1. 10,000 launches of a tiny kernel (one thread adding a scalar): microseconds per launch for
   weft's wp.launch, weft's generated function called directly, a bare Numba function, and
   NVIDIA Warp's wp.launch on the CPU.
2. A new process with a warm cache: seconds from interpreter start to the first launch's result,
   for weft and for Warp (each run once first to fill its cache).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numba
import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

KERNEL = textwrap.dedent("""
    import numpy as np
    import {mod} as wp

    @wp.kernel
    def tiny(a: wp.array(dtype=float), s: float):
        i = wp.tid()
        a[i] = a[i] + s
""")


def per_launch(fn, n):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def launch_rows(n):
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for mod in ("weft", "warp"):
            try:
                __import__(mod)
            except ImportError:
                continue
            path = os.path.join(d, f"tiny_{mod}.py")
            with open(path, "w") as f:
                f.write(KERNEL.format(mod=mod))
            sys.path.insert(0, d)
            m = __import__(f"tiny_{mod}")
            wp = m.wp
            if mod == "warp":
                wp.config.quiet = True
                wp.init()
            a = wp.zeros(1, dtype=float)
            rows.append((f"{mod} wp.launch", per_launch(
                lambda: wp.launch(m.tiny, dim=1, inputs=[a, 1.0]), n)))
            if mod == "weft":
                fwd = m.tiny.entry("forward", "serial")
                data, s = a.numpy(), np.float32(1.0)
                rows.append(("weft generated function", per_launch(
                    lambda: fwd((1,), data, s), n)))

    @numba.njit(cache=False)
    def bare(a, s):
        for i in range(a.shape[0]):
            a[i] += s

    data = np.zeros(1, np.float32)
    rows.append(("bare numba.njit call", per_launch(lambda: bare(data, np.float32(1.0)), n)))
    return rows


STARTUP = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import {mod} as wp
    from tiny_{mod} import tiny
    {init}
    a = wp.zeros(4, dtype=float)
    wp.launch(tiny, dim=4, inputs=[a, 1.0])
    assert float(a.numpy()[0]) == 1.0
    print(time.perf_counter() - t0)
""")


def startup_rows():
    rows = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + d, WEFT_CACHE_DIR=os.path.join(d, "c"))
        for mod in ("weft", "warp"):
            try:
                __import__(mod)
            except ImportError:
                continue
            with open(os.path.join(d, f"tiny_{mod}.py"), "w") as f:
                f.write(KERNEL.format(mod=mod))
            code = STARTUP.format(mod=mod, init="wp.config.quiet = True" if mod == "warp"
                                  else "")
            cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                  text=True)
            warm = [float(subprocess.run([sys.executable, "-c", code], env=env,
                                         capture_output=True, text=True).stdout.split()[-1])
                    for _ in range(3)]
            rows.append((mod, float(cold.stdout.split()[-1]), min(warm)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=10_000)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = launch_rows(args.launches)
    print(f"\nLaunch overhead, {args.launches} launches of a one-thread kernel")
    if args.markdown:
        print("| path | us per launch |\n|---|---|")
    for name, us in rows:
        print(f"| {name} | {us:.2f} |" if args.markdown else f"{name:>28}  {us:8.2f} us")
    rows = startup_rows()
    print("\nNew process to first launch result (s): first run (cold cache), then best of 3 "
          "with the cache warm")
    if args.markdown:
        print("| library | cold s | warm s |\n|---|---|---|")
    for name, cold, warm in rows:
        print(f"| {name} | {cold:.2f} | {warm:.2f} |" if args.markdown else
              f"{name:>8}  cold {cold:6.2f} s  warm {warm:6.2f} s")


if __name__ == "__main__":
    main()
