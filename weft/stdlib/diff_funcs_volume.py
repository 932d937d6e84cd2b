"""Trilinear interpolation as differentiable weft functions (``@wp.func``), for LINEAR volume
sampling with gradients.

A LINEAR sample splits in two: a non-differentiable core call that finds the cell and reads its
8 corner values (``volume_query.volume_corners_s`` / ``volume_corners_v3``, Warp's corner order
(0,0,0), (0,0,1), (0,1,0), (0,1,1), (1,0,0), ..., (1,1,1) in (dx, dy, dz)), and these functions
of the corner values and the fractional position, which the transpiler differentiates::

    c = corners(...)                       # no derivative (reads the volume)
    f = volume_frac_f(uvw)                 # uvw - floor(uvw): d f / d uvw = identity
    value = trilinear_f(c[0], ..., c[7], f[0], f[1], f[2])

In float32 the result is bit for bit Warp's ``volume_sample_f`` (same weights ``wx*wy*wz`` and
summation order); the derivatives with respect to the position are those of the trilinear
interpolant inside the cell (as Warp's), and those with respect to the corner values are the
weights (Warp propagates none to stored values; ``volume_sample_index`` does, the same way).
The float64 versions serve gradient checks and double grids.
"""
import weft as wp


@wp.func
def volume_frac_f(uvw: wp.vec3f):
    """The position inside its cell: ``uvw - floor(uvw)`` (float32)."""
    return wp.vec3f(uvw[0] - wp.floor(uvw[0]), uvw[1] - wp.floor(uvw[1]),
                    uvw[2] - wp.floor(uvw[2]))


@wp.func
def volume_frac_d(uvw: wp.vec3d):
    """The position inside its cell: ``uvw - floor(uvw)`` (float64)."""
    return wp.vec3d(uvw[0] - wp.floor(uvw[0]), uvw[1] - wp.floor(uvw[1]),
                    uvw[2] - wp.floor(uvw[2]))


@wp.func
def trilinear_f(v000: wp.float32, v001: wp.float32, v010: wp.float32, v011: wp.float32,
                v100: wp.float32, v101: wp.float32, v110: wp.float32, v111: wp.float32,
                fx: wp.float32, fy: wp.float32, fz: wp.float32):
    """Warp's trilinear interpolation of 8 float32 corner values at fractions (fx, fy, fz)."""
    ax = 1.0 - fx
    ay = 1.0 - fy
    az = 1.0 - fz
    r = wp.float32(0.0)
    r = r + ax * ay * az * v000
    r = r + ax * ay * fz * v001
    r = r + ax * fy * az * v010
    r = r + ax * fy * fz * v011
    r = r + fx * ay * az * v100
    r = r + fx * ay * fz * v101
    r = r + fx * fy * az * v110
    r = r + fx * fy * fz * v111
    return r


@wp.func
def trilinear_d(v000: wp.float64, v001: wp.float64, v010: wp.float64, v011: wp.float64,
                v100: wp.float64, v101: wp.float64, v110: wp.float64, v111: wp.float64,
                fx: wp.float64, fy: wp.float64, fz: wp.float64):
    """Trilinear interpolation of 8 float64 corner values (Warp's order, in float64)."""
    ax = 1.0 - fx
    ay = 1.0 - fy
    az = 1.0 - fz
    r = wp.float64(0.0)
    r = r + ax * ay * az * v000
    r = r + ax * ay * fz * v001
    r = r + ax * fy * az * v010
    r = r + ax * fy * fz * v011
    r = r + fx * ay * az * v100
    r = r + fx * ay * fz * v101
    r = r + fx * fy * az * v110
    r = r + fx * fy * fz * v111
    return r


@wp.func
def trilinear_v(v000: wp.vec3f, v001: wp.vec3f, v010: wp.vec3f, v011: wp.vec3f,
                v100: wp.vec3f, v101: wp.vec3f, v110: wp.vec3f, v111: wp.vec3f,
                fx: wp.float32, fy: wp.float32, fz: wp.float32):
    """Warp's trilinear interpolation of 8 vec3f corner values (``volume_sample_v``)."""
    ax = 1.0 - fx
    ay = 1.0 - fy
    az = 1.0 - fz
    r = wp.vec3f(0.0, 0.0, 0.0)
    r = r + (ax * ay * az) * v000
    r = r + (ax * ay * fz) * v001
    r = r + (ax * fy * az) * v010
    r = r + (ax * fy * fz) * v011
    r = r + (fx * ay * az) * v100
    r = r + (fx * ay * fz) * v101
    r = r + (fx * fy * az) * v110
    r = r + (fx * fy * fz) * v111
    return r


@wp.func
def trilinear_vd(v000: wp.vec3d, v001: wp.vec3d, v010: wp.vec3d, v011: wp.vec3d,
                 v100: wp.vec3d, v101: wp.vec3d, v110: wp.vec3d, v111: wp.vec3d,
                 fx: wp.float64, fy: wp.float64, fz: wp.float64):
    """Trilinear interpolation of 8 vec3d corner values."""
    ax = 1.0 - fx
    ay = 1.0 - fy
    az = 1.0 - fz
    r = wp.vec3d(0.0, 0.0, 0.0)
    r = r + (ax * ay * az) * v000
    r = r + (ax * ay * fz) * v001
    r = r + (ax * fy * az) * v010
    r = r + (ax * fy * fz) * v011
    r = r + (fx * ay * az) * v100
    r = r + (fx * ay * fz) * v101
    r = r + (fx * fy * az) * v110
    r = r + (fx * fy * fz) * v111
    return r
