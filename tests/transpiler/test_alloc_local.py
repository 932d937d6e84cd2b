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


@wp.struct
class Particle:
    mass: float
    vel: wp.vec3


@wp.struct
class HasArray:
    data: wp.array(dtype=float)


@wp.kernel
def composite_buffers(x: wp.array(dtype=wp.vec3), total: wp.array(dtype=wp.vec3),
                      momentum: wp.array(dtype=wp.vec3), frames: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    vs = wp.alloc_local(wp.vec3, 3)
    ps = wp.alloc_local(Particle, 3)
    ms = wp.alloc_local(wp.mat22, 2)
    for k in range(3):
        vs[k] = x[i] * float(k + 1)
        p = Particle()
        p.mass = float(k) + 0.5
        p.vel = vs[k]
        ps[k] = p
    s = wp.vec3()
    m = wp.vec3()
    for k in range(3):
        s = s + vs[k]
        m = m + ps[k].mass * ps[k].vel
    ms[1] = wp.mat22(1.0, 2.0, 3.0, 4.0)
    ms[0] = ms[1] * 2.0
    total[i] = s
    momentum[i] = m
    frames[i] = ms[0]


def test_buffers_of_vectors_matrices_and_structs():
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]], np.float32)
    total = wp.zeros(2, dtype=wp.vec3)
    momentum = wp.zeros(2, dtype=wp.vec3)
    frames = wp.zeros(2, dtype=wp.mat22)
    wp.launch(composite_buffers, 2, inputs=[wp.array(x, dtype=wp.vec3), total, momentum,
                                            frames])
    np.testing.assert_allclose(total.numpy(), 6.0 * x)
    np.testing.assert_allclose(momentum.numpy(), (0.5 * 1 + 1.5 * 2 + 2.5 * 3) * x)
    np.testing.assert_allclose(frames.numpy(), [[[2.0, 4.0], [6.0, 8.0]]] * 2)


def test_a_struct_with_an_array_member_cannot_be_a_local_buffer():
    @wp.kernel
    def bad(out: wp.array(dtype=float)):
        b = wp.alloc_local(HasArray, 2)
        out[0] = b[0].data[0]

    with pytest.raises(wp.KernelError, match="member 'data' is an array"):
        wp.launch(bad, 1, inputs=[wp.zeros(1, dtype=float)])
