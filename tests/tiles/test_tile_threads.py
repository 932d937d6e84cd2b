"""Tiled launches on every core: a launch index of a tiled kernel is a block's work on its
tiles, so a launch of a few dozen blocks runs its threaded entry (a plain kernel needs
``wp.config.serial_threshold`` threads). Values and every gradient of a threaded launch are
checked against numpy."""
import numpy as np

import weft as wp
from weft.core import config
from weft.runtime.compiled import cpu_target

S = wp.constant(16)


@wp.kernel
def products(A: wp.array3d(dtype=float), B: wp.array3d(dtype=float), C: wp.array3d(dtype=float)):
    i, _lane = wp.tid()
    a = wp.tile_load(A[i], shape=(S, S))
    b = wp.tile_load(B[i], shape=(S, S))
    wp.tile_store(C[i], wp.tile_matmul(a, b))


@wp.kernel
def plain(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 1.0


def test_tile_work_and_the_entry_a_launch_takes():
    ck = products.compiled("cpu")
    assert ck.abi.tile_work == 16 * 16
    assert plain.compiled("cpu").abi.tile_work == 0
    assert cpu_target(ck, "forward", (64, 1)) == "cpu"       # 64 blocks of 256 elements
    assert cpu_target(ck, "adjoint", (64, 1)) == "cpu"
    assert cpu_target(ck, "forward", (2, 1)) == "serial"     # 512 elements in all
    assert cpu_target(plain.compiled("cpu"), "forward", (64,)) == "serial"
    assert config.serial_threshold == 256


def test_threaded_tile_launch_values_and_gradients():
    rng = np.random.default_rng(3)
    n = 64
    a = rng.standard_normal((n, 16, 16)).astype(np.float32)
    b = rng.standard_normal((n, 16, 16)).astype(np.float32)
    A, B = wp.array(a, requires_grad=True), wp.array(b, requires_grad=True)
    C = wp.zeros((n, 16, 16), dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(products, dim=[n], inputs=[A, B, C], block_dim=64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(C.numpy(), a64 @ b64, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal((n, 16, 16)).astype(np.float32)
    tape.backward(grads={C: wp.array(g)})
    g64 = g.astype(np.float64)
    np.testing.assert_allclose(A.grad.numpy(), g64 @ b64.transpose(0, 2, 1), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(B.grad.numpy(), a64.transpose(0, 2, 1) @ g64, rtol=1e-5,
                               atol=1e-5)
    ck = products.compiled("cpu")
    assert ck.entry("forward", "cpu") in ck.called


H = wp.constant(8)
BATCH = wp.constant(16)


@wp.kernel
def layer(W: wp.array2d(dtype=float), X: wp.array2d(dtype=float), Y: wp.array2d(dtype=float),
          s: wp.array(dtype=float)):
    i, _lane = wp.tid()
    w = wp.tile_load(W, shape=(H, H))
    x = wp.tile_load(X, shape=(H, BATCH), offset=(0, i * BATCH))
    y = wp.tile_map(wp.tanh, wp.tile_matmul(w, x))
    wp.tile_store(Y, y, offset=(0, i * BATCH))
    s[i] = W[1, 2] * X[0, i]


def test_threaded_tile_load_gradients_of_arrays_every_block_reads():
    """Every block reads all of ``W`` (and one element of it) and its own columns of ``X`` (the
    last block past the end), the blocks on both threads: both gradients, which the threads add
    into together, against float64 numpy."""
    rng = np.random.default_rng(5)
    n, h, nb = 64, 8, 16
    cols = n * nb - 5
    w = (rng.standard_normal((h, h)) * 0.3).astype(np.float32)
    x = rng.standard_normal((h, cols)).astype(np.float32)
    W, X = wp.array(w, requires_grad=True), wp.array(x, requires_grad=True)
    Y = wp.zeros((h, cols), dtype=float, requires_grad=True)
    s = wp.zeros(n, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(layer, dim=[n], inputs=[W, X, Y, s], block_dim=32)
    w64, x64 = w.astype(np.float64), x.astype(np.float64)
    y64 = np.tanh(w64 @ x64)
    np.testing.assert_allclose(Y.numpy(), y64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s.numpy(), w64[1, 2] * x64[0, :n], rtol=1e-6)
    g = rng.standard_normal((h, cols))
    gs = rng.standard_normal(n)
    tape.backward(grads={Y: wp.array(g.astype(np.float32)), s: wp.array(gs.astype(np.float32))})
    d = g.astype(np.float32).astype(np.float64) * (1.0 - y64 * y64)
    gs = gs.astype(np.float32).astype(np.float64)
    want_w = d @ x64.T
    want_w[1, 2] += gs @ x64[0, :n]
    want_x = w64.T @ d
    want_x[0, :n] += gs * w64[1, 2]
    np.testing.assert_allclose(W.grad.numpy(), want_w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(X.grad.numpy(), want_x, rtol=1e-4, atol=1e-4)
    ck = layer.compiled("cpu")
    assert ck.entry("adjoint", "cpu") in ck.called  # the threaded adjoint ran
    # ... and added both tile loads' gradients into per-thread copies, without atomics (the
    # scalar reads of W and X too); the serial entry adds atomically
    src = layer.source("adjoint")
    for a in ("adj_W", "adj_X"):
        assert f"_wk.tile_add_plain2(_acc_{a}[_w - 1]," in src
        assert f"_wk.tile_add_plain2({a}," in src
    assert "_pv_" not in products.source("adjoint")  # loads of views A[i]: atomic adds
