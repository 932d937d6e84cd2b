"""Random numbers with Warp's streams: ``rand_init``, ``randi``, ``randu``, ``randf``, ``randn``,
the samplers and ``poisson``.

The state is a ``uint32`` that ``randf(state)`` and friends advance in place, as Warp's
``uint32&`` parameter: the lowering rebinds the state variable after each draw (see
``lower_random.RandomLowering.random_draw``). The generator is Warp's PCG hash, so the same seed
and offset give the same integers and floats as Warp, on every target.

``poisson`` and ``sample_cdf`` loop, so they are written below in the kernel language, as
Warp's ``rand.h`` (float32 operations in Warp's order, so that every accept/reject decision is
Warp's); ``poisson_count`` returns the count and the new state, and the lowering rebinds
the caller's state variable to it.
"""
from __future__ import annotations

import weft as wp  # resolved when a kernel using the funcs below is compiled

from .. import types as T
from ..runtime.kernel import func
from ..transpiler.exprs import call
from .registry import builtin


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

def is_draw(name):
    """Whether a call of ``wp.<name>`` is a random draw, which advances its first argument, a
    state variable (the lowering rebinds it, and carries it through loops)."""
    return name in ("randf", "randi", "randu", "randn", "poisson") or (
        name or "").startswith("sample_")


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


@func
def cdf_index(cdf: wp.array(dtype=float), u: float):
    """The first index of ``cdf`` whose value is not below ``u`` (the last index if none;
    0 for an empty array): Warp's ``lower_bound``, a binary search."""
    lower = int(0)
    upper = cdf.shape[0] - 1
    while lower < upper:
        mid = lower + (upper - lower) // 2
        if cdf[mid] < u:
            lower = mid + 1
        else:
            upper = mid
    return lower
