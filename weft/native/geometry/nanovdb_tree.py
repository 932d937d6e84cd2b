"""The tree part of the NanoVDB reader (``weft/geometry/nanovdb.py``): node arrays checked and
re-packed into the ``tree`` and ``values`` arrays that the volume queries read."""
import numpy as np

from .nanovdb_format import (ALIGN, GRID_SIZE, INDEX, INDEX_MASK, INDEX_TYPES, LEAF_COUNT,
    LOWER_COUNT, MAX_SLOTS, TREE_SIZE, UPPER_COUNT, VALUE_TYPES, NanoVDBError, _field,
    node_layout, root_key)

def pack_tree(origins, codes, upper, lower, n_upper, n_lower, bg_code):
    """The ``tree`` array of upper nodes at ``origins`` (R, 3) with root codes ``codes`` (R,),
    flat int32 ``upper`` (U * 32768) and ``lower`` (L * 4096) tables and the background's code:
    ``[R, U, L, bg_code, R entries (key >> 30, key & (2**30 - 1), code, 0) sorted by key
    (``root_key``), upper, lower]``."""
    o = np.asarray(origins, np.int64).reshape(-1, 3)
    key = root_key(o[:, 0], o[:, 1], o[:, 2])
    order = np.argsort(key, kind="stable")
    entries = np.stack([key[order] >> 30, key[order] & ((1 << 30) - 1),
                        np.asarray(codes, np.int64)[order], np.zeros(len(o), np.int64)], axis=1)
    head = np.array([len(o), n_upper, n_lower, bg_code], np.int64)
    return np.concatenate([head, entries.reshape(-1), np.asarray(upper, np.int64),
                           np.asarray(lower, np.int64)]).astype(np.int32)


def tree_parts(tree):
    """(root keys (R,) int64, root codes (R,), upper (U, 32768), lower (L, 4096), background
    code) of a tree."""
    r, u, n_lower, bg = (int(v) for v in tree[:4])
    base = 4 + 4 * r
    e = tree[4:base].reshape(r, 4).astype(np.int64)
    return ((e[:, 0] << 30) | e[:, 1], e[:, 2], tree[base:base + 32768 * u].reshape(u, 32768),
            tree[base + 32768 * u:base + 32768 * u + 4096 * n_lower].reshape(n_lower, 4096), bg)


def _level(r, rel, count, size, grid_size, what):
    """(begin, end) byte range of a node array whose offset ``rel`` is relative to the tree."""
    if count == 0:
        return 0, 0
    if rel < TREE_SIZE or rel % ALIGN or rel > grid_size - GRID_SIZE:
        raise NanoVDBError(f"NanoVDB grid: {what} offset {rel} is invalid")
    begin = GRID_SIZE + rel
    if count > (grid_size - begin) // size:
        raise NanoVDBError(f"NanoVDB grid: {count} {what} of {size} bytes do not fit in the grid")
    return begin, begin + count * size


def _children(parent_begin, rel, child_begin, child_size, child_count, what):
    """Indices of the child nodes at byte offsets ``rel`` (int64 array, relative to each
    parent's start ``parent_begin``); each must be the exact start of one of the children."""
    rel = np.asarray(rel, np.int64)
    bad = (rel <= -(1 << 40)) | (rel >= (1 << 40))
    pos = np.asarray(parent_begin, np.int64) + np.where(bad, 0, rel) - child_begin
    idx = pos // child_size if child_size else pos
    bad |= (pos < 0) | (pos % max(child_size, 1) != 0) | (idx >= child_count)
    if np.any(bad):
        raise NanoVDBError(f"NanoVDB grid: a {what} child offset does not point at a node")
    counts = np.bincount(idx, minlength=child_count)
    if child_count and (counts.max(initial=0) > 1 or counts.min(initial=1) < 1):
        raise NanoVDBError(f"NanoVDB grid: {what} children are not each referenced exactly once")
    return idx


def _child_origins(parent_origins, parent_idx, bit, log2dim, child_width):
    """Origins of children at table bit ``bit`` of nodes with ``parent_origins``."""
    mask = (1 << log2dim) - 1
    off = np.stack([(bit >> (2 * log2dim)) & mask, (bit >> log2dim) & mask, bit & mask], axis=1)
    return parent_origins[parent_idx] + off.astype(np.int64) * child_width


def _decode_tree(r, gtype, grid_size, tree_end, name):
    lay = node_layout(gtype)
    index = gtype in INDEX_TYPES
    if index:
        scalar, channels = np.int64, 1
    else:
        scalar, channels = VALUE_TYPES[gtype]
    vdtype = np.dtype(scalar).newbyteorder("<")
    t = GRID_SIZE
    off_leaf, off_lower, off_upper, off_root = r.unpack("QQQQ", t, "tree header")
    n_leaf, n_lower, n_upper = r.unpack("III", t + 32, "tree node counts")
    tile_counts = r.unpack("III", t + 44, "tree tile counts")
    tree_voxels = r.u64(t + 56, "tree voxel count")

    root_begin, root_end = _level(r, off_root, 1, lay.root_size, grid_size, "root")
    index_bbox = r.array(root_begin, np.int32, 6, "root bbox").reshape(2, 3)
    n_tiles = r.u32(root_begin + 24, "root tile count")
    if n_tiles > (grid_size - root_end) // lay.tile_size:
        raise NanoVDBError(f"NanoVDB grid: {n_tiles} root tiles do not fit in the grid")
    occupied = root_end + n_tiles * lay.tile_size
    ranges = []
    for rel, count, size, what in ((off_upper, n_upper, lay.upper_size, "upper nodes"),
                                   (off_lower, n_lower, lay.lower_size, "lower nodes"),
                                   (off_leaf, n_leaf, lay.leaf_size, "leaves")):
        begin, end = _level(r, rel, count, size, grid_size, what)
        if count and begin < occupied:
            raise NanoVDBError(f"NanoVDB grid: {what} overlap the nodes before them")
        occupied = max(occupied, end)
        ranges.append(begin)
    if occupied > tree_end:
        raise NanoVDBError("NanoVDB grid: tree nodes overlap the blind metadata")
    upper_begin, lower_begin, leaf_begin = ranges
    s = lay.value_size

    # tile values of every level, deduplicated by their bytes; slot = leaves * 512 + rank
    bg_bytes = r.rows(root_begin + lay.root_off_background, 1, s, "background")
    tiles = r.rows(root_end, n_tiles, lay.tile_size, "root tiles")
    keys = _field(tiles, 0, 8, np.uint64).ravel()
    child = _field(tiles, 8, 8, np.int64).ravel()
    has_child = child != 0
    uppers = r.rows(upper_begin, n_upper, lay.upper_size, "upper nodes")
    lowers = r.rows(lower_begin, n_lower, lay.lower_size, "lower nodes")
    leaves = r.rows(leaf_begin, n_leaf, lay.leaf_size, "leaves")

    # root: keys -> upper origins; children must be each upper node exactly once
    kx, ky, kz = (keys >> np.uint64(42)), (keys >> np.uint64(21)) & np.uint64(0x1FFFFF), \
        keys & np.uint64(0x1FFFFF)
    if np.any(kx >= (1 << 20)) or np.any(ky >= (1 << 20)) or np.any(kz >= (1 << 20)):
        raise NanoVDBError("NanoVDB grid: a root tile key is out of range")
    tile_origins = (np.stack([kx, ky, kz], axis=1).astype(np.int64) << 12)
    tile_origins = np.where(tile_origins >= (1 << 31), tile_origins - (1 << 32), tile_origins)
    up_idx = _children(root_begin, child[has_child], upper_begin, lay.upper_size, n_upper,
                       "root tile")
    upper_origins = np.zeros((n_upper, 3), np.int64)
    upper_origins[up_idx] = tile_origins[has_child]

    def internal(nodes, count, mask_off, table_off, begin, size, child_begin, child_size,
                 n_child, what):
        child_mask = np.unpackbits(nodes[:, mask_off:mask_off + count // 8], axis=1,
                                   bitorder="little").astype(bool)
        table = nodes[:, table_off:table_off + count * lay.table_stride].reshape(
            len(nodes), count, lay.table_stride)
        node_i, bit = np.nonzero(child_mask)
        rel = _field(table[node_i, bit], 0, 8, np.int64).ravel()
        idx = _children(begin + node_i.astype(np.int64) * size, rel, child_begin, child_size,
                        n_child, what)
        tile_vals = table[:, :, :s][~child_mask]
        return child_mask, node_i, bit, idx, tile_vals

    up_mask, up_node, up_bit, lo_idx, up_tiles = internal(
        uppers, UPPER_COUNT, 4128, lay.upper_off_table, upper_begin, lay.upper_size,
        lower_begin, lay.lower_size, n_lower, "upper node")
    lo_mask, lo_node, lo_bit, lf_idx, lo_tiles = internal(
        lowers, LOWER_COUNT, 544, lay.lower_off_table, lower_begin, lay.lower_size,
        leaf_begin, lay.leaf_size, n_leaf, "lower node")
    lower_origins = np.zeros((n_lower, 3), np.int64)
    lower_origins[lo_idx] = _child_origins(upper_origins, up_node, up_bit, 5, 128)
    leaf_origins = np.zeros((n_leaf, 3), np.int64)
    leaf_origins[lf_idx] = _child_origins(lower_origins, lo_node, lo_bit, 4, 8)

    n_leaf_slots = n_leaf * LEAF_COUNT
    root_vals = tiles[~has_child, lay.tile_off_value:lay.tile_off_value + s]
    if index:
        # index grids: tiles and background have no voxel data (Warp reads them as background)
        tile_values = np.full(1, -1, np.int64)
        root_slot = np.full(len(root_vals), n_leaf_slots, np.int64)
        up_slot = np.full(len(up_tiles), n_leaf_slots, np.int64)
        lo_slot = np.full(len(lo_tiles), n_leaf_slots, np.int64)
        bg_slot = n_leaf_slots
        background = np.full(1, -1, np.int64)
    else:
        every = np.concatenate([bg_bytes, root_vals, up_tiles, lo_tiles], axis=0)
        uniq, inv = _dedupe_rows(every)
        inv = inv + n_leaf_slots
        tile_values = np.frombuffer(uniq.tobytes(), vdtype).astype(scalar)
        bg_slot = int(inv[0])
        a, b = 1, 1 + len(root_vals)
        root_slot, up_slot, lo_slot = inv[a:b], inv[b:b + len(up_tiles)], inv[b + len(up_tiles):]
        background = np.frombuffer(bg_bytes.tobytes(), vdtype).astype(scalar)
    n_slots = n_leaf_slots + len(tile_values) // channels
    if n_slots > MAX_SLOTS:
        raise NanoVDBError(f"NanoVDB grid '{name}' has {n_slots} value slots; weft supports "
                           f"at most {MAX_SLOTS}")

    upper = np.empty((n_upper, UPPER_COUNT), np.int32)
    upper[up_node, up_bit] = lo_idx
    upper[~up_mask] = -(up_slot + 1)
    lower = np.empty((n_lower, LOWER_COUNT), np.int32)
    lower[lo_node, lo_bit] = lf_idx
    lower[~lo_mask] = -(lo_slot + 1)

    codes = np.empty(n_tiles, np.int64)
    codes[has_child] = up_idx
    codes[~has_child] = -(root_slot + 1)
    rkeys = root_key(tile_origins[:, 0], tile_origins[:, 1], tile_origins[:, 2])
    if len(np.unique(rkeys)) != len(rkeys):
        raise NanoVDBError("NanoVDB grid: two root tiles have the same key")
    tree = pack_tree(tile_origins, codes, upper.reshape(-1), lower.reshape(-1), n_upper,
                     n_lower, -(bg_slot + 1))

    masks = _field(leaves, 16, 64, np.uint64).reshape(n_leaf, 8)
    if index:
        leaf_values = _index_values(gtype, leaves, masks, name)
    else:
        leaf_values = _field(leaves, lay.leaf_off_table, LEAF_COUNT * s, vdtype).astype(
            scalar).reshape(-1)
    values = np.concatenate([leaf_values.reshape(-1), tile_values.reshape(-1)]).astype(scalar)
    return dict(upper_count=n_upper, lower_count=n_lower, leaf_count=n_leaf,
                tile_counts=tile_counts, tree_voxel_count=tree_voxels, index_bbox=index_bbox,
                background=background, tree=tree, values=np.ascontiguousarray(values),
                channels=channels,
                leaf_origins=leaf_origins.astype(np.int32), leaf_masks=masks)


def _dedupe_rows(rows):
    """(distinct rows, index of each row's distinct row) of byte records ``rows`` (N, S),
    compared bit for bit; row 0 (the background) gets index 0. Most tiles of real grids hold
    the background, so only the others are sorted."""
    words = np.ascontiguousarray(rows).view(np.uint32)       # S is a multiple of 4
    diff = words[:, 0] != words[0, 0]
    for c in range(1, words.shape[1]):
        diff |= words[:, c] != words[0, c]
    other = np.nonzero(diff)[0]
    inv = np.zeros(len(rows), np.int64)
    if len(other) == 0:
        return rows[:1], inv
    uniq, sub = np.unique(words[other], axis=0, return_inverse=True)
    inv[other] = sub.ravel() + 1
    return np.concatenate([rows[:1], uniq.view(np.uint8)], axis=0), inv


def _index_values(gtype, leaves, masks, name):
    """Zero-based voxel-data index of every leaf voxel (-1: none) of an index grid."""
    n_leaf = len(leaves)
    offset = _field(leaves, 80, 8, np.uint64).ravel()
    if np.any(offset >= np.uint64(1 << 62)):
        raise NanoVDBError(f"NanoVDB index grid '{name}': a leaf offset is out of range")
    offset = offset.astype(np.int64)
    if gtype in (INDEX, INDEX_MASK):
        return (offset[:, None] + np.arange(LEAF_COUNT, dtype=np.int64) - 1).reshape(-1)
    bits = np.unpackbits(masks.view(np.uint8).reshape(n_leaf, 64), axis=1,
                         bitorder="little").astype(np.int64)
    # the stored prefix sums (9 bits per 64-bit word) must agree with the masks
    counts = bits.reshape(n_leaf, 8, 64).sum(axis=2).cumsum(axis=1)[:, :7]
    packed = np.zeros(n_leaf, np.uint64)
    for w in range(7):
        packed |= counts[:, w].astype(np.uint64) << np.uint64(9 * w)
    prefix = _field(leaves, 88, 8, np.uint64).ravel()
    if np.any(prefix != packed):
        raise NanoVDBError(f"NanoVDB index grid '{name}': leaf prefix sums disagree with the "
                           "leaves' masks")
    rank = np.cumsum(bits, axis=1) - bits
    out = np.where(bits == 1, offset[:, None] + rank - 1, -1)
    return out.reshape(-1)


