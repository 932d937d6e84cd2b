"""Arrays read and then overwritten in one kernel: exact gradients (snapshot) or a clear error."""
import numpy as np
import pytest

import weft as wp


@wp.kernel
def square_in_place(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x[i] = x[i] * x[i]


@wp.kernel
def copy_first(x: wp.array(dtype=wp.float64)):
    i = wp.tid()
    if i == 0:
        x[1] = x[0] * wp.float64(2.0)


@wp.kernel
def total(x: wp.array(dtype=wp.float64), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i])


def _run(kernel, x0, times=2):
    x = wp.array(x0, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for _ in range(times):
            wp.launch(kernel, len(x0), inputs=[x])
        wp.launch(total, len(x0), inputs=[x, loss])
    tape.backward(loss)
    return x, loss


def test_in_place_square_twice_gives_the_exact_gradient():
    x0 = np.array([0.5, 1.5, -2.0])
    x, loss = _run(square_in_place, x0)
    np.testing.assert_allclose(loss.numpy()[0], (x0 ** 4).sum())
    np.testing.assert_allclose(x.grad.numpy(), 4 * x0 ** 3)   # d/dx (x^2)^2


def test_error_mode_names_the_lines(monkeypatch):
    monkeypatch.setattr(wp.config, "overwrite_gradients", "error")
    with pytest.raises(wp.KernelError, match=r"array 'x' is read \(line \d+\) and then "
                       r"overwritten \(line \d+\)") as info:
        _run(square_in_place, np.ones(3))
    assert "x[i] = x[i] * x[i]" in str(info.value)


def test_warn_mode(monkeypatch):
    monkeypatch.setattr(wp.config, "overwrite_gradients", "warn")
    with pytest.warns(UserWarning, match="overwritten"):
        _run(square_in_place, np.ones(3), times=1)


def test_overwrites_at_other_threads_elements_are_an_error_even_with_snapshots():
    with pytest.raises(wp.KernelError, match="a snapshot cannot make exact"):
        _run(copy_first, np.array([1.0, 2.0, 3.0]), times=1)


def test_forward_only_use_is_not_affected():
    x = wp.array(np.array([2.0, 3.0]), dtype=wp.float64)
    wp.launch(square_in_place, 2, inputs=[x])
    np.testing.assert_allclose(x.numpy(), [4.0, 9.0])
