"""A cloth model written once in Warp's kernel language, built for weft or for NVIDIA Warp.

Particles on an N x N grid joined by structural, shear and bend springs (about 6 per particle),
two fixed corners, semi-implicit Euler. ``build(wp)`` returns the kernels for the module ``wp``
(``import weft`` or ``import warp``), so both run the same source.
"""
import numpy as np


def build(wp):
    @wp.kernel
    def eval_springs(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                     pairs: wp.array(dtype=int), rest: wp.array(dtype=float), ke: float,
                     kd: float, f: wp.array(dtype=wp.vec3)):
        tid = wp.tid()
        i = pairs[tid * 2]
        j = pairs[tid * 2 + 1]
        d = x[i] - x[j]
        l = wp.length(d)
        n = d / l
        c = l - rest[tid]
        dcdt = wp.dot(n, v[i] - v[j])
        fs = n * (ke * c + kd * dcdt)
        wp.atomic_sub(f, i, fs)
        wp.atomic_add(f, j, fs)

    @wp.kernel
    def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
                  f: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=float),
                  gravity: wp.vec3, dt: float, x_out: wp.array(dtype=wp.vec3),
                  v_out: wp.array(dtype=wp.vec3)):
        tid = wp.tid()
        w = inv_mass[tid]
        g = wp.where(w > 0.0, gravity, wp.vec3(0.0, 0.0, 0.0))
        v1 = v[tid] + (f[tid] * w + g) * dt
        x_out[tid] = x[tid] + v1 * dt
        v_out[tid] = v1

    @wp.kernel
    def zero_vec3(a: wp.array(dtype=wp.vec3)):
        tid = wp.tid()
        a[tid] = wp.vec3(0.0, 0.0, 0.0)

    @wp.kernel
    def height_loss(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        tid = wp.tid()
        p = x[tid]
        wp.atomic_add(loss, 0, p[1] * p[1] + 0.1 * p[0])

    return {"eval_springs": eval_springs, "integrate": integrate, "zero_vec3": zero_vec3,
            "height_loss": height_loss}


def make_cloth(n, spacing=0.1):
    """Positions (n*n, 3), inverse masses and spring pairs/rest lengths of an n x n cloth."""
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    x = np.stack([jj * spacing, np.zeros_like(ii, float), ii * spacing], -1).reshape(-1, 3)
    inv_mass = np.ones(n * n)
    inv_mass[0] = inv_mass[n - 1] = 0.0  # two fixed corners
    idx = lambda a, b: a * n + b  # noqa: E731
    pairs = []
    for a in range(n):
        for b in range(n):
            for da, db in ((0, 1), (1, 0), (1, 1), (1, -1), (0, 2), (2, 0)):
                a2, b2 = a + da, b + db
                if 0 <= a2 < n and 0 <= b2 < n:
                    pairs.append((idx(a, b), idx(a2, b2)))
    pairs = np.array(pairs, np.int32)
    rest = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    return x.astype(np.float32), inv_mass.astype(np.float32), pairs, rest.astype(np.float32)


KE, KD, DT = 1000.0, 1.0, 1.0 / 60.0 / 16
GRAVITY = (0.0, -9.8, 0.0)
