"""Cooperative tiles on CUDA, continued (:mod:`weft.native.cuda_tiles`): the operations on a
tile's elements (a thread's element writes, stacks of tiles, broadcasts, the lanes' own
elements, components of vectors and matrices) and on tiles of indices. Re-exported as
``_wk.<name>`` by :mod:`weft.native.cuda_helpers`."""
from __future__ import annotations

import numpy as np
from numba import cuda

from .cuda_tiles import _dev, tile_copy, tile_fill, tile_view


# ------------------------------------------------------------------------------ elements, shape
@_dev
def tile_insert_into(out, t, idx, x):
    """``out`` = ``t`` with element ``idx`` (a tuple) set to ``x``: every thread writes its own
    element (threads writing one element write the same value: the same scalar code)."""
    tile_copy(out, t)
    out[idx] = x
    cuda.syncthreads()


@_dev
def tile_add_at_into(out, t, idx, x, has):
    """``out`` = ``t`` with the ``x`` of every thread whose ``has`` holds added into its element
    ``idx`` (a tuple), atomically: Warp's ``tile_add_inplace`` (``t[i, j] += x`` by each thread
    of the block) and ``tile_scatter_add``."""
    tile_copy(out, t)
    if has:
        cuda.atomic.add(out, idx, x)
    cuda.syncthreads()


@_dev
def tile_add_at_vec_into(out, t, idx, x, has):
    """``tile_add_at_into`` of a tile of vectors or matrices: the components ``x`` (a tuple)
    of every thread whose ``has`` holds added into element ``idx``, each atomically."""
    tile_copy(out, t)
    if has:
        v = out[idx]
        f = tile_view(v, v.size)
        for k in range(len(x)):
            cuda.atomic.add(f, k, x[k])
    cuda.syncthreads()


@_dev
def tile_and_at_into(out, t, idx, x):
    """``out`` = ``t`` with every thread's ``x`` and-ed into element ``idx``, atomically."""
    tile_copy(out, t)
    cuda.atomic.and_(out, idx, x)
    cuda.syncthreads()


@_dev
def tile_or_at_into(out, t, idx, x):
    """``out`` = ``t`` with every thread's ``x`` or-ed into element ``idx``, atomically."""
    tile_copy(out, t)
    cuda.atomic.or_(out, idx, x)
    cuda.syncthreads()


@_dev
def tile_xor_at_into(out, t, idx, x):
    """``out`` = ``t`` with every thread's ``x`` xor-ed into element ``idx``, atomically."""
    tile_copy(out, t)
    cuda.atomic.xor(out, idx, x)
    cuda.syncthreads()


@_dev
def tile_set_at_into(out, t, idx, x, has):
    """``out`` = ``t`` with the ``x`` of every thread whose ``has`` holds written into its
    element ``idx``: Warp's ``tile_scatter_masked`` (threads writing one element: one wins)."""
    tile_copy(out, t)
    if has:
        out[idx] = x
    cuda.syncthreads()


@_dev
def tile_zero_at_masked_into(out, g, idx, has):
    """``out`` = ``g`` cleared at the element ``idx`` of every thread whose ``has`` holds (the
    adjoint of ``tile_set_at_into``: what was overwritten has no derivative)."""
    tile_copy(out, g)
    if has:
        out[idx] = 0
    cuda.syncthreads()


@_dev
def tile_stack_init(buf, count):
    """A block's empty tile stack: zero values, a zero count (Warp's ``tile_stack_t``)."""
    tile_fill(buf, 0)
    if cuda.threadIdx.x == 0:
        count[0] = 0
    cuda.syncthreads()


@_dev
def tile_stack_push(count, capacity, has):
    """The slot this thread's push takes (the caller writes its value there), or -1 (no value,
    or the stack is full): slots by an atomic on the count, which is then clamped to the
    capacity, between barriers (Warp's ``tile_stack_push``)."""
    cuda.syncthreads()
    slot = -1
    if has:
        slot = cuda.atomic.add(count, 0, 1)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and count[0] > capacity:
        count[0] = capacity
    cuda.syncthreads()
    return np.int32(slot if 0 <= slot < capacity else -1)


@_dev
def tile_stack_pop(count):
    """The slot this thread's pop takes (the caller reads its value), or -1 (the stack was
    empty): every thread pops, the count clamped to zero after (Warp's ``tile_stack_pop``)."""
    cuda.syncthreads()
    slot = cuda.atomic.add(count, 0, -1) - 1
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and count[0] < 0:
        count[0] = 0
    cuda.syncthreads()
    return np.int32(slot if slot >= 0 else -1)


@_dev
def tile_stack_clear(count):
    """An empty stack, between barriers (no thread still reads the count)."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        count[0] = 0
    cuda.syncthreads()


@_dev
def tile_onehot_into(out, idx, g):
    """``out`` = zeros but, at ``idx``, the sum of every thread's ``g`` (the adjoint of reading
    an element: each thread of the block read it, as Warp's ``adj_extract`` of a shared tile
    adds every thread's adjoint)."""
    tile_fill(out, 0)
    cuda.atomic.add(out, idx, g)
    cuda.syncthreads()


@_dev
def _source(k, shape, padded):
    """The flat index in a tile of shape ``padded`` of element ``k`` (flat) of its broadcast
    to ``shape`` (same rank)."""
    src = 0
    stride = 1
    rem = k
    for ax in range(len(shape) - 1, -1, -1):
        i = rem % shape[ax]
        rem //= shape[ax]
        if padded[ax] != 1:
            src += i * stride
        stride *= padded[ax]
    return src


@_dev
def tile_broadcast_into(out, t, padded):
    """``out`` = ``t`` (its shape left-padded with ones to ``padded``) broadcast to
    ``out``'s shape."""
    cuda.syncthreads()
    fo = tile_view(out, out.size)
    ft = tile_view(t, t.size)
    for e in range(cuda.threadIdx.x, fo.size, cuda.blockDim.x):
        fo[e] = ft[_source(e, out.shape, padded)]
    cuda.syncthreads()


@_dev
def tile_unbroadcast_into(out, g, padded):
    """The adjoint of :func:`tile_broadcast_into`: ``g`` summed over the broadcast axes into
    ``out`` (the source's shape; each element's terms in increasing order, as the CPU)."""
    cuda.syncthreads()
    fo = tile_view(out, out.size)
    fg = tile_view(g, g.size)
    for e in range(cuda.threadIdx.x, fo.size, cuda.blockDim.x):
        s = fo.dtype.type(0)
        for k in range(fg.size):
            if _source(k, g.shape, padded) == e:
                s += fg[k]
        fo[e] = s
    cuda.syncthreads()


@_dev
def tile_copy1(out, v):
    """``out`` = ``v`` (a view of a tile: a slice, perhaps strided), converted to ``out``'s
    dtype."""
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, out.shape[0], cuda.blockDim.x):
        out[e] = v[e]
    cuda.syncthreads()


@_dev
def tile_copy2(out, v):
    cuda.syncthreads()
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        out[i, j] = v[i, j]
    cuda.syncthreads()


@_dev
def tile_of_lanes_into(out, x):
    """``wp.tile(x)``: thread ``l``'s ``x`` in ``out[l]``."""
    cuda.syncthreads()
    out[cuda.threadIdx.x] = x
    cuda.syncthreads()


@_dev
def tile_of_lanes_cols_into(out, v):
    """``wp.tile(v)`` of vectors: thread ``l``'s components in column ``l``."""
    cuda.syncthreads()
    for k in range(out.shape[0]):
        out[k, cuda.threadIdx.x] = v[k]
    cuda.syncthreads()


@_dev
def tile_of_lanes_rows_into(out, v):
    """``wp.tile(v, preserve_type=True)`` (or of a matrix, quaternion, transform): thread
    ``l``'s components (flat) as element ``l``."""
    cuda.syncthreads()
    f = tile_view(out, (out.shape[0], out.size // out.shape[0]))
    for k in range(f.shape[1]):
        f[cuda.threadIdx.x, k] = v[k]
    cuda.syncthreads()


@_dev
def tile_from_lane_into(out, x, idx):
    """``tile_from_thread``: thread ``idx`` fills ``out`` with its ``x``."""
    cuda.syncthreads()
    if cuda.threadIdx.x == idx:
        f = tile_view(out, out.size)
        for e in range(f.size):
            f[e] = x
    cuda.syncthreads()


@_dev
def tile_lane_value(t):
    """``wp.untile(t)``: the thread's element (the tile is whole: its operation ended with a
    barrier)."""
    return t[cuda.threadIdx.x]


@_dev
def tile_lane_at(t, k):
    """Component ``k`` of the thread's column of an ``(n, block_dim)`` tile."""
    return t[k, cuda.threadIdx.x]


@_dev
def tile_lane_comp(t, k):
    """Component ``k`` (flat) of the thread's element of a tile of vectors, matrices, ..."""
    return tile_view(t, (t.shape[0], t.size // t.shape[0]))[cuda.threadIdx.x, k]


@_dev
def tile_set1(v, x):
    """Every element of ``v`` (a view of a tile, perhaps strided) = ``x``."""
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, v.shape[0], cuda.blockDim.x):
        v[e] = x
    cuda.syncthreads()


@_dev
def tile_set2(v, x):
    cuda.syncthreads()
    n = v.shape[1]
    for e in range(cuda.threadIdx.x, v.size, cuda.blockDim.x):
        i = e // n
        v[i, e - i * n] = x
    cuda.syncthreads()


@_dev
def tile_arange_into(out):
    """``out[e] = e`` (``np.arange``, then the generated code's scaling)."""
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, out.shape[0], cuda.blockDim.x):
        out[e] = e
    cuda.syncthreads()


# ------------------------------------------------------------------------------ vectors, matrices
# (a tile of vectors or matrices holds its elements' components as trailing dimensions, as on
# the CPU; loads, stores and atomic adds take them as further axes at offset 0)
@_dev
def tile_sum_vec_into(out, t):
    """``out[0, c]`` = the sum over the tile's elements of component ``c``, in order."""
    k = out.shape[1]
    f = tile_view(t, (t.size // k, k))
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        for c in range(k):
            s = f[0, c] - f[0, c]
            for i in range(f.shape[0]):
                s += f[i, c]
            out[0, c] = s
    cuda.syncthreads()


@_dev
def tile_sum_vec_adj_into(out, t, g):
    """The adjoint of :func:`tile_sum_vec_into`: ``g``'s components in every element."""
    k = g.shape[1]
    f = tile_view(out, (out.size // k, k))
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        f[e // k, e % k] = g[0, e % k]
    cuda.syncthreads()


@_dev
def tile_insert_vec_into(out, t, idx, x):
    """``out`` = ``t`` with element ``idx`` set to the components ``x`` (a tuple): every thread
    writes its own element (threads writing one element write the same value: the same scalar
    code), as ``tile_insert_into``."""
    tile_copy(out, t)
    v = out[idx]
    f = tile_view(v, v.size)
    for k in range(len(x)):
        f[k] = x[k]
    cuda.syncthreads()


@_dev
def tile_onehot_vec_into(out, idx, g):
    """``out`` = zeros but the sum of every thread's components ``g`` at element ``idx``."""
    tile_fill(out, 0)
    v = out[idx]
    f = tile_view(v, v.size)
    for k in range(len(g)):
        cuda.atomic.add(f, k, g[k])
    cuda.syncthreads()


@_dev
def tile_claim(owner, idx):
    """``owner[idx]`` = the lowest thread asking for element ``idx`` (the one that takes the
    adjoint of the element it wrote)."""
    tile_fill(owner, 2147483647)
    cuda.atomic.min(owner, idx, cuda.threadIdx.x)
    cuda.syncthreads()


# ------------------------------------------------------------------------------ index tiles
@_dev
def tile_take1_into(out, t, ii):
    """``out = t[ii]`` (``ii`` a tile of indices)."""
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, out.shape[0], cuda.blockDim.x):
        out[e] = t[ii[e]]
    cuda.syncthreads()


@_dev
def tile_take_rows_into(out, t, ii):
    """``out = t[ii, :]``."""
    cuda.syncthreads()
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        out[e // n, e % n] = t[ii[e // n], e % n]
    cuda.syncthreads()


@_dev
def tile_take_cols_into(out, t, ii):
    """``out = t[:, ii]``."""
    cuda.syncthreads()
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        out[e // n, e % n] = t[e // n, ii[e % n]]
    cuda.syncthreads()


@_dev
def tile_put1_add(t, ii, g):
    """``t[ii] += g`` in place, repeated indices adding up (the adjoint of ``t[ii]``)."""
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, g.shape[0], cuda.blockDim.x):
        cuda.atomic.add(t, ii[e], g[e])
    cuda.syncthreads()


@_dev
def tile_put_rows_add(t, ii, g):
    cuda.syncthreads()
    n = g.shape[1]
    for e in range(cuda.threadIdx.x, g.size, cuda.blockDim.x):
        cuda.atomic.add(t, (ii[e // n], e % n), g[e // n, e % n])
    cuda.syncthreads()


@_dev
def tile_put_cols_add(t, ii, g):
    cuda.syncthreads()
    n = g.shape[1]
    for e in range(cuda.threadIdx.x, g.size, cuda.blockDim.x):
        cuda.atomic.add(t, (e // n, ii[e % n]), g[e // n, e % n])
    cuda.syncthreads()
