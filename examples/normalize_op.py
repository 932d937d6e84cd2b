"""A ``Normalize`` custom op (``wp.CustomOp``): y = v / |v| for an array of vectors, with its
derivatives written by hand as kernels, checked against central finite differences in float64
and against weft's own AD of ``wp.normalize``.

    forward  (tangent):  dy = (dv - y (y . dv)) / |v|
    backward (adjoint):  gv = (gy - y (y . gy)) / |v|

Run: python examples/normalize_op.py
"""
import numpy as np

import weft as wp

vec = wp.vec3d


@wp.kernel
def normalize_kernel(v: wp.array(dtype=vec), y: wp.array(dtype=vec)):
    i = wp.tid()
    y[i] = v[i] / wp.length(v[i])


@wp.kernel
def project_kernel(v: wp.array(dtype=vec), y: wp.array(dtype=vec), g: wp.array(dtype=vec),
                   out: wp.array(dtype=vec)):
    """(g - y (y . g)) / |v|: the tangent and the adjoint are the same map (J is symmetric)."""
    i = wp.tid()
    out[i] = (g[i] - y[i] * wp.dot(y[i], g[i])) / wp.length(v[i])


@wp.kernel
def weighted_sum(y: wp.array(dtype=vec), w: wp.array(dtype=vec), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(y[i], w[i]))


@wp.kernel
def builtin_normalize(v: wp.array(dtype=vec), y: wp.array(dtype=vec)):
    i = wp.tid()
    y[i] = wp.normalize(v[i])


class Normalize(wp.CustomOp):
    def eval(self, v):
        self.v = v
        self.y = wp.empty(v.shape, dtype=vec)
        wp.launch(normalize_kernel, dim=len(v), inputs=[v], outputs=[self.y])
        return self.y

    def _project(self, g):
        out = wp.empty(self.v.shape, dtype=vec)
        wp.launch(project_kernel, dim=len(self.v), inputs=[self.v, self.y, g], outputs=[out])
        return out

    def forward(self):
        self.set_grad_out(self._project(self.grad_in("v")))

    def backward(self):
        self.set_grad_in("v", self._project(self.grad_out()))


def loss_of(v_np, w, op=True):
    """(tape, v, y, loss) of loss = sum_i y_i . w_i."""
    v = wp.array(v_np, dtype=vec, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        if op:
            y = wp.custom(Normalize, v)
        else:
            y = wp.zeros(v.shape, dtype=vec, requires_grad=True)
            wp.launch(builtin_normalize, dim=len(v), inputs=[v], outputs=[y])
        wp.launch(weighted_sum, dim=len(v), inputs=[y, w], outputs=[loss])
    return tape, v, y, loss


def main(n=64, h=1e-6):
    rng = np.random.default_rng(3)
    v_np = rng.normal(size=(n, 3))
    w = wp.array(rng.normal(size=(n, 3)), dtype=vec)
    dv = rng.normal(size=(n, 3))
    rows = []

    tape, v, y, loss = loss_of(v_np, w)
    tape.backward(loss)
    grad = v.grad.numpy().copy()
    tangent = tape.forward({v: dv})[y].numpy()

    def y_at(x):
        out = wp.empty(n, dtype=vec)
        wp.launch(normalize_kernel, dim=n, inputs=[wp.array(x, dtype=vec)], outputs=[out])
        return out.numpy()

    fd_tangent = (y_at(v_np + h * dv) - y_at(v_np - h * dv)) / (2 * h)
    rows.append(("forward: dy vs finite differences", np.abs(tangent - fd_tangent).max()))
    fd_grad = np.zeros_like(v_np)
    w_np = w.numpy()
    for i in range(n):
        for c in range(3):
            e = np.zeros_like(v_np)
            e[i, c] = h
            fd_grad[i, c] = np.sum((y_at(v_np + e) - y_at(v_np - e)) * w_np) / (2 * h)
    rows.append(("backward: dL/dv vs finite differences", np.abs(grad - fd_grad).max()))
    rows.append(("dot-product test <J dv, w> - <dv, J^T w>",
                 abs(np.sum(tangent * w_np) - np.sum(dv * grad))))

    tape2, v2, y2, loss2 = loss_of(v_np, w, op=False)
    tape2.backward(loss2)
    rows.append(("backward vs weft's AD of wp.normalize", np.abs(grad - v2.grad.numpy()).max()))
    rows.append(("forward vs weft's AD of wp.normalize",
                 np.abs(tangent - tape2.forward({v2: dv})[y2].numpy()).max()))

    print(f"Normalize custom op, {n} vec3d elements")
    print(f"{'check':45s} {'max abs error':>14s}")
    for name, err in rows:
        print(f"{name:45s} {err:14.3e}")
    ok = all(err < 1e-7 for _, err in rows)
    print("all checks pass" if ok else "CHECK FAILED")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
