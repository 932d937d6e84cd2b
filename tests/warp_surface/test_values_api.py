"""Vector, matrix, quaternion and transform values at Python scope, as Warp 1.19's (expected
values from Warp; weft returns numpy scalars where Warp returns Python floats)."""
import numpy as np
import pytest

import weft as wp


def test_equality_is_a_bool():
    v = wp.vec3(1.0, 2.0, 3.0)
    assert (v == wp.vec3(1.0, 2.0, 3.0)) is True
    assert (v != wp.vec3(1.0, 2.0, 3.0)) is False
    assert (v == wp.vec3(0.0)) is False
    assert (v == [1.0, 2.0, 3.0]) is True
    assert (v == 1) is False and (v == wp.vec2()) is False
    assert wp.mat22(1.0, 2.0, 3.0, 4.0) == wp.mat22(1.0, 2.0, 3.0, 4.0)


def test_repr_and_str():
    assert repr(wp.vec3(1.0, 2.0, 3.0)) == "vec3f([1.0, 2.0, 3.0])"
    assert str(wp.vec3(1.0, 2.0, 3.0)) == "[1.0, 2.0, 3.0]"
    assert repr(wp.vec2i(1, 2)) == "vec2i([1, 2])"
    assert repr(wp.quat(0.0, 0.0, 0.0, 1.0)) == "quatf([0.0, 0.0, 0.0, 1.0])"
    assert repr(wp.transform()) == "transformf([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])"
    # double and half precision components are shown with their type, as Warp
    assert repr(wp.vec4d(1, 2, 3, 4)) == \
        "vec4d([float64(1.0), float64(2.0), float64(3.0), float64(4.0)])"
    assert repr(wp.vec2h(1, 2)) == "vec2h([float16(1.0), float16(2.0)])"
    assert str(wp.mat22(1.0, 2.0, 3.0, 4.0)) == "[[1.0, 2.0],\n [3.0, 4.0]]"


def test_components():
    v = wp.vec3(1.0, 2.0, 3.0)
    assert (v.x, v.y, v.z) == (1.0, 2.0, 3.0)
    assert wp.vec4(1, 2, 3, 4).w == 4.0 and wp.quat(1, 2, 3, 4).w == 4.0
    v.x = 5.0
    v.z = 7.0
    assert v.tolist() == [5.0, 2.0, 7.0]
    with pytest.raises(AttributeError, match="'vec2f' object has no attribute 'z'"):
        wp.vec2().z
    assert repr(v[1:]) == "vec2f([2.0, 7.0])"


def test_matrix_rows():
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    assert repr(m[0]) == "vec2f([1.0, 2.0])" and m[1, 0] == 3.0
    assert repr(m.get_row(1)) == "vec2f([3.0, 4.0])"
    r = m[0]
    r[0] = 9.0  # a row is a copy, as in Warp
    assert m[0, 0] == 1.0
    m.set_row(1, (7.0, 8.0))
    m[0] = wp.vec2(5.0, 6.0)
    assert m.tolist() == [[5.0, 6.0], [7.0, 8.0]]
    with pytest.raises(IndexError, match="Invalid row index"):
        m.set_row(2, (0.0, 0.0))
    assert wp.mat22(wp.vec2(1.0, 2.0), wp.vec2(3.0, 4.0)).tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_transforms():
    tr = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0))
    assert repr(tr) == "transformf([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0])"
    assert repr(tr.p) == "vec3f([1.0, 2.0, 3.0])" and repr(tr.q) == "quatf([0.0, 0.0, 0.0, 1.0])"
    assert repr(wp.transform(p=wp.vec3(1.0, 2.0, 3.0))) == \
        "transformf([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0])"
    assert repr(wp.transform(q=wp.quat(0.0, 0.0, 1.0, 0.0))) == \
        "transformf([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0])"
    with pytest.raises(TypeError, match="multiple values for argument 'p'"):
        wp.transform(wp.vec3(), p=wp.vec3())
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'pos'"):
        wp.transform(pos=wp.vec3())


def test_constructor_and_key_errors():
    with pytest.raises(ValueError, match=r"Invalid number of arguments in vector constructor, "
                       r"expected 3 elements, got 2$"):
        wp.vec3(1, 2)
    with pytest.raises(ValueError, match=r"Invalid number of arguments in matrix constructor, "
                       r"expected 4 elements, got 3$"):
        wp.mat22(1, 2, 3)
    with pytest.raises(TypeError, match=r"Invalid argument in matrix constructor, expected row "
                       r"of length 2, got \(1, 2, 3\)$"):
        wp.mat22((1, 2, 3), (3, 4, 5))
    with pytest.raises(KeyError, match="Invalid key None, expected int or slice"):
        wp.vec3()[None]
    with pytest.raises(KeyError, match="Invalid key None, expected int or pair of ints"):
        wp.mat22()[None]
    with pytest.raises(KeyError, match="Invalid key, expected one or two indices, got 3"):
        wp.mat22()[0, 1, 2]
    u = wp.vec3i(1, 2, 3)
    with pytest.raises(TypeError, match="Expected to assign a `int32` value but got `str` instead"):
        u[0] = "123.0"
    with pytest.raises(TypeError, match="Expected to assign a slice from a sequence of `int32` "
                       "values but got `vec3i` instead"):
        u[:1] = (u,)


def test_values_are_new_memory_and_numpy_dtypes():
    data = np.array([1.0, 2.0, 3.0], np.float32)
    v = wp.vec3(data)
    data[0] = 9.0
    assert v.x == 1.0
    assert np.dtype(wp.float32) == np.float32
    assert np.zeros(2, dtype=wp.float16).dtype == np.float16
    assert np.array([1, 0], dtype=wp.bool).dtype == np.bool_
    assert repr(wp.vec3(1.0, 2.0, 3.0) * 2.0) == "vec3f([2.0, 4.0, 6.0])"
    assert repr(-wp.vec3(1.0, 2.0, 3.0)) == "vec3f([-1.0, -2.0, -3.0])"


def test_slice_assignment_length():
    v = wp.vec3i(1, 2, 3)
    with pytest.raises(ValueError, match="Can only assign sequence of same size"):
        v[:1] = (1, 2)
    v[1:] = (5, 6)
    assert v.tolist() == [1, 5, 6]


def test_integer_values_wrap_and_divide_as_c():
    # Warp 1.19: components are stored as C types, integer / truncates, % keeps the sign
    v3ub = wp.types.vector(3, wp.uint8)
    assert v3ub(1, -2, 3).tolist() == [1, 254, 3]
    assert (-v3ub(1, -2, 3)).tolist() == [255, 2, 253]
    assert (v3ub(2, 4, 6) / wp.uint8(2)).tolist() == [1, 2, 3]
    assert (wp.uint8(24) / v3ub(2, 4, 6)).tolist() == [12, 6, 4]
    assert (v3ub(2, 4, 6) % v3ub(3, 3, 3)).tolist() == [2, 1, 0]
    w = wp.vec3i(-7, 7, -8)
    assert (w / wp.int32(2)).tolist() == [-3, 3, -4] and type(w / wp.int32(2)) is wp.vec3i
    assert (w % wp.vec3i(2, 2, 3)).tolist() == [-1, 1, -2]
    assert repr(wp.mat22(1.0, 2.0, 3.0, 4.0) @ wp.vec2(1.0, 1.0)) == "vec2f([3.0, 7.0])"
    # scalar types: ctypes storage type as Warp's, integers wrap to their width
    assert wp.uint8._type_(-2).value == 254 and wp.int8._type_(200).value == -56
    assert wp.float16._type_ is __import__("ctypes").c_ushort
    assert wp.uint8(-2) == 254 and wp.int8(200) == -56 and wp.int32(1.7) == 1


def test_transform_constructor_forms():
    # Warp 1.19's Python-scope transform constructor
    comps = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    T = wp.transformh
    assert [float(x) for x in T((1.0, 2.0, 3.0))] == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    assert [float(x) for x in T(1.5)] == [1.5] * 7
    assert [float(x) for x in T(True)] == [1.0] * 7
    assert [float(x) for x in T(*comps)] == comps
    assert [float(x) for x in T((1.0, 2.0, 3.0), (4.0, 5.0, 6.0, 7.0))] == comps
    assert [float(x) for x in T(p=(1.0, 2.0, 3.0), q=(4.0, 5.0, 6.0, 7.0))] == comps
    assert [float(x) for x in T(wp.transformd(*comps))] == comps
    with pytest.raises(TypeError, match="expected a scalar value, got object"):
        T(object())
    with pytest.raises(TypeError, match="Invalid argument 'p' in transformation constructor: "
                       "expected a sequence, got float"):
        T(1.5, 2.5)
    with pytest.raises(TypeError, match="Invalid argument 'q' in transformation constructor"):
        T((1.0, 2.0, 3.0), 1.0)
    with pytest.raises(TypeError, match="^multiple values for argument 'q'$"):
        T(*comps, q=(8.0, 9.0, 10.0, 11.0))
    with pytest.raises(TypeError, match="^got an unexpected keyword argument 'pos'$"):
        T(*comps, pos=(8.0, 9.0, 10.0))
    m = wp.mat22h(1, 2, 3, 4)
    with pytest.raises(TypeError, match="Expected to assign a slice from a sequence of `float16` "
                       "values but got `mat22h` instead"):
        m[0] = (m,)


def test_integer_component_assignment_wraps():
    v = wp.types.vector(3, wp.uint32)(1, 2, 3)
    v[0] = -1  # stored as C would: 2**32 - 1
    assert v.tolist() == [4294967295, 2, 3]


def test_loop_builtins_at_python_scope():
    # svd3's rule is a loop (Jacobi sweeps): its Python-scope build once crashed on a
    # statement without a line number
    a = np.array([[2.0, -1.0, 0.5], [0.3, 1.5, -0.2], [0.1, 0.4, 3.0]])
    U, sigma, V = wp.svd3(wp.mat33(*a.ravel()))
    rebuilt = np.array(U) @ np.diag(np.array(sigma)) @ np.array(V).T
    np.testing.assert_allclose(rebuilt, a, atol=1e-5)
    np.testing.assert_allclose(np.sort(np.array(sigma)), np.sort(np.linalg.svd(a)[1]),
                               rtol=1e-5)


def test_scalar_values_are_instances_of_their_types():
    assert isinstance(wp.uint8(3), wp.uint8) and isinstance(wp.float16(1.0), wp.float16)
    assert not isinstance(wp.float32(1.0), wp.float64) and not isinstance(1.0, wp.float32)


def test_constant_accepts_values_and_refuses_containers():
    assert wp.constant(1.5) == 1.5 and list(wp.constant(wp.vec2(1.0, 2.0))) == [1.0, 2.0]
    with pytest.raises(TypeError, match=r"Invalid constant type: <class 'tuple'>$"):
        wp.constant((1, 2, 3))


def test_swizzles_are_not_attributes():
    v = wp.vec3(1.0, 2.0, 3.0)
    with pytest.raises(AttributeError, match="no attribute 'xy'$"):
        v.xy = 9.0
    with pytest.raises(AttributeError, match="no attribute 'xy'$"):
        v.xy


@wp.struct
class _Inner:
    a: wp.uint32
    b: wp.vec2f


@wp.struct
class _Outer:
    x: wp.vec2f
    s: _Inner


@wp.kernel
def _component_writes(foos: wp.array(dtype=_Outer)):
    i = wp.tid()
    foos[i].x += wp.vec2f(1.0, 2.0)
    foos[i].s.b = wp.vec2f(4.0, 5.0)
    foos[i].s.b.y = wp.float32(6.0)
    foos[i].s.b.x = foos[i].x.y


def test_components_of_struct_members_in_arrays():
    foos = wp.zeros(3, dtype=_Outer)
    wp.launch(_component_writes, 3, inputs=[foos])
    for f in foos.list():
        assert list(f.x) == [1.0, 2.0] and list(f.s.b) == [2.0, 6.0]


def test_remainders_take_the_dividends_sign_as_c():
    v = wp.vec4(-7.0, 21.0, 16.0, 51.0)
    v[:] %= wp.vec4(32.0, 33.0, 34.0, 35.0)          # in place too (Warp's test_vec)
    assert list(v) == [-7.0, 21.0, 16.0, 16.0]
    assert list(wp.vec2(-7.5, 7.5) % 2.0) == [-1.5, 1.5]
    assert list(wp.vec2i(-7, 7) % wp.vec2i(3, -3)) == [-1, 1]
