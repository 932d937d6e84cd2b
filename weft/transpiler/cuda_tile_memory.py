"""The memory of cooperative CUDA tile code (the pass of :mod:`weft.transpiler.cuda_tiles`):
buffers that share shared memory once dead, the block's dynamic shared memory above 48 KiB, and
views of buffers made in place."""
from __future__ import annotations

import ast

import numpy as np

from ..stdlib.exprs import attr_path, name
from .cuda_tile_code import SHARED_OPT_IN_MAX, Tile, Unsupported, _assign, _bytes, _const_int, \
    _np_dtype


def docstring_count(body):
    """1 when statement list ``body`` starts with a docstring, else 0."""
    return int(bool(body) and isinstance(body[0], ast.Expr) and
               isinstance(body[0].value, ast.Constant))


def share_buffers(body, fn):
    """The kernel's straight-line buffers (those its main block makes, outside branches and
    loops) placed in fewer arrays: a buffer no name reads any more gives its memory to the next
    one of its shape and dtype (every operation starts with a barrier, so no thread still reads
    it when another writes). Names are followed through aliases (``x = buf``, ``x.reshape(...)``),
    and a read inside a branch or a loop keeps a buffer until that statement ends."""
    main = next((s for s in body if isinstance(s, ast.If) and any(
        isinstance(t, ast.Assign) and t.targets[0].id == "_tid" for t in s.body
        if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name))), None)
    if main is None:
        return body
    stmts = main.body
    sites = {}  # buffer name -> (index, Tile)
    for i, st in enumerate(stmts):
        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and \
                isinstance(st.targets[0], ast.Name) and \
                ast.unparse(st.value.func) == "cuda.shared.array":
            sites[st.targets[0].id] = (i, fn.env[st.targets[0].id])
    if len(sites) < 2:
        return body
    # which buffers each name may hold, over the whole function
    holds = {n: {n} for n in sites}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(main):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                src = node.value
                if isinstance(src, ast.Call) and isinstance(src.func, ast.Attribute) and \
                        src.func.attr == "reshape":
                    src = src.func.value
                if isinstance(src, ast.Name) and src.id in holds:
                    got = holds.setdefault(node.targets[0].id, set())
                    if not holds[src.id] <= got:
                        got |= holds[src.id]
                        changed = True
    last = {n: i for n, (i, _) in sites.items()}
    for i, st in enumerate(stmts):
        for node in ast.walk(st):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                for b in holds.get(node.id, ()):
                    last[b] = max(last[b], i)
    slots = []  # [Tile, free from index, slot name]: buffers of one shape and dtype
    place = {}
    for n, (i, tile) in sorted(sites.items(), key=lambda kv: kv[1][0]):
        slot = next((sl for sl in slots if sl[0] == tile and sl[1] < i), None)
        if slot is None:
            slot = [tile, 0, fn._fresh("shs")]
            slots.append(slot)
        slot[1] = last[n]
        place[n] = slot
    if len(slots) == len(sites):
        return body
    for i, st in enumerate(stmts):
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and \
                st.targets[0].id in place and i == sites[st.targets[0].id][0]:
            st.value = name(place[st.targets[0].id][2])
    fn.shared -= sum(_bytes(t) for _, t in sites.values()) - sum(_bytes(sl[0]) for sl in slots)
    fn.decls += [_assign(sl[2], ast.Call(attr_path("cuda.shared.array"), [
        ast.Tuple([ast.Constant(d) for d in sl[0].shape], ast.Load()),
        attr_path(f"np.{sl[0].dtype}")], [])) for sl in slots]
    return body


class ViewsInPlace(ast.NodeTransformer):
    """Every ``x.reshape(shape)`` of the cooperative code (the flat and shaped views of its
    tiles' buffers, which the passes above follow as views) written ``_wk.tile_view(x, shape)``:
    a view made in place, since numba-cuda's ``reshape`` links a CUDA C helper that its disk
    cache cannot keep (see :func:`weft.native.cuda_views.tile_view`)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "reshape" and len(node.args) == 1 and \
                not node.keywords:
            return ast.copy_location(ast.Call(attr_path("_wk.tile_view"),
                                              [f.value, node.args[0]], []), node)
        return node


def dynamic_shared(fdef):
    """Every ``cuda.shared.array(shape, dt)`` of ``fdef`` made a part of the block's dynamic
    shared memory (``cuda.shared.array(0, dt)``, one name per dtype, all at the same address):
    a tile's buffer is ``_dyn_float32[o:o + n].reshape(shape)`` (later ``_wk.tile_view``) at
    its own offset (a multiple of 16 bytes), as a static array of that statement would be one
    buffer. A block may use more than 48 KiB of shared memory only so (its launch opts in:
    :mod:`weft.runtime.entries`).
    Returns the bytes the launch gives each block; raises :class:`Unsupported` above
    :data:`SHARED_OPT_IN_MAX`."""
    offset = 0
    dtypes = []
    for node in ast.walk(fdef):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and
                ast.unparse(node.value.func) == "cuda.shared.array"):
            continue
        shape_node, dt_node = node.value.args[:2]
        shape = tuple(_const_int(d) for d in (shape_node.elts if isinstance(
            shape_node, ast.Tuple) else [shape_node]))
        dt = _np_dtype(dt_node)
        if None in shape or dt is None:
            raise Unsupported(f"a shared buffer of a shape not known when compiling "
                              f"('{ast.unparse(node.value)}')")
        size = _bytes(Tile(shape, dt))
        if dt not in dtypes:
            dtypes.append(dt)
        start = offset // _bytes(Tile((1,), dt))  # (in elements of its dtype)
        count = int(np.prod(shape))
        node.value = ast.Call(ast.Attribute(ast.Subscript(
            name(f"_dyn_{dt}"), ast.Slice(ast.Constant(start), ast.Constant(start + count)),
            ast.Load()), "reshape", ast.Load()), [
            ast.Tuple([ast.Constant(d) for d in shape], ast.Load())], [])
        offset = (offset + size + 15) // 16 * 16
    if offset > SHARED_OPT_IN_MAX:
        raise Unsupported(f"its tiles need {offset} bytes of shared memory, more than the "
                          f"{SHARED_OPT_IN_MAX} the largest CUDA GPUs give a block")
    doc = docstring_count(fdef.body)
    fdef.body[doc:doc] = [_assign(f"_dyn_{dt}", ast.Call(
        attr_path("cuda.shared.array"), [ast.Constant(0), attr_path(f"_wk.shared_{dt}")], []))
        for dt in dtypes]
    return offset
