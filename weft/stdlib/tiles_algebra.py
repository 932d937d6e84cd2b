"""Tiles: the dense linear algebra and the transforms (``tile_matmul``, Cholesky and the
triangular solves, ``tile_diag_add``, ``tile_axpy``, ``tile_dot``, FFT, scans, sort) on the numeric
cores of :mod:`weft.native.tile_kernels`; see :mod:`weft.stdlib.tiles` for the tile model."""
from __future__ import annotations

import ast

from ..core import types as T
from ..core.errors import KernelTypeError, KernelValueError
from . import ir
from .exprs import Ex, attr_path, const, tile_const
from .registry import builtin, lookup, special_form
from .tiles.common import _int, _kw, _let, _rebind, _tile_arg, _wk, block_once, store_back
from .tiles.elements import _shown, _tsum
from .tiles.shape import _tile_astype, broadcast_view


# ----------------------------------------------------------------------------- linear algebra
def _matmul_resolve(ts, attrs=None):
    if len(ts) == 2 and all(T.is_tile_type(t) and len(t.shape) == 2 for t in ts) and \
            ts[0].shape[1] == ts[1].shape[0]:
        return T.TileType(ts[0].dtype, (ts[0].shape[0], ts[1].shape[1]))
    return None


@builtin("tile_matmul_b", ["tile_matmul(a, b) -> a @ b"], _matmul_resolve, public=False)
class _tile_matmul:
    def primal(a, b):
        return Ex(_wk("tile_matmul", a.node, b.node), _matmul_resolve([a.type, b.type]))

    def adjoint(a, b, ret, adj):
        return [Ex(_wk("tile_matmul_adj_a", adj.node, b.node), a.type),
                Ex(_wk("tile_matmul_adj_b", a.node, adj.node), b.type)]

    def tangent(a, b, ta, tb, ret):
        parts = [Ex(_wk("tile_matmul", ta.node, b.node), ret.type) if ta is not None else None,
                 Ex(_wk("tile_matmul", a.node, tb.node), ret.type) if tb is not None else None]
        return _tsum(*parts, t=ret.type)


def _matmul_acc_resolve(ts, attrs=None):
    if len(ts) == 3 and _matmul_resolve(ts[:2]) is not None and T.is_tile_type(ts[2]) and \
            ts[2].shape == _matmul_resolve(ts[:2]).shape:
        return ts[2]
    return None


def _as_dtype(x, dtype):
    """Tile ``x`` in ``dtype`` (``x`` itself when it has it): Warp's GEMM converts each operand
    element to the accumulator's type before its multiply-add (a float32 times a float16 tile
    into float64), and each operand's gradient back to its own."""
    if x.type.dtype == dtype:
        return x
    return _tile_astype.primal(x, dtype)


@builtin("tile_matmul_acc_b", ["tile_matmul(a, b, out, alpha=1.0, beta=1.0)"],
         lambda ts, a=None: _matmul_acc_resolve(ts[:3]) if len(ts) == 5 else None,
         public=False)
class _tile_matmul_acc:
    """``alpha * a @ b + beta * out`` (``out`` not read where ``beta`` is 0); as in Warp,
    ``alpha`` and ``beta`` carry no gradient."""

    def primal(a, b, c, alpha, beta):
        a, b = _as_dtype(a, c.type.dtype), _as_dtype(b, c.type.dtype)
        return Ex(_wk("tile_matmul_acc", a.node, b.node, c.node, alpha.node, beta.node), c.type)

    def adjoint(a, b, c, alpha, beta, ret, adj):
        g = adj * alpha
        dt = c.type.dtype   # the products in the accumulator's dtype, as the forward's
        a_, b_ = _as_dtype(a, dt), _as_dtype(b, dt)
        ga = Ex(_wk("tile_matmul_adj_a", g.node, b_.node), T.TileType(dt, a.type.shape))
        gb = Ex(_wk("tile_matmul_adj_b", a_.node, g.node), T.TileType(dt, b.type.shape))
        ga, gb = _as_dtype(ga, a.type.dtype), _as_dtype(gb, b.type.dtype)
        return [ga if T.is_differentiable(a.type) else None,
                gb if T.is_differentiable(b.type) else None, adj * beta, None, None]

    def tangent(a, b, c, alpha, beta, ta, tb, tc, talpha, tbeta, ret):
        zero = const(0.0, T.scalar_of(ret.type.dtype)).node

        def product(x, y):  # alpha * x @ y
            x, y = _as_dtype(x, ret.type.dtype), _as_dtype(y, ret.type.dtype)
            return Ex(_wk("tile_matmul_acc", x.node, y.node, tile_const(0, ret.type).node,
                          alpha.node, zero), ret.type)
        return _tsum(product(ta, b) if ta is not None else None,
                     product(a, tb) if tb is not None else None,
                     tc * beta if tc is not None else None, t=ret.type)


def _matmul_assigned(node):
    return [node.args[2]] if len(node.args) >= 3 else []


@special_form("tile_matmul", "tile_matmul(a, b) -> a @ b; tile_matmul(a, b, out, alpha=1.0, "
              "beta=1.0): out = alpha * a @ b + beta * out", assigned=_matmul_assigned)
def tile_matmul(ctx, node):
    a = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], "tile_matmul's a")
    b = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], "tile_matmul's b")
    for x in (a, b):
        if not T.is_scalar(x.type.dtype):
            what = "complex tiles (vec2)" if T.is_vector(x.type.dtype) and \
                x.type.dtype._length_ == 2 else f"tiles of {T.type_name(x.type.dtype)}"
            raise ctx.fail(node, f"tile_matmul does not support {what}: its operands are "
                           "tiles of float scalars", KernelTypeError)
    if _matmul_resolve([a.type, b.type]) is None:
        raise ctx.fail(node, f"tile_matmul of shapes {a.type.shape} and {b.type.shape}")
    _matmul_precision(ctx, node, a, b)
    if len(node.args) < 3:
        if a.type.dtype != b.type.dtype:
            raise ctx.fail(node, "tile_matmul's tiles must have one dtype")
        return ctx.apply("tile_matmul_b", [a, b], node)
    out_node = node.args[2]
    c = _tile_arg(ctx, ctx.expr(out_node), out_node, "tile_matmul's out")
    kw = _kw(node)
    st = T.scalar_of(c.type.dtype)

    def scale(key, pos):
        n = kw.get(key) if key in kw else (node.args[pos] if len(node.args) > pos else None)
        if n is None:
            return ir.Const(1.0, st)
        v = ctx.expr(n)
        if isinstance(v, ir.Const):
            return ir.Const(float(v.value), st)
        if v.type != st:
            v = ctx.apply("cast", [v], node, attrs={"type": st})
        return v
    alpha, beta = scale("alpha", 3), scale("beta", 4)
    if c.type.shape != (a.type.shape[0], b.type.shape[1]):
        raise ctx.fail(out_node, f"tile_matmul's out has shape {c.type.shape}, the product "
                       f"{(a.type.shape[0], b.type.shape[1])}")
    new = ctx.emit(ir.Prim(lookup("tile_matmul_acc_b"), [a, b, c, alpha, beta]), c.type, node)
    if not isinstance(out_node, ast.Name):
        raise ctx.fail(out_node, "tile_matmul's out must be a local name")
    store_back(ctx, out_node, new)
    return None


def _matmul_precision(ctx, node, a, b):
    """Warp's ``precision=`` of ``tile_matmul``: the string literal ``"default"`` or ``"tf32"``
    (float32 tiles only). On the CPU, as Warp's scalar GEMM, the product is computed in float32
    either way."""
    pnode = _kw(node).get("precision")
    if pnode is None:
        return
    if not (isinstance(pnode, ast.Constant) and isinstance(pnode.value, str)):
        raise ctx.fail(pnode, "tile_matmul: precision must be the string literal 'default' or "
                       "'tf32', got a non-literal argument", KernelValueError)
    if pnode.value not in ("default", "tf32"):
        raise ctx.fail(pnode, f"tile_matmul: precision must be the string literal 'default' or "
                       f"'tf32', got {pnode.value!r}", KernelValueError)
    if pnode.value == "tf32" and not (a.type.dtype is T.float32 and b.type.dtype is T.float32):
        raise ctx.fail(pnode, "tile_matmul: precision='tf32' requires float32 tiles, got "
                       f"{T.type_name(a.type.dtype)} and {T.type_name(b.type.dtype)}",
                       KernelTypeError)


# ----------------------------------------------------------------------------- dense algebra
def _square(ts, attrs=None):
    if len(ts) == 1 and T.is_tile_type(ts[0]) and len(ts[0].shape) == 2 and \
            ts[0].shape[0] == ts[0].shape[1] and T.is_float(ts[0].dtype):
        return ts[0]
    return None


def _upper(ex):
    """A square tile transposed (``fill_mode="upper"``: U = L^T)."""
    return Ex(_wk("tile_transpose", ex.node), ex.type)


@builtin("tile_cholesky_b", ["tile_cholesky(A, fill_mode='lower') -> L (or U = L^T)"], _square,
         public=False)
class _tile_cholesky:
    """The Cholesky factor of the lower triangle of ``A``; with ``upper``, its transpose
    (Warp's ``fill_mode="upper"``: the upper triangle of ``A`` is read)."""

    def primal(A, upper=False):
        if upper:
            return _upper(Ex(_wk("tile_cholesky", _upper(A).node), A.type))
        return Ex(_wk("tile_cholesky", A.node), A.type)

    def adjoint(A, ret, adj, upper=False):
        if upper:
            g = Ex(_wk("tile_cholesky_adj", _upper(A).node, _upper(ret).node, _upper(adj).node),
                   A.type)
            return [_upper(g)]
        return [Ex(_wk("tile_cholesky_adj", A.node, ret.node, adj.node), A.type)]

    def tangent(A, tA, ret, upper=False):
        if tA is None:
            return tile_const(0, ret.type)
        if upper:
            return _upper(Ex(_wk("tile_cholesky_jvp", _upper(A).node, _upper(ret).node,
                                 _upper(tA).node), A.type))
        return Ex(_wk("tile_cholesky_jvp", A.node, ret.node, tA.node), A.type)


def _solve_resolve(ts, attrs=None):
    if len(ts) == 2 and _square([ts[0]]) is not None and T.is_tile_type(ts[1]) and \
            len(ts[1].shape) in (1, 2) and ts[1].shape[0] == ts[0].shape[0] and \
            ts[1].dtype == ts[0].dtype:
        return ts[1]
    return None


def _solver(kernel, doc):
    """A solve ``x = solve(L, y)`` of the tile kernel ``kernel`` (``_adj`` and ``_jvp``
    beside it); ``upper`` flips the factor (``fill_mode="upper"``, or an upper solve given
    as ``lower_solve`` of the transpose)."""

    class rule:
        def primal(L, y, upper=False):
            Lx = _upper(L) if upper else L
            return Ex(_wk(f"tile_{kernel}", Lx.node, y.node), y.type)

        def adjoint(L, y, ret, adj, upper=False):
            Lx = _upper(L) if upper else L
            c = _let(_wk(f"tile_{kernel}_adj", Lx.node, y.node, ret.node, adj.node), "sv")
            gL = Ex(ast.Subscript(c, _int(0), ast.Load()), L.type)
            return [_upper(gL) if upper else gL, Ex(ast.Subscript(c, _int(1), ast.Load()), y.type)]

        def tangent(L, y, tL, ty, ret, upper=False):
            if tL is None and ty is None:
                return tile_const(0, ret.type)
            Lx = _upper(L) if upper else L
            tLx = tL if tL is not None else tile_const(0, L.type)
            tLx = _upper(tLx) if upper else tLx
            ty = ty if ty is not None else tile_const(0, y.type)
            return Ex(_wk(f"tile_{kernel}_jvp", Lx.node, y.node, ret.node, tLx.node, ty.node),
                      ret.type)
    rule.__doc__ = doc
    return rule


_chol_solve = builtin("tile_cholesky_solve_b", ["tile_cholesky_solve(L, y)"], _solve_resolve,
                      public=False)(_solver("cholesky_solve", "A y = x with A = L L^T"))
_lower_solve = builtin("tile_lower_solve_b", ["tile_lower_solve(L, y)"], _solve_resolve,
                       public=False)(_solver("lower_solve", "L z = y, L lower-triangular"))
_upper_solve = builtin("tile_upper_solve_b", ["tile_upper_solve(U, z)"], _solve_resolve,
                       public=False)(_solver("upper_solve", "U x = z, U upper-triangular"))


def _fill_upper(ctx, node):
    kw = _kw(node)
    if "fill_mode" not in kw:
        return False
    mode = ctx.static_value(kw["fill_mode"], "fill_mode")
    if mode not in ("lower", "upper"):
        raise ctx.fail(kw["fill_mode"], f"fill_mode must be 'lower' or 'upper', got {mode!r}",
                       KernelValueError)
    return mode == "upper"






def _first_assigned(node):
    return [node.args[0]] if node.args else []


def _second_assigned(node):
    return [node.args[1]] if len(node.args) > 1 else []


def _cholesky_form(inplace):
    def lower(ctx, node):
        A = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], "tile_cholesky's matrix")
        if _square([A.type]) is None:
            raise ctx.fail(node.args[0], f"tile_cholesky needs a square float tile, got "
                           f"{_shown(A.type)}", KernelTypeError)
        L = ctx.apply("tile_cholesky_b", [A], node, attrs={"upper": _fill_upper(ctx, node)})
        if inplace:
            _rebind(ctx, node.args[0], L, "tile_cholesky_inplace")
            return None
        return L
    return lower


special_form("tile_cholesky", "tile_cholesky(A, fill_mode='lower'): the Cholesky factor")(
    _cholesky_form(False))
special_form("tile_cholesky_inplace", "tile_cholesky_inplace(A, fill_mode='lower'): A becomes "
             "its Cholesky factor", assigned=_first_assigned)(_cholesky_form(True))


def _solve_form(name_, builtin_name, inplace, flips):
    def lower(ctx, node):
        L = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], f"{name_}'s factor")
        y = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], f"{name_}'s right-hand side")
        if _solve_resolve([L.type, y.type]) is None:
            raise ctx.fail(node, f"{name_} of {_shown(L.type)} and {_shown(y.type)}",
                           KernelTypeError)
        upper = _fill_upper(ctx, node) if flips else False
        x = ctx.apply(builtin_name, [L, y], node, attrs={"upper": upper})
        if inplace:
            _rebind(ctx, node.args[1], x, name_)
            return None
        return x
    return lower


for _name, _b, _flips in (("tile_cholesky_solve", "tile_cholesky_solve_b", True),
                          ("tile_lower_solve", "tile_lower_solve_b", False),
                          ("tile_upper_solve", "tile_upper_solve_b", False)):
    special_form(_name, f"{_name}(L, y): the solution of the triangular system(s)")(
        _solve_form(_name, _b, False, _flips))
    special_form(f"{_name}_inplace", f"{_name}_inplace(L, y): y becomes the solution",
                 assigned=_second_assigned)(_solve_form(f"{_name}_inplace", _b, True, _flips))


def _diag_resolve(ts, attrs=None):
    if len(ts) == 2 and all(T.is_tile_type(t) for t in ts) and len(ts[0].shape) == 2 and \
            ts[1].shape == (ts[0].shape[0],) and ts[0].dtype == ts[1].dtype:
        return ts[0]
    return None


@builtin("tile_diag_add", ["tile_diag_add(a, d) -> a + diag(d)"], _diag_resolve)
class tile_diag_add:
    def primal(a, d):
        return Ex(_wk("tile_diag_add", a.node, d.node), a.type)

    def adjoint(a, d, ret, adj):
        c = _let(_wk("tile_diag_add_adj", a.node, d.node, adj.node), "dg")
        return [Ex(ast.Subscript(c, _int(0), ast.Load()), a.type),
                Ex(ast.Subscript(c, _int(1), ast.Load()), d.type)]

    def tangent(a, d, ta, td, ret):
        ta = ta if ta is not None else tile_const(0, a.type)
        td = td if td is not None else tile_const(0, d.type)
        return Ex(_wk("tile_diag_add", ta.node, td.node), a.type)


@builtin("tile_axpy_b", ["tile_axpy(alpha, x, y): y + alpha * x"],
         lambda ts, a=None: ts[2] if len(ts) == 3 and T.is_tile_type(ts[1]) and
         T.is_tile_type(ts[2]) and ts[1] == ts[2] and ts[0] == T.scalar_of(ts[1].dtype) else None,
         public=False)
class _tile_axpy:
    def primal(alpha, x, y):
        return y + x * alpha

    def adjoint(alpha, x, y, ret, adj):
        return [Ex(block_once(ast.Call(attr_path("np.sum"), [(adj * x).node], [])),
                   alpha.type), adj * alpha, adj]

    def tangent(alpha, x, y, ta, tx, ty, ret):
        return _tsum(tx * alpha if tx is not None else None, x * ta if ta is not None else None,
                     ty, t=ret.type)


@special_form("tile_axpy", "tile_axpy(alpha, x, y): y += alpha * x", assigned=lambda n: (
    [n.args[2]] if len(n.args) > 2 else []))
def tile_axpy(ctx, node):
    alpha = ctx.expr(node.args[0])
    x = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], "tile_axpy's x")
    y = _tile_arg(ctx, ctx.expr(node.args[2]), node.args[2], "tile_axpy's y")
    st = T.scalar_of(y.type.dtype)
    if isinstance(alpha, ir.Const):
        alpha = ir.Const(float(alpha.value) if T.is_float(st) else int(alpha.value), st)
    elif alpha.type != st:
        alpha = ctx.apply("cast", [alpha], node, attrs={"type": st})
    view = broadcast_view(ctx, y)
    if view is not None and isinstance(node.args[2], ast.Name):
        # y broadcasts base: each of base's elements takes the adds of all its aliases
        base, shape = view
        zeros = ctx.emit(ir.Prim(lookup("tile_const"), [], {"type": y.type, "value": 0}),
                         y.type, node)
        added = ctx.apply("tile_axpy_b", [alpha, x, zeros], node)
        summed = ctx.apply("tile_unbroadcast_b", [added], node, attrs={"type": base.type})
        new_base = ctx.apply("tile_axpy_b", [ir.Const(1.0 if T.is_float(st) else 1, st), summed,
                                             base], node)
        owner = next((n for n, v in ctx.env.items() if v is base), None)
        if owner is not None:
            store_back(ctx, ast.copy_location(ast.Name(owner, ast.Load()), node), new_base)
        new_y = ctx.apply("tile_broadcast_b", [new_base], node, attrs={"shape": shape})
        ctx.tile_broadcasts[id(new_y)] = (new_y, new_base, shape)
        store_back(ctx, node.args[2], new_y)
        return
    _rebind(ctx, node.args[2], ctx.apply("tile_axpy_b", [alpha, x, y], node), "tile_axpy")


def _dot_resolve(ts, attrs=None):
    if len(ts) == 2 and all(T.is_tile_type(t) for t in ts) and ts[0] == ts[1]:
        return T.TileType(T.scalar_of(ts[0].dtype), (1,))
    return None


@builtin("tile_dot", ["tile_dot(a, b) -> the sum of a * b, as a tile of one element"],
         _dot_resolve)
class tile_dot:
    def primal(a, b):
        return Ex(_wk("tile_sum", (a * b).node), _dot_resolve([a.type, b.type]))

    def adjoint(a, b, ret, adj):
        g = Ex(ast.Subscript(adj.node, _int(0), ast.Load()), T.scalar_of(a.type.dtype))
        return [b * g, a * g]

    def tangent(a, b, ta, tb, ret):
        parts = [ta * b if ta is not None else None, a * tb if tb is not None else None]
        s = _tsum(*parts, t=a.type)
        return Ex(_wk("tile_sum", s.node), ret.type)


# ----------------------------------------------------------------------------- FFT, scans, sort
def _fft_resolve(ts, attrs=None):
    if len(ts) == 1 and T.is_tile_type(ts[0]) and T.is_vector(ts[0].dtype) and \
            ts[0].dtype._length_ == 2 and T.is_float(T.scalar_of(ts[0].dtype)):
        return ts[0]
    return None


def _transform(kernel, inverse_kernel):
    class rule:
        def primal(a):
            return Ex(_wk(f"tile_{kernel}", a.node), a.type)

        def adjoint(a, ret, adj):
            return [Ex(_wk(f"tile_{kernel}_adj", adj.node), a.type)]

        def tangent(a, ta, ret):
            return Ex(_wk(f"tile_{kernel}", ta.node), a.type) if ta is not None else \
                tile_const(0, ret.type)
    return rule


builtin("tile_fft_b", ["tile_fft(a)"], _fft_resolve, public=False)(_transform("fft", "ifft"))
builtin("tile_ifft_b", ["tile_ifft(a)"], _fft_resolve, public=False)(_transform("ifft", "fft"))


def _fft_form(which):
    def lower(ctx, node):
        a = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], f"tile_{which}'s tile")
        if _fft_resolve([a.type]) is None:
            raise ctx.fail(node.args[0], f"tile_{which} transforms a tile of vec2 (complex "
                           f"numbers), got {_shown(a.type)}", KernelTypeError)
        _rebind(ctx, node.args[0], ctx.apply(f"tile_{which}_b", [a], node), f"tile_{which}")
    return lower


special_form("tile_fft", "tile_fft(a): a becomes its discrete Fourier transform along its "
             "last dimension (unnormalized)", assigned=_first_assigned)(_fft_form("fft"))
special_form("tile_ifft", "tile_ifft(a): a becomes its inverse transform (unnormalized)",
             assigned=_first_assigned)(_fft_form("ifft"))


def _scan_resolve(ts, attrs=None):
    if len(ts) == 1 and T.is_tile_type(ts[0]) and T.is_scalar(ts[0].dtype):
        return ts[0]
    return None


def _scan(kernel, jvp=True):
    class rule:
        def primal(a):
            return Ex(_wk(f"tile_{kernel}", a.node), a.type)

        def adjoint(a, ret, adj):
            return [Ex(_wk(f"tile_{kernel}_adj", a.node, adj.node), a.type)]

        def tangent(a, ta, ret):
            if ta is None:
                return tile_const(0, ret.type)
            if kernel in ("scan_inclusive", "scan_exclusive"):
                return Ex(_wk(f"tile_{kernel}", ta.node), a.type)
            return Ex(_wk(f"tile_{kernel}_jvp", a.node, ta.node), a.type)
    return rule


for _k in ("scan_inclusive", "scan_exclusive", "scan_max_inclusive", "scan_min_inclusive"):
    builtin(f"tile_{_k}", [f"tile_{_k}(a) -> a tile"], _scan_resolve)(_scan(_k))


@builtin("tile_sort_b", ["tile_sort(keys, values)"], lambda ts, a=None: None, public=False,
         differentiable=False)
class _tile_sort:
    def primal(keys, values):
        return Ex(_wk("tile_sort", keys.node, values.node), T.TupleType((keys.type, values.type)))


@special_form("tile_sort", "tile_sort(keys, values): sorts keys ascending, values with them",
              assigned=lambda n: list(n.args[:2]))
def tile_sort(ctx, node):
    keys = _tile_arg(ctx, ctx.expr(node.args[0]), node.args[0], "tile_sort's keys")
    values = _tile_arg(ctx, ctx.expr(node.args[1]), node.args[1], "tile_sort's values")
    if keys.type.shape[0] != values.type.shape[0] or len(keys.type.shape) != 1:
        raise ctx.fail(node, "tile_sort sorts a 1-D tile of keys and a tile of values of its "
                       "length", KernelTypeError)
    both = ctx.emit(ir.Prim(lookup("tile_sort_b"), [keys, values]),
                    T.TupleType((keys.type, values.type)), node)
    _rebind(ctx, node.args[0], ctx.apply("tuple_get", [both], node, attrs={"index": 0}),
            "tile_sort")
    _rebind(ctx, node.args[1], ctx.apply("tuple_get", [both], node, attrs={"index": 1}),
            "tile_sort")
