"""Brute-force references for the mesh/BVH tests: every triangle or box, vectorized numpy in
float64, written independently of the cores (plane projection and segment distances for the
closest point, Moller-Trumbore for rays)."""
import numpy as np


def triangles(points, indices):
    t = points[indices.reshape(-1, 3)].astype(np.float64)
    return t[:, 0], t[:, 1], t[:, 2]


def sliver(points, indices):
    """Warp's sliver rule, in float64 (the cores use float32: compare away from 1e-6)."""
    a, b, c = triangles(points, indices)
    n = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    s = (np.sum((b - a) ** 2, 1) + np.sum((c - a) ** 2, 1) + np.sum((c - b) ** 2, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return n / s < 1e-6


def _segment_dist(p, x, y):
    d = y - x
    dd = np.maximum(np.sum(d * d, 1), 1e-300)
    s = np.clip(np.sum((p - x) * d, 1) / dd, 0, 1)
    return np.linalg.norm(x + s[:, None] * d - p, axis=1)


def triangle_distances(a, b, c, p):
    """Distance from ``p`` (3,) to every triangle (plane projection inside, else edges)."""
    e0 = a - c
    e1 = b - c
    w = p - c
    m00 = np.sum(e0 * e0, 1)
    m01 = np.sum(e0 * e1, 1)
    m11 = np.sum(e1 * e1, 1)
    r0 = np.sum(e0 * w, 1)
    r1 = np.sum(e1 * w, 1)
    det = m00 * m11 - m01 * m01
    with np.errstate(invalid="ignore", divide="ignore"):
        u = (r0 * m11 - r1 * m01) / det
        v = (r1 * m00 - r0 * m01) / det
    inside = (det > 0) & (u >= 0) & (v >= 0) & (u + v <= 1)
    proj = np.linalg.norm(c + u[:, None] * e0 + v[:, None] * e1 - p, axis=1)
    edges = np.minimum(np.minimum(_segment_dist(p, a, b), _segment_dist(p, b, c)),
                       _segment_dist(p, c, a))
    return np.where(inside, proj, edges)


def closest(points, indices, p, max_dist=np.inf):
    """(nearest distance among non-sliver faces, or inf when none is < max_dist)."""
    a, b, c = triangles(points, indices)
    d = triangle_distances(a, b, c, p)
    d[sliver(points, indices)] = np.inf
    m = d.min() if len(d) else np.inf
    return m if m < max_dist else np.inf


def ray_hits(points, indices, o, d):
    """Moller-Trumbore against every face: (t (inf for a miss), smallest barycentric)."""
    a, b, c = triangles(points, indices)
    o = o.astype(np.float64)
    d = d.astype(np.float64)
    e1 = b - a
    e2 = c - a
    pv = np.cross(d, e2)
    det = np.sum(e1 * pv, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        inv = 1 / det
        tv = o - a
        v = np.sum(tv * pv, 1) * inv
        qv = np.cross(tv, e1)
        w = np.sum(d * qv, 1) * inv
        t = np.sum(e2 * qv, 1) * inv
    u = 1 - v - w
    bmin = np.minimum(np.minimum(u, v), w)
    hit = (det != 0) & (bmin >= 0) & (t >= 0)
    return np.where(hit, t, np.inf), np.where(np.isfinite(bmin), bmin, -np.inf)


def box_overlap(lo, up, qlo, qup):
    """Items whose (float32) box overlaps the query box, closed."""
    return np.flatnonzero(~((lo > qup).any(1) | (up < qlo).any(1)))


def ray_boxes(lo, up, o, d, max_dist=np.inf):
    """Items whose box the ray enters at t < max_dist, with Warp's float32 slab test."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = (np.float32(1) / d).astype(np.float32)
        l1 = (lo - o) * r
        l2 = (up - o) * r
    lmin = np.fmax.reduce(np.fmin(l1, l2), axis=1)
    lmax = np.fmin.reduce(np.fmax(l1, l2), axis=1)
    # Warp folds per axis starting from the first: fmin/fmax are associative here (NaN-free
    # for these rays), so the reductions equal its running values
    return np.flatnonzero((lmax >= 0) & (lmax >= lmin) & ~(lmin >= max_dist))


def sphere_boxes(lo, up, c, r):
    dd = np.maximum(np.maximum(lo - c, c - up), 0)
    return np.flatnonzero(np.sum(dd * dd, 1) <= r * r)
