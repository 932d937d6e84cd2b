"""Warp 1.19's ``intersect_tri_tri``: Moller's triangle-triangle overlap test (the 1999
division-free version of Warp's ``intersect_tri.h``), portable (see ``mesh_geom``), for vec3
(float32) and vec3d (float64). Plane distances below Moller's epsilon (1e-6, compared in
double as in the C++) count as zero; coplanar triangles are tested in the projection that
maximizes their area (edge crossings, then containment of a vertex).
"""
import numpy as np

from .mesh_geom import F0, cross3, longest_axis3  # noqa: F401

TRI_EPS = 0.000001   # Moller's EPSILON, compared in double as in Warp's C++


def _edge_edge(ax, ay, v0x, v0y, u0x, u0y, u1x, u1y):
    """Moller's ``EDGE_EDGE_TEST`` (Antonio's segment test) in the projection plane."""
    bx = u0x - u1x
    by = u0y - u1y
    cx = v0x - u0x
    cy = v0y - u0y
    f = ay * bx - ax * by
    d = by * cx - bx * cy
    if (f > 0 and d >= 0 and d <= f) or (f < 0 and d <= 0 and d >= f):
        e = ax * cy - ay * cx
        if f > 0:
            if e >= 0 and e <= f:
                return True
        else:
            if e <= 0 and e >= f:
                return True
    return False


def _edge_against_tri(v0x, v0y, v1x, v1y, u0x, u0y, u1x, u1y, u2x, u2y):
    ax = v1x - v0x
    ay = v1y - v0y
    return (_edge_edge(ax, ay, v0x, v0y, u0x, u0y, u1x, u1y) or
            _edge_edge(ax, ay, v0x, v0y, u1x, u1y, u2x, u2y) or
            _edge_edge(ax, ay, v0x, v0y, u2x, u2y, u0x, u0y))


def _point_in_tri(v0x, v0y, u0x, u0y, u1x, u1y, u2x, u2y):
    """Moller's ``POINT_IN_TRI`` (strictly inside, by the signs of three edge functions)."""
    a = u1y - u0y
    b = -(u1x - u0x)
    c = -a * u0x - b * u0y
    d0 = a * v0x + b * v0y + c
    a = u2y - u1y
    b = -(u2x - u1x)
    c = -a * u1x - b * u1y
    d1 = a * v0x + b * v0y + c
    a = u0y - u2y
    b = -(u0x - u2x)
    c = -a * u2x - b * u2y
    d2 = a * v0x + b * v0y + c
    return d0 * d1 > 0.0 and d0 * d2 > 0.0


def _proj(x, y, z, i):
    return y if i == 1 else (z if i == 2 else x)


def _coplanar_tri_tri(nx, ny, nz, v0, v1, v2, u0, u1, u2):
    """Moller's ``coplanar_tri_tri``: project on the plane of the largest normal component."""
    a0 = abs(nx)
    a1 = abs(ny)
    a2 = abs(nz)
    if a0 > a1:
        i0, i1 = (1, 2) if a0 > a2 else (0, 1)
    else:
        i0, i1 = (0, 1) if a2 > a1 else (0, 2)
    p = (_proj(v0[0], v0[1], v0[2], i0), _proj(v0[0], v0[1], v0[2], i1),
         _proj(v1[0], v1[1], v1[2], i0), _proj(v1[0], v1[1], v1[2], i1),
         _proj(v2[0], v2[1], v2[2], i0), _proj(v2[0], v2[1], v2[2], i1))
    q = (_proj(u0[0], u0[1], u0[2], i0), _proj(u0[0], u0[1], u0[2], i1),
         _proj(u1[0], u1[1], u1[2], i0), _proj(u1[0], u1[1], u1[2], i1),
         _proj(u2[0], u2[1], u2[2], i0), _proj(u2[0], u2[1], u2[2], i1))
    if (_edge_against_tri(p[0], p[1], p[2], p[3], q[0], q[1], q[2], q[3], q[4], q[5]) or
            _edge_against_tri(p[2], p[3], p[4], p[5], q[0], q[1], q[2], q[3], q[4], q[5]) or
            _edge_against_tri(p[4], p[5], p[0], p[1], q[0], q[1], q[2], q[3], q[4], q[5])):
        return 1
    if _point_in_tri(p[0], p[1], q[0], q[1], q[2], q[3], q[4], q[5]):
        return 1
    if _point_in_tri(q[0], q[1], p[0], p[1], p[2], p[3], p[4], p[5]):
        return 1
    return 0


def _plane_side(nx, ny, nz, d, x, y, z, zero):
    """``dot(n, x) + d``, snapped to 0 below Moller's epsilon (compared in float64)."""
    s = nx * x + ny * y + nz * z + d
    if abs(np.float64(s)) < TRI_EPS:
        return zero
    return s


def _intervals(p0, p1, p2, index, d0, d1, d2, d0d1, d0d2):
    """Moller's ``NEWCOMPUTE_INTERVALS`` on the projections of triangle p on axis ``index``:
    (ok, a, b, c, x0, x1); not ok means coplanar."""
    vv0 = _proj(p0[0], p0[1], p0[2], index)
    vv1 = _proj(p1[0], p1[1], p1[2], index)
    vv2 = _proj(p2[0], p2[1], p2[2], index)
    if d0d1 > 0.0:
        return True, vv2, (vv0 - vv2) * d2, (vv1 - vv2) * d2, d2 - d0, d2 - d1
    if d0d2 > 0.0:
        return True, vv1, (vv0 - vv1) * d1, (vv2 - vv1) * d1, d1 - d0, d1 - d2
    if d1 * d2 > 0.0 or d0 != 0.0:
        return True, vv0, (vv1 - vv0) * d0, (vv2 - vv0) * d0, d0 - d1, d0 - d2
    if d1 != 0.0:
        return True, vv1, (vv0 - vv1) * d1, (vv2 - vv1) * d1, d1 - d0, d1 - d2
    if d2 != 0.0:
        return True, vv2, (vv0 - vv2) * d2, (vv1 - vv2) * d2, d2 - d0, d2 - d1
    return False, d0, d0, d0, d0, d0


def _plane_dists(p0, p1, p2, q0, q1, q2, zero):
    """The normal of triangle p's plane and the signed distances to it of q's vertices
    (``_plane_side``): ``(nx, ny, nz, d0, d1, d2)``."""
    e1 = (p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2])
    e2 = (p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2])
    nx, ny, nz = cross3(e1[0], e1[1], e1[2], e2[0], e2[1], e2[2])
    d = -(nx * p0[0] + ny * p0[1] + nz * p0[2])
    return (nx, ny, nz, _plane_side(nx, ny, nz, d, q0[0], q0[1], q0[2], zero),
            _plane_side(nx, ny, nz, d, q1[0], q1[1], q1[2], zero),
            _plane_side(nx, ny, nz, d, q2[0], q2[1], q2[2], zero))


def tri_tri_core(zero, v0, v1, v2, u0, u1, u2):
    """Moller's ``NoDivTriTriIsect`` on 3-tuples of the scalar type of ``zero``: 1 when the
    triangles intersect (coplanar overlap included), else 0."""
    n1x, n1y, n1z, du0, du1, du2 = _plane_dists(v0, v1, v2, u0, u1, u2, zero)
    du0du1 = du0 * du1
    du0du2 = du0 * du2
    if du0du1 > 0.0 and du0du2 > 0.0:
        return 0
    n2x, n2y, n2z, dv0, dv1, dv2 = _plane_dists(u0, u1, u2, v0, v1, v2, zero)
    dv0dv1 = dv0 * dv1
    dv0dv2 = dv0 * dv2
    if dv0dv1 > 0.0 and dv0dv2 > 0.0:
        return 0
    dx, dy, dz = cross3(n1x, n1y, n1z, n2x, n2y, n2z)
    index = longest_axis3(dx, dy, dz)
    ok, a, b, c, x0, x1 = _intervals(v0, v1, v2, index, dv0, dv1, dv2, dv0dv1, dv0dv2)
    if not ok:
        return _coplanar_tri_tri(n1x, n1y, n1z, v0, v1, v2, u0, u1, u2)
    ok, d, e, f, y0, y1 = _intervals(u0, u1, u2, index, du0, du1, du2, du0du1, du0du2)
    if not ok:
        return _coplanar_tri_tri(n1x, n1y, n1z, v0, v1, v2, u0, u1, u2)
    xx = x0 * x1
    yy = y0 * y1
    xxyy = xx * yy
    tmp = a * xxyy
    i10 = tmp + b * x1 * yy
    i11 = tmp + c * x0 * yy
    tmp = d * xxyy
    i20 = tmp + e * xx * y1
    i21 = tmp + f * xx * y0
    if i10 > i11:
        i10, i11 = i11, i10
    if i20 > i21:
        i20, i21 = i21, i20
    if i11 < i20 or i21 < i10:
        return 0
    return 1


def intersect_tri_tri(v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z,
                      u0x, u0y, u0z, u1x, u1y, u1z, u2x, u2y, u2z):
    """``wp.intersect_tri_tri`` on vec3 (float32): Moller's test, as an int32."""
    f = np.float32
    return np.int32(tri_tri_core(F0, (f(v0x), f(v0y), f(v0z)), (f(v1x), f(v1y), f(v1z)),
                                 (f(v2x), f(v2y), f(v2z)), (f(u0x), f(u0y), f(u0z)),
                                 (f(u1x), f(u1y), f(u1z)), (f(u2x), f(u2y), f(u2z))))


def intersect_tri_tri_d(v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z,
                        u0x, u0y, u0z, u1x, u1y, u1z, u2x, u2y, u2z):
    """``wp.intersect_tri_tri`` on vec3d (float64)."""
    f = np.float64
    return np.int32(tri_tri_core(np.float64(0.0), (f(v0x), f(v0y), f(v0z)),
                                 (f(v1x), f(v1y), f(v1z)), (f(v2x), f(v2y), f(v2z)),
                                 (f(u0x), f(u0y), f(u0z)), (f(u1x), f(u1y), f(u1z)),
                                 (f(u2x), f(u2y), f(u2z))))


PORTABLE = ("_edge_edge", "_edge_against_tri", "_point_in_tri", "_proj", "_coplanar_tri_tri",
            "_plane_side", "_plane_dists", "_intervals", "tri_tri_core", "intersect_tri_tri",
            "intersect_tri_tri_d")
