"""The struct types of mesh query results (Warp's ``wp.MeshQueryPoint``, ``wp.MeshQueryRay``),
made known to the kernel builtins that return them (:mod:`weft.stdlib.mesh`)."""
from ..core import types as T
from ..stdlib import mesh as _mesh
from .struct import struct


@struct
class MeshQueryPoint:
    """``wp.mesh_query_point``'s result: found, sign (-1 inside), face, barycentrics u, v."""
    result: T.bool
    sign: T.float32
    face: T.int32
    u: T.float32
    v: T.float32


@struct
class MeshQueryRay:
    """``wp.mesh_query_ray``'s result: hit, sign, face, t, barycentrics u, v, unit normal."""
    result: T.bool
    sign: T.float32
    face: T.int32
    t: T.float32
    u: T.float32
    v: T.float32
    normal: T.vec3


_mesh.RESULT_TYPES.update(MeshQueryPoint=MeshQueryPoint, MeshQueryRay=MeshQueryRay)
# the iterator query types, by Warp's names (for annotations of funcs taking a query)
MeshQueryAABB = MeshQuery = _mesh.MESH_QUERY
BvhQuery = _mesh.BVH_QUERY
