"""Textures (``wp.Texture1D/2D/3D``, ``wp.texture_sample``) against the numpy model of
:mod:`.reference`: every filter and address mode, normalized and texel coordinates, 1, 2 and 4
channels, integer normalization, mip levels, arrays of textures, struct members, derivatives
(against float64 central differences of the model) and the errors."""
import itertools

import numpy as np
import pytest

import weft as wp

from . import reference as R

F, A = wp.TextureFilterMode, wp.TextureAddressMode


@wp.kernel
def sample1(t: wp.Texture1D, c: wp.array(dtype=wp.vec3), lod: float,
            out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i][0], dtype=wp.vec4f, lod=lod)


@wp.kernel
def sample2(t: wp.Texture2D, c: wp.array(dtype=wp.vec3), lod: float,
            out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, wp.vec2(c[i][0], c[i][1]), dtype=wp.vec4f, lod=lod)


@wp.kernel
def sample3(t: wp.Texture3D, c: wp.array(dtype=wp.vec3), lod: float,
            out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], dtype=wp.vec4f, lod=lod)


KERNELS = {1: (sample1, wp.Texture1D), 2: (sample2, wp.Texture2D), 3: (sample3, wp.Texture3D)}
SHAPES = {1: (1, 1, 7), 2: (1, 5, 6), 3: (3, 4, 5)}


def _data(ndim, channels, rng):
    d, h, w = SHAPES[ndim]
    values = rng.standard_normal((d, h, w, channels)).astype(np.float32)
    shaped = values.reshape((d, h, w)[3 - ndim:] + ((channels,) if channels > 1 else ()))
    return values.astype(np.float64), shaped


def _coords(ndim, normalized, rng, n=40):
    d, h, w = SHAPES[ndim]
    c = rng.uniform(-1.3, 2.3, (n, 3)).astype(np.float32)
    c[:4, :] = [[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.25, 0.75, 0.5]]
    if not normalized:
        c *= np.array([w, h, d], np.float32)
    return c


def _run(tex, ndim, coords, lod=-1.0):
    out = wp.zeros(len(coords), dtype=wp.vec4)
    wp.launch(KERNELS[ndim][0], len(coords), inputs=[tex, wp.array(coords, dtype=wp.vec3), lod,
                                                     out])
    return out.numpy()


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_filters_and_address_modes(ndim):
    rng = np.random.default_rng(ndim)
    for k, (linear, mode, normalized, channels) in enumerate(itertools.product(
            (False, True), (A.WRAP, A.CLAMP, A.MIRROR, A.BORDER), (True, False), (1, 2, 4))):
        if ndim != 2 and k % 3:  # a third of the cases for 1D and 3D
            continue
        values, shaped = _data(ndim, channels, rng)
        tex = KERNELS[ndim][1](shaped, filter_mode=F.LINEAR if linear else F.CLOSEST,
                               address_mode=mode, normalized_coords=normalized)
        coords = _coords(ndim, normalized, rng)
        got = _run(tex, ndim, coords)
        want = np.array([R.sample(values, c[:ndim], ndim, (mode,) * 3, normalized, linear)
                         for c in coords])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{linear=} {mode=} {normalized=} {channels=}")


def test_per_axis_modes_and_integer_formats():
    rng = np.random.default_rng(7)
    coords = _coords(2, True, rng)
    for np_t, scale in ((np.uint8, 255.0), (np.uint16, 65535.0), (np.int8, 127.0),
                        (np.int16, 32767.0)):
        info = np.iinfo(np_t)
        raw = rng.integers(info.min, info.max, (5, 6, 2), endpoint=True).astype(np_t)
        tex = wp.Texture2D(raw, address_mode=(A.WRAP, A.MIRROR))
        assert tex.dtype is getattr(wp, np.dtype(np_t).name) and tex.num_channels == 2
        values = np.maximum(raw.astype(np.float64) / scale, -1.0)[None]
        got = _run(tex, 2, coords)
        want = np.array([R.sample(values, c[:2], 2, (R.WRAP, R.MIRROR)) for c in coords])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=str(np_t))
    raw = rng.integers(-1000, 1000, (5, 6)).astype(np.int32)  # 32-bit: CLOSEST, not normalized
    tex = wp.Texture2D(raw, address_mode_u=A.BORDER, address_mode_v=A.WRAP)
    assert tex.filter_mode == F.CLOSEST
    got = _run(tex, 2, coords)
    want = np.array([R.sample(raw.astype(np.float64)[None, :, :, None], c[:2], 2,
                              (R.BORDER, R.WRAP), linear=False) for c in coords])
    np.testing.assert_allclose(got, want)


def test_mip_levels():
    rng = np.random.default_rng(3)
    values, shaped = _data(2, 1, rng)
    values = rng.standard_normal((1, 8, 8, 1))
    tex = wp.Texture2D(values[0, :, :, 0].astype(np.float32), num_mip_levels=0)
    assert tex.num_mip_levels == 4 and tex.is_mipmapped
    coords = _coords(2, True, rng, 10)
    for lod in (-1.0, 0.0, 0.4, 1.0, 2.7, 9.0):
        got = _run(tex, 2, coords, lod)
        want = np.array([R.sample(values, c[:2], 2, lod=lod, n_levels=4) for c in coords])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{lod=}")
    with pytest.raises(RuntimeError):
        tex.copy_from(values[0, :, :, 0].astype(np.float32))
    with pytest.raises(ValueError):
        wp.Texture2D(np.zeros((8, 8), np.float32), num_mip_levels=5)


@wp.kernel
def sample_many(texs: wp.array[wp.Texture2D], uv: wp.vec2,
                out: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    t = texs[i]
    out[i] = wp.texture_sample(t, uv, dtype=wp.vec2f) + wp.vec2(float(t.width), float(t.height))


def test_array_of_textures():
    rng = np.random.default_rng(4)
    datas = [rng.standard_normal((2 + k, 3 + k, 2)).astype(np.float32) for k in range(3)]
    texs = [wp.Texture2D(d, num_mip_levels=1 + (k == 1)) for k, d in enumerate(datas)]
    arr = wp.array([texs[2], texs[0], texs[1], texs[0]], dtype=wp.Texture2D)
    out = wp.zeros(4, dtype=wp.vec2)
    wp.launch(sample_many, 4, inputs=[arr, wp.vec2(0.3, 0.6), out])
    for k, j in enumerate((2, 0, 1, 0)):
        d = datas[j]
        want = R.sample(d.astype(np.float64)[None], (0.3, 0.6), 2)[:2] + [d.shape[1], d.shape[0]]
        np.testing.assert_allclose(out.numpy()[k], want, rtol=1e-5, atol=1e-5)
    texs[0].copy_from(datas[0] * 2)  # arrays see their textures' current data
    wp.launch(sample_many, 4, inputs=[arr, wp.vec2(0.3, 0.6), out])
    want = R.sample(datas[0].astype(np.float64)[None] * 2, (0.3, 0.6), 2)[:2] + [3, 2]
    np.testing.assert_allclose(out.numpy()[1], want, rtol=1e-5, atol=1e-5)


@wp.struct
class Material:
    albedo: wp.Texture2D
    gain: float


@wp.kernel
def shade(m: Material, u: float, v: float, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(m.albedo, u, v, float) * m.gain  # dtype given positionally


def test_struct_member_and_null_texture():
    m = Material()
    m.gain = 2.0
    out = wp.zeros(1, dtype=float)
    wp.launch(shade, 1, inputs=[m, 0.5, 0.5, out])  # an unset texture reads 0
    assert out.numpy()[0] == 0.0
    m.albedo = wp.Texture2D(np.full((2, 2), 1.5, np.float32))
    wp.launch(shade, 1, inputs=[m, 0.5, 0.5, out])
    assert out.numpy()[0] == 3.0


@wp.kernel
def loss2(t: wp.Texture2D, uv: wp.array(dtype=wp.vec2), lod: wp.array(dtype=float),
          w: wp.vec4, out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.texture_sample(t, uv[i], dtype=wp.vec4f, lod=lod[i])
    wp.atomic_add(out, 0, wp.dot(s, w))


def test_gradients_match_central_differences():
    rng = np.random.default_rng(5)
    values = rng.standard_normal((1, 8, 8, 4))
    w = np.array([0.3, -1.2, 0.7, 2.0])
    cases = [(A.WRAP, True, 0), (A.CLAMP, False, 0), (A.MIRROR, True, 2), (A.BORDER, True, 0)]
    for mode, normalized, n_levels in cases:
        tex = wp.Texture2D(values[0].astype(np.float32), address_mode=mode,
                           normalized_coords=normalized, num_mip_levels=n_levels or 1)
        n = 6
        uv = rng.uniform(-0.4, 1.4, (n, 2)).astype(np.float32)
        if not normalized:
            uv *= 8
        lods = rng.uniform(0.1, 2.8, n).astype(np.float32) if n_levels else \
            np.full(n, -1.0, np.float32)
        uv_a = wp.array(uv, dtype=wp.vec2, requires_grad=True)
        lod_a = wp.array(lods, dtype=float, requires_grad=True)
        out = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(loss2, n, inputs=[tex, uv_a, lod_a, wp.vec4(*w), out])
        tape.backward(loss=out)
        nl = tex.num_mip_levels

        def f(c, lod):
            return R.sample(values, c, 2, (mode,) * 2, normalized, lod=lod,
                            n_levels=nl) @ w
        h = 1e-3 * (1 if normalized else 8)
        for k in range(n):
            g = [(f(uv[k] + e, lods[k]) - f(uv[k] - e, lods[k])) / (2 * h)
                 for e in (np.array([h, 0]), np.array([0, h]))]
            np.testing.assert_allclose(uv_a.grad.numpy()[k], g, rtol=2e-3, atol=2e-3,
                                       err_msg=f"{mode=} {normalized=}")
            if n_levels:
                gl = (f(uv[k], lods[k] + 1e-3) - f(uv[k], lods[k] - 1e-3)) / 2e-3
                np.testing.assert_allclose(lod_a.grad.numpy()[k], gl, rtol=2e-3, atol=2e-3)
        # forward mode: the tangent of the loss along a direction of uv
        d_uv = rng.standard_normal((n, 2)).astype(np.float32)
        out2 = wp.zeros(1, dtype=float)
        tan = wp.jvp(loss2, n, inputs=[tex, uv_a, lod_a, wp.vec4(*w)], outputs=[out2],
                     tangents={uv_a: wp.array(d_uv, dtype=wp.vec2)})
        dot = float(np.sum(uv_a.grad.numpy() * d_uv))
        got = tan[out2].numpy()[0]
        np.testing.assert_allclose(got, dot, rtol=1e-4, atol=1e-4)


def test_errors():
    with pytest.raises(ValueError, match="num_channels"):
        wp.Texture2D(width=4, height=4, num_channels=3)
    with pytest.raises(ValueError, match="Unsupported texture dtype"):
        wp.Texture2D(np.zeros((2, 2), np.float64))
    with pytest.raises(ValueError, match="Invalid texture address mode"):
        wp.Texture2D(np.zeros((2, 2), np.float32), address_mode=7)
    with pytest.raises(ValueError, match="filter_mode.*CLOSEST"):
        wp.Texture2D(np.zeros((2, 2), np.int32), filter_mode=F.LINEAR)
    with pytest.raises(ValueError, match="2D texture data"):
        wp.Texture2D(np.zeros(4, np.float32))

    def bad_dtype(t: wp.Texture2D, out: wp.array(dtype=float)):
        out[0] = wp.texture_sample(t, wp.vec2(0.5, 0.5), dtype=wp.vec3)[0]

    def bad_coords(t: wp.Texture2D, out: wp.array(dtype=float)):
        out[0] = wp.texture_sample(t, wp.vec3(0.5, 0.5, 0.5), dtype=float)

    def not_a_texture(t: wp.array(dtype=float), out: wp.array(dtype=float)):
        out[0] = wp.texture_sample(t, 0.5, dtype=float)

    tex = wp.Texture2D(np.zeros((2, 2), np.float32))
    for fn, arg, msg in ((bad_dtype, tex, "Supported types: float, vec2f, vec4f"),
                         (bad_coords, tex, "vec2f"),
                         (not_a_texture, wp.zeros(1), "expects a wp.Texture1D")):
        k = wp.kernel(fn)
        with pytest.raises(wp.KernelError, match=msg):
            wp.launch(k, 1, inputs=[arg, wp.zeros(1)])
