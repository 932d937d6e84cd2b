"""wp.array at Python scope with Warp 1.19's semantics: strides, views, slicing, copies.
Expected values come from running the same statements under Warp 1.19."""
import numpy as np
import pytest

import weft as wp


@pytest.fixture
def b():
    # float64 data converted to a float32 array of shape (4, 6)
    return wp.array(np.arange(24, dtype=np.float64).reshape(4, 6), dtype=float)


def test_strides_capacity_contiguity(b):
    a = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3)
    assert (a.shape, a.strides, a.is_contiguous, a.capacity, a.size, a.ndim) == \
        ((4,), (12,), True, 48, 4, 1)
    assert b.dtype is wp.float32 and b.strides == (24, 4) and b.capacity == 96
    assert a.ptr == a.numpy().__array_interface__["data"][0]
    assert wp.zeros((0, 3)).strides == (12, 4)
    assert wp.array([1.0, 2.0], dtype=wp.float16).strides == (2,)


def test_slices_are_views(b):
    s = b[1:3]
    assert (s.shape, s.strides, s.is_contiguous, s.capacity) == ((2, 6), (24, 4), True, 48)
    assert s.numpy().tolist() == [[6, 7, 8, 9, 10, 11], [12, 13, 14, 15, 16, 17]]
    c = b[:, 2]
    assert (c.shape, c.strides, c.is_contiguous, c.capacity) == ((4,), (24,), False, 96)
    assert c.numpy().tolist() == [2, 8, 14, 20]
    st = b[::2, 1::2]
    assert (st.shape, st.strides, st.is_contiguous, st.capacity) == ((2, 3), (48, 8), False, 96)
    assert st.numpy().tolist() == [[1, 3, 5], [13, 15, 17]]
    r = b[2]
    assert (r.shape, r.strides) == ((6,), (4,))
    assert b[-1, :].numpy().tolist() == [18, 19, 20, 21, 22, 23]
    assert wp.zeros(3)[1:1].shape == (0,)
    c.fill_(-1.0)  # writes through to the parent
    assert b.numpy()[:, 2].tolist() == [-1, -1, -1, -1]


def test_indexing_errors(b):
    with pytest.raises(RuntimeError, match="Item indexing is not supported on wp.array objects"):
        wp.zeros(3)[0]
    with pytest.raises(RuntimeError, match="Item indexing is not supported"):
        b[1, 2]
    with pytest.raises(RuntimeError, match=r"Invalid indexing in slice: 3:3:1"):
        wp.zeros(3)[3:]
    with pytest.raises(RuntimeError, match=r"Invalid indexing in slice: 0:5:1"):
        wp.zeros(3)[0:5]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        wp.zeros(3)[::0]
    with pytest.raises(RuntimeError, match="Invalid indexing in slice: -5"):
        b[-5]


def test_view_gradients_are_views_of_the_gradient():
    a = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, requires_grad=True)
    ga = a[1:3]
    assert ga.grad.shape == (2,) and ga.grad.strides == (12,)
    ga.grad.fill_(wp.vec3(1.0, 2.0, 3.0))
    assert a.grad.numpy().tolist() == [[0, 0, 0], [1, 2, 3], [1, 2, 3], [0, 0, 0]]


def test_transpose_reshape_flatten_contiguous(b):
    t = b.transpose()
    assert (t.shape, t.strides, t.is_contiguous) == ((6, 4), (4, 24), False)
    assert t.numpy()[0].tolist() == [0, 6, 12, 18]
    r = b.reshape((3, -1))
    assert (r.shape, r.strides) == ((3, 8), (32, 4))
    st = b[::2, 1::2]
    with pytest.raises(RuntimeError, match="Reshaping non-contiguous arrays is unsupported."):
        st.reshape(-1)
    with pytest.raises(RuntimeError, match="Flattening non-contiguous arrays is unsupported."):
        st.flatten()
    with pytest.raises(RuntimeError, match=r"cannot reshape array of shape \(4, 6\) \(size 24\) "
                       r"into shape \(5, 5\) \(size 25\)"):
        b.reshape((5, 5))
    with pytest.raises(RuntimeError, match="more than one index is -1"):
        b.reshape((-1, -1))
    assert st.contiguous().is_contiguous
    assert st.contiguous().numpy().tolist() == [[1, 3, 5], [13, 15, 17]]
    assert b.contiguous() is b
    assert b.flatten().shape == (24,)


def test_dtype_views():
    assert wp.ones(2, dtype=wp.vec4).view(wp.quat).dtype is wp.quatf
    assert wp.ones(2, dtype=wp.vec4).view(float).shape == (2, 4)
    assert wp.ones((5, 4), dtype=float).view(wp.vec4).shape == (5,)
    assert wp.ones((4,), dtype=float).view(wp.vec4).shape == (1,)
    assert wp.array([1, -1], dtype=wp.int32).view(wp.uint32).numpy().tolist() == [1, 4294967295]
    assert wp.ones(2, dtype=wp.vec4ub).view(wp.uint32).numpy().tolist() == [16843009, 16843009]
    with pytest.raises(TypeError, match="source scalar dtype float32 has size 4 bytes, but "
                       "target dtype has size 8 bytes"):
        wp.ones(2, dtype=wp.vec3).view(wp.float64)
    with pytest.raises(RuntimeError, match=r"The shape of the source array \(5, 3\) is not "
                       "compatible with the requested data type vec4f"):
        wp.ones((5, 3), dtype=float).view(wp.vec4)


def test_fill_assign_list_numpy():
    f = wp.zeros(3, dtype=wp.mat22)
    f.fill_([[1, 2], [3, 4]])
    assert f.numpy()[2].tolist() == [[1, 2], [3, 4]]
    g = wp.zeros(2, dtype=wp.vec3)
    g.fill_(2.0)
    assert g.numpy().tolist() == [[2, 2, 2], [2, 2, 2]]
    with pytest.raises(ValueError, match="Failed to convert the value to the array data type"):
        wp.zeros(2, dtype=wp.vec3).fill_([1, 2])
    with pytest.raises(ValueError, match="Failed to convert the value to the array data type"):
        wp.zeros(2, dtype=float).fill_("x")
    h = wp.zeros(4, dtype=float)
    h.assign([1, 2, 3, 4])
    assert h.numpy().tolist() == [1, 2, 3, 4]
    assert wp.array([1.5, 2.5], dtype=float).list() == [1.5, 2.5]
    assert wp.array([[1, 2], [3, 4]], dtype=wp.int32).list() == [1, 2, 3, 4]
    lv = wp.array([[1, 2, 3]], dtype=wp.vec3).list()
    assert type(lv[0]) is wp.vec3f and lv[0].tolist() == [1, 2, 3]


def test_construction_rules():
    assert wp.array([1, 2]).dtype is wp.int64
    assert wp.array([1.0]).dtype is wp.float64
    assert wp.array([True]).dtype is wp.bool
    assert wp.array(np.zeros((4, 3, 1)), dtype=wp.vec3).shape == (4,)
    assert wp.array(np.zeros((2, 6)), dtype=wp.vec3).shape == (2, 2)
    assert wp.array(np.zeros(9), dtype=wp.mat33).shape == (1,)
    assert wp.array(np.zeros(6), dtype=wp.vec3).shape == (2,)
    assert wp.array([1, 2, 3, 4, 5, 6], dtype=float, shape=(2, 3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="Data must be a sequence or array, got scalar 1.0"):
        wp.array(1.0, dtype=float)
    with pytest.raises(ValueError, match="Array shapes must be non-negative, got -1 in dimension 0"):
        wp.zeros(-1)
    data = np.zeros(3, np.float32)
    alias = wp.array(data, dtype=float, copy=False)
    data[1] = 5.0
    assert alias.numpy()[1] == 5.0


def test_from_numpy_and_full_infer_dtypes():
    # Warp 1.19: 2-d data -> vector of its last dimension, 3-d -> matrix, else scalar
    assert wp.from_numpy(np.zeros((5, 3), np.float32)).dtype is wp.vec3f
    assert wp.from_numpy(np.zeros((5, 7))).dtype is wp.types.vector(7, wp.float64)
    assert wp.from_numpy(np.zeros((5, 2, 3), np.float32)).dtype is wp.types.matrix((2, 3),
                                                                                   wp.float32)
    assert wp.from_numpy(np.zeros(5, np.int16)).dtype is wp.int16
    assert wp.from_numpy(np.zeros((2, 2, 2, 2))).dtype is wp.float64
    values = (1, 1.0, True, wp.vec3(), [1.0, 2.0], [1, 2], [[1.0, 0.0], [0.0, 1.0]])
    assert [wp.full(2, v).dtype for v in values] == [
        wp.int32, wp.float32, wp.bool, wp.vec3f, wp.vec2d, wp.types.vector(2, wp.int64),
        wp.mat22d]


def test_annotations():
    from weft.core.types import ArrayType
    assert wp.array1d[float] == ArrayType(wp.float32, 1) == wp.array(dtype=float)._weft_array_type_
    assert wp.array2d[wp.vec3] == wp.array(dtype=wp.vec3, ndim=2)._weft_array_type_
    assert wp.array3d[int] == ArrayType(wp.int32, 3)
    assert wp.array4d[wp.float64] == ArrayType(wp.float64, 4)
    assert wp.array[float, 2] == ArrayType(wp.float32, 2)
    assert wp.array1d(dtype=float).ndim == 1 and wp.array3d(dtype=float).ndim == 3
    a2 = wp.array2d(np.zeros((2, 2)), dtype=float)
    assert type(a2) is wp.array and a2.shape == (2, 2)
    ann = wp.array(dtype=float)
    assert repr(ann) == "array(ndim=1, dtype=float32)" and ann.shape == (0,) and ann.ptr is None
    assert repr(wp.zeros(3)) == "array(shape=(3,), dtype=float32)"
    assert str(wp.array([1.0, 2.0], dtype=float)) == "[1. 2.]"


def test_strides_argument_and_ptr():
    s = wp.array(shape=(2, 3), dtype=float, strides=(16, 4))
    assert (s.shape, s.strides, s.is_contiguous) == ((2, 3), (16, 4), False)
    with pytest.raises(ValueError, match="Invalid number of strides, expected 2 strides, got 1"):
        wp.array(shape=(2, 3), dtype=float, strides=(4,))
    with pytest.raises(NotImplementedError, match="Negative strides"):
        wp.array(shape=(2, 3), dtype=float, strides=(-12, 4))
    host = np.array([1, 2, 3], np.float32)
    p = wp.array(ptr=host.ctypes.data, dtype=float, shape=(3,), device="cpu")
    assert p.numpy().tolist() == [1, 2, 3]


def test_grad_properties():
    z = wp.zeros(3, dtype=float, requires_grad=True)
    z.requires_grad = False
    assert z.grad is None
    with pytest.raises(ValueError, match="retain_grad=True requires requires_grad=True"):
        wp.zeros(3, retain_grad=True)
    with pytest.raises(ValueError, match=r"expected shape \(3,\), got \(4,\)"):
        wp.zeros(3).grad = wp.zeros(4)
    w = wp.zeros(3)
    w.grad = wp.ones(3)
    assert w.requires_grad and w.grad.numpy().tolist() == [1, 1, 1]


def test_copy_rules():
    d = wp.zeros(6, dtype=float)
    wp.copy(d, wp.array(np.arange(6.0), dtype=float), dest_offset=1, src_offset=2, count=3)
    assert d.numpy().tolist() == [0, 2, 3, 4, 0, 0]
    d2 = wp.zeros((2, 3), dtype=float)
    wp.copy(d2, wp.array(np.arange(6.0), dtype=float))  # contiguous: copied in memory order
    assert d2.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    u = wp.zeros(2, dtype=wp.uint32)
    wp.copy(u, wp.array([-1, 2], dtype=wp.int32))  # the bytes, as Warp
    assert u.numpy().tolist() == [4294967295, 2]
    nc = wp.zeros(6, dtype=float)[::2]
    wp.copy(nc, wp.array([7.0, 8.0, 9.0], dtype=float))
    assert nc.numpy().tolist() == [7, 8, 9]
    with pytest.raises(RuntimeError, match="destination dtype=float64, source dtype=float32"):
        wp.copy(wp.zeros(3, dtype=wp.float64), wp.zeros(3, dtype=float))
    with pytest.raises(RuntimeError, match=r"Trying to copy source buffer with size \(12\) to "
                       r"offset \(0\) is larger than destination size \(8\)"):
        wp.copy(wp.zeros(2), wp.zeros(3))
    with pytest.raises(RuntimeError, match="Source offset must be non-negative, got -1"):
        wp.copy(wp.zeros(2), wp.zeros(3), src_offset=-1)
    with pytest.raises(RuntimeError, match="must be integers"):
        wp.copy(wp.zeros(2), wp.zeros(3), count=1.5)
    with pytest.raises(RuntimeError, match="only supported for 1-D non-contiguous arrays"):
        wp.copy(wp.zeros((4, 4))[::2], wp.zeros((2, 4)), count=2)


def test_copy_gradients_and_tape():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(y, x)
    y.grad.assign([1.0, 2.0, 3.0])
    tape.backward()
    # the adjoint adds dest's gradient to src's and zeroes it (Warp 1.19)
    assert x.grad.numpy().tolist() == [1, 2, 3] and y.grad.numpy().tolist() == [0, 0, 0]
    x.grad.fill_(5.0)
    y2 = wp.zeros(3, dtype=float, requires_grad=True)
    wp.copy(y2, x)  # both have gradients: the gradient is copied too
    assert y2.grad.numpy().tolist() == [5, 5, 5]
    cl = wp.clone(x)
    assert cl.requires_grad and cl.grad.numpy().tolist() == [5, 5, 5]
    assert x.to("cpu") is x


def test_views_launch_in_kernels():
    @wp.kernel
    def double(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 2.0 * a[i]

    base = wp.array(np.arange(8.0), dtype=float)
    view = base[1::2]
    wp.launch(double, dim=view.shape[0], inputs=[view])
    assert base.numpy().tolist() == [0, 2, 2, 6, 4, 10, 6, 14]


def test_clone_is_recorded_and_copies_gradients():
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        y = wp.clone(x)
    tape.backward(grads={y: wp.array([1.0, 1.0, 1.0], dtype=float)})
    assert x.grad.numpy().tolist() == [1, 1, 1] and y.grad.numpy().tolist() == [0, 0, 0]
    g = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    g.grad.fill_(7.0)
    assert wp.clone(g, requires_grad=True).grad.numpy().tolist() == [7, 7]  # Warp 1.19
    assert wp.clone(g, requires_grad=False).grad is None


def test_empty_arrays_and_aliasing():
    e = wp.zeros((1, 0), dtype=wp.vec2f)
    assert e.ptr is None and wp.zeros(0).ptr is None
    assert e.__array_interface__["strides"] == (0, 8, 4) and e.__array_interface__["data"][0]
    assert np.asarray(e).shape == (1, 0, 2)
    an = np.ones(4, np.int32)
    w = wp.array(an, dtype=int, copy=False)
    assert w._ref is an and w.ptr == an.ctypes.data
    assert wp.types.strides_from_shape((2, 3), wp.vec3) == (36, 12)
    assert wp.types.non_atomic_types == (wp.int8, wp.uint8, wp.int16, wp.uint16)


@wp.kernel
def _inc_vectors(a: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i] = a[i] + wp.vec3(1.0, 2.0, 3.0)


@wp.kernel
def _square(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * a[i]


def test_numpy_arrays_passed_to_a_launch_while_a_tape_lives():
    # a live tape watches what launches write; numpy data written in place is watched too
    # (it failed with AttributeError when any tape was alive, recording or not)
    x = wp.array(np.arange(3, dtype=np.float32), requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_square, 3, inputs=[x], outputs=[y])
    v = np.zeros((2, 3), np.float32)
    wp.launch(_inc_vectors, 2, inputs=[v])
    np.testing.assert_array_equal(v, [[1, 2, 3], [1, 2, 3]])
    o = np.zeros(3, np.float32)
    with tape:  # recorded with numpy data: it has no gradient, the rest does
        wp.launch(_square, 3, inputs=[np.full(3, 2.0, np.float32)], outputs=[o])
    np.testing.assert_array_equal(o, [4, 4, 4])
    # numpy data over the memory the tape reads again is protected as the array itself:
    # refused in "error" mode, snapshotted by default (the gradient of the old values)
    try:
        wp.config.overwrite_gradients = "error"
        with pytest.raises(wp.LaunchError, match="overwritten by a launch of kernel '_square'"):
            wp.launch(_square, 3, inputs=[np.ones(3, np.float32)], outputs=[x.numpy()])
    finally:
        wp.config.overwrite_gradients = "snapshot"
    np.testing.assert_array_equal(x.numpy(), [0.0, 1.0, 2.0])  # nothing written
    wp.launch(_square, 3, inputs=[np.full(3, 3.0, np.float32)], outputs=[x.numpy()])
    np.testing.assert_array_equal(x.numpy(), [9.0, 9.0, 9.0])
    tape.backward(grads={y: wp.array(np.ones(3, np.float32))})
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 4.0])  # 2 x at the old x


def test_numpy_arrays_passed_to_a_launch_are_worked_on_in_place():
    v = np.zeros((4, 3), np.float32)
    wp.launch(_inc_vectors, 4, inputs=[v])           # as Warp: the kernel writes into v
    np.testing.assert_array_equal(v, np.tile([1.0, 2.0, 3.0], (4, 1)))
    with pytest.raises(wp.LaunchError, match="NumPy array of float64 with shape"):
        wp.launch(_inc_vectors, 4, inputs=[np.zeros((4, 3))])
