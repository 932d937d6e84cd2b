"""Pass ``cuda_tiles``: the tile operations of CUDA kernels made cooperative.

Invariant: in a CUDA module whose kernels make tiles, no generated kernel function allocates
(no ``np.zeros``/``np.empty``, no helper or operator returning a new array): every tile is a
``cuda.shared.array`` of static shape (or a view of one) written by a ``_wk`` device function
whose every thread takes part between barriers, or by a loop over the tile's elements split
among the threads; every function that cannot be so rewritten is refused (forward) or replaced
by a refusal at launch (adjoint, tangent). CPU modules are untouched.

The generators write tile code once for every target, as values: each operation makes a new
array (``np.zeros``, a helper that returns one, ``a + b`` of arrays), which is what the CPU runs
(a tile block is one thread there). A CUDA kernel cannot allocate, and on CUDA a tile block is a
thread block whose threads share the work. This pass rewrites a CUDA kernel's generated
functions so that

- every tile a statement makes gets a buffer in **shared memory** of its static shape
  (``cuda.shared.array``), and the operation writes into it: ``tc = _wk.tile_matmul(ta, tb)``
  becomes ``tc = cuda.shared.array((8, 8), np.float32)`` and
  ``_wk.tile_matmul_into(tc, ta, tb)``, a device function of :mod:`weft.native.cuda_tiles` in
  which each lane computes its share of the elements between two barriers;
- a generated loop over a tile's elements (an elementwise operation, ``tile_map``, the rows of a
  reduction) runs each lane over its own elements (``range(lane, n, lanes)``), between barriers;
- a tile a loop carries (``sum = tile_matmul(a, b, sum)``) is copied at the end of each
  iteration into a buffer of its own, one of two used in turn, so every tile made in the loop
  is read only in the iteration that made it (:meth:`_Function.loop_body`);
- the kernel's straight-line buffers share memory once dead (:func:`_share_buffers`);
- names that only alias a tile (``sum_1 = sum``), element reads (``t[i, j]``) and scalar code stay
  as they are: every lane runs them, as every thread of Warp's blocks does. Each thread may
  write its own element of a tile (``t[i, j] = x``); the adjoint of such a write goes back to
  the thread that wrote the element (``tile_claim``), the adjoint of an element read adds every
  thread's part (``tile_onehot_into``).

What the pass does not know how to make cooperative (an operation without a device function
here, a tile pushed on a loop's stack, a tile passed to a func) raises :class:`Unsupported`: for
a forward function that refuses the kernel on CUDA with the operation named; for an adjoint or
tangent, the kernel's CUDA derivatives are refused when launched (``no_derivative``) and its
forward still runs.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import re

import numpy as np

from ..core import types as T
from ..core.errors import KernelError
from ..stdlib.exprs import attr_path, name, tile_dtype

#: static shared memory a CUDA block may use without opting in (bytes)
SHARED_LIMIT = 48 * 1024

_GENERATED_LOOP = re.compile(r"_(e|r|k)\d+$")


class Unsupported(Exception):
    """A tile statement this pass cannot make cooperative (its message says what)."""


@dataclasses.dataclass(frozen=True)
class Tile:
    shape: tuple
    dtype: str  # "float32", ...


def _wk(fn, *args):
    return ast.Call(attr_path(f"_wk.{fn}"), list(args), [])


def _expr_stmt(node):
    return ast.Expr(node)


def _assign(target, value):
    return ast.Assign([ast.Name(target, ast.Store())], value, lineno=0)


def _wk_name(node):
    """``fn`` of a call ``_wk.fn(...)``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == "_wk":
        return node.func.attr
    return None


def _const_int(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _np_dtype(node):
    """``"float32"`` of ``np.float32`` (and ``np.bool_``), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "np":
        return node.attr
    return None


_SCALAR_RESULTS = {"tile_sum_scalar", "tile_max_scalar", "tile_min_scalar", "tile_lane",
                   "tile_lanes"}
_EFFECTS = {f"tile_{op}{n}" for op in ("store", "load_adj") for n in (1, 2, 3, 4)} | {
    "tile_store_one", "tile_load_adj_h1", "tile_load_adj_h2"}
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}


class _Function:
    """The rewrite of one generated CUDA function."""

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
            items = view.slice.elts if isinstance(view.slice, ast.Tuple) else [view.slice]
            shape = []
            for k, it in enumerate(items):
                if isinstance(it, ast.Slice):
                    n = _slice_len(it, tile.shape[k])
                    if n is None:
                        raise Unsupported("a tile slice whose length is not known when "
                                          "compiling")
                    shape.append(n)
            shape += list(tile.shape[len(items):])
            if not 1 <= len(shape) <= 2:
                raise Unsupported("a slice of a tile of more than two dimensions")
            n = self.alloc(Tile(tuple(shape), tile.dtype), out)
            sliced = ast.Subscript(name(base), self.scalar(view.slice, out), ast.Load())
            out.append(_expr_stmt(_wk(f"tile_copy{len(shape)}", name(n), sliced)))
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
        m = re.fullmatch(r"tile_(load|view)([1234])", fn)
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
            out.append(_expr_stmt(_wk(f"tile_load{nd + len(elem)}_into", name(n),
                                      *args[:1 + nd], *_zeros(elem))))
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
        if fn == "tile_onehot" and tiles[0] is not None:
            n = self.alloc(tiles[0], out)
            helper = "tile_onehot_vec_into" if _idx_len(args[1]) < len(tiles[0].shape) else \
                "tile_onehot_into"
            out.append(_expr_stmt(_wk(helper, name(n), args[1], args[2])))
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
                out.append(_expr_stmt(_wk("tile_claim", name(owner), idx)))
                return ast.IfExp(ast.Compare(ast.Subscript(name(owner), idx, ast.Load()),
                                             [ast.Eq()], [_wk("tile_lane")]), read, zero)
            return read
        fn = _wk_name(node)
        if fn in _SCALAR_RESULTS:
            return _wk(fn, *self.args(node, out))
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

    # -- statements -------------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            loc = getattr(s, "_weft_loc", None)
            if loc is not None:
                self.loc = loc
            before = len(out)
            self.stmt(s, out)
            if loc is not None and len(out) > before and \
                    getattr(out[before], "_weft_loc", None) is None:
                out[before]._weft_loc = loc
        return out

    def stmt(self, s, out):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], ast.Name):
            target = s.targets[0].id
            v = s.value
            if isinstance(v, ast.Name) and v.id in self.env:  # an alias: values never change
                self.env[target] = self.env[v.id]
                out.append(s)
                return
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                    v.func.attr == "reshape" and isinstance(v.func.value, ast.Name) and \
                    v.func.value.id in self.env:
                base = self.env[v.func.value.id]
                dims = [_const_int(d) for d in (v.args[0].elts if isinstance(
                    v.args[0], ast.Tuple) else v.args)]
                if None in dims or int(np.prod(dims)) != int(np.prod(base.shape)):
                    raise Unsupported("a tile reshaped to a shape not known when compiling")
                self.env[target] = Tile(tuple(dims), base.dtype)
                out.append(s)
                return
            t = self.value(v, out)
            if t is not None:
                self.env[target] = self.env[t]
                out.append(_assign(target, name(t)))
                return
            self.env.pop(target, None)
            out.append(ast.Assign(s.targets, self.scalar(v, out), lineno=0))
            return
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) and \
                isinstance(s.target, ast.Subscript) and isinstance(s.target.value, ast.Name) \
                and s.target.value.id in self.env:  # ``t[slices] += g``: a sub-tile's adjoint
            g = self.value(s.value, out)
            taken = self.index_tile(s.target.slice, self.env[s.target.value.id])
            if taken is not None and g is not None:  # the adjoint of a gather
                kind, ii = taken
                out.append(_expr_stmt(_wk(f"tile_put{kind}_add", s.target.value, name(ii),
                                          name(g))))
                return
            index = _static_index(s.target.slice)
            if g is None or index is None:
                raise Unsupported("an element of a tile added to outside an elementwise loop")
            shape = np.empty(self.env[s.target.value.id].shape, np.int8)[index].shape
            if shape != self.env[g].shape or not 1 <= len(shape) <= 2:
                raise Unsupported("a tile added into a view of another shape")
            out.append(_expr_stmt(_wk(f"tile_addto{len(shape)}", ast.Subscript(
                s.target.value, s.target.slice, ast.Load()), name(g))))
            return
        if isinstance(s, (ast.Assign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for tg in targets:
                base = tg.value if isinstance(tg, ast.Subscript) else tg
                if isinstance(base, ast.Name) and base.id in self.env:
                    raise Unsupported("an element of a tile assigned outside an elementwise "
                                      "loop (or a tile kept on a loop's stack)")
            if isinstance(s.value, ast.Name) and s.value.id in self.env:
                raise Unsupported("a tile stored in an array (the loop stack on which an "
                                  "adjoint keeps the tiles a loop carries)")
            value = self.scalar(s.value, out)
            if isinstance(s, ast.Assign):
                targets = [self.scalar(tg, out) if isinstance(tg, ast.Subscript)
                           else tg for tg in s.targets]
                out.append(ast.Assign([_store(t) for t in targets], value, lineno=0))
            else:
                out.append(ast.AugAssign(_store(self.scalar(s.target, out))
                                         if isinstance(s.target, ast.Subscript) else s.target,
                                         s.op, value))
            return
        if isinstance(s, ast.Expr):
            fn = _wk_name(s.value)
            if fn in _EFFECTS:
                args = self.args(s.value, out)
                m = re.fullmatch(r"tile_(store|load_adj)(\d)", fn)
                if m:
                    elem = self.array(args[0])[2]
                    nd = int(m.group(2))
                    if nd + len(elem) > 4:
                        raise Unsupported(f"'{m.group(1)}' of a tile of {nd} dimensions of "
                                          "vectors or matrices")
                    fn = f"tile_{m.group(1)}{nd + len(elem)}"
                    args = args[:1 + nd] + _zeros(elem) + args[1 + nd:]
                out.append(_expr_stmt(_wk(fn, *args)))
                return
            if fn is not None and fn.startswith("tile_") and fn not in _SCALAR_RESULTS:
                self.value(s.value, out)  # (an atomic add whose old values are unused)
                return
            if isinstance(s.value, ast.Constant):
                out.append(s)
                return
            out.append(_expr_stmt(self.scalar(s.value, out)))
            return
        if isinstance(s, ast.For):
            if self.lane_loop(s, out):
                return
            it = self.scalar(s.iter, out)
            out.append(ast.For(s.target, it, self.loop_body(s.body),
                               self.block(s.orelse)))
            return
        if isinstance(s, ast.While):
            test = self.scalar(s.test, [], True)
            out.append(ast.While(test, self.loop_body(s.body), self.block(s.orelse)))
            return
        if isinstance(s, ast.If):
            test = self.scalar(s.test, out)
            out.append(ast.If(test, self.block(s.body), self.block(s.orelse)))
            return
        if isinstance(s, ast.Return) and s.value is not None:
            out.append(ast.Return(self.scalar(s.value, out)))
            return
        if isinstance(s, (ast.Return, ast.Pass, ast.Break, ast.Continue)):
            out.append(s)
            return
        if any(isinstance(n, ast.Name) and n.id in self.env for n in ast.walk(s)):
            raise Unsupported(f"the statement '{ast.unparse(s)}'")
        out.append(s)

    def loop_body(self, body):
        """The statements of a loop's body. A tile name the loop carries (bound before it,
        assigned in it) gets its value copied, at the end of each iteration, into a buffer of
        its own, one of two used in turn: so every tile made in the loop is read only in the
        iteration that made it, and one buffer per operation suffices, whatever the program
        keeps from one iteration to the next (``prev = cur``, a tile assigned on some
        iterations only)."""
        carried = sorted({t.id for st in body for n in ast.walk(st)
                          if isinstance(n, (ast.Assign, ast.AugAssign))
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                          if isinstance(t, ast.Name) and t.id in self.env})
        before = {n: self.env[n] for n in carried}
        out = self.block(body)
        if not carried:
            return out
        if any(isinstance(n, ast.Continue) for st in body for n in _outside_loops(st)):
            raise Unsupported("'continue' in a loop that carries a tile")
        par = self._fresh("shq")
        self.decls.append(_assign(par, ast.Constant(0)))
        out.append(_assign(par, ast.BinOp(ast.Constant(1), ast.Sub(), name(par))))
        for n in carried:
            tile = self.env.get(n)
            if tile != before[n]:
                raise Unsupported(f"the tile '{n}' changing shape in a loop")
            buf, cur = self._fresh("shc"), self._fresh("shm")
            both = ast.Tuple([ast.Constant(d) for d in (2,) + tile.shape], ast.Load())
            self.decls.append(_assign(buf, ast.Call(attr_path("cuda.shared.array"), [
                both, attr_path(f"np.{tile.dtype}")], [])))
            self.shared += 2 * _bytes(tile)
            out += [_assign(cur, ast.Subscript(name(buf), name(par), ast.Load())),
                    _expr_stmt(_wk("tile_copy", name(cur), name(n))),
                    _assign(n, name(cur))]
        return out

    def serial_safe(self, loop):
        """Whether generated loop ``loop`` can run on one thread: it stores only into tile
        elements, calls no tile operation, and no statement outside it reads a name it
        assigns."""
        assigned = set()
        for n in ast.walk(loop):
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    if isinstance(t, ast.Name):
                        assigned.add(t.id)
                    elif not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                              and t.value.id in self.env):
                        return False
            fn = _wk_name(n)
            if fn is not None and fn.startswith("tile_") and fn not in _SCALAR_RESULTS:
                return False
        inside = {id(n) for n in ast.walk(loop)}
        return not any(isinstance(n, ast.Name) and n.id in assigned and id(n) not in inside
                       for n in ast.walk(self.fdef))

    def lane_loop(self, s, out):
        """A generated loop over a tile's elements whose iterations are independent: each lane
        runs its own share, between barriers. True when ``s`` was one."""
        if not (isinstance(s.target, ast.Name) and _GENERATED_LOOP.match(s.target.id) and
                isinstance(s.iter, ast.Call) and isinstance(s.iter.func, ast.Name) and
                s.iter.func.id == "range" and len(s.iter.args) in (1, 2) and not s.orelse):
            return False
        if not any(isinstance(n, ast.Name) and n.id in self.env for n in ast.walk(s)):
            return False  # no tile in it: an ordinary loop
        try:
            _independent(s.body, self.env)
        except Unsupported:
            # iterations that depend on each other (a scatter with repeated indices, a value
            # carried): one thread runs the loop, if it writes only tile elements and nothing
            # after it reads its names
            if not self.serial_safe(s):
                raise
            out += [_expr_stmt(_wk("tile_sync")),
                    ast.If(ast.Compare(_wk("tile_lane"), [ast.Eq()], [ast.Constant(0)]),
                           [s], []),
                    _expr_stmt(_wk("tile_sync"))]
            return True
        body = s.body
        out.append(_expr_stmt(_wk("tile_sync")))
        lo = _wk("tile_lane")
        if len(s.iter.args) == 2:
            lo = ast.BinOp(s.iter.args[0], ast.Add(), lo)
        out.append(ast.For(s.target, ast.Call(name("range"), [
            lo, s.iter.args[-1], _wk("tile_lanes")], []), body, []))
        out.append(_expr_stmt(_wk("tile_sync")))
        return True


def _static_index(node):
    """The index a subscript's slice node spells, when it is made of constants (ints,
    ``int32(c)``, ``...``, slices of them); else None."""
    def const(n):
        if n is None:
            return None
        if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords:
            n = n.args[0]
        v = _const_int(n)
        if v is None:
            raise ValueError
        return v
    try:
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for it in items:
            if isinstance(it, ast.Constant) and it.value is Ellipsis:
                out.append(Ellipsis)
            elif isinstance(it, ast.Slice):
                out.append(slice(const(it.lower), const(it.upper), const(it.step)))
            else:
                out.append(const(it))
        return tuple(out)
    except ValueError:
        return None


def _zeros(elem):
    """Offsets 0 for an element's axes (a tile of vectors or matrices)."""
    return [ast.Constant(0) for _ in elem]


def _idx_len(node):
    return len(node.elts) if isinstance(node, ast.Tuple) else 1


def _slice_len(sl, dim):
    """The length of slice ``sl`` of an axis of ``dim`` elements, when the code fixes it:
    constant bounds, or ``lo:lo + n``."""
    lo, hi, step = (None if x is None else x for x in (sl.lower, sl.upper, sl.step))
    st = 1 if step is None else _const_int(step)
    if st is None or st == 0:
        return None
    lo_c = None if lo is None else _const_int(lo)
    hi_c = None if hi is None else _const_int(hi)
    if (lo is None or lo_c is not None) and (hi is None or hi_c is not None):
        return len(range(dim)[lo_c:hi_c:st])
    if st == 1 and isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add) and \
            lo is not None and ast.dump(hi.left) == ast.dump(lo) and \
            _const_int(hi.right) is not None:
        return _const_int(hi.right)
    return None


def _bytes(tile):
    return int(np.prod(tile.shape)) * np.dtype("bool" if tile.dtype == "bool_" else
                                               tile.dtype).itemsize


def _outside_loops(node):
    """The nodes of statement ``node``, not descending into loops inside it."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.For, ast.While)):
            yield from _outside_loops(child)


def _literal_shape(node):
    """The ints of a literal tuple (or int) node, else None."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    dims = tuple(_const_int(d) for d in items)
    return None if None in dims or not dims else dims


def _store(node):
    node = copy.copy(node)
    node.ctx = ast.Store()
    return node


def _independent(body, env):
    """Raise :class:`Unsupported` unless each iteration of a loop with ``body`` only writes
    tile elements and names it assigns before reading them (no value carried from one
    iteration to the next, so the lanes may take the iterations in any order)."""
    stored = set()

    def visit(stmts):
        for s in stmts:
            if isinstance(s, ast.For):
                visit_expr(s.iter)
                stored.add(s.target.id if isinstance(s.target, ast.Name) else None)
                visit(s.body)
                continue
            if isinstance(s, ast.If):
                visit_expr(s.test)
                visit(s.body)
                visit(s.orelse)
                continue
            if isinstance(s, ast.Assign):
                visit_expr(s.value)
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        stored.add(t.id)
                    elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and \
                            t.value.id in env:
                        visit_expr(t.slice)
                    else:
                        raise Unsupported("a loop over a tile's elements that writes an array")
                continue
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                if s.target.id not in stored:
                    raise Unsupported("a loop over a tile's elements carrying a value")
                visit_expr(s.value)
                continue
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue
            raise Unsupported(f"the statement '{ast.unparse(s)}' in a loop over a tile's "
                              "elements")

    def visit_expr(node):
        for n in ast.walk(node):
            fn = _wk_name(n)
            if fn is not None and fn.startswith("tile_") and fn not in _SCALAR_RESULTS:
                raise Unsupported(f"'{fn[5:]}' inside a loop over a tile's elements")

    visit(body)
    _first_reads(body, {t.id for s in body for n in ast.walk(s) if isinstance(n, ast.Assign)
                        for t in n.targets if isinstance(t, ast.Name)})


def _first_reads(body, assigned):
    """Raise if a name of ``assigned`` is read before its first assignment, in program order
    (a value carried between iterations)."""
    seen = set()

    def expr(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in assigned \
                    and n.id not in seen:
                raise Unsupported("a loop over a tile's elements carrying a value")

    def stmts(ss):
        for s in ss:
            if isinstance(s, ast.Assign):
                expr(s.value)
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        seen.add(t.id)
                    else:
                        expr(t)
            elif isinstance(s, ast.AugAssign):
                expr(s.value)
                expr(s.target)
            elif isinstance(s, ast.For):
                expr(s.iter)
                if isinstance(s.target, ast.Name):
                    seen.add(s.target.id)
                stmts(s.body)
            elif isinstance(s, ast.If):
                expr(s.test)
                stmts(s.body)
                stmts(s.orelse)
    stmts(body)


def lane_tiles(fir):
    """For each launch index of kernel ``fir`` (``wp.tid()``'s axis) that a tile operation
    depends on, ``(axis, why)``: a launch in which that index differs between the threads of
    one CUDA block is refused (:func:`weft.runtime.entries.cuda_block`). A tile is the
    block's (after each operation's barrier every thread sees all of it), so what matters is
    the operands: weft's CUDA tile operations take them from every thread alike, except an
    element write (``t[i, j] = x`` of a scalar), where each thread writes its own element. A
    tile operation under a branch on such an index is refused too (its barriers need every
    thread)."""
    from ..stdlib import ir
    from .lanes import _is_tile, _operands
    out = []
    for axis in range(max(fir.tid_dims, 1)):
        V = set()
        for s in ir.walk(fir.body):
            if isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and \
                    s.expr.builtin.name == "tid" and (s.expr.attrs.get("axis") or 0) == axis:
                V.add(id(s.dst))
        if not V:
            continue
        while _sweep(fir.body, False, V, ir, _operands, _is_tile):
            pass
        loc = _varying_tile_op(fir.body, False, V, ir, _operands, _is_tile)
        if loc is not None:
            out.append((axis, f"{loc.filename}:{loc.lineno}: kernel '{fir.name}': a tile "
                        f"operation takes a value computed from launch index {axis}, which "
                        "differs between the threads of a CUDA block in this launch; "
                        "weft's CUDA tiles share their operands across the block (only an "
                        "element write may differ), so it would not give Warp's result "
                        "(launch it with wp.launch_tiled without unpacking the lane, or with "
                        "device='cpu')"))
    return tuple(out)


def _varying_tile_op(stmts, ctrl, V, ir, _operands, _is_tile):
    """The location of the first tile operation of ``stmts`` under a branch or loop on ``V``
    or taking an operand of ``V`` (a scalar element write excepted), else None."""
    for s in stmts:
        if isinstance(s, ir.If):
            c = ctrl or (isinstance(s.cond, ir.Var) and id(s.cond) in V)
            got = _varying_tile_op(s.body, c, V, ir, _operands, _is_tile) or \
                _varying_tile_op(s.orelse, c, V, ir, _operands, _is_tile)
        elif isinstance(s, ir.Loop):
            c = ctrl or any(isinstance(x, ir.Var) and id(x) in V
                            for x in (s.start, s.stop, s.step, s.brk))
            got = _varying_tile_op(s.body, c, V, ir, _operands, _is_tile)
        else:
            ops = _operands(s)
            dst = getattr(s, "dst", None)
            tile_op = (dst is not None and _is_tile(dst.type)) or (
                isinstance(s, ir.Effect) and any(_is_tile(o.type) for o in ops))
            own_element = isinstance(s, ir.Assign) and isinstance(s.expr, ir.Prim) and \
                s.expr.builtin.name == "tile_insert" and ops and \
                not T.is_composite(ops[-1].type)
            got = s.loc if tile_op and (ctrl or (any(id(o) in V for o in ops) and
                                                 not own_element)) else None
        if got is not None:
            return got
    return None


def _sweep(stmts, ctrl, V, ir, _operands, _is_tile):
    """One pass of the fixed point of :func:`lane_tiles`: the scalars that depend on ``V``
    (data and control; a tile is the block's, never in ``V``); True when it grew."""
    changed = False
    for s in stmts:
        if isinstance(s, ir.If):
            c = ctrl or (isinstance(s.cond, ir.Var) and id(s.cond) in V)
            changed |= _sweep(s.body, c, V, ir, _operands, _is_tile)
            changed |= _sweep(s.orelse, c, V, ir, _operands, _is_tile)
        elif isinstance(s, ir.Loop):
            c = ctrl or any(isinstance(x, ir.Var) and id(x) in V
                            for x in (s.start, s.stop, s.step, s.brk))
            changed |= _sweep(s.body, c, V, ir, _operands, _is_tile)
            for h, e in s.carried:
                if id(e) in V and id(h) not in V and not _is_tile(h.type):
                    V.add(id(h))
                    changed = True
        else:
            dst = getattr(s, "dst", None)
            if dst is not None and id(dst) not in V and not _is_tile(dst.type) and (
                    ctrl or any(id(o) in V for o in _operands(s))):
                V.add(id(dst))
                changed = True
    return changed


def _owners(abis):
    """Generated CUDA function name -> (kernel, kind)."""
    out = {}
    for k, abi in abis.items():
        for kind, by_target in abi.entries.items():
            if "cuda" in by_target:
                out[by_target["cuda"]] = (k, kind)
    return out


def _arrays(fir, abi):
    """The arrays of scalars of kernel ``fir`` (parameters, views, and their adjoints and
    tangents) -> their dtype's name, by the names generated code gives them."""
    from ..stdlib import ir
    from .codegen import names_for
    bases = names_for(fir).bases
    out = {}
    for v in list(fir.params) + list(ir.defined_vars(fir.body)):
        t = v.type
        if isinstance(t, T.ArrayType) and (T.is_scalar(t.dtype) or T.is_composite(t.dtype)):
            st = T.scalar_of(t.dtype)
            dt = ("uint16" if st is T.float16 else _np_dtype(tile_dtype(st)), t.ndim,
                  tuple(T.element_shape(t.dtype)))  # (float16 arrays hold their bits)
            base = bases.get(v.name, v.name)
            for n in (v.name, f"adj_{base}", f"tan_{base}"):
                out[n] = dt
    for p in abi.params:  # (the ABI's names of the parameters' shadows)
        if p.name in out:
            for n in (p.adjoint, p.tangent):
                if n:
                    out[n] = out[p.name]
    return out


def _share_buffers(body, fn):
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


def _block_index(stmts, tid_dims):
    """``_tid = int64(_p)`` (the kernel's flat launch index) made the tile block's index where
    ``wp.tid()`` does not unpack the lane (:func:`weft.native.cuda_tiles.block_index`)."""
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and \
                s.targets[0].id == "_tid":
            s.value = _wk("block_index", s.value, name("_dim"), ast.Constant(tid_dims))
            return True
        if isinstance(s, ast.If) and _block_index(s.body, tid_dims):
            return True
    return False


def rewrite(fdef, arrays, tid_dims=1):
    """The cooperative form of generated CUDA function ``fdef`` (a new FunctionDef) of a
    kernel unpacking ``wp.tid()`` into ``tid_dims`` indices; raises :class:`Unsupported`."""
    fdef = copy.deepcopy(fdef)
    _block_index(fdef.body, tid_dims)
    fn = _Function(fdef, arrays, [0])
    try:
        body = fn.block(fdef.body)
    except Unsupported as exc:
        exc.loc = fn.loc
        raise
    body = _share_buffers(body, fn)
    if fn.shared > SHARED_LIMIT:
        raise Unsupported(f"its tiles need {fn.shared} bytes of shared memory, more than the "
                          f"{SHARED_LIMIT} a CUDA block has without opting in")
    doc = body[:1] if body and isinstance(body[0], ast.Expr) and \
        isinstance(body[0].value, ast.Constant) else []
    new = copy.copy(fdef)
    new.body = doc + fn.decls + body[len(doc):]
    return new


def _refusal(fir, kind, loc, why):
    where = f"{loc.filename}:{loc.lineno}: " if loc is not None else ""
    return (f"{where}kernel '{fir.name}': its {kind} on CUDA needs {why}, which weft's "
            "cooperative CUDA tiles do not do yet (launch it with device='cpu')")


def run(state):
    if "cuda" not in state.options.targets or \
            not any(abi.tile_work for abi in state.abis.values()):
        return state
    owners = _owners(state.abis)
    firs = {f.name: f for f in state.funcs if f.kind == "kernel"}
    defs = []
    for d in state.defs:
        owner = owners.get(getattr(d, "name", None))
        if owner is None or not state.abis[owner[0]].tile_work:
            defs.append(d)
            continue
        k, kind = owner
        fir = firs[k]
        try:
            new = rewrite(d, _arrays(fir, state.abis[k]), fir.tid_dims)
        except Unsupported as exc:
            loc = getattr(exc, "loc", None)
            if kind == "forward":
                raise KernelError(_refusal(fir, "forward", loc, str(exc))) from None
            new = copy.copy(d)
            new.body = [ast.Return(None)]
            abi = state.abis[k]
            if not abi.no_derivative:
                state.abis[k] = dataclasses.replace(abi, no_derivative=_refusal(
                    fir, "adjoint and tangent", loc, str(exc)))
        defs.append(new)
    state.defs = defs
    return state
