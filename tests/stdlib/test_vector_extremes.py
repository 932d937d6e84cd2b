"""``wp.max(v)`` / ``wp.min(v)`` of one vector: its largest / smallest component (MuJoCo Warp's
SDF of a box), the derivative going to the first such component, as Warp 1.19 (values and
gradients below are Warp's for the same kernel). Forward, adjoint, tangent and second order
against finite differences in float64."""
import numpy as np

import weft as wp
from tests.gradcheck import Arr, check


@wp.kernel
def extremes(v: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.max(v[i]) * wp.float64(2.0) + wp.min(v[i]) * wp.max(v[i])


def test_max_and_min_of_a_vector():
    rng = np.random.default_rng(5)
    data = rng.normal(size=(4, 3))
    check(extremes, 4, [Arr(data, wp.vec3d)], [Arr(np.zeros(4), wp.float64)],
          reference=lambda v: 2 * v.max(axis=1) + v.min(axis=1) * v.max(axis=1))


def test_ties_go_to_the_first_component_as_warp():
    v = wp.array(np.array([[1, 3, 2], [-1, -5, 4], [2, 2, 1]], dtype=np.float64),
                 dtype=wp.vec3d, requires_grad=True)
    out = wp.zeros(3, dtype=wp.float64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(extremes, 3, inputs=[v, out])
    tape.backward(grads={out: wp.ones(3, dtype=wp.float64)})
    np.testing.assert_array_equal(out.numpy(), [9.0, -12.0, 6.0])
    np.testing.assert_array_equal(v.grad.numpy(), [[3, 3, 0], [0, 4, -3], [3, 0, 2]])
