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

The operations on a tile's elements and on tiles of indices are in
:mod:`weft.native.cuda_tile_elements`.
"""
from __future__ import annotations

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
