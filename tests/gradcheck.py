"""Reusable checks of a kernel's forward values, adjoint and tangent.

``check(kernel, dim, inputs, outputs, reference)`` runs ``kernel`` on fresh arrays and checks

1. the forward outputs against ``reference`` (numpy, written independently of the kernel);
2. the adjoint (``Tape.backward`` seeded with random output gradients ``dy``) against
   ``J^T dy``, with the Jacobian ``J`` from central finite differences in float64;
3. the tangent (``wp.jvp`` along random input tangents ``dx``) against ``J dx``;
4. the dot-product identity ``<J dx, dy> == <dx, J^T dy>`` between tangent and adjoint;
5. with ``fd="kernel"`` (float64 kernels) on the CPU, second order: ``tape.hvp`` of ``<y, dy>`` along
   ``dx`` against (fourth-order) central differences of the adjoint's ``J^T dy`` along
   ``dx``.

Inputs are :class:`Arr` (an array argument; ``grad=True`` makes it a differentiated input) or
plain Python values (ints, floats, vectors) passed as scalars; ``scalar_grads`` names float
scalar parameters whose tangent is checked too. Outputs are :class:`Arr` giving their initial
contents (usually zeros). ``fd="kernel"`` differentiates the kernel itself (float64 kernels);
``fd="reference"`` differentiates ``reference`` in float64 (float32 kernels, where finite
differences of the kernel would be too noisy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import weft as wp


@dataclass
class Arr:
    data: Any
    dtype: Any
    grad: bool = True

    def make(self, data=None, requires_grad=False):
        d = np.array(self.data if data is None else data, copy=True)
        return wp.array(d, dtype=self.dtype, requires_grad=requires_grad)


def _param_names(kernel):
    import inspect
    return list(inspect.signature(kernel.func).parameters)


def launch(kernel, dim, inputs, outputs, in_values=None, requires_grad=False, tape=None):
    """Launch on fresh arrays; returns (input objects, output arrays)."""
    in_values = in_values or {}
    ins = []
    for k, x in enumerate(inputs):
        if isinstance(x, Arr):
            ins.append(x.make(in_values.get(k), requires_grad and x.grad))
        else:
            ins.append(in_values.get(k, x))
    outs = [o.make(requires_grad=requires_grad and o.grad) for o in outputs]
    if tape is not None:
        with tape:
            wp.launch(kernel, dim, inputs=ins, outputs=outs)
    else:
        wp.launch(kernel, dim, inputs=ins, outputs=outs)
    return ins, outs


def forward(kernel, dim, inputs, outputs, in_values=None):
    """Output values (numpy, float64) for inputs replaced as given by ``in_values``."""
    _, outs = launch(kernel, dim, inputs, outputs, in_values)
    return [np.asarray(o.numpy(), dtype=np.float64) for o in outs]


def _as_list(r, n):
    """A reference's result as one value per output (a single output may be a list)."""
    return [r] if n == 1 else list(r)


def _flat_outputs(values, outputs):
    return np.concatenate([np.ravel(v) for v, o in zip(values, outputs) if o.grad] or
                          [np.zeros(0)])


def _tangents(tan, outs, specs):
    return [np.asarray(tan[o].numpy(), dtype=np.float64) if spec.grad else None
            for o, spec in zip(outs, specs)]


def check(kernel, dim, inputs, outputs, reference=None, scalar_grads=(), rtol=1e-5,
          atol=1e-7, h=1e-6, fd="kernel", fwd_rtol=1e-10, fwd_atol=1e-12, seed=0,
          second_order=True):
    """Run every check described in the module docstring; returns the forward outputs."""
    rng = np.random.default_rng(seed)
    params = _param_names(kernel)
    values = forward(kernel, dim, inputs, outputs)
    checked = 0
    if reference is not None:
        ref_args = [np.array(x.data, dtype=np.float64) if isinstance(x, Arr) else x
                    for x in inputs]
        ref = _as_list(reference(*ref_args), len(outputs))
        assert len(ref) == len(outputs), "reference must return one value per output"
        for got, want in zip(values, ref):
            np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64),
                                       rtol=fwd_rtol, atol=fwd_atol)
            checked += 1

    # the differentiated coordinates: elements of grad arrays, then named float scalars
    coords = []   # (input position, flat element index or None for a scalar)
    for k, x in enumerate(inputs):
        if isinstance(x, Arr) and x.grad:
            coords += [(k, e) for e in range(np.size(x.data))]
    for pname in scalar_grads:
        coords.append((params.index(pname), None))
    if not any(o.grad for o in outputs) or not coords:
        assert checked, "check() was given nothing to check"
        return values

    def evaluate(k, e, delta):
        if fd == "reference":
            args = [np.array(x.data, dtype=np.float64) if isinstance(x, Arr) else x
                    for x in inputs]
            if e is None:
                args[k] = args[k] + delta
            else:
                args[k].reshape(-1)[e] += delta
            res = [np.asarray(r, dtype=np.float64)
                   for r in _as_list(reference(*args), len(outputs))]
            return _flat_outputs(res, outputs)
        x = inputs[k]
        if e is None:
            new = {k: x + delta}
        else:
            d = np.array(x.data, dtype=np.float64)
            d.reshape(-1)[e] += delta
            new = {k: d}
        return _flat_outputs(forward(kernel, dim, inputs, outputs, new), outputs)

    jac = np.stack([(evaluate(k, e, h) - evaluate(k, e, -h)) / (2 * h) for k, e in coords],
                   axis=1)
    assert np.any(jac != 0), "the Jacobian is identically zero: the check would be vacuous"

    # random directions
    dy = [rng.uniform(-1, 1, np.shape(o.data)) if o.grad else None for o in outputs]
    dy_flat = _flat_outputs([d if d is not None else np.zeros(np.shape(o.data))
                             for d, o in zip(dy, outputs)], outputs)
    dx = {k: rng.uniform(-1, 1, np.shape(x.data)) for k, x in enumerate(inputs)
          if isinstance(x, Arr) and x.grad}
    dxs = {params[k]: float(rng.uniform(-1, 1)) for k, _ in coords if _ is None}
    dx_flat = np.concatenate([np.ravel(dx[k]) for k in sorted(dx)] +
                             [np.array([dxs[params[k]]]) for k, e in coords if e is None])

    def close(got, want, what):
        scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)

    # adjoint against J^T dy (array inputs only; scalars have no gradient array)
    tape = wp.Tape()
    ins, outs = launch(kernel, dim, inputs, outputs, requires_grad=True, tape=tape)
    tape.backward(grads={o: d for o, d, spec in zip(outs, dy, outputs) if spec.grad})
    adj = np.concatenate([np.ravel(np.asarray(ins[k].grad.numpy(), dtype=np.float64))
                          for k in sorted(dx)] or [np.zeros(0)])
    n_arr = adj.size
    close(adj, jac[:, :n_arr].T @ dy_flat, "adjoint vs finite differences (J^T dy)")

    # tangent against J dx
    ins2, outs2 = launch(kernel, dim, inputs, outputs)
    tangents = {ins2[k]: dx[k] for k in dx}
    tangents.update(dxs)
    tan = wp.jvp(kernel, dim, inputs=ins2, outputs=outs2, tangents=tangents)
    tan_flat = _flat_outputs(_tangents(tan, outs2, outputs), outputs)
    close(tan_flat, jac @ dx_flat, "tangent vs finite differences (J dx)")

    # dot-product test between the kernel's own tangent and adjoint (array inputs only)
    ins3, outs3 = launch(kernel, dim, inputs, outputs)
    tan3 = wp.jvp(kernel, dim, inputs=ins3, outputs=outs3,
                  tangents={ins3[k]: dx[k] for k in dx})
    t3 = _flat_outputs(_tangents(tan3, outs3, outputs), outputs)
    lhs, rhs = float(t3 @ dy_flat), float(adj @ dx_flat[:n_arr])
    dot_rtol = 1e-10 if fd == "kernel" else rtol
    assert abs(lhs - rhs) <= dot_rtol * max(1.0, abs(lhs), abs(rhs)), \
        f"dot-product test: <J dx, dy> = {lhs} but <dx, J^T dy> = {rhs}"
    if fd == "kernel" and second_order and dx and not wp.get_device().is_cuda:
        # (second order runs on the CPU only: tape.hvp refuses CUDA launches)
        _check_second_order(kernel, dim, inputs, outputs, dx, dy, close)
    return values


def _check_second_order(kernel, dim, inputs, outputs, dx, dy, close, eps=1e-5):
    def adjoint_at(shift):
        values = {k: np.asarray(inputs[k].data, dtype=np.float64) + shift * d
                  for k, d in dx.items()}
        tape = wp.Tape()
        ins, outs = launch(kernel, dim, inputs, outputs, values, requires_grad=True, tape=tape)
        return tape, ins, outs

    def gradient(shift):
        tape, ins, outs = adjoint_at(shift)
        tape.backward(grads={o: d for o, d, spec in zip(outs, dy, outputs) if spec.grad})
        return np.concatenate([np.ravel(ins[k].grad.numpy()) for k in sorted(dx)])

    tape, ins, outs = adjoint_at(0.0)
    hv = tape.hvp(None, {ins[k]: dx[k] for k in dx},
                  grads={o: d for o, d, spec in zip(outs, dy, outputs) if spec.grad})
    got = np.concatenate([np.ravel(hv[ins[k]].numpy()) for k in sorted(dx)])
    # fourth-order central differences: near-singular decompositions have large third
    # derivatives, which the two-point stencil's O(eps^2) error would show
    want = (8 * (gradient(eps) - gradient(-eps)) - (gradient(2 * eps) - gradient(-2 * eps))) \
        / (12 * eps)
    close(got, want, "Hessian-vector product (tape.hvp) vs finite differences of the adjoint")
