"""float32 ``tanh`` with the C library's bits, in arithmetic a loop can vectorise.

Generated CPU code spells a float32 ``tanh`` ``np.tanh(x)``, which Numba compiles to a call of
the C library's ``tanhf``, as Warp's CPU code calls it: weft keeps Warp's bits. A call is
opaque to LLVM: a loop over a tile (``wp.tile_map(wp.tanh, t)``) makes one call per element,
17.7 ns each here (glibc 2.36), against NumPy's 3.4 ns SIMD ``tanh``: most of the tile MLP's time
(``benchmarks/bench_tiles.py``).

glibc up to 2.40 computes ``tanhf`` with fdlibm's algorithm: ``expm1f`` of ``2|x|`` (argument
reduction by ``ln 2`` in two parts, a rational approximation, the exponent put back by integer
addition), then ``1 - 2 / (t + 2)`` or ``-t / (t + 2)``, every step a float32 operation.
:func:`tanhf` below repeats those operations in the same order (weft's own code, written from the
algorithm's description), so a C library that runs fdlibm's algorithm gives the same float32 for
every input: checked for all 2**32 inputs against glibc 2.36 (``tests/runtime/test_libm_tanh.py``
checks a sample of every binade and the branches' edges; ``python -m weft.runtime.libm_tanh``
checks them all). Numba compiles it into the kernel (``context.compile_internal``), where LLVM
inlines it and can vectorise the loop around it.

Used only where it is exact: at the first compile of generated CPU code, :func:`variant`
compares this machine's ``tanhf`` with :func:`numpy_tanhf` (the same operations, on numpy
arrays) over 4,096 inputs spread over every branch; any difference (glibc 2.41's correctly
rounded ``tanhf``, musl, another libm), and ``np.tanh`` keeps calling the library. The answer
is part of every kernel's cache key (``cache.key_of``), so a cache moved to a machine with
another C library compiles again. ``WEFT_LIBM_TANH=0`` keeps the library call everywhere.
"""
from __future__ import annotations

import os

import numpy as np


def _f(bits):
    return np.array([bits], np.uint32).view(np.float32)[0]


# fdlibm's float32 constants (their bit patterns, as its source gives them)
LN2_HI, LN2_LO, INV_LN2 = _f(0x3f317180), _f(0x3717f7d1), _f(0x3fb8aa3b)
Q1, Q2, Q3, Q4, Q5 = (_f(0xbd088889), _f(0x3ad00d01), _f(0xb8a670cd), _f(0x36867e54),
                      _f(0xb457edbb))
F0, F_HALF, F1, F2, F3, F6 = (np.float32(v) for v in (0.0, 0.5, 1.0, 2.0, 3.0, 6.0))
F_QUARTER, F_TINY = np.float32(0.25), np.float32(1e-30)


# -- the numpy form: every branch computed, then selected -----------------------------------------

def _bits(a):
    return a.view(np.int32)


def _float(i):
    return i.astype(np.int32).view(np.float32)


def _numpy_expm1f(a):
    """fdlibm's ``expm1f`` for finite float32 ``a`` with ``|a| < 27 ln 2`` or ``0 < a < 88``
    (what ``tanhf`` asks of it)."""
    hx = _bits(a) & 0x7fffffff
    neg = a < F0
    reduced = hx > 0x3eb17218                        # |a| > ln2 / 2
    near = reduced & (hx < 0x3f851592)               # and |a| < 3 ln2 / 2: k = +-1
    k = np.where(near, np.where(neg, -1, 1),
                 np.where(reduced, (INV_LN2 * a + np.where(neg, -F_HALF, F_HALF)).astype(np.int32),
                          0)).astype(np.int32)
    t = k.astype(np.float32)
    hi = np.where(near, np.where(neg, a + LN2_HI, a - LN2_HI), a - t * LN2_HI)
    lo = np.where(near, np.where(neg, -LN2_LO, LN2_LO), t * LN2_LO)
    x = np.where(reduced, hi - lo, a)
    c = np.where(reduced, (hi - x) - lo, F0)
    hfx = F_HALF * x
    hxs = x * hfx
    r1 = F1 + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))))
    t = F3 - r1 * hfx
    e = hxs * ((r1 - t) / (F6 - x * t))
    k0 = x - (x * e - hxs)
    e = (x * (e - c) - c) - hxs
    k_minus_1 = F_HALF * (x - e) - F_HALF
    k_1 = np.where(x < -F_QUARTER, -F2 * (e - (x + F_HALF)), F1 + F2 * (x - e))
    far = _float(_bits(F1 - (e - x)) + (k << 23)) - F1
    low = _float(0x3f800000 - (0x1000000 >> np.clip(k, 0, 22)))
    mid = _float(_bits(low - (e - x)) + (k << 23))
    high = _float(_bits((x - (e + _float((0x7f - np.clip(k, 23, 0x7f)) << 23))) + F1) + (k << 23))
    out = np.where(k == 0, k0, np.where(k == -1, k_minus_1, np.where(k == 1, k_1, np.where(
        (k <= -2) | (k > 56), far, np.where(k < 23, mid, high)))))
    return np.where(~reduced & (hx < 0x33000000), a, out)  # |a| < 2**-25: a itself


def numpy_tanhf(x):
    """fdlibm's ``tanhf`` of a float32 array, elementwise (numpy's float32 operations are the
    C library's)."""
    x = np.asarray(x, np.float32)
    with np.errstate(all="ignore"):
        jx = _bits(x)
        ix = jx & 0x7fffffff
        large = ix >= 0x3f800000                     # |x| >= 1
        t = _numpy_expm1f(np.where(large, F2 * np.abs(x), -F2 * np.abs(x)))
        z = np.where(large, F1 - F2 / (t + F2), -t / (t + F2))
        z = np.where(ix < 0x41b00000, z, F1 - F_TINY)  # |x| >= 22: 1
        out = np.where(jx >= 0, z, -z)
        out = np.where(ix < 0x24000000, x * (F1 + x), out)  # |x| < 2**-55
        out = np.where(ix == 0, x, out)
        return np.where(ix >= 0x7f800000, np.where(jx >= 0, F1 / x + F1, F1 / x - F1), out)


# -- the compiled form ------------------------------------------------------------------------------

_compiled = []


def _kernel_tanhf():
    """fdlibm's ``tanhf`` (its ``expm1f`` within) as plain Python over float32 scalars, for
    Numba: straight-line, every branch computed and one selected (built once: the bit casts and
    the selects are Numba intrinsics)."""
    if _compiled:
        return _compiled[0]
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def as_int(typingctx, x):
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(types.int32))
        return types.int32(types.float32), codegen

    @intrinsic
    def as_float(typingctx, i):
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(types.float32))
        return types.float32(types.int32), codegen

    def _select(ty):
        @intrinsic
        def select(typingctx, c, a, b):
            def codegen(context, builder, sig, args):
                return builder.select(args[0], args[1], args[2])
            return ty(types.boolean, ty, ty), codegen
        return select

    sel_f, sel_i = _select(types.float32), _select(types.int32)
    int32 = np.int32

    def tanhf(x):
        # straight-line: every branch of fdlibm's tanhf and expm1f computed, the one it takes
        # selected (a loop over elements then vectorises); the same operations, in its order
        jx = as_int(x)
        ix = jx & int32(0x7fffffff)
        large = ix >= int32(0x3f800000)              # |x| >= 1: expm1f(2|x|), else of -2|x|
        a = sel_f(large, F2 * abs(x), -F2 * abs(x))
        a = sel_f(ix < int32(0x41b00000), a, F0)     # (|x| >= 22, inf, nan: not used)
        # expm1f(a)
        hx = as_int(a) & int32(0x7fffffff)
        neg = a < F0
        reduced = hx > int32(0x3eb17218)             # |a| > ln2 / 2
        k = sel_i(reduced, sel_i(hx < int32(0x3f851592), sel_i(neg, int32(-1), int32(1)),
                                 int32(INV_LN2 * a + sel_f(neg, -F_HALF, F_HALF))), int32(0))
        t = np.float32(k)
        hi = a - t * LN2_HI                          # (k = +-1: a -+ ln2_hi, lo +-ln2_lo exactly)
        lo = t * LN2_LO
        xr = sel_f(reduced, hi - lo, a)
        c = sel_f(reduced, (hi - xr) - lo, F0)
        hfx = F_HALF * xr
        hxs = xr * hfx
        r1 = F1 + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))))
        t = F3 - r1 * hfx
        e = hxs * ((r1 - t) / (F6 - xr * t))
        k0 = sel_f(hx < int32(0x33000000), a, xr - (xr * e - hxs))  # |a| < 2**-25: a
        e = (xr * (e - c) - c) - hxs
        k_minus_1 = F_HALF * (xr - e) - F_HALF
        k_1 = sel_f(xr < -F_QUARTER, -F2 * (e - (xr + F_HALF)), F1 + F2 * (xr - e))
        scale = k << int32(23)                       # k added to the exponent
        far = as_float(as_int(F1 - (e - xr)) + scale) - F1
        low = as_float(int32(0x3f800000) -
                       (int32(0x1000000) >> sel_i(k < 0, int32(0), sel_i(k > 22, int32(22), k))))
        mid = as_float(as_int(low - (e - xr)) + scale)
        tail = as_float((int32(0x7f) - sel_i(k < 23, int32(23), sel_i(k > 127, int32(127), k)))
                        << int32(23))
        high = as_float(as_int((xr - (e + tail)) + F1) + scale)
        t = sel_f(k == 0, k0, sel_f(k == -1, k_minus_1, sel_f(k == 1, k_1, sel_f(
            (k <= -2) | (k > 56), far, sel_f(k < 23, mid, high)))))
        # tanhf
        z = sel_f(large, F1 - F2 / (t + F2), -t / (t + F2))
        z = sel_f(ix < int32(0x41b00000), z, F1 - F_TINY)
        out = sel_f(jx >= 0, z, -z)
        out = sel_f(ix < int32(0x24000000), x * (F1 + x), out)   # |x| < 2**-55 (and 0)
        return sel_f(ix >= int32(0x7f800000), sel_f(jx >= 0, F1 / x + F1, F1 / x - F1), out)
    _compiled.append(tanhf)
    return _compiled[0]


# -- where it is used -------------------------------------------------------------------------------

def _probe_inputs():
    """4,096 float32 inputs over every branch of :func:`numpy_tanhf`: every binade from 2**-60
    to 2**6 (both signs), the edges of the argument reduction, and the specials."""
    rng = np.random.default_rng(20261202)
    mags = np.ldexp(rng.uniform(1.0, 2.0, 3000), rng.integers(-60, 6, 3000)).astype(np.float32)
    edges = np.array([0.0, 1e-30, 2.0 ** -55, 2.0 ** -25, 0.1733, 0.1734, 0.5198, 0.5199, 1.0,
                      0.99999994, 1.0000001, 9.0, 9.1, 19.6, 19.7, 22.0, 21.999998, 40.0, 88.0,
                      np.inf, np.nan], np.float32)
    near = (edges[:20, None] * (1 + rng.uniform(-1e-3, 1e-3, (20, 20)))).astype(np.float32)
    x = np.concatenate([mags, edges, near.ravel()])
    x = np.concatenate([x, -x])
    return np.resize(x, 4096)


_variant = []


def variant():
    """``"fdlibm"`` when this process's C library ``tanhf`` gives :func:`numpy_tanhf`'s bits over
    the probe inputs (and ``WEFT_LIBM_TANH`` is not 0); ``"libm"`` otherwise. Once per process."""
    if _variant:
        return _variant[0]
    found = "libm"
    if os.environ.get("WEFT_LIBM_TANH", "1") != "0":
        try:
            import ctypes
            fn = ctypes.CDLL("libm.so.6").tanhf  # (what Numba's JIT links: glibc's)
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            x = _probe_inputs()
            theirs = np.array([fn(float(v)) for v in x], np.float32)
            ours = numpy_tanhf(x)
            same = (theirs.view(np.uint32) == ours.view(np.uint32)) | \
                (np.isnan(theirs) & np.isnan(ours))
            if same.all():
                found = "fdlibm"
        except (OSError, AttributeError, TypeError):
            pass
    _variant.append(found)
    return found


_installed = []


def install():
    """Numba's float32 ``np.tanh`` in generated CPU code: :func:`tanhf` compiled into the kernel
    where :func:`variant` is ``"fdlibm"``; the library's call elsewhere (a user's own Numba code
    included). Once."""
    if _installed:
        return
    _installed.append(True)
    if variant() != "fdlibm":
        return
    from numba.core import compiler, types
    from numba.np.math import mathimpl
    from . import numba_passes
    library_call = mathimpl.tanh_impl

    def tanh_impl(context, builder, sig, args):
        if getattr(numba_passes._compiling, "depth", 0) > 0 and \
                sig.args[0] == types.float32 and sig.return_type == types.float32:
            flags = compiler.Flags()
            flags.error_model = "numpy"  # (a division by zero is IEEE's, not a Python error)
            cres = context.compile_subroutine(builder, _kernel_tanhf(), sig, flags=flags)
            fn = cres.library.get_function(cres.fndesc.llvm_func_name)
            if "alwaysinline" not in str(fn.attributes):
                fn.add_function_attribute("alwaysinline")  # into the loop, to vectorise
            return context.call_internal(builder, cres.fndesc, sig, args)
        return library_call(context, builder, sig, args)

    mathimpl.tanh_impl = tanh_impl


def _check_every_input():
    """Every float32 input: the library's ``tanhf`` (Numba's ``np.tanh``) against the form
    compiled into kernels (:func:`_kernel_tanhf`), in slices; prints the count of differences."""
    import time

    import numba
    ours_scalar = numba.njit(_kernel_tanhf(), error_model="numpy")

    @numba.njit(error_model="numpy")
    def compare(lo, hi):
        bad = 0
        for u in range(lo, hi):
            x = np.uint32(u)
            v = np.array([x]).view(np.float32)[0]
            a, b = np.tanh(v), ours_scalar(v)
            if a != b and not (a != a and b != b):   # (nan: any nan)
                bad += 1
            elif a == 0.0 and np.signbit(a) != np.signbit(b):
                bad += 1
        return bad

    start, bad = time.time(), 0
    for lo in range(0, 2 ** 32, 2 ** 28):
        bad += compare(lo, lo + 2 ** 28)
    print(f"every float32 input: {bad} differences from this machine's tanhf "
          f"({time.time() - start:.0f} s)")
    return bad


if __name__ == "__main__":
    raise SystemExit(1 if _check_every_input() else 0)
