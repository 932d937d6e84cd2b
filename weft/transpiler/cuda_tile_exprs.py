"""The expressions of the pass ``cuda_tiles``: :class:`TileExpressions` gives each tile an
expression makes its buffer in shared memory and writes the device function that fills it (the
table of what each generated-code helper makes), and leaves scalar expressions as they are."""
from __future__ import annotations

import ast
import copy
import re

import numpy as np

from ..stdlib.exprs import attr_path, name
from .cuda_tile_code import (_BINOPS, _EFFECTS, _SCALAR_RESULTS, Tile, Unsupported, _assign,
                             _bytes, _const_int, _expr_stmt, _idx_len, _literal_shape,
                             _np_dtype, _slice_len, _static_index, _wk, _wk_name, _zeros)


#: the scans, their adjoints and tangents (``weft.native.cuda_tiles``: lane 0, the CPU's order),
#: each a tile of its first operand's shape
_SCANS = frozenset(f"tile_scan_{k}{suffix}" for k in ("inclusive", "exclusive", "max_inclusive",
                                                      "min_inclusive") for suffix in ("", "_adj")
                   ) | {"tile_scan_max_inclusive_jvp", "tile_scan_min_inclusive_jvp"}


def _one_index(idx):
    """An element's index for an atomic on a tile: one index as itself, not as a tuple of one
    (numba-cuda's atomics take a 1-D array's index as a number only)."""
    if isinstance(idx, ast.Tuple) and len(idx.elts) == 1:
        return idx.elts[0]
    return idx


#: the forms the generators write for each CUDA thread's own element of a tile (``t[i, j] +=
#: x``, ``&=``..., the scatters, a masked write's adjoint), made ``<form>_into``
#: (``weft.native.cuda_helpers.PASS_FORMS`` names them for the vocabulary)
ELEMENT_WRITES = ("tile_add_at", "tile_set_at", "tile_zero_at_masked", "tile_and_at",
                  "tile_or_at", "tile_xor_at")


class TileExpressions:
    """The state of one generated CUDA function's rewrite, and its expressions (the statements:
    :class:`weft.transpiler.cuda_tiles._Function`)."""

    def __init__(self, fdef, arrays, names):
        self.fdef = fdef
        self.arrays = arrays  # array -> (dtype name, ndim, element shape) (:func:`_arrays`)
        self.env = {}         # name -> Tile (its buffer is in shared memory)
        self.decls = []       # statements at the top: loops' carry buffers, shared slots
        self.names = names
        self.shared = 0       # bytes of shared memory allocated
        self.loc = None
        # the elements whose writes the adjoint undoes, (tile, index): ``tile_zero_at(t, i)``
        self.written = {(c.args[0].id, ast.dump(c.args[1])) for c in ast.walk(fdef)
                        if _wk_name(c) == "tile_zero_at" and isinstance(c.args[0], ast.Name)} \
            if getattr(fdef, "weft_pass", None) == "adjoint" else set()
        self.elem_views = {}  # view of an element's components -> (tile, index node)
        self.pairs = {}       # a pair of tiles (``tile_sort``'s result) -> its two buffers
        self.stack_values = set()  # the buffers of tile stacks' values (and their aliases)
        self.stacks = set()   # an adjoint's stacks of the tiles a loop carries (shared)

    # -- allocation -------------------------------------------------------------------------
    def _fresh(self, hint):
        self.names[0] += 1
        return f"_{hint}{self.names[0]}"

    def alloc(self, tile, out):
        """A new buffer for ``tile`` bound to a fresh name (appended to ``out``): one per
        operation, also in a loop (see :meth:`loop_body`)."""
        shape = ast.Tuple([ast.Constant(d) for d in tile.shape], ast.Load())
        n = self._fresh("shm")
        self.shared += _bytes(tile)
        out.append(_assign(n, ast.Call(attr_path("cuda.shared.array"), [
            shape, attr_path(f"np.{tile.dtype}")], [])))
        self.env[n] = tile
        return n

    # -- expressions ------------------------------------------------------------------------
    def tile_of(self, node):
        return self.env.get(node.id) if isinstance(node, ast.Name) else None

    def value(self, node, out):
        """The name of a buffer holding tile expression ``node`` (its statements appended to
        ``out``), or None when ``node`` is not a tile."""
        if isinstance(node, ast.Name):
            return node.id if node.id in self.env else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id in self.pairs and _const_int(node.slice) in (0, 1):
            return self.pairs[node.value.id][_const_int(node.slice)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "np" and \
                node.func.attr == "zeros":
            return self.filled(node, ast.Constant(0), out)
        numpy = self.numpy_form(node, out)
        if numpy is not None:
            return numpy
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id in self.env and any(isinstance(n, ast.Slice) or (
                    isinstance(n, ast.Constant) and n.value is Ellipsis)
                    for n in ast.walk(node.slice)):  # a view: ``t[..., c]``, ``t[1:3]``
            index = _static_index(node.slice)
            if index is None:
                raise Unsupported("a view of a tile at offsets not known when compiling")
            base = self.env[node.value.id]
            v = self._fresh("shv")
            out.append(_assign(v, node))
            self.env[v] = Tile(np.empty(base.shape, np.int8)[index].shape, base.dtype)
            return v
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "reshape" and isinstance(node.func.value, ast.Name) and \
                node.func.value.id in self.env:  # a view
            base = self.env[node.func.value.id]
            dims = _literal_shape(node.args[0]) if len(node.args) == 1 else None
            if dims is None or int(np.prod(dims)) != int(np.prod(base.shape)):
                raise Unsupported("a tile reshaped to a shape not known when compiling")
            v = self._fresh("shv")
            out.append(_assign(v, node))
            self.env[v] = Tile(dims, base.dtype)
            return v
        if isinstance(node, ast.BinOp):
            if isinstance(node.left, ast.Call) and isinstance(node.left.func, ast.Attribute) \
                    and node.left.func.attr == "zeros" and isinstance(node.op, ast.Add):
                return self.filled(node.left, self.scalar(node.right, out), out)
            return self.binop(node, out)
        fn = _wk_name(node)
        if fn is None or not fn.startswith("tile_") or fn in _SCALAR_RESULTS:
            return None
        if fn in _EFFECTS:
            raise Unsupported(f"'{fn}' used as a value")
        return self.helper(fn, node, out)

    def numpy_form(self, node, out):
        """The numpy the tile rules write: ``np.ascontiguousarray(t[slices])`` (a sub-tile),
        ``t.astype(np.dt)``, ``np.arange(n).astype(np.dt)``; None for anything else."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return None
        f = node.func
        inner = node.args[0] if len(node.args) == 1 else None
        if ast.unparse(f) == "np.ascontiguousarray" and isinstance(inner, ast.Call) and \
                ast.unparse(inner.func) == "np.transpose" and len(inner.args) == 2 and \
                ast.unparse(inner.args[1]) == "(1, 0)":  # (a reduction along axis 0)
            src = self.value(inner.args[0], out)
            if src is None or len(self.env[src].shape) != 2:
                raise Unsupported("a transpose of a tile of other than 2 dimensions")
            n = self.alloc(Tile(self.env[src].shape[::-1], self.env[src].dtype), out)
            out.append(_expr_stmt(_wk("tile_transpose_into", name(n), name(src))))
            return n
        if ast.unparse(f) == "np.ascontiguousarray" and len(node.args) == 1 and \
                isinstance(node.args[0], ast.Subscript):
            view = node.args[0]
            base = self.value(view.value, out)
            if base is None:
                return None
            tile = self.env[base]
            taken = self.index_tile(view.slice, tile)
            if taken is not None:  # ``t[ii]``, ``t[ii, :]``, ``t[:, ii]``: a gather
                kind, ii = taken
                shape = (self.env[ii].shape[0],) + tile.shape[1:] if kind != "cols" else \
                    (tile.shape[0], self.env[ii].shape[0])
                n = self.alloc(Tile(shape, tile.dtype), out)
                out.append(_expr_stmt(_wk(f"tile_take{kind}_into", name(n), name(base),
                                          name(ii))))
                return n
            shape = self.view_shape(view.slice, tile)
            n = self.alloc(Tile(shape, tile.dtype), out)
            sliced = ast.Subscript(name(base), self.scalar(view.slice, out), ast.Load())
            out.append(_expr_stmt(_wk(f"tile_copy{len(shape)}", name(n), sliced)))
            return n
        if f.attr == "copy" and not node.args and not node.keywords:  # ``t.copy()``
            src = self.value(f.value, out)
            if src is None:
                return None
            n = self.alloc(self.env[src], out)
            out.append(_expr_stmt(_wk("tile_copy", name(n), name(src))))
            return n
        if f.attr == "astype" and len(node.args) == 1 and _np_dtype(node.args[0]):
            dt = _np_dtype(node.args[0])
            inner = f.value
            if isinstance(inner, ast.Call) and ast.unparse(inner.func) == "np.arange" and \
                    len(inner.args) == 1 and _const_int(inner.args[0]) is not None:
                n = self.alloc(Tile((_const_int(inner.args[0]),), dt), out)
                out.append(_expr_stmt(_wk("tile_arange_into", name(n))))
                return n
            src = self.value(inner, out)
            if src is None:
                return None
            n = self.alloc(Tile(self.env[src].shape, dt), out)
            out.append(_expr_stmt(_wk("tile_copy", name(n), name(src))))
            return n
        return None

    def view_shape(self, index, tile):
        """The shape of view ``t[index]`` of a tile of ``tile``'s shape (1 or 2 axes): its
        slices' lengths fixed by the code (their starts may be known only when running), its
        integer indices dropping their axes."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        shape = []
        for k, it in enumerate(items):
            if isinstance(it, ast.Slice):
                n = _slice_len(it, tile.shape[k])
                if n is None:
                    raise Unsupported("a tile slice whose length is not known when compiling")
                shape.append(n)
        shape += list(tile.shape[len(items):])
        if not 1 <= len(shape) <= 2:
            raise Unsupported("a slice of a tile of more than two dimensions")
        return tuple(shape)

    def index_tile(self, index, tile):
        """``(kind, index tile)`` when subscript ``index`` of a tile of ``tile``'s shape is a
        gather by a 1-D tile of indices: ``t[ii]`` (kind ``1``, a 1-D tile), ``t[ii, :]``
        (``_rows``) or ``t[:, ii]`` (``_cols``) of a 2-D tile; None when no tile indexes."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        tiles = [k for k, it in enumerate(items) if isinstance(it, ast.Name) and
                 it.id in self.env]
        if not tiles:
            return None

        def whole(it, dim):
            return isinstance(it, ast.Slice) and _slice_len(it, dim) == dim and (
                it.lower is None or _const_int(it.lower) == 0)
        ii = items[tiles[0]].id
        if len(self.env[ii].shape) == 1 and len(tiles) == 1:
            if len(tile.shape) == 1 and len(items) == 1:
                return "1", ii
            if len(tile.shape) == 2 and len(items) in (1, 2) and tiles[0] == 0 and (
                    len(items) == 1 or whole(items[1], tile.shape[1])):
                return "_rows", ii
            if len(tile.shape) == 2 and len(items) == 2 and tiles[0] == 1 and \
                    whole(items[0], tile.shape[0]):
                return "_cols", ii
        raise Unsupported("a tile indexed by tiles other than one 1-D tile of indices along "
                          "a whole axis")

    def filled(self, call, value, out):
        shape = call.args[0]
        dims = [_const_int(d) for d in shape.elts] if isinstance(shape, ast.Tuple) else \
            [_const_int(shape)]
        dt = _np_dtype(call.args[1]) if len(call.args) > 1 else None
        if None in dims or dt is None:
            raise Unsupported("a tile of a shape or type not known when compiling")
        n = self.alloc(Tile(tuple(dims), dt), out)
        out.append(_expr_stmt(_wk("tile_fill", name(n), value)))
        return n

    def binop(self, node, out):
        left = self.value(node.left, out)
        right = self.value(node.right, out)
        if left is None and right is None:
            return None
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise Unsupported(f"the operator {type(node.op).__name__} on whole tiles")
        tile = self.env[left if left is not None else right]
        if left is not None and right is not None and \
                self.env[left].shape != self.env[right].shape:
            raise Unsupported("an operator on tiles of different shapes")
        lhs = name(left) if left is not None else self.scalar(node.left, out)
        rhs = name(right) if right is not None else self.scalar(node.right, out)
        kind = ("t" if left is not None else "s") + ("t" if right is not None else "s")
        n = self.alloc(tile, out)
        out.append(_expr_stmt(_wk(f"tile_{op}_{kind}", name(n), lhs, rhs)))
        return n

    def args(self, node, out):
        """The arguments of a helper call: tiles as buffer names, the rest scalar."""
        res = []
        for a in node.args:
            t = self.value(a, out)
            res.append(name(t) if t is not None else self.scalar(a, out))
        return res

    def helper(self, fn, node, out):
        args = self.args(node, out)
        tiles = [self.tile_of(a) for a in args]
        if fn == "tile_from_lane":  # (x, thread, *dims, dtype): one thread fills it
            dims = [_const_int(a) for a in args[2:-1]]
            n = self.alloc(Tile(tuple(dims), _np_dtype(args[-1])), out)
            out.append(_expr_stmt(_wk("tile_from_lane_into", name(n), args[0], args[1])))
            return n
        if fn in ("tile_of_lanes", "tile_of_lanes_cols", "tile_of_lanes_rows"):
            # ``wp.tile(x)``: (x, [n,] block_dim, dtype) -> each thread writes its element
            dims = [_const_int(a) for a in args[1:-1]]
            n = self.alloc(Tile(tuple(dims), _np_dtype(args[-1])), out)
            out.append(_expr_stmt(_wk(f"{fn}_into", name(n), args[0])))
            return n
        m = re.fullmatch(r"tile_(load|view|load_reset)([1234])", fn)
        if m:
            nd = int(m.group(2))
            src = args[0]
            dt, ndim, elem = self.array(src)
            dims = [_const_int(d) for d in args[1 + nd:]]
            if nd + len(elem) > 4:
                raise Unsupported(f"a tile of {nd} dimensions of vectors or matrices")
            if dt is None or None in dims or len(dims) != nd or ndim != nd:
                raise Unsupported("a tile load from an array of structs, or an array weft "
                                  "cannot follow")
            n = self.alloc(Tile(tuple(dims) + elem, dt), out)
            base = "tile_load_reset" if m.group(1) == "load_reset" else "tile_load"
            out.append(_expr_stmt(_wk(f"{base}{nd + len(elem)}_into", name(n),
                                      *args[:1 + nd], *_zeros(elem))))
            return n
        m = re.fullmatch(r"tile_(load|store)_indexed([12])", fn)
        if m:  # (arrays of scalars: vectors' components would be further axes)
            nd = int(m.group(2))
            lead = 3 + nd if nd > 1 else 2 + nd  # the array, the indices, [the axis,] offsets
            if self.array(args[0])[0] is None or self.array(args[0])[2] or \
                    self.array(args[0])[1] != nd or tiles[1] is None:
                raise Unsupported(f"'{fn[5:]}' of an array of vectors, matrices or structs")
            if m.group(1) == "load":
                dims = [_const_int(d) for d in args[lead:]]
                if None in dims:
                    raise Unsupported("an indexed tile load of a shape not known when compiling")
                n = self.alloc(Tile(tuple(dims), self.array(args[0])[0]), out)
                out.append(_expr_stmt(_wk(f"{fn}_into", name(n), *args[:lead])))
            else:
                n = self.alloc(tiles[lead], out)
                out.append(_expr_stmt(_wk(f"{fn}_into", name(n), args[0], _one_index(args[1]),
                                      *args[2:])))
            return n
        m = re.fullmatch(r"tile_atomic_add([1234])", fn)
        if m and tiles[-1] is not None:
            nd = int(m.group(1))
            elem = self.array(args[0])[2]
            if nd + len(elem) > 4:
                raise Unsupported(f"'atomic_add' of a tile of {nd} dimensions of vectors or "
                                  "matrices")
            n = self.alloc(tiles[-1], out)
            out.append(_expr_stmt(_wk(f"tile_atomic_add{nd + len(elem)}_into", name(n),
                                      *args[:1 + nd], *_zeros(elem), args[-1])))
            return n
        if fn == "tile_get_vec" and tiles[0] is not None:
            v = self._fresh("shv")  # a view of the element's components
            elem = tiles[0].shape[_idx_len(args[1]):]
            k = int(np.prod(elem))  # (all of them: a matrix's flattened)
            view = ast.Subscript(args[0], args[1], ast.Load())
            out.append(_assign(v, view if len(elem) == 1 else ast.Call(
                ast.Attribute(view, "reshape", ast.Load()), [ast.Constant(k)], [])))
            self.env[v] = Tile((k,), tiles[0].dtype)
            if isinstance(args[0], ast.Name):
                self.elem_views[v] = (args[0].id, args[1])
            return v
        if fn == "tile_sum_vec" and tiles[0] is not None:
            k = _const_int(args[1])
            n = self.alloc(Tile((1, k), tiles[0].dtype), out)
            out.append(_expr_stmt(_wk("tile_sum_vec_into", name(n), args[0])))
            return n
        if fn == "tile_sum_vec_adj" and tiles[0] is not None:
            n = self.alloc(tiles[0], out)
            out.append(_expr_stmt(_wk("tile_sum_vec_adj_into", name(n), args[0], args[1])))
            return n
        if fn in ("tile_cholesky_adj", "tile_cholesky_jvp") and tiles[0] and \
                len(tiles[0].shape) == 2:  # (a buffer for the CPU's temporaries)
            n, work = self.alloc(tiles[0], out), self.alloc(tiles[0], out)
            out.append(_expr_stmt(_wk(f"{fn}_into", name(n), name(work), *args)))
            return n
        if fn in ("tile_lower_solve_jvp", "tile_upper_solve_jvp", "tile_cholesky_solve_jvp") \
                and tiles[0] and tiles[1]:
            n = self.alloc(tiles[1], out)
            work = [name(self.alloc(tiles[1], out)) for _ in range(2)] \
                if fn == "tile_cholesky_solve_jvp" else []
            out.append(_expr_stmt(_wk(f"{fn}_into", name(n), *work, *args)))
            return n
        special = self.shaped(fn, node, args, tiles, out)
        if special is not None:
            return special
        shape = None
        if fn == "tile_matmul" and tiles[0] and tiles[1]:
            shape, dt = (tiles[0].shape[0], tiles[1].shape[1]), tiles[0].dtype
        elif fn == "tile_matmul_adj_a" and tiles[0] and tiles[1]:
            shape, dt = (tiles[0].shape[0], tiles[1].shape[0]), tiles[0].dtype
        elif fn == "tile_matmul_adj_b" and tiles[0] and tiles[1]:
            shape, dt = (tiles[0].shape[1], tiles[1].shape[1]), tiles[0].dtype
        elif fn == "tile_matmul_acc" and tiles[2]:
            shape, dt = tiles[2].shape, tiles[2].dtype
        elif fn in ("tile_sum", "tile_max", "tile_min") and tiles[0]:
            shape, dt = (1,), tiles[0].dtype
        elif fn in ("tile_argmax", "tile_argmin") and tiles[0]:
            shape, dt = (1,), "int32"
        elif fn in ("tile_sum_adj", "tile_extreme_adj") and tiles[0]:
            shape, dt = tiles[0].shape, tiles[0].dtype
        elif fn in ("tile_fft", "tile_ifft", "tile_fft_adj", "tile_ifft_adj", "tile_fft_jvp",
                    "tile_ifft_jvp") and tiles[0] and tiles[0].shape[-1] == 2:
            shape, dt = tiles[0].shape, tiles[0].dtype
        elif fn in ("tile_h2f", "tile_round_f16") and tiles[0]:
            shape, dt = tiles[0].shape, "float32"
        elif fn == "tile_f2h" and tiles[0]:
            shape, dt = tiles[0].shape, "uint16"
        elif fn == "tile_cholesky" and tiles[0] and len(tiles[0].shape) == 2:
            shape, dt = tiles[0].shape, tiles[0].dtype
        elif fn in ("tile_lower_solve", "tile_upper_solve", "tile_cholesky_solve") and \
                tiles[0] and tiles[1]:
            shape, dt = tiles[1].shape, tiles[1].dtype
        elif fn == "tile_diag_add" and tiles[0] and tiles[1] and len(tiles[0].shape) == 2:
            shape, dt = tiles[0].shape, tiles[0].dtype
        elif fn in _SCANS and tiles[0]:
            shape, dt = tiles[0].shape, tiles[0].dtype
        elif fn == "tile_transpose" and tiles[0] and len(tiles[0].shape) == 2:
            shape, dt = tiles[0].shape[::-1], tiles[0].dtype
        if shape is None or any(t is not None and len(t.shape) > 2 for t in tiles) and \
                "fft" not in fn:
            raise Unsupported(f"'{fn[5:] if fn.startswith('tile_') else fn}'")
        if fn.startswith("tile_matmul") and len({t.dtype for t in tiles if t}) > 1:
            raise Unsupported("'tile_matmul' of tiles of different types")
        n = self.alloc(Tile(tuple(shape), dt), out)
        out.append(_expr_stmt(_wk(f"{fn}_into", name(n), *args)))
        return n

    def pair(self, target, node, out):
        """``target = node`` where ``node`` makes two tiles (``tile_sort``'s keys and values,
        ``tile_diag_add``'s adjoints): True once their buffers are made and bound to
        ``target`` (``target[0]``, ``target[1]`` then name them), False for other nodes."""
        fn = _wk_name(node)
        if fn == "tile_stack_make":  # a tile stack: its values and its count (Warp's)
            cap, dt = _const_int(node.args[0]), _np_dtype(node.args[1])
            elem = tuple(_const_int(d) for d in node.args[2:])  # (a vector's components)
            buf = self.alloc(Tile((cap,) + elem, dt), out)
            count = self.alloc(Tile((1,), "int32"), out)
            out.append(_expr_stmt(_wk("tile_stack_init", name(buf), name(count))))
            self.pairs[target] = (buf, count)
            self.stack_values.add(buf)
            return True
        if fn not in ("tile_sort", "tile_diag_add_adj", "tile_lower_solve_adj",
                      "tile_upper_solve_adj", "tile_cholesky_solve_adj"):
            return False
        args = self.args(node, out)
        tiles = [self.tile_of(a) for a in args]
        if None in tiles or fn == "tile_sort" and len(tiles[0].shape) != 1 or \
                fn != "tile_sort" and len(tiles[0].shape) != 2:
            raise Unsupported(f"'{fn[5:]}' of tiles of vectors or matrices")
        made = tiles[:2]  # the shapes of (keys, values), (a, d) or (the factor, y)
        first, second = self.alloc(made[0], out), self.alloc(made[1], out)
        out.append(_expr_stmt(_wk(f"{fn}_into", name(first), name(second), *args)))
        self.pairs[target] = (first, second)
        return True

    def written_element(self, read):
        """``(tile, index node)`` when subscript ``read`` reads (a component of) an element
        whose write the adjoint undoes (:attr:`written`), else None."""
        if not isinstance(read.value, ast.Name):
            return None
        n = read.value.id
        if (n, ast.dump(read.slice)) in self.written:
            return n, read.slice
        view = self.elem_views.get(n)
        if view is not None and (view[0], ast.dump(view[1])) in self.written:
            return view
        return None

    def array(self, node):
        """``(dtype, ndim, element shape)`` of array ``node`` (a name), or Nones."""
        got = self.arrays.get(node.id) if isinstance(node, ast.Name) else None
        return got if got is not None else (None, 0, ())

    def shaped(self, fn, node, args, tiles, out):
        """The helpers whose result's shape is a literal argument, or a view: the buffer's
        name, or None for the others."""
        if fn == "tile_reshape" and tiles[0] is not None:
            dims = _literal_shape(args[1])
            if dims is None or int(np.prod(dims)) != int(np.prod(tiles[0].shape)):
                raise Unsupported("'reshape' to a shape not known when compiling")
            n = self._fresh("shv")  # a view: the buffer's elements never change
            out.append(_assign(n, ast.Call(ast.Attribute(args[0], "reshape", ast.Load()),
                                           [args[1]], [])))
            self.env[n] = Tile(dims, tiles[0].dtype)
            return n
        if fn in ("tile_fill", "tile_full"):
            like = tiles[0] if fn == "tile_fill" else tiles[2]
            dims = like.shape if fn == "tile_fill" else _literal_shape(args[0])
            value = args[1]
            if like is None or dims is None or tuple(dims) != like.shape[:len(dims)] or \
                    self.tile_of(value) is not None:
                raise Unsupported(f"'{fn[5:]}' of vectors or matrices")
            n = self.alloc(Tile(tuple(dims), like.dtype), out)
            if isinstance(value, ast.Call) and ast.unparse(value.func) == "np.array" and \
                    len(value.args) == 1:  # a vector's or matrix's components, every element
                out.append(_expr_stmt(_wk("tile_fill_components", name(n), value.args[0])))
                return n
            out.append(_expr_stmt(_wk("tile_fill", name(n), value)))
            return n
        if fn in ("tile_insert", "tile_zero_at") and tiles[0] is not None:
            n = self.alloc(tiles[0], out)
            value = args[2] if fn == "tile_insert" else ast.Constant(0)
            if fn == "tile_zero_at" and _idx_len(args[1]) < len(tiles[0].shape):
                value = ast.Tuple([ast.Constant(0)] * int(np.prod(
                    tiles[0].shape[_idx_len(args[1]):])), ast.Load())
            helper = "tile_insert_vec_into" if _idx_len(args[1]) < len(tiles[0].shape) else \
                "tile_insert_into"
            out.append(_expr_stmt(_wk(helper, name(n), args[0], args[1], value)))
            return n
        if fn in ELEMENT_WRITES and tiles[0] is not None:  # (t[i, j] += x, the scatters)
            if _idx_len(args[1]) < len(tiles[0].shape):
                if fn != "tile_add_at":
                    raise Unsupported("a write of each thread's element into a tile of "
                                      "vectors or matrices (tile_scatter_add, "
                                      "tile_scatter_masked)")
                fn = "tile_add_at_vec"  # (t[i] += v: each component atomically)
            n = self.alloc(tiles[0], out)
            out.append(_expr_stmt(_wk(f"{fn}_into", name(n), args[0], _one_index(args[1]),
                                      *args[2:])))
            return n
        if fn == "tile_onehot" and tiles[0] is not None:
            n = self.alloc(tiles[0], out)
            helper = "tile_onehot_vec_into" if _idx_len(args[1]) < len(tiles[0].shape) else \
                "tile_onehot_into"
            out.append(_expr_stmt(_wk(helper, name(n), _one_index(args[1]), args[2])))
            return n
        if fn in ("tile_broadcast", "tile_unbroadcast") and tiles[0] is not None:
            padded, dims = _literal_shape(args[1]), _literal_shape(args[2])
            if padded is None or dims is None or len(padded) != len(tiles[0].shape) + (
                    0 if fn == "tile_unbroadcast" else len(padded) - len(tiles[0].shape)):
                raise Unsupported(f"'{fn[5:]}' of vectors or matrices")
            if fn == "tile_unbroadcast" and int(np.prod(dims)) != int(np.prod(padded)):
                raise Unsupported("'unbroadcast' of vectors or matrices")
            n = self.alloc(Tile(tuple(dims), tiles[0].dtype), out)
            out.append(_expr_stmt(_wk(f"{fn}_into", name(n), args[0], args[1])))
            return n
        return None

    def scalar(self, node, out):
        """``node``, a scalar expression, with its tile subexpressions made first (their
        statements appended to ``out``); reading a tile's elements stays as it is."""
        if isinstance(node, ast.Name):
            if node.id in self.env:
                raise Unsupported("a tile used where a value is expected")
            return node
        if isinstance(node, ast.Subscript):
            t = self.value(node.value, out)
            base = name(t) if t is not None else self.scalar(node.value, out)
            read = ast.Subscript(base, self.scalar(node.slice, out), ast.Load())
            element = self.written_element(node)
            if t is not None and element is not None:
                # the adjoint of writing one element of a tile: each element's adjoint goes to
                # one of the threads that wrote it (every thread writes its element; threads
                # writing the same element wrote the same value), the lowest
                tile, idx = element
                idx = self.scalar(idx, out)
                zero = ast.Call(attr_path(f"np.{self.env[t].dtype}"), [ast.Constant(0)], [])
                owner = self.alloc(Tile(self.env[tile].shape[:_idx_len(idx)], "int32"), out)
                out.append(_expr_stmt(_wk("tile_claim", name(owner), _one_index(idx))))
                return ast.IfExp(ast.Compare(ast.Subscript(name(owner), idx, ast.Load()),
                                             [ast.Eq()], [_wk("tile_lane")]), read, zero)
            return read
        fn = _wk_name(node)
        if fn in _SCALAR_RESULTS:
            return _wk(fn, *self.args(node, out))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "np.sum" and \
                len(node.args) == 1 and not node.keywords:  # ``tile_axpy``'s adjoint of alpha
            t = self.value(node.args[0], out)
            if t is not None:
                return _wk("tile_sum_in_order", name(t))
        if fn is not None and fn.startswith("tile_"):
            raise Unsupported(f"'{fn[5:]}'")
        if isinstance(node, ast.Call) and any(
                isinstance(a, ast.Name) and a.id in self.env for a in node.args):
            raise Unsupported("a tile passed to a function")
        node = copy.copy(node)
        for field, old in ast.iter_fields(node):
            if isinstance(old, ast.expr):
                setattr(node, field, self.scalar(old, out))
            elif isinstance(old, list):
                setattr(node, field, [self.scalar(x, out) if isinstance(x, ast.expr)
                                      else x for x in old])
        return node
