"""Random numbers with Warp's streams: ``rand_init``, ``randi``, ``randu``, ``randf``, ``randn``.

The state is a ``uint32`` that ``randf(state)`` and friends advance in place, as Warp's
``uint32&`` parameter: the lowering rebinds the state variable after each draw (see
``lower_expr.ExprLowerer.random_draw``). The generator is Warp's PCG hash, so the same seed and
offset give the same integers and floats as Warp, on every target.
"""
from __future__ import annotations

from .. import types as T
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

DRAWS = {"randf", "randi", "randu", "randn"}
