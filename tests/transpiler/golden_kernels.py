"""Kernels whose generated source is pinned by golden files (tests/transpiler/golden/)."""
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
def power_loop(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(1.0)
    for k in range(n):
        s = s * a[i]
        if s > 100.0:
            break
    out[i] = s
