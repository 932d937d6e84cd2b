"""Launch argument checks (before anything runs), tape semantics, jvp and adjoint launches."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel
def sum_squares(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


@wp.kernel
def grid2(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = a[i, j] * float(i + 1) + float(j)


def _arrays(n=5, grad=True):
    rng = np.random.default_rng(1)
    x = wp.array(rng.random(n).astype(np.float32), requires_grad=grad)
    y = wp.array(rng.random(n).astype(np.float32), requires_grad=grad)
    out = wp.zeros(n, dtype=float, requires_grad=grad)
    return x, y, out


def test_forward_values():
    x, y, out = _arrays()
    wp.launch(axpy, dim=5, inputs=[2.0, x, y], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 2.0 * x.numpy() + y.numpy(), rtol=1e-6)


def test_wrong_argument_count_raises_before_running():
    x, y, out = _arrays()
    with pytest.raises(wp.LaunchError, match="takes 4 arguments"):
        wp.launch(axpy, dim=5, inputs=[2.0, x], outputs=[out])
    assert not out.numpy().any()


def test_wrong_dtype_ndim_and_kind():
    x, y, out = _arrays()
    x64 = wp.array(np.zeros(5), dtype=wp.float64)
    with pytest.raises(wp.LaunchError, match="argument 'x'.*float32.*float64"):
        wp.launch(axpy, dim=5, inputs=[2.0, x64, y], outputs=[out])
    x2d = wp.zeros((5, 1), dtype=float)
    with pytest.raises(wp.LaunchError, match="argument 'x'.*1 dimension"):
        wp.launch(axpy, dim=5, inputs=[2.0, x2d, y], outputs=[out])
    with pytest.raises(wp.LaunchError, match="argument 'a'.*scalar"):
        wp.launch(axpy, dim=5, inputs=[x, x, y], outputs=[out])
    # a NumPy array of the element type is taken as Warp does (in place, on the CPU); another
    # dtype is refused before anything runs
    with pytest.raises(wp.LaunchError, match="argument 'x'.*wp.array.*NumPy array of float64"):
        wp.launch(axpy, dim=5, inputs=[2.0, np.zeros(5, np.float64), y], outputs=[out])
    assert not out.numpy().any()


def test_wrong_device_raises():
    x, y, out = _arrays()
    # (tests run with Numba's CUDA simulator, so "cuda:0" exists)
    with pytest.raises(wp.LaunchError, match="argument 'x': the array is on device 'cpu' but "
                       "the launch is on 'cuda:0'"):
        wp.launch(axpy, dim=5, inputs=[2.0, x, y], outputs=[out], device="cuda:0")


def test_int_param_rejects_float():
    @wp.kernel
    def fill(n: int, out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = n

    out = wp.zeros(3, dtype=int)
    with pytest.raises(wp.LaunchError, match="argument 'n'.*integer"):
        wp.launch(fill, dim=3, inputs=[1.5], outputs=[out])
    wp.launch(fill, dim=3, inputs=[7], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [7, 7, 7])


def test_tape_backward_loss_and_gradients():
    x, y, out = _arrays()
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(axpy, dim=5, inputs=[3.0, x, y], outputs=[out])
        wp.launch(sum_squares, dim=5, inputs=[out, loss])
    tape.backward(loss)
    o = 3.0 * x.numpy() + y.numpy()
    np.testing.assert_allclose(loss.numpy()[0], (o * o).sum(), rtol=1e-5)
    # as Warp: the adjoint of axpy's store consumed out's gradient (docs/warp-semantics.md)
    np.testing.assert_allclose(out.grad.numpy(), 0.0)
    np.testing.assert_allclose(x.grad.numpy(), 6 * o, rtol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), 2 * o, rtol=1e-5)
    assert x in tape.gradients and tape.gradients[x] is x.grad
    tape.zero()
    assert not x.grad.numpy().any() and not y.grad.numpy().any()
    tape.reset()
    assert tape.launches == []


def test_tape_backward_with_seed_grads():
    x, y, out = _arrays()
    tape = wp.Tape()
    with tape:
        wp.launch(axpy, dim=5, inputs=[3.0, x, y], outputs=[out])
    seed = np.arange(5, dtype=np.float32)
    tape.backward(grads={out: seed})
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * seed)
    np.testing.assert_allclose(y.grad.numpy(), seed)


def test_backward_without_grad_on_loss_is_an_error():
    x, y, out = _arrays(grad=False)
    tape = wp.Tape()
    with tape:
        wp.launch(axpy, dim=5, inputs=[3.0, x, y], outputs=[out])
    with pytest.raises(wp.LaunchError, match="requires_grad"):
        tape.backward(out)


def test_inputs_without_grad_get_none_adjoint():
    x, y, out = _arrays()
    x_nograd = wp.array(x.numpy())
    tape = wp.Tape()
    with tape:
        wp.launch(axpy, dim=5, inputs=[3.0, x_nograd, y], outputs=[out])
    tape.backward(grads={out: np.ones(5, np.float32)})
    assert x_nograd.grad is None
    np.testing.assert_allclose(y.grad.numpy(), np.ones(5))


def test_explicit_adjoint_launch():
    x, y, out = _arrays()
    adj_out = wp.array(np.full(5, 2.0, np.float32))
    adj_x = wp.zeros(5, dtype=float)
    adj_y = wp.zeros(5, dtype=float)
    wp.launch(axpy, dim=5, inputs=[3.0, x, y], outputs=[out], adj_inputs=[None, adj_x, adj_y],
              adj_outputs=[adj_out], adjoint=True)
    np.testing.assert_allclose(adj_x.numpy(), np.full(5, 6.0))
    np.testing.assert_allclose(adj_y.numpy(), np.full(5, 2.0))


def test_jvp_array_and_scalar_tangents():
    x, y, out = _arrays()
    dx = np.linspace(0, 1, 5).astype(np.float32)
    t = wp.jvp(axpy, 5, inputs=[3.0, x, y], outputs=[out], tangents={x: dx, "a": 0.5})
    np.testing.assert_allclose(t[out].numpy(), 3.0 * dx + 0.5 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), 3.0 * x.numpy() + y.numpy(), rtol=1e-6)


def test_2d_launch_and_mismatched_dims():
    a = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    out = wp.zeros((3, 4), dtype=float)
    wp.launch(grid2, dim=(3, 4), inputs=[a], outputs=[out])
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_allclose(out.numpy(), a.numpy() * (i + 1) + j)
    with pytest.raises(wp.LaunchError, match="2 indices"):
        wp.launch(grid2, dim=12, inputs=[a], outputs=[out])


def test_zero_size_launch_runs_nothing():
    x, y, out = _arrays()
    wp.launch(axpy, dim=0, inputs=[3.0, x, y], outputs=[out])
    assert not out.numpy().any()


def test_kernel_source_is_readable_and_annotated():
    src = axpy.source("adjoint")
    # the chunk (the loop over launch indices [_lo, _hi)) first, then the threaded entry
    assert src.startswith("@_wk.chunk\n@numba.njit(cache=True")
    assert "def axpy__adj_chunk(_lo, _hi, _dim, a, x, y, out, adj_x, adj_y, adj_out):" in src
    assert "def axpy__adj(_dim, a, x, y, out, adj_x, adj_y, adj_out):" in src
    assert src.index("def axpy__adj_chunk(") < src.index("def axpy__adj(")
    assert "# test_launch.py:" in src
    assert "def axpy__fwd" in axpy.source("forward")
    assert "def axpy__jvp" in axpy.source("tangent")


def test_tape_zero_clears_only_gradients_backward_used_as_warp():
    x, y, out = _arrays()
    x.grad.fill_(5.0)
    tape = wp.Tape()
    with tape:
        wp.launch(axpy, dim=5, inputs=[3.0, x, y], outputs=[out])
    tape.zero()  # nothing has run backward on this tape yet: Warp clears nothing
    np.testing.assert_allclose(x.grad.numpy(), 5.0)
    tape.backward(grads={out: np.ones(5, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 8.0)  # gradients accumulate
    tape.zero()
    assert not x.grad.numpy().any() and not out.grad.numpy().any()


@wp.kernel
def first_index_only(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    wp.atomic_add(out, t, x[t])


def test_single_tid_in_a_2d_launch_is_the_first_index_as_warp():
    x = wp.array(np.arange(1.0, 5.0, dtype=np.float32), requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(first_index_only, (3, 5), inputs=[x, out])
    # Warp: threads (i, j) all see tid == i, so rows 0..2 are hit 5 times each
    np.testing.assert_allclose(out.numpy(), [5.0, 10.0, 15.0, 0.0])
    tape.backward(grads={out: np.ones(4, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0, 5.0, 0.0])


@pytest.mark.parametrize("kw", [dict(inputs="x"), dict(outputs="out"), dict(inputs=2.0),
                                dict(adjoint=True, adj_inputs="x")])
def test_an_array_where_the_argument_list_belongs_names_the_parameter(kw):
    x, y, out = _arrays()
    args = {"x": x, "out": out}
    kw = {k: args.get(v, v) if isinstance(v, str) else v for k, v in kw.items()}
    kw.setdefault("inputs", [2.0, x, y] + ([] if "outputs" in kw else [out]))
    name = next(k for k in ("outputs", "adj_inputs") if k in kw) if len(kw) > 1 else "inputs"
    before = out.numpy().copy()
    with pytest.raises(wp.LaunchError, match=rf"kernel 'axpy': wp.launch's '{name}' takes a "
                       r"list or tuple of the kernel's arguments, got (a wp.array|float)"):
        wp.launch(axpy, 5, **kw)
    np.testing.assert_array_equal(out.numpy(), before)  # nothing ran
