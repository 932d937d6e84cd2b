"""The lowering asks a callee what it is, never its name: user funcs named like builtins
(``sample_scale`` like the random samplers, ``svd3`` and ``quat_to_axis_angle`` like Warp's
output-argument builtins) are ordinary funcs."""
import numpy as np

import weft as wp


@wp.func
def sample_scale(x: float):
    return x * 2.0


@wp.kernel
def loop_with_sample_named_func(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    s = float(0.0)
    for _k in range(3):
        s = s + sample_scale(x)
    out[i] = s


@wp.func
def svd3(A: wp.mat33, U: wp.mat33, sigma: wp.vec3, V: wp.mat33):
    return wp.trace(A) + wp.trace(U) + sigma[0] + wp.trace(V)


@wp.func
def quat_to_axis_angle(q: wp.quat, axis: wp.vec3, angle: float):
    return q[3] + axis[0] + angle


@wp.kernel
def calls_output_named_funcs(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    m = wp.mat33(a[i], 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    v = wp.vec3(a[i], 0.0, 0.0)
    q = wp.quat(0.0, 0.0, 0.0, a[i])
    s = float(0.0)
    for _k in range(2):
        s = s + svd3(m, m, v, m) + quat_to_axis_angle(q, v, a[i])
    out[i] = s


def test_user_func_named_like_a_sampler_is_not_a_random_draw():
    a = wp.array(np.array([1.0, 2.5], np.float32), requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(loop_with_sample_named_func, 2, inputs=[a], outputs=[out])
    np.testing.assert_allclose(out.numpy(), [6.0, 15.0])
    tape.backward(grads={out: np.ones(2, np.float32)})
    np.testing.assert_allclose(a.grad.numpy(), [6.0, 6.0])
    # x is not carried through the loop: the adjoint records only s, no stack for x
    adj = loop_with_sample_named_func.source("adjoint")
    assert adj.count("np.empty(") == 1, adj


def test_user_funcs_named_like_output_argument_builtins_are_ordinary():
    a = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(calls_output_named_funcs, 2, inputs=[a], outputs=[out])
    # svd3: 3 traces of diag(a, 1, 1) + a; quat_to_axis_angle: a + a + a
    expect = 2 * (3 * (np.array([1.0, 2.0]) + 2) + np.array([1.0, 2.0]) * 4)
    np.testing.assert_allclose(out.numpy(), expect)
    tape.backward(grads={out: np.ones(2, np.float32)})
    np.testing.assert_allclose(a.grad.numpy(), [14.0, 14.0])
    # only s is carried: m, v and q are not outputs of these funcs
    adj = calls_output_named_funcs.source("adjoint")
    assert adj.count("np.empty(") == 1, adj
