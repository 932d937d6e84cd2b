"""Jacobians of a recorded program (``tape.jacobian``), by the selection-vector recipe:

- ``mode="rev"``: one ``backward`` per output component (a one-hot seed), the row of ``J``;
- ``mode="fwd"``: one ``tape.forward`` per input component, the column of ``J``;
- ``mode="auto"``: forward when there are fewer inputs than outputs, else reverse;
- ``envs=N``: the block-diagonal case of N independent environments laid out one after the
  other in every array: one pass seeds the same component in every environment at once, so
  the cost is one environment's size; returns shape ``(N, m/N, n/N)``;
- ``sparsity=P`` (a scipy.sparse ``m x n`` pattern): seeds grouped by a greedy colouring of the
  columns (forward) or rows (reverse) that share no nonzero, so the cost is the number of
  colours, not of columns; returns ``scipy.sparse.csr_matrix``.

Several inputs are concatenated as columns and several outputs as rows, each flattened (a vec3
array of n elements is 3n components, in memory order).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import LaunchError
from ..runtime.array import array


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _sizes(arrays):
    return [int(np.prod(a._data.shape)) for a in arrays]


def _split(vec, arrays):
    """``{array: seed of its shape}`` from one flat vector over ``arrays``."""
    out, k = {}, 0
    for a, n in zip(arrays, _sizes(arrays)):
        out[a] = vec[k:k + n].reshape(a._data.shape).astype(a._data.dtype)
        k += n
    return out


def _reverse(tape, inputs, outputs, seed):
    """``seed @ J`` (a flat vector over the inputs) from one backward pass."""
    _zero_gradients(tape, inputs)
    tape.backward(grads=_split(seed, outputs))
    row = []
    for a in inputs:
        g = a.grad
        row.append(np.zeros(int(np.prod(a._data.shape))) if g is None else
                   g.numpy().reshape(-1).astype(np.float64))
    return np.concatenate(row)


def _forward(tape, inputs, outputs, seed):
    """``J @ seed`` (a flat vector over the outputs) from one tangent replay."""
    t = tape.forward(_split(seed, inputs))
    col = []
    for a in outputs:
        g = t.get(a)
        col.append(np.zeros(int(np.prod(a._data.shape))) if g is None else
                   g.numpy().reshape(-1).astype(np.float64))
    return np.concatenate(col)


def _colour(pattern):
    """Greedy colouring of the columns of ``pattern``: columns sharing a nonzero row get
    different colours. Returns the colour of each column (plain Python lists: a 36,000-column
    banded pattern colours in a fraction of a second)."""
    csc, csr = pattern.tocsc(), pattern.tocsr()
    c_ptr, c_rows = csc.indptr.tolist(), csc.indices.tolist()
    r_ptr, r_cols = csr.indptr.tolist(), csr.indices.tolist()
    colour = [-1] * pattern.shape[1]
    for c in range(pattern.shape[1]):
        taken = set()
        for r in c_rows[c_ptr[c]:c_ptr[c + 1]]:
            for c2 in r_cols[r_ptr[r]:r_ptr[r + 1]]:
                taken.add(colour[c2])
        k = 0
        while k in taken:
            k += 1
        colour[c] = k
    return np.array(colour, np.int64)


def _sparse(tape, inputs, outputs, pattern, mode):
    import scipy.sparse as sp
    m, n = sum(_sizes(outputs)), sum(_sizes(inputs))
    pattern = sp.csr_matrix(pattern)
    if pattern.shape != (m, n):
        raise LaunchError(f"jacobian(sparsity=...): the pattern is {pattern.shape}, the "
                          f"Jacobian {(m, n)}")
    # reverse mode seeds outputs: colour the rows (the columns of the transpose), each product
    # a row of the Jacobian; forward mode seeds inputs and colours the columns
    rev = mode == "rev"
    colour = _colour(pattern.T if rev else pattern)
    rows, cols = pattern.nonzero()
    seeded, read = (rows, cols) if rev else (cols, rows)
    product = _reverse if rev else _forward
    vals = np.zeros(len(rows))
    for k in range(int(colour.max()) + 1 if (m if rev else n) else 0):
        seed = (colour == k).astype(np.float64)
        got = product(tape, inputs, outputs, seed)
        sel = colour[seeded] == k
        vals[sel] = got[read[sel]]
    return sp.csr_matrix((vals, (rows, cols)), shape=(m, n))


def jacobian(tape, inputs, outputs, mode="auto", envs=None, sparsity=None):
    """The Jacobian of ``outputs`` with respect to ``inputs`` of the program ``tape``
    recorded (see the module docstring)."""
    inputs, outputs = _as_list(inputs), _as_list(outputs)
    for a in inputs + outputs:
        if not isinstance(a, array):
            raise LaunchError(f"jacobian(): inputs and outputs must be wp.arrays, got "
                              f"{type(a).__name__}")
    for a in inputs:
        if a.grad is None:
            a.requires_grad = True
    m, n = sum(_sizes(outputs)), sum(_sizes(inputs))
    if mode == "auto":
        mode = "fwd" if n <= m else "rev"
    if mode not in ("fwd", "rev"):
        raise LaunchError(f"jacobian(mode={mode!r}): use 'rev', 'fwd' or 'auto'")
    if mode == "fwd":
        return _jacobian(tape, inputs, outputs, mode, envs, sparsity, m, n)
    try:
        return _jacobian(tape, inputs, outputs, mode, envs, sparsity, m, n)
    finally:  # as Warp's jacobian: no row's gradient is left for a later backward to add to
        _zero_gradients(tape, inputs)


def _zero_gradients(tape, inputs):
    tape.zero()
    for a in inputs:
        if a.grad is not None:
            a.grad.zero_()


def _jacobian(tape, inputs, outputs, mode, envs, sparsity, m, n):
    if sparsity is not None:
        return _sparse(tape, inputs, outputs, sparsity, mode)
    if envs is not None:
        if envs <= 0 or m % envs or n % envs:
            raise LaunchError(f"jacobian(envs={envs}): the {m} outputs and {n} inputs must split "
                              "into that many equal environments")
        mb, nb = m // envs, n // envs
        out = np.zeros((envs, mb, nb))
        if mode == "rev":
            for r in range(mb):
                seed = np.zeros(m)
                seed[r::mb] = 1.0
                got = _reverse(tape, inputs, outputs, seed).reshape(envs, nb)
                out[:, r, :] = got
        else:
            for c in range(nb):
                seed = np.zeros(n)
                seed[c::nb] = 1.0
                out[:, :, c] = _forward(tape, inputs, outputs, seed).reshape(envs, mb)
        return out
    J = np.zeros((m, n))
    if mode == "rev":
        for r in range(m):
            seed = np.zeros(m)
            seed[r] = 1.0
            J[r] = _reverse(tape, inputs, outputs, seed)
    else:
        for c in range(n):
            seed = np.zeros(n)
            seed[c] = 1.0
            J[:, c] = _forward(tape, inputs, outputs, seed)
    return J
