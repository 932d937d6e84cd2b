"""Warp's builtin signatures beyond float types: integer vectors and matrices in dot, outer,
cw_div, trace, ddot; sign and % per component of vectors; builtins called by their bare name
(``dot(a, b)``, ``mat22(...)``, ``expect_eq(...)``) as Warp resolves them. Expected values are
worked out by hand / numpy."""
import numpy as np

import weft as wp

MAT22S = wp.types.matrix(shape=(2, 2), dtype=wp.int16)


@wp.kernel
def int_ops(out: wp.array(dtype=wp.int16), outv: wp.array(dtype=wp.vec2s),
            outm: wp.array(dtype=MAT22S)):
    a = wp.vec2s(wp.int16(3), wp.int16(-4))
    b = wp.vec2s(wp.int16(7), wp.int16(2))
    m = wp.matrix(wp.int16(1), wp.int16(2), wp.int16(3), wp.int16(4), shape=(2, 2))
    out[0] = wp.dot(a, b)
    out[1] = wp.trace(m)
    out[2] = wp.ddot(m, m)
    outv[0] = wp.cw_div(b, a)
    outv[1] = wp.sign(a)
    outv[2] = b % a
    outm[0] = wp.outer(a, b)


def test_integer_vector_and_matrix_builtins():
    out = wp.zeros(3, dtype=wp.int16)
    outv = wp.zeros(3, dtype=wp.vec2s)
    outm = wp.zeros(1, dtype=MAT22S)
    wp.launch(int_ops, 1, inputs=[out, outv, outm])
    np.testing.assert_array_equal(out.numpy(), [3 * 7 - 4 * 2, 1 + 4, 1 + 4 + 9 + 16])
    # C integer division and remainder truncate toward zero
    np.testing.assert_array_equal(outv.numpy(), [[2, 0], [1, -1], [1, 2]])
    np.testing.assert_array_equal(outm.numpy()[0], np.outer([3, -4], [7, 2]))


@wp.kernel
def vec_mod(a: wp.array(dtype=wp.vec3d), b: wp.array(dtype=wp.vec3d),
            c: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    c[i] = a[i] % b[i] + wp.sign(a[i])


def test_vector_mod_values_and_gradients():
    a0 = np.array([[5.5, -5.5, 7.25]])
    b0 = np.array([[2.0, 2.0, -3.0]])
    a = wp.array(a0, dtype=wp.vec3d, requires_grad=True)
    b = wp.array(b0, dtype=wp.vec3d, requires_grad=True)
    c = wp.zeros(1, dtype=wp.vec3d, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(vec_mod, 1, inputs=[a, b, c])
    np.testing.assert_allclose(c.numpy(), np.fmod(a0, b0) + np.sign(a0))
    tape.backward(grads={c: np.ones((1, 3))})
    np.testing.assert_allclose(a.grad.numpy(), np.ones((1, 3)))
    np.testing.assert_allclose(b.grad.numpy(), -np.trunc(a0 / b0))


@wp.kernel
def bare_names(out: wp.array(dtype=float)):
    v = vec3(1.0, 2.0, 3.0)  # noqa: F821 - resolved as Warp's builtins
    m = mat22(1.0, 2.0, 3.0, 4.0)  # noqa: F821
    expect_eq(dot(v, v), 14.0)  # noqa: F821
    out[0] = dot(v, v) + m[1, 1]  # noqa: F821


def test_builtins_by_bare_name(capfd):
    out = wp.zeros(1, dtype=float)
    wp.launch(bare_names, 1, inputs=[out])
    assert out.numpy()[0] == 18.0
    assert "expect_eq" not in capfd.readouterr().out
