"""Every differentiable tile builtin, checked from its declaration alone (the registry walk of
``tests/stdlib/test_registry.py``, for tiles).

Each case generates the builtin's primal, tangent and adjoint code with the transpiler's own
machinery, runs it as plain Python in float64 (tiles are numpy arrays; ``_wk.tile_*`` helpers
compiled), and checks at random points the tangent against central finite differences of the
primal and the adjoint against the tangent (<adj, J t> == <J^T adj, t>). Tile loads and stores
touch arrays: ``tests/tiles/test_tiles.py`` checks them through kernels.
"""
import ast
import math
import zlib

import numpy as np
import pytest

import weft.stdlib  # noqa: F401  (registers the builtins)
from weft.core import types as T
from weft.native import helpers
from weft.stdlib.exprs import Builder, Ex, NameGen
from weft.stdlib.registry import REGISTRY
from weft.stdlib.tiles.elements import ElementFn
from weft.stdlib.tiles.views import _Index

F = T.float64
I = T.int32


def tile(dtype, *shape):
    return T.TileType(dtype, shape)


# (builtin, argument types, attrs, integer argument values)
CASES = [
    ("tile_extract", [tile(F, 2, 3), I, I], {}, {1: 1, 2: 2}),
    ("tile_extract", [tile(T.vec3d, 4), I], {}, {1: 3}),
    ("tile_insert", [tile(F, 2, 3), I, I, F], {}, {1: 0, 2: 1}),
    ("tile_insert", [tile(T.vec2d, 3), I, T.vec2d], {}, {1: 2}),
    ("tile_sum_b", [tile(F, 2, 3)], {}, {}),
    ("tile_sum_b", [tile(T.vec3d, 4)], {}, {}),
    ("tile_max", [tile(F, 5)], {}, {}),
    ("tile_min", [tile(F, 2, 2)], {}, {}),
    ("tile_transpose", [tile(F, 2, 3)], {}, {}),
    ("tile_matmul_b", [tile(F, 2, 3), tile(F, 3, 4)], {}, {}),
    # alpha and beta carry no gradient (as Warp): held fixed
    ("tile_matmul_acc_b", [tile(F, 2, 3), tile(F, 3, 4), tile(F, 2, 4), F, F], {},
     {3: 0.5, 4: -1.3}),
    ("tile_astype_b", [tile(F, 3)], {"dtype": F}, {}),
    ("tile_const", [F], {"type": tile(F, 2, 2)}, {}),
    ("tile_from_value", [T.vec2d], {}, {}),
    ("tile_from_vector", [T.vec3d], {}, {}),
    ("tile_reshape_b", [tile(F, 2, 3)], {"shape": (3, 2)}, {}),
    ("tile_broadcast_b", [tile(F, 3)], {"shape": (2, 3)}, {}),
    ("tile_broadcast_b", [tile(F, 2, 1)], {"shape": (2, 4)}, {}),
    ("tile_unbroadcast_b", [tile(F, 2, 3)], {"type": tile(F, 3)}, {}),
    ("tile_unbroadcast_b", [tile(F, 2, 4)], {"type": tile(F, 2, 1)}, {}),
    ("tile_scatter_add_b", [tile(F, 2, 3), I, I, F, T.bool], {}, {1: 1, 2: 2, 4: True}),
    ("tile_scatter_add_b", [tile(T.vec2d, 3), I, T.vec2d, T.bool], {}, {1: 0, 3: True}),
    ("tile_lane_put_col", [tile(F, 3, 4), I, T.vec3d], {}, {1: 2}),
    ("tile_view_b", [tile(F, 3, 4), I, I], {"out": tile(F, 2, 2), "extents": (2, 2),
                                            "keep": (True, True)}, {1: 1, 2: 1}),
    ("tile_view_b", [tile(F, 3, 4), I, I], {"out": tile(F, 4), "extents": (1, 4),
                                            "keep": (False, True)}, {1: 2, 2: 0}),
    ("tile_assign_b", [tile(F, 4), tile(F, 2), I], {}, {2: 1}),
    ("tile_map_b", [tile(F, 2, 3)], {"fn": ElementFn(REGISTRY["sin"]),
                                     "type": tile(F, 2, 3)}, {}),
    ("tile_map_b", [tile(F, 3), F], {"fn": ElementFn(REGISTRY["mul"]), "type": tile(F, 3)}, {}),
    ("tile_map_b", [tile(F, 3), T.vec3d], {"fn": ElementFn(REGISTRY["mul"]),
                                           "type": tile(T.vec3d, 3)}, {}),
    ("tile_map_b", [tile(F, 2, 2), tile(F, 2, 2)], {"fn": ElementFn(REGISTRY["div"]),
                                                   "type": tile(F, 2, 2)}, {}),
    ("tile_reduce_b", [tile(F, 1, 5)], {"fn": ElementFn(REGISTRY["mul"])}, {}),
    ("tile_reduce_b", [tile(T.vec2d, 2, 3)], {"fn": ElementFn(REGISTRY["add"])}, {}),
    ("tile_moveaxis_b", [tile(F, 2, 3, 4)], {"perm": (0, 2, 1), "out": tile(F, 2, 4, 3)}, {}),
    ("tile_cholesky_b", [tile(F, 3, 3)], {}, {}),
    ("tile_cholesky_b", [tile(F, 3, 3)], {"upper": True}, {}),
    ("tile_cholesky_solve_b", [tile(F, 3, 3), tile(F, 3)], {}, {}),
    ("tile_cholesky_solve_b", [tile(F, 3, 3), tile(F, 3, 2)], {"upper": True}, {}),
    ("tile_lower_solve_b", [tile(F, 3, 3), tile(F, 3, 2)], {}, {}),
    ("tile_upper_solve_b", [tile(F, 3, 3), tile(F, 3)], {}, {}),
    ("tile_diag_add", [tile(F, 3, 3), tile(F, 3)], {}, {}),
    ("tile_axpy_b", [F, tile(F, 2, 2), tile(F, 2, 2)], {}, {}),
    ("tile_dot", [tile(F, 4), tile(F, 4)], {}, {}),
    ("tile_fft_b", [tile(T.vec2d, 2, 8)], {}, {}),
    ("tile_ifft_b", [tile(T.vec2d, 4)], {}, {}),
    ("tile_scan_inclusive", [tile(F, 2, 3)], {}, {}),
    ("tile_scan_exclusive", [tile(F, 5)], {}, {}),
    ("tile_scan_max_inclusive", [tile(F, 5)], {}, {}),
    ("tile_scan_min_inclusive", [tile(F, 5)], {}, {}),
    ("tile_reduce_b", [tile(F, 3, 4)], {"fn": ElementFn(REGISTRY["max"])}, {}),
]

ROWS_1_TO_3 = _Index("slice", None, 1, 4, 2, 2)
ALL3 = _Index("slice", None, 0, 3, 1, 3)
CASES += [
    ("tile_index_b", [tile(F, 4, 3)], {"spec": (ROWS_1_TO_3, ALL3), "out": tile(F, 2, 3)}, {}),
    ("tile_index_b", [tile(F, 4, 3), I], {"spec": (_Index("int"), ALL3), "out": tile(F, 3)},
     {1: 2}),
    ("tile_index_b", [tile(F, 4, 3), tile(I, 3)], {"spec": (_Index("gather", n=3), ALL3),
                                                   "out": tile(F, 3, 3)}, {1: [0, 2, 0]}),
    ("tile_index_set_b", [tile(F, 4, 3), tile(F, 2, 3)], {"spec": (ROWS_1_TO_3, ALL3)}, {}),
]

#: differentiable tile builtins checked through kernels instead (they read or write arrays)
THROUGH_KERNELS = {"tile_load_b", "tile_store_b", "tile_atomic_add_b", "tile_load_indexed_b",
                   "tile_store_indexed_b", "tile_atomic_add_indexed_b",
                   # CUDA's wp.tile(x), untile, tile_from_thread, t[i, j] += x of each thread
                   # (no CPU form): values, adjoints, tangents against numpy in
                   # tests/cuda/test_cuda_tiles.py
                   "tile_of_lanes", "tile_lane_value", "tile_from_lane", "tile_add_at",
                   "tile_set_at", "tile_bits_at"}


def _names(n, prefix):
    return [f"{prefix}{i}" for i in range(n)]


def _func(name, params, build):
    b = Builder(NameGen(set(params)))
    with b.active():
        result = build()
    if isinstance(result, list):
        node = ast.Tuple([r.node if r is not None else ast.Constant(None) for r in result],
                         ast.Load())
    else:
        node = result.node
    fn = ast.FunctionDef(name, ast.arguments([], [ast.arg(p) for p in params], None, [], [],
                                             None, []), b.stmts + [ast.Return(node)], [],
                         lineno=0)
    return fn


def compile_rules(b, types, ret_t, attrs):
    n = len(types)
    xs = [Ex(ast.Name(p, ast.Load()), t) for p, t in zip(_names(n, "x"), types)]
    ts = [Ex(ast.Name(p, ast.Load()), t) if T.is_differentiable(t) else None
          for p, t in zip(_names(n, "t"), types)]
    r = Ex(ast.Name("ret", ast.Load()), ret_t)
    g = Ex(ast.Name("g", ast.Load()), ret_t)
    mod = ast.Module([
        _func("primal", _names(n, "x"), lambda: b.primal(*xs, **attrs)),
        _func("tangent", _names(n, "x") + _names(n, "t") + ["ret"],
              lambda: b.tangent(*xs, *ts, ret=r, **attrs)),
        _func("adjoint", _names(n, "x") + ["ret", "g"],
              lambda: b.adjoint(*xs, ret=r, adj=g, **attrs)),
    ], [])
    ast.fix_missing_locations(mod)
    ns = {"np": np, "math": math, "_wk": helpers, "float64": np.float64, "float32": np.float32,
          "int32": np.int32, "int64": np.int64, "bool": np.bool_}
    exec(compile(mod, f"<rules of {b.name}>", "exec"), ns)  # noqa: S102 - generated by weft
    return ns["primal"], ns["tangent"], ns["adjoint"]


def size(t):
    if T.is_tile_type(t):
        return int(np.prod(T.element_shape(t)))
    return t._length_ if T.is_composite(t) else 1


def shaped(values, t):
    if T.is_tile_type(t):
        return np.asarray(values, dtype=np.float64).reshape(T.element_shape(t))
    if T.is_composite(t):
        return tuple(np.float64(x) for x in values)
    return np.float64(values[0])


def flat(v):
    return np.asarray(v, dtype=np.float64).reshape(-1)


def result_type(b, types, attrs):
    if b.name in ("tile_map_b",):
        return attrs["type"]
    if b.name in ("tile_index_b",):
        return attrs["out"]
    if b.name == "tile_const":
        return attrs["type"]
    if b.name == "tile_reduce_b":
        return tile(types[0].dtype, types[0].shape[0])
    return b.resolve(types, attrs)


@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tile_rule_tangent_matches_finite_differences_and_adjoint_matches_tangent(case):
    name, types, attrs, ints = CASES[case]
    b = REGISTRY[name]
    ret_t = result_type(b, types, attrs)
    assert ret_t is not None, f"{name} does not resolve {types}"
    primal, tangent, adjoint = compile_rules(b, types, ret_t, attrs)
    rng = np.random.default_rng(zlib.crc32(repr((name, case)).encode()))
    for _ in range(3):
        x = [None if k in ints else rng.uniform(0.4, 1.6, size(t)) for k, t in enumerate(types)]
        if "cholesky" in name or "solve" in name:  # a well-conditioned SPD matrix first
            m = x[0].reshape(types[0].shape)
            x[0] = (m @ m.T + 3.0 * np.eye(len(m))).reshape(-1)
        dx = [None if k in ints else rng.standard_normal(size(t)) for k, t in enumerate(types)]

        def args(h=0.0):
            return [(np.asarray(ints[k], np.int32) if isinstance(ints[k], list) else
                     np.float64(ints[k]) if isinstance(ints[k], float) else
                     np.int32(ints[k])) if k in ints else shaped(x[k] + h * dx[k], t)
                    for k, t in enumerate(types)]
        ret = primal(*args())
        tans = [None if k in ints else shaped(dx[k], t) for k, t in enumerate(types)]
        tan = flat(tangent(*args(), *tans, ret))
        h = 1e-6
        fd = (flat(primal(*args(h))) - flat(primal(*args(-h)))) / (2 * h)
        np.testing.assert_allclose(tan, fd, rtol=1e-5, atol=1e-6, err_msg=f"tangent of {name}")
        gy = rng.standard_normal(len(flat(ret)))
        contribs = adjoint(*args(), ret, shaped(gy, ret_t))
        lhs = float(gy @ tan)
        rhs = sum(float(flat(c) @ dx[k]) for k, c in enumerate(contribs)
                  if c is not None and dx[k] is not None)
        assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-9), \
            f"adjoint of {name} disagrees with its tangent"


def test_every_differentiable_tile_builtin_is_walked():
    tiles = {n for n, b in REGISTRY.items() if b.differentiable and n.startswith("tile_")}
    walked = {c[0] for c in CASES}
    assert tiles - THROUGH_KERNELS == walked, tiles - THROUGH_KERNELS ^ walked
