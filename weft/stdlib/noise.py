"""Perlin noise builtins (``noise``, ``pnoise``, ``curlnoise``) in the kernel language.

The field is Warp's: gradient noise on the integer lattice, blended with the quintic fade
``6t^5 - 15t^4 + 10t^3``. The gradient at a lattice point is drawn from Warp's random stream:
the point's integer coordinates are hashed with the seed ``state`` (products with fixed primes,
combined with exclusive or, in wrapping uint32 arithmetic), the hash seeds ``wp.randf`` draws
(one in [-1, 1) in 1-D, one per axis in [-0.5, 0.5) otherwise, then normalised). Every float32
operation is done in the order Warp does it, so float32 values are Warp's bit for bit.

These are generic funcs: with float64 points the blend runs in float64 (the random gradients
are the same float32 numbers, converted exactly). weft differentiates them like user code,
so ``noise`` and ``pnoise`` have exact adjoints and tangents, and so does ``curlnoise``, which
sums the analytic gradient of the noise (written out here as Warp does) over octaves: its
derivative is the noise's Hessian, derived by weft.
"""
from weft.stdlib import kernel_scope as wp  # names looked up when a kernel is compiled
from weft.core import types as T
from weft.stdlib.funcs import builtin_func, kernel_language_builtins
from weft.stdlib.registry import builtin
from weft.stdlib.exprs import cast, tup


def _convert_resolve(types, attrs=None):
    if len(types) != 2:
        return None
    v, like = types
    st = T.scalar_of(like)
    if not T.is_float(st):
        return None
    if T.is_float(v):
        return st
    if T.is_vector(v) and T.is_float(T.scalar_of(v)):
        return T.vector(v._length_, st)
    return None


@builtin("noise_convert", ["noise_convert(v: Float|vec, like: Float|vec) -> v in the float type"
                           " of like"], _convert_resolve, differentiable=False, public=False)
class _convert:
    """A float constant (random gradients, unit vectors) in the precision of the point; it
    carries no gradient."""

    def primal(v, like):
        st = T.scalar_of(like.type)
        if T.is_vector(v.type):
            return tup([cast(c, st) for c in v.atom().items()], T.vector(v.type._length_, st))
        return cast(v, st)


_u32 = wp.uint32  # lattice coordinates (see below)


# ----------------------------------------------------------------------------- lattice gradients
# Hash primes of the lattice coordinates (as Warp): x, y, z, t. These take integers only, so
# they carry no gradient and are never differentiated. Lattice coordinates travel as uint32
# (what the hash uses) made by explicit casts, so that every call has the same argument types
# in the generated code (Numba widens int32 + int32 to int64, which would compile a copy of
# each func per mix of int32 and int64 arguments).

@wp.func
def _lattice1(state: wp.uint32, ix: _u32):
    h = ix * wp.uint32(73856093) + state
    return wp.randf(h, -1.0, 1.0)


@wp.func
def _lattice2(state: wp.uint32, ix: _u32, iy: _u32):
    h = (ix * wp.uint32(73856093)) ^ (iy * wp.uint32(19349663) + state)
    x = wp.randf(h) - 0.5
    y = wp.randf(h) - 0.5
    n = wp.sqrt(x * x + y * y)
    if n > 0.0:
        x = x / n
        y = y / n
    return wp.vec2(x, y)


@wp.func
def _lattice3(state: wp.uint32, ix: _u32, iy: _u32, iz: _u32):
    h = (ix * wp.uint32(73856093)) ^ (iy * wp.uint32(19349663)) ^ (
        iz * wp.uint32(53471161) + state)
    x = wp.randf(h) - 0.5
    y = wp.randf(h) - 0.5
    z = wp.randf(h) - 0.5
    n = wp.sqrt(x * x + y * y + z * z)
    if n > 0.0:
        x = x / n
        y = y / n
        z = z / n
    return wp.vec3(x, y, z)


@wp.func
def _lattice4(state: wp.uint32, ix: _u32, iy: _u32, iz: _u32, it: _u32):
    h = (ix * wp.uint32(73856093)) ^ (iy * wp.uint32(19349663)) ^ (
        iz * wp.uint32(53471161)) ^ (it * wp.uint32(10000019) + state)
    x = wp.randf(h) - 0.5
    y = wp.randf(h) - 0.5
    z = wp.randf(h) - 0.5
    w = wp.randf(h) - 0.5
    n = wp.sqrt(x * x + y * y + z * z + w * w)
    if n > 0.0:
        x = x / n
        y = y / n
        z = z / n
        w = w / n
    return wp.vec4(x, y, z, w)


# ----------------------------------------------------------------------------- noise values
# (x0, x1), ... are the lattice coordinates below and above the point and (dx, ...) its offset
# from the lower corner. Each corner contributes dot(gradient, point - corner); the corners are
# blended along x, then y, z and t with weights fade(dx), ..., where fade(t) = 6t^5 - 15t^4 +
# 10t^3 in Warp's Horner form: t * t * t * (t * (t * 6 - 15) + 10). The blends are written out
# rather than calling small funcs, which keeps the generated code small to compile.

@wp.func
def _noise1(state: wp.uint32, x0: _u32, x1: _u32, dx):
    v0 = dx * _convert(_lattice1(state, x0), dx)
    v1 = (dx - 1.0) * _convert(_lattice1(state, x1), dx)
    return (v1 - v0) * (dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)) + v0


@wp.func
def _noise2(state: wp.uint32, x0: _u32, y0: _u32, x1: _u32, y1: _u32, dx, dy):
    ex = dx - 1.0
    ey = dy - 1.0
    g = _convert(_lattice2(state, x0, y0), dx)
    v00 = dx * g[0] + dy * g[1]
    g = _convert(_lattice2(state, x1, y0), dx)
    v10 = ex * g[0] + dy * g[1]
    g = _convert(_lattice2(state, x0, y1), dx)
    v01 = dx * g[0] + ey * g[1]
    g = _convert(_lattice2(state, x1, y1), dx)
    v11 = ex * g[0] + ey * g[1]
    sx = dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)
    a = (v10 - v00) * sx + v00
    b = (v11 - v01) * sx + v01
    return (b - a) * (dy * dy * dy * (dy * (dy * 6.0 - 15.0) + 10.0)) + a


@wp.func
def _noise3(state: wp.uint32, x0: _u32, y0: _u32, z0: _u32, x1: _u32, y1: _u32, z1: _u32, dx, dy,
            dz):
    ex = dx - 1.0
    ey = dy - 1.0
    ez = dz - 1.0
    g = _convert(_lattice3(state, x0, y0, z0), dx)
    v000 = dx * g[0] + dy * g[1] + dz * g[2]
    g = _convert(_lattice3(state, x1, y0, z0), dx)
    v100 = ex * g[0] + dy * g[1] + dz * g[2]
    g = _convert(_lattice3(state, x0, y1, z0), dx)
    v010 = dx * g[0] + ey * g[1] + dz * g[2]
    g = _convert(_lattice3(state, x1, y1, z0), dx)
    v110 = ex * g[0] + ey * g[1] + dz * g[2]
    g = _convert(_lattice3(state, x0, y0, z1), dx)
    v001 = dx * g[0] + dy * g[1] + ez * g[2]
    g = _convert(_lattice3(state, x1, y0, z1), dx)
    v101 = ex * g[0] + dy * g[1] + ez * g[2]
    g = _convert(_lattice3(state, x0, y1, z1), dx)
    v011 = dx * g[0] + ey * g[1] + ez * g[2]
    g = _convert(_lattice3(state, x1, y1, z1), dx)
    v111 = ex * g[0] + ey * g[1] + ez * g[2]
    sx = dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)
    sy = dy * dy * dy * (dy * (dy * 6.0 - 15.0) + 10.0)
    a0 = (v100 - v000) * sx + v000
    a1 = (v110 - v010) * sx + v010
    b0 = (v101 - v001) * sx + v001
    b1 = (v111 - v011) * sx + v011
    a = (a1 - a0) * sy + a0
    b = (b1 - b0) * sy + b0
    return (b - a) * (dz * dz * dz * (dz * (dz * 6.0 - 15.0) + 10.0)) + a


@wp.func
def _noise4_slab(state: wp.uint32, x0: _u32, y0: _u32, z0: _u32, x1: _u32, y1: _u32, z1: _u32,
                 it: _u32, dx, dy, dz, dt):
    """The 3-D blend of the 8 corners at time coordinate ``it`` (offset ``dt``)."""
    ex = dx - 1.0
    ey = dy - 1.0
    ez = dz - 1.0
    g = _convert(_lattice4(state, x0, y0, z0, it), dx)
    v000 = dx * g[0] + dy * g[1] + dz * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x1, y0, z0, it), dx)
    v100 = ex * g[0] + dy * g[1] + dz * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x0, y1, z0, it), dx)
    v010 = dx * g[0] + ey * g[1] + dz * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x1, y1, z0, it), dx)
    v110 = ex * g[0] + ey * g[1] + dz * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x0, y0, z1, it), dx)
    v001 = dx * g[0] + dy * g[1] + ez * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x1, y0, z1, it), dx)
    v101 = ex * g[0] + dy * g[1] + ez * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x0, y1, z1, it), dx)
    v011 = dx * g[0] + ey * g[1] + ez * g[2] + dt * g[3]
    g = _convert(_lattice4(state, x1, y1, z1, it), dx)
    v111 = ex * g[0] + ey * g[1] + ez * g[2] + dt * g[3]
    sx = dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)
    sy = dy * dy * dy * (dy * (dy * 6.0 - 15.0) + 10.0)
    a0 = (v100 - v000) * sx + v000
    a1 = (v110 - v010) * sx + v010
    b0 = (v101 - v001) * sx + v001
    b1 = (v111 - v011) * sx + v011
    a = (a1 - a0) * sy + a0
    b = (b1 - b0) * sy + b0
    return (b - a) * (dz * dz * dz * (dz * (dz * 6.0 - 15.0) + 10.0)) + a


@wp.func
def _noise4(state: wp.uint32, x0: _u32, y0: _u32, z0: _u32, t0: _u32, x1: _u32, y1: _u32, z1: _u32,
            t1: _u32, dx, dy, dz, dt):
    a = _noise4_slab(state, x0, y0, z0, x1, y1, z1, t0, dx, dy, dz, dt)
    b = _noise4_slab(state, x0, y0, z0, x1, y1, z1, t1, dx, dy, dz, dt - 1.0)
    return (b - a) * (dt * dt * dt * (dt * (dt * 6.0 - 15.0) + 10.0)) + a


# ----------------------------------------------------------------------------- noise gradients
# For curlnoise, as Warp computes them: each blend (b - a) * s + a along axis k comes with its
# gradient (gb - ga) * s + ((b - a) * s') * e_k + ga, with s' = 30t^2 (t (t - 2) + 1) the
# derivative of the fade and e_k the unit vector of axis k.

@wp.func
def _noise2_grad(state: wp.uint32, x0: _u32, y0: _u32, x1: _u32, y1: _u32, dx, dy):
    ex = dx - 1.0
    ey = dy - 1.0
    g00 = _convert(_lattice2(state, x0, y0), dx)
    v00 = dx * g00[0] + dy * g00[1]
    g10 = _convert(_lattice2(state, x1, y0), dx)
    v10 = ex * g10[0] + dy * g10[1]
    g01 = _convert(_lattice2(state, x0, y1), dx)
    v01 = dx * g01[0] + ey * g01[1]
    g11 = _convert(_lattice2(state, x1, y1), dx)
    v11 = ex * g11[0] + ey * g11[1]
    sx = dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)
    dsx = 30.0 * dx * dx * (dx * (dx - 2.0) + 1.0)
    sy = dy * dy * dy * (dy * (dy * 6.0 - 15.0) + 10.0)
    dsy = 30.0 * dy * dy * (dy * (dy - 2.0) + 1.0)
    ux = _convert(wp.vec2(1.0, 0.0), dx)
    uy = _convert(wp.vec2(0.0, 1.0), dx)
    a = (v10 - v00) * sx + v00
    ga = (g10 - g00) * sx + ((v10 - v00) * dsx) * ux + g00
    b = (v11 - v01) * sx + v01
    gb = (g11 - g01) * sx + ((v11 - v01) * dsx) * ux + g01
    return (gb - ga) * sy + ((b - a) * dsy) * uy + ga


@wp.func
def _noise3_grad(state: wp.uint32, x0: _u32, y0: _u32, z0: _u32, x1: _u32, y1: _u32, z1: _u32, dx,
                 dy, dz):
    ex = dx - 1.0
    ey = dy - 1.0
    ez = dz - 1.0
    g000 = _convert(_lattice3(state, x0, y0, z0), dx)
    v000 = dx * g000[0] + dy * g000[1] + dz * g000[2]
    g100 = _convert(_lattice3(state, x1, y0, z0), dx)
    v100 = ex * g100[0] + dy * g100[1] + dz * g100[2]
    g010 = _convert(_lattice3(state, x0, y1, z0), dx)
    v010 = dx * g010[0] + ey * g010[1] + dz * g010[2]
    g110 = _convert(_lattice3(state, x1, y1, z0), dx)
    v110 = ex * g110[0] + ey * g110[1] + dz * g110[2]
    g001 = _convert(_lattice3(state, x0, y0, z1), dx)
    v001 = dx * g001[0] + dy * g001[1] + ez * g001[2]
    g101 = _convert(_lattice3(state, x1, y0, z1), dx)
    v101 = ex * g101[0] + dy * g101[1] + ez * g101[2]
    g011 = _convert(_lattice3(state, x0, y1, z1), dx)
    v011 = dx * g011[0] + ey * g011[1] + ez * g011[2]
    g111 = _convert(_lattice3(state, x1, y1, z1), dx)
    v111 = ex * g111[0] + ey * g111[1] + ez * g111[2]
    sx = dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)
    dsx = 30.0 * dx * dx * (dx * (dx - 2.0) + 1.0)
    sy = dy * dy * dy * (dy * (dy * 6.0 - 15.0) + 10.0)
    dsy = 30.0 * dy * dy * (dy * (dy - 2.0) + 1.0)
    sz = dz * dz * dz * (dz * (dz * 6.0 - 15.0) + 10.0)
    dsz = 30.0 * dz * dz * (dz * (dz - 2.0) + 1.0)
    ux = _convert(wp.vec3(1.0, 0.0, 0.0), dx)
    uy = _convert(wp.vec3(0.0, 1.0, 0.0), dx)
    uz = _convert(wp.vec3(0.0, 0.0, 1.0), dx)
    a0 = (v100 - v000) * sx + v000
    ga0 = (g100 - g000) * sx + ((v100 - v000) * dsx) * ux + g000
    a1 = (v110 - v010) * sx + v010
    ga1 = (g110 - g010) * sx + ((v110 - v010) * dsx) * ux + g010
    b0 = (v101 - v001) * sx + v001
    gb0 = (g101 - g001) * sx + ((v101 - v001) * dsx) * ux + g001
    b1 = (v111 - v011) * sx + v011
    gb1 = (g111 - g011) * sx + ((v111 - v011) * dsx) * ux + g011
    a = (a1 - a0) * sy + a0
    ga = (ga1 - ga0) * sy + ((a1 - a0) * dsy) * uy + ga0
    b = (b1 - b0) * sy + b0
    gb = (gb1 - gb0) * sy + ((b1 - b0) * dsy) * uy + gb0
    return (gb - ga) * sz + ((b - a) * dsz) * uz + ga


@wp.func
def _noise4_grad_slab(state: wp.uint32, x0: _u32, y0: _u32, z0: _u32, x1: _u32, y1: _u32, z1: _u32,
                      it: _u32, dx, dy, dz, dt):
    """Value and gradient of the 3-D blend of the 8 corners at ``it`` (offset ``dt``); Warp's
    4-vector dot products start from zero (which shows only in the sign of a zero)."""
    ex = dx - 1.0
    ey = dy - 1.0
    ez = dz - 1.0
    z = _convert(0.0, dx)
    g000 = _convert(_lattice4(state, x0, y0, z0, it), dx)
    v000 = z + dx * g000[0] + dy * g000[1] + dz * g000[2] + dt * g000[3]
    g100 = _convert(_lattice4(state, x1, y0, z0, it), dx)
    v100 = z + ex * g100[0] + dy * g100[1] + dz * g100[2] + dt * g100[3]
    g010 = _convert(_lattice4(state, x0, y1, z0, it), dx)
    v010 = z + dx * g010[0] + ey * g010[1] + dz * g010[2] + dt * g010[3]
    g110 = _convert(_lattice4(state, x1, y1, z0, it), dx)
    v110 = z + ex * g110[0] + ey * g110[1] + dz * g110[2] + dt * g110[3]
    g001 = _convert(_lattice4(state, x0, y0, z1, it), dx)
    v001 = z + dx * g001[0] + dy * g001[1] + ez * g001[2] + dt * g001[3]
    g101 = _convert(_lattice4(state, x1, y0, z1, it), dx)
    v101 = z + ex * g101[0] + dy * g101[1] + ez * g101[2] + dt * g101[3]
    g011 = _convert(_lattice4(state, x0, y1, z1, it), dx)
    v011 = z + dx * g011[0] + ey * g011[1] + ez * g011[2] + dt * g011[3]
    g111 = _convert(_lattice4(state, x1, y1, z1, it), dx)
    v111 = z + ex * g111[0] + ey * g111[1] + ez * g111[2] + dt * g111[3]
    sx = dx * dx * dx * (dx * (dx * 6.0 - 15.0) + 10.0)
    dsx = 30.0 * dx * dx * (dx * (dx - 2.0) + 1.0)
    sy = dy * dy * dy * (dy * (dy * 6.0 - 15.0) + 10.0)
    dsy = 30.0 * dy * dy * (dy * (dy - 2.0) + 1.0)
    sz = dz * dz * dz * (dz * (dz * 6.0 - 15.0) + 10.0)
    dsz = 30.0 * dz * dz * (dz * (dz - 2.0) + 1.0)
    ux = _convert(wp.vec4(1.0, 0.0, 0.0, 0.0), dx)
    uy = _convert(wp.vec4(0.0, 1.0, 0.0, 0.0), dx)
    uz = _convert(wp.vec4(0.0, 0.0, 1.0, 0.0), dx)
    a0 = (v100 - v000) * sx + v000
    ga0 = (g100 - g000) * sx + ((v100 - v000) * dsx) * ux + g000
    a1 = (v110 - v010) * sx + v010
    ga1 = (g110 - g010) * sx + ((v110 - v010) * dsx) * ux + g010
    b0 = (v101 - v001) * sx + v001
    gb0 = (g101 - g001) * sx + ((v101 - v001) * dsx) * ux + g001
    b1 = (v111 - v011) * sx + v011
    gb1 = (g111 - g011) * sx + ((v111 - v011) * dsx) * ux + g011
    a = (a1 - a0) * sy + a0
    ga = (ga1 - ga0) * sy + ((a1 - a0) * dsy) * uy + ga0
    b = (b1 - b0) * sy + b0
    gb = (gb1 - gb0) * sy + ((b1 - b0) * dsy) * uy + gb0
    return (b - a) * sz + a, (gb - ga) * sz + ((b - a) * dsz) * uz + ga


@wp.func
def _noise4_grad(state: wp.uint32, x0: _u32, y0: _u32, z0: _u32, t0: _u32, x1: _u32, y1: _u32,
                 z1: _u32, t1: _u32, dx, dy, dz, dt):
    a, ga = _noise4_grad_slab(state, x0, y0, z0, x1, y1, z1, t0, dx, dy, dz, dt)
    b, gb = _noise4_grad_slab(state, x0, y0, z0, x1, y1, z1, t1, dx, dy, dz, dt - 1.0)
    st = dt * dt * dt * (dt * (dt * 6.0 - 15.0) + 10.0)
    dst = 30.0 * dt * dt * (dt * (dt - 2.0) + 1.0)
    return (gb - ga) * st + ((b - a) * dst) * _convert(wp.vec4(0.0, 0.0, 0.0, 1.0), dx) + ga


# ----------------------------------------------------------------------------- public builtins

@builtin_func([
               'noise(state: uint32, x: Float) -> Float',
               'noise(state: uint32, xy: vec2) -> Float',
               'noise(state: uint32, xyz: vec3) -> Float',
               'noise(state: uint32, xyzt: vec4) -> Float'])
def noise(state: wp.uint32, x):
    """Perlin noise of a scalar or a 2-, 3- or 4-D point, in about [-1, 1] (zero on the
    integer lattice); ``state`` (from ``wp.rand_init``) picks the field."""
    if len(wp.vector(x)) == 1:  # a scalar (a vector of length 1 once wrapped)
        f = wp.floor(x)
        x0 = int(f)
        return _noise1(state, wp.uint32(x0), wp.uint32(x0 + 1), x - f)
    f = wp.floor(x)
    dx = x[0] - f[0]
    dy = x[1] - f[1]
    x0 = int(f[0])
    y0 = int(f[1])
    ix0 = wp.uint32(x0)
    iy0 = wp.uint32(y0)
    ix1 = wp.uint32(x0 + 1)
    iy1 = wp.uint32(y0 + 1)
    if len(x) == 2:
        return _noise2(state, ix0, iy0, ix1, iy1, dx, dy)
    dz = x[2] - f[2]
    z0 = int(f[2])
    iz0 = wp.uint32(z0)
    iz1 = wp.uint32(z0 + 1)
    if len(x) == 3:
        return _noise3(state, ix0, iy0, iz0, ix1, iy1, iz1, dx, dy, dz)
    t0 = int(f[3])
    return _noise4(state, ix0, iy0, iz0, wp.uint32(t0), ix1, iy1, iz1, wp.uint32(t0 + 1), dx,
                   dy, dz, x[3] - f[3])


@builtin_func([
               'pnoise(state: uint32, x: Float, px: Int) -> Float',
               'pnoise(state: uint32, xy: vec2, px: Int, py: Int) -> Float',
               'pnoise(state: uint32, xyz: vec3, px: Int, py: Int, pz: Int) -> Float',
               'pnoise(state: uint32, xyzt: vec4, px: Int, py: Int, pz: Int, pt: Int) -> Float'])
def pnoise(state: wp.uint32, x, px, py=1, pz=1, pt=1):
    """Perlin noise that repeats with integer period ``px`` along x (``py``, ``pz``, ``pt``
    along the other axes of a 2-, 3- or 4-D point). As in Warp, the lattice index is
    ``floor(x) % px`` with C's remainder (the sign of the dividend), so the period holds on
    each side of zero but not across it."""
    if len(wp.vector(x)) == 1:
        f = wp.floor(x)
        x0 = int(f) % int(px)
        return _noise1(state, wp.uint32(x0), wp.uint32((x0 + 1) % int(px)), x - f)
    f = wp.floor(x)
    dx = x[0] - f[0]
    dy = x[1] - f[1]
    x0 = int(f[0]) % int(px)
    y0 = int(f[1]) % int(py)
    ix0 = wp.uint32(x0)
    iy0 = wp.uint32(y0)
    ix1 = wp.uint32((x0 + 1) % int(px))
    iy1 = wp.uint32((y0 + 1) % int(py))
    if len(x) == 2:
        return _noise2(state, ix0, iy0, ix1, iy1, dx, dy)
    dz = x[2] - f[2]
    z0 = int(f[2]) % int(pz)
    iz0 = wp.uint32(z0)
    iz1 = wp.uint32((z0 + 1) % int(pz))
    if len(x) == 3:
        return _noise3(state, ix0, iy0, iz0, ix1, iy1, iz1, dx, dy, dz)
    t0 = int(f[3]) % int(pt)
    return _noise4(state, ix0, iy0, iz0, wp.uint32(t0), ix1, iy1, iz1,
                   wp.uint32((t0 + 1) % int(pt)), dx, dy, dz, x[3] - f[3])


@builtin_func([
               'curlnoise(state: uint32, xy: vec2[, octaves: uint32[, lacunarity: Float[, gain: Float]]]) -> vec2',
               'curlnoise(state: uint32, xyz: vec3[, octaves: uint32[, lacunarity: Float[, gain: Float]]]) -> vec3',
               'curlnoise(state: uint32, xyzt: vec4[, octaves: uint32[, lacunarity: Float[, gain: Float]]]) -> vec3'])
def curlnoise(state: wp.uint32, xy, octaves: wp.uint32 = 1, lacunarity=2.0, gain=0.5):
    """A divergence-free field from the gradients of Perlin noise, summed over ``octaves``
    (each ``lacunarity`` times the frequency and ``gain`` times the amplitude of the one
    before): the 2-D curl of one noise for a vec2 point, the 3-D curl of three noises for a vec3
    or vec4 (x, y, z, time) point."""
    s = state
    lac = _convert(lacunarity, xy[0])
    gn = _convert(gain, xy[0])
    freq = _convert(1.0, xy[0])
    amp = freq
    if len(xy) == 2:
        c = _convert(wp.vec2(0.0, 0.0), xy[0])
        for _i in range(int(octaves)):
            p = freq * xy
            f = wp.floor(p)
            x0 = int(f[0])
            y0 = int(f[1])
            g = _noise2_grad(s, wp.uint32(x0), wp.uint32(y0), wp.uint32(x0 + 1),
                             wp.uint32(y0 + 1), p[0] - f[0], p[1] - f[1])
            c = c + amp * g
            amp = amp * gn
            freq = freq * lac
        return wp.vector(-c[1], c[0])
    if len(xy) == 3:
        c1 = _convert(wp.vec3(0.0, 0.0, 0.0), xy[0])
    else:
        c1 = _convert(wp.vec4(0.0, 0.0, 0.0, 0.0), xy[0])
    c2 = c1
    c3 = c1
    for _i in range(int(octaves)):
        p = freq * xy
        f = wp.floor(p)
        x0 = int(f[0])
        y0 = int(f[1])
        z0 = int(f[2])
        ix0 = wp.uint32(x0)
        iy0 = wp.uint32(y0)
        iz0 = wp.uint32(z0)
        ix1 = wp.uint32(x0 + 1)
        iy1 = wp.uint32(y0 + 1)
        iz1 = wp.uint32(z0 + 1)
        dx = p[0] - f[0]
        dy = p[1] - f[1]
        dz = p[2] - f[2]
        if len(xy) == 3:
            c1 = c1 + amp * _noise3_grad(s, ix0, iy0, iz0, ix1, iy1, iz1, dx, dy, dz)
            s = wp.rand_init(s, 10019689)
            c2 = c2 + amp * _noise3_grad(s, ix0, iy0, iz0, ix1, iy1, iz1, dx, dy, dz)
            s = wp.rand_init(s, 13112221)
            c3 = c3 + amp * _noise3_grad(s, ix0, iy0, iz0, ix1, iy1, iz1, dx, dy, dz)
        else:
            t0 = int(f[3])
            it0 = wp.uint32(t0)
            it1 = wp.uint32(t0 + 1)
            dt = p[3] - f[3]
            c1 = c1 + amp * _noise4_grad(s, ix0, iy0, iz0, it0, ix1, iy1, iz1, it1, dx, dy,
                                         dz, dt)
            s = wp.rand_init(s, 10019689)
            c2 = c2 + amp * _noise4_grad(s, ix0, iy0, iz0, it0, ix1, iy1, iz1, it1, dx, dy,
                                         dz, dt)
            s = wp.rand_init(s, 13112221)
            c3 = c3 + amp * _noise4_grad(s, ix0, iy0, iz0, it0, ix1, iy1, iz1, it1, dx, dy,
                                         dz, dt)
        amp = amp * gn
        freq = freq * lac
    return wp.vector(c3[1] - c2[2], c1[2] - c3[0], c2[0] - c1[1])


FUNCS = kernel_language_builtins(globals())
