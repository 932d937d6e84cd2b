"""Portable geometric primitives of Warp 1.19's mesh and BVH queries, in float32 like Warp's
``intersect.h``: ray-box slab tests, triangle closest/furthest points, the watertight
ray-triangle test, segment-segment closest points, triangle-triangle overlap and the solid
angle of a triangle. Plain Python on scalars and tuples (see ``weft/stdlib/_portable.py``):
they run uncompiled and compile for the CPU and CUDA through ``mesh_query.compile_for``.

Every float constant is a float32 global (a Python float literal would make Numba compute in
float64). Warp's ``min``/``max`` on floats are C's ``fminf``/``fmaxf`` (``wmin``/``wmax``
here: the non-NaN operand wins); its bounds code uses ``std::min`` semantics (``b < a ? b :
a``), written out where it matters. Warp compiles its CPU kernels with ``-march=native``, where
clang may fuse ``a*b + c`` into one FMA; these functions round every operation separately,
except ``diff_product``, which is an FMA in Warp's source too.
"""
import math

import numpy as np

from .portable import variant

F0 = np.float32(0.0)
F1 = np.float32(1.0)
F2 = np.float32(2.0)
FH = np.float32(0.5)
FLT_MAX = np.float32(3.4028234663852886e38)
#: Warp's ``kEps`` below which ``normalize`` returns the zero vector
K_EPS = np.float32(0.0)
F_NAN = np.float32(np.nan)
#: ``3.14159265359f`` as written in Warp's ``mesh_query_point_sign_normal``
PI_F = np.float32(3.14159265359)


def wmin(a, b):
    """Warp's float ``min`` (C ``fminf``): the smaller, or the non-NaN operand."""
    if a <= b:
        return a
    if b == b:
        return b
    return a


def wmax(a, b):
    """Warp's float ``max`` (C ``fmaxf``)."""
    if a >= b:
        return a
    if b == b:
        return b
    return a


def f32x3(x, y, z):
    """Three values as float32 (the queries' points and directions)."""
    return np.float32(x), np.float32(y), np.float32(z)


def tri_row(tris, k):
    """The vertices of row ``k`` of a mesh's ``tris`` (nine float32s)."""
    return (tris[k, 0], tris[k, 1], tris[k, 2], tris[k, 3], tris[k, 4], tris[k, 5], tris[k, 6],
            tris[k, 7], tris[k, 8])


def fsqrt(x):
    return np.float32(math.sqrt(x))


def facos(x):
    """C ``acosf`` (NaN outside [-1, 1], where Python's ``math.acos`` raises)."""
    if x > F1 or x < -F1:
        return F_NAN
    return np.float32(math.acos(x))


def dot3(ax, ay, az, bx, by, bz):
    return ax * bx + ay * by + az * bz


def sub3(ax, ay, az, bx, by, bz):
    return ax - bx, ay - by, az - bz


def div3(x, y, z, s):
    return x / s, y / s, z / s


def cross3(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


def length3(x, y, z):
    return fsqrt(x * x + y * y + z * z)


def normalize3(x, y, z):
    """Warp's ``normalize``: the zero vector when the length is not > kEps (0 for float32)."""
    n = fsqrt(x * x + y * y + z * z)
    if n > K_EPS:
        return x / n, y / n, z / n
    return F0, F0, F0


def longest_axis3(x, y, z):
    """Warp's ``longest_axis`` of |v| (the first of the largest)."""
    ax = abs(x)
    k = 0
    if abs(y) > ax:
        k = 1
        ax = abs(y)
    if abs(z) > ax:
        k = 2
    return k


def fmaf(a, b, c):
    """C ``fmaf`` (``a*b + c`` rounded once) for float32 operands, evaluated in float64: the
    product is exact there, so the result differs from a true FMA only in the rare case where
    the float64 sum lands exactly on a float32 rounding boundary. ``compile_for`` replaces it
    with the hardware FMA on the CPU (``llvm.fma.f32``) and ``cuda.fma`` on CUDA."""
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


def diff_product(a, b, c, d):
    """``a*b - c*d`` with Kahan's FMA trick as Warp's ``diff_product``: ``fmaf(a, b, -c*d) +
    fmaf(-c, d, c*d)`` (the second term is the exact rounding error of ``c*d``)."""
    cd = c * d
    return fmaf(a, b, -cd) + fmaf(-c, d, cd)


# ------------------------------------------------------------------------------ boxes
def ray_aabb(ox, oy, oz, rx, ry, rz, lx, ly, lz, ux, uy, uz):
    """Warp's ``intersect_ray_aabb`` (slab test with the reciprocal direction ``r``):
    ``(hit, t_enter)``; hit when the exit is >= 0 and >= the entry. With ``fminf``/``fmaxf``
    semantics for the NaNs of ``0 * inf``; ``ray_aabb_f`` is the same when no slab value can be
    NaN (finite origin and reciprocal direction, finite boxes), with plain min/max."""
    l1 = (lx - ox) * rx
    l2 = (ux - ox) * rx
    lmin = wmin(l1, l2)
    lmax = wmax(l1, l2)
    l1 = (ly - oy) * ry
    l2 = (uy - oy) * ry
    lmin = wmax(wmin(l1, l2), lmin)
    lmax = wmin(wmax(l1, l2), lmax)
    l1 = (lz - oz) * rz
    l2 = (uz - oz) * rz
    lmin = wmax(wmin(l1, l2), lmin)
    lmax = wmin(wmax(l1, l2), lmax)
    return (lmax >= F0) & (lmax >= lmin), lmin


def _robust_slab(o, d, r, lo, up, lmin, lmax):
    """One slab of ``ray_aabb_robust``: ``(ok, lmin, lmax)``, the entry and exit narrowed by
    ``(lo - o) * r`` and ``(up - o) * r``; a zero direction component leaves the slab
    unconstrained, ``ok`` when the origin lies within it."""
    if d == F0:
        return not (o < lo or o > up), lmin, lmax
    l1 = (lo - o) * r
    l2 = (up - o) * r
    return True, wmax(wmin(l1, l2), lmin), wmin(wmax(l1, l2), lmax)


def ray_aabb_robust(ox, oy, oz, dx, dy, dz, rx, ry, rz, lx, ly, lz, ux, uy, uz):
    """Warp's ``intersect_ray_aabb_robust``: a zero direction component leaves that slab
    unconstrained when the origin lies within it (and misses otherwise)."""
    ok, lmin, lmax = _robust_slab(ox, dx, rx, lx, ux, -FLT_MAX, FLT_MAX)
    if not ok:
        return False, lmin
    ok, lmin, lmax = _robust_slab(oy, dy, ry, ly, uy, lmin, lmax)
    if not ok:
        return False, lmin
    ok, lmin, lmax = _robust_slab(oz, dz, rz, lz, uz, lmin, lmax)
    if not ok:
        return False, lmin
    return (lmax >= F0) & (lmax >= lmin), lmin


#: the box tests when no slab value can be NaN (see ``portable.variant``): Python's ``min(a,
#: b)`` (``b < a ? b : a``) equals ``fminf`` then, and compiles to a select instead of branches
ray_aabb_f = variant(ray_aabb, "ray_aabb_f", "``ray_aabb`` without NaN operands: plain "
                     "min/max selects.", wmin=min, wmax=max)
_robust_slab_f = variant(_robust_slab, "_robust_slab_f", wmin=min, wmax=max)
ray_aabb_robust_f = variant(ray_aabb_robust, "ray_aabb_robust_f", "``ray_aabb_robust`` "
                            "without NaN operands (finite origin, and finite reciprocals on the "
                            "axes the ray moves along): plain min/max selects.",
                            _robust_slab="_robust_slab_f")


def robust_finite(ox, oy, oz, dx, dy, dz, rx, ry, rz):
    """No slab value of the robust test can be NaN: a finite origin, finite reciprocals on
    the axes the ray moves along."""
    return (finite3(ox, oy, oz) and (dx == F0 or math.isfinite(rx)) and
            (dy == F0 or math.isfinite(ry)) and (dz == F0 or math.isfinite(rz)))


def aabb_aabb(alx, aly, alz, aux, auy, auz, blx, bly, blz, bux, buy, buz):
    """Warp's ``intersect_aabb_aabb`` (closed boxes: touching counts)."""
    return not (alx > bux or aly > buy or alz > buz or aux < blx or auy < bly or auz < blz)


def sphere_aabb(cx, cy, cz, r2, lx, ly, lz, ux, uy, uz):
    """Warp's ``intersect_sphere_aabb``: squared distance to the box <= r2."""
    dx = wmax(wmax(lx - cx, cx - ux), F0)
    dy = wmax(wmax(ly - cy, cy - uy), F0)
    dz = wmax(wmax(lz - cz, cz - uz), F0)
    return dx * dx + dy * dy + dz * dz <= r2


def dist_aabb_sq(px, py, pz, lx, ly, lz, ux, uy, uz):
    """Warp's ``distance_to_aabb_sq`` (``fminf``/``fmaxf`` semantics for a NaN point)."""
    dx = wmin(ux, wmax(lx, px)) - px
    dy = wmin(uy, wmax(ly, py)) - py
    dz = wmin(uz, wmax(lz, pz)) - pz
    return dx * dx + dy * dy + dz * dz


def dist_aabb_sq_f(px, py, pz, lx, ly, lz, ux, uy, uz):
    """``dist_aabb_sq`` for a finite point (plain min/max: selects)."""
    dx = min(ux, max(lx, px)) - px
    dy = min(uy, max(ly, py)) - py
    dz = min(uz, max(lz, pz)) - pz
    return dx * dx + dy * dy + dz * dz


def finite3(x, y, z):
    return math.isfinite(x) and math.isfinite(y) and math.isfinite(z)


def far_aabb_sq(px, py, pz, lx, ly, lz, ux, uy, uz):
    """Warp's ``furthest_distance_to_aabb_sq``: squared distance to the farthest corner."""
    ax = abs(px - lx)
    bx = abs(px - ux)
    cx = ax if ax > bx else bx
    ay = abs(py - ly)
    by = abs(py - uy)
    cy = ay if ay > by else by
    az = abs(pz - lz)
    bz = abs(pz - uz)
    cz = az if az > bz else bz
    return cx * cx + cy * cy + cz * cz


# ------------------------------------------------------------------------------ triangles
def tri_edges(ax, ay, az, bx, by, bz, cx, cy, cz):
    """The edges ``b - a``, ``c - a`` and ``c - b`` of triangle abc (nine floats)."""
    return bx - ax, by - ay, bz - az, cx - ax, cy - ay, cz - az, cx - bx, cy - by, cz - bz


def _edge_dots(abx, aby, abz, acx, acy, acz, qx, qy, qz):
    """``(dot(ab, q), dot(ac, q))``: a point's projections on the edges from ``a``."""
    return dot3(abx, aby, abz, qx, qy, qz), dot3(acx, acy, acz, qx, qy, qz)


def _on_edge(vx, da, db):
    """Ericson's edge-region test of ``closest_point_to_triangle``: ``(True, da / (da - db))``
    (the closest point's parameter along the edge) when ``vx <= 0`` and ``da >= 0 >= db``."""
    if vx <= F0 and da >= F0 and db <= F0:
        return True, da / (da - db)
    return False, F0


def triangle_closest_point(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz):
    """Warp's ``closest_point_to_triangle`` (Ericson's region test): barycentric ``(u, v)`` of
    the closest point ``u*a + v*b + (1 - u - v)*c``."""
    abx, aby, abz, acx, acy, acz, _, _, _ = tri_edges(ax, ay, az, bx, by, bz, cx, cy, cz)
    d1, d2 = _edge_dots(abx, aby, abz, acx, acy, acz, px - ax, py - ay, pz - az)
    if d1 <= F0 and d2 <= F0:
        return F1, F0
    d3, d4 = _edge_dots(abx, aby, abz, acx, acy, acz, px - bx, py - by, pz - bz)
    d5, d6 = _edge_dots(abx, aby, abz, acx, acy, acz, px - cx, py - cy, pz - cz)
    if d3 >= F0 and d4 <= d3:
        return F0, F1
    on_ab, v = _on_edge(d1 * d4 - d3 * d2, d1, d3)
    if on_ab:
        return F1 - v, v
    if d6 >= F0 and d5 <= d6:
        return F0, F0
    on_ac, w = _on_edge(d5 * d2 - d1 * d6, d2, d6)
    if on_ac:
        return F1 - w, F0
    va = d3 * d6 - d5 * d4
    if va <= F0 and (d4 - d3) >= F0 and (d5 - d6) >= F0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        v = F1 - w
        return F1 - v - w, v
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    denom = F1 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return F1 - v - w, v


def triangle_furthest_point(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz):
    """Warp's ``furthest_point_to_triangle``: the farthest vertex as ``(u, v)``."""
    da = dot3(px - ax, py - ay, pz - az, px - ax, py - ay, pz - az)
    db = dot3(px - bx, py - by, pz - bz, px - bx, py - by, pz - bz)
    dc = dot3(px - cx, py - cy, pz - cz, px - cx, py - cy, pz - cz)
    if da > db and da > dc:
        return F1, F0
    if db > dc:
        return F0, F1
    return F0, F0


def is_sliver(ax, ay, az, bx, by, bz, cx, cy, cz):
    """Warp's sliver test of the closest-point queries: ``|n| / (|e0|^2 + |e1|^2 + |e2|^2) <
    1e-6`` (False for a triangle collapsed to a point: 0/0 is NaN)."""
    e0x, e0y, e0z, e1x, e1y, e1z, e2x, e2y, e2z = tri_edges(ax, ay, az, bx, by, bz, cx, cy, cz)
    nx, ny, nz = cross3(e0x, e0y, e0z, e1x, e1y, e1z)
    s = dot3(e0x, e0y, e0z, e0x, e0y, e0z) + dot3(e1x, e1y, e1z, e1x, e1y, e1z) + \
        dot3(e2x, e2y, e2z, e2x, e2y, e2z)
    return length3(nx, ny, nz) / s < np.float32(1e-6)


def bary_dist_sq(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz, u, v):
    """``|u*a + v*b + w*c - p|^2`` with ``w = 1 - u - v``, as Warp evaluates it."""
    w = F1 - u - v
    qx = u * ax + v * bx + w * cx - px
    qy = u * ay + v * by + w * cy - py
    qz = u * az + v * bz + w * cz - pz
    return qx * qx + qy * qy + qz * qz


def ray_setup(dx, dy, dz):
    """The per-ray constants of Warp's ``intersect_ray_tri_woop``: ``(kx, ky, kz, sx, sy,
    sz)``, ``kz`` the dominant axis of the direction (``kx``, ``ky`` swapped when it points
    down that axis, keeping the winding) and the shear ``(d[kx]/d[kz], d[ky]/d[kz],
    1/d[kz])``."""
    kz = longest_axis3(dx, dy, dz)
    kx = kz + 1
    if kx == 3:
        kx = 0
    ky = kx + 1
    if ky == 3:
        ky = 0
    dkz = dz if kz == 2 else (dy if kz == 1 else dx)
    if dkz < F0:
        kx, ky = ky, kx
    dkx = dz if kx == 2 else (dy if kx == 1 else dx)
    dky = dz if ky == 2 else (dy if ky == 1 else dx)
    return kx, ky, kz, dkx / dkz, dky / dkz, F1 / dkz


def ray_woop(a0, a1, a2, b0, b1, b2, c0, c1, c2, sx, sy, sz):
    """The watertight test on the vertices relative to the ray's origin, permuted to (kx, ky,
    kz): ``(hit, t, u, v, det)``."""
    Ax = a0 - sx * a2
    Ay = a1 - sy * a2
    Bx = b0 - sx * b2
    By = b1 - sy * b2
    Cx = c0 - sx * c2
    Cy = c1 - sy * c2
    U = diff_product(Cx, By, Cy, Bx)
    V = diff_product(Ax, Cy, Ay, Cx)
    W = diff_product(Bx, Ay, By, Ax)
    if (U == F0) | (V == F0) | (W == F0):
        U = np.float32(np.float64(Cx) * np.float64(By) - np.float64(Cy) * np.float64(Bx))
        V = np.float32(np.float64(Ax) * np.float64(Cy) - np.float64(Ay) * np.float64(Cx))
        W = np.float32(np.float64(Bx) * np.float64(Ay) - np.float64(By) * np.float64(Ax))
    if ((U < F0) | (V < F0) | (W < F0)) & ((U > F0) | (V > F0) | (W > F0)):
        return False, F0, F0, F0, F0
    det = U + V + W
    if det == F0:
        return False, F0, F0, F0, F0
    T = U * (sz * a2) + V * (sz * b2) + W * (sz * c2)
    if ((det < F0) & (T > F0)) | ((det > F0) & (T < F0)):
        return False, F0, F0, F0, F0
    rcp = F1 / det
    return True, T * rcp, U * rcp, V * rcp, det


def ray_triangle(px, py, pz, dx, dy, dz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Warp's ``intersect_ray_tri_woop`` (Woop, Benthin and Wald's watertight test: an edge or
    vertex shared by two triangles is hit by one or both, never missed; a ray in a face's
    plane misses it): ``(hit, t, u, v, det)`` with the hit point ``u*a + v*b + (1 - u - v)*c =
    p + t*d`` (no range check on ``t`` beyond t >= 0). ``det`` is Warp's ``sign``: < 0 when
    ``d`` points along the normal ``cross(b - a, c - a)`` (the ray meets the face's back),
    > 0 when it meets the front."""
    kx, ky, kz, sx, sy, sz = ray_setup(dx, dy, dz)
    a0, a1, a2 = _permute(ax - px, ay - py, az - pz, kx, ky, kz)
    b0, b1, b2 = _permute(bx - px, by - py, bz - pz, kx, ky, kz)
    c0, c1, c2 = _permute(cx - px, cy - py, cz - pz, kx, ky, kz)
    return ray_woop(a0, a1, a2, b0, b1, b2, c0, c1, c2, sx, sy, sz)


def _permute(x, y, z, kx, ky, kz):
    """``(v[kx], v[ky], v[kz])``."""
    vx = z if kx == 2 else (y if kx == 1 else x)
    vy = z if ky == 2 else (y if ky == 1 else x)
    vz = z if kz == 2 else (y if kz == 1 else x)
    return vx, vy, vz


def triangle_normal(ax, ay, az, bx, by, bz, cx, cy, cz):
    """``cross(b - a, c - a)`` (not normalized)."""
    return cross3(bx - ax, by - ay, bz - az, cx - ax, cy - ay, cz - az)


def solid_angle(ax, ay, az, bx, by, bz, cx, cy, cz, px, py, pz):
    """Warp's ``robust_solid_angle`` of triangle abc seen from p (Van Oosterom-Strackee)."""
    qax, qay, qaz = sub3(ax, ay, az, px, py, pz)
    qbx, qby, qbz = sub3(bx, by, bz, px, py, pz)
    qcx, qcy, qcz = sub3(cx, cy, cz, px, py, pz)
    la = length3(qax, qay, qaz)
    lb = length3(qbx, qby, qbz)
    lc = length3(qcx, qcy, qcz)
    if la == F0 or lb == F0 or lc == F0:
        return F0
    qax, qay, qaz = div3(qax, qay, qaz, la)
    qbx, qby, qbz = div3(qbx, qby, qbz, lb)
    qcx, qcy, qcz = div3(qcx, qcy, qcz, lc)
    nx, ny, nz = cross3(qbx - qax, qby - qay, qbz - qaz, qcx - qax, qcy - qay, qcz - qaz)
    num = dot3(qax, qay, qaz, nx, ny, nz)
    if num == F0:
        return F0
    den = F1 + dot3(qax, qay, qaz, qbx, qby, qbz) + dot3(qax, qay, qaz, qcx, qcy, qcz) + \
        dot3(qbx, qby, qbz, qcx, qcy, qcz)
    return F2 * np.float32(math.atan2(num, den))


# ------------------------------------------------------------------------------ edges
def fclamp(x, a, b):
    """Warp's float ``clamp``: ``fmin(fmax(a, x), b)``."""
    return wmin(wmax(a, x), b)


def closest_point_edge_edge(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z,
                            epsilon):
    """Warp's ``closest_point_edge_edge``: ``(s, t, dist)``, the parameters of the closest
    points ``p1 + s*(q1 - p1)`` and ``p2 + t*(q2 - p2)`` and their distance; an edge of
    squared length <= ``epsilon`` counts as a point."""
    d1x, d1y, d1z = sub3(q1x, q1y, q1z, p1x, p1y, p1z)
    d2x, d2y, d2z = sub3(q2x, q2y, q2z, p2x, p2y, p2z)
    rx, ry, rz = sub3(p1x, p1y, p1z, p2x, p2y, p2z)
    a = dot3(d1x, d1y, d1z, d1x, d1y, d1z)
    e = dot3(d2x, d2y, d2z, d2x, d2y, d2z)
    f = dot3(d2x, d2y, d2z, rx, ry, rz)
    s = F0
    t = F0
    degen1 = a <= epsilon
    degen2 = e <= epsilon
    if degen1 and degen2:
        pass
    elif degen1:
        t = fclamp(f / e, F0, F1)
    elif degen2:
        s = fclamp(-dot3(d1x, d1y, d1z, rx, ry, rz) / a, F0, F1)
    else:
        c = dot3(d1x, d1y, d1z, rx, ry, rz)
        b = dot3(d1x, d1y, d1z, d2x, d2y, d2z)
        denom = diff_product(a, e, b, b)
        s_init = F0
        if denom > F0:
            s_init = fclamp(diff_product(b, f, c, e) / denom, F0, F1)
        t_init = (b * s_init + f) / e
        if t_init < F0:
            s = fclamp(-c / a, F0, F1)
        elif t_init > F1:
            s = fclamp((b - c) / a, F0, F1)
            t = F1
        else:
            s = s_init
            t = t_init
    dx = (p2x + t * d2x) - (p1x + s * d1x)
    dy = (p2y + t * d2y) - (p1y + s * d1y)
    dz = (p2z + t * d2z) - (p1z + s * d1z)
    return s, t, length3(dx, dy, dz)


PORTABLE = ("wmin", "wmax", "f32x3", "tri_row", "fsqrt", "facos", "dot3", "sub3", "div3",
            "cross3", "length3", "normalize3", "longest_axis3", "fmaf", "diff_product",
            "ray_aabb", "ray_aabb_f", "_robust_slab", "_robust_slab_f", "ray_aabb_robust",
            "finite3", "ray_aabb_robust_f", "robust_finite", "aabb_aabb", "sphere_aabb",
            "dist_aabb_sq", "dist_aabb_sq_f", "far_aabb_sq", "tri_edges", "_edge_dots",
            "_on_edge", "triangle_closest_point", "triangle_furthest_point", "is_sliver",
            "bary_dist_sq", "ray_setup", "ray_woop", "_permute", "ray_triangle",
            "triangle_normal", "solid_angle", "fclamp", "closest_point_edge_edge")
