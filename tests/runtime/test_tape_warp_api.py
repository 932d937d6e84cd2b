"""Warp's Tape API around backward: scopes, visualize, struct gradients, reset keeping the
gradient table, no nested tapes; and ``adj_inputs=None`` entries meaning the array's ``.grad``."""
import numpy as np
import pytest

import weft as wp


@wp.struct
class Pair:
    x: wp.array(dtype=float)
    y: wp.array(dtype=float)


@wp.kernel
def mul_pair(p: Pair, z: wp.array(dtype=float)):
    i = wp.tid()
    z[i] = p.x[i] * p.y[i]


@wp.kernel
def dot_product(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(z, 0, x[i] * y[i])


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_struct_gradients_accumulate_and_reset_zeroes_them():
    p = Pair()
    p.x = wp.array(np.full(4, 2.0), dtype=float, requires_grad=True)
    p.y = wp.array(np.full(4, 5.0), dtype=float, requires_grad=True)
    z = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(mul_pair, 4, inputs=[p], outputs=[z])
    tape.backward(grads={z: np.ones(4, np.float32)})
    np.testing.assert_array_equal(tape.gradients[p].x.numpy(), np.full(4, 5.0))
    np.testing.assert_array_equal(tape.gradients[p].y.numpy(), np.full(4, 2.0))
    tape.backward(grads={z: np.ones(4, np.float32)})
    np.testing.assert_array_equal(tape.gradients[p].x.numpy(), np.full(4, 10.0))
    tape.reset()
    assert not tape.launches
    np.testing.assert_array_equal(tape.gradients[p].x.numpy(), np.zeros(4))
    with pytest.raises(KeyError):
        _ = wp.Tape().gradients[p]


def test_scopes_and_visualize():
    tape = wp.Tape()
    x = wp.array(np.ones(8), dtype=float, requires_grad=True)
    y = wp.array(np.ones(8), dtype=float, requires_grad=True)
    z = wp.zeros(1, dtype=float, requires_grad=True)
    with tape:
        tape.record_scope_begin("my loop", {"note": 1})
        for _ in range(16):
            wp.launch(dot_product, 8, inputs=[x, y], outputs=[z])
        tape.record_scope_end()
        tape.record_scope_begin("empty")
        tape.record_scope_end()
    assert tape.scopes == [(0, "my loop", {"note": 1}), (16, None, None)]
    dot = tape.visualize(simplify_graph=True, array_labels={x: "x", y: "y", z: "loss"})
    assert dot.startswith("digraph") and "repeated 16x" in dot and "my loop" in dot
    assert dot.count("dot_product") == 1 and "array: dtype=float32, shape=(8,)" in dot
    assert dot.count("-> k0") == 2 and dot.count("k0 ->") == 1  # reads x, y; writes z
    assert 'label="loss"' in dot
    unfolded = tape.visualize(simplify_graph=False)
    assert unfolded.count("dot_product") == 16
    with pytest.raises(RuntimeError, match="ended tape scope, but scope not present"):
        tape.record_scope_end()


def test_tapes_do_not_nest():
    with pytest.raises(RuntimeError, match="already active"):
        with wp.Tape():
            with wp.Tape():
                pass
    with wp.Tape():  # the failed entry left nothing behind
        pass


def test_adjoint_launch_with_none_uses_the_arrays_own_gradients():
    a = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True)
    b = wp.zeros(3, dtype=float, requires_grad=True)
    wp.launch(square, 3, inputs=[a, b])
    b.grad = wp.array([1.0, 1.0, 1.0], dtype=float)
    wp.launch(square, 3, inputs=[a, b], adjoint=True, adj_inputs=[None, None])
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0, 6.0])
    ext = wp.zeros(3, dtype=float)
    wp.launch(square, 3, inputs=[a, b], adjoint=True,
              adj_inputs=[ext, wp.array([1.0, 1.0, 1.0], dtype=float)])
    np.testing.assert_array_equal(ext.numpy(), [2.0, 4.0, 6.0])  # explicit ones win
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0, 6.0])
