"""wp.types helpers with Warp 1.19's answers (expected values from running Warp 1.19)."""
import typing

import numpy as np
import pytest

import weft as wp

T = wp.types


def test_type_size_in_bytes():
    types = (wp.float16, wp.float32, wp.float64, wp.int8, wp.uint64, wp.vec3, wp.vec3d, wp.mat33,
             wp.mat44d, wp.quath, wp.transform, wp.spatial_matrix, float, int)
    assert [T.type_size_in_bytes(t) for t in types] == [2, 4, 8, 1, 8, 12, 24, 36, 128, 8, 28,
                                                        144, 4, 4]


def test_type_size_length_scalar_type():
    assert [T.type_size(t) for t in (wp.float32, wp.vec3, wp.mat33, wp.quat, wp.transformd,
                                     wp.spatial_vector, float, int)] == [1, 3, 9, 4, 7, 6, 1, 1]
    assert [T.type_length(t) for t in (wp.vec3, wp.mat33, wp.mat22, wp.spatial_matrix, wp.quat,
                                       wp.transform)] == [3, 3, 2, 6, 4, 7]
    assert [T.type_scalar_type(t) for t in (wp.vec3h, wp.mat33d, wp.float32, wp.quatd)] == \
        [wp.float16, wp.float64, wp.float32, wp.float64]


def test_type_repr():
    types = (wp.float32, wp.vec3, wp.vec2ub, wp.mat22h, wp.mat33d, wp.quat, wp.transformd,
             wp.spatial_vector, wp.spatial_matrixd, T.vector(5, wp.float64),
             T.matrix((2, 3), wp.float32), float, int, bool)
    assert [T.type_repr(t) for t in types] == [
        "float32", "vec3f", "vec2ub", "mat22h", "mat33d", "quatf", "transformd",
        "vector(length=6, dtype=float32)", "matrix(shape=(6, 6), dtype=float64)",
        "vector(length=5, dtype=float64)", "mat23f", "float", "int", "bool"]
    assert T.type_repr(wp.array(dtype=wp.vec3)) == "array(ndim=1, dtype=vec3f)"
    assert T.type_repr(wp.zeros(4, dtype=float)) == "array(shape=(4,), dtype=float32)"
    assert T.type_repr(wp.zeros((2, 3), dtype=wp.mat22)) == "array(shape=(2, 3), dtype=mat22f)"
    assert T.type_repr(wp.array2d(dtype=wp.float64)) == "array(ndim=2, dtype=float64)"


def test_types_equal():
    assert T.types_equal(T.vector(3, wp.float32), wp.vec3)
    assert not T.types_equal(wp.vec4, wp.quat)
    assert T.types_equal(float, wp.float32) and T.types_equal(int, wp.int32)
    assert not T.types_equal(wp.vec3d, wp.vec3f)
    assert T.types_equal(wp.spatial_vector, T.vector(6, float))
    assert T.types_equal(wp.mat22, T.matrix((2, 2), wp.float32))


def test_type_predicates():
    types = (int, float, bool, wp.bool, wp.uint8, wp.float16, wp.vec3, wp.mat22, wp.quat,
             wp.transform, wp.spatial_vector)
    expected = {  # one row per predicate, over `types`, as Warp 1.19 answers
        T.type_is_int: [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
        T.type_is_float: [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0],
        T.type_is_scalar: [1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0],
        T.type_is_vector: [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1],
        T.type_is_matrix: [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
        T.type_is_quaternion: [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
        T.type_is_transformation: [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0],
        T.type_is_composite: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1],
        T.type_is_value: [1] * 11,
    }
    for pred, row in expected.items():
        assert [pred(t) for t in types] == [bool(x) for x in row], pred.__name__


def test_value_predicates():
    values = (1, 1.0, True, wp.vec3(), wp.quat(), "a", None, wp.vec3)
    assert [T.is_value(x) for x in values] == [True, True, True, True, True, False, False, False]
    assert T.is_quaternion(wp.quat()) and not T.is_quaternion(wp.quat)
    assert T.is_transformation(wp.transform()) and not T.is_transformation(wp.vec3())
    assert T.is_array(wp.zeros(1)) and T.is_array(wp.array(dtype=float))
    assert not T.is_array(np.zeros(1))


def test_numpy_conversions():
    np_types = (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16,
                np.int32, np.uint32, np.int64, np.uint64, np.bool_)
    assert [T.np_dtype_to_warp_type[np.dtype(x)] for x in np_types] == [
        wp.float16, wp.float32, wp.float64, wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32,
        wp.uint32, wp.int64, wp.uint64, wp.bool]
    assert T.np_dtype_to_warp_type[np.float32] is wp.float32
    assert [wp.dtype_to_numpy(t) for t in (wp.float16, wp.float32, wp.float64, wp.int32,
                                           wp.uint64, wp.bool)] == [
        np.float16, np.float32, np.float64, np.int32, np.uint64, np.bool_]
    assert T.warp_type_to_np_dtype[wp.int16] is np.int16
    assert wp.dtype_from_numpy(np.float32) is wp.float32
    assert wp.dtype_from_numpy(np.dtype("int16")) is wp.int16
    assert T.dtype_from_numpy is wp.dtype_from_numpy
    with pytest.raises(TypeError, match="Cannot convert <class 'numpy.complex64'> to a Warp type"):
        wp.dtype_from_numpy(np.complex64)
    with pytest.raises(TypeError, match="to a NumPy type"):
        wp.dtype_to_numpy(wp.vec3)


def test_type_lists():
    assert len(T.vector_types) == 54
    assert (wp.vec3._wp_generic_type_str_, wp.mat22._wp_generic_type_str_) == ("vec_t", "mat_t")
    assert T.int_types == (wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32,
                           wp.int64, wp.uint64)
    assert T.float_types == (wp.float16, wp.float32, wp.float64)  # Warp adds bfloat16
    assert len(T.scalar_types) == 11 and wp.bool not in T.scalar_types


def test_generic_annotations_print():
    assert str(T.vector(length=typing.Any, dtype=wp.float32)) == \
        "vector(length=Any, dtype=float32)"
    assert repr(T.matrix(shape=(typing.Any, typing.Any), dtype=typing.Any)) == \
        "matrix(shape=(Any, Any), dtype=Any)"
    generic = T.vector(typing.Any, float)
    assert T.type_is_vector(generic) and not T.is_composite(generic)
    with pytest.raises(TypeError, match="generic annotation"):
        generic(1.0, 2.0)
    assert wp.array(dtype=typing.Any).dtype is typing.Any
    assert wp.array[typing.Any].dtype is typing.Any


def test_bfloat16_is_refused():
    with pytest.raises(TypeError, match="bfloat16"):
        wp.zeros(3, dtype=wp.bfloat16)


def test_type_str_renders_annotations_as_warp():
    """``weft.typeinfo.type_str``: Warp's ``type_str`` (values checked against Warp 1.19)."""
    from weft.core.typeinfo import type_str
    cases = [(None, "None"), (typing.Any, "Any"), (3, "Literal[3]"), (wp.float32, "float32"),
             (wp.vec3f, "vec3f"), (wp.vec2ub, "vec2ub"), (wp.mat22d, "mat22d"),
             (wp.quath, "quath"), (wp.transformf, "transformf"),
             (wp.spatial_vector, "spatial_vectorf"), (wp.spatial_matrixd, "spatial_matrixd"),
             (T.vector(5, wp.float32), "Vector[float32, Literal[5]]"),
             (T.matrix((2, 3), wp.float32), "Matrix[float32, Literal[2], Literal[3]]"),
             (T.matrix((5, 6), wp.float64), "Matrix[float64, Literal[5], Literal[6]]"),
             (wp.array(dtype=wp.vec3), "Array[vec3f]"),
             ((wp.int32, wp.float32), "tuple[int32, float32]"),
             (wp.HashGridQuery, "HashGridQuery"),
             (wp.HashGridQuery[wp.float16], "HashGridQuery"),
             (wp.HashGridQuery[wp.float64], "HashGridQuery")]
    assert [type_str(t) for t, _ in cases] == [want for _, want in cases]
