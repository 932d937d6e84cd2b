"""Kernel builtins of Warp's geometry objects, reached by id (a ``uint64``): volumes
(``wp.volume_sample_f``, ``volume_lookup_*``, ``volume_store_*``, the index/world maps) and hash
grids (``wp.hash_grid_query``, ``hash_grid_query_next``, ``for j in wp.hash_grid_query(...)``,
``hash_grid_point_id``).

Each primitive calls a ``_wk.geo_*`` helper (:mod:`weft.native.geometry.kernel_api`), which reads the
object's descriptor and runs the query core. Derivatives, as Warp: a sample is differentiable
with respect to the sample point (the index-space gradient or Jacobian of the trilinear
interpolation; zero for CLOSEST); lookups, stores, ids, indices and queries carry none. A hash
grid query is a value of type ``wp.HashGridQuery[dtype]`` (16 int64: found, index, the grid's id
and the core's iteration state) that ``hash_grid_query_next(query, index)`` advances, rebinding
both variables (so loops carry them, and adjoints replay them).
"""
from __future__ import annotations

import ast

from weft.stdlib import kernel_scope as wp  # noqa: F401  (names looked up in kernel code)

from ..core import types as T
from . import ir
from .exprs import call, tup
from . import registry
from .geometry_common import _is_id, _kinds, _sig, _xyz, mark_kinds
from .registry import builtin, special_form

CLOSEST, LINEAR = 0, 1
#: the query type of each point precision (``wp.HashGridQuery[dtype]``); float32's is
#: ``wp.HashGridQuery`` itself (``wp.hash_grid_query_t``)
HASH_GRID_QUERIES = {t: T.hash_grid_query_type(t) for t in (T.float16, T.float32, T.float64)}
HASH_GRID_QUERY = HASH_GRID_QUERIES[T.float32]
GEOMETRY_ID = T.uint64


# ------------------------------------------------------------------------------ sampling
def _sample_scalar(name, helper, grad_helper, st):
    @builtin(name, [f"{name}(id: uint64, uvw: vec3, sampling_mode: int32) -> "
                    f"{T.type_name(st)}"], _sig("id", "vec3", "int")(st))
    class rules:
        def primal(vid, uvw, mode):
            return call(helper, vid, *_xyz(uvw), mode, type_=st)

        def adjoint(vid, uvw, mode, ret, adj):
            g = call(grad_helper, vid, *_xyz(uvw), mode, type_=T.vec3).atom()
            a = adj if st is T.float32 else call("np.float32", adj, type_=T.float32)
            return [None, g * a.atom(), None]

        def tangent(vid, uvw, mode, tvid, tuvw, tmode, ret):
            g = call(grad_helper, vid, *_xyz(uvw), mode, type_=T.vec3).atom()
            t = tuvw.atom()
            out = g.comp(0) * t.comp(0) + g.comp(1) * t.comp(1) + g.comp(2) * t.comp(2)
            return out if st is T.float32 else call(f"np.{T.type_name(st)}", out, type_=st)
    return rules


volume_sample_f = _sample_scalar("volume_sample_f", "_wk.geo_vol_sample_f", "_wk.geo_vol_grad_f",
                                 T.float32)
_volume_sample_d = _sample_scalar("_volume_sample_d", "_wk.geo_vol_sample_d",
                                  "_wk.geo_vol_grad_d", T.float64)


@builtin("volume_sample_v", ["volume_sample_v(id: uint64, uvw: vec3, sampling_mode: int32) -> "
                             "vec3"], _sig("id", "vec3", "int")(T.vec3))
class volume_sample_v:
    def primal(vid, uvw, mode):
        return call("_wk.geo_vol_sample_v", vid, *_xyz(uvw), mode, type_=T.vec3)

    def adjoint(vid, uvw, mode, ret, adj):  # J^T adj
        j = call("_wk.geo_vol_jac_v", vid, *_xyz(uvw), mode, type_=T.vector(9, T.float32))
        j = j.atom()
        a = adj.atom()
        cols = [j.comp(c) * a.comp(0) + j.comp(3 + c) * a.comp(1) + j.comp(6 + c) * a.comp(2)
                for c in range(3)]
        return [None, tup(cols, T.vec3), None]

    def tangent(vid, uvw, mode, tvid, tuvw, tmode, ret):  # J t
        j = call("_wk.geo_vol_jac_v", vid, *_xyz(uvw), mode, type_=T.vector(9, T.float32))
        j = j.atom()
        t = tuvw.atom()
        rows = [j.comp(3 * r) * t.comp(0) + j.comp(3 * r + 1) * t.comp(1)
                + j.comp(3 * r + 2) * t.comp(2) for r in range(3)]
        return tup(rows, T.vec3)


def _fused_sample_grad(name, helper, hess_helper, st):
    """``(value, gx, gy, gz)`` of a sample in one traversal (a vec4 of the grid's precision).
    Both parts differentiate with respect to the sample point: the value through the gradient
    it carries (``ret``), the gradient through the mixed second derivatives ``(hxy, hxz,
    hyz)`` of ``hess_helper`` (the interpolation is linear along each axis, so the Hessian's
    diagonal is zero; all of it is zero for CLOSEST)."""
    vt = T.vector(4, st)

    def hessian(vid, uvw, mode):
        h = call(hess_helper, vid, *_xyz(uvw), mode, type_=T.vector(3, st)).atom()
        return h.comp(0), h.comp(1), h.comp(2)

    def narrow(x):
        return x if st is T.float32 else call("np.float32", x, type_=T.float32)

    @builtin(name, [f"{name}(id: uint64, uvw: vec3, sampling_mode: int32)"],
             _sig("id", "vec3", "int")(vt), public=False)
    class rules:
        def primal(vid, uvw, mode):
            return call(helper, vid, *_xyz(uvw), mode, type_=vt)

        def adjoint(vid, uvw, mode, ret, adj):  # g adj_value + H adj_gradient
            r = ret.atom()
            a = adj.atom()
            hxy, hxz, hyz = hessian(vid, uvw, mode)
            rows = ((hxy, 2, hxz, 3), (hxy, 1, hyz, 3), (hxz, 1, hyz, 2))
            return [None, tup([narrow(r.comp(1 + k) * a.comp(0) + h1 * a.comp(c1) +
                                      h2 * a.comp(c2))
                               for k, (h1, c1, h2, c2) in enumerate(rows)], T.vec3), None]

        def tangent(vid, uvw, mode, tvid, tuvw, tmode, ret):  # (g . t, H t)
            r = ret.atom()
            t = tuvw.atom()
            hxy, hxz, hyz = hessian(vid, uvw, mode)
            dv = r.comp(1) * t.comp(0) + r.comp(2) * t.comp(1) + r.comp(3) * t.comp(2)
            return tup([dv, hxy * t.comp(1) + hxz * t.comp(2),
                        hxy * t.comp(0) + hyz * t.comp(2), hxz * t.comp(0) + hyz * t.comp(1)],
                       vt)
    return rules


_volume_sample_grad_f4 = _fused_sample_grad("_volume_sample_grad_f4",
                                            "_wk.geo_vol_sample_grad_f", "_wk.geo_vol_hess_f",
                                            T.float32)
_volume_sample_grad_d4 = _fused_sample_grad("_volume_sample_grad_d4",
                                            "_wk.geo_vol_sample_grad_d", "_wk.geo_vol_hess_d",
                                            T.float64)


def _sample_grad(kind):
    """``volume_sample_grad_f(id, uvw, sampling_mode, grad)`` (and the generic
    ``volume_sample_grad(..., dtype=float32|float64)``): the sample, with its index-space
    gradient assigned to ``grad``, from one traversal. Both are differentiable with respect to
    ``uvw``: the sample as ``volume_sample_f``, the gradient through the interpolation's
    second derivatives (``_fused_sample_grad``)."""
    def lower(ctx, node):
        dtype = T.float32
        for kw in node.keywords:
            if kw.arg != "dtype" or kind != "generic":
                raise ctx.fail(kw, f"takes no keyword argument '{kw.arg}'")
            dtype = T.as_value_type(ctx.static_value(kw.value, "volume_sample_grad(dtype=...)"))
        if len(node.args) != 4:
            raise ctx.fail(node, "volume_sample_grad_f(id, uvw, sampling_mode, grad) takes 4 "
                           "arguments (grad receives the gradient)")
        args = [ctx.expr(a) for a in node.args[:3]]
        if dtype not in (T.float32, T.float64):
            from .geometry_volume import FLOAT_TYPES, lower_grid_sample
            if dtype not in FLOAT_TYPES:
                raise ctx.fail(node, f"volume_sample_grad(dtype={T.type_name(dtype)}): weft "
                               "samples gradients of float32, float64, vec3 and vec4 grids")
            return lower_grid_sample(ctx, node, args, dtype, node.args[3])
        d = dtype is T.float64
        both = ctx.apply("_volume_sample_grad_d4" if d else "_volume_sample_grad_f4", args, node)
        parts = [ctx.apply("extract", [both, ir.Const(k, T.int32)], node) for k in range(4)]
        grad = ctx.apply("construct", parts[1:], node, {"type": T.vec3d if d else T.vec3})
        ctx.assign(node.args[3], grad, node)
        return parts[0]
    return lower


special_form("volume_sample_grad_f", "volume_sample_grad_f(id, uvw, sampling_mode, grad) -> "
             "float32 (assigns grad)", assigned=lambda node: node.args[3:4])(
    _sample_grad("f"))
special_form("volume_sample_grad", "volume_sample_grad(id, uvw, sampling_mode, grad, dtype) ->"
             " dtype (assigns grad)", assigned=lambda node: node.args[3:4])(
    _sample_grad("generic"))


def _plain(name, helper, kinds, ret, public=True, doc=""):
    """A builtin without derivatives calling ``helper`` with vec3 arguments split."""
    sig = f"{name}({', '.join(kinds)}) -> {T.type_name(ret) if ret is not None else 'None'}"

    @builtin(name, [sig], _sig(*kinds)(ret if ret is not None else T.int32),
             differentiable=False, public=public)
    class rules:
        def primal(*args):
            flat = []
            for a, k in zip(args, kinds):
                flat += _xyz(a) if k == "vec3" else [a]
            return call(helper, *flat, type_=ret if ret is not None else T.int32)
    rules.__doc__ = doc
    return rules


volume_sample_i = _plain("volume_sample_i", "_wk.geo_vol_sample_i", ("id", "vec3"), T.int32)
volume_voxel_count = _plain("volume_voxel_count", "_wk.geo_vol_voxel_count", ("id",), T.int32,
                            doc="The number of indexable voxels (the size a voxel_data array "
                            "needs; as Warp, not differentiable).")


def _lookup(name, helper, ret):
    @builtin(name, [f"{name}(id: uint64, i: int32, j: int32, k: int32) -> {T.type_name(ret)}"],
             _sig("id", "int", "int", "int")(ret), differentiable=False)
    class rules:
        def primal(vid, i, j, k):
            return call(helper, vid, i, j, k, type_=ret)
    return rules


volume_lookup_f = _lookup("volume_lookup_f", "_wk.geo_vol_lookup_f", T.float32)
_volume_lookup_d = _lookup("_volume_lookup_d", "_wk.geo_vol_lookup_d", T.float64)
volume_lookup_i = _lookup("volume_lookup_i", "_wk.geo_vol_lookup_i", T.int32)
volume_lookup_v = _lookup("volume_lookup_v", "_wk.geo_vol_lookup_v", T.vec3)
volume_lookup_index = _lookup("volume_lookup_index", "_wk.geo_vol_lookup_index", T.int32)


def _store(name, helper, value_kind, vt):
    @builtin(name, [f"{name}(id: uint64, i: int32, j: int32, k: int32, value: "
                    f"{T.type_name(vt)})"],
             _sig("id", "int", "int", "int", value_kind)(T.TupleType(())), differentiable=False)
    class rules:
        def primal(vid, i, j, k, value):
            vals = _xyz(value) if value_kind == "vec3" else [value]
            return call(helper, vid, i, j, k, *vals, type_=T.TupleType(()))
    return rules


volume_store_f = _store("volume_store_f", "_wk.geo_vol_store_f", "float32", T.float32)
_volume_store_d = _store("_volume_store_d", "_wk.geo_vol_store_d", "float64", T.float64)
volume_store_i = _store("volume_store_i", "_wk.geo_vol_store_i", "int32", T.int32)
volume_store_v = _store("volume_store_v", "_wk.geo_vol_store_v", "vec3", T.vec3)


def _xform(name, which):
    """An index <-> world map: affine, so its adjoint applies the transpose of the linear part
    and its tangent the linear part (the ``_dir`` map)."""
    p = "uvw" if "index_to" in name else "xyz"  # Warp's parameter names
    @builtin(name, [f"{name}(id: uint64, {p}: vec3) -> vec3"], _sig("id", "vec3")(T.vec3))
    class rules:
        def primal(vid, xyz):
            return call("_wk.geo_vol_xform", vid, ir_int(which), *_xyz(xyz), type_=T.vec3)

        def adjoint(vid, xyz, ret, adj):
            return [None, call("_wk.geo_vol_xform_adj", vid, ir_int(which), *_xyz(adj),
                               type_=T.vec3)]

        def tangent(vid, xyz, tvid, txyz, ret):
            return call("_wk.geo_vol_xform", vid, ir_int(2 if which in (0, 2) else 3),
                        *_xyz(txyz), type_=T.vec3)
    return rules


def ir_int(v):
    from .exprs import const
    return const(v, T.int32)


volume_index_to_world = _xform("volume_index_to_world", 0)
volume_world_to_index = _xform("volume_world_to_index", 1)
volume_index_to_world_dir = _xform("volume_index_to_world_dir", 2)
volume_world_to_index_dir = _xform("volume_world_to_index_dir", 3)

# the generic forms pick the typed builtin by their dtype= keyword (float32 by default)
_BY_DTYPE = {
    "sample": {T.float32: "volume_sample_f", T.float64: "_volume_sample_d",
               T.vec3: "volume_sample_v"},
    "lookup": {T.float32: "volume_lookup_f", T.float64: "_volume_lookup_d",
               T.vec3: "volume_lookup_v", T.int32: "volume_lookup_i"},
    "store": {T.float32: "volume_store_f", T.float64: "_volume_store_d",
              T.vec3: "volume_store_v", T.int32: "volume_store_i"},
}


def _generic(kind, n_args):
    def lower(ctx, node):
        dtype = T.float32
        for kw in node.keywords:
            if kw.arg != "dtype":
                raise ctx.fail(kw, f"volume_{kind}() takes no keyword argument '{kw.arg}'")
            dtype = T.as_value_type(ctx.static_value(kw.value, f"volume_{kind}(dtype=...)"))
        args = [ctx.expr(a) for a in node.args]
        if kind == "store" and not node.keywords and len(args) == 5:
            dtype = args[4].type  # volume_store(id, i, j, k, value): the value's type
        name = _BY_DTYPE[kind].get(dtype)
        if name is None:
            return _generic_other(ctx, node, kind, dtype, args, n_args)
        if len(args) != n_args:
            raise ctx.fail(node, f"volume_{kind}() takes {n_args} arguments and dtype=")
        return ctx.apply(name, args, node)
    return lower


def _generic_other(ctx, node, kind, dtype, args, n_args):
    """The generic forms of the value types without a typed builtin (``geometry_volume``)."""
    from . import geometry_volume as gv
    if dtype not in gv.TYPES:
        raise ctx.fail(node, f"volume_{kind}(dtype={T.type_name(dtype)}): weft's volumes hold "
                       "float32, float64, int32, int64, uint32, vec3f, vec3d, vec4f or vec4d "
                       "values")
    if len(args) != n_args:
        raise ctx.fail(node, f"volume_{kind}() takes {n_args} arguments and dtype=")
    sfx = gv.TYPES[dtype]
    if kind == "sample":
        if dtype in gv.FLOAT_TYPES:
            return gv.lower_grid_sample(ctx, node, args, dtype)
        return ctx.apply(f"_volume_sample_int_{sfx}", args, node)
    return ctx.apply(f"_volume_{kind}_{sfx}", args, node)


special_form("volume_sample", "volume_sample(id, uvw, sampling_mode, dtype) -> dtype")(
    _generic("sample", 3))
special_form("volume_lookup", "volume_lookup(id, i, j, k, dtype) -> dtype")(
    _generic("lookup", 4))
special_form("volume_store", "volume_store(id, i, j, k, value)")(_generic("store", 5))


# ------------------------------------------------------------------------------ hash grids
def _resolve_query(ts, attrs=None):
    """``hash_grid_query(id, point, max_dist[, group])``: the query type of the point's
    precision (vec3h, vec3f or vec3d; ``max_dist`` a float, ``group`` an integer)."""
    if len(ts) not in (3, 4) or not _is_id(ts[0]) or not T.is_vector(ts[1]) or \
            ts[1]._length_ != 3 or not T.is_float(ts[2]) or (len(ts) == 4 and
                                                             not T.is_int(ts[3])):
        return None
    return HASH_GRID_QUERIES.get(T.scalar_of(ts[1]))


@builtin("hash_grid_query", [f"hash_grid_query(id: uint64, point: {v}, max_dist: {s}{g}) -> "
                             f"HashGridQuery[{s}]" for s, v in
                             (("float16", "vec3h"), ("float32", "vec3f"), ("float64", "vec3d"))
                             for g in ("", ", group: int32")],
         _resolve_query, differentiable=False)
class hash_grid_query:
    """The start of a neighbour query: iterate with ``hash_grid_query_next`` or ``for``. With
    ``group``, only that group's points of a grid built with groups (every point of a grid
    built without)."""

    def primal(gid, p, radius, group=None):
        g = group if group is not None else ir_int(0)
        filt = ir_int(0 if group is None else 1)
        return call("_wk.geo_hg_query", gid, *_xyz(p), radius, g, filt,
                    type_=HASH_GRID_QUERIES[T.scalar_of(p.type)])


@builtin("_hash_grid_next", ["_hash_grid_next(query)"],
         lambda ts, attrs=None: ts[0] if len(ts) == 1 and T.type_is_hash_grid_query(ts[0])
         else None, differentiable=False, public=False)
class _hash_grid_next:
    def primal(q):
        return call("_wk.geo_hg_next", q, type_=q.type)


def _query_args(node):
    return node.args[:2]


def _lower_next(ctx, node):
    """``hash_grid_query_next(query, index)``: advance ``query`` (rebound), assign the next
    point to ``index`` and return whether there was one."""
    if len(node.args) != 2 or node.keywords or not all(isinstance(a, ast.Name)
                                                       for a in node.args):
        raise ctx.fail(node, "hash_grid_query_next(query, index) takes the query variable and "
                       "the variable that receives the point index")
    qname, iname = node.args[0].id, node.args[1].id
    q = ctx.env.get(qname)
    if q is None or not T.type_is_hash_grid_query(q.type):
        raise ctx.fail(node.args[0], f"'{qname}' is not a hash grid query (made by "
                       "wp.hash_grid_query)")
    q2 = ctx.apply("_hash_grid_next", [q], node)
    ctx.bind(qname, q2, node)
    index = ctx.apply("cast", [ctx.apply("extract", [q2, ir.Const(1, T.int32)], node)], node,
                      {"type": T.int32})
    ctx.bind(iname, index, node)
    found = ctx.apply("extract", [q2, ir.Const(0, T.int32)], node)
    return ctx.apply("cast", [found], node, {"type": T.bool})


hash_grid_query_next = special_form(
    "hash_grid_query_next", "hash_grid_query_next(query, index) -> bool (assigns both)",
    assigned=_query_args)(_lower_next)


for _q in HASH_GRID_QUERIES.values():  # for j in <query>: ...
    registry.ITERATORS[_q] = hash_grid_query_next
registry.ITERATOR_STARTS.add(hash_grid_query)


@builtin("hash_grid_point_id", ["hash_grid_point_id(id: uint64, index: int32) -> int32"],
         _sig("id", "int")(T.int32), differentiable=False)
class hash_grid_point_id:
    def primal(gid, index):
        return call("_wk.geo_hg_point_id", gid, index, type_=T.int32)


mark_kinds(_kinds())
