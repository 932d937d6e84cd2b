"""Interop overhead, both frameworks: one weft kernel call inside ``jax.jit`` (and its
``jax.grad``) and inside ``torch.autograd`` (forward, forward + backward), each beside a plain
``wp.launch`` and the same computation written in pure JAX or pure PyTorch.

    python benchmarks/bench_interop.py             # both tables (a framework not installed: skipped)

It runs ``bench_interop_jax.py`` and ``bench_interop_torch.py`` (each also runs on its own,
with its options) in their own processes, one after the other, so that neither framework's
threads disturb the other's timings.
"""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    for framework, script in (("jax", "bench_interop_jax.py"), ("torch", "bench_interop_torch.py")):
        print(f"== {framework}", flush=True)
        if importlib.util.find_spec(framework) is None:
            print(f"{framework} is not installed: skipped")
            continue
        subprocess.run([sys.executable, os.path.join(HERE, script), *sys.argv[1:]], check=True)


if __name__ == "__main__":
    main()
