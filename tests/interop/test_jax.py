"""JAX interop (``weft.integrations.jax``): zero-copy conversions, kernels inside JAX programs
(``wp.jax_kernel``, ``wp.jax_callable``) under ``jax.jit`` and ``jax.vmap``, and their
derivatives: ``jax.grad`` through weft's adjoint kernel and ``jax.jvp`` through its tangent
kernel, checked against float64 central differences."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import weft as wp  # noqa: E402



@pytest.fixture(autouse=True, scope="module")
def _x64():
    """float64 JAX arrays for this module's checks (central differences); restored after."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


@wp.kernel
def poly(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), s: wp.float64,
         out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.sin(x[i]) * y[i] * y[i] + s * x[i]


@wp.kernel
def vec_norm2(v: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.dot(v[i], v[i]) * v[i][0]


@wp.kernel
def add_f32(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + b[i]


@wp.kernel
def gather_sq(idx: wp.array(dtype=int), table: wp.array(dtype=wp.float64),
              out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = table[idx[i]] * table[idx[i]]


@wp.kernel
def matmul(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64),
           c: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    s = wp.float64(0.0)
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s


def double_f32(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    wp.launch(add_f32, dim=a.shape, inputs=[a, a], outputs=[out])


def _poly_np(x, y, s):
    return np.sin(x) * y * y + s * x


def test_from_jax_to_jax_share_memory():
    x = jnp.arange(12, dtype=jnp.float32)
    a = wp.from_jax(x)
    assert a.dtype is wp.float32 and a.shape == (12,)
    assert a.ptr == x.unsafe_buffer_pointer()  # no copy
    x43 = x.reshape(4, 3)
    v = wp.from_jax(x43, dtype=wp.vec3)
    assert v.shape == (4,) and v.dtype is wp.vec3 and v.ptr == x43.unsafe_buffer_pointer()
    np.testing.assert_array_equal(v.numpy().reshape(-1), np.arange(12))

    w = wp.array(np.arange(8, dtype=np.float64))
    y = wp.to_jax(w)
    assert y.dtype == jnp.float64 and y.unsafe_buffer_pointer() == w.ptr
    w.fill_(2.0)  # the JAX array sees weft's writes: same memory
    np.testing.assert_array_equal(np.asarray(y), np.full(8, 2.0))

    assert wp.dtype_from_jax(jnp.int16) is wp.int16
    assert wp.dtype_to_jax(wp.uint8) == jnp.uint8
    assert wp.device_from_jax(wp.device_to_jax("cpu")) == wp.get_device("cpu")
    with pytest.raises(TypeError, match="Cannot convert"):
        wp.dtype_to_jax(wp.vec3)
    with pytest.raises(RuntimeError, match="Incompatible data types"):
        wp.from_jax(x, dtype=wp.float64)
    v3 = wp.zeros(5, dtype=wp.vec3)  # vector elements: trailing dimensions in JAX
    y3 = wp.to_jax(v3)
    assert y3.shape == (5, 3) and y3.unsafe_buffer_pointer() == v3.ptr


def _central(f, x, dx, h=1e-6):
    return (f(x + h * dx) - f(x - h * dx)) / (2 * h)


def test_grad_and_jvp_against_central_differences_jit_and_vmap():
    f = wp.jax_kernel(poly, enable_backward=True)
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.random(16))
    y = jnp.asarray(rng.random(16))
    s = 0.7

    out = jax.jit(lambda x, y: f(x, y, s)[0])(x, y)
    np.testing.assert_allclose(np.asarray(out), _poly_np(np.asarray(x), np.asarray(y), s),
                               rtol=1e-12)

    w = jnp.asarray(rng.random(16))  # loss weights

    def loss(x, y):
        return jnp.sum(w * f(x, y, s)[0])

    gx, gy = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, y)
    dx, dy = jnp.asarray(rng.random(16)), jnp.asarray(rng.random(16))
    fd_x = _central(lambda t: loss(t, y), x, dx)
    fd_y = _central(lambda t: loss(x, t), y, dy)
    np.testing.assert_allclose(float(jnp.dot(gx, dx)), float(fd_x), rtol=1e-7)
    np.testing.assert_allclose(float(jnp.dot(gy, dy)), float(fd_y), rtol=1e-7)

    # forward mode: the tangent kernel
    _, t = jax.jit(lambda x, y, dx, dy: jax.jvp(lambda a, b: f(a, b, s)[0], (x, y),
                                                (dx, dy)))(x, y, dx, dy)
    fd = (f(x + 1e-6 * dx, y + 1e-6 * dy, s)[0] - f(x - 1e-6 * dx, y - 1e-6 * dy, s)[0]) / 2e-6
    np.testing.assert_allclose(np.asarray(t), np.asarray(fd), rtol=1e-7, atol=1e-10)

    # under vmap: forward values, gradient and tangent of a batch of 3
    X = jnp.asarray(rng.random((3, 16)))
    batched = jax.vmap(lambda a, b: f(a, b, s)[0])
    np.testing.assert_allclose(np.asarray(jax.jit(batched)(X, X)),
                               _poly_np(np.asarray(X), np.asarray(X), s), rtol=1e-12)
    G = jax.jit(jax.grad(lambda a: jnp.sum(batched(a, a) ** 2)))(X)
    D = jnp.asarray(rng.random((3, 16)))
    fd = _central(lambda a: jnp.sum(batched(a, a) ** 2), X, D)
    np.testing.assert_allclose(float(jnp.sum(G * D)), float(fd), rtol=1e-7)
    _, T = jax.jvp(batched, (X, X), (D, D))
    fd = (batched(X + 1e-6 * D, X + 1e-6 * D) - batched(X - 1e-6 * D, X - 1e-6 * D)) / 2e-6
    np.testing.assert_allclose(np.asarray(T), np.asarray(fd), rtol=1e-7, atol=1e-10)
    # vmap of grad (the adjoint call batched by its ffi_call)
    Gv = jax.vmap(jax.grad(lambda a: jnp.sum(f(a, a, s)[0] ** 2)))(X)
    np.testing.assert_allclose(np.asarray(Gv), np.asarray(G), rtol=1e-12)


def test_grad_of_vector_array_kernel():
    f = wp.jax_kernel(vec_norm2, enable_backward=True)
    rng = np.random.default_rng(5)
    v = jnp.asarray(rng.random((6, 3)))
    g = jax.grad(lambda v: jnp.sum(f(v)[0]))(v)
    vn = np.asarray(v)
    # d/dv (|v|^2 v0) = 2 v v0 + |v|^2 e0
    ref = 2 * vn * vn[:, :1]
    ref[:, 0] += np.sum(vn * vn, axis=1)
    np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-12)


def test_integer_inputs_have_no_derivative_and_the_hessian_is_exact():
    f = wp.jax_kernel(gather_sq, enable_backward=True)
    idx = jnp.array([0, 2, 2, 4, 1, 1, 1, 3], dtype=jnp.int32)
    table = jnp.arange(5.0)
    g = jax.jit(jax.grad(lambda t: jnp.sum(f(idx, t)[0])))(table)  # scattered by the adjoint
    np.testing.assert_allclose(np.asarray(g), np.bincount(np.asarray(idx), minlength=5) * 2 *
                               np.arange(5.0))
    _, t = jax.jvp(lambda t: f(idx, t)[0], (table,), (jnp.ones(5),))
    np.testing.assert_allclose(np.asarray(t), 2 * np.asarray(table)[np.asarray(idx)])
    # forward over reverse (jax.hessian): the sum of table[idx]^2 has Hessian 2 diag(counts).
    # jacfwd batches with vmap: a gather needs "sequential" (Warp's default, "broadcast_all",
    # folds the batch into the first dimension, right for elementwise kernels only)
    fs = wp.jax_kernel(gather_sq, enable_backward=True, vmap_method="sequential")
    h = jax.jit(jax.hessian(lambda t: jnp.sum(fs(idx, t)[0])))(table)
    np.testing.assert_allclose(np.asarray(h), np.diag(2.0 * np.bincount(np.asarray(idx),
                                                                         minlength=5)))
    # reverse over reverse would transpose the FFI calls themselves: JAX refuses, clearly
    with pytest.raises(ValueError, match="cannot be differentiated"):
        jax.jacrev(jax.jacrev(lambda t: jnp.sum(fs(idx, t)[0])))(table)


def test_forward_over_reverse_hessian_against_central_differences():
    """jax.hessian (jacfwd of jacrev) and jvp of grad along another input run weft's
    adjoint-tangent kernel (tape.hvp), also under jit and vmap."""
    f = wp.jax_kernel(poly, enable_backward=True)
    rng = np.random.default_rng(11)
    x, y, s = jnp.asarray(rng.random(5)), jnp.asarray(rng.random(5)), 0.3
    w = jnp.asarray(rng.random(5))

    def loss(x, y):
        return jnp.sum(w * f(x, y, s)[0] ** 2)

    def grad_np(x, y, axis):
        xn, yn = np.asarray(x), np.asarray(y)
        o = _poly_np(xn, yn, s)
        d = np.cos(xn) * yn * yn + s if axis == 0 else 2 * np.sin(xn) * yn
        return 2 * np.asarray(w) * o * d

    H = np.asarray(jax.jit(jax.hessian(loss))(x, y))
    ref = np.stack([_central(lambda t: grad_np(t, y, 0), np.asarray(x), e) for e in np.eye(5)],
                   axis=1)
    np.testing.assert_allclose(H, ref, rtol=1e-6, atol=1e-9)
    # d/dy of the gradient with respect to x
    dy = jnp.asarray(rng.random(5))
    _, t = jax.jvp(lambda b: jax.grad(loss)(x, b), (y,), (dy,))
    ref = _central(lambda b: grad_np(x, b, 0), np.asarray(y), np.asarray(dy))
    np.testing.assert_allclose(np.asarray(t), ref, rtol=1e-6, atol=1e-9)
    # Hessian-vector products batched by vmap
    hv = jax.vmap(lambda v: jax.jvp(lambda a: jax.grad(loss)(a, y), (x,), (v,))[1])(jnp.eye(5))
    np.testing.assert_allclose(np.asarray(hv), H.T, rtol=1e-9, atol=1e-12)


def test_sequential_vmap_of_a_2d_kernel_and_its_derivatives():
    # a 2-d launch the batch cannot fold into: vmap_method="sequential" runs one call per
    # batch element, for the kernel and for its tangent and adjoint kernels
    f = wp.jax_kernel(matmul, enable_backward=True, vmap_method="sequential")
    rng = np.random.default_rng(0)
    A, B = jnp.asarray(rng.random((3, 4, 4))), jnp.asarray(rng.random((3, 4, 4)))
    mm = jax.vmap(lambda a, b: f(a, b)[0])
    np.testing.assert_allclose(np.asarray(jax.jit(mm)(A, B)), np.asarray(A @ B), rtol=1e-12)
    g = jax.jit(jax.grad(lambda A: jnp.sum(mm(A, B) ** 2)))(A)
    np.testing.assert_allclose(np.asarray(g),
                               np.asarray(jax.grad(lambda A: jnp.sum((A @ B) ** 2))(A)),
                               rtol=1e-12)
    _, t = jax.jvp(mm, (A, B), (B, A))
    np.testing.assert_allclose(np.asarray(t), np.asarray(B @ B + A @ A), rtol=1e-12)


def test_jax_callable_and_vmap():
    c = wp.jax_callable(double_f32)
    a = jnp.arange(10, dtype=jnp.float32)
    (b,) = jax.jit(c)(a)
    np.testing.assert_array_equal(np.asarray(b), 2 * np.arange(10, dtype=np.float32))
    for method in ("broadcast_all", "sequential"):
        cv = wp.jax_callable(double_f32, vmap_method=method)
        A = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
        (B,) = jax.jit(jax.vmap(cv, in_axes=1, out_axes=1))(A)
        np.testing.assert_array_equal(np.asarray(B), 2 * np.asarray(A))


def test_in_out_and_launch_dims():
    k = wp.jax_kernel(add_f32, launch_dims=3)
    (out,) = jax.jit(k)(jnp.ones(5, jnp.float32), jnp.ones(5, jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), [2, 2, 2])


def test_bad_input_is_a_clear_trace_time_error():
    k = wp.jax_kernel(add_f32)
    f32 = jnp.ones(4, jnp.float32)
    with pytest.raises(TypeError, match="Invalid data type for array argument 'a'"):
        jax.jit(k)(jnp.ones(4, jnp.float64), f32)
    with pytest.raises(TypeError, match="Invalid dimensionality"):
        jax.jit(k)(jnp.ones((2, 2), jnp.float32), f32)
    with pytest.raises(ValueError, match="Expected 2 inputs"):
        k(f32)
    # arrays the thread index walks must cover the launch: refused when tracing, not at run time
    with pytest.raises(wp.LaunchError if hasattr(wp, "LaunchError") else Exception,
                       match="dimension 0 has 3 elements"):
        jax.jit(k).lower(f32, jnp.ones(3, jnp.float32))
    g = wp.jax_kernel(poly, enable_backward=True)
    with pytest.raises(ValueError, match="must be a static value"):
        jax.jit(lambda s: g(jnp.ones(2), jnp.ones(2), s))(1.0)
    with pytest.raises(TypeError, match="must be an integer or None"):
        wp.jax_kernel(add_f32, block_dim=1.5)
    with pytest.raises(ValueError, match="did not match any function argument names"):
        wp.jax_kernel(add_f32, in_out_argnames=["nope"])


def test_exception_in_callback_is_a_jax_error_not_a_crash():
    def broken(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        raise RuntimeError("boom from the callback")

    c = wp.jax_callable(broken)
    with pytest.raises(Exception, match="boom from the callback"):
        jax.block_until_ready(jax.jit(c)(jnp.ones(3, jnp.float32)))
    # the process carries on: a later call works
    (b,) = jax.jit(wp.jax_callable(double_f32))(jnp.ones(3, jnp.float32))
    np.testing.assert_array_equal(np.asarray(b), [2, 2, 2])
