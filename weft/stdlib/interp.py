"""Interpolation builtins in the kernel language (differentiated by weft like user funcs)."""
from weft.stdlib import kernel_scope as wp  # names looked up when a kernel is compiled
from weft.stdlib.funcs import builtin_func, kernel_language_builtins


@builtin_func([
               'lerp(a: Float, b: Float, t: Float) -> Float',
               'lerp(a: vec, b: vec, t: Float) -> vec',
               'lerp(a: mat, b: mat, t: Float) -> mat',
               'lerp(a: quat, b: quat, t: Float) -> quat',
               'lerp(a: transform, b: transform, t: Float) -> transform'])
def lerp(a, b, t):
    """``a * (1 - t) + b * t`` for scalars, or vectors with a scalar or matching ``t``."""
    return a * (1.0 - t) + b * t


@builtin_func(['smoothstep(a: Float, b: Float, x: Float) -> Float'])
def smoothstep(edge0, edge1, x):
    """Hermite interpolation between 0 and 1 as ``x`` goes from ``edge0`` to ``edge1``."""
    t = wp.clamp((x - edge0) / (edge1 - edge0), 0.0 * x, 1.0 + 0.0 * x)
    return t * t * (3.0 - 2.0 * t)


FUNCS = kernel_language_builtins(globals())
