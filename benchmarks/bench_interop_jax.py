"""Overhead of a weft kernel called from JAX (issue 35: JAX interop).

    python benchmarks/bench_interop_jax.py [--n 16] [--calls 2000] [--warp-python PY]

Times one call of a tiny kernel (``out = a + b`` on ``--n`` floats) four ways and prints a
table of microseconds per call:

- ``wp.launch``: weft's direct launch on weft arrays (the floor);
- ``jax_kernel in jit``: ``jax.jit`` of ``wp.jax_kernel(add)`` (an XLA FFI call: JAX dispatch,
  the ctypes handler, the launch);
- ``jax_kernel grad in jit``: ``jax.jit(jax.grad(...))`` of a differentiable wrapper (forward
  and adjoint kernels);
- ``jnp in jit``: the same sum in plain JAX (JAX's own dispatch cost);
- the same rows for NVIDIA Warp's ``jax_kernel`` when ``warp`` is importable here, or when
  ``--warp-python`` names a Python that has it (run there in a subprocess).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

CODE = r'''
import json, sys, time
import numpy as np
import jax, jax.numpy as jnp
IMPL, N, CALLS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if IMPL == "warp":
    import warp as wp
    wp.config.quiet = True
    wp.init()
else:
    import weft as wp


@wp.kernel
def add(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + b[i]


def per_call(fn, calls):
    fn()
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


out = {}
a = wp.array(np.arange(N, dtype=np.float32), device="cpu")
b = wp.ones(N, dtype=float, device="cpu")
c = wp.zeros(N, dtype=float, device="cpu")
out["wp.launch"] = per_call(lambda: wp.launch(add, dim=N, inputs=[a, b], outputs=[c],
                                              device="cpu"), CALLS)
x = jnp.arange(N, dtype=jnp.float32)
y = jnp.ones(N, dtype=jnp.float32)
f = jax.jit(wp.jax_kernel(add))
out["jax_kernel in jit"] = per_call(lambda: jax.block_until_ready(f(x, y)), CALLS)
g = wp.jax_kernel(add, enable_backward=True)
grad = jax.jit(jax.grad(lambda x, y: jnp.sum(g(x, y)[0])))
np.testing.assert_allclose(np.asarray(grad(x, y)), np.ones(N))
out["jax_kernel grad in jit"] = per_call(lambda: jax.block_until_ready(grad(x, y)), CALLS)
h = jax.jit(lambda x, y: x + y)
out["jnp in jit"] = per_call(lambda: jax.block_until_ready(h(x, y)), CALLS)
np.testing.assert_allclose(np.asarray(f(x, y)[0]), np.arange(N) + 1)
print(json.dumps(out))
'''


def measure(python, impl, n, calls, env=None):
    # kernels need their source in a file
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CODE)
    try:
        r = subprocess.run([python, f.name, impl, str(n), str(calls)], capture_output=True,
                           text=True, env=env)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise RuntimeError(f"{impl} run failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--warp-python", default=None,
                    help="a Python with NVIDIA Warp and JAX (default: this one, if it has warp)")
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cols = {"weft": measure(sys.executable, "weft", args.n, args.calls, env)}
    warp_py = args.warp_python
    if warp_py is None:
        try:
            import warp  # noqa: F401
            warp_py = sys.executable
        except ImportError:
            warp_py = None
    if warp_py:
        try:
            cols["Warp"] = measure(warp_py, "warp", args.n, args.calls)
        except RuntimeError as e:
            print(f"(Warp column skipped: {str(e).splitlines()[0]})")
    rows = list(cols["weft"])
    print(f"\ntiny kernel (n={args.n}), microseconds per call, best of 5 x {args.calls} calls")
    print(f"{'':26}" + "".join(f"{k:>12}" for k in cols))
    for r in rows:
        print(f"{r:26}" + "".join(f"{cols[k].get(r, float('nan')):12.1f}" for k in cols))


if __name__ == "__main__":
    main()
