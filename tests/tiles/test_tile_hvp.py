"""tape.hvp through tile kernels: Hessian-vector products by forward over reverse (weft
differentiates the generated adjoint of a tile kernel once more), against central finite
differences of weft's own float64 gradients; and a clear error where a tile operation has no
second-order rule."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import LaunchError
from tests.runtime.test_hvp import _fd_hvp, _grads, _hvp

N = 4
F64 = wp.float64


def _one_launch(kernel, dim, tiled=True):
    """A program of one launch of ``kernel`` on its inputs and a fresh scalar loss."""
    def program(*xs):
        out = wp.zeros(1, dtype=F64, requires_grad=True)
        if tiled:
            wp.launch_tiled(kernel, dim=dim, inputs=[*xs, out], block_dim=8 if dim == 1 else 4)
        else:
            wp.launch(kernel, dim=dim, inputs=[*xs, out])
        return out
    return program


def _check(program, shapes, seed, dtypes=None):
    """tape.hvp of ``program`` at random inputs of ``shapes`` along random vectors, against
    central differences of its float64 gradients; returns (H v, gradients, inputs)."""
    rng = np.random.default_rng(seed)
    x0s = [rng.uniform(-1, 1, s) for s in shapes]
    vs = [rng.normal(size=s) for s in shapes]
    inputs = [(dt, None) for dt in (dtypes or [F64] * len(shapes))]
    hv, g, _ = _hvp(program, inputs, x0s, vs)
    fd = _fd_hvp(program, inputs, x0s, vs)
    for h, f in zip(hv, fd):
        assert np.abs(h).max() > 1e-3
        np.testing.assert_allclose(h, f, rtol=1e-6, atol=1e-6)
    return hv, g, (inputs, x0s)


@wp.kernel
def mlp_energy(x: wp.array2d(dtype=F64), w: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    """A product, a map, a reduction and a max: each with a tangent of its adjoint."""
    a = wp.tile_load(x, shape=(N, N))
    b = wp.tile_load(w, shape=(N, N))
    c = wp.tile_matmul(a, b)
    d = wp.tile_map(wp.sin, c)
    s = wp.tile_sum(d * d) + wp.tile_max(wp.tile_map(wp.tanh, a)) * F64(2.0)
    wp.tile_atomic_add(out, s)


def test_hvp_product_map_reduction_max():
    program = _one_launch(mlp_energy, 1)
    _, g, (inputs, x0s) = _check(program, [(N, N), (N, N)], 11)
    for a, b in zip(g, _grads(program, inputs, x0s)):  # the sweep's gradient, as backward's
        np.testing.assert_allclose(a, b, rtol=1e-12)


@wp.kernel
def rows_store(x: wp.array2d(dtype=F64), y: wp.array2d(dtype=F64)):
    """Each block loads a row, squares it, broadcasts a transposed column into it, stores it."""
    i = wp.tid()
    r = wp.tile_load(x[i], shape=N)
    col = wp.tile_transpose(wp.tile_reshape(r, shape=(N, 1)))
    m = wp.tile_broadcast(col, shape=(2, N))
    e = m[1, 2] * r[0]
    q = wp.tile_map(wp.mul, r, r)
    wp.tile_store(y[i], wp.tile_map(wp.add, q, wp.tile_reshape(m[0], shape=N) * e))


@wp.kernel
def rows_loss(y: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    i = wp.tid()
    t = wp.tile_load(y[i], shape=N)
    wp.tile_atomic_add(out, wp.tile_sum(wp.tile_map(wp.exp, t * F64(0.5))) +
                       wp.tile_min(t) * wp.tile_min(t))


def _rows_program(x):
    y = wp.zeros((3, N), dtype=F64, requires_grad=True)
    out = wp.zeros(1, dtype=F64, requires_grad=True)
    wp.launch_tiled(rows_store, dim=3, inputs=[x, y], block_dim=4)
    wp.launch_tiled(rows_loss, dim=3, inputs=[y, out], block_dim=4)
    return out


def test_hvp_two_tile_launches_store_views_shapes():
    """A stored tile read by a second launch (the store's tangent), row views of arrays,
    reshape, transpose, broadcast, element reads and tile_min, on three blocks."""
    _check(_rows_program, [(3, N)], 12)


@wp.kernel
def gather_scatter(x: wp.array(dtype=F64), idx: wp.array(dtype=int), y: wp.array(dtype=F64)):
    """An indexed load and an indexed store (the store's value: argument -2)."""
    t = wp.tile_load(x, shape=4)
    ii = wp.tile_load(idx, shape=4)
    g = wp.tile_load_indexed(x, indices=ii, shape=(4,), axis=0)
    wp.tile_store_indexed(y, indices=ii, t=wp.tile_map(wp.sin, t * g), axis=0)


@wp.kernel
def cube_sum(y: wp.array(dtype=F64), out: wp.array(dtype=F64)):
    t = wp.tile_load(y, shape=4)
    wp.tile_atomic_add(out, wp.tile_sum(t * t * t))


def _gather_program(x):
    y = wp.zeros(4, dtype=F64, requires_grad=True)
    out = wp.zeros(1, dtype=F64, requires_grad=True)
    idx = wp.array(np.array([2, 0, 3, 1]), dtype=int)
    wp.launch_tiled(gather_scatter, dim=1, inputs=[x, idx, y], block_dim=4)
    wp.launch_tiled(cube_sum, dim=1, inputs=[y, out], block_dim=4)
    return out


def test_hvp_indexed_load_and_store():
    _check(_gather_program, [4], 21)


@wp.kernel
def acc_product(a: wp.array2d(dtype=F64), b: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    """The accumulating product (alpha, beta), a scan and a tile written from each thread's
    values, on a plain launch of N threads (each one's gradient in its own copy)."""
    i = wp.tid()
    ta = wp.tile_load(a, shape=(N, N))
    tb = wp.tile_load(b, shape=(N, N))
    c = wp.tile_ones(shape=(N, N), dtype=F64) * ta[0, 1]
    wp.tile_matmul(ta, tb, c, alpha=F64(0.5), beta=F64(2.0))
    s = wp.tile_scan_inclusive(wp.tile_reshape(c * c, shape=N * N))
    wp.tile_atomic_add(out, wp.tile_sum(s) * F64(0.01) + wp.tile_max(s) * F64(float(i)))


def test_hvp_accumulating_product_scan_plain_launch():
    _check(_one_launch(acc_product, N, tiled=False), [(N, N), (N, N)], 13)


@wp.kernel
def chol_energy(a: wp.array2d(dtype=F64), y: wp.array2d(dtype=F64), out: wp.array(dtype=F64)):
    """A Cholesky factor and the three solves: the tangents of their adjoints."""
    t = wp.tile_load(a, shape=(N, N))
    spd = wp.tile_matmul(t, wp.tile_transpose(t)) + wp.tile_diag_add(
        wp.tile_zeros(shape=(N, N), dtype=F64), wp.tile_ones(shape=N, dtype=F64) * F64(2.0))
    L = wp.tile_cholesky(spd)
    rhs = wp.tile_load(y, shape=(N, 2))
    x = wp.tile_cholesky_solve(L, rhs)
    z = wp.tile_lower_solve(L, rhs)
    u = wp.tile_upper_solve(wp.tile_transpose(L), z * z)
    wp.tile_atomic_add(out, wp.tile_sum(L * L * x[0, 1]) + wp.tile_sum(u * x))


def test_hvp_cholesky_and_solves():
    _check(_one_launch(chol_energy, 1), [(N, N), (N, 2)], 14)


@wp.kernel
def axpy_scan_fft(x: wp.array(dtype=F64), c: wp.array2d(dtype=wp.vec2d),
                  out: wp.array(dtype=F64)):
    """tile_axpy (alpha read from the tile), a max scan and an FFT of complex numbers."""
    a = wp.tile_load(x, shape=8)
    b = wp.tile_map(wp.cos, a)
    wp.tile_axpy(a[1], a * a, b)
    m = wp.tile_scan_max_inclusive(b * a)
    z = wp.tile_load(c, shape=(1, 8))
    wp.tile_fft(z)
    q = wp.tile_map(wp.length_sq, z)
    wp.tile_atomic_add(out, wp.tile_sum(m * b) + wp.tile_sum(q) * F64(0.1))


def test_hvp_axpy_max_scan_fft():
    _check(_one_launch(axpy_scan_fft, 1), [8, (1, 8, 2)], 17, [F64, wp.vec2d])


@wp.kernel
def vector_tiles(x: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat22d),
                 out: wp.array(dtype=F64)):
    """Tiles of vectors and matrices: their sum, an element, maps, a custom reduction, a
    broadcast of determinants."""
    t = wp.tile_load(x, shape=4)
    s = wp.tile_sum(t)[0]
    e = t[2]
    u = wp.tile_map(wp.normalize, t)
    q = wp.tile_reduce(wp.add, wp.tile_map(wp.length_sq, u * e[0]))
    d = wp.tile_map(wp.determinant, wp.tile_load(m, shape=2))
    r = wp.tile_broadcast(wp.tile_reshape(d, shape=(2, 1)), shape=(2, 3))
    wp.tile_atomic_add(out, wp.tile(wp.dot(s, s) * wp.length(e)) + q + wp.tile_sum(r * r))


def test_hvp_tiles_of_vectors_and_matrices():
    _check(_one_launch(vector_tiles, 1), [(4, 3), (2, 2, 2)], 5, [wp.vec3d, wp.mat22d])


@wp.kernel
def lanes_energy(x: wp.array(dtype=F64), out: wp.array(dtype=F64)):
    """A tile made of each lane's value (tile_from_thread), mapped and summed."""
    i, j = wp.tid()
    v = x[i * 4 + j]
    s = wp.tile_sum(wp.tile_map(wp.sin, wp.tile(v * v)))
    wp.tile_atomic_add(out, s * s)


@pytest.mark.parametrize("blocks", [False, True], ids=["serial_lanes", "cpu_blocks"])
def test_hvp_tile_of_lane_values(blocks, request):
    """Lane values made into a tile, with lanes run one after another and, with
    ``enable_cpu_blocks``, as a cooperative block."""
    if blocks:
        request.getfixturevalue("cpu_blocks")
    _check(_one_launch(lanes_energy, 2), [8], 16)


@pytest.mark.parametrize("name", ["cholesky", "lower_solve", "upper_solve", "cholesky_solve"])
def test_tangents_of_the_factor_and_solve_adjoints(name):
    """Each of ``weft.native.tile_second``'s tangents against central differences of the
    adjoint it differentiates (``tile_kernels.<name>_adj``), along every argument at once."""
    from weft.native import tile_kernels as tk
    from weft.native import tile_second as ts
    rng = np.random.default_rng(15)
    n = 5
    low = np.tril(rng.uniform(-1, 1, (n, n))) + np.eye(n) * 3.0
    if name == "cholesky":  # (A, L = cholesky(A), seed)
        args = [low @ low.T, low, rng.normal(size=(n, n))]
    else:  # (factor, right-hand side, solution, seed)
        fac = low.T.copy() if name == "upper_solve" else low
        rhs = rng.uniform(-1, 1, (n, 3))
        args = [fac, rhs, getattr(tk, name)(fac, rhs), rng.normal(size=(n, 3))]
    tans = [rng.normal(size=a.shape) for a in args]
    adj = getattr(tk, name + "_adj")
    got = getattr(ts, name + "_adj_jvp").py_func(*args, *tans)
    eps = 1e-6
    plus = adj(*[a + eps * t for a, t in zip(args, tans)])
    minus = adj(*[a - eps * t for a, t in zip(args, tans)])
    got = got if isinstance(got, tuple) else (got,)
    plus = plus if isinstance(plus, tuple) else (plus,)
    minus = minus if isinstance(minus, tuple) else (minus,)
    for g, p, m in zip(got, plus, minus):
        fd = (p - m) / (2 * eps)
        assert np.abs(fd).max() > 1e-2
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


@wp.kernel
def half_energy(x: wp.array(dtype=wp.float16), out: wp.array(dtype=float)):
    b = wp.tile_astype(wp.tile_load(x, shape=N), dtype=float)
    wp.tile_atomic_add(out, wp.tile_sum(b * b))


def test_hvp_through_a_tile_operation_without_rule_is_a_clear_error():
    """float16 tiles have no second-order rules: tape.hvp says which helper, before running."""
    x = wp.array(np.linspace(0.1, 0.4, N), dtype=wp.float16, requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(half_energy, dim=1, inputs=[x, out], block_dim=8)
    with pytest.raises(LaunchError, match="no second-order rule for '_wk.tile_h2f'"):
        tape.hvp(out, {x: np.ones(N)})
