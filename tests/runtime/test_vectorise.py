"""The facts CPU kernels give LLVM (``weft/stdlib/vectorise.py``) change no result: arrays of
matrices and vectors, an adjoint array not asked for (``None``), strided views (not
C-contiguous: no fact), values and gradients against NumPy."""
import numpy as np

import weft as wp


@wp.kernel
def mat_vec(m: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = m[i] * v[i] * 2.0


def test_matrix_and_vector_arrays_values_and_gradients():
    n = 300
    rng = np.random.default_rng(0)
    ms, vs = rng.standard_normal((n, 3, 3)).astype(np.float32), \
        rng.standard_normal((n, 3)).astype(np.float32)
    m = wp.array(ms, dtype=wp.mat33, requires_grad=True)
    v = wp.array(vs, dtype=wp.vec3)                     # no gradient: its adjoint is None
    out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    src = mat_vec.source("adjoint")
    assert "_wk.assume_shape(m, 3, 3)" in src and "_wk.assume_shape(adj_m, 3, 3)" in src
    tape = wp.Tape()
    with tape:
        wp.launch(mat_vec, dim=n, inputs=[m, v], outputs=[out])
    g = rng.standard_normal((n, 3)).astype(np.float32)
    tape.backward(grads={out: wp.array(g, dtype=wp.vec3)})
    np.testing.assert_allclose(out.numpy(), 2.0 * np.einsum("nij,nj->ni", ms, vs), rtol=1e-5,
                               atol=1e-5)
    # d out_i / d m_ij = 2 v_j: adj_m = 2 g v^T
    np.testing.assert_allclose(m.grad.numpy(), 2.0 * g[:, :, None] * vs[:, None, :], rtol=1e-5,
                               atol=1e-5)


@wp.kernel
def scale(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = a[i] * 3.0


def test_strided_view_keeps_its_strides():
    base = np.arange(600 * 3, dtype=np.float32).reshape(600, 3)
    a = wp.array(base, dtype=wp.vec3)[::2]              # every other row: not C-contiguous
    out = wp.zeros(300, dtype=wp.vec3)
    wp.launch(scale, dim=300, inputs=[a], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), base[::2] * 3.0)
