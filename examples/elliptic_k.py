"""The complete elliptic integral of the first kind by Monte Carlo, differentiated three ways.

    K(m) = integral over theta in [0, pi/2] of 1 / sqrt(1 - m sin^2 theta)
         ~ (pi/2) * mean of 1 / sqrt(1 - m sin^2 theta_j),  theta_j uniform (wp.randf streams)

A weft kernel draws ``samples`` angles per thread in a loop (one thread per value of m), and
``wp.loop`` runs ``batches`` such launches, accumulating the sums in its state; m is a parameter
the loop body reads without carrying it. dK/dm is computed

(a) automatically: the tape differentiates the checkpointed ``wp.loop`` (and the kernel's inner
    loop), m getting its gradient as a parameter of the body;
(b) by a ``wp.CustomOp`` with the analytic derivative of the integrand,
    sin^2 theta / (2 (1 - m sin^2 theta)^(3/2)), estimated with the same random streams;
(c) by a ``wp.CustomOp`` whose backward records the computation on its own tape and runs AD
    (AD inside a custom op's derivative), and whose forward uses ``tape.forward``;

and all three are compared with scipy.special.ellipk and its derivative
(E(m) - (1 - m) K(m)) / (2 m (1 - m)) within the Monte Carlo error. Writes elliptic_k.png
(with matplotlib installed: ``pip install weft[examples]``).

Run: python examples/elliptic_k.py [--out DIR] [--samples N] [--batches B]
"""
import argparse
import math
import os

import numpy as np

import weft as wp

f64 = wp.float64
HALF_PI = math.pi / 2


@wp.kernel
def k_batch(m: wp.array(dtype=f64), seed: int, samples: int, acc_in: wp.array(dtype=f64),
            acc_out: wp.array(dtype=f64)):
    """acc_out = acc_in + sum over ``samples`` angles of the integrand of K at m[t]."""
    t = wp.tid()
    state = wp.rand_init(seed, t)
    s = f64(0.0)
    for j in range(samples):
        sn = wp.sin(f64(wp.randf(state)) * f64(HALF_PI))
        s += 1.0 / wp.sqrt(1.0 - m[t] * sn * sn)
    acc_out[t] = acc_in[t] + s


@wp.kernel
def dk_batch(m: wp.array(dtype=f64), seed: int, samples: int, acc_in: wp.array(dtype=f64),
             acc_out: wp.array(dtype=f64)):
    """The same sum for the analytic derivative of the integrand with respect to m."""
    t = wp.tid()
    state = wp.rand_init(seed, t)
    s = f64(0.0)
    for j in range(samples):
        sn = wp.sin(f64(wp.randf(state)) * f64(HALF_PI))
        q = 1.0 - m[t] * sn * sn
        s += 0.5 * sn * sn / (q * wp.sqrt(q))
    acc_out[t] = acc_in[t] + s


@wp.kernel
def scale(acc: wp.array(dtype=f64), c: f64, out: wp.array(dtype=f64)):
    t = wp.tid()
    out[t] = acc[t] * c


def monte_carlo(kernel, m, samples, batches, checkpoints=None):
    """(pi/2) * the mean of ``kernel``'s integrand over ``batches * samples`` angles per m, the
    batches run by ``wp.loop`` (recorded on an active tape as one checkpointed node)."""
    def body(i, state):
        (acc,) = state
        out = wp.empty(acc.shape, dtype=f64, requires_grad=True)
        wp.launch(kernel, dim=len(m), inputs=[m, 1000 + i, samples, acc], outputs=[out])
        return (out,)

    acc0 = wp.zeros(len(m), dtype=f64, requires_grad=True)
    (acc,) = wp.loop(body, (acc0,), batches, checkpoints=checkpoints)
    out = wp.zeros(len(m), dtype=f64, requires_grad=True)
    wp.launch(scale, dim=len(m), inputs=[acc, HALF_PI / (samples * batches)], outputs=[out])
    return out


class EllipKAnalytic(wp.CustomOp):
    """K(m) with the hand-written derivative (same random streams as the value)."""

    def eval(self, m, samples, batches):
        self.m, self.samples, self.batches = m, samples, batches
        return monte_carlo(k_batch, m, samples, batches)

    def _dk(self):
        return monte_carlo(dk_batch, self.m, self.samples, self.batches).numpy()

    def backward(self):
        self.set_grad_in("m", self._dk() * self.grad_out().numpy())

    def forward(self):
        self.set_grad_out(self._dk() * self.grad_in("m").numpy())


class EllipKAutodiff(wp.CustomOp):
    """K(m) whose derivatives are computed by AD on a tape of their own."""

    def eval(self, m, samples, batches):
        self.m, self.samples, self.batches = m, samples, batches
        return monte_carlo(k_batch, m, samples, batches)

    def _record(self):
        m = wp.clone(self.m, requires_grad=True)
        tape = wp.Tape()
        with tape:
            k = monte_carlo(k_batch, m, self.samples, self.batches, checkpoints=2)
        return tape, m, k

    def backward(self):
        tape, m, k = self._record()
        tape.backward(grads={k: self.grad_out()})
        self.set_grad_in("m", m.grad)

    def forward(self):
        tape, m, k = self._record()
        self.set_grad_out(tape.forward({m: self.grad_in("m")})[k])


def derivative_three_ways(m_np, samples, batches):
    """{name: (K, dK/dm)} for the three methods (each dK from tape.backward with unit seeds;
    K_t depends on m_t only, so the gradient is the derivative at each m)."""
    out = {}
    for name in ("automatic (wp.loop)", "custom op, analytic", "custom op, AD inside"):
        m = wp.array(m_np, dtype=f64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            if name.startswith("automatic"):
                k = monte_carlo(k_batch, m, samples, batches)
            elif "analytic" in name:
                k = wp.custom(EllipKAnalytic, m, samples, batches)
            else:
                k = wp.custom(EllipKAutodiff, m, samples, batches)
        tape.backward(grads={k: np.ones(len(m_np))})
        tangent = tape.forward({m: np.ones(len(m_np))})[k].numpy()
        out[name] = (k.numpy().copy(), m.grad.numpy().copy(), tangent)
    return out


def standard_errors(m_np, samples, batches):
    """Monte Carlo standard errors of K and dK/dm from the spread of the batch estimates."""
    m = wp.array(m_np, dtype=f64)
    errs = []
    for kernel in (k_batch, dk_batch):
        est = []
        for i in range(batches):
            acc = wp.zeros(len(m_np), dtype=f64)
            out = wp.zeros(len(m_np), dtype=f64)
            wp.launch(kernel, dim=len(m_np), inputs=[m, 1000 + i, samples, acc], outputs=[out])
            est.append(out.numpy() * HALF_PI / samples)
        errs.append(np.std(est, axis=0, ddof=1) / math.sqrt(batches))
    return errs


def exact(m_np):
    from scipy.special import ellipe, ellipk
    k, e = ellipk(m_np), ellipe(m_np)
    return k, (e - (1 - m_np) * k) / (2 * m_np * (1 - m_np))


def plot(path, m_np, k_exact, dk_exact, results, errs):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure (pip install weft[examples])")
        return None
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
    k_mc = next(iter(results.values()))[0]
    ax0.plot(m_np, k_exact, "k-", label="scipy.special.ellipk")
    ax0.errorbar(m_np, k_mc, yerr=2 * errs[0], fmt="o", ms=3, label="Monte Carlo (weft)")
    ax0.set(xlabel="m", ylabel="K(m)", title="K(m)")
    ax0.legend()
    ax1.plot(m_np, dk_exact, "k-", label="exact (E - (1-m)K) / (2m(1-m))")
    for (name, (_, dk, _)), mark in zip(results.items(), ("o", "x", "+")):
        ax1.plot(m_np, dk, mark, ms=5, label=name)
    ax1.set(xlabel="m", ylabel="dK/dm", title="K'(m), three ways")
    ax1.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(out_dir=".", samples=1000, batches=16, points=30):
    m_np = np.linspace(0.02, 0.9, points)
    results = derivative_three_ways(m_np, samples, batches)
    k_exact, dk_exact = exact(m_np)
    err_k, err_dk = standard_errors(m_np, samples, batches)
    print(f"K(m) by Monte Carlo: {points} values of m, {batches} batches x {samples} samples")
    print(f"{'method':24s} {'max |K - ellipk|/se':>20s} {'max |dK - exact|/se':>20s} "
          f"{'max |fwd - rev|':>16s}")
    ok = True
    for name, (k, dk, tangent) in results.items():
        zk = np.max(np.abs(k - k_exact) / err_k)
        zdk = np.max(np.abs(dk - dk_exact) / err_dk)
        print(f"{name:24s} {zk:20.2f} {zdk:20.2f} {np.max(np.abs(tangent - dk)):16.2e}")
        ok &= zk < 5 and zdk < 5 and np.allclose(tangent, dk, rtol=1e-12, atol=0)
    dks = [r[1] for r in results.values()]
    spread = max(np.max(np.abs(d - dks[0])) for d in dks)
    print(f"largest difference between the three derivatives: {spread:.2e} (same samples)")
    ok &= spread < 1e-9
    os.makedirs(out_dir, exist_ok=True)
    path = plot(os.path.join(out_dir, "elliptic_k.png"), m_np, k_exact, dk_exact, results,
                (err_k, err_dk))
    if path:
        print(f"wrote {path}")
    print("all checks pass" if ok else "CHECK FAILED")
    return ok


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="folder for elliptic_k.png")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--batches", type=int, default=16)
    args = ap.parse_args()
    raise SystemExit(0 if main(args.out, args.samples, args.batches) else 1)
