"""Kernel builtins of Warp's meshes and BVHs, reached by id (a ``uint64``).

- Closest points (``mesh_query_point``, ``_no_sign``, ``_sign_normal``,
  ``_sign_winding_number``, ``_sign_parity``, ``mesh_query_furthest_point_no_sign``) return a
  ``wp.MeshQueryPoint`` struct (``result``, ``sign``, ``face``, ``u``, ``v``); ``mesh_query_ray``
  a ``wp.MeshQueryRay`` (``result``, ``sign``, ``face``, ``t``, ``u``, ``v``, ``normal``).
- ``mesh_eval_position``/``velocity``/``face_normal``, ``mesh_get_point``/``velocity``/
  ``index``.
- Iterators: ``mesh_query_aabb`` with ``mesh_query_aabb_next(query, face)`` or ``for face in
  query``; ``bvh_query_aabb``/``bvh_query_ray`` with ``bvh_query_next(query, item[,
  max_dist])`` or ``for``. A query (``wp.mesh_query_aabb_t``, ``wp.bvh_query_t``) holds 16
  int64 words (found, index, the object's id, the core's state) as hash-grid queries do, each
  kind a type of its own (``types.query_type``).

Each primitive calls a ``_wk.geo_mesh_*``/``geo_bvh_*`` helper (:mod:`weft.native.geometry.kernel_api`).
Derivatives (as Warp): the face a query picks is a discrete choice; a closest point's ``u``, ``v``
and a ray hit's ``t``, ``u``, ``v`` are differentiable with respect to the query point, the
ray and the face's points (recomputed from the face's points, :mod:`.mesh_diff`; a ray keeps
the core's values and takes the recomputation's derivatives); ``mesh_eval_position`` and
``mesh_get_point`` are differentiable in ``u``, ``v`` and the mesh's points: the adjoint adds
into ``mesh.points.grad`` and the tangent reads the points' tangent, which the runtime hands
to the launch through the mesh's descriptor (``weft.runtime.geometry.mesh_derivatives``);
likewise ``mesh_eval_velocity``/``mesh_get_velocity`` and ``mesh.velocities``; unit normals
(``mesh_eval_face_normal``, a ray hit's ``normal``) are differentiable in the points too.
"""
from __future__ import annotations

import ast

from ..core import types as T
from . import ir
from .exprs import call, const
from . import registry
from .geometry_common import _is_id as _id
from .geometry_common import _xyz, mark_kinds
from .registry import builtin, special_form

MESH_QUERY = T.query_type("mesh_query_aabb_t")
BVH_QUERY = T.query_type("bvh_query_t")
POINT_RESULT = T.TupleType((T.bool, T.int32, T.float32, T.float32, T.float32))
RAY_RESULT = T.TupleType((T.bool, T.float32, T.float32, T.float32, T.float32, T.float32,
                          T.float32, T.float32, T.int32))
#: the struct types of query results, filled by weft.runtime.geometry (which defines them)
RESULT_TYPES = {}


def _v3(t):
    return T.is_vector(t) and t._length_ == 3 and T.scalar_of(t) is T.float32


def _f(t):
    return T.is_float(t) and T.is_scalar(t)


def _i(v):
    return const(v, T.int32)


# ------------------------------------------------------------------------------ primitives
@builtin("_mesh_point", ["_mesh_point(id, point, max_dist, a, b) (attrs: kind)"],
         lambda ts, attrs=None: POINT_RESULT if len(ts) == 5 and _id(ts[0]) and _v3(ts[1])
         and all(_f(t) for t in ts[2:]) else None, differentiable=False, public=False)
class _mesh_point:
    def primal(mid, p, max_dist, a, b, kind):
        f32 = [call("np.float32", x, type_=T.float32) for x in (max_dist, a, b)]
        return call(_POINT_HELPERS[kind], mid, *_xyz(p), *f32, type_=POINT_RESULT)


_POINT_HELPERS = ["_wk.geo_mesh_point", "_wk.geo_mesh_point_no_sign",
                  "_wk.geo_mesh_point_sign_normal", "_wk.geo_mesh_point_sign_winding_number",
                  "_wk.geo_mesh_furthest_point_no_sign", "_wk.geo_mesh_point_sign_parity"]


@builtin("_mesh_ray", ["_mesh_ray(id, start, dir, max_t, root)"],
         lambda ts, attrs=None: RAY_RESULT if len(ts) == 5 and _id(ts[0]) and _v3(ts[1]) and
         _v3(ts[2]) and _f(ts[3]) and T.is_int(ts[4]) else None, differentiable=False,
         public=False)
class _mesh_ray:
    def primal(mid, o, d, max_t, root):
        return call("_wk.geo_mesh_ray", mid, *_xyz(o), *_xyz(d),
                    call("np.float32", max_t, type_=T.float32), _root(root), type_=RAY_RESULT)


def _root(root):
    """A query's ``root`` node (Warp's ``mesh_get_group_root``/``bvh_get_group_root``), int32;
    absent: -1, the whole tree."""
    return _i(-1) if root is None else call("np.int32", root, type_=T.int32)


@builtin("_value_grad_of", ["_value_grad_of(value, other)"],
         lambda ts, attrs=None: ts[0] if len(ts) == 2 and (_f(ts[0]) or _v3(ts[0]) or
                                                  ts[0] is T.vec4f) and
         ts[1] == ts[0] else None, public=False)
class _value_grad_of:
    """``value``, differentiated as ``other`` (a query core's exact result with the
    derivatives of its differentiable recomputation)."""

    def primal(a, b):
        return a

    def adjoint(a, b, ret, adj):
        return [None, adj]

    def tangent(a, b, ta, tb, ret):
        return tb


def _eval_rules(name, kind, what):
    @builtin(name, [f"{name}(id: uint64, face: int32, bary_u: float32, bary_v: float32) -> "
                    "vec3"],
             lambda ts, attrs=None: T.vec3 if len(ts) == 4 and _id(ts[0]) and
             T.is_int(ts[1]) and _f(ts[2]) and _f(ts[3]) else None)
    class rules:
        own_derivatives = True  # the mesh's points (velocities)

        def primal(mid, face, u, v):
            return call("_wk.geo_mesh_eval", mid, _i(kind), face, u, v, type_=T.vec3)

        def adjoint(mid, face, u, v, ret, adj):
            a = adj.atom()
            # into the gradient of the mesh's points (velocities), when they have one
            call("_wk.geo_mesh_eval_adj", mid, _i(kind), face, u, v, a.comp(0), a.comp(1),
                 a.comp(2), type_=T.int32).atom("e")
            p0, p1, p2 = _corners(mid, face, kind)
            return [None, None, sum_dot(a, p0, p2), sum_dot(a, p1, p2)]

        def tangent(mid, face, u, v, tmid, tface, tu, tv, ret):
            from .exprs import tup
            tp = call("_wk.geo_mesh_eval_tan", mid, _i(kind), face, u, v, type_=T.vec3).atom()
            p0 = p1 = p2 = None
            if tu is not None or tv is not None:
                p0, p1, p2 = (c.atom() for c in _corners(mid, face, kind))
            parts = []
            for c in range(3):
                e = tp.comp(c)
                if tu is not None:
                    e = e + tu * (p0.comp(c) - p2.comp(c))
                if tv is not None:
                    e = e + tv * (p1.comp(c) - p2.comp(c))
                parts.append(e)
            return tup(parts, T.vec3)
    rules.__doc__ = (f"``{what}0 u + {what}1 v + {what}2 (1 - u - v)`` of the face's "
                     f"{what}s (differentiable in u, v and the mesh's {what}s)")
    return rules


mesh_eval_position = _eval_rules("mesh_eval_position", 0, "point")
mesh_eval_velocity = _eval_rules("mesh_eval_velocity", 1, "velocity")


def _vertex_rules(name, kind):
    @builtin(name, [f"{name}(id: uint64, index: int32) -> vec3"],
             lambda ts, attrs=None: T.vec3 if len(ts) == 2 and _id(ts[0]) and T.is_int(ts[1])
             else None)
    class rules:
        """``values[indices[index]]`` (differentiable in the mesh's points or velocities)."""
        own_derivatives = True

        def primal(mid, index):
            return call("_wk.geo_mesh_vertex", mid, _i(kind), index, type_=T.vec3)

        def adjoint(mid, index, ret, adj):
            a = adj.atom()
            call("_wk.geo_mesh_vertex_adj", mid, _i(kind), index, a.comp(0), a.comp(1),
                 a.comp(2), type_=T.int32).atom("e")
            return [None, None]

        def tangent(mid, index, tmid, tindex, ret):
            return call("_wk.geo_mesh_vertex_tan", mid, _i(kind), index, type_=T.vec3)
    return rules


mesh_get_point = _vertex_rules("mesh_get_point", 0)
mesh_get_velocity = _vertex_rules("mesh_get_velocity", 1)


def _corners(mid, face, kind=0):
    """The face's three points (velocities) (Ex vec3 values)."""
    return [call("_wk.geo_mesh_vertex", mid, _i(kind), face * const(3, T.int32) +
                 const(k, T.int32), type_=T.vec3) for k in (0, 1, 2)]


def sum_dot(a, p, q):
    """``dot(a, p - q)`` of three-component Ex values."""
    p, q = p.atom(), q.atom()
    return a.comp(0) * (p.comp(0) - q.comp(0)) + a.comp(1) * (p.comp(1) - q.comp(1)) + \
        a.comp(2) * (p.comp(2) - q.comp(2))


def _plain(name, sig, check, ret, helper_args):
    @builtin(name, [sig], lambda ts, attrs=None: ret if check(ts) else None,
             differentiable=False)
    class rules:
        def primal(*args):
            return call(*helper_args(*args), type_=ret)
    return rules


@builtin("_mesh_face_normal", ["_mesh_face_normal(id, face)"],
         lambda ts, attrs=None: T.vec3 if len(ts) == 2 and _id(ts[0]) and T.is_int(ts[1])
         else None, differentiable=False, public=False)
class _mesh_face_normal:
    def primal(mid, face):
        return call("_wk.geo_mesh_eval", mid, _i(2), face, const(0.0, T.float32),
                    const(0.0, T.float32), type_=T.vec3)


def _differentiable_normal(ctx, node, mid, face, n):
    """The core's normal ``n`` of ``face``, with the derivatives of its recomputation from the
    mesh's points (:func:`.mesh_diff.face_normal`)."""
    from .mesh_diff import face_normal
    again = ctx.call_func(face_normal, node, [mid, face, n], 3)
    return ctx.apply("_value_grad_of", [n, again], node)


def _lower_face_normal(ctx, node):
    if len(node.args) != 2 or node.keywords:
        raise ctx.fail(node, "wp.mesh_eval_face_normal(id, face) takes the mesh id and a face")
    mid, face = (ctx.expr(a) for a in node.args)
    if not _id(mid.type) or not T.is_int(face.type):
        raise ctx.fail(node, "wp.mesh_eval_face_normal(id: uint64, face: int32): got "
                       f"({T.type_name(mid.type)}, {T.type_name(face.type)})")
    face = ctx.apply("cast", [face], node, {"type": T.int32})
    n = ctx.apply("_mesh_face_normal", [mid, face], node)
    return _differentiable_normal(ctx, node, mid, face, n)


mesh_eval_face_normal = special_form(
    "mesh_eval_face_normal", "mesh_eval_face_normal(id: uint64, face: int32) -> vec3: the unit "
    "normal normalize(cross(p1 - p0, p2 - p0)) (differentiable in the mesh's points)")(
        _lower_face_normal)
mesh_get_index = _plain(
    "mesh_get_index", "mesh_get_index(id: uint64, index: int32) -> int32",
    lambda ts: len(ts) == 2 and _id(ts[0]) and T.is_int(ts[1]), T.int32,
    lambda mid, index: ("_wk.geo_mesh_get_index", mid, index))


@builtin("intersect_tri_tri", ["intersect_tri_tri(v0: vec3, v1: vec3, v2: vec3, u0: vec3, "
                               "u1: vec3, u2: vec3) -> int32  (vec3 or vec3d)"],
         lambda ts, attrs=None: T.int32 if len(ts) == 6 and all(
             T.is_vector(t) and t._length_ == 3 and t == ts[0] for t in ts) and
         T.scalar_of(ts[0]) in (T.float32, T.float64) else None, differentiable=False)
class intersect_tri_tri:
    """1 when triangles (v0, v1, v2) and (u0, u1, u2) intersect, else 0 (Moller's test)."""

    def primal(*vs):
        helper = "_wk.geo_tri_tri_d" if T.scalar_of(vs[0].type) is T.float64 else \
            "_wk.geo_tri_tri"
        return call(helper, *[c for v in vs for c in _xyz(v)], type_=T.int32)


# ------------------------------------------------------------------------------ closest points
_POINT_FORMS = {  # name: (kind, extra parameters with Warp's defaults)
    "mesh_query_point": (0, ()),
    "mesh_query_point_no_sign": (1, ()),
    "mesh_query_point_sign_normal": (2, (("epsilon", 1.0e-3),)),
    "mesh_query_point_sign_winding_number": (3, (("accuracy", 2.0), ("threshold", 0.5))),
    "mesh_query_furthest_point_no_sign": (4, ()),
    "mesh_query_point_sign_parity": (5, (("n_sample", 1.0), ("perturbation_scale", 0.1))),
}


def _point_form(name, kind, extras):
    params = ["id", "point", "min_dist" if kind == 4 else "max_dist"] + [n for n, _ in extras]

    def lower(ctx, node):
        args = _arguments(ctx, node, name, params, dict(extras))
        extra = args[3:] + [ir.Const(0.0, T.float32)] * (2 - len(args[3:]))
        res = ctx.apply("_mesh_point", args[:3] + [ctx.adapt_literal(e, T.float32)
                                                    for e in extra], node, {"kind": kind})
        items = [ctx.apply("tuple_get", [res], node, {"index": k}) for k in range(5)]
        if kind != 4:  # (u, v) differentiable in the point; the furthest point is a vertex
            from .mesh_diff import point_uv
            uv = ctx.call_func(point_uv, node, [items[0], args[0], items[1], args[1],
                                                items[2], items[3]], 6)
            # the core's values, with the derivatives of the recomputation
            items[2], items[3] = (ctx.apply("_value_grad_of", [items[2 + k], ctx.apply(
                "tuple_get", [uv], node, {"index": k})], node) for k in (0, 1))
        return ctx.struct_value(RESULT_TYPES["MeshQueryPoint"], {
            "result": items[0], "sign": items[4], "face": items[1], "u": items[2],
            "v": items[3]})
    outputs = ("face", "u", "v") if kind in (1, 4) else ("sign", "face", "u", "v")
    doc = (f"{name}({', '.join(params)}) -> MeshQueryPoint, or Warp's output-argument form "
           f"{name}({', '.join(params[:3] + list(outputs) + params[3:])}) -> bool")
    return _with_outputs(name, doc, 3, outputs, lower)


def _with_outputs(name, doc, n_in, outputs, lower_struct):
    """The special form of a query returning a struct, also callable in Warp's older form with
    output variables after the first ``n_in`` arguments: the members named ``outputs`` are
    assigned to them and the form returns ``result``."""
    k = len(outputs)

    def targets(node):
        return node.args[n_in:n_in + k] if len(node.args) >= n_in + k else []

    def lower(ctx, node):
        outs = targets(node)
        if not outs:
            return lower_struct(ctx, node)
        for t in outs:
            if not isinstance(t, ast.Name):
                raise ctx.fail(t, f"wp.{name}(): the output arguments "
                               f"({', '.join(outputs)}) must be variables")
        plain = ast.copy_location(ast.Call(node.func, node.args[:n_in] + node.args[n_in + k:],
                                           node.keywords), node)
        value = lower_struct(ctx, plain)
        for field, t in zip(outputs, outs):
            ctx.assign(t, value.members[field], node)
        return value.members["result"]
    return special_form(name, doc, assigned=targets)(lower)


def _arguments(ctx, node, name, params, defaults):
    """The lowered arguments of a call by position or keyword, defaults filled in."""
    given = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg not in params or kw.arg in given:
            raise ctx.fail(kw, f"wp.{name}() got an unexpected or repeated argument "
                           f"'{kw.arg}'")
        given[kw.arg] = kw.value
    if len(node.args) > len(params):
        raise ctx.fail(node, f"wp.{name}() takes at most {len(params)} arguments "
                       f"({', '.join(params)}), or the output variables of Warp's older form "
                       "after the first ones")
    out = []
    for p in params:
        if p in given:
            out.append(ctx.expr(given[p]))
        elif p in defaults:
            v = defaults[p]
            out.append(ir.Const(v, T.int32) if isinstance(v, int) else
                       ir.Const(float(v), T.float32))
        else:
            raise ctx.fail(node, f"wp.{name}() is missing its argument '{p}'")
    if not _id(out[0].type):
        raise ctx.fail(node.args[0] if node.args else node, f"wp.{name}(): the first argument "
                       f"is a mesh id (uint64: mesh.id), got {T.type_name(out[0].type)}")
    return out


for _name, (_kind, _extras) in _POINT_FORMS.items():
    globals()[_name] = _point_form(_name, _kind, _extras)


def _ray_struct(ctx, node):
    args = _arguments(ctx, node, "mesh_query_ray", ["id", "start", "dir", "max_t", "root"],
                      {"root": -1})
    args[3] = ctx.adapt_literal(args[3], T.float32)
    res = ctx.apply("_mesh_ray", args, node)
    it = [ctx.apply("tuple_get", [res], node, {"index": k}) for k in range(9)]
    from .mesh_diff import ray_tuv  # (t, u, v) differentiable in the ray
    tuv = ctx.call_func(ray_tuv, node, [it[0], args[0], it[8], args[1], args[2]] + it[1:4], 8)
    # the core's values (Warp's, bit for bit), with the derivatives of the recomputation
    it[1:4] = [ctx.apply("_value_grad_of", [it[1 + k], ctx.apply(
        "tuple_get", [tuv], node, {"index": k})], node) for k in range(3)]
    normal = _differentiable_normal(ctx, node, args[0], it[8], ctx.apply(
        "construct", it[5:8], node, {"type": T.vec3}))
    return ctx.struct_value(RESULT_TYPES["MeshQueryRay"], {
        "result": it[0], "sign": it[4], "face": it[8], "t": it[1], "u": it[2], "v": it[3],
        "normal": normal})


mesh_query_ray = _with_outputs(
    "mesh_query_ray", "mesh_query_ray(id, start, dir, max_t[, root]) -> MeshQueryRay, or "
    "Warp's output-argument form mesh_query_ray(id, start, dir, max_t, t, bary_u, bary_v, "
    "sign, normal, face[, root]) -> bool (root: mesh_get_group_root's node, -1: all)", 4,
    ("t", "u", "v", "sign", "normal", "face"), _ray_struct)


# ------------------------------------------------------------------------------ iterators
@builtin("mesh_query_aabb", ["mesh_query_aabb(id: uint64, low: vec3, high: vec3) -> "
                             "mesh_query_aabb_t"],
         lambda ts, attrs=None: MESH_QUERY if len(ts) == 3 and _id(ts[0]) and _v3(ts[1]) and
         _v3(ts[2]) else None, differentiable=False)
class mesh_query_aabb:
    """Faces whose bounds overlap [low, high]: iterate with ``mesh_query_aabb_next`` or
    ``for``."""

    def primal(mid, lo, hi):
        return call("_wk.geo_mesh_query_aabb", mid, _i(0), *_xyz(lo), *_xyz(hi),
                    type_=MESH_QUERY)


@builtin("mesh_query_sphere", ["mesh_query_sphere(id: uint64, center: vec3, radius: float32) "
                               "-> mesh_query_aabb_t"],
         lambda ts, attrs=None: MESH_QUERY if len(ts) == 3 and _id(ts[0]) and _v3(ts[1]) and
         _f(ts[2]) else None, differentiable=False)
class mesh_query_sphere:
    """Faces within ``radius`` of ``center``: iterate as ``mesh_query_aabb``."""

    def primal(mid, c, r):
        z = const(0.0, T.float32)
        return call("_wk.geo_mesh_query_aabb", mid, _i(1), *_xyz(c),
                    call("np.float32", r, type_=T.float32), z, z, type_=MESH_QUERY)


@builtin("mesh_query_ray_anyhit", ["mesh_query_ray_anyhit(id: uint64, start: vec3, dir: vec3, "
                                   "max_t: float32[, root: int32]) -> bool"],
         lambda ts, attrs=None: T.bool if len(ts) in (4, 5) and _id(ts[0]) and _v3(ts[1]) and
         _v3(ts[2]) and _f(ts[3]) and (len(ts) == 4 or T.is_int(ts[4])) else None,
         differentiable=False)
class mesh_query_ray_anyhit:
    def primal(mid, o, d, max_t, root=None):
        return call("_wk.geo_mesh_ray_anyhit", mid, *_xyz(o), *_xyz(d),
                    call("np.float32", max_t, type_=T.float32), _root(root), type_=T.bool)


@builtin("mesh_query_ray_count_intersections", [
    "mesh_query_ray_count_intersections(id: uint64, start: vec3, dir: vec3[, root: int32]) "
    "-> int32"],
    lambda ts, attrs=None: T.int32 if len(ts) in (3, 4) and _id(ts[0]) and _v3(ts[1]) and
    _v3(ts[2]) and (len(ts) == 3 or T.is_int(ts[3])) else None, differentiable=False)
class mesh_query_ray_count_intersections:
    def primal(mid, o, d, root=None):
        return call("_wk.geo_mesh_ray_count", mid, *_xyz(o), *_xyz(d), _root(root),
                    type_=T.int32)


@builtin("_mesh_next", ["_mesh_next(query)"],
         lambda ts, attrs=None: MESH_QUERY if len(ts) == 1 and ts[0] == MESH_QUERY else None,
         differentiable=False, public=False)
class _mesh_next:
    def primal(q):
        return call("_wk.geo_mesh_next", q, type_=MESH_QUERY)


def _bvh_start(name, kind):
    pts = "low: vec3, high: vec3" if kind == 0 else "start: vec3, dir: vec3"  # Warp's names

    @builtin(name, [f"{name}(id: uint64, {pts}[, root: int32]) -> bvh_query_t"],
             lambda ts, attrs=None: BVH_QUERY if len(ts) in (3, 4) and _id(ts[0]) and
             _v3(ts[1]) and _v3(ts[2]) and (len(ts) == 3 or T.is_int(ts[3])) else None,
             differentiable=False)
    class rules:
        def primal(bid, a, b, root=None):
            r = root if root is not None else _i(-1)
            return call("_wk.geo_bvh_query", bid, _i(kind), *_xyz(a), *_xyz(b), r,
                        type_=BVH_QUERY)
    return rules


bvh_query_aabb = _bvh_start("bvh_query_aabb", 0)
bvh_query_ray = _bvh_start("bvh_query_ray", 1)


@builtin("bvh_query_sphere", ["bvh_query_sphere(id: uint64, center: vec3, radius: float32"
                              "[, root: int32]) -> bvh_query_t"],
         lambda ts, attrs=None: BVH_QUERY if len(ts) in (3, 4) and _id(ts[0]) and _v3(ts[1])
         and _f(ts[2]) and (len(ts) == 3 or T.is_int(ts[3])) else None, differentiable=False)
class bvh_query_sphere:
    def primal(bid, c, r, root=None):
        z = const(0.0, T.float32)
        return call("_wk.geo_bvh_query", bid, _i(2), *_xyz(c),
                    call("np.float32", r, type_=T.float32), z, z,
                    root if root is not None else _i(-1), type_=BVH_QUERY)


@builtin("bvh_query_capsule", ["bvh_query_capsule(id: uint64, start: vec3, dir: vec3, radius: "
                               "float32[, root: int32]) -> bvh_query_t"],
         lambda ts, attrs=None: BVH_QUERY if len(ts) in (4, 5) and _id(ts[0]) and _v3(ts[1])
         and _v3(ts[2]) and _f(ts[3]) and (len(ts) == 4 or T.is_int(ts[4])) else None,
         differentiable=False)
class bvh_query_capsule:
    """Items whose box, inflated by ``radius``, the segment ``start + s dir`` meets for
    ``0 <= s <= max_dist`` (``bvh_query_next``'s third argument; 1 for the segment to
    ``start + dir``): a conservative capsule sweep, as Warp's."""

    def primal(bid, o, d, r, root=None):
        return call("_wk.geo_bvh_query_capsule", bid, *_xyz(o), *_xyz(d),
                    call("np.float32", r, type_=T.float32),
                    root if root is not None else _i(-1), type_=BVH_QUERY)


def _group_root(name, helper, what):
    @builtin(name, [f"{name}(id: uint64, group: int32) -> int32"],
             lambda ts, attrs=None: T.int32 if len(ts) == 2 and _id(ts[0]) and T.is_int(ts[1])
             else None, differentiable=False)
    class rules:
        __doc__ = (f"The root node of ``group``'s subtree in a grouped {what} (-1 when the "
                   "group has no item; an ungrouped one has every item in group 0): pass it "
                   "as the ``root`` of a query to visit that group only.")

        def primal(oid, group):
            return call(helper, oid, call("np.int32", group, type_=T.int32), type_=T.int32)
    return rules


bvh_get_group_root = _group_root("bvh_get_group_root", "_wk.geo_bvh_group_root", "wp.Bvh")
mesh_get_group_root = _group_root("mesh_get_group_root", "_wk.geo_mesh_group_root", "wp.Mesh")


@builtin("_bvh_next", ["_bvh_next(query, max_dist)"],
         lambda ts, attrs=None: BVH_QUERY if len(ts) == 2 and ts[0] == BVH_QUERY and _f(ts[1])
         else None, differentiable=False, public=False)
class _bvh_next:
    def primal(q, max_dist):
        return call("_wk.geo_bvh_next", q, call("np.float32", max_dist, type_=T.float32),
                    type_=BVH_QUERY)


def _next_form(name, qtype, step, what):
    def lower(ctx, node):
        if not 2 <= len(node.args) <= (3 if qtype is BVH_QUERY else 2) or node.keywords or \
                not all(isinstance(a, ast.Name) for a in node.args[:2]):
            raise ctx.fail(node, f"{name}(query, index) takes the query variable and the "
                           "variable that receives the index")
        qname, iname = node.args[0].id, node.args[1].id
        q = ctx.env.get(qname)
        if q is None or q.type != qtype:
            raise ctx.fail(node.args[0], f"'{qname}' is not a {what} query")
        extra = []
        if qtype is BVH_QUERY:
            md = ctx.expr(node.args[2]) if len(node.args) == 3 else \
                ir.Const(float("inf"), T.float32)
            extra = [ctx.adapt_literal(md, T.float32)]
        q2 = ctx.apply(step, [q] + extra, node)
        ctx.bind(qname, q2, node)
        index = ctx.apply("cast", [ctx.apply("extract", [q2, ir.Const(1, T.int32)], node)],
                          node, {"type": T.int32})
        ctx.bind(iname, index, node)
        found = ctx.apply("extract", [q2, ir.Const(0, T.int32)], node)
        return ctx.apply("cast", [found], node, {"type": T.bool})
    return special_form(name, f"{name}(query, index) -> bool (assigns both)",
                        assigned=lambda node: node.args[:2])(lower)


mesh_query_aabb_next = _next_form("mesh_query_aabb_next", MESH_QUERY, "_mesh_next", "mesh")
mesh_query_next = _next_form("mesh_query_next", MESH_QUERY, "_mesh_next", "mesh")  # Warp's alias
bvh_query_next = _next_form("bvh_query_next", BVH_QUERY, "_bvh_next", "BVH")
registry.ITERATORS[MESH_QUERY] = mesh_query_aabb_next
registry.ITERATORS[BVH_QUERY] = bvh_query_next
registry.ITERATOR_STARTS.update({mesh_query_aabb, mesh_query_sphere, bvh_query_aabb,
                                 bvh_query_ray, bvh_query_sphere, bvh_query_capsule})


def _kinds():
    from ..native.geometry.descriptors import KIND_BVH, KIND_MESH
    return {"mesh_": KIND_MESH, "_mesh_": KIND_MESH, "bvh_": KIND_BVH, "_bvh_": KIND_BVH}


mark_kinds(_kinds())
