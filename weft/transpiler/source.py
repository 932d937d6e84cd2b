"""Checks of a kernel's source the compiler makes before it is built (its return annotation).

Reading the source and locating errors in it belong to the declaration
(:mod:`weft.stdlib.source`); ``parse`` and ``error`` are named here too for the passes."""
from __future__ import annotations

from ..stdlib.source import Source, error, parse  # noqa: F401  (the passes locate errors with it)


KERNEL_RETURN = ("Warp kernels cannot return values. Write results to output arguments, and "
                 "omit the return annotation or use `-> None`.")


def check_kernel_return_annotation(src: Source):
    """A kernel annotated to return anything but None: Warp's error (checked before the cache
    is looked up, as the annotation is not part of the kernel's code)."""
    ann = src.tree.returns
    if ann is None:
        return
    value = src.pyfunc.__annotations__.get("return", None)
    if isinstance(value, str):  # ``from __future__ import annotations``
        value = None if value in ("None", "types.NoneType", "NoneType") else value
    if value is not None and value is not type(None):
        from ..core.errors import KernelTypeError
        raise error(src, ann, KERNEL_RETURN, KernelTypeError)
