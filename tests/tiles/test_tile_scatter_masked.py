"""``wp.tile_scatter_masked(t, i, ..., value, has_value)`` (Warp 1.19): each thread writes its
value where it has one (on the CPU a block is one thread); the indices of a thread without a
value are never used. Values against numpy, the adjoint and the tangent against
finite differences in float64 (``tests/gradcheck.py``)."""
import numpy as np
import pytest

import weft as wp
from weft.core.errors import KernelError
from tests.gradcheck import Arr, check


@wp.kernel
def scatter_masked(x: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    t = wp.tile_full(shape=(4,), value=wp.float64(1.0), dtype=wp.float64)
    for k in range(4):  # slots 3 and 1 are written; 2 and 0 keep their ones
        wp.tile_scatter_masked(t, 3 - k, x[i * 4 + k] * x[i * 4 + k], k % 2 == 0)
    m = wp.tile_zeros(shape=(2, 3), dtype=wp.float64)
    wp.tile_scatter_masked(m, 1, 2, x[i * 4 + 1], i == 0)
    wp.tile_scatter_masked(m, 7, 9, x[i * 4 + 1], False)  # out of range, but no value
    for j in range(4):
        out[i, j] = t[j] * x[i * 4 + 3] + m[1, 2]


def scatter_masked_reference(x):
    x = x.reshape(-1, 4)
    out = np.ones((len(x), 4))
    out[:, 3] = x[:, 0] ** 2
    out[:, 1] = x[:, 2] ** 2
    out *= x[:, 3:4]
    out[0] += x[0, 1]
    return out


def test_tile_scatter_masked_values_and_derivatives():
    rng = np.random.default_rng(3)
    check(scatter_masked, 2, [Arr(rng.normal(size=8), wp.float64)],
          [Arr(np.zeros((2, 4)), wp.float64)], reference=scatter_masked_reference,
          second_order=False)  # tile element writes have no second-order rule yet


@wp.kernel
def wrong_count(out: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=(2, 2), dtype=float)
    wp.tile_scatter_masked(t, 1, 2.0, True)
    out[0] = t[0, 0]


@wp.kernel
def wrong_type(out: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=(2,), dtype=float)
    wp.tile_scatter_masked(t, 1, wp.vec2(1.0, 2.0), True)
    out[0] = t[0]


@pytest.mark.parametrize("kernel, message", [
    (wrong_count, r"incorrect number of indices \(1\) for tile shape \(2, 2\)"),
    (wrong_type, "'value' type must match tile dtype"),
])
def test_tile_scatter_masked_misuse_is_a_kernel_error(kernel, message):
    with pytest.raises(KernelError, match=message):
        wp.launch(kernel, 1, inputs=[wp.zeros(1, dtype=float)])
