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


PORTABLE = ("launch_size", "first_index", "trip_count", "int_div_trunc", "int_floor_div",
            "int_mod", "tuple_eq", "tuple_ne", "erf_inverse")


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
