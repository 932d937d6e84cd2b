"""Bugs the kernel fuzzer found (tools/fuzz_kernels.py), each as it was found: now a located
error, a launch error before anything runs, or C's value as Warp gives it."""
import re

import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError, KernelIndexError, LaunchError
from weft.runtime.kernel import function_source


def test_a_module_as_an_annotation_is_a_located_error():
    @wp.kernel
    def k(a: np, out: wp.array(dtype=float)):  # noqa: F821 - the mutation under test
        out[0] = 1.0

    with pytest.raises(KernelError, match="is not a kernel type"):
        wp.launch(k, 1, inputs=[1.0, wp.zeros(1, dtype=float)])


def test_int_of_an_infinite_literal_is_a_located_error():
    @wp.kernel
    def k(out: wp.array(dtype=int)):
        out[0] = int(1e309)

    with pytest.raises(KernelError, match=r"non-finite float has no integer value") as e:
        wp.launch(k, 1, inputs=[wp.zeros(1, dtype=int)])
    assert "^" in str(e.value)


@wp.kernel
def wrapping(out: wp.array(dtype=wp.int64), u: wp.array(dtype=wp.uint32)):
    out[0] = wp.int64(int(1099511627776))  # int32(2**40): C's conversion keeps the low bits
    out[1] = wp.int64(int(3.9))          # truncation toward zero
    u[0] = wp.uint32(-1)                 # 4294967295, as Warp


def test_integer_constants_convert_as_c_and_warp_do():
    out = wp.zeros(2, dtype=wp.int64)
    u = wp.zeros(1, dtype=wp.uint32)
    wp.launch(wrapping, 1, inputs=[out, u])
    assert out.numpy().tolist() == [0, 3] and u.numpy()[0] == 2 ** 32 - 1


@wp.func
def eighth(a: wp.array(dtype=float)):
    return a[7]


@wp.kernel
def constant_indices(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[2] + eighth(a)


@wp.kernel
def negative_index(a: wp.array(dtype=float)):
    a[-1] = 1.0


def test_constant_indices_outside_the_arguments_are_launch_errors():
    b = wp.zeros(4, dtype=float)
    wp.launch(constant_indices, 4, inputs=[wp.array(np.arange(8.0), dtype=float), b])
    assert b.numpy().tolist() == [9.0] * 4
    with pytest.raises(LaunchError, match=r"'a' is indexed with the constant 7 .*shape \(4,\)"):
        wp.launch(constant_indices, 4, inputs=[wp.zeros(4, dtype=float), b])  # was a SIGSEGV
    with pytest.raises(LaunchError, match="negative indices are not wrapped"):
        wp.launch(negative_index, 1, inputs=[wp.zeros(3, dtype=float)])
    wp.launch(negative_index, 0, inputs=[wp.zeros(0, dtype=float)])  # no thread: nothing read


@wp.kernel
def view_index(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = a[i]
    out[i] = row[5]


def test_constant_indices_into_views_are_checked_on_the_right_axis():
    out = wp.zeros(2, dtype=float)
    wp.launch(view_index, 2, inputs=[wp.array(np.ones((2, 6)), dtype=float), out])
    assert out.numpy().tolist() == [1.0, 1.0]
    with pytest.raises(LaunchError, match=r"constant 5 on axis 1 .*shape \(2, 3\)"):
        wp.launch(view_index, 2, inputs=[wp.zeros((2, 3), dtype=float), out])  # was SIGSEGV


@wp.kernel
def guarded_constant_index(sparse: int, colind: wp.array2d(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    if sparse:  # MuJoCo Warp: colind is empty unless the model is sparse
        out[i] = colind[i, 0]
    else:
        out[i] = -i


def test_constant_indices_on_accesses_that_may_not_run_are_checked_when_they_run():
    out = wp.zeros(3, dtype=int)
    empty = wp.zeros((3, 0), dtype=int)  # the constant 0 is outside axis 1
    wp.launch(guarded_constant_index, 3, inputs=[0, empty, out])  # never read: runs
    assert out.numpy().tolist() == [0, -1, -2]
    wp.launch(guarded_constant_index, 3, inputs=[1, wp.array([[4], [5], [6]], dtype=int), out])
    assert out.numpy().tolist() == [4, 5, 6]
    with pytest.raises(KernelIndexError, match="out of bounds"):  # read: reported, no stray read
        wp.launch(guarded_constant_index, 3, inputs=[1, empty, out])
    # the launch ran the guarded build: only accesses at a constant index are checked (the
    # rest compiles as in release; a full debug build of a large kernel compiled far longer)
    src = guarded_constant_index.compiled("cpu", mode="guarded").module.__weft_source__
    fwd = function_source(src, "guarded_constant_index__fwd_serial")
    assert fwd.count("_wk.chk(") == 2 and "colind[_wk.chk(i, " in fwd, fwd
    assert "out[i] = " in fwd and "_wk.inb(" not in fwd, fwd


@wp.func
def _first_of(row: wp.array(dtype=float), scale: float):
    return row[0] * scale


@wp.kernel
def guarded_in_func(n: int, rows: wp.array2d(dtype=float), w: wp.array(dtype=float),
                    out: wp.array(dtype=float)):
    i = wp.tid()
    assert w[i] < 100.0  # asserts are a debug build's: not checked in a guarded one
    s = w[i] * w[i]
    for k in range(n):  # a constant index in a func called in a loop that may not run
        s += _first_of(rows[i], w[i])
    out[i] = s


def test_guarded_build_checks_constant_indices_in_funcs_values_and_gradients():
    w = wp.array(np.array([1.0, 2.0, 300.0], np.float32), requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    empty = wp.zeros((3, 0), dtype=float)
    wp.launch(guarded_in_func, 3, inputs=[0, empty, w], outputs=[out])  # no iteration: runs
    np.testing.assert_allclose(out.numpy(), [1.0, 4.0, 90000.0])
    with pytest.raises(KernelIndexError, match="out of bounds"):
        wp.launch(guarded_in_func, 3, inputs=[1, empty, w], outputs=[out])
    # values and gradients through the guarded build equal the release build's (analytic:
    # out = w^2 + n w r0, d out / d w = 2 w + n r0, d out / d r0 = n w)
    rows = wp.array(np.array([[2.0], [3.0], [4.0]], np.float32), requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(guarded_in_func, 3, inputs=[2, rows, w], outputs=[out])
    tape.backward(grads={out: wp.array(np.ones(3, np.float32))})
    wv, r0 = np.array([1.0, 2.0, 300.0]), np.array([2.0, 3.0, 4.0])
    np.testing.assert_allclose(out.numpy(), wv ** 2 + 2 * wv * r0, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), 2 * wv + 2 * r0, rtol=1e-6)
    np.testing.assert_allclose(rows.grad.numpy()[:, 0], 2 * wv, rtol=1e-6)
    tape.zero()
    out2 = wp.zeros(3, dtype=float, requires_grad=True)
    with tape:  # the guarded build: the constant index is outside the empty rows
        wp.launch(guarded_in_func, 3, inputs=[0, empty, w], outputs=[out2])
    tape.backward(grads={out2: wp.array(np.ones(3, np.float32))})
    np.testing.assert_allclose(w.grad.numpy(), 2 * wv, rtol=1e-6)
    hv = tape.hvp(None, {w: np.ones(3, np.float32)}, grads={out2: np.ones(3, np.float32)})
    np.testing.assert_allclose(np.asarray(hv[w].numpy()), [2.0, 2.0, 2.0])  # d2/dw2 of w^2
    src = guarded_in_func.compiled("cpu", mode="guarded").module.__weft_source__
    assert "row[_wk.chk(int64(0), row.shape[0]" in src
    assert not re.search(r"\b(w|out)\[_wk\.", src)  # thread-indexed: unchecked
    assert not re.search(r"_wk\.inb\([^\n]*\b(adj_)?(w|out)\.shape", src)
