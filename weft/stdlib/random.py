"""Random numbers with Warp's streams: ``rand_init``, ``randi``, ``randu``, ``randf``, ``randn``,
the samplers and ``poisson``.

The state is a ``uint32`` that ``randf(state)`` and friends advance in place, as Warp's
``uint32&`` parameter: the lowering rebinds the state variable after each draw (see
the draws at the end of this module). The generator is Warp's PCG hash, so the same seed
and offset give the same integers and floats as Warp, on every target.

``poisson`` and ``sample_cdf`` loop, so they are written below in the kernel language, as
Warp's ``rand.h`` (float32 operations in Warp's order, so that every accept/reject decision is
Warp's); ``poisson_count`` returns the count and the new state, and the lowering rebinds
the caller's state variable to it.
"""
from __future__ import annotations

from weft.stdlib import kernel_scope as wp  # names looked up when a kernel is compiled

import ast

import numpy as np

from ..core import types as T
from .funcs import func
from . import ir
from .exprs import call
from .registry import builtin, special_form


def _int_args(n):
    return lambda ts, a=None: T.uint32 if len(ts) == n and all(T.is_int(t) for t in ts) else None


@builtin("rand_init", ["rand_init(seed: int) -> uint32", "rand_init(seed: int, offset: int) -> "
                       "uint32"], lambda ts, a=None: T.uint32 if len(ts) in (1, 2) and all(
                           T.is_int(t) for t in ts) else None, differentiable=False)
class rand_init:
    def primal(*args):
        # Warp: rand_pcg(uint32(seed)) or rand_pcg(uint32(seed) + rand_pcg(uint32(offset)))
        seed = call("_wk.u32", args[0], type_=T.uint32)
        if len(args) == 2:
            off = call("_wk.rand_pcg", call("_wk.u32", args[1], type_=T.uint32), type_=T.uint32)
            seed = call("_wk.u32_add", seed, off, type_=T.uint32)
        return call("_wk.rand_pcg", seed, type_=T.uint32)


def _state_fn(name, helper, ret, arity=1):
    class rules:
        def primal(*args):
            return call(helper, *args, type_=ret)

    builtin(name, [f"{name}(state: uint32, ...)"], lambda ts, a=None: ret if len(ts) == arity
            and ts[0] is T.uint32 else None, differentiable=False, public=False)(rules)


_state_fn("rand_pcg", "_wk.rand_pcg", T.uint32)
_state_fn("rand_float", "_wk.rand_float", T.float32)
_state_fn("rand_int", "_wk.rand_int", T.int32)
_state_fn("rand_int_range", "_wk.rand_int_range", T.int32, arity=3)


# ------------------------------------------------------------------ poisson (Warp's rand.h)

@func
def _loggam(x: float):
    """log(Gamma(x)) in float32, as Warp's ``random_loggam`` (SPECFUN's series, Zhang & Jin)."""
    if x == 1.0 or x == 2.0:
        return 0.0
    n = wp.uint32(0)
    if x < 7.0:
        n = wp.uint32(7.0 - x)
    x0 = x + float(n)
    x2 = (1.0 / x0) * (1.0 / x0)
    gl0 = -1.39243221690590e+00  # the series a[9] .. a[0], by Horner's rule (no fused ops)
    gl0 = gl0 * x2 + 1.796443723688307e-01
    gl0 = gl0 * x2 + -2.955065359477124e-02
    gl0 = gl0 * x2 + 6.410256410256410e-03
    gl0 = gl0 * x2 + -1.917526917526918e-03
    gl0 = gl0 * x2 + 8.417508417508418e-04
    gl0 = gl0 * x2 + -5.952380952380952e-04
    gl0 = gl0 * x2 + 7.936507936507937e-04
    gl0 = gl0 * x2 + -2.777777777777778e-03
    gl0 = gl0 * x2 + 8.333333333333333e-02
    gl = gl0 / x0 + 0.5 * 1.8378770664093453 + (x0 - 0.5) * wp.log(x0) - x0
    for _k in range(int(n)):
        gl = gl - wp.log(x0 - 1.0)
        x0 = x0 - 1.0
    return gl


@func
def poisson_count(state: wp.uint32, lam: float):
    """Warp's ``poisson(state, lam)``: 0 for ``lam == 0`` (no draw); below 10 the
    multiplication method (a product of uniforms against exp(-lam)); from 10 on Hoermann's
    transformed rejection (PTRS, 1993), as NumPy's. Returns the count and the new state."""
    x = wp.uint32(0)
    if lam >= 10.0:
        slam = wp.sqrt(lam)
        loglam = wp.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2.0)
        k = float(0.0)
        while True:
            u = wp.randf(state) - 0.5
            v = wp.randf(state)
            us = 0.5 - wp.abs(u)
            k = wp.floor((2.0 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                break
            if k < 0.0 or (us < 0.013 and v > us):
                continue
            if wp.log(v) + wp.log(invalpha) - wp.log(a / (us * us) + b) <= \
                    -lam + k * loglam - _loggam(k + 1.0):
                break
        x = wp.uint32(k)
    elif lam != 0.0:  # NaN comes here too, as in Warp (one draw, then 0)
        enlam = wp.exp(-lam)
        prod = float(1.0)
        while True:
            prod = prod * wp.randf(state)
            if not prod > enlam:
                break
            x = x + wp.uint32(1)
    return x, state


# ------------------------------------------------------------------ the draws (special forms)
# Warp passes the generator state by reference, so every draw rebinds the caller's state
# variable to the advanced state; loops then carry it (``assigned_args``).

def _state_arg(node):
    return node.args[:1]


def draw_form(name, doc):
    """Declare random draw ``wp.<name>(state, ...)``: its lowering is ``lower(ctx, node, draw,
    extra)`` where ``draw()`` advances the state and returns it, ``extra`` the other arguments
    (lowered)."""
    def deco(lower):
        def lower_call(ctx, node):
            first = node.args[0] if node.args else None
            if first is not None and not isinstance(first, ast.Name):
                # a state read from elsewhere (wp.poisson(states[tid], lam)): drawn from a
                # copy, as Warp passes a temporary to the by-reference state
                state = f"_state{first.lineno}_{first.col_offset}"
                value = ctx.adapt_literal(ctx.expr(first), T.uint32)
                if value.type is T.uint32:
                    ctx.bind(state, value, first)
            else:
                state = first.id if first is not None else None
            if state is None or state not in ctx.env or ctx.env[state].type is not T.uint32:
                raise ctx.fail(node, f"wp.{name}(state, ...) needs a state variable made by "
                               "wp.rand_init (a uint32)")
            if node.keywords:
                raise ctx.fail(node.keywords[0], f"wp.{name}() takes positional arguments only")

            def draw():
                s = ctx.apply("rand_pcg", [ctx.env[state]], node)
                ctx.bind(state, s, node)
                return ctx.env[state]
            draw.state = state  # the name the draws rebind

            return lower(ctx, node, draw, [ctx.expr(a) for a in node.args[1:]])
        return special_form(name, doc, assigned=_state_arg)(lower_call)
    return deco


def _arity(ctx, node, name, allowed, what):
    if len(node.args) not in allowed:
        raise ctx.fail(node, f"wp.{name}{what}: got {len(node.args)} arguments")


@draw_form("randf", "randf(state[, lo, hi]) -> float32 (advances state)")
def randf(ctx, node, draw, extra):
    _arity(ctx, node, "randf", (1, 3), "(state) or wp.randf(state, lo, hi)")
    v = ctx.apply("rand_float", [draw()], node)
    if extra:
        lo, hi = (ctx.adapt_literal(e, T.float32) for e in extra)
        v = ctx.apply("add", [ctx.apply("mul", [ctx.apply("sub", [hi, lo], node), v], node), lo],
                      node)
    return v


@draw_form("randi", "randi(state[, lo, hi]) -> int32 (advances state)")
def randi(ctx, node, draw, extra):
    _arity(ctx, node, "randi", (1, 3), "(state) or wp.randi(state, lo, hi)")
    s = draw()
    if extra:
        lo, hi = (ctx.adapt_literal(e, T.int32) for e in extra)
        return ctx.apply("rand_int_range", [s, lo, hi], node)
    return ctx.apply("rand_int", [s], node)


@draw_form("randu", "randu(state[, lo, hi]) -> uint32 (advances state)")
def randu(ctx, node, draw, extra):
    _arity(ctx, node, "randu", (1, 3), "(state) or wp.randu(state, lo, hi)")
    s = draw()
    if not extra:
        return s
    lo, hi = (ctx.adapt_literal(e, T.uint32) for e in extra)  # state % (hi - lo) + lo
    if lo.type is not T.uint32 or hi.type is not T.uint32:
        raise ctx.fail(node, "wp.randu(state, low, high) needs uint32 bounds")
    return ctx.apply("add", [ctx.apply("mod", [s, ctx.apply("sub", [hi, lo], node)], node), lo],
                     node)


@draw_form("randn", "randn(state) -> float32, normal (advances state twice)")
def randn(ctx, node, draw, extra):
    _arity(ctx, node, "randn", (1,), "(state) takes only the state")
    u1 = ctx.apply("rand_float", [draw()], node)
    u2 = ctx.apply("rand_float", [draw()], node)
    r = ctx.apply("add", [u1, ir.Const(5.96e-8, T.float32)], node)
    r = ctx.apply("sqrt", [ctx.apply("mul", [ir.Const(-2.0, T.float32),
                                             ctx.apply("log", [r], node)], node)], node)
    a = ctx.apply("mul", [ir.Const(_TWO_PI, T.float32), u2], node)
    return ctx.apply("mul", [r, ctx.apply("cos", [a], node)], node)


@draw_form("poisson", "poisson(state, lam: float32) -> uint32 (advances state, unless lam == 0)")
def poisson(ctx, node, draw, extra):
    """The kernel-language ``poisson_count`` (Warp's algorithms, which loop) returns the count
    and the advanced state, rebound to the caller's."""
    lam = ctx.adapt_literal(extra[0], T.float32) if len(extra) == 1 else None
    if lam is None or lam.type is not T.float32:
        raise ctx.fail(node, "wp.poisson(state, lam) needs a float32 lam")
    name = draw.state
    out = ctx.call_func(poisson_count, node, [ctx.env[name], lam], 2)
    count, state = (ctx.apply("tuple_get", [out], node, attrs={"index": k}) for k in (0, 1))
    ctx.bind(name, state, node)
    return count


@draw_form("sample_cdf", "sample_cdf(state, cdf: array(dtype=float32)) -> int: the first index "
           "with cdf[index] >= randf(state) (advances state)")
def sample_cdf(ctx, node, draw, extra):
    """One uniform draw, then the first index of the 1-D float32 array ``cdf`` whose value is
    not below it (binary search, as Warp)."""
    cdf = extra[0] if len(extra) == 1 else None
    if cdf is None or not isinstance(cdf.type, T.ArrayType) or cdf.type.ndim != 1 or \
            cdf.type.dtype is not T.float32:
        raise ctx.fail(node, "wp.sample_cdf(state, cdf) needs a 1-D array of float32")
    u = ctx.apply("rand_float", [draw()], node)
    from .search import array_lower_bound    # Warp's lower_bound, a binary search
    return ctx.call_func(array_lower_bound, node, [cdf, u], 2)


_TWO_PI = float(np.float32(2.0) * np.float32(np.pi))


def _sampler(name, doc, build):
    """Warp's geometric samplers (rand.h), drawing their numbers in Warp's order."""
    def lower(ctx, node, draw, extra):
        if extra:
            raise ctx.fail(node, f"wp.{name}(state) takes only the state")

        def op(fn, *args):
            return ctx.apply(fn, list(args), node)

        def u():
            return op("rand_float", draw())

        t, comps = build(op, u, lambda v: ir.Const(v, T.float32))
        return ctx.apply("construct", comps, node, {"type": t})
    return draw_form(name, doc)(lower)


def _square(n, t):
    return lambda op, u, f: (t, [op("sub", u(), f(0.5)) for _ in range(n)])


def _sphere(hemisphere, solid):
    def build(op, u, f):
        # acos(1 - 2u) over the sphere, acos(1 - u) over the upper hemisphere
        w = u() if hemisphere else op("mul", f(2.0), u())
        phi = op("acos", op("sub", f(1.0), w))
        theta = op("mul", f(_TWO_PI), u())
        r = op("pow", u(), f(float(np.float32(1.0) / np.float32(3.0)))) if solid else f(1.0)
        sp = op("sin", phi)
        return T.vec3, [op("mul", op("mul", r, op("cos", theta)), sp),
                        op("mul", op("mul", r, op("sin", theta)), sp),
                        op("mul", r, op("cos", phi))]
    return build


def _disk(op, u, f):
    r = op("sqrt", u())
    theta = op("mul", f(_TWO_PI), u())
    return T.vec2, [op("mul", r, op("cos", theta)), op("mul", r, op("sin", theta))]


def _ring(op, u, f):
    theta = op("mul", f(_TWO_PI), u())
    return T.vec2, [op("cos", theta), op("sin", theta)]


def _triangle(op, u, f):
    r = op("sqrt", u())
    return T.vec2, [op("sub", f(1.0), r), op("mul", u(), r)]


sample_unit_square = _sampler("sample_unit_square", "-> vec2 in [-0.5, 0.5)^2",
                              _square(2, T.vec2))
sample_unit_cube = _sampler("sample_unit_cube", "-> vec3 in [-0.5, 0.5)^3", _square(3, T.vec3))
sample_unit_sphere_surface = _sampler("sample_unit_sphere_surface", "-> vec3 on the sphere",
                                      _sphere(False, False))
sample_unit_sphere = _sampler("sample_unit_sphere", "-> vec3 in the unit ball",
                              _sphere(False, True))
sample_unit_hemisphere_surface = _sampler("sample_unit_hemisphere_surface",
                                          "-> vec3 on the unit sphere, z >= 0",
                                          _sphere(True, False))
sample_unit_hemisphere = _sampler("sample_unit_hemisphere", "-> vec3 in the unit ball, z >= 0",
                                  _sphere(True, True))
sample_unit_disk = _sampler("sample_unit_disk", "-> vec2 in the unit disk", _disk)
sample_unit_ring = _sampler("sample_unit_ring", "-> vec2 on the unit circle", _ring)
sample_triangle = _sampler("sample_triangle", "-> barycentric vec2", _triangle)
