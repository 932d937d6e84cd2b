"""Numba compile time of generated code with and without weft's lean lowering and typing, side
by side in one process.

This machine's speed varies by up to 13% between processes (docs/performance.md), more than the
effect of one compiler pass. So both variants run in the same process, alternated round by round:
each round writes every kernel below under a new name (nothing comes from a cache), compiles
and launches its forward and its adjoint, once with ``numba_lowering.LEAN_LOWERING`` and
``numba_passes.LEAN_TYPING`` on (no ``del`` statements and no reference counting for values that hold no
reference; the faster walk over statements' variables; operators on plain values typed once)
and once off (Numba's). The table gives the median CPU seconds of
each and their ratio (after a warm-up round, not counted, that pays Numba's and weft's own
first-use costs). Results are checked equal between the two.

    python benchmarks/bench_compile_passes.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("WEFT_BACKGROUND_COMPILE", "0")
os.environ.setdefault("WEFT_CACHE_DIR", tempfile.mkdtemp(prefix="weft-bench-passes-"))

import weft as wp  # noqa: E402
from weft.runtime import numba_lowering, numba_passes  # noqa: E402

SOURCE = '''
import weft as wp


@wp.kernel
def det_inv4_{tag}(m: wp.array(dtype=wp.mat44d), det: wp.array(dtype=wp.float64),
                   inv: wp.array(dtype=wp.mat44d)):
    i = wp.tid()
    det[i] = wp.determinant(m[i])
    inv[i] = wp.inverse(m[i])


@wp.func
def spring_{tag}(xi: wp.vec3, xj: wp.vec3, rest: float, k: float):
    d = xi - xj
    l = wp.length(d)
    return d * (k * (l - rest) / l)


@wp.kernel
def springs_{tag}(x: wp.array(dtype=wp.vec3), e: wp.array(dtype=wp.vec2i),
                  f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a = e[i][0]
    b = e[i][1]
    s = spring_{tag}(x[a], x[b], 0.5, 10.0)
    wp.atomic_add(f, a, -s)
    wp.atomic_add(f, b, s)


@wp.kernel
def transforms_{tag}(t: wp.array(dtype=wp.transform), p: wp.array(dtype=wp.vec3),
                     out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.transform_get_rotation(t[i])
    r = wp.quat_rotate(q, p[i]) + wp.transform_get_translation(t[i])
    out[i] = wp.transform_point(t[i], r) + wp.quat_rotate_inv(q, r)


@wp.kernel
def loop_{tag}(x: wp.array2d(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        v = x[i, j]
        if v > 0.0:
            s += wp.sin(v) * v
        else:
            s -= v * v
    out[i] = s
'''


def _load(tag, folder):
    path = os.path.join(folder, f"kernels_{tag}.py")
    with open(path, "w") as f:
        f.write(SOURCE.format(tag=tag))
    spec = importlib.util.spec_from_file_location(f"kernels_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _cases(mod, tag):
    rng = np.random.default_rng(0)
    n = 6

    def det_inv4():
        m = wp.array(rng.random((n, 4, 4)) + 2 * np.eye(4), dtype=wp.mat44d, requires_grad=True)
        det = wp.zeros(n, dtype=wp.float64, requires_grad=True)
        inv = wp.zeros(n, dtype=wp.mat44d, requires_grad=True)
        return getattr(mod, f"det_inv4_{tag}"), [m], [det, inv]

    def springs():
        x = wp.array(rng.random((n, 3)), dtype=wp.vec3, requires_grad=True)
        e = wp.array(np.array([[k, (k + 1) % n] for k in range(n)]), dtype=wp.vec2i)
        f = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        return getattr(mod, f"springs_{tag}"), [x, e], [f]

    def transforms():
        q = rng.normal(size=(n, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        t = wp.array(np.concatenate([rng.random((n, 3)), q], 1), dtype=wp.transform,
                     requires_grad=True)
        p = wp.array(rng.random((n, 3)), dtype=wp.vec3, requires_grad=True)
        out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        return getattr(mod, f"transforms_{tag}"), [t, p], [out]

    def loop():
        x = wp.array(rng.normal(size=(n, 5)), dtype=float, requires_grad=True)
        out = wp.zeros(n, dtype=float, requires_grad=True)
        return getattr(mod, f"loop_{tag}"), [x, 5], [out]

    return {"det_inv4 (mat44d)": det_inv4, "springs (vec3, func)": springs,
            "transforms (quat)": transforms, "loop (branches)": loop}


def _run(make):
    """CPU seconds of the first forward launch and of the first backward pass, and the
    values: the outputs and every input's gradient."""
    kernel, inputs, outputs = make()
    t0 = time.process_time()
    wp.launch(kernel, outputs[0].shape[0], inputs=inputs, outputs=outputs)
    t1 = time.process_time()
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, outputs[0].shape[0], inputs=inputs, outputs=outputs)
    tape.backward(grads={o: wp.array(np.ones(o.numpy().shape), dtype=o.dtype)
                         for o in outputs})
    t2 = time.process_time()
    values = [o.numpy().copy() for o in outputs] + [
        a.grad.numpy().copy() for a in inputs if getattr(a, "grad", None) is not None]
    return t1 - t0, t2 - t1, values


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="weft-bench-passes-src-")
    times = {}   # (case, lean) -> [(fwd, adj)]
    values = {}
    warm = _load("warm", folder)  # Numba's and weft's own first-use costs, paid outside the rounds
    for make in _cases(warm, "warm").values():
        _run(make)
    for r in range(args.rounds):
        for lean in ((True, False) if r % 2 == 0 else (False, True)):
            numba_lowering.LEAN_LOWERING = numba_passes.LEAN_TYPING = lean
            numba_passes._resolved.clear()  # each round types its operators afresh
            tag = f"r{r}{'l' if lean else 'n'}"
            mod = _load(tag, folder)
            for case, make in _cases(mod, tag).items():
                fwd, adj, vals = _run(make)
                times.setdefault((case, lean), []).append((fwd, adj))
                ref = values.setdefault(case, vals)
                same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ref, vals))
                if not same:
                    raise SystemExit(f"{case}: results differ between the variants")
    numba_lowering.LEAN_LOWERING = numba_passes.LEAN_TYPING = True
    print(f"median CPU seconds of {args.rounds} rounds, first launch forward / first backward, "
          "compile included; results equal")
    print()
    print("| kernel | Numba's fwd | adj | lean fwd | adj | lean / Numba's (fwd+adj) |")
    print("|---|---:|---:|---:|---:|---:|")
    tot = {True: 0.0, False: 0.0}
    for case in values:
        row = []
        for lean in (False, True):
            f = statistics.median(t[0] for t in times[(case, lean)])
            a = statistics.median(t[1] for t in times[(case, lean)])
            row += [f, a]
            tot[lean] += f + a
        print(f"| {case} | {row[0]:.2f} | {row[1]:.2f} | {row[2]:.2f} | {row[3]:.2f} | "
              f"{(row[2] + row[3]) / (row[0] + row[1]):.2f} |")
    print(f"| **all** | | {tot[False]:.2f} | | {tot[True]:.2f} | "
          f"**{tot[True] / tot[False]:.2f}** |")


if __name__ == "__main__":
    main()
