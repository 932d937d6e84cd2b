"""Forward mode: ``wp.jvp``, the tangent kernel of one launch, or of its adjoint (second
order). The tangent arguments and the runs of the tangent and adjoint-tangent entries are the
runtime's (:mod:`weft.runtime.args`, :mod:`weft.runtime.entries`), which tape replays
(:class:`weft.runtime.record.Launch`) use too.
"""
from __future__ import annotations

import numpy as np

from ..core import types as T
from ..core.errors import LaunchError
from ..runtime import device as D
from ..runtime.args import (adjoint_arrays, explicit_adjoints, kernel_data, retain_grads,
                            tangent_values, zeros_like_tangent)
from ..runtime.array import array
from ..runtime.checks import check_dims, launch_dims
from ..runtime.dispatch import compiled_of
from ..runtime.entries import adjoint_tangent, run_derivative


def jvp(kernel, dim, inputs=(), outputs=(), tangents=None, device=None, adjoint=False,
        adj_inputs=(), adj_outputs=()):
    """Forward mode: run the tangent kernel of ``kernel`` and return output tangents.

    ``tangents`` maps input arrays (or parameter names, for float scalars and vectors) to their
    tangent; arrays without one have tangent zero. Returns a dict mapping every output array
    to its tangent array (same shape and dtype)::

        t = wp.jvp(step, 1000, inputs=[x, v, 0.01], outputs=[x_out], tangents={x: dx})
        dx_out = t[x_out].numpy()

    With ``adjoint=True`` it is the forward mode of the *adjoint* launch (second order): the
    adjoint runs as ``wp.launch(..., adjoint=True)`` would, accumulating into ``adj_inputs +
    adj_outputs`` (default: the arrays' ``.grad``), and the result maps each of those adjoint
    arrays to its tangent, along the tangents of the primal arrays and of the adjoint seeds
    (keys of ``tangents`` may be adjoint arrays too).
    """
    dims = launch_dims(dim, "jvp")
    device = D.get_device(device)
    user_args = list(inputs) + list(outputs)
    ck = compiled_of(kernel, device, user_args, dims)
    args = ck.flatten(user_args)
    values = ck.bind(args, device)
    check_dims(ck, dims, args)
    tangents = dict(tangents or {})
    if adjoint:
        return _adjoint_jvp(ck, dims, args, values, tangents, [*adj_inputs, *adj_outputs], device)
    by_id = {id(k): v for k, v in tangents.items() if not isinstance(k, str)}
    out_ids = {id(o) for o in outputs}
    # the tangent array of each user array (outputs get a zero one), flattened like the args
    user_tans, outs = [], {}
    for (n, t), a in zip(ck.user_params, user_args):
        given = by_id.get(id(a)) if isinstance(t, T.ArrayType) else None
        if isinstance(t, T.ArrayType) and T.is_differentiable(t):
            if given is None and id(a) in out_ids:
                given = zeros_like_tangent(a)
            if given is not None:
                given = _as_tangent_array(n, given, a, device)
                if id(a) in out_ids:
                    outs[id(a)] = (a, given)
        user_tans.append(given)
    flat_tans = list(_flatten_tangents(ck, user_tans))
    scalars = {}
    for (n, t), a, k in zip(ck.params, args, range(len(args))):
        if isinstance(t, T.ArrayType):
            if flat_tans[k] is None and id(a) in by_id:  # an array member of a struct argument
                flat_tans[k] = _as_tangent_array(n, by_id[id(a)], a, device)
        else:
            given = tangents.get(n, by_id.get(id(a)) if not isinstance(a, (int, float)) else None)
            if given is not None:
                scalars[n] = given
    tan_values = tangent_values(ck, args, flat_tans, scalars, device)
    run_derivative(ck, "tangent", dims, values + tan_values, device, args,
                   lambda a: by_id.get(id(a)))
    return {a: g for a, g in outs.values()}


def _adjoint_jvp(ck, dims, args, values, tangents, given, device):
    by_id = {id(k): v for k, v in tangents.items() if not isinstance(k, str)}
    if given and len(given) != len(ck.params):
        explicit_adjoints(ck, args, given)  # raises the count error
    adj_arrays = []
    for k, (p, a) in enumerate(zip(ck.abi.params, args)):
        if p.adjoint is not None:
            g = given[k] if given else getattr(a, "grad", None)
            adj_arrays.append(g if isinstance(g, array) else None)
    adj = explicit_adjoints(ck, args, given) if given else adjoint_arrays(ck, args)
    adj = retain_grads(ck, args, adj)
    tans = [_as_tangent_array(n, by_id[id(a)], a, device)
            if isinstance(a, array) and id(a) in by_id else None
            for (n, _), a in zip(ck.params, args)]
    out = {}
    for g in adj_arrays:
        if g is not None:
            t = by_id.get(id(g))
            out[g] = array(np.array(t.numpy() if isinstance(t, array) else t, dtype=g._data.dtype)
                           .reshape(g._data.shape), dtype=g.dtype, device=device) \
                if t is not None else zeros_like_tangent(g)
    tadj = [None if g is None else kernel_data(out[g]) for g in adj_arrays]
    adjoint_tangent(ck, dims, args, values, adj, tans, tadj, device,
                    f"the adjoint launch of kernel '{ck.key}'")
    return out


def _as_tangent_array(name, given, a, device):
    given = given if isinstance(given, array) else array(given, dtype=a.dtype, device=device)
    if given.shape != a.shape:
        raise LaunchError(f"tangent of argument '{name}' has shape {given.shape}, expected "
                          f"{a.shape}")
    return given if given.device == device else given.to(device)


def _flatten_tangents(ck, user_tans):
    """Tangent arrays aligned with the flattened parameters: an array of structs' tangent (an
    array of the same structs) splits into member views like the array itself."""
    if not ck.has_structs:
        return user_tans
    from ..transpiler.abi import flat_leaves
    out = []
    for (n, t), g in zip(ck.user_params, user_tans):
        for key, _ in flat_leaves(t, n):
            if g is None or not isinstance(t, T.ArrayType):
                out.append(None)
                continue
            view = g
            for f in key[len(n) + 2:].split("__") if key != n else []:
                view = view.field(f)
            out.append(view)
    return out
