"""Volume builtins of every value type weft's volumes hold (float32, float64, int32, int64,
uint32, vec3f, vec3d, vec4f, vec4d) and of index grids' voxel data (Warp 1.19):

- ``volume_lookup`` / ``volume_store`` / ``volume_sample`` with ``dtype=`` for the types the
  typed builtins of :mod:`.geometry` do not cover (``_volume_lookup_<type>``, ...);
- LINEAR sampling of vector grids and ``volume_sample_grad`` of vector grids (``grad`` an
  N x 3 matrix, a row per value component);
- ``volume_sample_index`` and ``volume_sample_grad_index`` (scalar or vector voxel data).

A sample is split in two: a non-differentiable call returns the 8 corner values of the cell
(or, for index grids, the corners' voxel-data indices, which the kernel reads from
``voxel_data`` as ordinary array reads), and the interpolation is lowered to kernel arithmetic
on them and on the fractions ``uvw - floor(uvw)``, in Warp's order and precision (weights
``wx*wy*wz`` formed in float32, widened for double data, summed in corner order), so that the
transpiler differentiates it: with respect to ``uvw``, to ``voxel_data`` (scattered into its
gradient, atomically where needed) and to ``background``, in reverse and forward mode, and
again through ``grad`` (second derivatives). CLOSEST reads the nearest voxel (derivatives zero
with respect to ``uvw``); an unknown mode reads zero.
"""
from __future__ import annotations

from ..core import types as T
from ..native.geometry.kernel_api_volume import VALUE_TYPES
from . import ir
from .exprs import call
from .geometry_common import _is_id, _kinds, _sig, _xyz, mark_kinds
from .registry import builtin, special_form

#: value type -> its name in ``VALUE_TYPES`` (the helpers' suffix)
TYPES = {getattr(T, n): n for n in VALUE_TYPES}
FLOAT_TYPES = [t for t in TYPES if T.is_float(T.scalar_of(t))]


def _channels(t):
    return t._length_ if T.is_vector(t) else 1


def _is_vec3f(t):
    return T.is_vector(t) and t._length_ == 3 and T.scalar_of(t) is T.float32


def _declare(vt):
    """The non-differentiable primitives of value type ``vt``."""
    sfx = TYPES[vt]
    tn = T.type_name(vt)
    ijk = ("id", "int", "int", "int")

    @builtin(f"_volume_lookup_{sfx}", [f"_volume_lookup_{sfx}(id, i, j, k) -> {tn}"],
             _sig(*ijk)(vt), differentiable=False, public=False)
    class lookup:
        def primal(vid, i, j, k):
            return call(f"_wk.geo_vol_lookup_{sfx}", vid, i, j, k, type_=vt)

    @builtin(f"_volume_store_{sfx}", [f"_volume_store_{sfx}(id, i, j, k, value: {tn})"],
             _sig(*ijk, vt)(T.TupleType(())), differentiable=False, public=False)
    class store:
        def primal(vid, i, j, k, value):
            return call(f"_wk.geo_vol_store_{sfx}", vid, i, j, k, value, type_=T.TupleType(()))

    st = T.scalar_of(vt)
    if T.is_float(st):
        ct = T.vector(8 * _channels(vt), st)

        @builtin(f"_volume_corners_{sfx}", [f"_volume_corners_{sfx}(id, uvw, mode)"],
                 _sig("id", "vec3", "int")(ct), differentiable=False, public=False)
        class corners:
            def primal(vid, uvw, mode):
                return call(f"_wk.geo_vol_corners_{sfx}", vid, *_xyz(uvw), mode, type_=ct)
    else:
        @builtin(f"_volume_sample_int_{sfx}", [f"_volume_sample_int_{sfx}(id, uvw, mode)"],
                 _sig("id", "vec3", "int")(vt), differentiable=False, public=False)
        class sample_int:
            def primal(vid, uvw, mode):
                return call(f"_wk.geo_vol_sample_int_{sfx}", vid, *_xyz(uvw), mode, type_=vt)


for _t in TYPES:
    _declare(_t)

_INDEX_CORNERS = T.vector(8, T.int64)


@builtin("_volume_index_corners", ["_volume_index_corners(id, uvw, mode)"],
         _sig("id", "vec3", "int")(_INDEX_CORNERS), differentiable=False, public=False)
class _volume_index_corners:
    def primal(vid, uvw, mode):
        return call("_wk.geo_vol_index_corners", vid, *_xyz(uvw), mode, type_=_INDEX_CORNERS)


# ------------------------------------------------------------------------------ lowering
def _const(x, t):
    return ir.Const(x, t)


def _zero(vt):
    st = T.scalar_of(vt)
    z = 0.0 if T.is_float(st) else 0
    return _const(tuple([z] * vt._length_), vt) if T.is_vector(vt) else _const(z, st)


def interpolate(ctx, node, corners, uvw, mode, vt, with_grad):
    """Warp's LINEAR interpolation of the 8 ``corners`` (operands of type ``vt``) at ``uvw``,
    selected by ``mode`` (CLOSEST: corner 0, which holds the nearest voxel; another mode: 0):
    the value, and with ``with_grad`` the 3 partial derivatives (operands of type ``vt``, zero
    for CLOSEST), as kernel arithmetic the transpiler differentiates."""
    def op(name, *args):
        return ctx.apply(name, list(args), node)

    st = T.scalar_of(vt)

    def widen(w):
        return w if st is T.float32 else ctx.apply("cast", [w], node, {"type": st})

    f = []
    for c in range(3):
        u = op("extract", uvw, _const(c, T.int32))
        f.append(op("sub", u, op("floor", u)))
    a = [op("sub", _const(1.0, T.float32), fc) for fc in f]
    value, grad = None, [None, None, None]
    for n in range(8):
        bits = ((n >> 2) & 1, (n >> 1) & 1, n & 1)
        p = [f[c] if bits[c] else a[c] for c in range(3)]
        term = op("mul", widen(op("mul", op("mul", p[0], p[1]), p[2])), corners[n])
        value = term if value is None else op("add", value, term)
        if not with_grad:
            continue
        for c in range(3):  # d/du_c: the sign of the corner's side times the other weights
            o1, o2 = [p[k] for k in range(3) if k != c]
            t = op("mul", corners[n], widen(op("mul", o1, o2)))
            if grad[c] is None:
                grad[c] = t if bits[c] else op("neg", t)
            else:
                grad[c] = op("add" if bits[c] else "sub", grad[c], t)
    one = op("eq", mode, _const(1, T.int32))
    zero = _zero(vt)
    closest = op("where", op("eq", mode, _const(0, T.int32)), corners[0], zero)
    value = op("where", one, value, closest)
    if with_grad:
        grad = [op("where", one, g, zero) for g in grad]
    return value, grad


def grid_corners(ctx, node, vid, uvw, mode, vt):
    """The 8 corners (operands of type ``vt``) of a sample of the volume ``vid``."""
    sfx = TYPES[vt]
    cv = ctx.apply(f"_volume_corners_{sfx}", [vid, uvw, mode], node)
    n = _channels(vt)

    def comp(n_, ch):
        return ctx.apply("extract", [cv, _const(8 * ch + n_, T.int32)], node)
    if n == 1:
        return [comp(k, 0) for k in range(8)]
    return [ctx.apply("construct", [comp(k, ch) for ch in range(n)], node, {"type": vt})
            for k in range(8)]


def grad_type(vt):
    """The type of ``grad`` for a value type: vec3 of its scalar, or an N x 3 matrix."""
    st = T.scalar_of(vt)
    return T.vector(3, st) if not T.is_vector(vt) else T.matrix((vt._length_, 3), st)


def assign_grad(ctx, node, target, grad, vt):
    """Check ``target``'s type (Warp's error for a transposed matrix) and assign the
    gradient (3 partial derivatives of type ``vt``) to it."""
    gt = grad_type(vt)
    have = getattr(ctx.env.get(target.id), "type", None) if hasattr(target, "id") else None
    if have is not None and have != gt:
        raise ctx.fail(target, f"Incompatible gradient type, expected {T.type_name(gt)}, got "
                       f"{T.type_name(have)}")
    if not T.is_vector(vt):
        parts = grad
    else:
        parts = [ctx.apply("extract", [grad[c], _const(r, T.int32)], node)
                 for r in range(vt._length_) for c in range(3)]
    ctx.assign(target, ctx.apply("construct", parts, node, {"type": gt}), node)


def lower_grid_sample(ctx, node, args, vt, grad_target=None):
    """``volume_sample`` / ``volume_sample_grad`` of a float grid of type ``vt`` (the forms of
    :mod:`.geometry` hand the types they do not cover here)."""
    vid, uvw, mode = args[:3]
    corners = grid_corners(ctx, node, vid, uvw, mode, vt)
    value, grad = interpolate(ctx, node, corners, uvw, mode, vt, grad_target is not None)
    if grad_target is not None:
        assign_grad(ctx, node, grad_target, grad, vt)
    return value


def _index_form(with_grad):
    n_args = 6 if with_grad else 5
    name = "volume_sample_grad_index" if with_grad else "volume_sample_index"

    def lower(ctx, node):
        if len(node.args) != n_args or node.keywords:
            raise ctx.fail(node, f"{name}(id, uvw, sampling_mode, voxel_data, background"
                           f"{', grad' if with_grad else ''}) takes {n_args} arguments")
        vid, uvw, mode, data, bg = [ctx.expr(a) for a in node.args[:5]]
        if not isinstance(data.type, T.ArrayType) or data.type.ndim != 1:
            raise ctx.fail(node.args[3], f"{name}: voxel_data must be a 1-D array")
        vt = data.type.dtype
        if vt not in FLOAT_TYPES:
            raise ctx.fail(node.args[3], f"{name}: weft samples voxel data of float32, "
                           f"float64, vec3 or vec4 values, not {T.type_name(vt)}")
        bg = ctx.adapt_literal(bg, vt)
        if bg.type != vt:
            raise ctx.fail(node.args[4], f"{name}: background must have the voxel data's type "
                           f"{T.type_name(vt)}, got {T.type_name(bg.type)}")
        if not (_is_id(vid.type) and _is_vec3f(uvw.type) and T.is_int(mode.type)):
            raise ctx.fail(node, f"{name}(id: uint64, uvw: vec3, sampling_mode: int32, ...)")
        from .volume_funcs import volume_index_value
        d = ctx.apply("_volume_index_corners", [vid, uvw, mode], node)
        corners = [ctx.call_func(volume_index_value, node,
                                 [data, bg, ctx.apply("extract", [d, _const(k, T.int32)], node)],
                                 3) for k in range(8)]
        value, grad = interpolate(ctx, node, corners, uvw, mode, vt, with_grad)
        if with_grad:
            assign_grad(ctx, node, node.args[5], grad, vt)
        return value
    return lower


volume_sample_index = special_form(
    "volume_sample_index", "volume_sample_index(id, uvw, sampling_mode, voxel_data, background)"
    " -> voxel_data's dtype")(_index_form(False))
volume_sample_grad_index = special_form(
    "volume_sample_grad_index", "volume_sample_grad_index(id, uvw, sampling_mode, voxel_data, "
    "background, grad) -> voxel_data's dtype (assigns grad)",
    assigned=lambda node: node.args[5:6])(_index_form(True))


mark_kinds(_kinds())  # the launch checks the ids of these builtins' volumes
