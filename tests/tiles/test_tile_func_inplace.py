"""A @wp.func that changes a tile parameter in place changes the caller's tile, as in Warp
(which passes tiles to funcs by reference): values and gradients, worked out by hand and with
float64 finite differences."""
import numpy as np
import pytest

import weft as wp

F64 = wp.float64


@wp.func
def add_five(t: wp.tile(dtype=F64, shape=(2, 2))):
    t += wp.tile_ones(dtype=F64, shape=(2, 2)) * F64(5.0)


@wp.func
def add_into(a: wp.tile(dtype=F64, shape=(2, 2)), b: wp.tile(dtype=F64, shape=(2, 2))):
    a += b
    return a


@wp.func
def accumulate(a: wp.tile(dtype=F64, shape=(2, 2)), c: wp.tile(dtype=F64, shape=(2, 2))):
    wp.tile_matmul(a, a, c)  # c += a @ a
    c[0, 1] = F64(7.0) * a[1, 1]
    return wp.tile_sum(c)[0], a


@wp.func
def bump(r: wp.tile(dtype=F64, shape=(2,))):
    r += wp.tile_ones(dtype=F64, shape=2)


@wp.kernel
def no_return(x: wp.array2d(dtype=F64), out: wp.array2d(dtype=F64)):
    t = wp.tile_load(x, shape=(2, 2))
    add_five(t)
    add_five(wp.tile_ones(dtype=F64, shape=(2, 2)))  # not a variable: nothing to give back
    wp.tile_store(out, t)


def test_a_func_changing_its_tile_parameter_changes_the_callers_tile():
    x = wp.array(np.full((2, 2), 3.0), dtype=F64)
    out = wp.zeros((2, 2), dtype=F64)
    wp.launch_tiled(no_return, dim=1, inputs=[x, out], block_dim=4)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 8.0))


@wp.kernel
def returned_too(x: wp.array2d(dtype=F64), y: wp.array2d(dtype=F64), loss: wp.array(dtype=F64)):
    a = wp.tile_load(x, shape=(2, 2))
    b = wp.tile_load(y, shape=(2, 2))
    r = add_into(a, b)
    wp.tile_store(loss, wp.tile_sum(r * a))  # a is a + b now: sum((a + b)^2)


def test_changed_parameter_and_result_with_gradients():
    a0, b0 = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 0.0]])
    x = wp.array(a0, dtype=F64, requires_grad=True)
    y = wp.array(b0, dtype=F64, requires_grad=True)
    loss = wp.zeros(1, dtype=F64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(returned_too, dim=1, inputs=[x, y, loss], block_dim=4)
    tape.backward(loss=loss)
    assert loss.numpy()[0] == pytest.approx(np.sum((a0 + b0) ** 2))
    np.testing.assert_allclose(x.grad.numpy(), 2 * (a0 + b0))
    np.testing.assert_allclose(y.grad.numpy(), 2 * (a0 + b0))
    da = np.array([[1.0, 0.0], [0.0, 2.0]])  # forward mode and second order through it too
    tan = tape.forward({x: da})
    assert tan[loss].numpy()[0] == pytest.approx(np.sum(2 * (a0 + b0) * da))
    np.testing.assert_allclose(tape.hvp(loss, {x: da})[x].numpy(), 2 * da)


@wp.kernel
def product_and_row(x: wp.array2d(dtype=F64), z: wp.array2d(dtype=F64),
                    out: wp.array2d(dtype=F64), total: wp.array(dtype=F64)):
    t = wp.tile_load(x, shape=(2, 2))
    c = wp.tile_load(z, shape=(2, 2))
    s, t2 = accumulate(t, c)
    bump(c[1])  # a view of the caller's tile: its row changes
    wp.tile_store(out, c * t2)
    wp.tile_store(total, wp.tile_ones(dtype=F64, shape=1) * s)


def _product_and_row(x0, z0):
    c = z0 + x0 @ x0
    c[0, 1] = 7.0 * x0[1, 1]
    s = c.sum()
    c[1] += 1.0
    return c * x0, s


def test_in_place_product_element_write_and_a_row_view():
    rng = np.random.default_rng(3)
    x0, z0 = rng.uniform(-1, 1, (2, 2)), rng.uniform(-1, 1, (2, 2))
    want_out, want_s = _product_and_row(x0, z0)
    x = wp.array(x0, dtype=F64, requires_grad=True)
    z = wp.array(z0, dtype=F64, requires_grad=True)
    out = wp.zeros((2, 2), dtype=F64, requires_grad=True)
    total = wp.zeros(1, dtype=F64, requires_grad=True)
    seed_out, seed_s = rng.normal(size=(2, 2)), 0.7
    with wp.Tape() as tape:
        wp.launch_tiled(product_and_row, dim=1, inputs=[x, z, out, total], block_dim=4)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12)
    assert total.numpy()[0] == pytest.approx(want_s, rel=1e-12)
    tape.backward(grads={out: seed_out, total: np.array([seed_s])})

    def f(x0, z0):
        o, s = _product_and_row(x0, z0)
        return np.sum(o * seed_out) + seed_s * s
    eps = 1e-6
    for arr, which in ((x, 0), (z, 1)):
        fd = np.zeros((2, 2))
        for i in range(2):
            for j in range(2):
                d = np.zeros((2, 2))
                d[i, j] = eps
                args_p = [x0 + d, z0] if which == 0 else [x0, z0 + d]
                args_m = [x0 - d, z0] if which == 0 else [x0, z0 - d]
                fd[i, j] = (f(*args_p) - f(*args_m)) / (2 * eps)
        np.testing.assert_allclose(arr.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@wp.func
def changed_then_replaced(t: wp.tile(dtype=F64, shape=(2, 2))):
    t += wp.tile_ones(dtype=F64, shape=(2, 2))
    t = t * F64(2.0)
    return t


@wp.kernel
def mixed(x: wp.array2d(dtype=F64), out: wp.array2d(dtype=F64)):
    t = wp.tile_load(x, shape=(2, 2))
    wp.tile_store(out, changed_then_replaced(t))


def test_changing_a_parameter_in_place_and_replacing_it_is_refused():
    x = wp.zeros((2, 2), dtype=F64)
    with pytest.raises(wp.KernelError, match="changes its tile parameter 't' in place") as e:
        wp.launch_tiled(mixed, dim=1, inputs=[x, x], block_dim=4)
    assert "t = t * F64(2.0)" in str(e.value)


def test_on_cuda_a_changed_parameter_comes_back_too():
    """On the CUDA target (the simulator here) the func returns the changed tile, which the
    cooperative tiles take; a func returning its result and a changed tile (a tuple of tiles)
    is refused there, with a KernelError, as any func returning several tiles."""
    pytest.importorskip("numba.cuda")
    x = wp.array(np.full((2, 2), 3.0), dtype=F64, device="cuda")
    out = wp.zeros((2, 2), dtype=F64, device="cuda")
    wp.launch_tiled(no_return, dim=1, inputs=[x, out], block_dim=4, device="cuda")
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 8.0))
    loss = wp.zeros(1, dtype=F64, device="cuda")
    with pytest.raises(wp.KernelError):
        wp.launch_tiled(returned_too, dim=1, inputs=[x, x, loss], block_dim=4, device="cuda")
