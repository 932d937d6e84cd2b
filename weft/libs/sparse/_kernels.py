"""The kernels of weft.sparse (values: once per scalar type; ``bsr_mv`` with matrix blocks:
once per block shape; the product topology: once) and ``_gather``, the one value kernel most
operations are made of."""
# (no ``from __future__ import annotations``: kernel annotations name closure variables)
import numpy as np

import weft as wp
from weft.core.typeinfo import type_scalar_type

from ._common import _int_array, _scalar_view

I1_ = wp.array(dtype=int)
I2_ = wp.array2d(dtype=int)


@wp.func
def sparse_mm_row_columns(w: int, i: int, tag: int, base: int, x_starts: I1_, x_ends: I1_,
                          x_cols: I1_, y_starts: I1_, y_ends: I1_, y_cols: I1_, marker: I2_,
                          scratch: I1_):
    # the columns row i of x @ y reaches: marked in row w of ``marker`` (tag: stamp + i,
    # never met before), written once each to scratch[base:] and sorted. Returns their count
    n = int(0)
    for k in range(x_starts[i], x_ends[i]):
        j = wp.uint32(x_cols[wp.uint32(k)])
        for kk in range(y_starts[j], y_ends[j]):
            c = wp.uint32(y_cols[wp.uint32(kk)])
            if marker[w, c] != tag:
                marker[w, c] = tag
                scratch[wp.uint32(base + n)] = int(c)
                n += 1
    for a in range(base + 1, base + n):
        sparse_shift_in(scratch, sparse_sorted_place(scratch, base, a), a)
    return n


@wp.func
def sparse_sorted_place(scratch: I1_, base: int, a: int):
    # where scratch[a] goes among the sorted scratch[base:a]: after the last entry <= it
    v = scratch[wp.uint32(a)]
    b = a - 1
    while b >= base:
        if scratch[wp.uint32(b)] <= v:
            break
        b -= 1
    return b + 1


@wp.func
def sparse_shift_in(scratch: I1_, at: int, a: int):
    # scratch[at:a + 1] rotated one place up: scratch[a] moves to ``at`` (insertion sort's step)
    v = scratch[wp.uint32(a)]
    for d in range(a, at, -1):
        scratch[wp.uint32(d)] = scratch[wp.uint32(d - 1)]
    scratch[wp.uint32(at)] = v
    return at


@wp.func
def sparse_mm_number(w: int, i: int, base: int, n: int, x_starts: I1_, x_ends: I1_,
                     x_cols: I1_, y_starts: I1_, y_ends: I1_, y_cols: I1_, marker: I2_,
                     scratch: I1_, pos: I1_):
    # the products of row i numbered by their column's index in the row's sorted columns
    # scratch[base:base + n]: pos[p] for the products p counted from base in row order
    # (marker[w, column] is left holding -2 - that index, never a tag: tags are >= 0)
    for a in range(n):
        marker[w, wp.uint32(scratch[wp.uint32(base + a)])] = -2 - a
    p = base
    for k in range(x_starts[i], x_ends[i]):
        j = wp.uint32(x_cols[wp.uint32(k)])
        for kk in range(y_starts[j], y_ends[j]):
            pos[wp.uint32(p)] = -2 - marker[w, wp.uint32(y_cols[wp.uint32(kk)])]
            p += 1
    return p


_kernels = {}


def _kernels_for(scalar):
    """The value kernels for one scalar type (float32 or float64): compiled once each."""
    k = _kernels.get(scalar)
    if k is None:
        k = _kernels[scalar] = _make_kernels(scalar)
    return k


def _make_kernels(scalar):
    A2 = wp.array2d(dtype=scalar)
    A1 = wp.array(dtype=scalar)
    I1 = wp.array(dtype=int)

    @wp.kernel
    def sparse_gather(dest: A2, on: I1, a: A2, seg_a: I1, idx_a: I1, perm: I1, alpha: scalar,
                      b: A2, seg_b: I1, idx_b: I1, beta: scalar):
        # where on[d]: dest[d] = alpha * sum(a[idx_a[seg_a[d]:seg_a[d+1]]]) (components
        # permuted) + beta * sum(b[idx_b[seg_b[d]:seg_b[d+1]]]). dest is written at the
        # thread's own element only, so a tape's backward restarts its adjoint there (Warp's
        # store semantics)
        d, e = wp.tid()
        if on[d] != 0:
            s = scalar(-0.0)
            for k in range(seg_a[d], seg_a[d + 1]):
                s += a[idx_a[k], perm[e]]
            t = scalar(-0.0)
            for k in range(seg_b[d], seg_b[d + 1]):
                t += b[idx_b[k], e]
            dest[d, e] = alpha * s + beta * t

    @wp.kernel
    def sparse_csr_mv(starts: I1, ends: I1, columns: I1, values: A1, x: A1, alpha: scalar,
                      beta: scalar, w: A1, y: A1):
        i = wp.tid()
        s = scalar(0.0)
        for k in range(starts[i], ends[i]):
            # unsigned indices: Numba then drops its negative-index test, which kept this
            # loop 2-3x slower (the indices come from a valid matrix: never negative)
            u = wp.uint32(k)
            s += values[u] * x[wp.uint32(columns[u])]
        r = alpha * s
        if beta != scalar(0.0):
            r += beta * w[i]
        y[i] = r

    @wp.kernel
    def sparse_bsr_mv(starts: I1, ends: I1, columns: I1, values: A2, x: A2, bc: int,
                      alpha: scalar, beta: scalar, w: A2, y: A2):
        i, r = wp.tid()
        s = scalar(0.0)
        for k in range(starts[i], ends[i]):
            j = columns[k]
            for c in range(bc):
                s += values[k, r * bc + c] * x[j, c]
        v = alpha * s
        if beta != scalar(0.0):
            v += beta * w[i, r]
        y[i, r] = v

    @wp.kernel
    def sparse_mm_pairs(dest: A2, tgt: I1, seg: I1, px: I1, py: I1, x: A2, y: A2, bk: int,
                        bc: int, alpha: scalar):
        # dest[tgt[d]] += alpha * sum_p x[px[p]] @ y[py[p]] (blocks flattened row-major)
        d, e = wp.tid()
        r = e // bc
        c = e - r * bc
        s = scalar(0.0)
        for p in range(seg[d], seg[d + 1]):
            kx = px[p]
            ky = py[p]
            for m in range(bk):
                s += x[kx, r * bk + m] * y[ky, m * bc + c]
        wp.atomic_add(dest, tgt[d], e, alpha * s)

    @wp.kernel
    def sparse_mm_rows(x_starts: I1, x_ends: I1, x_cols: I1, x: A2, y_starts: I1, y_ends: I1,
                       y: A2, pair_offsets: I1, pos: I1, scratch: I1, z_offsets: I1,
                       z_cols: I1, z: A2, bk: int, bc: int, alpha: scalar):
        # row i of z: its columns copied from the topology kernel's scratch, then
        # z[pos[p]] += alpha * x[k] @ y[kk] for the products p of the row, in the order the
        # topology kernel numbered them; one thread per row
        i = wp.tid()
        br = z.shape[1] // bc
        p = pair_offsets[i]
        zb = z_offsets[i]
        for a in range(z_offsets[i + 1] - zb):
            z_cols[wp.uint32(zb + a)] = scratch[wp.uint32(p + a)]
        for k in range(x_starts[i], x_ends[i]):
            j = x_cols[k]
            for kk in range(y_starts[j], y_ends[j]):
                q = zb + pos[wp.uint32(p)]
                for r in range(br):
                    for c in range(bc):
                        s = scalar(0.0)
                        for m in range(bk):
                            s += x[k, r * bk + m] * y[kk, m * bc + c]
                        wp.atomic_add(z, q, r * bc + c, alpha * s)
                p += 1

    @wp.kernel
    def sparse_csr_mm_rows(x_starts: I1, x_ends: I1, x_cols: I1, x: A1, y_starts: I1,
                           y_ends: I1, y: A1, pair_offsets: I1, pos: I1, scratch: I1,
                           z_offsets: I1, z_cols: I1, z: A1, alpha: scalar):
        # mm_rows for scalar blocks
        i = wp.tid()
        p = pair_offsets[i]
        zb = z_offsets[i]
        for a in range(z_offsets[i + 1] - zb):
            z_cols[wp.uint32(zb + a)] = scratch[wp.uint32(p + a)]
        for k in range(x_starts[i], x_ends[i]):
            uk = wp.uint32(k)
            j = wp.uint32(x_cols[uk])
            a = alpha * x[uk]
            for kk in range(y_starts[j], y_ends[j]):
                wp.atomic_add(z, wp.uint32(zb + pos[wp.uint32(p)]), a * y[wp.uint32(kk)])
                p += 1

    I2 = wp.array2d(dtype=int)

    @wp.kernel(enable_backward=False)
    def sparse_mm_fused(workers: int, nrow: int, x_starts: I1, x_ends: I1, x_cols: I1, x: A2,
                        y_starts: I1, y_ends: I1, y_cols: I1, y: A2, marker: I2, slot: I2,
                        stamp: int, pair_offsets: I1, scratch: I1, counts: I1, vals: A2,
                        want_pos: int, pos: I1, bk: int, bc: int, alpha: scalar):
        # z = alpha * x @ y off any tape, in one pass over the products: worker w takes rows
        # [w * nrow / workers, (w + 1) * nrow / workers); a row's columns go to scratch[base:]
        # in the order met (row w of ``marker`` tags them with stamp + i, ``slot`` keeps their
        # place) and each product's block is added to vals[base + place]; then the columns
        # are sorted, their blocks moved along. With want_pos, the products are numbered as
        # the value kernels of a reused topology read them (sparse_mm_number).
        # sparse_mm_compact then moves each row into z
        w = wp.tid()
        br = vals.shape[1] // bc
        for i in range((w * nrow) // workers, ((w + 1) * nrow) // workers):
            base = pair_offsets[i]
            tag = i + stamp
            n = int(0)
            for k in range(x_starts[i], x_ends[i]):
                uk = wp.uint32(k)
                j = wp.uint32(x_cols[uk])
                for kk in range(y_starts[j], y_ends[j]):
                    ukk = wp.uint32(kk)
                    c = wp.uint32(y_cols[ukk])
                    first = marker[w, c] != tag
                    if first:
                        marker[w, c] = tag
                        slot[w, c] = n
                        scratch[wp.uint32(base + n)] = int(c)
                        n += 1
                    q = wp.uint32(base + slot[w, c])
                    for r in range(br):
                        for cc in range(bc):
                            s = scalar(0.0)
                            for m in range(bk):
                                s += x[uk, wp.uint32(r * bk + m)] * y[ukk, wp.uint32(m * bc + cc)]
                            e = wp.uint32(r * bc + cc)
                            if first:
                                vals[q, e] = alpha * s
                            else:
                                vals[q, e] = vals[q, e] + alpha * s
            counts[i] = n
            for a in range(base + 1, base + n):
                at = sparse_sorted_place(scratch, base, a)
                if at < a:
                    # entries at .. a rotated one place up with their blocks, a into at
                    for e in range(vals.shape[1]):
                        held = vals[wp.uint32(a), e]
                        for d in range(a, at, -1):
                            vals[wp.uint32(d), e] = vals[wp.uint32(d - 1), e]
                        vals[wp.uint32(at), e] = held
                    sparse_shift_in(scratch, at, a)
            if want_pos != 0:
                sparse_mm_number(w, i, base, n, x_starts, x_ends, x_cols, y_starts, y_ends,
                                 y_cols, marker, scratch, pos)

    @wp.kernel(enable_backward=False)
    def sparse_csr_mm_fused(workers: int, nrow: int, x_starts: I1, x_ends: I1, x_cols: I1,
                            x: A1, y_starts: I1, y_ends: I1, y_cols: I1, y: A1, marker: I2,
                            slot: I2, stamp: int, pair_offsets: I1, scratch: I1, counts: I1,
                            vals: A1, want_pos: int, pos: I1, alpha: scalar):
        # sparse_mm_fused for scalar blocks, its row loop written out again: the generic
        # kernel's block loops (trip count 1) and 2-d indexing made the CSR product about 1.8x
        # slower (36 against 20 ms for the 64k-row Poisson product, measured when written)
        w = wp.tid()
        for i in range((w * nrow) // workers, ((w + 1) * nrow) // workers):
            base = pair_offsets[i]
            tag = i + stamp
            n = int(0)
            for k in range(x_starts[i], x_ends[i]):
                uk = wp.uint32(k)
                j = wp.uint32(x_cols[uk])
                xa = alpha * x[uk]
                for kk in range(y_starts[j], y_ends[j]):
                    ukk = wp.uint32(kk)
                    c = wp.uint32(y_cols[ukk])
                    v = xa * y[ukk]
                    if marker[w, c] != tag:
                        marker[w, c] = tag
                        slot[w, c] = n
                        scratch[wp.uint32(base + n)] = int(c)
                        vals[wp.uint32(base + n)] = v
                        n += 1
                    else:
                        q = wp.uint32(base + slot[w, c])
                        vals[q] = vals[q] + v
            counts[i] = n
            for a in range(base + 1, base + n):
                cv = scratch[wp.uint32(a)]
                vv = vals[wp.uint32(a)]
                b = a - 1
                while b >= base:
                    t = scratch[wp.uint32(b)]
                    if t <= cv:
                        break
                    scratch[wp.uint32(b + 1)] = t
                    vals[wp.uint32(b + 1)] = vals[wp.uint32(b)]
                    b -= 1
                scratch[wp.uint32(b + 1)] = cv
                vals[wp.uint32(b + 1)] = vv
            if want_pos != 0:
                sparse_mm_number(w, i, base, n, x_starts, x_ends, x_cols, y_starts, y_ends,
                                 y_cols, marker, scratch, pos)

    @wp.kernel(enable_backward=False)
    def sparse_mm_compact(pair_offsets: I1, scratch: I1, vals: A2, z_offsets: I1, z_cols: I1,
                          z: A2):
        # row i of the product: its columns and values moved from the scratch of
        # sparse_mm_fused to their place in z
        i = wp.tid()
        base = pair_offsets[i]
        zb = z_offsets[i]
        for a in range(z_offsets[i + 1] - zb):
            z_cols[wp.uint32(zb + a)] = scratch[wp.uint32(base + a)]
            for e in range(z.shape[1]):
                z[wp.uint32(zb + a), e] = vals[wp.uint32(base + a), e]

    @wp.kernel
    def sparse_zero(dest: A2):
        d, e = wp.tid()
        dest[d, e] = scalar(0.0)

    return {"gather": sparse_gather, "csr_mv": sparse_csr_mv, "bsr_mv": sparse_bsr_mv,
            "mm_pairs": sparse_mm_pairs, "mm_rows": sparse_mm_rows,
            "csr_mm_rows": sparse_csr_mm_rows, "mm_fused": sparse_mm_fused,
            "csr_mm_fused": sparse_csr_mm_fused,
            "mm_compact": sparse_mm_compact, "zero": sparse_zero}


_mv_blocks = {}


def _block_mv_kernel(scalar, br, bc):
    """The product kernel for ``br x bc`` blocks: blocks and vectors as weft matrices and
    vectors (kept in registers), compiled once per block shape."""
    key = (scalar, br, bc)
    k = _mv_blocks.get(key)
    if k is not None:
        return k
    M = wp.types.matrix(shape=(br, bc), dtype=scalar)
    VX = wp.types.vector(length=bc, dtype=scalar)
    VY = wp.types.vector(length=br, dtype=scalar)
    I1 = wp.array(dtype=int)

    # the loop of sparse_csr_mv on blocks, written out again: the same loop as one wp.func for
    # both (checked) made this kernel 1.6x slower (the vector sum returned through the func)
    @wp.kernel
    def sparse_block_mv(starts: I1, ends: I1, columns: I1, values: wp.array(dtype=M),
                        x: wp.array(dtype=VX), alpha: scalar, beta: scalar,
                        w: wp.array(dtype=VY), y: wp.array(dtype=VY)):
        i = wp.tid()
        s = VY()
        for k in range(starts[i], ends[i]):
            # unsigned indices: Numba then drops its negative-index test, which kept this
            # loop 2-3x slower (the indices come from a valid matrix: never negative)
            u = wp.uint32(k)
            s += values[u] * x[wp.uint32(columns[u])]
        r = alpha * s
        if beta != scalar(0.0):
            r += beta * w[i]
        y[i] = r

    _mv_blocks[key] = sparse_block_mv
    return sparse_block_mv


_topo = {}


def _topology_kernels():
    """The integer kernels of the product topology (compiled once, no adjoint)."""
    if _topo:
        return _topo
    I1 = wp.array(dtype=int)
    I2 = wp.array2d(dtype=int)

    @wp.kernel(enable_backward=False)
    def sparse_mm_topology(workers: int, nrow: int, x_starts: I1, x_ends: I1, x_cols: I1,
                           y_starts: I1, y_ends: I1, y_cols: I1, marker: I2, stamp: int,
                           pair_offsets: I1, scratch: I1, counts: I1, pos: I1):
        # worker w takes rows [w * nrow / workers, (w + 1) * nrow / workers); for each row
        # the sorted columns its products reach (sparse_mm_row_columns) and the products
        # numbered by them (sparse_mm_number)
        w = wp.tid()
        for i in range((w * nrow) // workers, ((w + 1) * nrow) // workers):
            base = pair_offsets[i]
            n = sparse_mm_row_columns(w, i, i + stamp, base, x_starts, x_ends, x_cols,
                                      y_starts, y_ends, y_cols, marker, scratch)
            counts[i] = n
            sparse_mm_number(w, i, base, n, x_starts, x_ends, x_cols, y_starts, y_ends,
                             y_cols, marker, scratch, pos)

    @wp.kernel(enable_backward=False)
    def sparse_mm_row_pairs(x_starts: I1, x_ends: I1, x_cols: I1, y_starts: I1, y_ends: I1,
                            pairs: wp.array(dtype=wp.int64)):
        # pairs[i + 1]: the block products of row i of x @ y (x's blocks times the lengths of
        # the rows of y they meet)
        i = wp.tid()
        n = wp.int64(0)
        for k in range(x_starts[i], x_ends[i]):
            j = wp.uint32(x_cols[wp.uint32(k)])
            n += wp.int64(y_ends[j] - y_starts[j])
        pairs[i + 1] = n

    _topo["mm"] = sparse_mm_topology
    _topo["row_pairs"] = sparse_mm_row_pairs
    return _topo


_ZERO_I = {}


def _zeros_i(n, device):
    """A shared zero int32 array of length at least ``n`` (empty segments)."""
    key = str(device)
    z = _ZERO_I.get(key)
    if z is None or z.shape[0] < n:
        z = _ZERO_I[key] = wp.zeros(max(n, 1024), dtype=int, device=device)
    return z


def _perm(block_shape, transpose):
    """Component permutation reading a block (transposed when asked)."""
    r, c = block_shape
    if not transpose:
        return np.arange(r * c, dtype=np.int32)
    # dest block shape (c, r): dest[i, j] = src[j, i]
    i, j = np.divmod(np.arange(r * c), r)
    return (j * c + i).astype(np.int32)


_PERMS = {}


def _perm_array(block_shape, transpose, device):
    key = (block_shape, transpose, str(device))
    p = _PERMS.get(key)
    if p is None:
        p = _PERMS[key] = _int_array(_perm(block_shape, transpose), device)
    return p


def _segments(blk, count):
    """``(seg, order)``: for inputs assigned to blocks ``blk`` (-1: dropped), the start of each
    block's run in ``order`` (length ``count + 1``) and the inputs in block order."""
    keep = np.flatnonzero(blk >= 0)
    b = blk[keep]
    order = keep[np.argsort(b, kind="stable")]
    seg = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(b, minlength=count), out=seg[1:])
    return seg, order


def _gather(dest_values, dest_shape, tgt, terms):
    """Write ``dest_values[tgt[j]] = sum over terms of scale * sum of the term's source blocks
    assigned to ``j``.

    ``terms``: up to two ``(src_values, src_block_shape, blk, src_slots, scale, transpose)``:
    input ``t`` reads block ``src_slots[t]`` of ``src_values`` into destination ``blk[t]``
    (an index into ``tgt``; -1 drops it). Runs one weft kernel (recorded on a tape) over the
    range of slots ``tgt`` spans."""
    tgt = np.asarray(tgt, dtype=np.int64)
    if tgt.size == 0:
        return
    lo, hi = int(tgt.min()), int(tgt.max()) + 1
    m = hi - lo
    device = dest_values.device
    scalar = type_scalar_type(dest_values.dtype)
    k = _kernels_for(scalar)
    bs = dest_shape[0] * dest_shape[1]
    dest2 = _scalar_view(dest_values, dest_shape)[lo:hi]
    on = np.zeros(m, dtype=np.int32)
    on[tgt - lo] = 1
    args = []
    for term in terms:
        src, src_shape, blk, slots, scale, transpose = term
        blk = np.asarray(blk, dtype=np.int64)
        pos = np.where(blk >= 0, tgt[np.maximum(blk, 0)] - lo, -1)
        seg, order = _segments(pos, m)
        idx = np.asarray(slots, dtype=np.int64)[order]
        args.append((_term_view(src, src_shape), _int_array(seg, device),
                     _int_array(idx if idx.size else np.zeros(1), device),
                     _perm_array(src_shape, transpose, device), scalar(scale)))
    a = args[0]
    if len(args) > 1:
        b = args[1]
    else:
        b = (a[0], _zeros_i(m + 1, device), a[2], None, scalar(0.0))
    wp.launch(k["gather"], dim=(m, bs), device=device,
              inputs=[dest2, _int_array(on, device), a[0], a[1], a[2], a[3], a[4],
                      b[0], b[1], b[2], b[4]])


class _Values2d:
    """A triplet values array, seen by :func:`_gather` as 2-d scalars."""

    def __init__(self, values, block_shape):
        self.values = values
        self.block_shape = block_shape


def _values2d(values, block_shape):
    """A values array (1-d of blocks or 3-d of scalars) as 2-d scalars ``(n, bs)``."""
    if values.ndim == 3:
        return values.reshape((values.shape[0], block_shape[0] * block_shape[1]))
    return _scalar_view(values, block_shape)


def _term_view(src, shape):
    if isinstance(src, _Values2d):
        return _values2d(src.values, src.block_shape)
    return _scalar_view(src, shape)
