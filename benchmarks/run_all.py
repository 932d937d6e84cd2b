"""Run every benchmark and print all tables (markdown), as recorded in docs/performance.md.

    python benchmarks/run_all.py            # weft, hand-written Numba and NumPy columns
    /path/to/venv-with-warp-and-jax/bin/python benchmarks/run_all.py   # + Warp and JAX

Warp and JAX are never dependencies of weft: their columns appear when they are importable.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ["bench_startup.py", "bench_transcendental.py", "bench_cloth.py", "bench_launch.py",
           "bench_loops.py", "bench_geometry.py", "bench_whole.py", "bench_loop_checkpoint.py"]
EXTRA = {"bench_transcendental.py": ["--fast-math"]}  # the opt-in fast_math columns too

if __name__ == "__main__":
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    for script in SCRIPTS:
        path = os.path.join(HERE, script)
        if not os.path.exists(path):
            continue
        print(f"\n## {script}\n", flush=True)
        subprocess.run([sys.executable, path, "--markdown", *EXTRA.get(script, []),
                        *sys.argv[1:]], env=env, check=False)
