"""Tile kernels end to end (``wp.launch_tiled``): values against numpy, every gradient
against analytic values, forward mode (``tape.forward``) against the reverse mode, and the
Jacobian of a tile kernel (``tape.jacobian``) against the analytic one.

On the CPU a tile block is one thread (Warp's ``block_dim`` resolves to 1 there), so
``i, j = wp.tid()`` names the block; the blocks of a launch run on every core.
"""
import numpy as np
import pytest

import weft as wp

TM = wp.constant(4)
TN = wp.constant(3)
TK = wp.constant(2)


@wp.kernel
def copy_scaled(a: wp.array2d[float], b: wp.array2d[float], s: float):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(TM, TN), offset=(i * TM, j * TN))
    wp.tile_store(b, t * s + wp.tile_ones(shape=(TM, TN), dtype=float), offset=(i * TM, j * TN))


def test_load_store_values_gradients_and_tangents():
    rng = np.random.default_rng(1)
    # 9 x 7: the last blocks overhang the array (loads read zeros, stores skip)
    a_np = rng.random((9, 7), dtype=np.float32)
    a = wp.array(a_np, requires_grad=True)
    b = wp.zeros((9, 7), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(copy_scaled, dim=[3, 3], inputs=[a, b, 2.5], block_dim=64)
    np.testing.assert_allclose(b.numpy(), 2.5 * a_np + 1.0, rtol=1e-6)
    g = rng.random((9, 7), dtype=np.float32)
    tape.backward(grads={b: g})
    np.testing.assert_allclose(a.grad.numpy(), 2.5 * g, rtol=1e-6)
    da = rng.random((9, 7), dtype=np.float32)
    tan = tape.forward({a: da})
    np.testing.assert_allclose(tan[b].numpy() if hasattr(tan[b], "numpy") else tan[b],
                               2.5 * da, rtol=1e-6)


@wp.kernel
def gemm(A: wp.array2d[float], B: wp.array2d[float], C: wp.array2d[float]):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TM, TN), dtype=float)
    count = int(A.shape[1] / TK)
    for k in range(count):
        a = wp.tile_load(A, shape=(TM, TK), offset=(i * TM, k * TK))
        b = wp.tile_load(B, shape=(TK, TN), offset=(k * TK, j * TN))
        wp.tile_matmul(a, b, acc)  # acc += a @ b, a tile carried through the loop
    wp.tile_store(C, acc, offset=(i * TM, j * TN))


def test_matmul_in_a_loop_values_and_gradients():
    rng = np.random.default_rng(2)
    A_np = rng.random((8, 6), dtype=np.float32)
    B_np = rng.random((6, 9), dtype=np.float32)
    A = wp.array(A_np, requires_grad=True)
    B = wp.array(B_np, requires_grad=True)
    C = wp.zeros((8, 9), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(gemm, dim=[2, 3], inputs=[A, B, C], block_dim=32)
    np.testing.assert_allclose(C.numpy(), A_np @ B_np, rtol=1e-5)
    G = rng.random((8, 9), dtype=np.float32)
    tape.backward(grads={C: G})
    np.testing.assert_allclose(A.grad.numpy(), G @ B_np.T, rtol=1e-5)
    np.testing.assert_allclose(B.grad.numpy(), A_np.T @ G, rtol=1e-5)


@wp.func
def softplus(x: float):
    return wp.log(1.0 + wp.exp(x))


@wp.kernel
def map_reduce(a: wp.array2d[float], out: wp.array[float]):
    i = wp.tid()
    t = wp.tile_load(a, shape=(1, TN), offset=(i, 0))
    m = wp.tile_map(softplus, t)
    p = wp.tile_map(wp.mul, m, t)           # a builtin over two tiles
    s = wp.tile_sum(p)
    r = wp.tile_reduce(wp.max, wp.tile_map(wp.sin, t))
    out[i] = s[0] + 2.0 * r[0]


def test_map_sum_reduce_values_and_gradients():
    rng = np.random.default_rng(3)
    a_np = rng.uniform(-1.0, 1.0, (5, 3)).astype(np.float32)
    a = wp.array(a_np, requires_grad=True)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(map_reduce, dim=[5], inputs=[a, out], block_dim=16)
    sp = np.log1p(np.exp(a_np))
    want = (sp * a_np).sum(axis=1) + 2.0 * np.sin(a_np).max(axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    tape.backward(grads={out: np.ones(5, np.float32)})
    sig = 1.0 / (1.0 + np.exp(-a_np))
    grad = sig * a_np + sp
    k = np.sin(a_np).argmax(axis=1)
    grad[np.arange(5), k] += 2.0 * np.cos(a_np[np.arange(5), k])
    np.testing.assert_allclose(a.grad.numpy(), grad, rtol=1e-5, atol=1e-6)


@wp.kernel
def scatter(x: wp.array[float], y: wp.array[float]):
    i = wp.tid()
    t = wp.tile_zeros(shape=(TM,), dtype=float)
    t[i % TM] = x[i] * x[i]
    wp.tile_atomic_add(y, t)


def test_assign_and_atomic_add_gradients():
    x_np = np.arange(1, 9, dtype=np.float32)
    x = wp.array(x_np, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(scatter, dim=[8], inputs=[x, y], block_dim=8)
    want = np.zeros(4, np.float32)
    np.add.at(want, np.arange(8) % 4, x_np * x_np)
    np.testing.assert_allclose(y.numpy(), want)
    g = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    tape.backward(grads={y: g})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * x_np * g[np.arange(8) % 4])


@wp.kernel
def shapes(a: wp.array2d[float], out: wp.array2d[float]):
    t = wp.tile_load(a, shape=(2, 3))
    u = wp.tile_transpose(t)                      # (3, 2)
    v = wp.tile_reshape(u, shape=(6,))            # (6,)
    w = wp.tile_broadcast(wp.tile_view(t, offset=(1,)), shape=(4, 3))  # row 1, four times
    z = wp.tile_zeros(shape=(4, 3), dtype=float)
    wp.tile_assign(z, wp.tile_reshape(v, shape=(2, 3)), offset=(1, 0))
    wp.tile_store(out, z + w * w)


def test_shape_operations_values_and_gradients():
    rng = np.random.default_rng(4)
    a_np = rng.random((2, 3), dtype=np.float32)
    a = wp.array(a_np, requires_grad=True)
    out = wp.zeros((4, 3), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(shapes, dim=[1], inputs=[a, out], block_dim=8)
    want = np.tile(a_np[1] ** 2, (4, 1))
    want[1:3] += a_np.T.reshape(2, 3)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    g = rng.random((4, 3), dtype=np.float32)
    tape.backward(grads={out: g})
    grad = np.zeros((2, 3), np.float32)
    grad += g[1:3].reshape(3, 2).T                 # through assign, reshape and transpose
    grad[1] += (2.0 * a_np[1] * g).sum(axis=0)     # through the broadcast of row 1, squared
    np.testing.assert_allclose(a.grad.numpy(), grad, rtol=1e-5)


@wp.kernel
def vec_tiles(a: wp.array[wp.vec3], s: wp.array[float], out: wp.array[wp.vec3]):
    t = wp.tile_load(a, shape=TM)
    k = wp.tile_load(s, shape=TM)
    wp.tile_store(out, t * k + wp.tile_sum(t)[0])   # a tile of vec3 times a tile of floats


def test_vector_tiles_values_and_jacobian():
    rng = np.random.default_rng(5)
    a_np = rng.random((4, 3), dtype=np.float32)
    s_np = rng.random(4, dtype=np.float32)
    a = wp.array(a_np, dtype=wp.vec3, requires_grad=True)
    s = wp.array(s_np, requires_grad=True)
    out = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(vec_tiles, dim=[1], inputs=[a, s, out], block_dim=4)
    np.testing.assert_allclose(out.numpy(), a_np * s_np[:, None] + a_np.sum(axis=0), rtol=1e-6)
    jac = tape.jacobian([s], [out])
    jac = np.asarray(list(jac.values())[0] if isinstance(jac, dict) else jac)
    want = np.zeros((4, 3, 4), np.float32)
    for i in range(4):
        want[i, :, i] = a_np[i]
    np.testing.assert_allclose(jac.reshape(12, 4), want.reshape(12, 4), rtol=1e-6)


def test_bad_tile_code_is_a_located_error():
    @wp.kernel(module="unique")
    def bad(a: wp.array2d[float], out: wp.array2d[float]):
        t = wp.tile_load(a, shape=(2, 3))
        u = wp.tile_load(a, shape=(3, 3))
        wp.tile_store(out, t + u)

    a = wp.zeros((3, 3), dtype=float)
    with pytest.raises(wp.KernelError, match=r"tile shapes \(2, 3\) and \(3, 3\)"):
        wp.launch_tiled(bad, dim=[1], inputs=[a, a], block_dim=4)


@wp.kernel
def gather_scatter(x: wp.array2d[float], y: wp.array2d[float]):
    rows = wp.tile_arange(3, dtype=int) * 2                     # rows 0, 2, 4
    t = wp.tile_load_indexed(x, indices=rows, shape=(3, 2), axis=0)
    back = wp.tile_arange(2, -1, -1, dtype=int)                 # rows 2, 1, 0
    wp.tile_atomic_add_indexed(y, indices=back, t=t * t, axis=0)


def test_indexed_load_and_atomic_add_values_and_gradients():
    rng = np.random.default_rng(6)
    x_np = rng.random((6, 2), dtype=np.float32)
    x = wp.array(x_np, requires_grad=True)
    y = wp.zeros((3, 2), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(gather_scatter, dim=[1], inputs=[x, y], block_dim=4)
    np.testing.assert_allclose(y.numpy(), (x_np[[4, 2, 0]]) ** 2, rtol=1e-6)
    g = rng.random((3, 2), dtype=np.float32)
    tape.backward(grads={y: g})
    want = np.zeros((6, 2), np.float32)
    want[[0, 2, 4]] = 2.0 * x_np[[0, 2, 4]] * g[[2, 1, 0]]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)


@wp.kernel
def half_tiles(a: wp.array2d[wp.float16], b: wp.array2d[float], out: wp.array2d[wp.float16]):
    t = wp.tile_load(a, shape=(2, 4))                 # float16: float32 values rounded to half
    u = wp.tile_astype(wp.tile_load(b, shape=(4, 3)), wp.float16)
    wp.tile_store(out, wp.tile_matmul(t, u) + t[:, 0:3])


def test_float16_tiles_values_and_gradients():
    rng = np.random.default_rng(7)
    a_np = rng.random((2, 4)).astype(np.float16)
    b_np = rng.random((4, 3)).astype(np.float32)
    a = wp.array(a_np, dtype=wp.float16, requires_grad=True)
    b = wp.array(b_np, requires_grad=True)
    out = wp.zeros((2, 3), dtype=wp.float16, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(half_tiles, dim=[1], inputs=[a, b, out], block_dim=8)
    u = b_np.astype(np.float16).astype(np.float32)
    want = (a_np.astype(np.float32) @ u).astype(np.float16).astype(np.float32) + a_np[:, :3]
    np.testing.assert_allclose(out.numpy().astype(np.float32), want, rtol=2e-3)
    g = np.ones((2, 3), np.float16)
    tape.backward(grads={out: g})
    grad_a = np.ones((2, 3)) @ u.T
    grad_a[:, :3] += 1.0
    np.testing.assert_allclose(a.grad.numpy().astype(np.float32), grad_a, rtol=2e-3)
    np.testing.assert_allclose(b.grad.numpy(), a_np.astype(np.float32).T @ np.ones((2, 3)),
                               rtol=2e-3)


@wp.kernel
def tile_of_vectors(a: wp.array[wp.vec3], out: wp.array[wp.vec3]):
    i = wp.tid()
    t = wp.tile(a[i])                        # a column: shape (3, block_dim), block_dim 1
    out[i] = wp.untile(t * 2.0) + wp.untile(wp.tile(a[i], preserve_type=True))


def test_tile_of_a_vector_is_a_column_and_untile_gives_it_back():
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = wp.array(a_np, dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(2, dtype=wp.vec3, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(tile_of_vectors, dim=2, inputs=[a, out])
    np.testing.assert_allclose(out.numpy(), 3.0 * a_np)
    tape.backward(grads={out: np.ones((2, 3), np.float32)})
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 3.0))


@wp.kernel
def random_tiles(seed: int, x: wp.array2d[int], y: wp.array2d[float]):
    i, j = wp.tid()
    rng = wp.rand_init(seed, i * 2 + j)
    wp.tile_store(x, wp.tile_randi(shape=(2, 2), rng=rng), offset=(i * 2, j * 2))
    wp.tile_store(y, wp.tile_randf(shape=(2, 2), rng=rng, min=-5.0, max=5.0),
                  offset=(i * 2, j * 2))


def test_random_tiles_are_warps_cpu_streams():
    x = wp.zeros((4, 4), dtype=int)
    y = wp.zeros((4, 4), dtype=float)
    wp.launch_tiled(random_tiles, dim=[2, 2], inputs=[42, x, y], block_dim=64)
    # Warp 1.19's output on the CPU (block_dim resolved to 1)
    np.testing.assert_array_equal(x.numpy()[0], [798497746, -1161279442, -955788638, -592663987])
    np.testing.assert_array_equal(x.numpy()[3], [-1563301394, 647964157, 1659888992, -215603549])
    u = np.array([0.1859147, 0.72961855, 0.7774631, 0.86200964], np.float32)
    np.testing.assert_allclose(y.numpy()[0], 10.0 * u - 5.0, rtol=1e-5)


def test_tile_matmul_of_complex_tiles_is_refused():
    @wp.kernel(module="unique")
    def complex_mm(A: wp.array2d[wp.vec2f], C: wp.array2d[wp.vec2f]):
        a = wp.tile_load(A, shape=(2, 2))
        c = wp.tile_zeros(shape=(2, 2), dtype=wp.vec2f)
        wp.tile_matmul(a, a, c)
        wp.tile_store(C, c)

    A = wp.zeros((2, 2), dtype=wp.vec2f)
    with pytest.raises(TypeError, match="does not support complex tiles"):
        wp.launch_tiled(complex_mm, dim=[1], inputs=[A, A], block_dim=4)


@wp.kernel
def add_twice_and_sort(y: wp.array[float], old: wp.array[float], keys: wp.array[float],
                       vals: wp.array[int], s: wp.array[int], vs: wp.array[wp.vec2]):
    t = wp.tile_load(keys, shape=TM)
    first = wp.tile_atomic_add(y, t)               # the values it replaced: zeros
    second = wp.tile_atomic_add(y, t)              # ... then t
    wp.tile_store(old, first + second * 10.0)
    k = wp.tile_load(keys, shape=TM)
    v = wp.tile_arange(TM, dtype=int)
    wp.tile_sort(k, v)
    wp.tile_store(keys, k)
    wp.tile_store(vals, v)
    st = wp.tile_stack(capacity=3, dtype=int)
    wp.tile_stack_push(st, 7)
    wp.tile_stack_push(st, 8)
    top, slot = wp.tile_stack_pop(st)
    s[0] = top
    s[1] = slot
    s[2] = wp.tile_stack_count(st)
    a, _sa = wp.tile_stack_pop(st)
    b, sb = wp.tile_stack_pop(st)  # empty: the dtype's zero (as Warp), not the stale slot 0
    s[3] = a
    s[4] = b
    s[5] = sb
    sv = wp.tile_stack(capacity=2, dtype=wp.vec2)
    wp.tile_stack_push(sv, wp.vec2(1.5, 2.5))
    va, _sva = wp.tile_stack_pop(sv)
    vb, _svb = wp.tile_stack_pop(sv)
    vs[0] = va
    vs[1] = vb


def test_atomic_add_returns_the_replaced_values_and_sort_and_stack_give_theirs():
    keys_np = np.array([3.0, -1.0, 2.0, 0.5], np.float32)
    y = wp.zeros(4, dtype=float)
    old = wp.zeros(4, dtype=float)
    keys = wp.array(keys_np)
    vals = wp.zeros(4, dtype=int)
    s = wp.zeros(6, dtype=int)
    vs = wp.full(2, 9.0, dtype=wp.vec2)
    wp.launch_tiled(add_twice_and_sort, dim=[1], inputs=[y, old, keys, vals, s, vs],
                    block_dim=4)
    np.testing.assert_array_equal(y.numpy(), 2.0 * keys_np)
    np.testing.assert_array_equal(old.numpy(), 10.0 * keys_np)
    np.testing.assert_array_equal(keys.numpy(), np.sort(keys_np))
    np.testing.assert_array_equal(vals.numpy(), np.argsort(keys_np))
    np.testing.assert_array_equal(s.numpy(), [8, 1, 1, 7, 0, -1])
    np.testing.assert_array_equal(vs.numpy(), [[1.5, 2.5], [0.0, 0.0]])


@wp.func
def _bump(x: float):
    return x * x + 1.0


@wp.kernel(module="unique")
def map_user_func(a: wp.array[float], out: wp.array[float]):
    t = wp.tile_load(a, shape=4)
    wp.tile_store(out, wp.tile_map(_bump, t))


def test_tile_map_of_a_func_in_a_debug_build():
    # the func's adjoint takes the debug error word too (before stop 60: a compile error)
    saved = wp.config.mode
    wp.config.mode = "debug"
    try:
        a = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
        out = wp.zeros(4, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch_tiled(map_user_func, dim=1, inputs=[a, out], block_dim=1)
        tape.backward(grads={out: wp.ones(4)})
    finally:
        wp.config.mode = saved
    np.testing.assert_array_equal(out.numpy(), np.arange(4) ** 2 + 1.0)
    np.testing.assert_array_equal(a.grad.numpy(), 2 * np.arange(4.0))


@wp.kernel
def squares_added(a: wp.array[float], ii: wp.array[int], s: wp.array[float],
                  r: wp.array[float]):
    i = wp.tid()
    t = wp.tile_load(a, shape=4, offset=i * 4)
    wp.tile_atomic_add(s, wp.tile_sum(t * t), offset=0)
    wp.tile_atomic_add_indexed(r, wp.tile_load(ii, shape=2), t[0:2] * 3.0)


def test_arrays_only_tile_atomic_adds_write_are_written():
    # the ABI counts them as written: tape.forward's tangent run adds into scratch copies
    # (it once added into the arrays themselves, doubling them) and returns their tangents
    A = np.arange(8, dtype=np.float32) / 4
    a = wp.array(A, requires_grad=True)
    ii = wp.array(np.array([2, 0], np.int32))
    s = wp.zeros(1, dtype=float, requires_grad=True)
    r = wp.zeros(3, dtype=float, requires_grad=True)
    assert set(squares_added.compiled("cpu").abi.writes) == {"s", "r"}
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(squares_added, dim=2, inputs=[a, ii, s, r], block_dim=1)
    d = np.linspace(1, 2, 8).astype(np.float32)
    tan = tape.forward(tangents={a: wp.array(d)})
    np.testing.assert_allclose(s.numpy(), [(A.astype(np.float64) ** 2).sum()], rtol=1e-6)
    np.testing.assert_allclose(r.numpy(), [3 * (A[1] + A[5]), 0, 3 * (A[0] + A[4])], rtol=1e-6)
    np.testing.assert_allclose(tan[s].numpy(), [(2 * A * d).sum()], rtol=1e-6)
    np.testing.assert_allclose(tan[r].numpy(), [3 * (d[1] + d[5]), 0, 3 * (d[0] + d[4])],
                               rtol=1e-6)
