"""A kernel made per dtype by a factory (as weft.optim does, and Warp programs do) must compile
once per dtype: a name used only in an annotation is not in the function's closure, so the
cache key has to include the evaluated annotations (before, a float16 kernel silently reused the
float32 module and read half bits as floats)."""
import numpy as np

import weft as wp


def _make(dtype):
    @wp.kernel
    def axpy(x: wp.array(dtype=dtype), a: dtype, y: wp.array(dtype=dtype)):
        i = wp.tid()
        y[i] = y[i] + a * x[i]  # dtype appears in the annotations only
    return axpy


def test_one_module_per_dtype():
    for dtype in (wp.float32, wp.float16, wp.float64):
        k = _make(dtype)
        x = wp.array([1.0, 2.0], dtype=dtype)
        y = wp.array([0.5, 0.25], dtype=dtype)
        wp.launch(k, dim=2, inputs=[x, 2.0, y])
        np.testing.assert_array_equal(y.numpy(), np.array([2.5, 4.25], dtype=dtype._np_))
