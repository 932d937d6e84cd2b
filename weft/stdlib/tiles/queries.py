"""Tiles: a block's BVH and mesh queries, Warp's ``tile_bvh_query_aabb``/``_ray``,
``tile_mesh_query_aabb``, their ``_next`` steps and ``tile_query_valid``.

The whole block traverses one query: each step (``tile_bvh_query_next(query)``) hands every
lane of the block one result index, -1 where the traversal has no more, and
``tile_query_valid(query)`` is True at the start and after a step that found something, False
after a step that found nothing (Warp's loop: ``while wp.tile_query_valid(q): i =
wp.untile(wp.tile_bvh_query_next(q))``). On the CPU a block is one lane (each step one result)
or, with cooperative CPU blocks, ``block_dim`` lanes (each step the next ``block_dim``
results, in the traversal's order; Warp's order is unspecified).

A tiled query is the 16 words of a scalar query (:mod:`weft.stdlib.mesh`) as a type of its
own, its first word the valid flag. A step is one call of the block
(``_wk.geo_bvh_next_batch``/``geo_mesh_next_batch``, :mod:`weft.native.geometry.kernel_api`)
that fills an array the kernel makes with the query's new words followed by the step's
results, a tile the lowering splits: the special form rebinds the query's variable to the new
words (as ``bvh_query_next(query, index)`` does) and returns the results, a tile of ``int32``
of the block's length. Not differentiable (a query's results are discrete choices, as in
Warp). Refused on CUDA.
"""
from __future__ import annotations

import ast
import warnings

from ...core import types as T
from .. import lanes, mesh
from ..exprs import Ex, attr_path
from ..geometry_common import _is_id as _id
from ..registry import REGISTRY, builtin, special_form
from .common import _emit, _int, _let, _tuple

BVH_TILED = T.query_type("BvhQueryTiled")
MESH_TILED = T.query_type("MeshQueryAABBTiled")
WORDS = 16  # a query's words before a step's results


def _started(q, qtype):
    """``q`` (a scalar query's words) with its first word 1: valid until a step finds none."""
    rest = ast.Subscript(q.node, ast.Slice(_int(1), None, None), ast.Load())
    one = ast.Tuple([ast.Call(attr_path("np.int64"), [_int(1)], [])], ast.Load())
    return Ex(ast.BinOp(one, ast.Add(), rest), qtype)


def _deprecated(ctx, node, name, replacement):
    """Warp 1.18 renamed the ``*_tiled`` queries: the old name still works, with its warning
    at the kernel's line (once per compile of the kernel, as Warp's at its code generation)."""
    if replacement:
        loc = ctx.loc(node)
        warnings.warn_explicit(f"wp.{name}() is deprecated since Warp 1.18; use "
                               f"wp.{replacement}() instead", DeprecationWarning,
                               loc.filename, loc.lineno)


def _start(name, scalar, qtype, what, pts):
    """The tiled form of the scalar query start ``scalar`` (its rules in :mod:`..mesh`)."""
    @builtin(name, [f"{name}(id: uint64, {pts}) -> {qtype.__name__}"],
             lambda ts, attrs=None: qtype if len(ts) == 3 and _id(ts[0]) and
             mesh._v3(ts[1]) and mesh._v3(ts[2]) else None, differentiable=False)
    class rules:
        __doc__ = (f"A {what} query the whole block traverses: step it with its ``_next`` in "
                   "a loop guarded by ``tile_query_valid``.")

        def primal(oid, a, b):
            return _started(scalar.primal(oid, a, b), qtype)
    return rules


tile_bvh_query_aabb = _start("tile_bvh_query_aabb", mesh.bvh_query_aabb, BVH_TILED, "BVH",
                             "low: vec3, high: vec3")
tile_bvh_query_ray = _start("tile_bvh_query_ray", mesh.bvh_query_ray, BVH_TILED, "BVH",
                            "start: vec3, dir: vec3")
tile_mesh_query_aabb = _start("tile_mesh_query_aabb", mesh.mesh_query_aabb, MESH_TILED,
                              "mesh", "low: vec3, high: vec3")


def _former_start(name, replacement):
    """Warp's name before 1.18 of a start: its warning, then the start itself."""
    def lower(ctx, node):
        _deprecated(ctx, node, name, replacement)
        if node.keywords:
            raise ctx.fail(node, f"{name} takes its arguments by position")
        return ctx.apply(replacement, [ctx.expr(a) for a in node.args], node)
    return special_form(name, f"{name}(...): Warp's name before 1.18 of {replacement} "
                        "(deprecated)")(lower)


bvh_query_aabb_tiled = _former_start("bvh_query_aabb_tiled", "tile_bvh_query_aabb")
bvh_query_ray_tiled = _former_start("bvh_query_ray_tiled", "tile_bvh_query_ray")
mesh_query_aabb_tiled = _former_start("mesh_query_aabb_tiled", "tile_mesh_query_aabb")


@builtin("tile_query_valid", ["tile_query_valid(query) -> bool: False once a step of the "
                              "block's query found nothing"],
         lambda ts, attrs=None: T.bool if len(ts) == 1 and ts[0] in (BVH_TILED, MESH_TILED)
         else None, differentiable=False)
class tile_query_valid:
    def primal(q):
        first = ast.Subscript(q.node, _int(0), ast.Load())
        return Ex(ast.Compare(first, [ast.NotEq()], [_int(0)]), T.bool)


@builtin("_tile_query_step", ["_tile_query_step(query): the new words, then the results"],
         lambda ts, attrs=None: T.TileType(T.int64, (WORDS + attrs["n"],))
         if attrs and len(ts) == 1 else None, differentiable=False, public=False)
class _tile_query_step:
    def primal(q, helper, n):
        out = _let(ast.Call(attr_path("np.empty"), [_int(WORDS + n), attr_path("np.int64")],
                            []), "qs")
        _emit(ast.Expr(ast.Call(attr_path(helper), [q.node, out], [])))
        return Ex(out, T.TileType(T.int64, (WORDS + n,)))


@builtin("_tile_query_words", ["_tile_query_words(step): a step's new query"],
         lambda ts, attrs=None: attrs.get("type") if attrs else None, differentiable=False,
         public=False)
class _tile_query_words:
    def primal(step, type):
        s = step.atom()
        return Ex(_tuple([ast.Subscript(s.node, _int(k), ast.Load()) for k in range(WORDS)]),
                  type)


@builtin("_tile_query_items", ["_tile_query_items(step): a step's results, int32"],
         lambda ts, attrs=None: T.TileType(T.int32, (attrs["n"],)) if attrs else None,
         differentiable=False, public=False)
class _tile_query_items:
    def primal(step, n):
        rest = ast.Subscript(step.node, ast.Slice(_int(WORDS), None, None), ast.Load())
        return Ex(ast.Call(ast.Attribute(rest, "astype", ast.Load()), [attr_path("np.int32")],
                           []), T.TileType(T.int32, (n,)))


def _next_form(name, qtype, helper, what, replacement=None):
    def lower(ctx, node):
        _deprecated(ctx, node, name, replacement)
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
            raise ctx.fail(node, f"{name}(query) takes the variable holding the block's "
                           f"{what} query")
        qname = node.args[0].id
        q = ctx.env.get(qname)
        if q is None or q.type != qtype:
            raise ctx.fail(node.args[0], f"'{qname}' is not a tiled {what} query (from "
                           f"tile_{what.lower()}_query_*)")
        if lanes.CUDA.get():
            raise ctx.fail(node, f"{name} is not supported on CUDA yet (it runs on the CPU, "
                           "with or without cooperative CPU blocks)")
        mode = lanes.current()
        if mode is not None:
            mode.coupled.append(name)
        n = mode.block_dim if mode is not None else 1
        step = ctx.apply("_tile_query_step", [q], node, {"helper": helper, "n": n})
        ctx.bind(qname, ctx.apply("_tile_query_words", [step], node, {"type": qtype}), node)
        return ctx.apply("_tile_query_items", [step], node, {"n": n})
    return special_form(name, f"{name}(query) -> tile of int32 (block_dim,): the block's next "
                        "results, -1 where none (advances the query)",
                        assigned=lambda node: node.args[:1])(lower)


tile_bvh_query_next = _next_form("tile_bvh_query_next", BVH_TILED,
                                 "_wk.geo_bvh_next_batch", "BVH")
bvh_query_next_tiled = _next_form("bvh_query_next_tiled", BVH_TILED,
                                  "_wk.geo_bvh_next_batch", "BVH", "tile_bvh_query_next")
tile_mesh_query_aabb_next = _next_form("tile_mesh_query_aabb_next", MESH_TILED,
                                       "_wk.geo_mesh_next_batch", "Mesh")
mesh_query_aabb_next_tiled = _next_form("mesh_query_aabb_next_tiled", MESH_TILED,
                                        "_wk.geo_mesh_next_batch", "Mesh",
                                        "tile_mesh_query_aabb_next")


def _mark_kinds():
    """The launch checks the id each start takes (``analyze.geometry_ids``)."""
    from ...native.geometry.descriptors import KIND_BVH, KIND_MESH
    for name in ("tile_bvh_query_aabb", "tile_bvh_query_ray"):
        REGISTRY[name].geometry_kind = KIND_BVH
    REGISTRY["tile_mesh_query_aabb"].geometry_kind = KIND_MESH


_mark_kinds()
