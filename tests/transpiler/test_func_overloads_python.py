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


@wp.func
def _redef():
    return 17


_redef_first = _redef


@wp.func
def _redef():  # noqa: F811 - a redefinition: a new object; the old reference keeps its body
    return 42


@wp.func
def _prim(x: int):
    return x * x


@wp.func
def _prim(x: float):  # noqa: F811 - an overload
    return x * x


@wp.func
def _prim(x: int):  # noqa: F811 - the primary overload redefined, keeping its place
    return x * x * x


def _closure_overloads(value: int):
    @wp.func
    def f():
        return value

    @wp.func
    def f(x: int):  # noqa: F811 - an overload declared in the same function
        return f() * x

    return f


_c2 = _closure_overloads(2)
_c3 = _closure_overloads(3)


@wp.kernel
def redefinitions(a: wp.array(dtype=int), b: wp.array(dtype=float)):
    a[0] = _redef()
    a[1] = _redef_first()
    a[2] = _c2() + _c2(2) * 10
    a[3] = _c3() + _c3(2) * 10
    b[0] = float(_prim(2))
    b[1] = _prim(2.0)


@wp.kernel
def one_branch(flag: bool, out: wp.array(dtype=float), vo: wp.array(dtype=wp.vec3)):
    if flag:
        x = 123.0
        v = wp.vec3(1.0, 2.0, 3.0)
    out[0] = x  # Warp: zero when the branch did not run
    vo[0] = v


def test_redefinitions_closure_overloads_and_one_branch_variables():
    a, b = wp.zeros(4, dtype=int), wp.zeros(2, dtype=float)
    wp.launch(redefinitions, 1, inputs=[a, b])
    np.testing.assert_array_equal(a.numpy(), [42, 17, 2 + 40, 3 + 60])
    np.testing.assert_array_equal(b.numpy(), [8.0, 4.0])
    out, vo = wp.zeros(1, dtype=float), wp.zeros(1, dtype=wp.vec3)
    wp.launch(one_branch, 1, inputs=[True, out, vo])
    assert out.numpy()[0] == 123.0 and list(vo.numpy()[0]) == [1.0, 2.0, 3.0]
    wp.launch(one_branch, 1, inputs=[False, out, vo])
    assert out.numpy()[0] == 0.0 and list(vo.numpy()[0]) == [0.0, 0.0, 0.0]
