"""Kernels exercising the CUDA target: funcs, loops (adjoint stacks), atomics, 2-D launches."""
import weft as wp
from tests.transpiler.golden_kernels import step  # noqa: F401  (the spring step)


@wp.kernel
def power_loop(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(1.0)
    for k in range(n):
        s = s * a[i]
    out[i] = s


@wp.kernel
def damped(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y = x[i]
    it = int(0)
    while y > wp.float64(0.1) and it < 50:
        y = y - wp.float64(0.1) * wp.sin(y) - wp.float64(0.05)
        it = it + 1
    out[i] = y * y


@wp.kernel
def reduce_sq(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


@wp.kernel
def grid(a: wp.array2d(dtype=float), m: wp.mat22, out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    v = m * wp.vec2(a[i, j], float(j))
    out[i, j] = v[0] * v[1] + wp.exp(a[i, j] * 0.5)


@wp.struct
class Body:
    x: wp.vec3
    m: float


@wp.struct
class Params:
    g: wp.vec3
    w: wp.array(dtype=float)


@wp.kernel
def bodies(b: wp.array(dtype=Body), prm: Params, out: wp.array(dtype=Body)):
    i = wp.tid()
    q = b[i]
    q.x = q.x + prm.g * (b[i].m * prm.w[i])
    out[i] = q


@wp.kernel
def half(x: wp.array(dtype=wp.vec2h), s: wp.float16, out: wp.array(dtype=wp.float16),
         total: wp.array(dtype=wp.float16)):
    i = wp.tid()
    v = x[i] * s + x[(i + 1) % 6]  # a neighbour's element: its gradient needs an atomic
    out[i] = wp.sin(v[0]) * v[1]
    wp.atomic_add(total, 0, v[0])
