"""``wp.texture_sample``: sampling ``wp.Texture1D/2D/3D`` (:mod:`weft.runtime.texture`), written
in the kernel language so that weft derives its adjoint and tangent.

A texture reaches a kernel as a struct of its resolution, modes and two arrays (its decoded
texels, float32, and its mip-level table: 16 rows of offset, width, height, depth per texture,
``k_slot`` choosing the texture's block in an array of textures). The arithmetic is Warp 1.19's
CPU sampler's, in float32 and in its order: periodic coordinates reduced with ``fmod`` first,
texel centers at ``i + 0.5``, LINEAR filtering ``v0 * (1 - f) + v1 * f`` per axis, CLOSEST
rounding down in float64, mip levels blended in ``lod``.

Derivatives: with respect to the coordinates (and ``lod``), the exact derivative of that
piecewise-linear function; at a cell boundary the cell starting there (Warp's "toward
increasing coordinates"), zero for CLOSEST filtering and where a coordinate is clamped; none
into the texture data (as Warp).
"""
from __future__ import annotations

import ast

from ..core import types as T
from ..core.errors import KernelTypeError
from . import kernel_scope as wp
from .registry import REGISTRY, special_form

# a value differentiated as another (weft.stdlib.mesh): the sample's value, its residual's
# derivatives
_value_grad_of = REGISTRY["_value_grad_of"]

# address modes (weft.runtime.texture.TextureAddressMode)
WRAP, CLAMP, MIRROR, BORDER = 0, 1, 2, 3


@wp.func
def tex_index(i: int, size: int, mode: int):
    """Texel index ``i`` of an axis of ``size`` texels under address ``mode`` (BORDER: as is;
    the fetch reads 0 outside)."""
    m = i
    if mode == 0:
        m = i % size
        if m < 0:
            m = m + size
    elif mode == 1:
        if m < 0:
            m = 0
        if m > size - 1:
            m = size - 1
    elif mode == 2:
        period = 2 * size
        m = i % period
        if m < 0:
            m = m + period
        if m >= size:
            m = period - m - 1
    return m


@wp.func
def tex_reduce(coord: wp.float32, normalized: int, base: int, mode: int):
    """A coordinate as a fraction of the texture: periodic ones reduced to one period first."""
    c = coord
    if mode == 0 or mode == 2:
        period = wp.float32(1.0)
        if normalized == 0:
            period = wp.float32(base)
        if mode == 2:
            period = period * wp.float32(2.0)
        c = wp.mod(c, period)
        if c < wp.float32(0.0):
            c = c + period
    if normalized == 0:
        c = c / wp.float32(base)
    return c


@wp.func
def tex_texel(c: wp.float32, size: int, mode: int):
    """The continuous texel position of fraction ``c`` on an axis of ``size`` texels (texel
    ``i`` centered at ``i + 0.5``), bounded as the address mode needs."""
    t = c * wp.float32(size) - wp.float32(0.5)
    if mode == 1:
        if t < wp.float32(0.0):
            t = wp.float32(0.0)
        if t > wp.float32(size - 1):
            t = wp.float32(size - 1)
    elif mode == 3:
        if t < wp.float32(-2.0):
            t = wp.float32(-2.0)
        if t > wp.float32(size):
            t = wp.float32(size)
    return t


@wp.func
def tex_nearest(coord: wp.float32, normalized: int, base: int, size: int, mode: int):
    """The texel CLOSEST filtering reads on one axis (computed in float64)."""
    r = wp.float64(coord)
    if mode == 0 or mode == 2:
        period = wp.float64(1.0)
        if normalized == 0:
            period = wp.float64(base)
        if mode == 2:
            period = period * wp.float64(2.0)
        r = wp.mod(r, period)
    t = r * wp.float64(size)
    if normalized == 0:
        t = r * wp.float64(size) / wp.float64(base)
    if mode == 1 or mode == 3:
        if t < wp.float64(-1.0):
            t = wp.float64(-1.0)
        if t > wp.float64(size):
            t = wp.float64(size)
    return tex_index(int(wp.floor(t)), size, mode)


@wp.func
def tex_fetch(texels: wp.array(dtype=wp.float32), channels: int, off: int, w: int, h: int,
              d: int, x: int, y: int, z: int):
    """The texel's channels (zero past the texture's channels, all zero outside it)."""
    if x < 0 or x >= w or y < 0 or y >= h or z < 0 or z >= d:
        return wp.vec4f(0.0, 0.0, 0.0, 0.0)
    i = off + ((z * h + y) * w + x) * channels
    if channels == 1:
        return wp.vec4f(texels[i], 0.0, 0.0, 0.0)
    if channels == 2:
        return wp.vec4f(texels[i], texels[i + 1], 0.0, 0.0)
    return wp.vec4f(texels[i], texels[i + 1], texels[i + 2], texels[i + 3])


@wp.func
def tex_axis_cell(coord: wp.float32, normalized: int, base: int, size: int, mode: int):
    """LINEAR filtering on one axis: (first texel, second texel, weight of the second)."""
    t = tex_texel(tex_reduce(coord, normalized, base, mode), size, mode)
    f0 = wp.floor(t)
    i0 = int(f0)
    return tex_index(i0, size, mode), tex_index(i0 + 1, size, mode), t - f0


@wp.func
def tex_scale(d: wp.vec4f, s: wp.float32):
    """``d * s``, whose adjoint in ``s`` skips the channels whose adjoint is zero (Warp's
    ``texture_grad_dot``): an unused channel with an overflowing difference of texels adds
    nothing, not NaN."""
    return d * s


@wp.func_grad(tex_scale)
def _tex_scale_grad(d, s, ret, adj_ret):
    g = wp.float32(0.0)
    for c in range(4):
        if adj_ret[c] != wp.float32(0.0):
            g = g + adj_ret[c] * d[c]
    wp.adjoint[d] += adj_ret * s
    wp.adjoint[s] += g


@wp.func_tangent(tex_scale)
def _tex_scale_tangent(d, s, ret, dd, ds):
    t = dd * s
    if ds != wp.float32(0.0):
        t = t + d * ds
    return t


# Each ``tex*_at`` returns (value, anchor, residual) of one level: the value as Warp's sampler
# computes it, and the same sample as its first texel (the anchor, constant in the
# coordinates) plus the interpolated differences to it (the residual), whose derivatives are
# the sample's, free of the cancellation of differentiating the value's products of large
# texels (Warp's adjoint works from the same differences).

@wp.func
def tex1_at(tex, level: int, u: wp.float32):
    row = (tex.k_slot * 16 + level) * 4
    off = tex.k_levels[row]
    w = tex.k_levels[row + 1]
    if tex.k_filter == 0:
        x = tex_nearest(u, tex.k_normalized, tex.width, w, tex.k_address_u)
        v = tex_fetch(tex.k_texels, tex.k_channels, off, w, 1, 1, x, 0, 0)
        return v, v, wp.vec4f(0.0, 0.0, 0.0, 0.0)
    x0, x1, fx = tex_axis_cell(u, tex.k_normalized, tex.width, w, tex.k_address_u)
    v0 = tex_fetch(tex.k_texels, tex.k_channels, off, w, 1, 1, x0, 0, 0)
    v1 = tex_fetch(tex.k_texels, tex.k_channels, off, w, 1, 1, x1, 0, 0)
    return v0 * (wp.float32(1.0) - fx) + v1 * fx, v0, tex_scale(v1 - v0, fx)


@wp.func
def tex2_at(tex, level: int, u: wp.float32, v: wp.float32):
    row = (tex.k_slot * 16 + level) * 4
    off = tex.k_levels[row]
    w = tex.k_levels[row + 1]
    h = tex.k_levels[row + 2]
    if tex.k_filter == 0:
        x = tex_nearest(u, tex.k_normalized, tex.width, w, tex.k_address_u)
        y = tex_nearest(v, tex.k_normalized, tex.height, h, tex.k_address_v)
        r = tex_fetch(tex.k_texels, tex.k_channels, off, w, h, 1, x, y, 0)
        return r, r, wp.vec4f(0.0, 0.0, 0.0, 0.0)
    x0, x1, fx = tex_axis_cell(u, tex.k_normalized, tex.width, w, tex.k_address_u)
    y0, y1, fy = tex_axis_cell(v, tex.k_normalized, tex.height, h, tex.k_address_v)
    v00 = tex_fetch(tex.k_texels, tex.k_channels, off, w, h, 1, x0, y0, 0)
    v10 = tex_fetch(tex.k_texels, tex.k_channels, off, w, h, 1, x1, y0, 0)
    v01 = tex_fetch(tex.k_texels, tex.k_channels, off, w, h, 1, x0, y1, 0)
    v11 = tex_fetch(tex.k_texels, tex.k_channels, off, w, h, 1, x1, y1, 0)
    gx = wp.float32(1.0) - fx
    gy = wp.float32(1.0) - fy
    a = v00 * gx + v10 * fx
    b = v01 * gx + v11 * fx
    rb = tex_scale(v01 - v00, gx) + tex_scale(v11 - v00, fx)
    return a * gy + b * fy, v00, tex_scale(tex_scale(v10 - v00, fx), gy) + tex_scale(rb, fy)


@wp.func
def tex3_at(tex, level: int, u: wp.float32, v: wp.float32, s: wp.float32):
    row = (tex.k_slot * 16 + level) * 4
    off = tex.k_levels[row]
    w = tex.k_levels[row + 1]
    h = tex.k_levels[row + 2]
    d = tex.k_levels[row + 3]
    if tex.k_filter == 0:
        x = tex_nearest(u, tex.k_normalized, tex.width, w, tex.k_address_u)
        y = tex_nearest(v, tex.k_normalized, tex.height, h, tex.k_address_v)
        z = tex_nearest(s, tex.k_normalized, tex.depth, d, tex.k_address_w)
        r = tex_fetch(tex.k_texels, tex.k_channels, off, w, h, d, x, y, z)
        return r, r, wp.vec4f(0.0, 0.0, 0.0, 0.0)
    x0, x1, fx = tex_axis_cell(u, tex.k_normalized, tex.width, w, tex.k_address_u)
    y0, y1, fy = tex_axis_cell(v, tex.k_normalized, tex.height, h, tex.k_address_v)
    z0, z1, fz = tex_axis_cell(s, tex.k_normalized, tex.depth, d, tex.k_address_w)
    c = tex.k_channels
    v000 = tex_fetch(tex.k_texels, c, off, w, h, d, x0, y0, z0)
    v100 = tex_fetch(tex.k_texels, c, off, w, h, d, x1, y0, z0)
    v010 = tex_fetch(tex.k_texels, c, off, w, h, d, x0, y1, z0)
    v110 = tex_fetch(tex.k_texels, c, off, w, h, d, x1, y1, z0)
    v001 = tex_fetch(tex.k_texels, c, off, w, h, d, x0, y0, z1)
    v101 = tex_fetch(tex.k_texels, c, off, w, h, d, x1, y0, z1)
    v011 = tex_fetch(tex.k_texels, c, off, w, h, d, x0, y1, z1)
    v111 = tex_fetch(tex.k_texels, c, off, w, h, d, x1, y1, z1)
    gx = wp.float32(1.0) - fx
    gy = wp.float32(1.0) - fy
    gz = wp.float32(1.0) - fz
    a0 = v000 * gx + v100 * fx
    b0 = v010 * gx + v110 * fx
    a1 = v001 * gx + v101 * fx
    b1 = v011 * gx + v111 * fx
    p = a0 * gy + b0 * fy
    q = a1 * gy + b1 * fy
    lower = tex_scale(tex_scale(v100 - v000, fx), gy) + \
        tex_scale(tex_scale(v010 - v000, gx) + tex_scale(v110 - v000, fx), fy)
    upper = tex_scale(tex_scale(v001 - v000, gx) + tex_scale(v101 - v000, fx), gy) + \
        tex_scale(tex_scale(v011 - v000, gx) + tex_scale(v111 - v000, fx), fy)
    return p * gz + q * fz, v000, tex_scale(lower, gz) + tex_scale(upper, fz)


@wp.func
def tex_levels(n: int, mip_filter: int, lod: wp.float32):
    """The mip levels a sample at ``lod`` reads and the weight of the second: (first, second,
    weight); second -1 when one level is read."""
    if lod < wp.float32(0.0) or n <= 1:
        return 0, -1, wp.float32(0.0)
    cl = lod
    top = wp.float32(n - 1)
    if cl > top:
        cl = top
    if mip_filter == 0:
        nearest = int(wp.floor(cl + wp.float32(0.5)))
        if nearest >= n:
            nearest = n - 1
        return nearest, -1, wp.float32(0.0)
    l0 = int(wp.floor(cl))
    if l0 + 1 >= n:
        return l0, -1, wp.float32(0.0)
    return l0, l0 + 1, cl - wp.float32(l0)


@wp.func
def tex_blend(r0: wp.vec4f, a0: wp.vec4f, e0: wp.vec4f, r1: wp.vec4f, a1: wp.vec4f,
              e1: wp.vec4f, fl: wp.float32):
    """Two levels blended: the value as Warp's sampler, differentiated as
    ``e0 + ((a1 - a0) + (e1 - e0)) * fl`` (the blend of the residuals); a channel whose
    difference of levels is not finite that way (texels near the float32 range) takes the
    difference of the two samples instead (as Warp)."""
    value = r0 * (wp.float32(1.0) - fl) + r1 * fl
    step = (a1 - a0) + (e1 - e0)
    sampled = r1 - r0
    for c in range(4):
        if not wp.isfinite(step[c]):
            step[c] = sampled[c]
    return _value_grad_of(value, e0 + tex_scale(step, fl))


@wp.func
def tex1_sample(tex, u: wp.float32, lod: wp.float32):
    if tex.width == 0:
        return wp.vec4f(0.0, 0.0, 0.0, 0.0)
    l0, l1, fl = tex_levels(tex.k_num_levels, tex.k_mip_filter, lod)
    r0, a0, e0 = tex1_at(tex, l0, u)
    if l1 < 0:
        return _value_grad_of(r0, e0)
    r1, a1, e1 = tex1_at(tex, l1, u)
    return tex_blend(r0, a0, e0, r1, a1, e1, fl)


@wp.func
def tex2_sample(tex, u: wp.float32, v: wp.float32, lod: wp.float32):
    if tex.width == 0:
        return wp.vec4f(0.0, 0.0, 0.0, 0.0)
    l0, l1, fl = tex_levels(tex.k_num_levels, tex.k_mip_filter, lod)
    r0, a0, e0 = tex2_at(tex, l0, u, v)
    if l1 < 0:
        return _value_grad_of(r0, e0)
    r1, a1, e1 = tex2_at(tex, l1, u, v)
    return tex_blend(r0, a0, e0, r1, a1, e1, fl)


@wp.func
def tex3_sample(tex, u: wp.float32, v: wp.float32, s: wp.float32, lod: wp.float32):
    if tex.width == 0:
        return wp.vec4f(0.0, 0.0, 0.0, 0.0)
    l0, l1, fl = tex_levels(tex.k_num_levels, tex.k_mip_filter, lod)
    r0, a0, e0 = tex3_at(tex, l0, u, v, s)
    if l1 < 0:
        return _value_grad_of(r0, e0)
    r1, a1, e1 = tex3_at(tex, l1, u, v, s)
    return tex_blend(r0, a0, e0, r1, a1, e1, fl)


@wp.func
def tex_channel1(r: wp.vec4f):
    return r[0]


@wp.func
def tex_channel2(r: wp.vec4f):
    return wp.vec2f(r[0], r[1])


_SAMPLERS = {1: tex1_sample, 2: tex2_sample, 3: tex3_sample}
_COORD_TYPES = {2: T.vec2f, 3: T.vec3f}
_NAMES = {1: "u", 2: "uv", 3: "uvw"}


def _result_type(ctx, dtype_node):
    try:
        want = ctx.resolve(dtype_node)
    except Exception:  # noqa: BLE001 - any unresolvable expression is the same user error
        want = None
    if want is float:
        return T.float32
    for t in (T.float32, T.vec2f, T.vec4f):
        if want is t:
            return t
    raise ctx.fail(dtype_node, f"unsupported texture type `{ast.unparse(dtype_node)}`. "
                   "Supported types: float, vec2f, vec4f", KernelTypeError)


def _as_f32(ctx, value, node, what):
    value = ctx.adapt_literal(value, T.float32)
    if getattr(value, "type", None) is not T.float32:
        raise ctx.fail(node, f"wp.texture_sample: {what} must be a float32, got "
                       f"{T.type_name(getattr(value, 'type', value))}", KernelTypeError)
    return value


@special_form("texture_sample", "texture_sample(tex, u | uv | uvw | u, v[, w], dtype=float|vec2f|"
              "vec4f, lod=-1.0) -> dtype: a filtered sample of a wp.Texture1D/2D/3D (Warp's "
              "CPU sampler; differentiable in the coordinates and lod)")
def texture_sample(ctx, node):
    if not node.args:
        raise ctx.fail(node, "wp.texture_sample(tex, coords, dtype=..., lod=-1.0) needs a "
                       "texture", KernelTypeError)
    tex = ctx.expr(node.args[0])
    ndim = getattr(getattr(tex, "type", None), "_wp_texture_ndim_", None)
    if ndim is None:
        raise ctx.fail(node.args[0], "wp.texture_sample expects a wp.Texture1D, wp.Texture2D "
                       f"or wp.Texture3D, got {T.type_name(getattr(tex, 'type', tex))}",
                       KernelTypeError)
    kw = {k.arg: k.value for k in node.keywords}
    unknown = set(kw) - {"dtype", "lod", "u", "v", "w", "uv", "uvw"}
    if unknown:
        raise ctx.fail(node, f"wp.texture_sample got an unexpected keyword argument "
                       f"'{sorted(unknown)[0]}'", KernelTypeError)
    rest = list(node.args[1:])
    # coordinates: one scalar (1D) or vector (2D/3D), or one scalar per axis
    coords = []
    coord_nodes = []
    for name in ("uvw", "uv"):
        if name in kw:
            rest.insert(0, kw.pop(name))
    while rest and len(coords) < ndim:
        n_ = rest[0]
        try:
            obj = ctx.resolve(n_) if isinstance(n_, (ast.Name, ast.Attribute)) else None
        except Exception:  # noqa: BLE001
            obj = None
        if isinstance(obj, type) or obj is float:
            break
        rest.pop(0)
        value = ctx.expr(n_)
        coord_nodes.append(n_)
        if ndim > 1 and not coords and T.is_vector(getattr(value, "type", None)):
            if value.type is not _COORD_TYPES[ndim]:
                raise ctx.fail(n_, f"wp.texture_sample of a {ndim}D texture takes "
                               f"{_NAMES[ndim]} as a vec{ndim}f, got "
                               f"{T.type_name(value.type)}", KernelTypeError)
            for k in range(ndim):
                coords.append(ctx.apply("extract", [value, _const_int(k)], n_))
            break
        coords.append(_as_f32(ctx, value, n_, "a coordinate"))
    for name in ("u", "v", "w")[:ndim]:
        if name in kw:
            coords.append(_as_f32(ctx, ctx.expr(kw[name]), kw[name], name))
    if len(coords) != ndim:
        raise ctx.fail(node, f"wp.texture_sample of a {ndim}D texture takes "
                       f"{'u' if ndim == 1 else _NAMES[ndim] + ' (a vec%df) or %s' % (ndim, ', '.join('uvw'[:ndim]))}"
                       f" coordinates, got {len(coords)}", KernelTypeError)
    dtype_node = kw.pop("dtype", None)
    if dtype_node is None and rest:
        dtype_node = rest.pop(0)
    if dtype_node is None:
        raise ctx.fail(node, "wp.texture_sample needs dtype= (float, wp.vec2f or wp.vec4f)",
                       KernelTypeError)
    rtype = _result_type(ctx, dtype_node)
    lod_node = kw.pop("lod", None)
    if lod_node is None and rest:
        lod_node = rest.pop(0)
    if rest:
        raise ctx.fail(node, "wp.texture_sample got too many arguments", KernelTypeError)
    from .ir import Const
    lod = Const(-1.0, T.float32) if lod_node is None else \
        _as_f32(ctx, ctx.expr(lod_node), lod_node, "lod")
    r = ctx.call_func(_SAMPLERS[ndim], node, [tex, *coords, lod], ndim + 2)
    if rtype is T.vec4f:
        return r
    return ctx.call_func(tex_channel1 if rtype is T.float32 else tex_channel2, node, [r], 1)


def _const_int(k):
    from .ir import Const
    return Const(k, T.int32)
