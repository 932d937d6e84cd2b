"""Helpers written once in plain Python and compiled for both targets: ``helpers.py`` wraps
them with ``numba.njit``, ``cuda_helpers.py`` with ``cuda.jit(device=True)``. Each is
self-contained (no calls to other helpers), since a compiled helper can only call compiled
functions; the random-number helpers call ``rand_pcg``, which each target binds first."""
import math

import numpy as np


def launch_size(dim):
    """The number of threads of a launch of dimensions ``dim``."""
    n = 1
    for d in dim:
        n *= d
    return n


def first_index(tid, dim):
    """The first launch index of flat thread ``tid`` (``tid`` itself in a 1-D launch)."""
    inner = 1
    for k in range(1, len(dim)):
        inner *= dim[k]
    return tid // inner


def trip_count(start, stop, step):
    """``len(range(start, stop, step))``."""
    if step > 0:
        n = (stop - start + step - 1) // step
    else:
        n = (start - stop - step - 1) // (-step)
    return max(n, 0)


def int_div_trunc(a, b):
    """C integer division (truncates toward zero); division by zero gives 0."""
    if b == 0:
        return a - a
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def int_floor_div(a, b):
    """Integer ``//``: floor division, as Warp (while ``/`` truncates and ``%`` keeps the sign
    of ``a``, as C); division by zero gives 0."""
    if b == 0:
        return a - a
    return a // b


def int_mod(a, b):
    """C integer remainder (sign of ``a``); remainder by zero gives 0."""
    if b == 0:
        return a - a
    q = abs(a) // abs(b)
    if (a >= 0) != (b >= 0):
        q = -q
    return a - q * b


def tuple_eq(a, b):
    for i in range(len(a)):
        if a[i] != b[i]:
            return False
    return True


def tuple_ne(a, b):
    for i in range(len(a)):
        if a[i] != b[i]:
            return True
    return False


def erf_inverse(v, complement):
    """``erfinv(v)``, or ``erfcinv(v)`` when ``complement``, in float64.

    A closed-form first guess (Winitzki's, or the Maclaurin series near zero) refined by Halley
    steps on ``erf(w) = y`` or, in the tails, on ``erfc(w) = z``: both residuals have
    ``f'' = -2 w f'``, so a step is ``w -= f / (f' + w f)``. Each argument is reduced without
    cancellation (``1 - |v|`` and ``2 - v`` are exact where they are taken), so the result is as
    accurate as ``math.erf``/``math.erfc`` allow, down to the far tail of ``erfcinv``. One
    function serves both builtins because compiled helpers cannot call each other."""
    x = np.float64(v)
    y = 0.0
    z = 0.0
    s = 1.0
    tail = False
    if complement:
        if not (x >= 0.0 and x <= 2.0):
            return math.nan
        if x == 0.0:
            return math.inf
        if x == 2.0:
            return -math.inf
        if x < 0.5:
            z = x
            tail = True
        elif x > 1.5:
            z = 2.0 - x
            s = -1.0
            tail = True
        else:
            y = 1.0 - x
    else:
        if not (x >= -1.0 and x <= 1.0):
            return math.nan
        if x == 1.0 or x == -1.0:
            return math.copysign(math.inf, x)
        if abs(x) > 0.5:
            z = 1.0 - abs(x)
            s = math.copysign(1.0, x)
            tail = True
        else:
            y = x
    if tail:
        lg = math.log(z) + math.log(2.0 - z)  # log(1 - y * y) for y = 1 - z
        t = 4.330746750799873 + 0.5 * lg      # 2 / (pi * 0.147) + lg / 2
        w = math.sqrt(math.sqrt(t * t - lg / 0.147) - t)
    else:
        u = 0.886226925452758 * y             # sqrt(pi) / 2 * y
        u2 = u * u
        w = u * (1.0 + u2 * (1.0 / 3.0 + u2 * (7.0 / 30.0 + u2 * (127.0 / 630.0))))
    for _ in range(4 if tail else 2):  # the first guess is coarser in the tails
        if tail:
            f = math.erfc(w) - z
            d = -1.1283791670955126 * math.exp(-w * w)
        else:
            f = math.erf(w) - y
            d = 1.1283791670955126 * math.exp(-w * w)
        den = d + w * f
        if den != 0.0:
            w = w - f / den
    return s * w


def bit_count(x, width):
    """The number of set bits of integer ``x`` in its ``width``-bit two's complement form
    (Warp's ``bit_count``: -1 as an int8 has 8)."""
    v = np.int64(x)
    n = 0
    if width < 64:
        v = v & ((np.int64(1) << width) - 1)
    elif v < 0:  # count the sign bit here, so that v - 1 below never overflows
        v = v & 0x7FFFFFFFFFFFFFFF
        n = 1
    while v != 0:
        v = v & (v - 1)
        n += 1
    return np.int32(n)


PORTABLE = ("launch_size", "first_index", "trip_count", "int_div_trunc", "int_floor_div",
            "int_mod", "tuple_eq", "tuple_ne", "erf_inverse", "bit_count")


# --- float16: stored as IEEE half bits (uint16 views of the arrays), computed as float32 ------
# Numba has no float16 on the CPU, so kernels see float16 arrays as uint16 and hold float16
# values as float32 numbers that are exactly representable in half precision.

def f2h(x):
    """The IEEE half bits (uint16) nearest to float32 ``x`` (ties to even, as numpy's cast):
    overflow gives inf, NaN stays a (quiet) NaN, tiny values become subnormals or zero."""
    b = np.int64(np.float32(x).view(np.uint32))
    sign = (b >> 16) & 0x8000
    e = (b >> 23) & 0xFF
    m = b & 0x7FFFFF
    if e == 0xFF:
        return np.uint16(sign | 0x7C00 | (0x200 if m != 0 else 0))
    h_exp = e - 112  # rebias 127 -> 15
    if h_exp >= 31:
        return np.uint16(sign | 0x7C00)
    if h_exp <= 0:
        if h_exp < -10:  # below half the smallest subnormal: rounds to zero
            return np.uint16(sign)
        m = m | 0x800000
        shift = 14 - h_exp
        h = m >> shift
        rem = m & ((1 << shift) - 1)
        half = 1 << (shift - 1)
    else:
        h = (h_exp << 10) | (m >> 13)
        rem = m & 0x1FFF
        half = 0x1000
    if rem > half or (rem == half and (h & 1) == 1):
        h += 1  # a carry moves into the exponent, up to inf: still the right encoding
    return np.uint16(sign | h)


def h2f(h):
    """The float32 value of IEEE half bits ``h`` (exact)."""
    v = np.int64(h)
    sign = (v & 0x8000) << 16
    e = (v >> 10) & 0x1F
    m = v & 0x3FF
    if e == 0:  # zero or subnormal: m * 2**-24
        f = np.float32(m) * np.float32(5.960464477539063e-08)
        return -f if sign != 0 else f
    if e == 0x1F:
        bits = sign | 0x7F800000 | (m << 13)
    else:
        bits = sign | ((e + 112) << 23) | (m << 13)
    return np.uint32(bits).view(np.float32)


PORTABLE += ("f2h", "h2f")


# Helpers below call other helpers by their global names (``f2h``, ``h2f``, ``cas_half_bits``
# from ``atomics.py``): each target compiles them with its own versions bound to those names
# (``bind_composed``), so they are only called through ``helpers`` and ``cuda_helpers``.

def round_f16(x):
    """``x`` rounded to the nearest float16, as a float32 (the generated modules' ``float16``)."""
    return h2f(f2h(x))


def half_rmw(arr, idx, value, op):
    """One atomic read-modify-write of half bits ``arr[idx]`` (a compare-and-swap loop), with
    ``op`` 0: add, 1: subtract, 2: exchange, 3: min, 4: max (min/max store ``value`` only
    while it is below/above the element, so a NaN value is ignored, as Warp). Returns the old
    value as float32."""
    old = arr[idx]
    while True:
        cur = h2f(old)
        if op == 0:
            new = cur + value
        elif op == 1:
            new = cur - value
        elif (op == 3 and not value < cur) or (op == 4 and not value > cur):
            return cur
        else:
            new = value
        prev = cas_half_bits(arr, idx, old, f2h(new))
        if prev == old:
            return cur
        old = prev


def atomic_add_f16(arr, idx, value):
    return half_rmw(arr, idx, value, 0)


def atomic_sub_f16(arr, idx, value):
    return half_rmw(arr, idx, value, 1)


def atomic_exch_f16(arr, idx, value):
    return half_rmw(arr, idx, value, 2)


def atomic_cas_f16(arr, idx, compare, value):
    """Compare-and-swap of half bits: stores ``value`` where the element's bits are those of
    ``compare`` rounded to float16; returns the old value as float32."""
    return h2f(cas_half_bits(arr, idx, f2h(compare), f2h(value)))  # noqa: F821 (bound)


def atomic_min_f16(arr, idx, value):
    return half_rmw(arr, idx, value, 3)


def atomic_max_f16(arr, idx, value):
    return half_rmw(arr, idx, value, 4)


# --- debug mode: checked indices; the first failure is written to the launch's error word
# ``dbg`` (int64[4]: site + 1, the index, the axis, the axis length), claimed atomically

def _report(i, n, site, axis, dbg):
    if atomic_cas(dbg, 0, np.int64(0), np.int64(site + 1)) == 0:  # noqa: F821 (bound)
        dbg[1] = i
        dbg[2] = axis
        dbg[3] = n


def chk(i, n, site, axis, dbg):
    """Index ``i`` of an axis of length ``n``, or (out of range: reported) a valid one."""
    if i >= 0 and i < n:
        return i
    _report(i, n, site, axis, dbg)
    return i - i


def inb(i, n, site, axis, dbg):
    """Whether index ``i`` is in range of an axis of length ``n`` (else reported)."""
    if i >= 0 and i < n:
        return True
    _report(i, n, site, axis, dbg)
    return False


def tuple_insert(t, k, x):
    """``t`` with item ``k`` replaced by ``x``, and ``t`` itself when ``k`` is out of range:
    a write at a run-time index into a vector or matrix (and the adjoint of a read there) as
    one call, where a conditional expression per component gave Numba's SSA and typing passes a
    pair of blocks each (the adjoint of a 6x6 matrix read in a loop: thousands of blocks, two
    minutes to compile). ``tuple_setitem`` is each target's (Numba's unchecked intrinsic, or
    :func:`tuple_setitem_py`): the range check keeps every write in bounds."""
    if k < 0 or k >= len(t):
        return t
    return tuple_setitem(t, k, x)  # noqa: F821 (bound by each target, see bind_composed)


def tuple_setitem_py(t, k, x):
    """``tuple_setitem`` uncompiled (``NUMBA_DISABLE_JIT``, the CUDA simulator)."""
    return t[:k] + (x,) + t[k + 1:]


COMPOSED = ("_report", "chk", "inb", "round_f16", "half_rmw", "atomic_add_f16", "atomic_sub_f16", "atomic_min_f16",
            "atomic_max_f16", "atomic_exch_f16", "atomic_cas_f16", "tuple_insert")


def bind_composed(namespace, jit):
    """Compile the ``COMPOSED`` helpers with ``jit``, their helper calls resolved in
    ``namespace`` (a target's helper module, which must already hold its compiled ``f2h``,
    ``h2f``, ``cas_half_bits`` and its ``tuple_setitem``), and add them to it."""
    import types
    for name in COMPOSED:
        fn = globals()[name]
        rebound = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__)
        rebound.__doc__ = fn.__doc__
        namespace[name] = jit(rebound)


# --- random numbers: Warp's generator (rand.h: the PCG hash of Jarzynski & Olano) -----------
# 64-bit integer arithmetic with masks, so the same code wraps identically compiled or not.

def rand_pcg(state):
    b = (np.int64(state) * 747796405 + 2891336453) & 0xFFFFFFFF
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & 0xFFFFFFFF
    return np.uint32((c >> 22) ^ c)


def u32(x):
    """An integer's low 32 bits as uint32 (C's conversion)."""
    return np.uint32(np.int64(x) & 0xFFFFFFFF)


def u32_add(a, b):
    return np.uint32((np.int64(a) + np.int64(b)) & 0xFFFFFFFF)


def rand_float(state):
    """A float32 in [0, 1 - 2**-24] from a fresh state, as Warp's randf."""
    return np.float32(np.int64(state) >> 8) * np.float32(1.0 / 16777216.0)


def rand_int(state):
    """The state's bits as an int32, as Warp's randi."""
    s = np.int64(state)
    return np.int32(s - 4294967296 if s >= 2147483648 else s)


def rand_int_range(state, lo, hi):
    """``state % (hi - lo) + lo`` with C's unsigned arithmetic, as Warp's randi(state, lo, hi)."""
    span = (np.int64(hi) - np.int64(lo)) & 0xFFFFFFFF
    r = (np.int64(state) % span + np.int64(lo)) & 0xFFFFFFFF
    return np.int32(r - 4294967296 if r >= 2147483648 else r)


PORTABLE += ("rand_pcg", "u32", "u32_add", "rand_float", "rand_int", "rand_int_range")


# --- side effects in kernels: Warp's expect_* builtins print what failed (Warp's words)

def expect_eq(actual, expected):
    if not actual == expected:
        print("Error, expect_eq() failed:")
        print("\t Expected: ", expected)
        print("\t Actual: ", actual)


def expect_neq(actual, expected):
    if actual == expected:
        print("Error, expect_neq() failed:")
        print("\t Expected: ", expected)
        print("\t Actual: ", actual)


def expect_near(diff, tolerance, actual, expected):
    """``diff``: the (largest) absolute difference, computed by the caller."""
    if diff > tolerance:
        print("Error, expect_near() failed with tolerance ", tolerance)
        print("    Expected: ", expected)
        print("    Actual: ", actual)
        print("    Absolute difference: ", diff)


PORTABLE += ("expect_eq", "expect_neq", "expect_near")
