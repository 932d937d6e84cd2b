"""Kernels of a Python module that turns Warp's ``fast_math`` on (tests/runtime/test_fast_math.py
checks that the option is read per module)."""
import weft as wp

wp.set_module_options({"fast_math": True})


@wp.kernel
def smooth(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * wp.exp(v) + wp.cos(v) * wp.log(1.0 + v * v) + wp.tanh(v) * wp.sqrt(2.0 + v)
