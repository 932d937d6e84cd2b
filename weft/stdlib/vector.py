"""Vector and matrix builtins: constructors, component access, dot, cross, length, ...

Vectors and matrices are flat tuples in generated code (matrices row-major), so component
access with a constant index is a plain tuple subscript and costs nothing.
"""
from __future__ import annotations

import ast

from ..core import types as T
from .exprs import Ex, call, const, dot, mapc, select, tup, zero
from .arith import outer as _outer, transpose as _transpose
from .registry import special_form, builtin, float_vector, numeric_vector



def safe_inv(x):
    """1/x, or 0 where x == 0 (Warp's convention for the gradient of length at the origin)."""
    x = x.atom()
    nz = Ex(ast.Compare(x.node, [ast.NotEq()], [zero(x.type).node]), T.bool)
    return select(nz, (const(1.0, x.type) / x).atom(), zero(x.type))


# ----------------------------------------------------------------------------- constructors


def _construct_resolve(types, attrs):
    t = attrs["type"]
    st = T.scalar_of(t)
    if not types:
        return t
    if all(x is st for x in types) and len(types) in (1, t._length_):
        return t
    if T.is_matrix(t) and len(types) == t._shape_[0] and all(
            T.is_vector(x) and x._length_ == t._shape_[1] and T.scalar_of(x) is st for x in types):
        return t  # rows
    if len(types) == 1 and T.is_composite(types[0]) and types[0]._shape_ == t._shape_:
        return t  # conversion between precisions
    if t._wp_kind_ == "transformation" and len(types) == 2 and types[0] == T.vector(3, st) \
            and types[1] == T.quaternion(st):
        return t  # transform(p, q)
    if t._wp_kind_ == "quaternion" and len(types) == 2 and types[0] == T.vector(3, st) \
            and types[1] is st:
        return t  # quaternion(v, w): imaginary part and real part
    if t._wp_kind_ == "vector" and t._length_ == 6 and len(types) == 2 and \
            all(x == T.vector(3, st) for x in types):
        return t  # spatial_vector(w, v): angular and linear parts
    return None


def _construct_parts(args, t):
    """Which slice of the result each argument fills: list of (arg, [component indices])."""
    n = t._length_
    if len(args) == 1 and not T.is_composite(args[0].type):
        return [(args[0], list(range(n)))]
    if len(args) == 1:
        return [(args[0], list(range(n)))]
    out, start = [], 0
    for a in args:  # rows of a matrix, (p, q) of a transform, (v, w) of a quaternion, scalars
        size = a.type._length_ if T.is_composite(a.type) else 1
        out.append((a, list(range(start, start + size))))
        start += size
    return out


@builtin("construct", ["vec3(x, y, z) / vec3(s) / vec3() / mat33(9 scalars) / mat33(row0, row1,"
                       " row2) / vec3d(v: vec3f) / transform(p, q) / quat(v: vec3, w) / "
                       "spatial_vector(w: vec3, v: vec3)"],
         _construct_resolve, public=False)
class construct:
    def primal(*args, type):
        st = T.scalar_of(type)
        if not args:
            return zero(type)
        if len(args) == 1 and T.is_composite(args[0].type):
            from .exprs import cast
            a = args[0].atom()
            return tup([cast(c, st) for c in a.items()], type)
        if len(args) == 1:
            a = args[0].atom()
            return tup([a] * type._length_, type)
        items = []
        for a in args:
            items.extend(a.atom().items() if T.is_composite(a.type) else [a])
        return tup(items, type)

    def adjoint(*args, ret, adj, type):
        if not T.is_differentiable(type):
            return [None] * len(args)
        from .exprs import cast, total
        adj = adj.atom()
        out = []
        for a, idx in _construct_parts(args, type):
            if T.is_composite(a.type):
                out.append(tup([cast(adj.comp(i), T.scalar_of(a.type)) for i in idx], a.type))
            elif len(idx) == 1:
                out.append(adj.comp(idx[0]))
            else:
                out.append(total([adj.comp(i) for i in idx]))
        return out

    def tangent(*args_and_tans, ret, type):
        n = len(args_and_tans) // 2
        args, tans = args_and_tans[:n], args_and_tans[n:]
        if not T.is_differentiable(type):
            return None
        tans = [t if t is not None else zero(a.type) for a, t in zip(args, tans)]
        return construct.primal(*tans, type=type)


# ----------------------------------------------------------------------------- components

def _index_ok(t):
    return T.is_int(t)


def _extract_resolve(types, attrs=None):
    v, *idx = types
    if not T.is_composite(v) or not all(_index_ok(i) for i in idx):
        return None
    if T.is_matrix(v):
        if len(idx) == 2:
            return T.scalar_of(v)
        if len(idx) == 1:
            return T.vector(v._shape_[1], T.scalar_of(v))
        return None
    return T.scalar_of(v) if len(idx) == 1 else None


def _flat_index(v, idx):
    """Flat component index of ``v[idx...]`` as an Ex (constant-folded when possible)."""
    if len(idx) == 2:
        c = v.type._shape_[1]
        i, j = idx
        if isinstance(i.node, ast.Constant) and isinstance(j.node, ast.Constant):
            return Ex(ast.Constant(i.node.value * c + j.node.value), i.type)
        return Ex(ast.BinOp(ast.BinOp(i.node, ast.Mult(), ast.Constant(c)), ast.Add(), j.node),
                  i.type)
    return idx[0]


def _raw_index(e):
    """Index Ex as a plain int node (constants unwrapped from their typed call)."""
    n = e.node
    if isinstance(n, ast.Call) and len(n.args) == 1 and isinstance(n.args[0], ast.Constant):
        return Ex(n.args[0], e.type)
    return e


def _onehot(v_type, k, value):
    """Tuple with ``value`` at flat index ``k`` (an Ex, maybe dynamic) and zeros elsewhere."""
    z = zero(T.scalar_of(v_type))
    return _insert_one(tup([z] * v_type._length_, v_type), k, value)


@builtin("extract", ["v[i] (vector) -> scalar", "m[i] (matrix) -> row vector",
                     "m[i, j] (matrix) -> scalar"], _extract_resolve, public=False)
class extract:
    def primal(v, *idx):
        idx = [_raw_index(i) for i in idx]
        v = v.atom()
        if T.is_matrix(v.type) and len(idx) == 1:
            c = v.type._shape_[1]
            i = idx[0].atom()
            row_t = T.vector(c, T.scalar_of(v.type))
            if isinstance(i.node, ast.Constant):
                return tup([v.comp(i.node.value * c + j) for j in range(c)], row_t)
            return tup([Ex(ast.Subscript(v.node, ast.BinOp(ast.BinOp(
                i.node, ast.Mult(), ast.Constant(c)), ast.Add(), ast.Constant(j)), ast.Load()),
                T.scalar_of(v.type)) for j in range(c)], row_t)
        k = _flat_index(v, idx)
        if isinstance(k.node, ast.Constant):
            return v.comp(k.node.value)
        return Ex(ast.Subscript(v.node, k.node, ast.Load()), T.scalar_of(v.type))

    def adjoint(v, *idx, ret, adj):
        nones = [None] * len(idx)
        if not T.is_differentiable(v.type):
            return [None] + nones
        idx = [_raw_index(i) for i in idx]
        adj = adj.atom()
        if T.is_matrix(v.type) and len(idx) == 1:
            c = v.type._shape_[1]
            i = idx[0].atom()
            parts = []
            for j in range(c):
                kj = (Ex(ast.Constant(i.node.value * c + j), i.type)
                      if isinstance(i.node, ast.Constant) else
                      Ex(ast.BinOp(ast.BinOp(i.node, ast.Mult(), ast.Constant(c)), ast.Add(),
                                   ast.Constant(j)), i.type))
                parts.append((kj, adj.comp(j)))
            if isinstance(i.node, ast.Constant):  # the row's components in place, zeros
                row = {kj.node.value: x for kj, x in parts}  # elsewhere (not a sum of tuples)
                z = zero(T.scalar_of(v.type))
                return [tup([row.get(k, z) for k in range(v.type._length_)], v.type)] + nones
            if v.type._length_ >= INSERT_CALL_FROM:
                # a row read at a run-time index: its components written into one tuple of
                # zeros (one insert call each), not a tuple of zeros per component summed
                # (for a 6x6 matrix that was 6 x 36 additions per read, and the adjoint of
                # ddot on mat66 alone took 24 s to compile)
                acc = tup([zero(T.scalar_of(v.type))] * v.type._length_, v.type)
                for kj, x in parts:
                    acc = _insert_one(acc, kj, x)
                return [acc] + nones
            parts = [_onehot(v.type, kj, x) for kj, x in parts]
            acc = parts[0]
            for p in parts[1:]:
                acc = acc + p
            return [acc] + nones
        return [_onehot(v.type, _flat_index(v, idx), adj)] + nones

    def tangent(v, *rest, ret):
        n = (len(rest) - 1) // 2 + 1  # rest = idx..., tv, tidx...
        idx = rest[:n - 1]
        tv = rest[n - 1]
        if tv is None:
            return None
        return extract.primal(tv, *idx)


def _insert_resolve(types, attrs=None):
    v, *idx, x = types
    if _extract_resolve([v] + idx) == x:
        return v
    return None


@builtin("insert", ["v[i] = x (component assignment)"], _insert_resolve, public=False)
class insert:
    def primal(v, *idx_x):
        *idx, x = idx_x
        idx = [_raw_index(i) for i in idx]
        v, x = v.atom(), x.atom()
        if T.is_matrix(v.type) and len(idx) == 1:  # row assignment
            c = v.type._shape_[1]
            out = v
            for j in range(c):
                kj = _flat_index(v, [idx[0], Ex(ast.Constant(j), idx[0].type)])
                out = _insert_one(out.atom(), kj, x.comp(j))
            return out
        return _insert_one(v, _flat_index(v, idx), x)

    def adjoint(v, *idx_x, ret, adj):
        *idx, x = idx_x
        nones = [None] * len(idx)
        if not T.is_differentiable(v.type):
            return [None] + nones + [None]
        adj_x = extract.primal(adj, *idx)
        z = zero(T.scalar_of(v.type)) if not T.is_vector(x.type) else zero(x.type)
        adj_v = insert.primal(adj, *idx, z)
        return [adj_v] + nones + [adj_x]

    def tangent(v, *rest, ret):
        k = len(rest) // 2
        args, tans = rest[:k], rest[k:]
        tv, tx = tans[0], tans[-1]
        if tv is None:
            return None
        *idx, x = args
        return insert.primal(tv, *idx, tx if tx is not None else zero(x.type))


#: from this many components, a write at a run-time index is one ``_wk.tuple_insert`` call
#: rather than a conditional expression per component. Each of those is a pair of blocks to
#: Numba's SSA and typing passes (a 6x6 matrix read in a loop: two minutes to compile), but up
#: to four (vectors, quaternions) they compile quickly and run faster than the call (LLVM
#: selects against a stack slot: a vec3 written at a run-time index in a loop, 1M threads,
#: forward 23 ms against 26.5, adjoint 79-90 against 89-91).
INSERT_CALL_FROM = 5


def _insert_one(v, k, x):
    """``v`` with flat component ``k`` (an Ex, maybe dynamic) replaced by ``x``."""
    n = v.type._length_
    if isinstance(k.node, ast.Constant):
        return tup([x if i == k.node.value else v.comp(i) for i in range(n)], v.type)
    if n >= INSERT_CALL_FROM:
        return call("_wk.tuple_insert", v, k, x, type_=v.type)
    k = k.atom()
    return tup([select(Ex(ast.Compare(k.node, [ast.Eq()], [ast.Constant(i)]), T.bool), x,
                       v.comp(i)) for i in range(n)], v.type)


# ----------------------------------------------------------------------------- vector algebra

def _two_same_vectors(types, attrs=None):
    if len(types) == 2 and types[0] == types[1] and numeric_vector(types[0]):
        return T.scalar_of(types[0])
    return None


@builtin("dot", ["dot(a: Vector, b: Vector) -> Scalar"], _two_same_vectors)
class dot_:
    def primal(a, b):
        return dot(a, b)

    def adjoint(a, b, ret, adj):
        adj = adj.atom()
        return [b * adj, a * adj]

    def tangent(a, b, ta, tb, ret):
        return dot(ta, b) + dot(a, tb)


def _cross(a, b):
    a, b = a.atom(), b.atom()
    x = [a.comp(i) for i in range(3)]
    y = [b.comp(i) for i in range(3)]
    return tup([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]],
               a.type)


@builtin("cross", ["cross(a: vec3, b: vec3) -> vec3"],
         lambda ts, a=None: ts[0] if len(ts) == 2 and ts[0] == ts[1] and float_vector(ts[0])
         and ts[0]._length_ == 3 else None)
class cross:
    def primal(a, b):
        return _cross(a, b)

    def adjoint(a, b, ret, adj):
        return [_cross(b, adj), _cross(adj, a)]

    def tangent(a, b, ta, tb, ret):
        return _cross(ta, b) + _cross(a, tb)


def _vec_to_scalar(types, attrs=None):
    if len(types) == 1 and float_vector(types[0]):
        return T.scalar_of(types[0])
    return None


@builtin("length_sq", ["length_sq(a: Vector) -> Scalar"], _vec_to_scalar)
class length_sq:
    def primal(v):
        v = v.atom()
        return dot(v, v)

    def adjoint(v, ret, adj):
        return [v * (adj * 2.0)]

    def tangent(v, tv, ret):
        return dot(v, tv) * 2.0


@builtin("length", ["length(a: Vector) -> Scalar"], _vec_to_scalar)
class length:
    def primal(v):
        v = v.atom()
        return call("np.sqrt", dot(v, v))

    def adjoint(v, ret, adj):
        # zero gradient at the origin, as Warp
        ret = ret.atom()
        s = safe_inv(ret).atom()
        return [v * (adj * s)]

    def tangent(v, tv, ret):
        return dot(v, tv) * safe_inv(ret)


@builtin("normalize", ["normalize(a: Vector) -> Vector"],
         lambda ts, a=None: ts[0] if len(ts) == 1 and float_vector(ts[0]) else None)
class normalize:
    def primal(v):
        # each component divided by the length, the zero vector unless the length is > 0, as
        # Warp (v * (1 / |v|) rounds differently: Warp's raymarch example showed it)
        v = v.atom()
        n = call("np.sqrt", dot(v, v)).atom()
        pos = Ex(ast.Compare(n.node, [ast.Gt()], [zero(n.type).node]), T.bool)
        return tup([select(pos, c / n, zero(n.type)) for c in v.items()], v.type)

    def adjoint(v, ret, adj):
        # d(v/|v|) = (adj - ret * dot(ret, adj)) / |v|
        v, ret, adj = v.atom(), ret.atom(), adj.atom()
        inv = safe_inv(call("np.sqrt", dot(v, v)).atom()).atom()
        return [(adj - ret * dot(ret, adj)) * inv]

    def tangent(v, tv, ret):
        v, ret, tv = v.atom(), ret.atom(), tv.atom()
        inv = safe_inv(call("np.sqrt", dot(v, v)).atom()).atom()
        return (tv - ret * dot(ret, tv)) * inv


@builtin("outer", ["outer(a: Vector, b: Vector) -> Matrix"],
         lambda ts, a=None: T.matrix((ts[0]._length_, ts[1]._length_), T.scalar_of(ts[0]))
         if len(ts) == 2 and numeric_vector(ts[0]) and numeric_vector(ts[1]) and T.is_vector(ts[0])
         and T.is_vector(ts[1]) and T.scalar_of(ts[0]) is T.scalar_of(ts[1]) else None)
class outer:
    def primal(a, b):
        return _outer(a, b)

    def adjoint(a, b, ret, adj):
        from .arith import matmul
        adj = adj.atom()
        return [matmul(adj, b), matmul(a, adj)]

    def tangent(a, b, ta, tb, ret):
        return _outer(ta, b) + _outer(a, tb)


@builtin("transpose", ["transpose(a: Matrix) -> Matrix"],
         lambda ts, a=None: T.matrix(ts[0]._shape_[::-1], T.scalar_of(ts[0]))
         if len(ts) == 1 and T.is_matrix(ts[0]) else None)
class transpose:
    def primal(m):
        return _transpose(m)

    def adjoint(m, ret, adj):
        return [_transpose(adj)]

    def tangent(m, tm, ret):
        return _transpose(tm)


@builtin("cw_mul", ["cw_mul(a: Vector, b: Vector) -> Vector"],
         lambda ts, a=None: ts[0] if len(ts) == 2 and ts[0] == ts[1] and T.is_composite(ts[0])
         else None)
class cw_mul:
    def primal(a, b):
        return mapc(lambda x, y: x * y, a, b)

    def adjoint(a, b, ret, adj):
        return [mapc(lambda g, y: g * y, adj, b), mapc(lambda g, x: g * x, adj, a)]

    def tangent(a, b, ta, tb, ret):
        return mapc(lambda x, y, s, t: s * y + x * t, a, b, ta, tb)


@builtin("identity", ["identity(n: int, dtype) -> Matrix"], lambda ts, a: a["type"], public=False,
         differentiable=False)
class _identity:
    def primal(type):
        n = type._shape_[0]
        return tup([const(1.0 if i == j else 0.0, T.scalar_of(type)) for i in range(n)
                    for j in range(n)], type)


@special_form("identity", "identity(n: int, dtype=float32) -> the n x n identity matrix",
              host=True)
def identity(ctx, node):
    given = dict(zip(("n", "dtype"), node.args))
    for k in node.keywords:
        if k.arg not in ("n", "dtype") or k.arg in given:
            raise ctx.fail(k, f"wp.identity() takes n and dtype, got '{k.arg}'")
        given[k.arg] = k.value
    if "n" not in given or len(node.args) > 2:
        raise ctx.fail(node, "wp.identity(n, dtype=float32) needs n")
    n = ctx.static_value(given["n"], "wp.identity(n=...)")
    try:
        dtype = T.as_scalar_type(ctx.static_value(given["dtype"], "wp.identity(dtype=...)")
                                 if "dtype" in given else T.float32)
    except TypeError:
        dtype = None
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or dtype is None:
        raise ctx.fail(node, "wp.identity(n, dtype) needs a positive integer constant n and a "
                       "scalar type")
    return ctx.apply(_identity, [], node, {"type": T.matrix((n, n), dtype)})


def _arg_extreme(name, op):
    class rules:
        def primal(v):
            v = v.atom()
            best, idx = v.comp(0), Ex(ast.Constant(0), T.uint32)
            for i in range(1, v.type._length_):
                c = v.comp(i)
                better = Ex(ast.Compare(c.node, [op()], [best.node]), T.bool)
                best = select(better, c, best).atom()
                idx = select(better, Ex(ast.Constant(i), T.uint32), idx).atom()
            return call("uint32", idx, type_=T.uint32)

    builtin(name, [f"{name}(a: Vector) -> uint32  (index of the first {name[3:]}imum)"],
            lambda ts, a=None: T.uint32 if len(ts) == 1 and T.is_vector(ts[0]) else None,
            differentiable=False)(rules)


_arg_extreme("argmin", ast.Lt)
_arg_extreme("argmax", ast.Gt)
