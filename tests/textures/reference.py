"""An independent numpy model of texture sampling (float64), for the tests: texel ``i`` centered
at ``(i + 0.5) / size``; LINEAR blends the two nearest texels per axis, CLOSEST takes the texel
containing the coordinate; WRAP/MIRROR/CLAMP map texel indices, BORDER reads 0 outside."""
import numpy as np

WRAP, CLAMP, MIRROR, BORDER = 0, 1, 2, 3


def index(i, n, mode):
    """Texel index ``i`` (int array) mapped into ``[0, n)``; -1 where BORDER reads 0."""
    i = np.asarray(i, np.int64)
    if mode == WRAP:
        return np.mod(i, n)
    if mode == CLAMP:
        return np.clip(i, 0, n - 1)
    if mode == MIRROR:
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    return np.where((i >= 0) & (i < n), i, -1)


def _axis(coord, base, n, mode, normalized, linear):
    """Per axis: [(index, weight)] for the texels a sample reads."""
    frac = np.float64(coord) if normalized else np.float64(coord) / base
    if not linear:
        return [(index(np.floor(frac * n), n, mode), 1.0)]
    t = frac * n - 0.5
    i0 = np.floor(t)
    f = t - i0
    return [(index(i0, n, mode), 1.0 - f), (index(i0 + 1, n, mode), f)]


def sample_level(level, coords, base, modes, normalized, linear):
    """``level``: (D, H, W, C) float64 values of one mip level; coords (u, v, w); the sample's
    C channels."""
    sizes = level.shape[:3][::-1]  # W, H, D
    taps = [_axis(c, b, n, m, normalized, linear)
            for c, b, n, m in zip(coords, base, sizes, modes)]
    out = np.zeros(level.shape[3])
    for ix, wx in taps[0]:
        for iy, wy in taps[1]:
            for iz, wz in taps[2]:
                if ix < 0 or iy < 0 or iz < 0:
                    continue
                out += wx * wy * wz * level[iz, iy, ix]
    return out


def halve(values, axis):
    n = values.shape[axis]
    new = max(1, n // 2)
    if n == new:
        return values
    a = np.take(values, np.arange(new) * 2, axis=axis)
    b = np.take(values, np.minimum(np.arange(new) * 2 + 1, n - 1), axis=axis)
    return (a + b) / 2


def levels(values, n_levels, ndim):
    """The mip chain of float data ``values`` (D, H, W, C)."""
    out = [values]
    for _ in range(n_levels - 1):
        v = out[-1]
        for axis in (2, 1, 0)[:ndim]:
            v = halve(v, axis)
        out.append(v)
    return out


def sample(values, coords, ndim, modes=(CLAMP,) * 3, normalized=True, linear=True, lod=-1.0,
           n_levels=1, mip_linear=True):
    """A sample of the texture of float64 ``values`` (D, H, W, C) at ``coords``, 4 channels."""
    chain = levels(values, n_levels, ndim)
    base = values.shape[:3][::-1]
    coords = list(coords) + [0.5] * (3 - len(coords))
    modes = list(modes) + [CLAMP] * (3 - len(modes))
    if not normalized:
        coords = [c if k < ndim else c * b for k, (c, b) in enumerate(zip(coords, base))]

    def at(k):
        r = sample_level(chain[k], coords, base, modes, normalized, linear)
        return np.concatenate([r, np.zeros(4 - r.size)])
    if lod < 0 or n_levels == 1:
        return at(0)
    lod = min(lod, n_levels - 1)
    if not mip_linear:
        return at(min(int(np.floor(lod + 0.5)), n_levels - 1))
    l0 = int(np.floor(lod))
    if l0 + 1 >= n_levels:
        return at(l0)
    f = lod - l0
    return at(l0) * (1 - f) + at(l0 + 1) * f
