"""Whole-program benchmarks (issue: graph capture, Jacobians).

    python benchmarks/bench_whole.py [--markdown] [--quick]

1. Graph capture: a cloth frame (16 substeps, 2 launches and a zero_ each) replayed from a
   capture against launching it, at a small size where launch overhead dominates and at
   128 x 128; and 1,000 launches of a one-thread kernel captured and replayed, giving the
   replay's cost per launch against calling the generated entry directly.
2. A 64-environment Jacobian: block-diagonal seeds (``tape.jacobian(..., envs=64)``: one
   backward per row of one environment) against the row-by-row recipe (one backward per row of
   the whole output).
3. A banded 36,000 x 36,000 Jacobian by graph colouring (``sparsity=``: one backward per
   colour) against the row-by-row recipe's projected time (36,000 backwards, timed on a
   sample).
4. ``tape.hvp`` against one gradient (``tape.backward``) on a differentiable cloth (16
   substeps, 33 launches), each including the recording forward run; the Hessian's symmetry
   (``u . H v = v . H u``) is checked first.
Warp has no Jacobian or colouring API; its graph capture on the CPU replays launch by launch
(Warp 1.19), so the Warp column of section 1 is its eager launch loop when importable.
"""
import argparse
import os
import sys
import time

import numpy as np

# steady-state timings: the threaded kernels from the first launch (no tiered compiles)
os.environ.setdefault("WEFT_TIERED_COMPILE", "0")

sys.path.insert(0, os.path.dirname(__file__))
import cloth  # noqa: E402
import machine  # noqa: E402

import weft as wp  # noqa: E402


def best(fn, repeat=7):
    return machine.best(fn, repeat)


# ------------------------------------------------------------------------ 1. capture

@wp.kernel
def tiny(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] + s


class Cloth:
    def __init__(self, n):
        self.k = cloth.build(wp)
        x, inv_mass, pairs, rest = cloth.make_cloth(n)
        self.x = [wp.array(x, dtype=wp.vec3) for _ in range(2)]
        self.v = [wp.zeros(n * n, dtype=wp.vec3) for _ in range(2)]
        self.f = wp.zeros(n * n, dtype=wp.vec3)
        self.inv_mass = wp.array(inv_mass, dtype=float)
        self.pairs = wp.array(pairs.reshape(-1), dtype=int)
        self.rest = wp.array(rest, dtype=float)
        self.n = n * n
        self.g = wp.vec3(*cloth.GRAVITY)

    def frame(self):
        for s in range(16):
            a, b = s % 2, 1 - s % 2
            self.f.zero_()
            wp.launch(self.k["eval_springs"], self.rest.shape[0],
                      inputs=[self.x[a], self.v[a], self.pairs, self.rest, cloth.KE, cloth.KD,
                              self.f])
            wp.launch(self.k["integrate"], self.n, inputs=[self.x[a], self.v[a], self.f,
                                                           self.inv_mass, self.g, cloth.DT],
                      outputs=[self.x[b], self.v[b]])


def capture_rows(sizes):
    rows = []
    for n in sizes:
        sim = Cloth(n)
        with wp.ScopedCapture() as cap:
            sim.frame()
        eager = best(sim.frame)
        replay = best(lambda: wp.capture_launch(cap.graph))
        rows.append((f"cloth frame {n}x{n} (32 launches, 16 zero_)", eager * 1e3,
                     replay * 1e3, (eager - replay) / 48 * 1e6))
    a = wp.zeros(1, dtype=float)
    count = 1000
    with wp.ScopedCapture() as cap:
        for _ in range(count):
            wp.launch(tiny, 1, inputs=[a, 1.0])
    eager = best(lambda: [wp.launch(tiny, 1, inputs=[a, 1.0]) for _ in range(count)])
    replay = best(lambda: wp.capture_launch(cap.graph))
    fwd = tiny.entry("forward", "serial")
    data, s = a.numpy(), np.float32(1.0)
    direct = best(lambda: [fwd((1,), data, s) for _ in range(count)])
    rows.append(("1,000 one-thread launches", eager * 1e3, replay * 1e3,
                 (eager - replay) / count * 1e6))
    return rows, replay / count * 1e6, direct / count * 1e6


# ------------------------------------------------------------------------ 2. environments

@wp.kernel
def env_step(x: wp.array(dtype=float), y: wp.array(dtype=float), per_env: int):
    i = wp.tid()
    e = i // per_env
    k = i - e * per_env
    nxt = e * per_env + (k + 1) % per_env
    y[i] = wp.sin(x[i]) * x[nxt] + 0.5 * x[i] * x[i]


def env_rows(envs, per_env):
    n = envs * per_env
    x = wp.array(np.linspace(0.1, 1.0, n).astype(np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(env_step, n, inputs=[x, y, per_env])
    t_env = best(lambda: tape.jacobian(x, y, mode="rev", envs=envs), 3)
    t_row = best(lambda: tape.jacobian(x, y, mode="rev"), 1)
    blocks = tape.jacobian(x, y, mode="rev", envs=envs)
    dense = tape.jacobian(x, y, mode="rev")
    same = all(np.array_equal(blocks[e], dense[e * per_env:(e + 1) * per_env,
                                                 e * per_env:(e + 1) * per_env])
               for e in range(envs))
    return n, t_env, t_row, same


# ------------------------------------------------------------------------ 3. sparse

@wp.kernel
def banded(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    n = x.shape[0]
    left = x[wp.max(i - 1, 0)]
    right = x[wp.min(i + 1, n - 1)]
    y[i] = wp.tanh(x[i]) * (left - 2.0 * x[i] + right) + x[i] * x[i]


def sparse_rows(n, sample):
    import scipy.sparse as sp
    x = wp.array(np.linspace(-1.0, 1.0, n).astype(np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(banded, n, inputs=[x, y])
    pattern = sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="csr")
    t0 = time.perf_counter()
    jac = tape.jacobian(x, y, mode="rev", sparsity=pattern)
    t_col = time.perf_counter() - t0
    # the row-by-row recipe: one backward per output row with a one-hot seed
    t0 = time.perf_counter()
    rows_ok = True
    for r in range(sample):
        seed = np.zeros(n, np.float32)
        seed[r * (n // sample)] = 1.0
        tape.zero()
        tape.backward(grads={y: seed})
        row = x.grad.numpy()
        rows_ok &= bool(np.allclose(row, jac.getrow(r * (n // sample)).toarray().ravel(),
                                    rtol=1e-5, atol=1e-6))
    t_row = (time.perf_counter() - t0) / sample * n
    return jac.nnz, t_col, t_row, rows_ok


def hvp_rows(n, steps=16):
    k = cloth.build(wp)
    x, inv_mass, pairs, rest = cloth.make_cloth(n)
    x0 = wp.array(x, dtype=wp.vec3, requires_grad=True)
    inv_mass = wp.array(inv_mass, dtype=float)
    pairs = wp.array(pairs.reshape(-1), dtype=int)
    rest = wp.array(rest, dtype=float)
    g = wp.vec3(*cloth.GRAVITY)

    def program():
        xs = [x0] + [wp.zeros(n * n, dtype=wp.vec3, requires_grad=True) for _ in range(steps)]
        vs = [wp.zeros(n * n, dtype=wp.vec3, requires_grad=True) for _ in range(steps + 1)]
        fs = [wp.zeros(n * n, dtype=wp.vec3, requires_grad=True) for _ in range(steps)]
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            for s in range(steps):
                wp.launch(k["eval_springs"], rest.shape[0],
                          inputs=[xs[s], vs[s], pairs, rest, cloth.KE, cloth.KD, fs[s]])
                wp.launch(k["integrate"], n * n, inputs=[xs[s], vs[s], fs[s], inv_mass, g,
                                                         cloth.DT], outputs=[xs[s + 1], vs[s + 1]])
            wp.launch(k["height_loss"], n * n, inputs=[xs[-1], loss])
        return tape, loss

    rng = np.random.default_rng(0)
    u, v = (rng.normal(size=(n * n, 3)).astype(np.float32) for _ in range(2))
    tape, loss = program()
    hv = tape.hvp(loss, {x0: v})[x0].numpy()
    hu = tape.hvp(loss, {x0: u})[x0].numpy()
    uhv, vhu = float(np.sum(u * hv, dtype=np.float64)), float(np.sum(v * hu, dtype=np.float64))

    def grad():
        tape, loss = program()
        tape.backward(loss)

    def hvp():
        tape, loss = program()
        tape.hvp(loss, {x0: v})
    return best(grad), best(hvp), abs(uhv - vhu) / abs(uhv)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = ap.parse_args()
    md = args.markdown

    rows, per_launch, direct = capture_rows([16] if args.quick else [16, 128])
    print("\n1. Graph capture: eager launches against replaying the capture")
    print("| workload | eager (ms) | replay (ms) | saved per operation (us) |\n|---|---|---|---|"
          if md else f"{'workload':>44} {'eager ms':>10} {'replay ms':>10} {'saved us/op':>12}")
    for name, e, r, saved in rows:
        print(f"| {name} | {e:.3f} | {r:.3f} | {saved:.2f} |" if md else
              f"{name:>44} {e:10.3f} {r:10.3f} {saved:12.2f}")
    print(f"replay cost per launch {per_launch:.2f} us (the generated entry called directly: "
          f"{direct:.2f} us; target under 1 us)")

    envs, per_env = (8, 8) if args.quick else (64, 16)
    n, t_env, t_row, same = env_rows(envs, per_env)
    print(f"\n2. Jacobian of {envs} environments ({n} x {n}, {per_env} x {per_env} blocks)")
    print("| recipe | seconds |\n|---|---|" if md else "")
    for name, t in ((f"block-diagonal seeds (envs={envs}, {per_env} backwards)", t_env),
                    (f"row by row ({n} backwards)", t_row)):
        print(f"| {name} | {t:.3f} |" if md else f"{name:>48} {t:10.3f} s")
    print(f"speed-up {t_row / t_env:.1f}x; blocks equal to the dense Jacobian's: {same}")

    n = 3600 if args.quick else 36000
    nnz, t_col, t_row, ok = sparse_rows(n, 20 if args.quick else 50)
    print(f"\n3. Banded Jacobian {n} x {n} ({nnz} nonzeros) by graph colouring")
    print("| recipe | seconds |\n|---|---|" if md else "")
    for name, t in (("colouring (3 backwards)", t_col),
                    (f"row by row ({n} backwards, projected from a sample)", t_row)):
        print(f"| {name} | {t:.2f} |" if md else f"{name:>52} {t:10.2f} s")
    print(f"speed-up {t_row / t_col:.0f}x; sampled rows equal to the coloured Jacobian's: {ok}")

    n = 16 if args.quick else 64
    t_grad, t_hvp, asym = hvp_rows(n)
    print(f"\n4. Hessian-vector product on a {n} x {n} cloth, 16 substeps (forward run included)")
    print("| what | ms |\n|---|---|" if md else "")
    for name, t in (("gradient (tape.backward)", t_grad), ("tape.hvp", t_hvp)):
        print(f"| {name} | {t * 1e3:.2f} |" if md else f"{name:>30} {t * 1e3:10.2f} ms")
    print(f"hvp / gradient {t_hvp / t_grad:.2f}x; Hessian symmetry |uHv - vHu|/|uHv| = "
          f"{asym:.1e}")


if __name__ == "__main__":
    main()
