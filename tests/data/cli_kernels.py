"""Kernels used by the CLI and cache tests (run in subprocesses)."""
import weft as wp


@wp.func
def square(x: float):
    return x * x


@wp.kernel
def squares(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = square(x[i])


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s
