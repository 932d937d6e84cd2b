"""Views of tiles' buffers for generated CUDA tile code and its helpers (``_wk.tile_view``,
re-exported by :mod:`weft.native.cuda_tiles`): a C-contiguous buffer seen flat or in another
shape of the same size, made in place. numba-cuda's ``reshape`` calls a helper compiled from CUDA
C (``reshape_funcs.cu``) that every kernel using it links, and numba-cuda's disk cache cannot keep
such a kernel."""
from __future__ import annotations

from numba import config, cuda
from numba.core import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array


def _view_rank(shape):
    """The rank of a view of ``shape`` (Numba's type: an integer or a tuple of them), else
    None."""
    if isinstance(shape, types.Integer):
        return 1
    if isinstance(shape, types.BaseTuple) and len(shape) and \
            all(isinstance(s, types.Integer) for s in shape):
        return len(shape)
    return None


@intrinsic
def _c_view(typingctx, t, shape):
    """A view of C-contiguous array ``t`` as ``shape``, of the same size (the generated code's
    static tile shapes, which the simulator's :func:`tile_view` checks), built in place: the
    data pointer with row-major strides. numba-cuda's ``reshape`` calls a helper compiled from
    CUDA C (``reshape_funcs.cu``) that every kernel using it links, and numba-cuda's disk
    cache cannot keep such a kernel; this view keeps tile kernels cacheable, and needs no
    scratch in local memory."""
    rank = _view_rank(shape)
    if not isinstance(t, types.Array) or t.layout != "C" or rank is None:
        return None

    def codegen(context, builder, sig, args):
        aryty, shapety = sig.args
        ary = context.make_array(aryty)(context, builder, args[0])
        if isinstance(shapety, types.Integer):
            dims = [context.cast(builder, args[1], shapety, types.intp)]
        else:
            dims = [context.cast(builder, builder.extract_value(args[1], k), shapety[k],
                                 types.intp) for k in range(rank)]
        strides = [ary.itemsize]
        for d in reversed(dims[1:]):
            strides.insert(0, builder.mul(strides[0], d))
        out = context.make_array(sig.return_type)(context, builder)
        populate_array(out, data=ary.data, shape=dims, strides=strides, itemsize=ary.itemsize,
                       meminfo=ary.meminfo, parent=ary.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())

    return t.copy(ndim=rank, layout="C")(t, shape), codegen


if config.ENABLE_CUDASIM:
    @cuda.jit(device=True)
    def tile_view(t, shape):
        """``t`` (C-contiguous: a tile's buffer) seen as ``shape``, of the same size."""
        flags = getattr(t, "flags", None)
        if flags is not None and not flags["C_CONTIGUOUS"]:
            raise ValueError("tile_view of an array that is not C-contiguous (a copy on a GPU)")
        return t.reshape(shape)
else:  # (the intrinsic itself: a device function returns no array it was not passed)
    tile_view = _c_view
