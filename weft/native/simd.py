"""Short SIMD vectors for weft's own numeric cores: what LLVM's vectorisers do not give Numba.

Numba runs LLVM's loop vectoriser but not its SLP vectoriser, so a loop written with several
independent accumulators (the partial sums of a reduction, a block of a matrix product's
outputs kept across the k loop) compiles to scalar code, and a loop the loop vectoriser does
take carries run-time alias checks (Numba tells LLVM nothing about which arrays may overlap).
These functions are LLVM vectors (``<w x T>``) in Numba code: a loop over them runs one vector
instruction per step, in an order the code fixes (nothing is reassociated: the results are
the same bits on every machine, whatever its vector width).

Each function is plain Python + NumPy as well (a vector is then a 1-D array of ``w``
elements), so the cores that use them still run uncompiled (``NUMBA_DISABLE_JIT=1``, the tile
rules' registry walk). Compiled, a vector is an LLVM value; the width ``w`` must be a
constant of the calling code.

- ``vload(a, i, w)``: elements ``i`` to ``i + w`` of a C-contiguous array in row-major order
  (``a.reshape(-1)[i:i + w]``; no bounds check; a 1-D array must be contiguous);
- ``vstore(a, i, v)``: ``a.reshape(-1)[i:i + w] = v``;
- ``vsplat(x, w)``: ``w`` copies of the scalar ``x``;
- ``vfma(x, y, acc)``: ``x * y + acc`` per lane, fused (one rounding, LLVM's ``llvm.fma``;
  uncompiled it rounds twice) for floats, wrapping for integers;
- ``vadd(x, y)``: ``x + y`` per lane;
- ``vsum(v)``: the sum of the lanes, pairwise: lane ``k`` plus lane ``k + w/2``, halving until
  one is left (``w`` a power of two).
"""
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, models, overload, register_model

from ..core.diskcache import njit


class Vec(types.Type):
    """Numba's type of ``w`` lanes of the scalar type ``dtype`` (an LLVM vector)."""

    def __init__(self, dtype, width):
        self.dtype = dtype
        self.width = width
        super().__init__(name=f"weft.Vec({dtype}, {width})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        elem = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(elem, fe_type.width))


def _flat(a):
    """Whether ``a`` is an array type whose elements a flat index reaches (1-D, or
    C-contiguous)."""
    return isinstance(a, types.Array) and (a.ndim == 1 or a.layout == "C")


def _is_float(t):
    return isinstance(t, types.Float)


def _pointer(context, builder, aryty, ary, index, indexty):
    data = context.make_array(aryty)(context, builder, ary).data
    i = context.cast(builder, index, indexty, types.intp)
    return builder.gep(data, [i])


def _align(context, dtype):
    return context.get_abi_sizeof(context.get_value_type(dtype))


# ---------------------------------------------------------------------------- plain Python
def vload(a, i, w):
    return a.reshape(-1)[i:i + w].copy()


def vstore(a, i, v):
    a.reshape(-1)[i:i + v.shape[0]] = v


def vsplat(x, w):
    return np.full(w, x)


def vfma(x, y, acc):
    return x * y + acc


def vadd(x, y):
    return x + y


def vsum(v):
    w = v.shape[0]
    while w > 1:
        w //= 2
        v = v[:w] + v[w:2 * w]
    return v[0]


# ---------------------------------------------------------------------------- compiled
@intrinsic
def _vload(typingctx, a, i, w):
    if not (_flat(a) and isinstance(w, types.IntegerLiteral)):
        return None
    vt = Vec(a.dtype, w.literal_value)

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        vptr = builder.bitcast(ptr, context.get_value_type(vt).as_pointer())
        return builder.load(vptr, align=_align(context, a.dtype))
    return vt(a, i, w), codegen


@intrinsic
def _vstore(typingctx, a, i, v):
    if not (_flat(a) and isinstance(v, Vec) and v.dtype == a.dtype):
        return None

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        vptr = builder.bitcast(ptr, args[2].type.as_pointer())
        builder.store(args[2], vptr, align=_align(context, a.dtype))
        return context.get_dummy_value()
    return types.none(a, i, v), codegen


@intrinsic
def _vsplat(typingctx, x, w):
    if not (isinstance(x, (types.Float, types.Integer)) and isinstance(w, types.IntegerLiteral)):
        return None
    vt = Vec(x, w.literal_value)

    def codegen(context, builder, sig, args):
        vty = context.get_value_type(vt)
        one = builder.insert_element(ir.Constant(vty, ir.Undefined), args[0],
                                     ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined),
                                      ir.Constant(ir.VectorType(ir.IntType(32), vt.width),
                                                  [0] * vt.width))
    return vt(x, w), codegen


@intrinsic
def _vfma(typingctx, x, y, acc):
    if not (isinstance(x, Vec) and x == y == acc):
        return None

    def codegen(context, builder, sig, args):
        if _is_float(x.dtype):
            vty = args[0].type
            name = f"llvm.fma.v{x.width}f{x.dtype.bitwidth}"
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty] * 3),
                                                name)
            return builder.call(fn, list(args))
        return builder.add(builder.mul(args[0], args[1]), args[2])
    return x(x, y, acc), codegen


@intrinsic
def _vadd(typingctx, x, y):
    if not (isinstance(x, Vec) and x == y):
        return None

    def codegen(context, builder, sig, args):
        return (builder.fadd if _is_float(x.dtype) else builder.add)(*args)
    return x(x, y), codegen


@intrinsic
def _vsum(typingctx, v):
    if not (isinstance(v, Vec) and v.width & (v.width - 1) == 0):
        return None

    def codegen(context, builder, sig, args):
        add = builder.fadd if _is_float(v.dtype) else builder.add
        x = args[0]
        w = v.width
        undef = ir.Constant(x.type, ir.Undefined)
        while w > 1:
            w //= 2
            lo = builder.shuffle_vector(x, undef, ir.Constant(ir.VectorType(ir.IntType(32), w),
                                                              list(range(w))))
            hi = builder.shuffle_vector(x, undef, ir.Constant(ir.VectorType(ir.IntType(32), w),
                                                              list(range(w, 2 * w))))
            x = add(lo, hi)
            undef = ir.Constant(x.type, ir.Undefined)
        return builder.extract_element(x, ir.Constant(ir.IntType(32), 0))
    return v.dtype(v), codegen


@overload(vload, prefer_literal=True)
def _ol_vload(a, i, w):
    return lambda a, i, w: _vload(a, i, w)


@overload(vstore)
def _ol_vstore(a, i, v):
    return lambda a, i, v: _vstore(a, i, v)


@overload(vsplat, prefer_literal=True)
def _ol_vsplat(x, w):
    return lambda x, w: _vsplat(x, w)


@overload(vfma)
def _ol_vfma(x, y, acc):
    return lambda x, y, acc: _vfma(x, y, acc)


@overload(vadd)
def _ol_vadd(x, y):
    return lambda x, y: _vadd(x, y)


@overload(vsum)
def _ol_vsum(v):
    return lambda v: _vsum(v)


# ---------------------------------------------------------------------------- cores
# Each core below is one function: compiled, its vectors are LLVM's; uncompiled (the Python
# fallbacks above), NumPy's, in the same order.
def sum_flat(f):
    """The sum of the 1-D array ``f`` in a fixed order that vectorises: with at least 32
    elements, 32 running sums (element ``k`` into sum ``k % 32``, two 16-lane vectors) over the
    full blocks of 32, then added pairwise (``vsum``), then the last ``n % 32`` elements in
    order; fewer than 32 are summed in order. Compiled or not, the same bits."""
    if f.strides[0] != f.itemsize:
        f = np.ascontiguousarray(f)
    n = f.shape[0]
    m = n - n % 32
    s = f.dtype.type(0)
    if m:
        a0 = vload(f, 0, 16)
        a1 = vload(f, 16, 16)
        for k in range(32, m, 32):
            a0 = vadd(a0, vload(f, k, 16))
            a1 = vadd(a1, vload(f, k + 16, 16))
        s = vsum(vadd(a0, a1))
    for k in range(m, n):
        s += f[k]
    return s


@overload(sum_flat, target="cpu")
def _ol_sum_flat(f):
    if isinstance(f, types.Array) and f.ndim == 1:
        return sum_flat


def copy_block(dst, d0, src, s0, n):
    """Elements ``s0`` to ``s0 + n`` of ``src`` in row-major order into ``dst`` from ``d0``:
    ``dst.reshape(-1)[d0:d0 + n] = src.reshape(-1)[s0:s0 + n]``, both C-contiguous at run
    time (their type may say otherwise: ``np.ascontiguousarray`` then returns the array
    itself). Compiled, 16 elements a step: a whole tile of full rows is one flat copy instead
    of a loop per row."""
    dst.reshape(-1)[d0:d0 + n] = src.reshape(-1)[s0:s0 + n]


@overload(copy_block, target="cpu")
def _ol_copy_block(dst, d0, src, s0, n):
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)):
        return None
    same = dst.dtype == src.dtype   # else element by element, converted

    def impl(dst, d0, src, s0, n):
        d = np.ascontiguousarray(dst)   # C types: the arrays themselves, no reshape's call
        s = np.ascontiguousarray(src)
        if same:
            k = 0
            while k + 16 <= n:
                vstore(d, d0 + k, vload(s, s0 + k, 16))
                k += 16
            while k < n:
                vstore(d, d0 + k, vload(s, s0 + k, 1))
                k += 1
        else:
            df = d.reshape(-1)
            sf = s.reshape(-1)
            for k in range(n):
                df[d0 + k] = sf[s0 + k]
    return impl


def gemm(a, b):
    """``a @ b`` for ``a`` (M, K) and ``b`` (K, N), in ``a``'s dtype: each element summed over
    k in increasing order from zero, each step a multiply-add, fused when compiled (as Warp's
    CPU GEMM: ``muladd``), rounded twice uncompiled. Blocks of four rows by sixteen columns
    are kept in eight-lane vectors across the k loop (``_gemm_into``)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b).astype(a.dtype, copy=False)
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    _gemm_into_py(a, b, c)
    return c


@overload(gemm, target="cpu")
def _ol_gemm(a, b):
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)
            and a.ndim == 2 and b.ndim == 2):
        return None
    same = a.dtype == b.dtype

    def impl(a, b):
        a = np.ascontiguousarray(a)
        b = np.ascontiguousarray(b) if same else b.astype(a.dtype)
        c = np.empty((a.shape[0], b.shape[1]), a.dtype)
        _gemm_into(a, b, c)
        return c
    return impl


def _gemm_into(a, b, c):
    """``c[...] = a @ b`` for C-contiguous ``a``, ``b``, ``c`` of one dtype."""
    M, K = a.shape
    N = b.shape[1]
    z = vsplat(a.dtype.type(0), 8)
    j = 0
    while j + 16 <= N:
        i = 0
        while i + 4 <= M:
            c0 = c1 = c2 = c3 = d0 = d1 = d2 = d3 = z
            for k in range(K):
                b0 = vload(b, k * N + j, 8)
                b1 = vload(b, k * N + j + 8, 8)
                p = vsplat(a[i, k], 8)
                c0 = vfma(p, b0, c0)
                d0 = vfma(p, b1, d0)
                p = vsplat(a[i + 1, k], 8)
                c1 = vfma(p, b0, c1)
                d1 = vfma(p, b1, d1)
                p = vsplat(a[i + 2, k], 8)
                c2 = vfma(p, b0, c2)
                d2 = vfma(p, b1, d2)
                p = vsplat(a[i + 3, k], 8)
                c3 = vfma(p, b0, c3)
                d3 = vfma(p, b1, d3)
            vstore(c, i * N + j, c0)
            vstore(c, i * N + j + 8, d0)
            vstore(c, (i + 1) * N + j, c1)
            vstore(c, (i + 1) * N + j + 8, d1)
            vstore(c, (i + 2) * N + j, c2)
            vstore(c, (i + 2) * N + j + 8, d2)
            vstore(c, (i + 3) * N + j, c3)
            vstore(c, (i + 3) * N + j + 8, d3)
            i += 4
        while i < M:
            c0 = d0 = z
            for k in range(K):
                p = vsplat(a[i, k], 8)
                c0 = vfma(p, vload(b, k * N + j, 8), c0)
                d0 = vfma(p, vload(b, k * N + j + 8, 8), d0)
            vstore(c, i * N + j, c0)
            vstore(c, i * N + j + 8, d0)
            i += 1
        j += 16
    if j + 8 <= N:
        i = 0
        while i + 4 <= M:
            c0 = c1 = c2 = c3 = z
            for k in range(K):
                b0 = vload(b, k * N + j, 8)
                c0 = vfma(vsplat(a[i, k], 8), b0, c0)
                c1 = vfma(vsplat(a[i + 1, k], 8), b0, c1)
                c2 = vfma(vsplat(a[i + 2, k], 8), b0, c2)
                c3 = vfma(vsplat(a[i + 3, k], 8), b0, c3)
            vstore(c, i * N + j, c0)
            vstore(c, (i + 1) * N + j, c1)
            vstore(c, (i + 2) * N + j, c2)
            vstore(c, (i + 3) * N + j, c3)
            i += 4
        while i < M:
            c0 = z
            for k in range(K):
                c0 = vfma(vsplat(a[i, k], 8), vload(b, k * N + j, 8), c0)
            vstore(c, i * N + j, c0)
            i += 1
        j += 8
    z1 = vsplat(a.dtype.type(0), 1)
    while j < N:
        for i in range(M):
            s = z1
            for k in range(K):
                s = vfma(vsplat(a[i, k], 1), vload(b, k * N + j, 1), s)
            vstore(c, i * N + j, s)
        j += 1


_gemm_into_py = _gemm_into
_gemm_into = njit(nogil=True, error_model="numpy")(_gemm_into)
