"""Thread-local buffers (Dr.Jit's alloc_local): computed indices inside loops."""
import numpy as np
import pytest

import weft as wp

BINS = 8


@wp.kernel
def histogram(x: wp.array2d(dtype=float), n: int, out: wp.array2d(dtype=float)):
    i = wp.tid()
    hist = wp.alloc_local(float, BINS, value=0.0)
    for k in range(n):
        b = int(x[i, k] * float(BINS))
        b = wp.min(wp.max(b, 0), BINS - 1)
        hist[b] += 1.0
    for k in range(BINS):
        out[i, k] = hist[k]


@wp.kernel
def weighted(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    buf = wp.alloc_local(float, 4)
    buf[i % 4] = x[i] * 2.0
    out[i] = buf[i % 4]


@wp.kernel
def counts_then_scale(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    c = wp.alloc_local(wp.int32, 2)
    c[0] = 3
    out[i] = x[i] * float(c[0])


def test_histogram_per_thread():
    rng = np.random.default_rng(0)
    data = rng.random((5, 40)).astype(np.float32)
    x = wp.array(data, dtype=float)
    out = wp.zeros((5, BINS), dtype=float)
    wp.launch(histogram, 5, inputs=[x, 40], outputs=[out])
    expected = np.stack([np.bincount(np.minimum((row * BINS).astype(int), BINS - 1),
                                     minlength=BINS) for row in data])
    np.testing.assert_array_equal(out.numpy(), expected)


def test_gradient_through_a_buffer_is_a_clear_error():
    x = wp.array(np.ones(4, np.float32), requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(weighted, 4, inputs=[x], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 2.0)
    with pytest.raises(wp.KernelError, match="does not differentiate thread-local buffers"):
        tape.backward(grads={out: np.ones(4)})


def test_buffers_of_constants_do_not_block_gradients():
    x = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(counts_then_scale, 4, inputs=[x], outputs=[out])
    tape.backward(grads={out: np.ones(4)})
    np.testing.assert_allclose(x.grad.numpy(), 3.0)
