"""Newton-CG with weft's Hessian-vector products: a hanging chain finds its rest shape.

A chain of ``N`` nodes in the plane, pinned at both ends, with stiff springs between
neighbours and gravity on every node. Its energy is one ``@wp.kernel``; ``tape.backward``
gives the gradient and ``tape.hvp`` the Hessian times a vector (forward over reverse: weft
differentiates its own adjoint kernel once more), so Newton's method runs matrix-free:
conjugate gradients on ``H p = -g`` with one ``tape.hvp`` per CG step, stopped early
(truncated Newton) and on negative curvature, then a backtracking line search. Gradient
descent with the same line search is the baseline: the springs are stiff, so the energy is
badly conditioned and gradient descent crawls.

Checks (printed, and ``main`` returns whether they pass):
- ``tape.hvp`` equals central finite differences of ``tape.backward`` gradients;
- Newton-CG reaches a gradient norm below 1e-9; gradient descent, given the same number of
  gradient-sized evaluations, does not get close.

Writes ``newton_hvp.png`` (Pillow; ``pip install weft[examples]``): the gradient norm of both
methods against the number of evaluations (log scale), and the chain's shape.

    python examples/newton_hvp.py [out_dir]
"""
from __future__ import annotations

import os
import sys

import numpy as np

import weft as wp

N = 40  # nodes
SPAN = 3.0  # distance between the pins
LENGTH = 4.0  # rest length of the whole chain
STIFF = 2.0e3  # spring stiffness
WEIGHT = 0.05  # m g of a node


@wp.kernel
def chain_energy(x: wp.array(dtype=wp.vec2d), rest: wp.float64, k: wp.float64,
                 mg: wp.float64, energy: wp.array(dtype=wp.float64)):
    i = wp.tid()  # the spring between nodes i and i + 1, and the weight of node i + 1
    d = x[i + 1] - x[i]
    stretch = wp.length(d) - rest
    wp.atomic_add(energy, 0, wp.float64(0.5) * k * stretch * stretch + mg * x[i + 1][1])


class Chain:
    """The energy of the chain as a function of its free nodes (the pins are held fixed)."""

    def __init__(self):
        self.rest = LENGTH / (N - 1)
        self.free = np.ones((N, 2))
        self.free[0] = self.free[-1] = 0.0
        self.evaluations = 0  # gradients and Hessian-vector products, each one sweep

    def record(self, x):
        xa = wp.array(x, dtype=wp.vec2d, requires_grad=True)
        e = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(chain_energy, N - 1, inputs=[xa, self.rest, STIFF, WEIGHT, e])
        return tape, xa, e

    def energy(self, x):
        _, _, e = self.record(x)
        return float(e.numpy()[0])

    def gradient(self, x):
        tape, xa, e = self.record(x)
        tape.backward(e)
        self.evaluations += 1
        return float(e.numpy()[0]), xa.grad.numpy() * self.free, (tape, xa, e)

    def hvp(self, recorded, v):
        tape, xa, e = recorded
        self.evaluations += 1
        return tape.hvp(e, {xa: v * self.free})[xa].numpy() * self.free


def start():
    """A parabola between the pins whose length is the chain's (a rough guess of the
    catenary), nodes evenly spaced in x."""
    s = np.linspace(0.0, 1.0, N)

    def length(sag):
        p = np.stack([s * SPAN, -4.0 * sag * s * (1.0 - s)], -1)
        return float(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1))), p
    lo, hi = 0.0, LENGTH
    for _ in range(60):  # bisection on the sag
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if length(mid)[0] < LENGTH else (lo, mid)
    return length(lo)[1]


def line_search(chain, x, e, g, p):
    """Backtracking (Armijo) along ``p``: the step and the new point."""
    slope = float(np.sum(g * p))
    t = 1.0
    while t > 1e-12:
        xn = x + t * p
        if chain.energy(xn) <= e + 1e-4 * t * slope:
            return xn
        t *= 0.5
    return x


def newton_cg(chain, x, iterations=60, tol=1e-9):
    history = []
    for _ in range(iterations):
        e, g, recorded = chain.gradient(x)
        gnorm = float(np.linalg.norm(g))
        history.append((chain.evaluations, gnorm, e))
        if gnorm < tol:
            break
        # truncated CG on H p = -g: stop at the forcing tolerance or on negative curvature
        p = np.zeros_like(g)
        r = -g
        d = r.copy()
        forcing = min(0.5, np.sqrt(gnorm)) * gnorm
        for j in range(4 * N):
            hd = chain.hvp(recorded, d)
            curv = float(np.sum(d * hd))
            if curv <= 0.0:
                if j == 0:
                    p = -g
                break
            alpha = float(np.sum(r * r)) / curv
            p = p + alpha * d
            r_new = r - alpha * hd
            if np.linalg.norm(r_new) < forcing:
                break
            d = r_new + float(np.sum(r_new * r_new) / np.sum(r * r)) * d
            r = r_new
        x = line_search(chain, x, e, g, p)
    return x, history


def gradient_descent(chain, x, budget):
    history = []
    while chain.evaluations < budget:
        e, g, _ = chain.gradient(x)
        history.append((chain.evaluations, float(np.linalg.norm(g)), e))
        x = line_search(chain, x, e, g, -g / max(1.0, float(np.linalg.norm(g))))
    return x, history


def check_hvp(chain, x):
    """tape.hvp against central differences of gradients, on a random direction."""
    rng = np.random.default_rng(0)
    v = rng.normal(size=x.shape) * chain.free
    _, _, recorded = chain.gradient(x)
    hv = chain.hvp(recorded, v)
    eps = 1e-6
    fd = (chain.gradient(x + eps * v)[1] - chain.gradient(x - eps * v)[1]) / (2 * eps)
    return float(np.max(np.abs(hv - fd)) / np.max(np.abs(fd)))


def plot(path, newton, descent, shape):
    """Two panels with Pillow: log10 gradient norm against evaluations, and the chain."""
    from PIL import Image, ImageDraw
    w, h, pad = 460, 320, 40
    img = Image.new("RGB", (2 * w, h), "white")
    d = ImageDraw.Draw(img)
    evals = max(newton[-1][0], descent[-1][0])
    logs = [np.log10(max(g, 1e-16)) for _, g, _ in newton + descent]
    lo, hi = min(logs), max(logs)

    def px(n, g):
        return (pad + (w - 2 * pad) * n / evals,
                h - pad - (h - 2 * pad) * (np.log10(max(g, 1e-16)) - lo) / (hi - lo))
    d.rectangle([pad, pad, w - pad, h - pad], outline=(160, 160, 160))
    for hist, colour, name, row in ((newton, (31, 119, 180), "Newton-CG (tape.hvp)", 0),
                                    (descent, (255, 127, 14), "gradient descent", 1)):
        d.line([px(n, g) for n, g, _ in hist], fill=colour, width=2)
        d.text((pad + 8, h - pad - 34 + 14 * row), name, fill=colour)
    d.text((pad, h - pad + 8), f"evaluations (gradients + Hessian-vector products), 0..{evals}",
           fill="black")
    d.text((4, 8), f"log10 |gradient|: {hi:.1f} (top) .. {lo:.1f} (bottom)", fill="black")
    # the chain
    xs, ys = shape[:, 0], shape[:, 1]
    sx = (w - 2 * pad) / (xs.max() - xs.min() + 1e-9)
    sy = (h - 2 * pad) / (ys.max() - ys.min() + 1e-9)
    s = min(sx, sy)

    def cx(p):
        return (w + pad + (p[0] - xs.min()) * s, pad + (ys.max() - p[1]) * s)
    d.line([cx(p) for p in shape], fill=(44, 160, 44), width=2)
    for p in shape:
        q = cx(p)
        d.ellipse([q[0] - 2, q[1] - 2, q[0] + 2, q[1] + 2], fill=(44, 160, 44))
    d.text((w + pad, 8), "rest shape found by Newton-CG", fill="black")
    img.save(path)


def main(out_dir="."):
    chain = Chain()
    err = check_hvp(chain, start())
    print(f"tape.hvp against finite differences of gradients: max relative error {err:.2e}")
    chain.evaluations = 0
    x_newton, newton = newton_cg(chain, start())
    budget = chain.evaluations
    chain.evaluations = 0
    _, descent = gradient_descent(chain, start(), budget)
    print(f"{'evaluations':>12s} {'Newton-CG |g|':>15s} {'descent |g|':>13s}")
    for n, g, _ in newton:
        gd = min((h for h in descent if h[0] <= n), key=lambda h: -h[0], default=descent[0])
        print(f"{n:12d} {g:15.3e} {gd[1]:13.3e}")
    final_n, final_d = newton[-1][1], descent[-1][1]
    print(f"after {budget} evaluations: Newton-CG |g| = {final_n:.2e}, gradient descent "
          f"|g| = {final_d:.2e}; energy {newton[-1][2]:.10f} vs {descent[-1][2]:.10f}")
    ok = err < 1e-6 and final_n < 1e-9 and final_d > 1e3 * final_n
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("Pillow is not installed: no plot (pip install weft[examples])")
    else:
        path = os.path.join(out_dir, "newton_hvp.png")
        plot(path, newton, descent, x_newton)
        print(f"wrote {path}")
    print("all checks pass" if ok else "CHECK FAILED")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(*sys.argv[1:]) else 1)
