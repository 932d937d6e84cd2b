"""Generic kernels and funcs (Warp's implicit overloads): parameters annotated ``Any``,
``wp.array(dtype=Any)`` or ``wp.Float`` take the argument types, one compilation per
combination; ``type(x)``, ``a.dtype``, ``v.length`` in generic code; func overloads by
signature. Expected values are worked out by hand."""
from typing import Any

import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError, LaunchError


@wp.kernel
def fill(a: wp.array(dtype=Any), value: Any):
    a[wp.tid()] = value


@wp.kernel
def add_arrays(a: Any, b: Any, c: Any):
    i = wp.tid()
    c[i] = a[i] + b[i]


@pytest.mark.parametrize("dtype, value", [(int, 3), (float, 2.5), (wp.float64, wp.float64(1.25)),
                                          (wp.vec3, wp.vec3(1.0, 2.0, 3.0))])
def test_one_kernel_many_types(dtype, value):
    x = wp.zeros(4, dtype=dtype)
    wp.launch(fill, 4, inputs=[x, value])
    y = wp.zeros(4, dtype=dtype)
    wp.launch(add_arrays, 4, inputs=[x, x, y])
    want = 2 * np.asarray(value, dtype=x.numpy().dtype)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(want, y.numpy().shape))
    assert y.numpy().dtype == x.numpy().dtype


@wp.func
def adder(a: Any, b: Any):
    return a + b


@wp.kernel
def casts(a: Any, b: Any, out: wp.array(dtype=float)):
    x = type(a)(b)                  # b converted to a's type
    c = type(adder(b, b))(a)        # the type of a call's result
    out[0] = wp.float32(x) + wp.float32(c)


def test_type_of_a_value_converts():
    out = wp.zeros(1, dtype=float)
    wp.launch(casts, 1, inputs=[1, 2.75, out])    # int(2.75) + float(1) = 3
    assert out.numpy()[0] == 3.0


@wp.func
def set_plus_one(a: wp.array(dtype=Any), i: int, value: Any):
    a[i] = value + a.dtype(1)


@wp.kernel
def via_func(a: wp.array(dtype=Any), v: Any):
    set_plus_one(a, wp.tid(), v)


@wp.kernel
def type_attributes(a: wp.array(dtype=Any), out: wp.array(dtype=Any)):
    v = type(a).dtype(a[0]) * a.dtype.dtype(2.0)
    m = wp.identity(n=v.length, dtype=v.dtype)
    out[0] = m * v


def test_generic_funcs_with_arrays_and_type_attributes():
    a = wp.zeros(3, dtype=wp.float64)
    wp.launch(via_func, 3, inputs=[a, wp.float64(2.0)])
    np.testing.assert_array_equal(a.numpy(), [3.0, 3.0, 3.0])
    b = wp.array([wp.vec3(1.0, 2.0, 3.0)], dtype=wp.vec3)
    o = wp.zeros(1, dtype=wp.vec3)
    wp.launch(type_attributes, 1, inputs=[b, o])
    np.testing.assert_array_equal(o.numpy(), [[2.0, 4.0, 6.0]])


@wp.func
def combine(a: Any, b: Any, c: Any):
    return a + b + c


@wp.func
def combine(a: int, b: int):  # noqa: F811 - an overload, as in Warp
    return a - b


@wp.func
def combine(a: Any, b: Any):  # noqa: F811
    return a * b


@wp.kernel
def overloads(out: wp.array(dtype=float), iout: wp.array(dtype=int)):
    iout[0] = combine(17, 25)            # (int, int): exact
    out[0] = combine(7.0, 10.0)          # generic pair
    out[1] = combine(7.0, 10.0, 2.0)     # generic triple


def test_func_overloads_pick_exact_then_generic():
    out = wp.zeros(2, dtype=float)
    iout = wp.zeros(1, dtype=int)
    wp.launch(overloads, 1, inputs=[out, iout])
    assert iout.numpy()[0] == -8
    np.testing.assert_array_equal(out.numpy(), [70.0, 19.0])
    assert combine(3, 4) == -1 and combine(1, 2, 3) == 6  # Python scope: the one that binds


@wp.kernel
def square_generic(x: wp.array(dtype=Any), y: wp.array(dtype=Any)):
    i = wp.tid()
    y[i] = x[i] * x[i] * x.dtype(0.5)


def test_gradients_of_a_generic_kernel_float64():
    x = wp.array(np.array([1.0, -2.0, 3.0]), dtype=wp.float64, requires_grad=True)
    y = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square_generic, 3, inputs=[x, y])
    tape.backward(grads={y: np.ones(3)})
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -2.0, 3.0])  # d(x^2/2)/dx = x


def test_argument_that_does_not_fit_is_a_launch_error():
    @wp.kernel
    def floats_only(a: wp.array(dtype=wp.Float)):
        a[0] = a.dtype(1.0)

    with pytest.raises(LaunchError, match="floats_only.*'a'"):
        wp.launch(floats_only, 1, inputs=[wp.zeros(1, dtype=int)])


def test_misspelt_type_operator_is_an_undefined_symbol():
    @wp.kernel
    def misspelt():
        i = wp.tid()
        _ = typez(i)(0)  # noqa: F821

    with pytest.raises(KernelError, match="undefined symbol: typez") as info:
        wp.launch(misspelt, 1)
    assert isinstance(info.value, KeyError)
