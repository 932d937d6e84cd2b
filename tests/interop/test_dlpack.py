"""DLPack (``wp.to_dlpack``, ``wp.from_dlpack``, ``array.__dlpack__``): memory shared both ways
with numpy (and PyTorch and JAX where installed), every scalar dtype, vector and matrix
components as trailing dimensions, strides kept, lifetimes, and the errors."""
import gc
import weakref

import numpy as np
import pytest

import weft as wp

SCALARS = [wp.bool, wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64,
           wp.uint64, wp.float16, wp.float32, wp.float64]


@wp.kernel
def add_one(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


def test_weft_to_weft_shares_memory_and_kernels_see_it():
    a = wp.array(np.arange(5, dtype=np.float32))
    b = wp.from_dlpack(wp.to_dlpack(a))
    assert (b.ptr, b.dtype, b.shape, b.strides) == (a.ptr, a.dtype, a.shape, a.strides)
    wp.launch(add_one, dim=b.size, inputs=[b])
    np.testing.assert_array_equal(a.numpy(), np.arange(1, 6, dtype=np.float32))


@pytest.mark.parametrize("dtype", SCALARS, ids=lambda t: t.__name__)
def test_every_scalar_dtype_round_trips_through_numpy(dtype):
    values = (np.arange(6) % 2 == 1) if dtype is wp.bool else np.arange(6)
    a = wp.array(values.reshape(2, 3), dtype=dtype)
    n = np.from_dlpack(a)  # numpy asks for a versioned capsule
    assert n.dtype == wp.dtype_to_numpy(dtype) and n.shape == (2, 3)
    assert n.__array_interface__["data"][0] == a.ptr
    back = wp.from_dlpack(n)
    assert back.dtype is dtype and back.ptr == a.ptr and back.strides == a.strides
    np.testing.assert_array_equal(back.numpy(), values.reshape(2, 3).astype(n.dtype))


def test_vectors_and_matrices_are_trailing_dimensions_both_ways():
    v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3)
    s = wp.from_dlpack(wp.to_dlpack(v), dtype=float)
    assert s.shape == (4, 3) and s.strides == (12, 4) and s.ptr == v.ptr
    m = wp.from_dlpack(wp.to_dlpack(wp.zeros((5, 2, 3), dtype=wp.float64)), dtype=wp.types.matrix((2, 3), wp.float64))
    assert m.shape == (5,) and m.dtype is wp.types.matrix((2, 3), wp.float64) and m.strides == (48,)
    back = wp.from_dlpack(wp.to_dlpack(s), dtype=wp.vec3)
    assert back.dtype is wp.vec3 and back.shape == (4,)
    np.testing.assert_array_equal(back.numpy(), v.numpy())
    with pytest.raises(ValueError, match="trailing dimensions must be"):
        wp.from_dlpack(wp.to_dlpack(wp.zeros((4, 2), dtype=float)), dtype=wp.vec3)


def test_strided_sources_keep_their_strides_and_share_writes():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = base[1:, ::2]
    a = wp.from_dlpack(view)
    assert a.shape == (3, 3) and a.strides == view.strides and not a.is_contiguous
    a.numpy()[0, 1] = -5.0
    assert base[1, 2] == -5.0
    # a weft view exported keeps its strides
    w = wp.array(np.arange(10, dtype=np.int32))[::3]
    n = np.from_dlpack(w)
    assert n.strides == (12,) and list(n) == [0, 3, 6, 9]


def test_reinterpreting_same_width_types_as_warp_allows():
    b = wp.array(np.array([True, False, True]), dtype=wp.bool)
    assert list(wp.from_dlpack(wp.to_dlpack(b), dtype=wp.uint8).numpy()) == [1, 0, 1]
    i = wp.array(np.array([-1, 2], dtype=np.int32))
    assert list(wp.from_dlpack(wp.to_dlpack(i), dtype=wp.uint32).numpy()) == [2**32 - 1, 2]
    with pytest.raises(RuntimeError, match="Incompatible data types: DLPack bool8 and Warp float32"):
        wp.from_dlpack(wp.to_dlpack(b), dtype=wp.float32)
    with pytest.raises(RuntimeError, match="DLPack int32 and Warp float32"):
        wp.from_dlpack(wp.to_dlpack(i), dtype=wp.float32)


@pytest.mark.parametrize("export", ["numpy", "native"])
@pytest.mark.parametrize("versioned", [False, True])
def test_exported_memory_lives_exactly_as_long_as_its_consumers(export, versioned):
    """On the CPU numpy writes the capsule; the native exporter (compiled deleters, used for
    CUDA memory) is checked here on CPU memory."""
    make = (lambda a: wp.dlpack._export(a, versioned)) if export == "numpy" else \
        (lambda a: wp.dlpack._export_native(a, versioned))
    a = wp.array(np.arange(4, dtype=np.float32))
    data = weakref.ref(a._data)
    b = wp.from_dlpack(make(a))
    view = b.numpy()
    ptr = a.ptr
    del a, b
    gc.collect()
    assert data() is not None and view.__array_interface__["data"][0] == ptr
    np.testing.assert_array_equal(view, np.arange(4, dtype=np.float32))
    del view
    gc.collect()
    assert data() is None  # the consumer let go: weft's memory is freed
    # a capsule never consumed releases its tensor when it goes, also while an exception passes
    a = wp.zeros(3)
    data = weakref.ref(a._data)
    capsule = make(a)
    del a
    gc.collect()
    assert data() is not None
    with pytest.raises(KeyError):
        {}[capsule]  # noqa: B018 - the capsule is freed while KeyError propagates
    del capsule
    gc.collect()
    assert data() is None


def test_errors_are_clear():
    capsule = wp.to_dlpack(wp.zeros(3))
    wp.from_dlpack(capsule)
    with pytest.raises(ValueError, match="already consumed"):
        wp.from_dlpack(capsule)

    class OtherDevice:
        def __dlpack_device__(self):
            return (123, 7)

        def __dlpack__(self, stream=None):
            raise AssertionError("not called")

    with pytest.raises(TypeError, match="device_type=123, device_id=7"):
        wp.from_dlpack(OtherDevice())

    class NotACapsule:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            return object()

    with pytest.raises(TypeError, match="Expected a valid DLPack capsule, got object"):
        wp.from_dlpack(NotACapsule())
    with pytest.raises(TypeError, match="DLPack capsule or an object with __dlpack__"):
        wp.from_dlpack([1, 2])
    with pytest.raises(TypeError, match="None or -1 for CPU"):
        wp.zeros(2).__dlpack__(stream=0)

    @wp.struct
    class S:
        x: float

    with pytest.raises(TypeError, match="struct"):
        wp.to_dlpack(wp.zeros(2, dtype=S))
    with pytest.raises(TypeError, match="complex64"):
        wp.from_dlpack(np.zeros(2, np.complex64))


def test_copy_true_exports_a_copy():
    a = wp.array(np.arange(3, dtype=np.float32))
    n = np.from_dlpack(a, copy=True)
    n[0] = 9.0
    assert a.numpy()[0] == 0.0


def test_torch_shares_memory_both_ways():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    a = wp.from_dlpack(t)
    assert a.ptr == t.data_ptr() and a.dtype is wp.float64 and a.shape == (2, 3)
    a.numpy()[1, 2] = 42.0
    assert t[1, 2].item() == 42.0
    back = torch.from_dlpack(a)
    back[0, 0] = -1.0
    assert t[0, 0].item() == -1.0 and back.data_ptr() == t.data_ptr()
    v = torch.utils.dlpack.from_dlpack(wp.to_dlpack(wp.zeros(4, dtype=wp.vec2)))
    assert tuple(v.shape) == (4, 2)


def test_jax_shares_memory_both_ways():
    jax = pytest.importorskip("jax")
    x = jax.numpy.arange(4.0, dtype=jax.numpy.float32)
    a = wp.from_dlpack(x)
    assert a.ptr == x.unsafe_buffer_pointer() and a.shape == (4,)
    w = wp.array(np.arange(3, dtype=np.float32))
    y = jax.dlpack.from_dlpack(w)
    assert y.unsafe_buffer_pointer() == w.ptr
    np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0])


@pytest.mark.cudasim
def test_cuda_arrays_cross_through_the_native_exporter():
    """CUDA memory (Numba's CUDA simulator in CI): exported with the compiled deleters, imported
    as a device array over the same memory, and ``wp.array(ptr=...)`` on CUDA."""
    if not wp.is_cuda_available():
        pytest.skip("no CUDA device and no CUDA simulator")
    a = wp.array(np.arange(4, dtype=np.float32), device="cuda")
    assert a.__dlpack_device__() == (2, 0)
    b = wp.from_dlpack(wp.to_dlpack(a))
    assert b.device.is_cuda and b.ptr == a.ptr
    np.testing.assert_array_equal(b.numpy(), [0.0, 1.0, 2.0, 3.0])
    c = wp.array(ptr=a.ptr, shape=(2, 2), dtype=float, device="cuda")
    np.testing.assert_array_equal(c.numpy(), [[0.0, 1.0], [2.0, 3.0]])
    with pytest.raises(TypeError, match="integer >= -1"):
        a.__dlpack__(stream=-2)


def test_read_only_memory_wrapped_without_copy_is_written_by_kernels_and_exported():
    """``wp.array(x, copy=False)`` over memory numpy holds read-only (``np.asarray`` of a JAX
    array): kernels write it and it exports through DLPack, as under Warp."""
    base = np.arange(4, dtype=np.float32)
    frozen = base.view()
    frozen.flags.writeable = False
    a = wp.array(frozen, dtype=float, copy=False)
    assert a.ptr == base.__array_interface__["data"][0]
    wp.launch(add_one, dim=4, inputs=[a])
    np.testing.assert_array_equal(base, [1.0, 2.0, 3.0, 4.0])
    n = np.from_dlpack(a)
    assert n.__array_interface__["data"][0] == a.ptr
