"""The differentiable part of mesh queries, in the kernel language: given the face a query
chose (a discrete choice, constant, as in Warp), the barycentrics of a closest point and the
``t``, ``u``, ``v`` of a ray hit are recomputed from the face's points by the functions of
:mod:`weft.stdlib.diff_funcs_mesh`, so weft differentiates them with respect to the query
point, the ray and the mesh's points (``mesh_get_point`` passes gradients to
``mesh.points.grad``), forward and reverse mode.

The values stay the query core's (``_value_grad_of`` in :mod:`.mesh`): these funcs only supply
derivatives, so the forward and replayed code do not call them (``weft_primal_args``: the
core's values, their last three arguments, stand in for the call); the tangent and the adjoint
do."""
from weft.stdlib.diff_funcs_mesh import ray_triangle, triangle_closest_point
from weft.stdlib import kernel_scope as wp


def point_uv(hit, mid, face, p, u, v):
    """The closest point's (u, v) on ``face`` (the core's values, bit for bit in float32)."""
    if hit:
        uv = triangle_closest_point(wp.mesh_get_point(mid, face * 3),
                                    wp.mesh_get_point(mid, face * 3 + 1),
                                    wp.mesh_get_point(mid, face * 3 + 2), p)
        return uv[0], uv[1]
    return u, v


def ray_tuv(hit, mid, face, o, d, t, u, v):
    """The hit's (t, u, v) where the ray crosses ``face`` (the core's values to rounding)."""
    if hit:
        r = ray_triangle(o, d, wp.mesh_get_point(mid, face * 3),
                         wp.mesh_get_point(mid, face * 3 + 1),
                         wp.mesh_get_point(mid, face * 3 + 2))
        return r[0], r[1], r[2]
    return t, u, v


def face_normal(mid, face, n):
    """``normalize(cross(p1 - p0, p2 - p0))`` of ``face`` (the core's ``n`` to rounding)."""
    p0 = wp.mesh_get_point(mid, face * 3)
    return wp.normalize(wp.cross(wp.mesh_get_point(mid, face * 3 + 1) - p0,
                                 wp.mesh_get_point(mid, face * 3 + 2) - p0))


point_uv.weft_primal_args = (4, 5)
face_normal.weft_primal_args = (2,)
ray_tuv.weft_primal_args = (5, 6, 7)
point_uv = wp.func(point_uv)
ray_tuv = wp.func(ray_tuv)
face_normal = wp.func(face_normal)
