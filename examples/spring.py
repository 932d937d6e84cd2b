"""A spring pulls 1000 particles toward a point; differentiate one step in both modes.

Run: python examples/spring.py
"""
import numpy as np

import weft as wp


@wp.func
def spring_force(xi: wp.vec3, xj: wp.vec3, rest: float, k: float):
    d = xi - xj
    l = wp.length(d)
    return d * (k * (l - rest) / l)


@wp.kernel
def step(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float,
         x_out: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    f = spring_force(x[tid], wp.vec3(0.0, 1.0, 0.0), 0.5, 10.0)
    x_out[tid] = x[tid] + (v[tid] + f * dt) * dt


@wp.kernel
def loss_kernel(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    tid = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(x[tid], x[tid]))


def main(n=1000):
    rng = np.random.default_rng(42)
    x = wp.array(rng.random((n, 3)), dtype=wp.vec3, requires_grad=True)
    v = wp.array(rng.random((n, 3)), dtype=wp.vec3, requires_grad=True)
    x_out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    tape = wp.Tape()
    with tape:
        wp.launch(step, dim=n, inputs=[x, v, 0.01], outputs=[x_out])
        wp.launch(loss_kernel, dim=n, inputs=[x_out, loss])
    tape.backward(loss)
    print("loss:", loss.numpy()[0])
    print("d loss / d x[0]:", x.grad.numpy()[0])

    # forward mode: the change of x_out along a direction dx of x
    dx = rng.standard_normal((n, 3)).astype(np.float32)
    t = wp.jvp(step, n, inputs=[x, v, 0.01], outputs=[x_out], tangents={x: dx})
    jvp_loss = float((2 * x_out.numpy() * t[x_out].numpy()).sum())
    vjp_loss = float((x.grad.numpy() * dx).sum())
    print(f"directional derivative: forward mode {jvp_loss:.6f}, reverse mode {vjp_loss:.6f}")

    print("\nGenerated adjoint of the spring func and kernel (excerpt):")
    print(step.source("adjoint")[:1200])


if __name__ == "__main__":
    main()
