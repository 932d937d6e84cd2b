"""Samples (and 2D gradients) of many textures under Warp 1.19 and weft, for a bit-level
comparison (not a test: it needs Warp). Run ``python compare_with_warp.py warp`` with Warp's
Python and ``python compare_with_warp.py weft`` with weft's, then ``python compare_with_warp.py
compare``. On 29 Nov 2026: all 1344 sample arrays (every dimension, filter, address mode,
coordinate kind, 1 and 4 channels, float32 and uint8, with and without mips and lods), the 16
losses and 16 lod gradients bit for bit equal to Warp's; the coordinate gradients within
2.3e-6 relative (another order of the same float32 products)."""
import itertools
import sys

import numpy as np

impl = sys.argv[1]
if impl == "compare":
    a, b = np.load("/tmp/tex_cmp_warp.npz"), np.load("/tmp/tex_cmp_weft.npz")
    same = [k for k in a.files if np.array_equal(a[k], b[k])]
    worst = max((float(np.max(np.abs(a[k] - b[k]) / (1 + np.abs(a[k])))), k)
                for k in a.files)
    print(f"{len(a.files)} arrays, {len(same)} bit for bit equal; worst relative {worst}")
    sys.exit(0)
if impl == "warp":
    import warp as wp
    wp.config.quiet = True
else:
    import weft as wp
F, A = wp.TextureFilterMode, wp.TextureAddressMode

@wp.kernel
def s1(t: wp.Texture1D, c: wp.array(dtype=wp.vec3), lod: float, out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i][0], dtype=wp.vec4f, lod=lod)

@wp.kernel
def s2(t: wp.Texture2D, c: wp.array(dtype=wp.vec3), lod: float, out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, wp.vec2(c[i][0], c[i][1]), dtype=wp.vec4f, lod=lod)

@wp.kernel
def s3(t: wp.Texture3D, c: wp.array(dtype=wp.vec3), lod: float, out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    out[i] = wp.texture_sample(t, c[i], dtype=wp.vec4f, lod=lod)

@wp.kernel
def g2(t: wp.Texture2D, c: wp.array(dtype=wp.vec2), lod: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.dot(wp.texture_sample(t, c[i], dtype=wp.vec4f, lod=lod[i]), wp.vec4(1.0, -2.0, 0.5, 3.0))

K = {1: (s1, wp.Texture1D), 2: (s2, wp.Texture2D), 3: (s3, wp.Texture3D)}
SH = {1: (9,), 2: (7, 10), 3: (4, 6, 5)}
rng = np.random.default_rng(0)
res = {}
for ndim in (1, 2, 3):
    for linear, mode, norm, ch, dt, mips in itertools.product((0, 1), (0, 1, 2, 3), (1, 0), (1, 4), ("f", "u8"), (1, 0)):
        shape = SH[ndim] + ((ch,) if ch > 1 else ())
        if dt == "f":
            data = rng.standard_normal(shape).astype(np.float32)
        else:
            data = rng.integers(0, 256, shape).astype(np.uint8)
        tex = K[ndim][1](data, filter_mode=F(linear), address_mode=A(mode), normalized_coords=bool(norm),
                         num_mip_levels=mips, device="cpu")
        c = rng.uniform(-1.7, 2.7, (64, 3)).astype(np.float32)
        c[:8] = np.round(c[:8] * 8) / 8  # texel boundaries
        if not norm:
            c *= np.array(SH[ndim][::-1] + (1,) * (3 - ndim), np.float32)
        for lod in ((-1.0,) if mips == 1 else (-1.0, 0.0, 0.6, 1.0, 1.37, 5.0)):
            out = wp.zeros(64, dtype=wp.vec4, device="cpu")
            wp.launch(K[ndim][0], 64, inputs=[tex, wp.array(c, dtype=wp.vec3, device="cpu"), lod, out], device="cpu")
            res[f"{ndim}_{linear}_{mode}_{norm}_{ch}_{dt}_{mips}_{lod}"] = out.numpy()
# gradients (2D)
for mode, norm, mips in itertools.product((0, 1, 2, 3), (1, 0), (1, 0)):
    data = rng.standard_normal((8, 8, 4)).astype(np.float32)
    tex = wp.Texture2D(data, address_mode=A(mode), normalized_coords=bool(norm), num_mip_levels=mips, device="cpu")
    c = rng.uniform(-1.3, 2.3, (32, 2)).astype(np.float32)
    if not norm:
        c *= 8
    lods = rng.uniform(-0.5, 4.0, 32).astype(np.float32)
    ca = wp.array(c, dtype=wp.vec2, requires_grad=True, device="cpu")
    la = wp.array(lods, dtype=float, requires_grad=True, device="cpu")
    out = wp.zeros(32, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(g2, 32, inputs=[tex, ca, la], outputs=[out], device="cpu")
    out.grad = wp.array(np.ones(32, np.float32), dtype=float, device="cpu")
    tape.backward()
    res[f"grad_{mode}_{norm}_{mips}_val"] = out.numpy()
    res[f"grad_{mode}_{norm}_{mips}_uv"] = ca.grad.numpy()
    res[f"grad_{mode}_{norm}_{mips}_lod"] = la.grad.numpy()
np.savez(f"/tmp/tex_cmp_{impl}.npz", **res)
print(impl, len(res))
