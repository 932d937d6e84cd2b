"""Kernels for tests/runtime/test_load_module.py (a module of their own, loaded ahead)."""
import weft as wp


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def total(y: wp.array(dtype=float), s: wp.array(dtype=float), scale: float):
    i = wp.tid()
    wp.atomic_add(s, 0, scale * y[i])
