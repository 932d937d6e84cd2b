"""The per-batch dot products of :mod:`weft.optim.linear`'s solvers (``_dots``; ``_Batches``,
the batch of every unknown) and Warp's ``TiledDot`` API on them."""
from __future__ import annotations

import numpy as np

from ...core import types as T
from ...runtime.array_ops import zeros
from ...runtime.launch import launch
from ._linear_helpers import _flat, _host, _put, _to_array
from ._linear_kernels import kernels_for


# ----------------------------------------------------------------------------- reductions
class TiledDot:
    """Dot products of the columns of two arrays, per batch (Warp's ``TiledDot`` API; on weft
    a float64-accumulating reduction kernel, the result in ``scalar_type``)."""

    def __init__(self, max_length, scalar_type, tile_size=512, device=None, max_column_count=1,
                 batch_offsets=None, max_batch_length=None):
        if max_batch_length is not None:
            if batch_offsets is None:
                raise ValueError("max_batch_length requires batch_offsets")
            if max_batch_length < 0:
                raise ValueError("max_batch_length must be non-negative")
        from ...runtime.device import get_device
        self.device = get_device(device)
        self.tile_size = tile_size
        self.max_column_count = max_column_count
        self.batch_offsets = batch_offsets
        self.max_batch_length = max_batch_length
        self.batch_count = 1 if batch_offsets is None else batch_offsets.shape[0] - 1
        self.rounds = 0
        self._batches = _Batches(batch_offsets, max_length, self.device)
        self._acc = zeros((max_column_count, self.batch_count), dtype=T.float64,
                          device=self.device)
        self._output = zeros((max_column_count, self.batch_count), dtype=scalar_type,
                             device=self.device)

    def compute(self, a, b, col_offset=0):
        cols = [(a, b)] if a.ndim == 1 else [(a[i], b[i]) for i in range(a.shape[0])]
        got = _dots(self._acc, self._batches, cols)
        out = _host(self._output).copy()
        out[col_offset: col_offset + len(cols)] = got
        _put(self._output, out)
        return self._output

    def col(self, col=0):
        return self._output[col][: self.batch_count]

    def cols(self, count, start=0):
        return self._output[start: start + count, : self.batch_count]


def _create_segmented_tiled_dot_kernels(tile_size):
    """Warp's CUDA tile reduction kernels: weft's reductions need none (refused)."""
    raise NotImplementedError("weft: the segmented tile dot kernels of Warp's CUDA reductions "
                              "do not exist in weft (TiledDot reduces with one kernel)")


class _Batches:
    """The batch of every scalar unknown (-1: inactive), as the kernels read it."""

    def __init__(self, batch_offsets, n, device):
        if batch_offsets is None:
            self.count, self.batched = 1, 0
            self.bid = zeros(1, dtype=T.int32, device=device)
        else:
            offs = np.asarray(_host(batch_offsets), dtype=np.int64)
            self.count, self.batched = len(offs) - 1, 1
            d = np.arange(n)
            b = np.searchsorted(offs, d, side="right") - 1
            b[(d >= offs[-1]) | (b < 0) | (b >= self.count)] = -1
            self.bid = _to_array(b.astype(np.int32), T.int32, device)


def _dots(acc, batches, pairs):
    """Per-batch dot products of the (a, b) pairs (two per pass): a (len(pairs), batch_count)
    float64 numpy array."""
    m = len(pairs)
    if acc.device.is_cuda:
        _put(acc[:m], 0.0)
    else:
        acc._data[:m].fill(0.0)
    for k in range(0, m, 2):
        af, bf = _flat(pairs[k][0]), _flat(pairs[k][1])
        two = k + 1 < m
        a2, b2 = (_flat(pairs[k + 1][0]), _flat(pairs[k + 1][1])) if two else (af, bf)
        launch(kernels_for(af.dtype).dot, dim=af.shape[0],
               inputs=[af, bf, a2, b2, int(two), acc, k, batches.bid, batches.batched],
               device=af.device)
    return np.array(_host(acc)[:m], dtype=np.float64)
