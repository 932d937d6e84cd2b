"""Helpers written once in plain Python and compiled for both targets: ``helpers.py`` wraps
them with ``numba.njit``, ``cuda_helpers.py`` with ``cuda.jit(device=True)``. Each is
self-contained (no calls to other helpers), since a compiled helper can only call compiled
functions."""


def launch_size(dim):
    """The number of threads of a launch of dimensions ``dim``."""
    n = 1
    for d in dim:
        n *= d
    return n


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


PORTABLE = ("launch_size", "trip_count", "int_div_trunc", "int_mod", "tuple_eq", "tuple_ne")
