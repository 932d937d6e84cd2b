"""Writes at a run-time index into vectors and matrices of five or more components (and the
adjoints of reads there) are one ``_wk.tuple_insert`` call, not a conditional expression per
component: values, gradients (analytic), a Hessian-vector product (analytic), and the helper's
range check."""
import types

import numpy as np

import weft as wp
from weft.native import _portable
from weft.native import helpers as _wk

mat66d = wp.types.matrix((6, 6), wp.float64)
vec6d = wp.types.vector(6, wp.float64)


@wp.kernel
def rows_squared(a: wp.array(dtype=mat66d), w: wp.array(dtype=vec6d),
                 out: wp.array(dtype=wp.float64)):
    s = wp.float64(0.0)
    v = vec6d()
    for i in range(6):
        r = a[0][i]              # a row read at a run-time index
        v[i] = wp.dot(r, w[0])   # a component written at a run-time index
    for i in range(6):
        s += v[i] * v[i]
    out[0] = s


def test_helper_writes_in_range_and_leaves_the_rest():
    t = (1.0, 2.0, 3.0)
    uncompiled = types.FunctionType(_portable.tuple_insert.__code__,
                                    {"tuple_setitem": _portable.tuple_setitem_py, "len": len})
    for fn in (_wk.tuple_insert, uncompiled):
        assert fn(t, 1, 9.0) == (1.0, 9.0, 3.0)
        assert fn(t, 0, 9.0) == (9.0, 2.0, 3.0)
        assert fn(t, 2, 9.0) == (1.0, 2.0, 9.0)
        assert fn(t, 3, 9.0) == t and fn(t, -1, 9.0) == t


def _inputs(rng):
    A = rng.normal(size=(1, 6, 6))
    W = rng.normal(size=(1, 6))
    a = wp.array(A, dtype=mat66d, requires_grad=True)
    w = wp.array(W, dtype=vec6d, requires_grad=True)
    return A, W, a, w


def test_values_gradients_and_hvp_through_run_time_indices():
    A, W, a, w = _inputs(np.random.default_rng(3))
    out = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(rows_squared, 1, inputs=[a, w], outputs=[out])
    v = A[0] @ W[0]
    np.testing.assert_allclose(out.numpy()[0], v @ v, rtol=1e-13)
    tape.backward(out)
    # f = |A w|^2: df/dA = 2 (A w) w^T, df/dw = 2 A^T A w
    np.testing.assert_allclose(a.grad.numpy()[0], 2 * np.outer(v, W[0]), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy()[0], 2 * A[0].T @ v, rtol=1e-12)
    # d2f/dw2 = 2 A^T A, so H [0; u] in w is 2 A^T A u, and in A is 2 (A u w^T + A w u^T)
    u = np.random.default_rng(4).normal(size=6)
    hv = tape.hvp(out, {w: u[None], a: np.zeros((1, 6, 6))})
    np.testing.assert_allclose(hv[w].numpy()[0], 2 * A[0].T @ (A[0] @ u), rtol=1e-12)
    np.testing.assert_allclose(hv[a].numpy()[0],
                               2 * np.outer(A[0] @ u, W[0]) + 2 * np.outer(v, u), rtol=1e-12)


def test_no_conditional_expression_per_component():
    from weft.transpiler import pipeline
    from weft.transpiler.state import CompileOptions, CompileState
    src = pipeline.run(CompileState(roots=[rows_squared], options=CompileOptions.for_device(
        "cpu", "release", False))).source
    assert "_wk.tuple_insert(" in src
    assert " if i == " not in src and " else " not in src.split("def rows_squared", 1)[-1]


def test_adjoint_of_a_row_read_fills_one_tuple_of_zeros():
    """The adjoint of ``a[0][i]`` (a 6x6 matrix, ``i`` known at run time) writes the row's six
    components into one tuple of zeros; it used to build a tuple of zeros per component and
    add them up (6 x 36 additions per read: ddot on mat66's adjoint took 24 s to compile)."""
    from weft.transpiler import pipeline
    from weft.transpiler.state import CompileOptions, CompileState
    src = pipeline.run(CompileState(roots=[rows_squared], options=CompileOptions.for_device(
        "cpu", "release", False))).source
    adj = src.split("def rows_squared__adj_serial", 1)[1].split("\n@", 1)[0]
    zeros36 = "(" + ", ".join(["float64(0.0)"] * 30) + ")"  # tuples print in parts of 30
    reads = [ln for ln in adj.splitlines() if zeros36 in ln]
    assert len(reads) == 1, reads  # the one row read in the loop
    assert reads[0].count("_wk.tuple_insert(") == 6
