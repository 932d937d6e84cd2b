"""Array views made from an address inside compiled code: ``view_i32(address, length)`` and
friends give a 1-D C-contiguous array of ``length`` elements at ``address`` (an integer read
from a geometry descriptor, :mod:`weft.native.geometry.descriptors`). No reference counting and no
copy: the descriptor's owner keeps the memory alive.

``bind(namespace, target)`` puts ``view_i64``, ``view_i32``, ``view_u32``, ``view_f32``, ``view_f64`` and
``bits_float`` (an int64 word's bits as a float64) and ``float_bits`` (the reverse) into a
helper namespace for ``"cpu"`` (Numba intrinsics), ``"cuda"``
(numba-cuda intrinsics) or ``"python"`` (uncompiled code: registered arrays only).
"""
from __future__ import annotations

import numpy as np

from .descriptors import python_view

DTYPES = {"i64": np.int64, "i32": np.int32, "u32": np.uint32, "f32": np.float32,
          "f64": np.float64}


def _intrinsics(intrinsic, types, arrays):
    """The views as intrinsics; ``arrays()`` gives the target's ``make_array`` and
    ``populate_array``, imported at the first compile that lowers a view (the CPU's come
    with ``numba.np.arrayobj``, 15-25 ms to import, which a program loading cached kernels
    never needs)."""
    from numba.np import numpy_support
    def make(np_dtype):
        elem = numpy_support.from_dtype(np.dtype(np_dtype))
        arrty = types.Array(elem, 1, "C")

        @intrinsic
        def view(typingctx, address, length):
            if not isinstance(address, types.Integer) or not isinstance(length, types.Integer):
                return None
            sig = arrty(address, length)

            def codegen(context, builder, signature, args):
                ll_elem = context.get_data_type(elem)
                addr = context.cast(builder, args[0], signature.args[0], types.uint64)
                ptr = builder.inttoptr(addr, ll_elem.as_pointer())
                n = context.cast(builder, args[1], signature.args[1], types.intp)
                size = context.get_constant(types.intp, context.get_abi_sizeof(ll_elem))
                make_array, populate_array = arrays()
                ary = make_array(arrty)(context, builder)
                populate_array(ary, data=ptr, shape=[n], strides=[size], itemsize=size,
                               meminfo=None)
                return ary._getvalue()
            return sig, codegen
        return view

    def bitcast(name, kind, via, result):
        """Intrinsic ``name`` reinterpreting a scalar of ``kind`` (a Numba type class), cast to
        ``via``, as ``result`` (same width)."""
        def cast(typingctx, x):
            if not isinstance(x, kind):
                return None
            sig = result(x)

            def codegen(context, builder, signature, args):
                v = context.cast(builder, args[0], signature.args[0], via)
                return builder.bitcast(v, context.get_value_type(result))
            return sig, codegen
        cast.__name__ = cast.__qualname__ = name
        return intrinsic(cast)

    out = {f"view_{k}": make(v) for k, v in DTYPES.items()}
    out["bits_float"] = bitcast("bits_float", types.Integer, types.int64, types.float64)
    out["float_bits"] = bitcast("float_bits", types.Float, types.float64, types.int64)
    return out


def _python():
    def make(np_dtype):
        def view(address, length):
            return python_view(address, length, np_dtype)
        return view

    def bits_float(word):
        return float(np.array([word], np.int64).view(np.float64)[0])

    def float_bits(x):
        return np.int64(np.array([x], np.float64).view(np.int64)[0])

    out = {f"view_{k}": make(v) for k, v in DTYPES.items()}
    out["bits_float"] = bits_float
    out["float_bits"] = float_bits
    return out


def bind(namespace, target):
    """Add the views for ``target`` (``"cpu"``, ``"cuda"`` or ``"python"``) to ``namespace``."""
    if target == "python":
        namespace.update(_python())
    elif target == "cpu":
        from numba.core import types
        from numba.extending import intrinsic

        def arrays():
            from numba.np.arrayobj import make_array, populate_array
            return make_array, populate_array
        namespace.update(_intrinsics(intrinsic, types, arrays))
    elif target == "cuda":
        from numba.core import types
        from numba.cuda.extending import intrinsic

        def arrays():
            from numba.cuda.np.arrayobj import make_array, populate_array
            return make_array, populate_array
        namespace.update(_intrinsics(intrinsic, types, arrays))
    else:
        raise ValueError(f"unknown target {target!r}")
    return namespace
