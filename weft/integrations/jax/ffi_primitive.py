"""The JAX primitive of a differentiable ``jax_kernel``'s tangent (:class:`.ffi._DiffKernel`):
linear in the tangents, its transpose runs weft's adjoint kernel."""
from __future__ import annotations

_PRIMS = {}
_SECOND_ORDER = ("weft: this derivative through a jax_kernel is not supported (forward over "
                 "reverse is: jax.jvp of jax.grad, jax.hessian; reverse over reverse and third "
                 "derivatives are not)")


def _prims():
    """The JAX primitive of a differentiable jax_kernel's tangent: ``weft_tangent(*primals,
    *tangents)`` -> output tangents, linear in the tangents; its transpose runs the adjoint."""
    if _PRIMS:
        return _PRIMS["tangent"]
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415
    from jax.extend.core import Primitive  # noqa: PLC0415
    from jax.interpreters import ad, batching, mlir  # noqa: PLC0415

    p = Primitive("weft_kernel_tangent")
    p.multiple_results = True

    def split(args, wrapper, nb):
        n = wrapper.n_arrays
        return args[:n], args[n:]

    def impl(*args, wrapper, statics, nb):
        primals, tans = split(args, wrapper, nb)
        return wrapper.tangent_call(primals, tans, statics, nb)

    def abstract(*avals, wrapper, statics, nb):
        primals = avals[:wrapper.n_arrays]
        return [jax.core.ShapedArray(s.shape, s.dtype)
                for s in wrapper.out_types(primals, statics, nb)]

    def transpose(cts, *args, wrapper, statics, nb):
        primals, tans = split(args, wrapper, nb)
        if any(ad.is_undefined_primal(x) for x in primals):
            raise NotImplementedError("weft: the tangent of a jax_kernel is linear in the "
                                      "tangents only (no derivative through the primal inputs "
                                      "here)")
        outs = wrapper.out_types(primals, statics, nb)
        cts = [jnp.zeros(o.shape, o.dtype) if type(c) is ad.Zero else c
               for c, o in zip(cts, outs)]
        grads = wrapper.adjoint_call(primals, cts, statics, nb)
        return [None] * len(primals) + list(grads)

    def batch(args, dims, *, wrapper, statics, nb):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        if wrapper.vmap_method == "sequential":  # one call per batch element, as the forward
            outs = [p.bind(*(jnp.take(a, b, axis=d) if d is not None else a
                             for a, d in zip(args, dims)),
                           wrapper=wrapper, statics=statics, nb=nb) for b in range(size)]
            return [jnp.stack(o) for o in zip(*outs)], [0] * len(outs[0])
        moved = [jnp.moveaxis(a, d, 0) if d is not None else
                 jnp.broadcast_to(a, (size, *a.shape)) for a, d in zip(args, dims)]
        out = p.bind(*moved, wrapper=wrapper, statics=statics, nb=nb + 1)
        return out, [0] * len(out)

    def no_jvp(primals, tangents, **params):
        raise NotImplementedError(_SECOND_ORDER)

    p.def_impl(impl)
    p.def_abstract_eval(abstract)
    ad.primitive_jvps[p] = no_jvp
    ad.primitive_transposes[p] = transpose
    batching.primitive_batchers[p] = batch
    mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=True))
    _PRIMS["tangent"] = p
    return p
