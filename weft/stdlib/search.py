"""Searches written in the kernel language (used by special forms of :mod:`.arrays`)."""
from weft.stdlib import kernel_scope as wp


@wp.func
def range_lower_bound(arr, lower, end, value):
    """The first index in ``[lower, end)`` whose element is not below ``value`` (``end - 1``
    when none is; ``lower`` for an empty range): Warp's ``lower_bound``."""
    lo = int(lower)  # (literal arguments of generic funcs are typed weakly)
    hi = int(end) - 1
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if arr[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@wp.func
def array_lower_bound(arr, value):
    """``range_lower_bound`` over the whole array."""
    return range_lower_bound(arr, int(0), arr.shape[0], value)
