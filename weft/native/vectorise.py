"""Facts that let LLVM vectorise a CPU kernel's loop over its launch indices.

Two things stopped LLVM's loop vectoriser on a loop like ``y[i] = f(x[i])`` over arrays of
``vec3`` (numpy arrays of shape ``(n, 3)``), measured on the transcendental benchmark:

- **Negative-index wraparound.** Numba indexes with Python's rule (``a[-1]`` is the last
  element), a ``select`` on the sign of every index that LLVM cannot prove away, so the
  addresses of consecutive launch indices are not an affine sequence. A launch index is never
  negative: :func:`nonneg` says so (``llvm.assume``), and LLVM drops the select for it and for
  the indices it derives from it. Indices the kernel computes itself (``i - 1``) keep Python's
  rule, as before.
- **Run-time strides.** A C-contiguous ``(n, 3)`` array's row length is a field of Numba's
  array structure, read at run time, so ``x[i, 0]``, ``x[i, 1]``, ``x[i, 2]`` are three
  accesses with an unknown stride. :func:`assume_shape` tells LLVM the trailing dimensions
  (the element's shape, known from the kernel's types); it then sees interleaved accesses
  with stride 3 and vectorises them.

Both only state what is true of every array a launch passes (the launch binder makes the
trailing dimensions the element's shape), so results do not change. Under
``NUMBA_DISABLE_JIT`` both are the identity.
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def nonneg_py(i):
    """``i`` (a launch index, never negative)."""
    return i


def assume_shape_py(a, d0, d1):
    """Nothing to do in Python (see :func:`assume_shape`)."""


@intrinsic
def nonneg(typingctx, i):
    """``i``, with LLVM told that it is not negative (``llvm.assume(i >= 0)``; an unsigned
    ``i`` needs no telling and passes unchanged)."""
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        if not i.signed:
            return v
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(1)])
        assume = cgutils.get_or_insert_function(builder.module, fnty, "llvm.assume")
        builder.call(assume, [builder.icmp_signed(">=", v, v.type(0))])
        return v
    return i(i), codegen


@intrinsic
def assume_shape(typingctx, a, d0, d1):
    """Tell LLVM that array ``a``'s last dimensions are ``(d0,)`` (``d1 == 0``) or
    ``(d0, d1)`` (``llvm.assume`` on its shape fields, from which a C-contiguous array's
    addresses are computed). A statement, not a new binding of ``a``: a kernel tests
    ``adj_x is not None`` on its parameters, which Numba decides before typing only for an
    argument never assigned to. Arrays of another layout, and ``None``, are left alone."""
    if not (isinstance(d0, types.IntegerLiteral) and isinstance(d1, types.IntegerLiteral)):
        return None
    inner = tuple(d for d in (d0.literal_value, d1.literal_value) if d)
    known = isinstance(a, types.Array) and a.layout == "C" and a.ndim > len(inner)

    def codegen(context, builder, sig, args):
        if known:
            arr = context.make_array(a)(context, builder, args[0])
            shape = cgutils.unpack_tuple(builder, arr.shape)
            fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(1)])
            assume = cgutils.get_or_insert_function(builder.module, fnty, "llvm.assume")
            for dim, d in zip(shape[a.ndim - len(inner):], inner):
                builder.call(assume, [builder.icmp_signed("==", dim, dim.type(d))])
        return context.get_dummy_value()
    return types.none(a, d0, d1), codegen


if numba.config.DISABLE_JIT:
    nonneg = nonneg_py  # noqa: F811
    assume_shape = assume_shape_py  # noqa: F811
