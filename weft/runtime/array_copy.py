"""``wp.copy`` and ``wp.clone`` (Warp 1.19), and the copies the array's own methods make
(``assign``, ``contiguous``, ``to``). A copy between arrays with gradients copies the gradient
too and, inside a ``wp.Tape``, is recorded (:mod:`weft.runtime.hooks`).

This module sits below :mod:`weft.runtime.array`: it knows arrays by their base class
(:class:`~weft.runtime.array_views.ArrayViews`) and makes new ones of the class of those it
is given.
"""
from __future__ import annotations

import operator

import numpy as np

from ..core import config, pytree
from ..core.typecore import is_differentiable
from ..core import types as T
from .array_views import ArrayViews as _Array  # every wp.array (the base of its one class)
from . import hazards
from .hooks import active_tape


def clone(src, device=None, requires_grad=None, pinned=None, **kw):
    """A contiguous copy of ``src`` in new memory, made as Warp 1.19 makes it: an empty array
    (with a gradient when ``requires_grad``, by default when ``src`` has one) and ``wp.copy``, so
    the gradient is copied too when both have one, and inside a ``wp.Tape`` the clone is
    recorded (its adjoint adds the clone's gradient to ``src``'s). A PyTree gives the PyTree of
    the clones of its arrays."""
    if not isinstance(src, _Array) and pytree.is_tree(src):
        return pytree.map_tree(lambda a: clone(a, device, requires_grad), src)
    rg = src.requires_grad if requires_grad is None else requires_grad
    out = type(src)(shape=src.shape, dtype=src.dtype, device=device or src.device,
                    requires_grad=rg)  # wp.empty's array
    copy(out, src)
    return out



def copy(dest, src, dest_offset=0, src_offset=0, count=0, stream=None):
    """Copy ``count`` elements (all of ``src`` when 0) of ``src`` from ``src_offset`` into
    ``dest`` at ``dest_offset``, elements counted over the flattened arrays (as Warp 1.19:
    strided arrays take offsets and counts only when 1-d). Gradients are copied when both
    arrays have one, and inside a ``wp.Tape`` the copy is recorded: its adjoint adds ``dest``'s
    gradient of the copied elements to ``src``'s and zeroes it (unless ``retain_grad``)."""
    from ..core import typeinfo
    if not isinstance(src, _Array) or not isinstance(dest, _Array):
        raise RuntimeError("Copy source and destination must be arrays")
    try:
        src_offset, dest_offset, count = (operator.index(x) for x in (src_offset, dest_offset,
                                                                      count))
    except TypeError as e:
        raise RuntimeError("Copy src_offset, dest_offset, and count must be integers") from e
    if src_offset < 0:
        raise RuntimeError(f"Source offset must be non-negative, got {src_offset}")
    if dest_offset < 0:
        raise RuntimeError(f"Destination offset must be non-negative, got {dest_offset}")
    if count < 0:
        raise RuntimeError(f"Copy count must be non-negative, got {count}")
    if count == 0:
        count = src.size
    if count == 0:
        return
    if typeinfo.type_size_in_bytes(src.dtype) != typeinfo.type_size_in_bytes(dest.dtype):
        raise RuntimeError(f"Incompatible array data types: destination dtype="
                           f"{typeinfo.type_repr(dest.dtype)}, source dtype="
                           f"{typeinfo.type_repr(src.dtype)}")
    if src.is_contiguous and dest.is_contiguous:
        nb = typeinfo.type_size_in_bytes(src.dtype)  # Warp's messages count bytes
        if src_offset + count > src.size:
            raise RuntimeError(f"Trying to copy source buffer with size ({count * nb}) from "
                               f"offset ({src_offset * nb}) is larger than source size "
                               f"({src.size * nb})")
        if dest_offset + count > dest.size:
            raise RuntimeError(f"Trying to copy source buffer with size ({count * nb}) to offset "
                               f"({dest_offset * nb}) is larger than destination size "
                               f"({dest.size * nb})")
    elif src_offset or dest_offset or count != src.size or count != dest.size:
        if src.ndim != 1 or dest.ndim != 1:
            raise RuntimeError("dest_offset, src_offset, and count are only supported for 1-D "
                               "non-contiguous arrays")
        if src_offset + count > src.size:
            raise RuntimeError(f"Trying to copy a range of {count} element(s) from source offset "
                               f"({src_offset}) exceeds the source size ({src.size})")
        if dest_offset + count > dest.size:
            raise RuntimeError(f"Trying to copy a range of {count} element(s) to destination "
                               f"offset ({dest_offset}) exceeds the destination size "
                               f"({dest.size})")
    elif src.shape != dest.shape:
        raise RuntimeError(f"Incompatible array shapes: destination shape={dest.shape}, source "
                           f"shape={src.shape}")
    from .graph import capturing
    graph = capturing()
    if graph is not None:  # recorded for replay (the gradient copy and tape record included)
        graph.record(lambda: _copy_now(dest, src, dest_offset, src_offset, count))
        return
    _copy_now(dest, src, dest_offset, src_offset, count)


def _copy_now(dest, src, dest_offset, src_offset, count):
    _copy_region(dest, src, dest_offset, src_offset, count)
    if config.grad_all_arrays and active_tape() is not None and \
            is_differentiable(src.dtype) and is_differentiable(dest.dtype):
        for a in (src, dest):  # see wp.config.grad_all_arrays
            if a.grad is None:
                a.requires_grad = True
    if dest.grad is not None and src.grad is None and active_tape() is not None and \
            hazards.recorded_before(active_tape(), dest):
        _record_reset(dest, src, dest_offset, count)
    if src.grad is not None and dest.grad is not None:
        _copy_region(dest.grad, src.grad, dest_offset, src_offset, count)
        tape = active_tape()
        if tape is not None:
            tape.record_func(lambda: _adj_copy(dest, src, dest_offset, src_offset, count),
                             [dest, src],
                             lambda t: _tan_copy(t, dest, src, dest_offset, src_offset, count))


def _record_reset(dest, src, dest_offset, count):
    """A copy from an array without a gradient under a tape: the copied elements' old values
    have no influence past it, so ``backward`` resets their gradient (and their tangent is
    zero)."""
    g = dest.grad

    def zeros(like):
        z = np.zeros(count or src.size, like._data.dtype)
        return type(like)(z if count else z.reshape(src._data.shape), dtype=like.dtype,
                          device=like.device)

    def forward(tangents):
        t = tangents.get(dest)
        t = type(dest)(t.numpy() if t is not None else np.zeros(dest._data.shape,
                                                                dest._data.dtype),
                       dtype=dest.dtype, device=dest.device)
        _copy_region(t, zeros(t), dest_offset, 0, count)
        tangents[dest] = t

    def hvp(tangents, adjs, tadjs):
        for shadow in (adjs, tadjs):
            view = type(g)(shadow.of(g._data), dtype=g.dtype, device=g.device, copy=False)
            _copy_region(view, zeros(g), dest_offset, 0, count)

    active_tape().record_func(lambda: _copy_region(g, zeros(g), dest_offset, 0, count),
                              [dest], forward, hvp)


def _tan_copy(tangents, dest, src, dest_offset, src_offset, count):
    """Forward mode of a recorded copy: ``dest``'s tangent takes ``src``'s in the region."""
    ts = tangents.get(src)
    td = tangents.get(dest)
    td = type(dest)(td.numpy() if td is not None else np.zeros(dest._data.shape,
                                                               dest._data.dtype),
                    dtype=dest.dtype, device=dest.device)
    if ts is None:
        ts = type(src)(np.zeros(src._data.shape, src._data.dtype), dtype=src.dtype,
                       device=src.device)
    _copy_region(td, ts, dest_offset, src_offset, count)
    tangents[dest] = td


def _region(a, offset, count):
    """The elements ``offset .. offset + count`` of ``a`` (flattened) as a view: the whole
    array, a slice of a 1-d array, or a slice of a contiguous array flattened."""
    if offset == 0 and count == a.size:
        return a
    flat = a if a.ndim == 1 else a.flatten()
    return flat[offset:offset + count]


def _copy_region(dest, src, dest_offset, src_offset, count):
    s, d = _region(src, src_offset, count), _region(dest, dest_offset, count)
    if s.shape != d.shape:  # contiguous arrays of the same size: copied in memory order
        s, d = s.flatten(), d.flatten()
    values = _reinterpret(s.numpy(), s.shape, d)

    def put(data):
        data[...] = values
    d._write(put)


def _reinterpret(values, outer, dest):
    """Element values as ``dest`` stores them: as they are when the numpy dtypes agree, else the
    same bytes seen as ``dest``'s dtype (Warp copies memory, so ``int32`` -> ``uint32`` keeps
    the bits)."""
    nd, eshape = dest._data.dtype, T.element_shape(dest.dtype)
    if values.dtype == nd and values.shape[len(outer):] == eshape:
        return values
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(tuple(outer) + (-1,))
    return raw.view(nd).reshape(tuple(outer) + eshape)


def _adj_copy(dest, src, dest_offset, src_offset, count):
    """Adjoint of ``copy``: src.grad[region] += dest.grad[region]; then dest.grad[region] = 0
    unless ``dest.retain_grad`` (as Warp 1.19)."""
    s, d = _region(src.grad, src_offset, count), _region(dest.grad, dest_offset, count)
    if s.shape != d.shape:
        s, d = s.flatten(), d.flatten()
    add = np.array(d.numpy()).reshape(s.numpy().shape)

    def accumulate(data):
        data += add.astype(data.dtype)
    s._write(accumulate)
    if not dest.retain_grad:
        d.zero_()
