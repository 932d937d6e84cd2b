"""PyTorch interop (weft.integrations.torch): zero-copy conversions both ways with memory
shared, every scalar dtype, vector and matrix dtypes, strided and expanded views, gradients
shared, torch.autograd.Function patterns (Warp's, and weft.torch.function with weft's adjoint
and tangent kernels) checked against independent values, torch's gradcheck and float64 central
differences; bad input raising TypeError/ValueError. Kernels are few and small."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

# torch.func's first use scripts a helper with the deprecated torch.jit.script (torch's own)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

import weft as wp  # noqa: E402
import weft.torch as wt  # noqa: E402


@wp.kernel
def scale_add(x: wp.array(dtype=wp.float64), s: float, y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i] * wp.float64(s) + wp.float64(1.0)


@wp.kernel
def vec_kernel(v: wp.array(dtype=wp.vec3d), w: wp.array(dtype=wp.float64),
               r: wp.array(dtype=wp.float64), u: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    r[i] = wp.dot(v[i], v[i]) * w[i]
    u[i] = v[i] * wp.exp(w[i])


@wp.kernel
def inc2d(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = a[i, j] + float(i * 10 + j)


@wp.kernel
def mat_inc(a: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    a[i] = a[i] + wp.mat22(1.0, 2.0, 3.0, 4.0)


SCALARS = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _ref_scale_add(x, s):
    return np.sin(x) * x * s + 1.0


# ----------------------------------------------------------------------------- conversions

@pytest.mark.parametrize("name", SCALARS)
def test_scalar_dtypes_round_trip_share_memory(name):
    tdt = getattr(torch, name)
    t = (torch.arange(6) % 2).to(tdt)
    a = wp.from_torch(t)
    assert a.dtype is getattr(wp, name) and a.shape == (6,)
    assert a.ptr == t.data_ptr()
    back = wp.to_torch(a)
    assert back.dtype == tdt and back.data_ptr() == t.data_ptr()
    # writes on one side show on the other, both ways
    a.numpy()[2] = 1
    assert bool(t[2]) is True
    t[3] = 0
    assert not a.numpy()[3]
    assert wp.dtype_from_torch(tdt) is getattr(wp, name)
    assert wp.dtype_to_torch(getattr(wp, name)) == tdt


@pytest.mark.parametrize("wname,tname", [("uint16", "int16"), ("uint32", "int32"),
                                         ("uint64", "int64"), ("int8", "uint8"),
                                         ("uint8", "bool")])
def test_same_width_integer_aliases(wname, tname):
    t = torch.zeros(4, dtype=getattr(torch, tname))
    a = wp.from_torch(t, dtype=getattr(wp, wname))
    assert a.dtype is getattr(wp, wname) and a.ptr == t.data_ptr()
    a.numpy()[1] = 1
    assert int(t[1]) == 1


def test_to_torch_of_weft_arrays_shares_memory_and_unsigned_maps_to_signed():
    a = wp.array(np.arange(5, dtype=np.float32), dtype=float)
    t = wp.to_torch(a)
    t += 1.0
    np.testing.assert_array_equal(a.numpy(), np.arange(1, 6, dtype=np.float32))
    u = wp.array(np.array([1, 2**32 - 1], dtype=np.uint32), dtype=wp.uint32)
    tu = wp.to_torch(u)
    assert tu.dtype == torch.int32 and tu.tolist() == [1, -1]


def test_vector_and_matrix_dtypes():
    t = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    a = wp.from_torch(t, dtype=wp.vec3)
    assert a.shape == (4,) and a.dtype is wp.vec3 and a.ptr == t.data_ptr()
    assert wp.to_torch(a).shape == (4, 3)
    m = torch.zeros((3, 2, 2), dtype=torch.float32)
    am = wp.from_torch(m, dtype=wp.mat22)
    wp.launch(mat_inc, dim=3, inputs=[am])
    np.testing.assert_array_equal(m.numpy(), np.tile([[1, 2], [3, 4]], (3, 1, 1)))
    for dt, n in ((wp.spatial_vector, 6), (wp.transform, 7), (wp.quat, 4)):
        assert wp.from_torch(torch.zeros(5, n), dtype=dt).shape == (5,)
    assert wp.to_torch(wp.zeros(2, dtype=wp.mat33)).shape == (2, 3, 3)
    # a single vector: a one-element array
    assert wp.from_torch(torch.zeros(3), dtype=wp.vec3).shape == (1,)


def test_strided_views_keep_strides_and_run_in_kernels():
    base = torch.zeros((6, 8), dtype=torch.float32)
    view = base[1:5:2, 2:7]  # non-contiguous 2-d slice
    a = wp.from_torch(view)
    assert a.shape == (2, 5) and not a.is_contiguous and a.ptr == view.data_ptr()
    assert a.strides == (64, 4)
    wp.launch(inc2d, dim=a.shape, inputs=[a])
    expect = np.zeros((6, 8), np.float32)
    expect[1:5:2, 2:7] = np.arange(2)[:, None] * 10 + np.arange(5)[None, :]
    np.testing.assert_array_equal(base.numpy(), expect)
    # vectors over an outer slice
    vb = torch.arange(60, dtype=torch.float32).reshape(10, 2, 3)
    av = wp.from_torch(vb[1:7:2, 1], dtype=wp.vec3)
    assert av.shape == (3,) and av.strides == (2 * 2 * 3 * 4,)
    np.testing.assert_array_equal(av.numpy(), vb[1:7:2, 1].numpy())
    # Warp's capacity: the storage's bytes from the first element
    assert wp.from_torch(base[1:3, 2:5]).capacity == (48 - 10) * 4


def test_expanded_zero_strides():
    base = torch.arange(3, dtype=torch.float32)
    t = base.unsqueeze(0).expand(4, -1)
    a = wp.from_torch(t)
    assert a.strides == (0, 4) and not a.is_contiguous
    np.testing.assert_array_equal(a.numpy(), np.tile(np.arange(3), (4, 1)))


def test_to_torch_of_views_and_empty_arrays():
    a = wp.array(np.arange(10, dtype=np.float64), dtype=wp.float64)
    t = wp.to_torch(a[::3])
    assert t.tolist() == [0.0, 3.0, 6.0, 9.0] and t.stride() == (3,)
    e = wp.to_torch(wp.zeros((1, 0), dtype=wp.vec2f))
    assert tuple(e.shape) == (1, 0, 2) and e.numel() == 0


def test_gradients_shared_both_ways():
    t = torch.zeros((4, 3), dtype=torch.float32, requires_grad=True)
    a = wp.from_torch(t, dtype=wp.vec3)  # requires_grad follows the tensor
    assert a.requires_grad and t.grad is not None
    assert a.grad.ptr == t.grad.data_ptr()
    a.grad.numpy()[1] = 5.0
    assert t.grad[1].tolist() == [5.0, 5.0, 5.0]
    # an existing grad is wrapped, not replaced
    g = t.grad
    assert wp.from_torch(t, dtype=wp.vec3).grad.ptr == g.data_ptr()
    # to_torch of an array with a gradient: the tensor's .grad is the gradient's memory
    w = wp.zeros(3, dtype=float, requires_grad=True)
    tw = wp.to_torch(w)
    assert tw.requires_grad and tw.grad.data_ptr() == w.grad.ptr
    assert not wp.to_torch(w, requires_grad=False).requires_grad
    # an explicit gradient, as a tensor or a weft array; retain_grad passes through
    gt = torch.ones(3)
    b = wp.from_torch(torch.zeros(3), grad=gt, retain_grad=True)
    assert b.grad.ptr == gt.data_ptr() and b.retain_grad
    gw = wp.zeros(3, dtype=float)
    assert wp.from_torch(torch.zeros(3), grad=gw).grad is gw


def test_tape_backward_fills_the_tensor_grad():
    x = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
    y = torch.zeros(3, dtype=torch.float64)
    wx = wp.from_torch(x, requires_grad=True)
    wy = wp.from_torch(y, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale_add, dim=3, inputs=[wx, 2.0], outputs=[wy])
    tape.backward(grads={wy: np.ones(3)})
    xn = x.numpy()
    np.testing.assert_allclose(y.numpy(), _ref_scale_add(xn, 2.0))
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * (np.cos(xn) * xn + np.sin(xn)))


def test_return_ctype_descriptor():
    t = torch.zeros((5, 3), dtype=torch.float32, requires_grad=True)
    d = wp.from_torch(t, dtype=wp.vec3, return_ctype=True)
    assert d.data == t.data_ptr() and d.grad == t.grad.data_ptr()
    assert d.ndim == 1 and d.shape == (5,) and d.strides == (12,)
    assert wp.from_torch(torch.zeros(4), return_ctype=True).grad == 0


def test_tensors_and_descriptors_passed_directly_to_launch():
    v = torch.zeros((2, 2, 2), dtype=torch.float32)
    wp.launch(mat_inc, dim=2, inputs=[v])
    assert v[1].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    wp.launch(mat_inc, dim=2, inputs=[wp.from_torch(v, dtype=wp.mat22, return_ctype=True)])
    assert v[0].tolist() == [[2.0, 4.0], [6.0, 8.0]]
    with pytest.raises(wp.LaunchError, match="requires grad"):
        wp.launch(mat_inc, dim=2, inputs=[torch.zeros((2, 2, 2), requires_grad=True)])
    with pytest.raises(wp.LaunchError, match="float32"):
        wp.launch(mat_inc, dim=2, inputs=[torch.zeros((2, 2, 2), dtype=torch.float64)])


def test_devices_and_streams():
    assert wp.device_from_torch("cpu") == "cpu"
    assert wp.device_from_torch(torch.device("cpu")) == "cpu"
    assert wp.device_to_torch("cpu") == "cpu"
    with pytest.raises(RuntimeError):
        wp.device_from_torch("mps")
    with pytest.raises(ValueError):
        wp.device_from_torch(3)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            wp.stream_from_torch()
        with pytest.raises(RuntimeError, match="CUDA"):
            wp.stream_to_torch("cpu")


# ----------------------------------------------------------------------------- bad input

def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="torch.Tensor"):
        wp.from_torch(np.zeros(3))
    with pytest.raises(TypeError, match="Cannot convert"):
        wp.from_torch(torch.zeros(3, dtype=torch.float32), dtype=wp.float64)
    with pytest.raises(TypeError, match="Cannot convert"):
        wp.from_torch(torch.zeros(3, dtype=torch.complex64))
    with pytest.raises(TypeError, match="bfloat16"):
        wp.from_torch(torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="bfloat16"):
        wp.from_torch(torch.zeros(2, 3, dtype=torch.bfloat16), dtype=wp.vector(3, wp.bfloat16))
    with pytest.raises(TypeError, match="bfloat16"):
        wp.zeros(2, dtype=wp.vector(3, wp.bfloat16))
    with pytest.raises(ValueError, match="inner shape"):
        wp.from_torch(torch.zeros(4, 2), dtype=wp.vec3)
    with pytest.raises(ValueError, match="not contiguous"):
        wp.from_torch(torch.zeros(4, 3).t(), dtype=wp.vec4)
    with pytest.raises(ValueError, match="at most 4"):
        wp.from_torch(torch.zeros(1, 1, 1, 1, 2))
    with pytest.raises(TypeError, match="dense"):
        wp.from_torch(torch.zeros(3, 3).to_sparse())
    with pytest.raises(TypeError):
        wp.dtype_from_torch(torch.complex128)
    with pytest.raises(TypeError):
        wp.dtype_to_torch(wp.vec3)

    @wp.struct
    class S:
        a: float

    with pytest.raises(TypeError, match="structured"):
        wp.to_torch(wp.zeros(2, dtype=S))
    # Warp's callers catch RuntimeError: the errors are RuntimeErrors too
    with pytest.raises(RuntimeError):
        wp.from_torch(torch.zeros(4, 2), dtype=wp.vec3)


# ----------------------------------------------------------------------------- autograd

class _WarpStyle(torch.autograd.Function):
    """Warp's documented pattern: the forward launches, the backward launches the adjoint with
    explicit adjoint arrays."""

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x)
        ctx.s = s
        y = torch.zeros_like(x)
        wp.launch(scale_add, dim=len(x), inputs=[wp.from_torch(x.detach()), s],
                  outputs=[wp.from_torch(y)])
        return y

    @staticmethod
    def backward(ctx, adj_y):
        (x,) = ctx.saved_tensors
        adj_x = torch.zeros_like(x)
        wp.launch(scale_add, dim=len(x), inputs=[wp.from_torch(x.detach()), ctx.s],
                  outputs=[wp.from_torch(torch.zeros_like(x))],
                  adj_inputs=[wp.from_torch(adj_x), None], adj_outputs=[wp.from_torch(adj_y)],
                  adjoint=True)
        return adj_x, None


def test_warp_style_autograd_function_matches_central_differences():
    x = torch.tensor([0.3, -1.2, 2.0, 0.7], dtype=torch.float64, requires_grad=True)
    y = _WarpStyle.apply(x, 1.5)
    np.testing.assert_allclose(y.detach().numpy(), _ref_scale_add(x.detach().numpy(), 1.5))
    # a reused, non-contiguous grad_outputs tensor is left unchanged
    gbase = torch.tensor([1.0, 0.0, 2.0, 0.0, -1.0, 0.0, 0.5, 0.0], dtype=torch.float64)
    go = gbase[::2]
    (gx,) = torch.autograd.grad(y, (x,), grad_outputs=go)
    assert go.tolist() == [1.0, 2.0, -1.0, 0.5]
    h = 1e-6
    xn = x.detach().numpy()
    fd = (_ref_scale_add(xn + h, 1.5) - _ref_scale_add(xn - h, 1.5)) / (2 * h)
    np.testing.assert_allclose(gx.numpy(), fd * go.numpy(), rtol=1e-7, atol=1e-9)
    # y.sum().backward(): torch's expanded (zero-stride) gradient
    y2 = _WarpStyle.apply(x, 1.5)
    y2.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7, atol=1e-9)


def test_function_gradcheck_and_forward_mode():
    f = wt.function(vec_kernel, outputs=2)
    rng = np.random.default_rng(3)
    v = torch.tensor(rng.normal(size=(4, 3)), requires_grad=True)
    w = torch.tensor(rng.normal(size=4) * 0.5, requires_grad=True)
    r, u = f(v, w)
    vn, wn = v.detach().numpy(), w.detach().numpy()
    np.testing.assert_allclose(r.detach().numpy(), (vn * vn).sum(1) * wn)
    np.testing.assert_allclose(u.detach().numpy(), vn * np.exp(wn)[:, None])
    assert torch.autograd.gradcheck(f, (v, w), check_forward_ad=True)
    # forward mode through weft's tangent kernel, against torch's own derivative
    dv, dw = torch.ones_like(v), torch.full_like(w, 0.5)
    (_, _), (tr, tu) = torch.func.jvp(f, (v.detach(), w.detach()), (dv, dw))
    np.testing.assert_allclose(tr.numpy(), (2 * vn).sum(1) * wn + (vn * vn).sum(1) * 0.5)
    np.testing.assert_allclose(tu.numpy(), np.exp(wn)[:, None] * (1 + vn * 0.5))
    g = torch.func.grad(lambda w: f(v.detach(), w)[0].sum())(w.detach())
    np.testing.assert_allclose(g.numpy(), (vn * vn).sum(1))


def test_function_scalar_inputs_and_errors():
    f = wt.function(scale_add)
    x = torch.tensor([0.1, 0.2], dtype=torch.float64, requires_grad=True)
    y = f(x, 3.0)
    y.backward(torch.ones(2, dtype=torch.float64))
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * (np.cos(xn) * xn + np.sin(xn)))
    with pytest.raises(ValueError, match="scalar"):
        f(x, torch.tensor(3.0, requires_grad=True))
    with pytest.raises(TypeError, match="Cannot convert"):
        f(x.float(), 3.0)
    with pytest.raises(NotImplementedError, match="vmap"):
        torch.func.jacrev(lambda x: f(x, 3.0))(x.detach())


def test_mutation_between_forward_and_backward_is_caught_by_torch():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = wt.function(scale_add)(x, 1.0)
    with torch.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_second_run_on_a_warm_cache(tmp_path):
    program = textwrap.dedent("""
        import torch, weft as wp, weft.torch as wt
        from weft.runtime.cache import STATS
        @wp.kernel
        def sq(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
            i = wp.tid()
            y[i] = x[i] * x[i]
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        wt.function(sq)(x).sum().backward()
        print(x.grad.tolist(), len(STATS["transpiled"]), len(STATS["compiled"]))
    """)
    path = tmp_path / "prog.py"
    path.write_text(program)
    env = {k: v for k, v in os.environ.items() if k != "WEFT_EXPECT_WARM"}
    env.setdefault("WEFT_CACHE_DIR", str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                           timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    grads, transpiled, compiled = runs[1].stdout.strip().rsplit(" ", 2)
    assert grads.startswith("[2.0, 4.0]")
    assert (transpiled, compiled) == ("0", "0")


def test_cuda_view_describes_the_tensor_memory_under_the_simulator():
    """The CUDA path of from_torch describes the tensor's memory as a __cuda_array_interface__
    (shape, byte strides, element dimensions); under Numba's CUDA simulator (on in the test
    session) device memory is host memory, so a CPU tensor's view checks the description."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        pytest.skip("needs Numba's CUDA simulator (with a real GPU the view would read host "
                    "memory as device memory)")
    from weft.integrations.torch import _device_view, _layout
    base = torch.arange(60, dtype=torch.float32).reshape(10, 2, 3)
    t = base[1:7:2, 1]
    shape, strides = _layout(t, wp.vec3)
    view = _device_view(t, wp.vec3, shape, strides)
    host = view.copy_to_host()
    np.testing.assert_array_equal(host, t.numpy())
    view[1, 2] = -1.0
    assert float(base[3, 1, 2]) == -1.0
