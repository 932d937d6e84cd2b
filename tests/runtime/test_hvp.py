"""tape.hvp: Hessian-vector products by forward over reverse, against central finite
differences of weft's own float64 gradients (and the symmetry of the Hessian)."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError


@wp.func
def bump(x: wp.float64):
    return x * x * wp.float64(0.5) + wp.sin(x)


@wp.kernel
def loop_energy(x: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.float64(0.0)
    v = x[i]
    for k in range(n):
        v = wp.sin(v) * wp.float64(0.9) + v * v * wp.float64(0.1)
        s += bump(v)
    if v > wp.float64(0.2):
        s = s * wp.exp(v)
    wp.atomic_add(out, 0, s + v * x[(i + 1) % 6])


@wp.func
def spring(a: wp.vec3d, b: wp.vec3d, k: wp.float64):
    d = a - b
    ln = wp.length(d)
    return k * (ln - wp.float64(1.0)) * (ln - wp.float64(1.0)), wp.normalize(d)


@wp.kernel
def stretch(x: wp.array(dtype=wp.vec3d), w: wp.array(dtype=wp.float64),
            y: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    a = x[i]
    b = x[(i + 1) % 4]
    e, n = spring(a, b, w[0])
    m = wp.mat33d(a[0], wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), a[1],
                  wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    q = wp.dot(m * n, wp.cross(a, b)) + wp.sqrt(wp.abs(a[2]) + wp.float64(1.0))
    z = wp.max(e, q) + wp.pow(wp.abs(q) + wp.float64(1.0), wp.float64(1.5)) + wp.tanh(e)
    y[i] = n * z + wp.vec3d(wp.atan2(a[1], a[0] + wp.float64(3.0)), wp.log(e + wp.float64(2.0)),
                            a[2] / (wp.float64(2.0) + b[1] * b[1]))


@wp.kernel
def norm_loss(y: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = y[i]
    wp.atomic_add(out, 0, wp.dot(v, v) * wp.float64(0.5) + wp.cos(v[0]))


def _grads(program, inputs, x0s):
    """Gradients of ``program`` (which records on a tape and returns the loss array) at
    ``x0s``, from weft's reverse mode."""
    arrays = [wp.array(x0, dtype=dt, requires_grad=True) for x0, (dt, _) in zip(x0s, inputs)]
    tape = wp.Tape()
    with tape:
        loss = program(*arrays)
    tape.backward(loss)
    return [a.grad.numpy().copy() for a in arrays]


def _fd_hvp(program, inputs, x0s, vs, eps=1e-6):
    plus = _grads(program, inputs, [x + eps * v for x, v in zip(x0s, vs)])
    minus = _grads(program, inputs, [x - eps * v for x, v in zip(x0s, vs)])
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _hvp(program, inputs, x0s, vs):
    arrays = [wp.array(x0, dtype=dt, requires_grad=True) for x0, (dt, _) in zip(x0s, inputs)]
    tape = wp.Tape()
    with tape:
        loss = program(*arrays)
    hv, grad = tape.hvp(loss, {a: v for a, v in zip(arrays, vs)}, return_grad=True)
    assert all(not a.grad.numpy().any() for a in arrays)  # .grad untouched
    again = tape.hvp(loss, {a: v for a, v in zip(arrays, vs)})  # repeatable, no tape.zero()
    for a in arrays:
        np.testing.assert_array_equal(again[a].numpy(), hv[a].numpy())
    return [hv[a].numpy() for a in arrays], [grad[a].numpy() for a in arrays], loss


def _loop_program(x):
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    wp.launch(loop_energy, dim=x.shape[0], inputs=[x, 4, out])
    return out


def _stretch_program(x, w):
    y = wp.zeros(4, dtype=wp.vec3d, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    wp.launch(stretch, dim=4, inputs=[x, w, y])
    wp.launch(norm_loss, dim=4, inputs=[y, out])
    return out


def test_hvp_loop_kernel_matches_finite_differences():
    rng = np.random.default_rng(1)
    x0 = rng.uniform(-0.8, 0.9, 6)
    v = rng.normal(size=6)
    inputs = [(wp.float64, 6)]
    (hv,), (g,), _ = _hvp(_loop_program, inputs, [x0], [v])
    (fd,) = _fd_hvp(_loop_program, inputs, [x0], [v])
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-7)
    # the gradient of the same sweep, as backward gives it
    np.testing.assert_allclose(g, _grads(_loop_program, inputs, [x0])[0], rtol=1e-12)


def test_hvp_two_launches_vectors_and_several_inputs():
    rng = np.random.default_rng(2)
    x0 = rng.uniform(-1.0, 1.0, (4, 3))
    w0 = np.array([1.7])
    inputs = [(wp.vec3d, 4), (wp.float64, 1)]
    vs = [rng.normal(size=(4, 3)), np.array([0.6])]
    hv, _, _ = _hvp(_stretch_program, inputs, [x0, w0], vs)
    fd = _fd_hvp(_stretch_program, inputs, [x0, w0], vs)
    for h, f in zip(hv, fd):
        np.testing.assert_allclose(h, f, rtol=1e-6, atol=1e-7)


def test_hessian_is_symmetric():
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-1.0, 1.0, (4, 3))
    w0 = np.array([0.8])
    inputs = [(wp.vec3d, 4), (wp.float64, 1)]
    u = [rng.normal(size=(4, 3)), np.array([0.3])]
    v = [rng.normal(size=(4, 3)), np.array([-1.1])]
    hu, _, _ = _hvp(_stretch_program, inputs, [x0, w0], u)
    hv, _, _ = _hvp(_stretch_program, inputs, [x0, w0], v)
    vhu = sum(float(np.sum(a * b)) for a, b in zip(v, hu))
    uhv = sum(float(np.sum(a * b)) for a, b in zip(u, hv))
    assert vhu == pytest.approx(uhv, rel=1e-10)


@wp.kernel
def quartic(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = x[i]
    wp.atomic_add(out, 0, a * a * a * a + a * x[0])


def test_hvp_threaded_launch_analytic():
    """Above the serial threshold the threaded adjoint-tangent entry runs; the Hessian of
    sum(x^4) + x0 * sum(x) is known in closed form."""
    n = 3000
    x0 = np.linspace(-1.0, 1.0, n)
    v = np.cos(np.arange(n))
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(quartic, dim=n, inputs=[x, out])
    hv = tape.hvp(out, {x: v})[x].numpy()
    want = 12 * x0 ** 2 * v
    want[0] += 2 * v[0] + v[1:].sum()
    want[1:] += v[0]
    np.testing.assert_allclose(hv, want, rtol=1e-12, atol=1e-12)


def test_newton_hvp_example(tmp_path):
    """examples/newton_hvp.py: Newton-CG on tape.hvp converges where gradient descent does not
    (the script checks hvp against finite differences and the convergence itself)."""
    import importlib.util
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location(
        "newton_hvp", os.path.join(root, "examples", "newton_hvp.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(str(tmp_path))


def test_hvp_errors():
    x = wp.array(np.ones(6), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        out = _loop_program(x)
        tape.record_func(lambda: None, [out])
    with pytest.raises(LaunchError, match="second-order"):
        tape.hvp(out, {x: np.ones(6)})
    tape = wp.Tape()
    with tape:
        out = _loop_program(x)
    with pytest.raises(LaunchError, match="shape"):
        tape.hvp(out, {x: np.ones(5)})
    nograd = wp.zeros(1, dtype=wp.float64)
    with pytest.raises(LaunchError, match="requires_grad"):
        tape.hvp(nograd, {x: np.ones(6)})


def test_jvp_of_an_adjoint_launch():
    """wp.jvp(..., adjoint=True): the tangent of the gradient that one adjoint launch
    accumulates, against finite differences of that gradient."""
    rng = np.random.default_rng(4)
    x0 = rng.uniform(-0.8, 0.9, 6)
    dx = rng.normal(size=6)

    def grad_at(xv):
        x = wp.array(xv, dtype=wp.float64, requires_grad=True)
        out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        out.grad.fill_(1.0)
        wp.launch(loop_energy, dim=6, inputs=[x, 4, out], adjoint=True)
        return x.grad.numpy().copy()

    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    out.grad.fill_(1.0)
    t = wp.jvp(loop_energy, 6, inputs=[x, 4, out], tangents={x: dx}, adjoint=True)
    np.testing.assert_allclose(x.grad.numpy(), grad_at(x0), rtol=1e-12)
    eps = 1e-6
    fd = (grad_at(x0 + eps * dx) - grad_at(x0 - eps * dx)) / (2 * eps)
    np.testing.assert_allclose(t[x.grad].numpy(), fd, rtol=1e-6, atol=1e-7)
    # a tangent of the adjoint seed: the gradient is linear in it
    x2 = wp.array(x0, dtype=wp.float64, requires_grad=True)
    out2 = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    out2.grad.fill_(1.0)
    t2 = wp.jvp(loop_energy, 6, inputs=[x2, 4, out2], tangents={out2.grad: np.array([2.0])},
                adjoint=True)
    np.testing.assert_allclose(t2[x2.grad].numpy(), 2 * grad_at(x0), rtol=1e-12)


@wp.kernel
def cube_sum(y: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    v = y[i, j]
    wp.atomic_add(out, 0, v * v * v + wp.sin(v))


def test_hvp_through_matmul():
    """A kernel of a matmul's result: the Hessian with respect to both factors."""
    rng = np.random.default_rng(5)
    shapes = [(3, 4), (4, 2)]
    x0s = [rng.normal(size=s) * 0.5 for s in shapes]
    vs = [rng.normal(size=s) for s in shapes]
    inputs = [(wp.float64, s) for s in shapes]

    def program(a, b):
        c = wp.zeros((3, 2), dtype=wp.float64)
        d = wp.zeros((3, 2), dtype=wp.float64, requires_grad=True)
        wp.matmul(a, b, c, d, alpha=1.5)
        out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch(cube_sum, dim=(3, 2), inputs=[d, out])
        return out
    hv, _, _ = _hvp(program, inputs, x0s, vs)
    fd = _fd_hvp(program, inputs, x0s, vs)
    for h, f in zip(hv, fd):
        np.testing.assert_allclose(h, f, rtol=1e-6, atol=1e-7)
