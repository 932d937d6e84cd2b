"""float32 transcendental functions that LLVM can vectorise, for ``fast_math`` modules.

A loop calling ``sinf``/``expf`` does not vectorise on a CPU without a vector math library
(LLVM turns ``llvm.sin.v8f32`` back into eight ``sinf`` calls; Numba's SVML route needs an
llvmlite built with Intel's patch, see docs/performance.md). These functions are arithmetic
only, so once LLVM inlines them into a kernel's loop it vectorises the whole body. Warp's
``fast_math`` module option selects them for float32 arguments (``targets.Target.math``);
float64 keeps libm.

Each works in float64 internally and rounds once at the end: a float32 argument is exact in
float64, the argument reduction (Cody-Waite with pi/2 split in three parts, ``ln 2`` folded
into a base-2 exponent) loses nothing a float32 result can see, and the polynomials are
accurate to about 5e-11 relative, so results are the correctly rounded float32 value except
within about 1e-10 of a rounding midpoint: at most 0.5 ulp plus that, against 1-3.4 ulp for
the libm calls Numba makes (measured: ``benchmarks/accuracy_fastmath.py``,
docs/accuracy.md). Special values follow C: ``exp(inf) = inf``, ``log(0) = -inf``,
``log(-1) = nan``, NaN in gives NaN out, signed zeros kept by ``sin``, ``tan``, ``tanh`` and
``sinh``. The limit: ``sin``, ``cos`` and ``tan`` reduce arguments exactly while the quadrant
count fits 2**26 pi/2 products in float64 (``|x| < ~1e8``, 0.5 ulp measured up to 1e12 with
fused multiply-adds); beyond ``|x| = 2**60`` they return NaN rather than a wrong number.

The coefficients are least-squares fits on Chebyshev nodes weighted by relative error (sin,
cos on ``[0, pi/4]``, ``2**f`` on ``[-1/2, 1/2]``) or Taylor series where those suffice
(``log`` through ``atanh``, small ``tanh`` and ``sinh``).

The functions compile with LLVM's ``contract`` flag only (fused multiply-adds), not the
caller's fast-math flags: reassociating the argument reduction, or assuming no NaN, would
change the results. LLVM inlines them into the kernel all the same.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from ..core.diskcache import njit

_PI_2 = Fraction("1.5707963267948966192313216916397514420985846996875529104874722961")


def _head(q, drop):
    """``q`` rounded to float64, its ``drop`` low mantissa bits cleared."""
    bits = int(np.array([float(q)]).view(np.int64)[0]) & ~((1 << drop) - 1)
    return float(np.array([bits], np.int64).view(np.float64)[0])


PIO2_A = _head(_PI_2, 26)                          # 27 significant bits: j * A exact
PIO2_B = _head(_PI_2 - Fraction(PIO2_A), 26)
PIO2_C = float(_PI_2 - Fraction(PIO2_A) - Fraction(PIO2_B))
TWO_OVER_PI = float(1 / _PI_2)
LOG2E, LN2, LOG10E = 1.0 / math.log(2.0), math.log(2.0), 1.0 / math.log(10.0)
SQRT2 = math.sqrt(2.0)
# sin r = r + r^3 P(r^2), cos r = 1 + r^2 Q(r^2), |r| <= pi/4; 2^f = E(f), |f| <= 1/2
S1, S2, S3, S4 = (-0.16666666643331166, 0.008333329540099434, -0.00019839375778468745,
                  2.7186449508038795e-06)
C1, C2, C3, C4 = (-0.49999999714151083, 0.04166662207200912, -0.001388672602296082,
                  2.4387113824551383e-05)
E0, E1, E2, E3, E4, E5, E6, E7 = (0.9999999999619433, 0.6931471807388323, 0.24022651196252756,
                                  0.05550410319487556, 0.009618027457976026,
                                  0.0013333950083766724, 0.00015469236479506368,
                                  1.5195577455838976e-05)
HUGE = 2.0 ** 60


# -------------------------------------------------------------------- bits of a float64
def _f64_bits_py(d):
    return np.array([d], np.float64).view(np.int64)[0]


def _bits_f64_py(b):
    return np.array([b], np.int64).view(np.float64)[0]


def _bitcast(src, dst):
    """An intrinsic reinterpreting the bits of a ``src`` value as a ``dst`` value."""
    @intrinsic
    def cast(typingctx, x):
        if x != src:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(dst))
        return dst(src), codegen
    return cast


if numba.config.DISABLE_JIT:
    f64_bits, bits_f64 = _f64_bits_py, _bits_f64_py
else:
    f64_bits, bits_f64 = _bitcast(types.float64, types.int64), _bitcast(types.int64, types.float64)

_inline = njit(error_model="numpy", nogil=True, inline="always")
_public = njit(error_model="numpy", nogil=True, fastmath={"contract"})


# ------------------------------------------------------------------------------- cores
@_inline
def _reduce(d):
    """``(r, j)`` with ``d = j pi/2 + r``, ``|r| <= pi/4`` (``j`` as a float64)."""
    j = np.rint(d * TWO_OVER_PI)
    return ((d - j * PIO2_A) - j * PIO2_B) - j * PIO2_C, j


@_inline
def _quadrant(j):
    """``j mod 4`` as an int (``j`` a float64 integer below 2**60 in magnitude)."""
    return np.int64(j - 4.0 * np.floor(j * 0.25))


@_inline
def _sin_poly(r):
    r2 = r * r
    return r + r * r2 * (S1 + r2 * (S2 + r2 * (S3 + r2 * S4)))


@_inline
def _cos_poly(r):
    r2 = r * r
    return 1.0 + r2 * (C1 + r2 * (C2 + r2 * (C3 + r2 * C4)))


@_inline
def _exp2(t):
    """``2**t`` for a float64 ``|t| <= 1000``."""
    n = np.rint(t)
    f = t - n
    p = E0 + f * (E1 + f * (E2 + f * (E3 + f * (E4 + f * (E5 + f * (E6 + f * E7))))))
    return p * bits_f64((np.int64(n) + 1023) << 52)


@_inline
def _exp(d):
    """``e**d`` in float64 for a float64 ``d``, clamped where float32 saturates."""
    return _exp2(min(max(d * LOG2E, -300.0), 300.0))


@_inline
def _log_parts(d):
    """``(e, log m)`` with ``d = 2**e m``, ``m`` in ``[sqrt(1/2), sqrt(2))``, for a positive
    finite float64 ``d``."""
    b = f64_bits(d)
    e = np.float64((b >> 52) - 1023)
    m = bits_f64((b & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000)
    big = m > SQRT2
    m = m * 0.5 if big else m
    e = e + 1.0 if big else e
    f = m - 1.0
    s = f / (2.0 + f)                              # log m = 2 atanh(s), |s| <= 0.172
    s2 = s * s
    return e, 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 * (
        1.0 / 9.0 + s2 * (1.0 / 11.0))))))


@_inline
def _log_special(x, v):
    """``v``, or C's value of ``log`` at ``x`` where ``x`` is 0, negative, inf or NaN."""
    v = np.float32(-np.inf) if x == 0 else v
    v = np.float32(np.nan) if x < 0 else v
    return v if x < np.float32(np.inf) else x


# ---------------------------------------------------------------------------- public
@_inline
def _sin_shifted(x, shift):
    """``sin(x + shift pi/2)`` in float64 (NaN beyond ``|x| = HUGE``)."""
    d = np.float64(x)
    r, j = _reduce(d)
    q = _quadrant(j) + shift
    v = _cos_poly(r) if q & 1 else _sin_poly(r)
    v = -v if q & 2 else v
    return v if abs(d) < HUGE else np.nan


@_public
def sin(x):
    return x if x == 0 else np.float32(_sin_shifted(x, 0))


@_public
def cos(x):
    return np.float32(_sin_shifted(x, 1))


@_public
def tan(x):
    d = np.float64(x)
    r, j = _reduce(d)
    s, c = _sin_poly(r), _cos_poly(r)
    v = -c / s if _quadrant(j) & 1 else s / c
    v = v if abs(d) < HUGE else np.nan
    return x if x == 0 else np.float32(v)


@_public
def exp(x):
    v = np.float32(_exp(np.float64(x)))
    return x if x != x else v


@_public
def log(x):
    e, lm = _log_parts(np.float64(x))
    return _log_special(x, np.float32(e * LN2 + lm))


@_public
def log2(x):
    e, lm = _log_parts(np.float64(x))
    return _log_special(x, np.float32(e + lm * LOG2E))


@_public
def log10(x):
    e, lm = _log_parts(np.float64(x))
    return _log_special(x, np.float32((e * LN2 + lm) * LOG10E))


@_public
def tanh(x):
    d = np.float64(x)
    a = min(abs(d), 10.0)                          # tanh rounds to 1 in float32 from 9.1
    big = 1.0 - 2.0 / (_exp(2.0 * a) + 1.0)
    a2 = a * a
    small = a * (1.0 + a2 * (-1.0 / 3.0 + a2 * (2.0 / 15.0 + a2 * (-17.0 / 315.0))))
    v = np.float32(np.copysign(small if a < 0.0078125 else big, d))
    return x if x != x else v


@_public
def sinh(x):
    d = np.float64(x)
    a = min(abs(d), 200.0)
    e = _exp(a)
    big = 0.5 * (e - 1.0 / e)
    a2 = a * a
    small = a * (1.0 + a2 * (1.0 / 6.0 + a2 * (1.0 / 120.0 + a2 * (1.0 / 5040.0 + a2 * (
        1.0 / 362880.0 + a2 * (1.0 / 39916800.0))))))
    v = np.float32(np.copysign(small if a < 0.5 else big, d))
    return x if x != x else v


@_public
def cosh(x):
    e = _exp(min(abs(np.float64(x)), 200.0))
    v = np.float32(0.5 * (e + 1.0 / e))
    return x if x != x else v


#: numpy name -> the function above (the ones a fast_math module calls for float32)
FAST = {"sin": sin, "cos": cos, "tan": tan, "exp": exp, "log": log, "log2": log2,
        "log10": log10, "tanh": tanh, "sinh": sinh, "cosh": cosh}
