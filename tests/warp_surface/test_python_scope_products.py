"""``a * b`` of two weft values at Python scope is Warp's ``wp.mul``: matrix products,
quaternion product, transform composition (values worked out by hand / numpy); a scalar scales;
two vectors or mixed precisions are Warp's RuntimeError."""
import numpy as np
import pytest

import weft as wp


def test_products_follow_the_kernel_language():
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    np.testing.assert_array_equal(np.array(m * m), [[7.0, 10.0], [15.0, 22.0]])
    np.testing.assert_array_equal(np.array(m * wp.vec2(1.0, 1.0)), [3.0, 7.0])
    np.testing.assert_array_equal(np.array(wp.vec2(1.0, 1.0) * m), [4.0, 6.0])
    q = wp.quat(1.0, 2.0, 3.0, 4.0)
    # Hamilton product (x, y, z, w): w1 v2 + w2 v1 + v1 x v2, w1 w2 - v1.v2
    np.testing.assert_array_equal(np.array(q * q), [8.0, 16.0, 24.0, 2.0])
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(4.0, 5.0, 6.0, 7.0))
    assert tuple(t * wp.transform(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)) == \
        (396.0, 432.0, 720.0, 56.0, 70.0, 84.0, -28.0)  # Warp's own test's values
    m2 = wp.mat22(1.0, 2.0, 3.0, 4.0)
    m2 *= m2
    np.testing.assert_array_equal(np.array(m2), [[7.0, 10.0], [15.0, 22.0]])
    np.testing.assert_array_equal(np.array(2.0 * wp.vec2(1.0, 2.0)), [2.0, 4.0])


def test_products_warp_refuses():
    with pytest.raises(RuntimeError, match=r"^Couldn't find a function 'mul' compatible with "
                       r"the arguments 'mat22f, mat22d'$"):
        wp.mat22f(1.0, 2.0, 3.0, 4.0) * wp.mat22d(1.0, 2.0, 3.0, 4.0)
    with pytest.raises(RuntimeError, match="vec2f, vec2f"):
        wp.vec2(1.0, 2.0) * wp.vec2(3.0, 4.0)


def test_transform_setters_change_the_value_in_place():
    t = wp.types.transformation(dtype=wp.float32)()
    wp.transform_set_translation(t, wp.vec3f(1.0, 2.0, 3.0))
    wp.transform_set_rotation(t, wp.quatf(0.0, 0.0, 1.0, 0.0))
    assert list(t) == [1.0, 2.0, 3.0, 0.0, 0.0, 1.0, 0.0]
    with pytest.raises(TypeError, match="needs a transform"):
        wp.transform_set_translation(wp.vec3(), wp.vec3())
