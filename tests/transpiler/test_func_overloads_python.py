"""Funcs called from Python pick their overload by the arguments' types as Warp does (a Python
float is a float32, an int an int32), and refuse arguments no overload declares; a func
declared again with the same parameter types replaces the first, in kernels and in Python;
``@wp.func()`` and ``@wp.func(module=...)``."""
import typing

import numpy as np
import pytest

import weft as wp


@wp.func
def custom(x: int):
    return x + 1


@wp.func
def custom(x: float):  # noqa: F811 - an overload
    return x + 1.0


@wp.func
def custom(x: wp.vec3):  # noqa: F811
    return x + wp.vec3(1.0, 0.0, 0.0)


@wp.func
def foo(x: int):
    return x * 2


@wp.func
def foo(x: int):  # noqa: F811 - the same types: replaces the first
    return x * 3


@wp.func
def divide_float64(x: wp.float64):
    return x / wp.float64(1.25)


@wp.func
def length_of(a: wp.array(dtype=float)):
    return a.shape[0]


@wp.func()
def twice(x: float):
    return 2.0 * x


@wp.func(module="unique")
def thrice(x: float):
    return 3.0 * x


@wp.kernel
def uses(out: wp.array(dtype=float)):
    out[0] = float(foo(1)) + twice(1.0) + thrice(1.0) + custom(1.0)


def test_python_scope_overloads_by_type():
    assert custom(1) == 2 and isinstance(custom(1), int)
    assert custom(1.0) == 2.0
    np.testing.assert_array_equal(np.array(custom(wp.vec3(1.0, 0.0, 0.0))), [2.0, 0.0, 0.0])
    assert custom(np.float32(2.0)) == 3.0
    assert divide_float64(wp.float64(2.5)) == 2.0
    assert length_of(wp.zeros(8, dtype=float)) == 8
    with pytest.raises(RuntimeError, match=r"^Error calling function 'divide_float64', no "
                       r"overload found for arguments \(1.0,\)$"):
        divide_float64(1.0)  # a Python float is a float32
    with pytest.raises(RuntimeError, match="no overload found"):
        length_of(wp.zeros(8, dtype=int))


def test_redeclaration_replaces_and_decorator_forms():
    assert foo(1) == 3
    out = wp.zeros(1, dtype=float)
    wp.launch(uses, 1, inputs=[out])
    assert out.numpy()[0] == 3.0 + 2.0 + 3.0 + 2.0
    assert twice(2.0) == 4.0 and thrice(2.0) == 6.0
    assert len(typing.get_overloads(wp.func)) == 2  # for type checkers, as Warp
