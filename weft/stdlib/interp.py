"""Interpolation builtins in the kernel language (differentiated by weft like user funcs)."""
import weft as wp
from weft.stdlib.registry import kernel_language_builtins


@wp.func
def lerp(a, b, t):
    """``a * (1 - t) + b * t`` for scalars, or vectors with a scalar or matching ``t``."""
    return a * (1.0 - t) + b * t


@wp.func
def smoothstep(edge0, edge1, x):
    """Hermite interpolation between 0 and 1 as ``x`` goes from ``edge0`` to ``edge1``."""
    t = wp.clamp((x - edge0) / (edge1 - edge0), 0.0 * x, 1.0 + 0.0 * x)
    return t * t * (3.0 - 2.0 * t)


FUNCS = kernel_language_builtins(globals())
