import numpy as np
import pytest

import weft as wp


def test_vec3_array_views_n_by_3_numpy_data():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = wp.array(data, dtype=wp.vec3, copy=False)
    assert a.shape == (4,) and a.ndim == 1 and a.size == 4 and a.dtype is wp.vec3
    assert a.numpy().shape == (4, 3)
    data[1, 2] = 42.0  # zero-copy: the array sees the change
    assert a.numpy()[1, 2] == 42.0


def test_float64_data_converted_to_float32_vec3():
    data = np.random.default_rng(0).random((5, 3))
    a = wp.array(data, dtype=wp.vec3)
    assert a.numpy().dtype == np.float32
    np.testing.assert_allclose(a.numpy(), data.astype(np.float32))


def test_list_inference_and_scalar_types():
    # numpy's inference, as Warp 1.19 (measured: docs/warp-semantics.md)
    assert wp.array([1.0, 2.0]).dtype is wp.float64
    assert wp.array([1, 2, 3]).dtype is wp.int64
    assert wp.array([1, 2.5]).dtype is wp.float64
    assert wp.array([True, False]).dtype is wp.bool
    assert wp.array(np.zeros(3, np.float64)).dtype is wp.float64
    m = wp.array(np.zeros((2, 3, 3)), dtype=wp.mat33)
    assert m.shape == (2,) and m.numpy().shape == (2, 3, 3)


def test_constructors():
    z = wp.zeros((2, 3), dtype=wp.float64, requires_grad=True)
    assert z.shape == (2, 3) and z.grad.shape == (2, 3) and not z.numpy().any()
    o = wp.ones(4, dtype=wp.vec2)
    np.testing.assert_array_equal(o.numpy(), np.ones((4, 2), np.float32))
    f = wp.full(3, 2.5, dtype=float)
    np.testing.assert_array_equal(f.numpy(), [2.5, 2.5, 2.5])
    fv = wp.full(2, wp.vec3(1.0, 2.0, 3.0), dtype=wp.vec3)
    np.testing.assert_array_equal(fv.numpy(), [[1, 2, 3], [1, 2, 3]])
    e = wp.empty(3, dtype=wp.int32)
    assert e.shape == (3,) and e.dtype is wp.int32
    for like in (wp.zeros_like(f), wp.ones_like(f), wp.full_like(f, 7.0), wp.empty_like(f)):
        assert like.shape == f.shape and like.dtype is f.dtype
    np.testing.assert_array_equal(wp.full_like(f, 7.0).numpy(), [7, 7, 7])


def test_clone_copy_assign_fill_zero_reshape():
    a = wp.array(np.arange(6.0, dtype=np.float32))
    b = wp.clone(a)
    b.numpy()[0] = 100
    assert a.numpy()[0] == 0  # clone copies
    g = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    g.grad.fill_(7.0)
    gc = wp.clone(g)  # as Warp: requires_grad kept and the gradient values copied
    assert gc.requires_grad and gc.grad is not g.grad
    np.testing.assert_array_equal(gc.grad.numpy(), [7.0, 7.0])
    # Warp 1.19 copies the gradient whenever both arrays have one (clone is empty + wp.copy)
    np.testing.assert_array_equal(wp.clone(g, requires_grad=True).grad.numpy(), [7.0, 7.0])
    assert wp.clone(g, requires_grad=False).grad is None
    c = wp.zeros(6, dtype=float)
    wp.copy(c, a)
    np.testing.assert_array_equal(c.numpy(), np.arange(6.0))
    d = wp.zeros(6, dtype=float)
    wp.copy(d, a, dest_offset=1, src_offset=2, count=3)
    np.testing.assert_array_equal(d.numpy(), [0, 2, 3, 4, 0, 0])
    c.assign(np.ones(6))
    np.testing.assert_array_equal(c.numpy(), np.ones(6))
    c.fill_(3.0)
    np.testing.assert_array_equal(c.numpy(), np.full(6, 3.0))
    c.zero_()
    assert not c.numpy().any()
    r = a.reshape((2, 3))
    assert r.shape == (2, 3) and r.numpy()[1, 2] == 5.0


def test_requires_grad_and_to_cpu():
    a = wp.zeros(3, dtype=float)
    assert a.grad is None and not a.requires_grad
    a.requires_grad = True
    assert a.grad is not None and a.grad.shape == (3,)
    assert a.to("cpu") is a
    assert str(a.device) == "cpu"
    assert a.__array_interface__["shape"] == (3,)


def test_annotation_forms():
    from weft.core.types import ArrayType
    assert wp.array(dtype=wp.vec3)._weft_array_type_ == ArrayType(wp.vec3, 1)
    assert wp.array2d(dtype=float)._weft_array_type_ == ArrayType(wp.float32, 2)
    assert wp.array3d(dtype=float)._weft_array_type_ == ArrayType(wp.float32, 3)
    assert wp.array4d(dtype=float)._weft_array_type_ == ArrayType(wp.float32, 4)
    assert wp.array[wp.float64] == ArrayType(wp.float64, 1)
    assert wp.array(dtype=float, ndim=2)._weft_array_type_ == ArrayType(wp.float32, 2)


def test_bad_vector_data_shape():
    # Warp 1.19 raises RuntimeError ("The inner dimensions of the input data are not compatible
    # with the requested vector type vec3f: ...")
    with pytest.raises(RuntimeError, match="inner dimensions"):
        wp.array(np.zeros((4, 2)), dtype=wp.vec3)


def test_value_types_at_python_scope():
    v = wp.vec3(1.0, 2.0, 3.0)
    np.testing.assert_array_equal(v * 2.0, [2, 4, 6])
    assert v[1] == 2.0 and len(v) == 3
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    assert m.shape == (2, 2) and m[1, 0] == 3.0
    assert wp.float32(1.5) == np.float32(1.5)
    assert wp.types.vector(3, wp.float64) is wp.vec3d
    assert wp.types.matrix((3, 3), wp.float32) is wp.mat33


def test_an_annotation_carries_a_shape_set_on_it_and_an_array_refuses_one():
    """MuJoCo Warp attaches symbolic dimensions to its annotations (``arr.shape = ("*", 3)``);
    the shape of an array with memory is its memory's."""
    ann = wp.array(ndim=2, dtype=float)
    assert ann.shape == (0,)
    ann.shape = ("nworld", 3)
    assert ann.shape == ("nworld", 3) and ann.is_annotation
    a = wp.zeros(3)
    with pytest.raises(AttributeError, match="cannot be set"):
        a.shape = (1, 3)


@pytest.mark.cudasim
def test_views_of_cuda_arrays_share_device_memory():
    """array.view() on CUDA (Numba's CUDA simulator in CI): vectors as scalars, back, and a
    same-size reinterpretation, all over the same device memory."""
    if not wp.is_cuda_available():
        pytest.skip("no CUDA device and no CUDA simulator")
    a = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device="cuda")
    s = a.view(float)
    assert s.shape == (4, 3) and s.strides == (12, 4) and s.ptr == a.ptr and s.device.is_cuda
    np.testing.assert_array_equal(s.view(wp.vec3).numpy(), a.numpy())
    i = wp.array(np.array([-1, 2], dtype=np.int32), device="cuda").view(wp.uint32)
    assert i.numpy().tolist() == [2**32 - 1, 2]
