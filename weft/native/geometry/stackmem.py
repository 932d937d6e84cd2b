"""Per-target primitives of the portable query cores: fixed-size local arrays (traversal
stacks) and the fused multiply-add.

A core writes ``stack = stackmem.local.array(64, np.int32)`` with ``stackmem`` a global that
``compile_for`` binds per target:

- CUDA: the ``numba.cuda`` module itself, so the call is ``cuda.local.array`` (per-thread
  local memory; numba-cuda only recognises it through the ``cuda`` module object);
- the CPU (``numba.njit``): a module whose ``local.array`` is an intrinsic that allocates
  the array on the stack of the calling function (an ``alloca`` in its entry block, no heap
  and no reference counting, so it works in cores compiled with ``_nrt=False`` and inlined
  into kernels);
- plain Python (uncompiled cores, ``NUMBA_DISABLE_JIT``): ``numpy.empty``.

The shape must be a literal integer and the dtype a NumPy scalar type.

``overrides(jit)`` gives the functions a target compiles natively instead of from their
portable definition: ``fmaf`` becomes LLVM's ``llvm.fma.f32`` on the CPU (one rounding, as
C's ``fmaf``; the hardware instruction where the CPU has it) and ``cuda.fma`` on CUDA.
"""
import types

import numpy as np


def _python_array(shape, dtype):
    return np.empty(shape, dtype)


PYTHON = types.ModuleType("weft_stackmem_python")
PYTHON.local = types.ModuleType("weft_stackmem_python.local")
PYTHON.local.array = _python_array

_CPU = None


def cpu():
    """The CPU binding (built on first use: it imports Numba's extension API)."""
    global _CPU
    if _CPU is None:
        _CPU = types.ModuleType("weft_stackmem_cpu")
        _CPU.local = types.ModuleType("weft_stackmem_cpu.local")
        _CPU.local.array = _make_intrinsic()
    return _CPU


def _make_intrinsic():
    from numba import types as nt
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def local_array(typingctx, shape, dtype):
        if not isinstance(shape, nt.IntegerLiteral):
            return None
        if isinstance(dtype, (nt.DType, nt.NumberClass)):
            elt = dtype.dtype
        else:
            return None
        n = shape.literal_value
        arrty = nt.Array(elt, 1, "C")

        def codegen(context, builder, sig, args):
            lty = context.get_data_type(elt)
            ptr = cgutils.alloca_once(builder, lty, size=n)
            ary = context.make_array(arrty)(context, builder)
            size = context.get_abi_sizeof(lty)
            context.populate_array(ary, data=ptr,
                                   shape=[context.get_constant(nt.intp, n)],
                                   strides=[context.get_constant(nt.intp, size)],
                                   itemsize=context.get_constant(nt.intp, size), meminfo=None)
            return ary._getvalue()

        return arrty(shape, dtype), codegen

    return local_array


def _make_fma():
    from llvmlite import ir
    from numba import types as nt
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def fmaf(typingctx, a, b, c):
        if not all(isinstance(t, nt.Float) for t in (a, b, c)):
            return None

        def codegen(context, builder, sig, args):
            ty = ir.FloatType()
            vals = [context.cast(builder, v, t, nt.float32) for v, t in zip(args, sig.args)]
            fn = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(ty, [ty, ty, ty]),
                                                "llvm.fma.f32")
            return builder.call(fn, vals)

        return nt.float32(a, b, c), codegen

    return fmaf


_FMA = None


def overrides(jit):
    """``{name: compiled function}`` replacing portable definitions for ``jit``'s target."""
    global _FMA
    mem = for_jit(jit)
    if mem is PYTHON:
        return {}
    if mem is not _CPU:
        from numba import cuda
        if "simulator" in type(jit(_probe)).__module__:
            return {}

        def fmaf(a, b, c):
            return cuda.fma(np.float32(a), np.float32(b), np.float32(c))
        return {"fmaf": jit(fmaf)}
    if _FMA is None:
        _FMA = _make_fma()
    return {"fmaf": _FMA}


def for_jit(jit):
    """The binding for functions compiled with ``jit``: CUDA's when ``jit`` makes CUDA (or CUDA
    simulator) device functions, plain Python when Numba's JIT is disabled, else the CPU's."""
    import numba

    probe = jit(_probe)
    if "cuda" in type(probe).__module__:
        from numba import cuda
        return cuda
    if numba.config.DISABLE_JIT or not hasattr(probe, "py_func"):
        return PYTHON
    return cpu()


def _probe(x):
    return x
