"""User-written derivatives: wp.func_grad (Warp's API), wp.func_replay, wp.func_tangent."""
import numpy as np

import weft as wp


@wp.func
def safe_sqrt(x: float):
    return wp.sqrt(x)


@wp.func_grad(safe_sqrt)
def adj_safe_sqrt(x: float, adj_ret: float):
    if x > 0.0:
        wp.adjoint[x] += adj_ret / (2.0 * wp.sqrt(x))


@wp.func_tangent(safe_sqrt)
def tan_safe_sqrt(x: float, tan_x: float):
    return wp.where(x > 0.0, tan_x / (2.0 * wp.sqrt(x)), 0.0)


@wp.func
def scaled_norm(v: wp.vec3, s: float):
    return wp.length(v) * s


@wp.func_grad(scaled_norm)
def adj_scaled_norm(v: wp.vec3, s: float, adj_ret: float):
    # deliberately a different (but checkable) rule: d/dv = s * v, d/ds = 10
    wp.adjoint[v] += v * (s * adj_ret)
    wp.adjoint[s] += 10.0 * adj_ret


@wp.func
def tripled(x: float):
    return x * 3.0


@wp.func_replay(tripled)
def tripled_replay(x: float):
    return x * 3.0


@wp.kernel
def use_sqrt(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = safe_sqrt(a[i]) + tripled(a[i])


@wp.kernel
def use_tripled_squared(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = tripled(a[i])
    out[i] = t * t


@wp.kernel
def use_norm(v: wp.array(dtype=wp.vec3), s: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = scaled_norm(v[i], s[i])


def test_func_grad_replaces_the_adjoint():
    a = wp.array(np.array([0.0, 1.0, 4.0], np.float32), requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(use_sqrt, 3, inputs=[a], outputs=[out])
    tape.backward(grads={out: np.ones(3)})
    np.testing.assert_allclose(out.numpy(), np.sqrt([0, 1, 4]) + 3 * np.array([0, 1, 4]))
    # the rule gives 0 at x = 0 where d sqrt/dx is infinite; tripled adds 3
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 3.5, 3.25])
    src = use_sqrt.source("all")
    assert "def safe_sqrt__adj(x, adj_ret):" in src and "The user's grad rule" in src
    # tripled's value enters the result linearly: no adjoint rule reads it, so the adjoint
    # does not replay it at all (prune.py); where a rule reads it, the user's replay computes it
    assert "tripled__replay(" not in use_sqrt.source("adjoint")
    sq = wp.zeros(3, dtype=float, requires_grad=True)
    b = wp.array(np.array([0.5, 1.0, 2.0], np.float32), requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(use_tripled_squared, 3, inputs=[b], outputs=[sq])
    tape.backward(grads={sq: np.ones(3)})
    np.testing.assert_allclose(b.grad.numpy(), 18.0 * np.array([0.5, 1.0, 2.0]), rtol=1e-6)
    assert "tripled__replay(" in use_tripled_squared.source("adjoint")


def test_func_tangent_replaces_the_tangent():
    a = wp.array(np.array([0.0, 1.0, 4.0], np.float32))
    out = wp.zeros(3, dtype=float)
    t = wp.jvp(use_sqrt, 3, inputs=[a], outputs=[out], tangents={a: np.ones(3)})
    np.testing.assert_allclose(t[out].numpy(), [3.0, 3.5, 3.25])


def test_func_grad_with_vector_and_scalar_inputs():
    rng = np.random.default_rng(3)
    v = wp.array(rng.random((4, 3)), dtype=wp.vec3, requires_grad=True)
    s = wp.array(rng.random(4) + 0.5, dtype=float, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(use_norm, 4, inputs=[v, s], outputs=[out])
    seed = np.arange(1.0, 5.0)
    tape.backward(grads={out: seed})
    np.testing.assert_allclose(v.grad.numpy(), v.numpy() * (s.numpy() * seed)[:, None], rtol=1e-6)
    np.testing.assert_allclose(s.grad.numpy(), 10.0 * seed, rtol=1e-6)


@wp.func
def clash(a: float, b: float) -> float:
    return a + b


@wp.func_grad(clash)
def adj_clash(a: float, b: float, adj_ret: float):
    # locals named adj_a / adj_b are the rule's own (Warp's test_grad test_name_clash)
    adj_a = 0.0
    adj_b = 0.0
    if a < 0.0:
        adj_a = adj_ret
    if b > 0.0:
        adj_b = adj_ret
    wp.adjoint[a] += adj_a
    wp.adjoint[b] += adj_b


@wp.kernel
def clash_kernel(a: wp.array(dtype=float), b: wp.array(dtype=float),
                 out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = clash(a[i], b[i])


def test_rule_locals_named_like_adjoints_do_not_clash():
    a = wp.array([1.0, -2.0, 3.0], dtype=float, requires_grad=True)
    b = wp.array([4.0, 5.0, -6.0], dtype=float, requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(clash_kernel, 3, inputs=[a, b, out])
    tape.backward(grads={out: wp.array(np.ones(3, np.float32))})
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 0.0])
