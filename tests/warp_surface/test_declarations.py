"""wp.overload, wp.func_native, wp.Int/Float/Scalar and empty structs at Python scope (Warp
1.19's messages)."""
from typing import Any

import numpy as np
import pytest

import weft as wp
from weft.runtime.declarations import declared_overloads


@wp.kernel
def generic(a: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    a[i] = a[i] * s


@wp.kernel
def concrete(a: wp.array(dtype=float)):
    i = wp.tid()


def test_overload_call_forms():
    assert wp.overload(generic, {"a": wp.array(dtype=wp.float64), "s": wp.float64}) is generic
    assert wp.overload(generic, [wp.array(dtype=wp.float32), wp.float32]) is generic
    declared = declared_overloads(generic)
    assert declared[-1][1] is wp.float32 and declared[-2][1] is wp.float64
    with pytest.raises(RuntimeError, match="Only generic kernels can be overloaded.  Kernel "
                       "concrete is not generic"):
        wp.overload(concrete, [wp.array(dtype=float)])
    with pytest.raises(RuntimeError, match="Invalid argument name 'bad' in overload of kernel "
                       "generic"):
        wp.overload(generic, {"bad": float})
    with pytest.raises(TypeError, match="Kernel overload types must be given in a list or dict"):
        wp.overload(generic, 3)


@wp.overload
def generic(a: wp.array(dtype=wp.int32), s: wp.int32):  # noqa: F811 - Warp's overload stub
    ...


def test_overload_stub_returns_the_generic_kernel():
    kernel = globals()["generic"]  # the module-level stub above rebound the name to the kernel
    assert isinstance(kernel, wp.Kernel) and kernel.key == "generic"
    assert declared_overloads(kernel)[0][1] is wp.int32

    def illegal_body():
        @wp.overload
        def generic(a: wp.array(dtype=wp.int32), s: wp.int32):
            x = 1  # noqa: F841

    def return_annotation():
        @wp.overload
        def generic(a: wp.array(dtype=wp.int32), s: wp.int32) -> int:
            ...

    def no_such_kernel():
        @wp.overload
        def nothere(a: wp.array(dtype=wp.int32)):
            ...

    with pytest.raises(RuntimeError, match="Illegal statement in kernel overload definition"):
        illegal_body()
    with pytest.raises(TypeError, match="Return annotations are not allowed on @wp.overload "
                       "stubs"):
        return_annotation()
    with pytest.raises(RuntimeError, match="Failed to find a kernel named 'nothere'"):
        no_such_kernel()


@wp.func_native("return a + 2.0;", adj_snippet="adj_a += adj_ret;")
def add_two_native(a: float) -> float:
    ...


def test_func_native_is_declared_not_run():
    assert add_two_native.snippet == "return a + 2.0;"
    with pytest.raises(NotImplementedError, match="native"):
        add_two_native(1.0)

    @wp.kernel
    def uses_native(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = add_two_native(a[i])

    with pytest.raises(wp.KernelError, match=r"wp.func_native C\+\+/CUDA snippet \('return a "
                       r"\+ 2.0;'.*weft supplies: WP_TILE_SYNC"):
        wp.launch(uses_native, dim=1, inputs=[wp.zeros(1)])


@wp.func_native(snippet="WP_TILE_SYNC();")
def tile_barrier():
    pass


@wp.kernel
def twice_around_a_barrier(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0
    tile_barrier()
    a[i] = a[i] * 2.0


def test_the_tile_barrier_snippet_is_supplied():
    """MuJoCo Warp's ``WP_TILE_SYNC();`` snippet: the tile barrier, nothing to wait for on the
    CPU (a block is one thread there); refused for CUDA (no cooperative blocks there yet)."""
    a = wp.zeros(3)
    wp.launch(twice_around_a_barrier, dim=3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0, 2.0])
    assert wp.get_suggested_block_size(twice_around_a_barrier) == (1, 1)
    assert wp.is_conditional_graph_supported() is False


def test_generic_scalar_typevars():
    assert wp.Int.__constraints__[0] is int and wp.int64 in wp.Int.__constraints__
    assert wp.float16 in wp.Float.__constraints__ and wp.int8 in wp.Scalar.__constraints__
    assert str(wp.types.vector(3, wp.Int)) == "vector(length=3, dtype=Int)"
    assert str(wp.types.matrix((2, 2), wp.Float)) == "matrix(shape=(2, 2), dtype=Float)"


@wp.struct
class Empty:
    pass


@wp.struct
class Nest:
    a: Empty
    z: int


def test_empty_struct():
    @wp.kernel
    def k(e: Empty, n: Nest, out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = n.z

    out = wp.zeros(2, dtype=int)
    n = Nest()
    n.z = 7
    wp.launch(k, dim=2, inputs=[Empty(), n, out])
    assert out.numpy().tolist() == [7, 7]


def test_struct_class_and_inheritance():
    assert Nest.cls is Nest and isinstance(Nest(), Nest.cls)
    with pytest.raises(RuntimeError, match="Warp structs must be defined as base classes$"):
        @wp.struct
        class Child(Nest):
            y: int


def test_overload_stub_finds_a_local_kernel():
    @wp.kernel
    def local_generic(x: Any):
        pass

    @wp.overload
    def local_generic(x: wp.float64):  # noqa: F811
        ...

    assert isinstance(local_generic, wp.Kernel)
    assert declared_overloads(local_generic) == [[wp.float64]]


@wp.kernel
def stub_named_after_a_module_kernel(x: Any):
    return


def stub_named_after_a_module_kernel(x: float): ...  # noqa: F811 - replaces the module name


def test_overload_stub_finds_the_kernel_its_module_declared():
    # the module's name now refers to the plain stub (as in Warp's test_generics): the kernel
    # is found among those the module declared
    k = wp.overload(stub_named_after_a_module_kernel)
    assert isinstance(k, wp.Kernel) and k.overloads == [[float]]


def test_kernel_name_is_its_key():
    def scaled(a: wp.array(dtype=float)):
        a[wp.tid()] = 2.0

    k = wp.kernel(name="custom_scale")(scaled)
    assert k.key == "custom_scale"
    a = wp.zeros(2, dtype=float)
    wp.launch(k, 2, inputs=[a])
    assert list(a.numpy()) == [2.0, 2.0]
    with pytest.raises(ValueError, match="valid C\\+\\+ identifier"):
        wp.kernel(name="1invalid")(scaled)
    wp.kernel(name="scaled_a")(scaled)
    wp.kernel(name="scaled_b")(scaled)
    with pytest.raises(RuntimeError, match="Ambiguous kernel lookup"):
        from weft.runtime.declarations import _overload_stub
        _overload_stub(scaled, None)
