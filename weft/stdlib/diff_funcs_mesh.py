"""The continuous part of mesh queries as differentiable weft functions (``@wp.func``), for the
adjoints (and tangents) of ``mesh_query_point*`` and ``mesh_query_ray``.

A query splits in two: the core (``mesh_query``, ``mesh_ray``) makes the discrete choices
(which face, and for a closest point which feature: vertex, edge or interior), and these
functions recompute the result from the face's vertices, so the transpiler differentiates them
with respect to the query point, the ray and the mesh points::

    q = mesh_query_point_no_sign(...)            # face chosen, no derivative
    a, b, c = points[indices[3*face + k]]        # the face's vertices (differentiable reads)
    uv = triangle_closest_point_f(a, b, c, p)    # (u, v), piecewise smooth in a, b, c, p
    d = triangle_distance_f(a, b, c, p, uv)      # |u a + v b + (1 - u - v) c - p|

    r = mesh_query_ray(...)
    tuv = ray_triangle_f(o, dir, a, b, c)        # (t, u, v) of the ray's plane crossing

``triangle_closest_point_*`` is Warp's region test (Ericson's), the same branches as the core,
so in float32 it returns the core's (and Warp's) ``u``, ``v`` bit for bit; its derivatives are
those of the active region's formula (zero at a vertex, along the edge on an edge, the plane
projection inside), which is what Warp's adjoint of ``closest_point_to_triangle`` computes.
``ray_triangle_*`` solves the same equations as Warp's watertight test by scalar triple
products (``t = dot(a - o, n) / dot(d, n)``, ``u : v : w`` the signed volumes of the ray with
the three edges), so values agree with the core to rounding and the derivatives are exact;
it does not re-test whether the ray hits (the face is given).
"""
from weft.stdlib import kernel_scope as wp


@wp.func
def triangle_closest_point(a, b, c, p):
    """Warp's ``closest_point_to_triangle``: barycentric (u, v) of the closest point to p, in
    the precision of the arguments (vec3 or vec3d)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    bp = p - b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    cp = p - c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    u = type(d1)(0.0)
    v = type(d1)(0.0)
    if d1 <= 0.0 and d2 <= 0.0:
        u = type(d1)(1.0)
    elif d3 >= 0.0 and d4 <= d3:
        v = type(d1)(1.0)
    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        u = 1.0 - v
    elif d6 >= 0.0 and d5 <= d6:
        u = type(d1)(0.0)
    elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        u = 1.0 - w
    elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        v = 1.0 - w
        u = 1.0 - v - w
    else:
        denom = 1.0 / (va + vb + vc)
        v = vb * denom
        w = vc * denom
        u = 1.0 - v - w
    return wp.vector(u, v)


@wp.func
def triangle_distance(a, b, c, p, uv):
    """``|u a + v b + (1 - u - v) c - p|`` (Warp's evaluation order)."""
    w = 1.0 - uv[0] - uv[1]
    return wp.length(uv[0] * a + uv[1] * b + w * c - p)


@wp.func
def ray_triangle(o, d, a, b, c):
    """(t, u, v) where the ray ``o + t d`` crosses the plane of abc, with barycentrics ``u``
    of a and ``v`` of b (Warp's ``mesh_query_ray`` convention)."""
    n = wp.cross(b - a, c - a)
    t = wp.dot(a - o, n) / wp.dot(d, n)
    ao = a - o
    bo = b - o
    co = c - o
    su = wp.dot(d, wp.cross(co, bo))
    sv = wp.dot(d, wp.cross(ao, co))
    sw = wp.dot(d, wp.cross(bo, ao))
    s = su + sv + sw
    return wp.vector(t, su / s, sv / s)


# the names per precision (one generic function each)
triangle_closest_point_f = triangle_closest_point_d = triangle_closest_point
triangle_distance_f = triangle_distance_d = triangle_distance
ray_triangle_f = ray_triangle_d = ray_triangle
