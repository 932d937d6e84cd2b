"""A PyTorch network trained through a weft simulation: the network aims a projectile.

A small PyTorch MLP maps a target point to the launch velocity of a projectile; a weft kernel
flies it for a fixed number of steps with quadratic air drag (a loop whose state every step
carries, which weft differentiates exactly); the loss is the squared miss distance. PyTorch's
optimizer trains the network with gradients that pass through weft's adjoint kernel
(``weft.torch.function``)::

    python examples/interop_training.py            # trains, prints the miss before and after
    python examples/interop_training.py --check    # + the gradient against finite differences

``tests/interop/test_training.py`` checks the gradient of the loss with respect to every weight
of the network against float64 central differences, and that training lowers the loss.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import weft as wp
import weft.torch as wt

STEPS = 60
DT = 0.02
DRAG = 0.05
GRAVITY = 9.81


@wp.kernel
def fly(v0: wp.array2d(dtype=wp.float64), land: wp.array2d(dtype=wp.float64)):
    """Each shot ``i`` starts at the origin with velocity ``v0[i]`` and flies ``STEPS`` steps
    (symplectic Euler, drag against the velocity, proportional to the speed)."""
    i = wp.tid()
    vx = v0[i, 0]
    vy = v0[i, 1]
    x = wp.float64(0.0)
    y = wp.float64(0.0)
    for _s in range(STEPS):
        speed = wp.sqrt(vx * vx + vy * vy)
        vx = vx - wp.float64(DT) * wp.float64(DRAG) * speed * vx
        vy = vy - wp.float64(DT) * (wp.float64(GRAVITY) + wp.float64(DRAG) * speed * vy)
        x = x + wp.float64(DT) * vx
        y = y + wp.float64(DT) * vy
    land[i, 0] = x
    land[i, 1] = y


# (n, 2) launch velocities -> (n, 2) landing points, differentiable (n threads: i = wp.tid())
flight = wt.function(fly)


def make_network(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 2)).double()


def targets(n=32, seed=1):
    rng = np.random.default_rng(seed)
    return torch.tensor(np.stack([rng.uniform(2.0, 6.0, n), rng.uniform(-0.5, 0.5, n)], 1))


def loss_of(net, goal):
    v0 = net(goal) + torch.tensor([4.0, 4.0], dtype=torch.float64)  # a sensible start
    return ((flight(v0) - goal) ** 2).sum(1).mean()


def train(net, goal, iters=60, lr=0.02):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    history = []
    for _ in range(iters):
        opt.zero_grad()
        loss = loss_of(net, goal)
        loss.backward()
        opt.step()
        history.append(loss.item())
    return history


def gradient_check(net, goal, eps=1e-6):
    """The largest relative error of the loss's gradient (through weft's adjoint) against
    float64 central differences, over every weight of the network."""
    net.zero_grad()
    loss_of(net, goal).backward()
    worst = 0.0
    with torch.no_grad():
        for p in net.parameters():
            flat, grad = p.view(-1), p.grad.view(-1)
            for k in range(flat.numel()):
                old = float(flat[k])
                flat[k] = old + eps
                up = float(loss_of(net, goal))
                flat[k] = old - eps
                down = float(loss_of(net, goal))
                flat[k] = old
                fd = (up - down) / (2 * eps)
                worst = max(worst, abs(fd - float(grad[k])) / max(1e-8, abs(fd)))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    net, goal = make_network(), targets()
    if a.check:
        print(f"gradient vs central differences: largest relative error "
              f"{gradient_check(net, goal):.2e}")
    history = train(net, goal, a.iters)
    print(f"mean squared miss: {history[0]:.4f} before, {history[-1]:.6f} after "
          f"{a.iters} Adam steps")


if __name__ == "__main__":
    main()
