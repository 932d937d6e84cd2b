"""Reproducers of the reliability issue: misuse gets a clear error before anything runs, valid
Warp code that used to be rejected compiles, and what the transpiler used to choke on either
works or is a located KernelError."""
import numpy as np
import pytest

import weft as wp
from tests.kernel_errors import kernel_error


@wp.kernel
def copy_kernel(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i]


@wp.kernel
def guarded_copy(a: wp.array(dtype=float), b: wp.array(dtype=float), n: int):
    i = wp.tid()
    if i < n:
        b[i] = a[i]


@wp.kernel
def scale(a: wp.array(dtype=float), s: float, k: int, u: wp.uint32, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * s + float(k) + float(u)


def test_dim_larger_than_the_arrays_every_thread_indexes_is_refused():
    a, b = wp.zeros(10, dtype=float), wp.zeros(10, dtype=float)
    for dim in (11, 1000):  # the serial and the parallel path
        with pytest.raises(wp.LaunchError, match="indexes array 'a' by the thread index"):
            wp.launch(copy_kernel, dim, inputs=[a], outputs=[b])
    wp.launch(copy_kernel, 10, inputs=[a], outputs=[b])  # the small fast path, then too big
    with pytest.raises(wp.LaunchError, match="dimension 0 has 10 elements"):
        wp.launch(copy_kernel, 12, inputs=[a], outputs=[b])
    # a guarded access is the user's business, as in Warp
    wp.launch(guarded_copy, 16, inputs=[wp.ones(10, dtype=float), b, 10])
    np.testing.assert_array_equal(b.numpy(), np.ones(10))


@pytest.mark.parametrize("dim", [4.0, None, 2 ** 64, -1, (2, 2, 2, 2, 2), (), "4", True])
def test_bad_dims_are_launch_errors(dim):
    a, b = wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)
    with pytest.raises(wp.LaunchError, match="dim"):
        wp.launch(copy_kernel, dim, inputs=[a], outputs=[b])


@pytest.mark.parametrize("args,match", [
    ((None, 1, 1), "argument 's': expected a float32 scalar, got NoneType"),
    ((1.0, 2 ** 40, 1), "argument 'k': 1099511627776 is out of range for int32"),
    ((1.0, 1, -1), "argument 'u': -1 is out of range for uint32"),
    ((1.0, 1.5, 1), "argument 'k': expected an integer"),
    (("x", 1, 1), "argument 's'"),
])
def test_bad_scalars_are_launch_errors(args, match):
    a, out = wp.zeros(4, dtype=float), wp.zeros(4, dtype=float)
    with pytest.raises(wp.LaunchError, match=match):
        wp.launch(scale, 4, inputs=[a, *args], outputs=[out])
    assert not out.numpy().any()  # nothing ran


def test_launching_a_plain_function_or_a_non_function_kernel():
    def plain(a):
        pass
    with pytest.raises(wp.LaunchError, match="needs a @wp.kernel"):
        wp.launch(plain, 4, inputs=[wp.zeros(4, dtype=float)])
    with pytest.raises(TypeError, match="needs a Python function"):
        wp.kernel(len)


def test_explicit_adjoint_of_the_wrong_shape_is_refused():
    a = wp.zeros(4, dtype=float)
    b = wp.zeros(4, dtype=float)
    with pytest.raises(wp.LaunchError, match="adjoint given for argument 'b' has shape"):
        wp.launch(copy_kernel, 4, inputs=[a], outputs=[b], adjoint=True,
                  adj_inputs=[wp.zeros(4, dtype=float)], adj_outputs=[wp.zeros(2, dtype=float)])


def test_backward_grads_of_the_wrong_shape_is_refused():
    a = wp.zeros(4, dtype=float, requires_grad=True)
    b = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(copy_kernel, 4, inputs=[a], outputs=[b])
    with pytest.raises(wp.LaunchError, match="has shape"):
        tape.backward(grads={b: np.ones(5, np.float32)})


@wp.kernel
def mixed_compare(d: wp.array(dtype=float), radius: int, out: wp.array(dtype=int)):
    i = wp.tid()
    if d[i] < radius:
        out[i] = 1


def test_float_compared_with_int_as_warp():
    out = wp.zeros(3, dtype=int)
    wp.launch(mixed_compare, 3, inputs=[wp.array(np.array([0.5, 1.5, 3.0], np.float32)), 2, out])
    np.testing.assert_array_equal(out.numpy(), [1, 1, 0])  # Warp 1.19's output


@wp.func
def first_square_at_least(x: int):
    i = int(0)
    while True:
        if i * i >= x:
            return i
        i = i + 1


@wp.kernel
def while_true_returns(a: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = first_square_at_least(a[i])


def test_func_whose_while_true_returns_on_every_exit():
    out = wp.zeros(5, dtype=int)
    wp.launch(while_true_returns, 5, inputs=[wp.array(np.array([0, 1, 5, 16, 17], np.int32)), out])
    np.testing.assert_array_equal(out.numpy(), [0, 1, 3, 4, 5])


@wp.kernel
def empty_loop_body(a: wp.array(dtype=float)):
    i = wp.tid()
    for j in range(3):
        pass
    while a[i] > 10.0:
        pass
    a[i] = a[i] + 1.0


@wp.kernel
def wide_literals(out: wp.array(dtype=wp.int64), outf: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = 2147483648 + out[i]
    outf[i] = wp.float64(9007199254740993) + outf[i]


def test_empty_loop_bodies_and_wide_literals_compile():
    a = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(empty_loop_body, 2, inputs=[a])
    tape.backward(grads={a: np.ones(2, np.float32)})
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0])
    out, outf = wp.zeros(1, dtype=wp.int64), wp.zeros(1, dtype=wp.float64)
    wp.launch(wide_literals, 1, inputs=[out, outf])
    assert out.numpy()[0] == 2147483648  # Warp wraps the literal to int32; weft widens it
    assert outf.numpy()[0] == float(9007199254740993)


@pytest.mark.parametrize("body,message", [
    (["i = wp.tid()", "a[i] = 2147483648"],
     "cannot store a value of type int64 into an array of int32"),
    (["i = wp.tid()", "x = 1180591620717411303424"], "does not fit any kernel integer type"),
    (["i = wp.tid()", "v = wp.vec3(1.0, 2.0, 3.0)", "a[i] = int(v[3])"],
     "index 3 is out of range for vec3f (-3 to 2)"),
    (["i = wp.tid()", "v = wp.vec3(1.0, 2.0, 3.0)", "v[-4] = 0.0"],  # -1 is the last, as Warp
     "index -4 is out of range for vec3f"),
    (["i = wp.tid()", "m = wp.mat22(1.0, 2.0, 3.0, 4.0)", "a[i] = int(m[1, 2])"],
     "index 2 is out of range for mat22f (-2 to 1)"),
])
def test_bad_constants_are_located_errors(tmp_path, body, message):
    err = kernel_error(tmp_path, "a: wp.array(dtype=int)", body)
    assert message in str(err) and err.lineno == 5 + len(body)
