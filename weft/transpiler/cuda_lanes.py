"""Which launch indices a CUDA kernel's tile operations depend on (:func:`lane_tiles`, the
ABI's ``lane_tiles``): a launch in which such an index differs between the threads of one CUDA
block is refused (:func:`weft.runtime.entries.cuda_block`)."""
from __future__ import annotations

from ..stdlib import ir
from .lanes import _is_tile, _operands

def lane_tiles(fir):
    """For each launch index of kernel ``fir`` (``wp.tid()``'s axis) that a tile operation
    depends on, ``(axis, why)``: a launch in which that index differs between the threads of
    one CUDA block is refused (:func:`weft.runtime.entries.cuda_block`). A tile is the
    block's (after each operation's barrier every thread sees all of it), so what matters is
    the operands: weft's CUDA tile operations take them from every thread alike, except an
    element write (``t[i, j] = x`` of a scalar), where each thread writes its own element. A
    tile operation under a branch on such an index is refused too (its barriers need every
    thread)."""
    out = []
    for axis in range(max(fir.tid_dims, 1)):
        V = set()
        for s in ir.walk(fir.body):
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and \
                    s.expr.builtin.name == "tid" and (s.expr.attrs.get("axis") or 0) == axis:
                V.add(id(s.dst))
        if not V:
            continue
        while _sweep(fir.body, False, V):
            pass
        loc = _varying_tile_op(fir.body, False, V)
        if loc is not None:
            out.append((axis, f"{loc.filename}:{loc.lineno}: kernel '{fir.name}': a tile "
                        f"operation takes a value computed from launch index {axis}, which "
                        "differs between the threads of a CUDA block in this launch; "
                        "weft's CUDA tiles share their operands across the block (only an "
                        "element write may differ), so it would not give Warp's result "
                        "(launch it with wp.launch_tiled without unpacking the lane, or with "
                        "device='cpu')"))
    return tuple(out)


def _varying_tile_op(stmts, ctrl, V):
    """The location of the first tile operation of ``stmts`` under a branch or loop on ``V``
    or taking an operand of ``V`` (a scalar element write excepted), else None."""
    for s in stmts:
        if isinstance(s, ir.If):
            c = ctrl or (isinstance(s.cond, ir.Var) and id(s.cond) in V)
            got = _varying_tile_op(s.body, c, V) or \
                _varying_tile_op(s.orelse, c, V)
        elif isinstance(s, ir.Loop):
            c = ctrl or any(isinstance(x, ir.Var) and id(x) in V
                            for x in (s.start, s.stop, s.step, s.brk))
            got = _varying_tile_op(s.body, c, V)
        else:
            ops = _operands(s)
            dst = getattr(s, "dst", None)
            tile_op = (dst is not None and _is_tile(dst.type)) or (
                isinstance(s, ir.Effect) and any(_is_tile(o.type) for o in ops))
            own_element = isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and (
                s.expr.builtin.name == "tile_insert" and ops or
                s.expr.builtin.name in ("tile_of_lanes", "tile_from_lane", "tile_add_at",
                                        "tile_set_at", "tile_stack_push_b", "tile_bits_at"))
            got = s.loc if tile_op and (ctrl or (any(id(o) in V for o in ops) and
                                                 not own_element)) else None
        if got is not None:
            return got
    return None


def _sweep(stmts, ctrl, V):
    """One pass of the fixed point of :func:`lane_tiles`: the scalars that depend on ``V``
    (data and control; a tile is the block's, never in ``V``); True when it grew."""
    changed = False
    for s in stmts:
        if isinstance(s, ir.If):
            c = ctrl or (isinstance(s.cond, ir.Var) and id(s.cond) in V)
            changed |= _sweep(s.body, c, V)
            changed |= _sweep(s.orelse, c, V)
        elif isinstance(s, ir.Loop):
            c = ctrl or any(isinstance(x, ir.Var) and id(x) in V
                            for x in (s.start, s.stop, s.step, s.brk))
            changed |= _sweep(s.body, c, V)
            for h, e in s.carried:
                if id(e) in V and id(h) not in V and not _is_tile(h.type):
                    V.add(id(h))
                    changed = True
        else:
            dst = getattr(s, "dst", None)
            if dst is not None and id(dst) not in V and not _is_tile(dst.type) and (
                    ctrl or any(id(o) in V for o in _operands(s)) or  # (a thread's element:)
                    isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and
                    s.expr.builtin.name == "tile_lane_value"):
                V.add(id(dst))
                changed = True
    return changed
