"""Cooperative tiles on CUDA: the device functions that generated CUDA code calls for tile
operations (``_wk.<name>``, re-exported by :mod:`weft.native.cuda_helpers`).

A tile block is a CUDA thread block: every thread of the block is one of its lanes, runs the
kernel's scalar code, and takes part in each tile operation. A tile lives in shared memory,
allocated by the generated kernel itself with its static shape (``cuda.shared.array``; see
:mod:`weft.transpiler.cuda_tiles`), and each operation here writes its result into the buffer
it is given: lane ``l`` of ``n`` computes elements ``l, l + n, l + 2n, ...``. Every operation
starts with a barrier (no lane writes a buffer another lane may still be reading) and ends with
one (every lane sees the whole result).

The order of every sum is the CPU helpers' (:mod:`weft.native.tiles`): each element of a
product is summed over ``k`` in increasing order, a reduction to one value adds element ``k``
into running sum ``k % 32`` and the 32 pairwise, so a real GPU (which fuses multiply-adds as
the CPU cores are told to) gives the CPU's values. Reductions to one value are computed by
every lane from the shared tile (no atomics, so the result does not depend on the order in
which lanes arrive).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .cuda_views import tile_view  # views of tiles' buffers, made in place

_dev = cuda.jit(device=True)

#: the portable float16 conversions and atomic add, bound by :mod:`weft.native.cuda_helpers`
#: when it imports this module (before anything compiles)
h2f = f2h = atomic_add_f16 = None


@_dev
def tile_lane():
    return cuda.threadIdx.x


@_dev
def tile_lanes():
    return cuda.blockDim.x


@_dev
def tile_sync():
    cuda.syncthreads()


@_dev
def block_index(p, dim, tid_dims):
    """The flat launch index that ``wp.tid()``'s ``tid_dims`` indices are taken from, for
    thread ``p`` of a tiled launch over ``dim`` (the grid, then the block's threads): the
    block's index when the kernel does not unpack the lane (``i, j = wp.tid()``), else ``p``."""
    if len(dim) > tid_dims and tid_dims > 1:
        return p // dim[len(dim) - 1]
    return p


# ------------------------------------------------------------------------------ construction
@_dev
def tile_fill(out, x):
    """Every element of ``out`` (a tile of scalars) = ``x``."""
    cuda.syncthreads()
    f = tile_view(out, out.size)
    for e in range(cuda.threadIdx.x, f.size, cuda.blockDim.x):
        f[e] = x
    cuda.syncthreads()


@_dev
def tile_fill_components(out, v):
    """Every element of ``out`` (a tile of vectors or matrices, their components its trailing
    axes) = ``v``, the components' tuple."""
    cuda.syncthreads()
    f = tile_view(out, out.size)
    n = len(v)
    for e in range(cuda.threadIdx.x, f.size, cuda.blockDim.x):
        f[e] = v[e % n]
    cuda.syncthreads()


@_dev
def tile_copy(out, t):
    cuda.syncthreads()
    f = tile_view(out, out.size)
    g = tile_view(t, t.size)
    for e in range(cuda.threadIdx.x, f.size, cuda.blockDim.x):
        f[e] = g[e]
    cuda.syncthreads()


def _elementwise(fn_name, params, expr):
    """Device function ``fn_name(out, *params)``: ``out``'s element ``e`` = ``expr`` (of the
    flat views ``fa``/``fb`` of tile operands ``a``/``b`` at ``e``, or scalars ``x``), each
    thread taking its share of the elements between two barriers. (Generated from a template:
    numba-cuda types each variant separately.)"""
    views = "".join(f"    f{p} = tile_view({p}, {p}.size)\n" for p in params if p != "x")
    src = (f"def {fn_name}(out, {', '.join(params)}):\n"
           "    cuda.syncthreads()\n"
           "    f = tile_view(out, out.size)\n" + views +
           "    for e in range(cuda.threadIdx.x, f.size, cuda.blockDim.x):\n"
           f"        f[e] = {expr}\n"
           "    cuda.syncthreads()\n")
    namespace = {}
    exec(src, globals(), namespace)  # noqa: S102 - a fixed template
    globals()[fn_name] = _dev(namespace[fn_name])


# ``a + b``, ``a - b``, ``a * b`` of two tiles (tt), a tile and a scalar (ts), or the reverse
for _op, _sym in (("add", "+"), ("sub", "-"), ("mul", "*")):
    _elementwise(f"tile_{_op}_tt", ("a", "b"), f"fa[e] {_sym} fb[e]")
    _elementwise(f"tile_{_op}_ts", ("a", "x"), f"fa[e] {_sym} x")
    _elementwise(f"tile_{_op}_st", ("x", "b"), f"x {_sym} fb[e]")


@_dev
def tile_transpose_into(out, t):
    cuda.syncthreads()
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        out[i, j] = t[j, i]
    cuda.syncthreads()


# ------------------------------------------------------------------------------ memory
def _ranked(fn_name, rank, params, body):
    """Device function ``fn_name(*params)`` over the elements of a tile of ``rank`` axes:
    thread ``l`` of ``n`` takes flat elements ``l, l + n, ...`` of the tile named ``shape``'s
    value (its index ``k0, k1, ...``, the array's ``p0 = o0 + k0, ...``, ``inside`` when the
    array holds it), between two barriers. Generated from a template for each rank: numba-cuda
    has no indexing by a tuple built in a loop."""
    ks = [f"k{d}" for d in range(rank)]
    unravel = "".join(f"        k{d} = rem % {{shape}}.shape[{d}]\n        rem //= {{shape}}.shape[{d}]\n"
                      for d in range(rank - 1, 0, -1)) + "        k0 = rem\n"
    ps = "".join(f"        p{d} = o{d} + k{d}\n" for d in range(rank))
    inside = " and ".join(f"0 <= p{d} < {{array}}.shape[{d}]" for d in range(rank))
    fill = {"k": ", ".join(ks), "p": ", ".join(f"p{d}" for d in range(rank)),
            "pt": "p0" if rank == 1 else "(" + ", ".join(f"p{d}" for d in range(rank)) + ")"}
    src = (f"def {fn_name}({', '.join(params)}):\n"
           "    cuda.syncthreads()\n"
           "    for e in range(cuda.threadIdx.x, {shape}.size, cuda.blockDim.x):\n"
           "        rem = e\n" + unravel + ps +
           f"        inside = {inside}\n" + body + "    cuda.syncthreads()\n")
    shape, array = params[0] if fn_name.endswith("_into") else params[-1], \
        params[1] if fn_name.endswith("_into") else params[0]
    src = src.format(shape=shape, array=array, **fill).replace("{{", "{").replace("}}", "}")
    namespace = {}
    exec(src, globals(), namespace)  # noqa: S102 - a fixed template
    globals()[fn_name] = _dev(namespace[fn_name])


for _r in (1, 2, 3, 4):
    _offs = [f"o{_d}" for _d in range(_r)]
    # a load: ``out`` = the array's region at the offsets, zero outside it (Warp's padding)
    _ranked(f"tile_load{_r}_into", _r, ["out", "a"] + _offs,
            "        out[{k}] = a[{p}] if inside else 0\n")
    # a store: the tile into the region, skipping the elements outside the array
    _ranked(f"tile_store{_r}", _r, ["a"] + _offs + ["t"],
            "        if inside:\n            a[{p}] = t[{k}]\n")
    # the adjoint of a store: ``out`` = the region's adjoint, each element exchanged with
    # zero atomically, so that of the blocks storing one region exactly one takes it
    _ranked(f"tile_load_reset{_r}_into", _r, ["out", "a"] + _offs,
            "        out[{k}] = atomic_exch(a, {pt}, a.dtype.type(0)) if inside else 0\n")
    # an atomic add of the tile into the region; ``out`` = the values replaced
    _ranked(f"tile_atomic_add{_r}_into", _r, ["out", "a"] + _offs + ["t"],
            "        out[{k}] = cuda.atomic.add(a, {pt}, t[{k}]) if inside else 0\n")
    # the adjoint of a load: the tile's adjoint added into the array's atomically (other
    # blocks may load the same elements)
    _ranked(f"tile_load_adj{_r}", _r, ["adj"] + _offs + ["g"],
            "        if inside:\n            cuda.atomic.add(adj, {pt}, g[{k}])\n")
for _r in (1, 2):  # ... into a float16 array's half bits
    _ranked(f"tile_load_adj_h{_r}", _r, ["adj"] + [f"o{_d}" for _d in range(_r)] + ["g"],
            "        if inside:\n            atomic_add_f16(adj, {pt}, g[{k}])\n")



@_dev
def tile_store_one(a, o0, x):
    """``tile_store1`` of a one-element tile held as the scalar ``x`` (lane 0 writes)."""
    if cuda.threadIdx.x == 0 and 0 <= o0 < a.shape[0]:
        a[o0] = x
    cuda.syncthreads()


# ------------------------------------------------------------------------------ products
@_dev
def _dot(a, b, i, j, ta, tb):
    """Row ``i`` of ``a`` (or of ``a.T`` when ``ta``) times column ``j`` of ``b`` (of ``b.T``
    when ``tb``), summed over k in increasing order."""
    K = a.shape[0] if ta else a.shape[1]
    s = a.dtype.type(0)
    for k in range(K):
        x = a[k, i] if ta else a[i, k]
        y = b[j, k] if tb else b[k, j]
        s += x * y
    return s


@_dev
def _product(out, a, b, ta, tb):
    cuda.syncthreads()
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        out[i, j] = _dot(a, b, i, j, ta, tb)
    cuda.syncthreads()


@_dev
def tile_matmul_into(out, a, b):
    """``out = a @ b``."""
    _product(out, a, b, False, False)


@_dev
def tile_matmul_adj_a_into(out, g, b):
    """``out = g @ b.T``."""
    _product(out, g, b, False, True)


@_dev
def tile_matmul_adj_b_into(out, a, g):
    """``out = a.T @ g``."""
    _product(out, a, g, True, False)


@_dev
def tile_matmul_acc_into(out, a, b, c, alpha, beta):
    """``out = alpha * (a @ b) + beta * c`` as the CPU computes it (the product first, then
    the scaling rounded step by step; ``beta == 0`` ignores ``c``). ``out`` may be ``c``
    itself: each lane reads the elements of ``c`` it then writes."""
    cuda.syncthreads()
    n = out.shape[1]
    z = out.dtype.type(0)
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        p = _dot(a, b, i, j, False, False)
        if beta != z:
            out[i, j] = alpha * p + beta * c[i, j]
        else:
            out[i, j] = alpha * p
    cuda.syncthreads()


# ------------------------------------------------------------------------------ reductions
@_dev
def _lane_sum(f, l, m):
    """Running sum ``l`` of the CPU's order: ``f[l] + f[l + 32] + ...`` below ``m``."""
    s = f[l]
    for k in range(l + 32, m, 32):
        s += f[k]
    return s


@_dev
def _pairs16(f, l, m):
    return _lane_sum(f, l, m) + _lane_sum(f, l + 16, m)


@_dev
def _pairs8(f, l, m):
    return _pairs16(f, l, m) + _pairs16(f, l + 8, m)


@_dev
def _pairs4(f, l, m):
    return _pairs8(f, l, m) + _pairs8(f, l + 4, m)


@_dev
def _pairs2(f, l, m):
    return _pairs4(f, l, m) + _pairs4(f, l + 2, m)


@_dev
def tile_sum_scalar(t):
    """The sum of a tile of scalars, in the CPU's order (:func:`weft.native.simd.sum_flat`:
    32 running sums over the full blocks of 32, lane ``l`` plus lane ``l + 16``, halving to
    one, then the rest in order), computed by every lane."""
    f = tile_view(t, t.size)
    n = f.size
    m = n - n % 32
    s = f.dtype.type(0)
    if m:
        s = _pairs2(f, 0, m) + _pairs2(f, 1, m)
    for k in range(m, n):
        s += f[k]
    return s


@_dev
def tile_sum_in_order(t):
    """The sum of a tile of scalars element after element (``np.sum``'s order in the CPU's
    compiled code), computed by every lane."""
    f = tile_view(t, t.size)
    s = f.dtype.type(0)
    for k in range(f.size):
        s += f[k]
    return s


@_dev
def tile_max_scalar(t):
    f = tile_view(t, t.size)
    m = f[0]
    for k in range(1, f.size):
        if f[k] > m:
            m = f[k]
    return m


@_dev
def tile_min_scalar(t):
    f = tile_view(t, t.size)
    m = f[0]
    for k in range(1, f.size):
        if f[k] < m:
            m = f[k]
    return m


@_dev
def _put_one(out, x):
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        out[0] = x
    cuda.syncthreads()


@_dev
def tile_sum_into(out, t):
    _put_one(out, tile_sum_scalar(t))


@_dev
def tile_max_into(out, t):
    _put_one(out, tile_max_scalar(t))


@_dev
def tile_min_into(out, t):
    _put_one(out, tile_min_scalar(t))


@_dev
def tile_argmax_into(out, t):
    f = tile_view(t, t.size)
    m = 0
    for k in range(1, f.size):
        if f[k] > f[m]:
            m = k
    _put_one(out, m)


@_dev
def tile_argmin_into(out, t):
    f = tile_view(t, t.size)
    m = 0
    for k in range(1, f.size):
        if f[k] < f[m]:
            m = k
    _put_one(out, m)


@_dev
def tile_sum_adj_into(out, t, g):
    """The adjoint of ``tile_sum``: ``g[0]`` in every element."""
    tile_fill(out, g[0])


@_dev
def tile_extreme_adj_into(out, t, r, g):
    """The adjoint of ``tile_max``/``tile_min``: all of ``g[0]`` to the first element equal
    to the result ``r[0]``."""
    cuda.syncthreads()
    ft = tile_view(t, t.size)
    first = ft.size
    for k in range(ft.size):
        if ft[k] == r[0]:
            first = k
            break
    fo = tile_view(out, out.size)
    for e in range(cuda.threadIdx.x, fo.size, cuda.blockDim.x):
        fo[e] = g[0] if e == first else 0
    cuda.syncthreads()


# ------------------------------------------------------------------------------ diagonal
@_dev
def tile_diag_add_into(out, a, d):
    """``out`` = ``a`` with ``d[i]`` added to ``a[i, i]`` (tiles of scalars)."""
    cuda.syncthreads()
    n = out.shape[1]
    for e in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        out[i, j] = a[i, j] + d[i] if i == j else a[i, j]
    cuda.syncthreads()


@_dev
def tile_diag_add_adj_into(adj_a, adj_d, a, d, g):
    """The adjoints of ``tile_diag_add``: ``adj_a`` = ``g``, ``adj_d`` = its diagonal."""
    cuda.syncthreads()
    n = g.shape[1]
    for e in range(cuda.threadIdx.x, g.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        adj_a[i, j] = g[i, j]
        if i == j:
            adj_d[i] = g[i, i]
    cuda.syncthreads()


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


# ------------------------------------------------------------------------------ float16
# (a float16 tile holds float32 values rounded to half, as on the CPU; arrays hold half bits.
# ``h2f``, ``f2h`` and ``atomic_add_f16`` are bound by :mod:`weft.native.cuda_helpers`)
_elementwise("tile_h2f_into", ("a",), "h2f(fa[e])")
_elementwise("tile_f2h_into", ("a",), "f2h(fa[e])")
_elementwise("tile_round_f16_into", ("a",), "h2f(f2h(fa[e]))")


@_dev
def tile_addto1(v, g):
    """``v += g`` in place (``v`` a view of a tile: the adjoint of reading a sub-tile)."""
    cuda.syncthreads()
    for e in range(cuda.threadIdx.x, v.shape[0], cuda.blockDim.x):
        v[e] += g[e]
    cuda.syncthreads()


@_dev
def tile_addto2(v, g):
    cuda.syncthreads()
    n = v.shape[1]
    for e in range(cuda.threadIdx.x, v.size, cuda.blockDim.x):
        i = e // n
        j = e - i * n
        v[i, j] += g[i, j]
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
