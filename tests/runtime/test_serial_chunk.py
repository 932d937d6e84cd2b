"""A small (serial) launch of a kernel whose threaded entry is compiled already runs that
entry's chunk over the whole launch (``background.serial_entry``): no serial twin compiled,
the same results. Kernels whose threads sum into private copies keep their serial twin."""
import numpy as np

import weft as wp
from weft.runtime import background


@wp.kernel
def _affine(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = 3.0 * a[i] + 1.0


@wp.kernel
def _accumulate(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] += a[i]  # (threads add into private copies of b, summed after the loop)


def test_a_small_launch_after_a_large_one_runs_the_compiled_chunk():
    a = wp.array(np.arange(300, dtype=np.float32), requires_grad=True)
    b = wp.zeros(300, dtype=float, requires_grad=True)
    wp.launch(_affine, 300, inputs=[a], outputs=[b])  # the threaded entry
    small_a = wp.array(np.arange(7, dtype=np.float32), requires_grad=True)
    small_b = wp.zeros(7, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_affine, 7, inputs=[small_a], outputs=[small_b])
    tape.backward(grads={small_b: wp.array(np.arange(7, dtype=np.float32) + 1)})
    np.testing.assert_array_equal(small_b.numpy(), 3.0 * np.arange(7) + 1.0)
    np.testing.assert_array_equal(small_a.grad.numpy(), 3.0 * (np.arange(7) + 1))
    ck = _affine.compiled("cpu")
    assert isinstance(_affine._fast.fn, background.ChunkSerial)
    assert not ck.entry("forward", "serial").overloads  # never compiled
    wp.launch(_affine, 5, inputs=[small_a], outputs=[small_b])  # the fast path: the chunk
    np.testing.assert_array_equal(small_b.numpy()[:5], 3.0 * np.arange(5) + 1.0)


def test_private_sums_keep_their_serial_twin():
    a = wp.array(np.ones(300, dtype=np.float32))
    b = wp.zeros(300, dtype=float)
    wp.launch(_accumulate, 300, inputs=[a], outputs=[b])
    c = wp.zeros(7, dtype=float)
    wp.launch(_accumulate, 7, inputs=[a], outputs=[c])
    np.testing.assert_array_equal(c.numpy(), 1.0)
    ck = _accumulate.compiled("cpu")
    assert ck.entry("forward", "serial").overloads  # (the chunk adds in another order)
    assert not isinstance(_accumulate._fast.fn, background.ChunkSerial)
