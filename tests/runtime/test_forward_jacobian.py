"""Forward mode over a whole tape and Jacobians: tape.forward equals central finite differences
(float64) and passes the dot-product test against tape.backward; dense Jacobians by reverse and
forward mode agree with each other and with finite differences; the multi-environment and sparse
(coloured) Jacobians equal the dense one; no primal array changes."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError

F64 = wp.array(dtype=wp.float64)


@wp.kernel
def stage1(x: F64, s: wp.float64, y: F64):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * s + x[i] * x[i]


@wp.kernel
def stage2(x: F64, y: F64, z: F64):
    i = wp.tid()
    n = x.shape[0]
    z[i] = y[i] * y[(i + 1) % n] + wp.float64(0.5) * x[i]


@wp.kernel
def inplace(z: F64):
    i = wp.tid()
    z[i] = z[i] * wp.float64(3.0)


def program(x0, record=True):
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    y = wp.zeros(len(x0), dtype=wp.float64, requires_grad=True)
    z = wp.zeros(len(x0), dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(stage1, len(x0), inputs=[x, 1.5, y])
        wp.launch(stage2, len(x0), inputs=[x, y, z])
        wp.launch(inplace, len(x0), inputs=[z])
    return tape, x, y, z


def fd_jacobian(x0, h=1e-6):
    cols = []
    for c in range(len(x0)):
        e = np.zeros(len(x0))
        e[c] = h
        zp = program(x0 + e)[3].numpy()
        zm = program(x0 - e)[3].numpy()
        cols.append((zp - zm) / (2 * h))
    return np.array(cols).T


X0 = np.array([0.3, -0.7, 1.1, 0.4, -0.2])


def test_tape_forward_matches_finite_differences_and_backward():
    tape, x, y, z = program(X0)
    z_before = z.numpy().copy()
    v = np.array([0.5, -1.0, 0.25, 2.0, 1.0])
    t = tape.forward({x: v})
    np.testing.assert_array_equal(z.numpy(), z_before)          # primal untouched
    J = fd_jacobian(X0)
    np.testing.assert_allclose(t[z].numpy(), J @ v, rtol=1e-7, atol=1e-8)
    assert y in t and z in t
    w = np.array([1.0, 0.5, -0.5, 0.3, 2.0])                    # <J v, w> == <v, J^T w>
    tape.backward(grads={z: w})
    assert float(t[z].numpy() @ w) == pytest.approx(float(v @ x.grad.numpy()), rel=1e-12)


def test_dense_jacobians_in_both_modes_agree_with_finite_differences():
    tape, x, y, z = program(X0)
    J_rev = tape.jacobian(x, z, mode="rev")
    J_fwd = tape.jacobian(x, z, mode="fwd")
    np.testing.assert_allclose(J_rev, J_fwd, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(J_fwd, fd_jacobian(X0), rtol=1e-7, atol=1e-8)
    both = tape.jacobian([x], [y, z], mode="auto")              # outputs stacked as rows
    np.testing.assert_allclose(both[5:], J_rev, rtol=1e-12)


def test_multi_environment_and_sparse_jacobians_equal_the_dense_one():
    pytest.importorskip("scipy")
    import scipy.sparse as sp
    x0 = np.linspace(-1.0, 1.0, 8)
    tape, x, y, z = program(x0)
    dense = tape.jacobian(x, z, mode="rev")
    pattern = sp.csr_matrix(np.abs(dense) > 0)
    for mode in ("fwd", "rev"):
        J = tape.jacobian(x, z, mode=mode, sparsity=pattern)
        np.testing.assert_allclose(J.toarray(), dense, rtol=1e-12, atol=1e-14)
    # two environments of 4 points, uncoupled: the per-element kernel stage1 alone
    x2 = wp.array(x0, dtype=wp.float64, requires_grad=True)
    y2 = wp.zeros(8, dtype=wp.float64, requires_grad=True)
    t2 = wp.Tape()
    with t2:
        wp.launch(stage1, 8, inputs=[x2, 1.5, y2])
    blocks = t2.jacobian(x2, y2, envs=2, mode="rev")
    full = t2.jacobian(x2, y2, mode="fwd")
    assert blocks.shape == (2, 4, 4)
    for e in range(2):
        np.testing.assert_allclose(blocks[e], full[4 * e:4 * e + 4, 4 * e:4 * e + 4])
    np.testing.assert_allclose(np.diag(full), 1.5 * np.cos(x0) + 2 * x0, rtol=1e-12)


def test_jacobian_misuse_is_a_clear_error():
    tape, x, y, z = program(X0)
    with pytest.raises(LaunchError, match="mode"):
        tape.jacobian(x, z, mode="sideways")
    with pytest.raises(LaunchError, match="environments"):
        tape.jacobian(x, z, envs=2)
    with pytest.raises(LaunchError, match="shape"):
        tape.forward({x: np.zeros(3)})
