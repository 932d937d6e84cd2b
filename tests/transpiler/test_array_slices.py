"""Slices of arrays in kernels (``v = a[1:3, j]``): NumPy views with Warp's semantics (a view
keeps the sliced axes, drops the indexed ones, ``shape[k]`` past ``ndim`` is 0), their
gradients in both modes, and the errors."""
import numpy as np
import pytest

import weft as wp
from tests.gradcheck import Arr, check

rng = np.random.default_rng(31)


@wp.kernel
def k_views2d(arr: wp.array2d(dtype=int), out: wp.array(dtype=int)):
    sub = arr[:2]
    out[0] = sub.ndim
    out[1] = sub.shape[0]
    out[2] = sub.shape[2]
    out[3] = sub[1, 3]
    row = arr[:2, 1]
    out[4] = row[1] + row.ndim * 100
    neg = arr[-4, :3]
    out[5] = neg[2]
    rev = arr[3:5, 3:1:-1]
    out[6] = rev[1, 1]
    twice = arr[::4]
    twice = twice[:, ::-3]
    out[7] = twice[1, 1]
    out[8] = twice.shape[1]
    empty = arr[5:5]
    out[9] = empty.shape[0]


def test_static_slices_follow_numpy():
    data = np.arange(32, dtype=np.int32).reshape(8, 4)
    out = wp.zeros(10, dtype=int)
    wp.launch(k_views2d, dim=1, inputs=[wp.array(data, dtype=int), out])
    # worked out with NumPy's own slicing of the same data
    expect = [2, 2, 0, data[:2][1, 3], data[:2, 1][1] + 100, data[-4, :3][2],
              data[3:5, 3:1:-1][1, 1], data[::4][:, ::-3][1, 1], data[::4][:, ::-3].shape[1],
              0]
    np.testing.assert_array_equal(out.numpy(), expect)


@wp.kernel
def k_dynamic(arr: wp.array2d(dtype=int), start: int, stop: int, step: int,
              out: wp.array(dtype=int)):
    view = arr[start:stop:step, 1]
    out[0] = view.shape[0]
    out[1] = view[0]
    out[2] = view[view.shape[0] - 1]


@pytest.mark.parametrize("start,stop,step", [(1, 6, 2), (5, 0, -2), (-1, -7, -1), (0, 100, 3)])
def test_runtime_slices(start, stop, step):
    data = np.arange(18, dtype=np.int32).reshape(6, 3)
    out = wp.zeros(3, dtype=int)
    wp.launch(k_dynamic, dim=1, inputs=[wp.array(data, dtype=int), start, stop, step, out])
    view = data[start:stop:step, 1]
    np.testing.assert_array_equal(out.numpy(), [len(view), view[0], view[-1]])


def test_zero_step_at_run_time_raises():
    out = wp.zeros(3, dtype=int)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        wp.launch(k_dynamic, dim=1, inputs=[wp.zeros((6, 3), dtype=int), 0, 6, 0, out])


def test_literal_zero_step_is_a_kernel_error():
    @wp.kernel
    def bad(a: wp.array(dtype=int)):
        view = a[0:2:0]  # noqa: F841

    with pytest.raises(wp.KernelError, match=r"Slice step cannot be zero") as info:
        wp.launch(bad, dim=1, inputs=[wp.zeros(2, dtype=int)])
    assert isinstance(info.value, wp.WarpCodegenValueError)
    assert "a[0:2:0]" in str(info.value)


def test_slices_in_stores_are_refused_with_a_location():
    @wp.kernel
    def bad(a: wp.array(dtype=float)):
        a[0:2] = 1.0

    with pytest.raises(wp.KernelError, match="slices are only supported when reading"):
        wp.launch(bad, dim=1, inputs=[wp.zeros(2, dtype=float)])


@wp.kernel
def k_sliced_grad(x: wp.array2d(dtype=wp.float64), w: wp.array(dtype=wp.float64),
                  out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    col = x[1:, i]            # rows 1.. of column i
    back = w[::-1]            # w reversed
    s = wp.float64(0.0)
    for k in range(col.shape[0]):
        s = s + col[k] * back[k] * col[k]
    out[i] = s


def test_gradients_through_sliced_views():
    x = rng.uniform(-1, 1, (4, 3))
    w = rng.uniform(-1, 1, 3)

    def ref(x, w):
        return (x[1:, :] ** 2 * w[::-1][:, None]).sum(axis=0)

    check(k_sliced_grad, 3, [Arr(x, wp.float64), Arr(w, wp.float64)],
          [Arr(np.zeros(3), wp.float64)], ref, fd="kernel")


@wp.kernel
def k_store_view(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    y_slice = y[0:1, :]
    y_slice[0, i] = 2.0 * x[i]


@wp.kernel
def k_offset_row(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[0, i] + 1.0


def test_store_through_a_slice_view_on_the_tape():
    # Warp's test_retain_grad_slice_view_store: z = 2 x + 1 through a view of y
    x = wp.ones(4, dtype=float, requires_grad=True)
    y = wp.zeros((1, 4), dtype=float, requires_grad=True, retain_grad=True)
    z = wp.zeros(4, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(k_store_view, dim=4, inputs=[x, y])
        wp.launch(k_offset_row, dim=4, inputs=[y, z])
    np.testing.assert_array_equal(z.numpy(), [3.0] * 4)
    tape.backward(grads={z: wp.ones_like(z)})
    np.testing.assert_array_equal(x.grad.numpy(), [2.0] * 4)
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros((1, 4)))
