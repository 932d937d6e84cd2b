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
- the kernel's straight-line buffers share memory once dead
  (:func:`weft.transpiler.cuda_tile_memory.share_buffers`);
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
from .cuda_tile_code import (_EFFECTS, _GENERATED_LOOP, _SCALAR_RESULTS, SHARED_LIMIT, Tile,
                             Unsupported, _assign, _bytes, _const_int, _expr_stmt, _np_dtype,
                             _outside_loops, _static_index, _store, _wk, _wk_name, _zeros,
                             independent)
from .cuda_tile_exprs import TileExpressions
from .cuda_tile_inline import inline_tile_funcs, tile_funcs
from .cuda_tile_memory import ViewsInPlace, docstring_count, dynamic_shared, share_buffers
from .flowdead import drop_dead_by_flow
from .prune import pure_functions


class _Function(TileExpressions):
    """The rewrite of one generated CUDA function: its statements."""

    # -- statements -------------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for k, s in enumerate(stmts):
            loc = getattr(s, "_weft_loc", None)
            if loc is not None:
                self.loc = loc
            before = len(out)
            if not self.tile_stack(s, stmts[k + 1] if k + 1 < len(stmts) else None, out):
                self.stmt(s, out)
            if loc is not None and len(out) > before and \
                    getattr(out[before], "_weft_loc", None) is None:
                out[before]._weft_loc = loc
        return out

    def tile_stack(self, s, loop, out):
        """``_stk = cuda.local.array((C, *shape), dt)`` made for ``loop``, which pushes a tile
        onto it (an adjoint keeps the tiles a loop carries, to read them back in reverse): a
        stack in shared memory of one row per iteration, when the loop's trip count is known
        when compiling. True when ``s`` was one."""
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Call) and
                ast.unparse(s.value.func) == "cuda.local.array" and isinstance(loop, ast.For)):
            return False
        stk = s.targets[0].id
        push = next((st for st in loop.body if isinstance(st, ast.Assign) and
                     isinstance(st.targets[0], ast.Subscript) and
                     isinstance(st.targets[0].value, ast.Name) and
                     st.targets[0].value.id == stk), None)
        if push is None or not (isinstance(push.value, ast.Name) and push.value.id in self.env):
            return False  # a stack of per-thread values: local memory, as it is
        it = loop.iter
        bounds = [_int_constant(a) for a in it.args] if isinstance(it, ast.Call) and \
            isinstance(it.func, ast.Name) and it.func.id == "range" and \
            1 <= len(it.args) <= 3 else [None]
        if None in bounds or (len(bounds) == 3 and bounds[2] == 0):
            raise Unsupported("the adjoint of a loop carrying a tile, whose trip count is not "
                              "known when compiling (its stack of tiles)")
        tile = self.env[push.value.id]
        stack = Tile((max(1, len(range(*bounds))),) + tile.shape, tile.dtype)
        out.append(_assign(stk, ast.Call(attr_path("cuda.shared.array"), [
            ast.Tuple([ast.Constant(d) for d in stack.shape], ast.Load()),
            attr_path(f"np.{tile.dtype}")], [])))
        self.env[stk] = stack
        self.stacks.add(stk)
        self.shared += _bytes(stack)
        return True

    def stmt(self, s, out):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], ast.Name):
            target = s.targets[0].id
            v = s.value
            if isinstance(v, ast.Name) and v.id in self.env:  # an alias: values never change
                self.env[target] = self.env[v.id]
                out.append(s)
                return
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and \
                    v.value.id in self.stacks:  # a tile read back from its stack: a view
                self.env[target] = Tile(self.env[v.value.id].shape[1:],
                                        self.env[v.value.id].dtype)
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
            if self.pair(target, v, out):
                return
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and \
                    v.value.id in self.pairs and _const_int(v.slice) in (0, 1):
                t = self.pairs[v.value.id][_const_int(v.slice)]
                self.env[target] = self.env[t]
                if t in self.stack_values:
                    self.stack_values.add(target)
                out.append(_assign(target, name(t)))
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
            if g is None or index is None and not _is_view(s.target.slice):
                raise Unsupported("an element of a tile added to outside an elementwise loop")
            shape = np.empty(self.env[s.target.value.id].shape, np.int8)[index].shape \
                if index is not None else \
                self.view_shape(s.target.slice, self.env[s.target.value.id])
            if shape != self.env[g].shape or not 1 <= len(shape) <= 2:
                raise Unsupported("a tile added into a view of another shape")
            out.append(_expr_stmt(_wk(f"tile_addto{len(shape)}", ast.Subscript(
                s.target.value, s.target.slice, ast.Load()), name(g))))
            return
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], ast.Subscript) and \
                isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id in self.env \
                and _is_view(s.targets[0].slice):  # ``t[slices] = u`` (or a value): a view set
            tg = s.targets[0]
            shape = self.view_shape(tg.slice, self.env[tg.value.id])
            view = ast.Subscript(tg.value, self.scalar(tg.slice, out), ast.Load())
            g = self.value(s.value, out)
            if g is None:
                out.append(_expr_stmt(_wk(f"tile_set{len(shape)}", view,
                                          self.scalar(s.value, out))))
                return
            if self.env[g].shape != shape:
                raise Unsupported("a tile assigned into a view of another shape")
            out.append(_expr_stmt(_wk(f"tile_copy{len(shape)}", view, name(g))))
            return
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], ast.Subscript) and \
                isinstance(s.targets[0].value, ast.Name) and \
                s.targets[0].value.id in self.stacks and isinstance(s.value, ast.Name) and \
                s.value.id in self.env:  # a tile pushed on its stack: copied into its row
            row = ast.Subscript(s.targets[0].value, self.scalar(s.targets[0].slice, out),
                                ast.Load())
            out.append(_expr_stmt(_wk("tile_copy", row, s.value)))
            return
        if isinstance(s, (ast.Assign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for tg in targets:
                base = tg.value if isinstance(tg, ast.Subscript) else tg
                if isinstance(base, ast.Name) and base.id in self.env and not (
                        isinstance(tg, ast.Subscript) and base.id in self.stack_values):
                    # (a tile stack's values: each thread writes the slot its push took)
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
            if isinstance(s.value, (ast.BinOp, ast.UnaryOp)) and _pure(s.value):
                return  # (a value nothing keeps: the tangent of atomic adds' unused old values)
            out.append(_expr_stmt(self.scalar(s.value, out)))
            return
        if isinstance(s, ast.For):
            if self.lane_loop(s, out):
                return
            it = self.scalar(s.iter, out)
            out.append(ast.For(s.target, it, self.loop_body(s.body) or [ast.Pass()],
                               self.block(s.orelse)))
            return
        if isinstance(s, ast.While):
            pre = []  # (a tile made by the test would be made once, not at each test)
            test = self.scalar(s.test, pre)
            if pre:
                raise Unsupported("a tile operation in a while loop's condition")
            out.append(ast.While(test, self.loop_body(s.body) or [ast.Pass()],
                                 self.block(s.orelse)))
            return
        if isinstance(s, ast.If):
            test = self.scalar(s.test, out)
            out.append(ast.If(test, self.block(s.body) or [ast.Pass()], self.block(s.orelse)))
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
            independent(s.body, self.env)
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


def _int_constant(node):
    """The int ``node`` spells (``3``, ``int32(3)``), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("int32", "int64", "int") and len(node.args) == 1:
        node = node.args[0]
    return _const_int(node)


def _is_view(index):
    """Whether subscript ``index`` takes a view (a slice along some axis), not an element."""
    return any(isinstance(it, ast.Slice) for it in (
        index.elts if isinstance(index, ast.Tuple) else [index]))


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


def rewrite(fdef, arrays, tid_dims=1, funcs=None):
    """The cooperative form of generated CUDA function ``fdef`` (a new FunctionDef) of a
    kernel unpacking ``wp.tid()`` into ``tid_dims`` indices, the funcs of ``funcs`` it calls
    (name -> generated FunctionDef: those using tiles) inlined; raises :class:`Unsupported`."""
    fdef = copy.deepcopy(fdef)
    inline_tile_funcs(fdef, funcs or {})  # (an Unsupported it raises carries its line)
    _block_index(fdef.body, tid_dims)
    fn = _Function(fdef, arrays, [0])
    try:
        body = fn.block(fdef.body)
    except Unsupported as exc:
        exc.loc = fn.loc
        raise
    body = share_buffers(body, fn)
    doc = docstring_count(body)
    new = copy.copy(fdef)
    new.body = body[:doc] + fn.decls + body[doc:]
    new.weft_dynamic_shared = 0
    if fn.shared > SHARED_LIMIT:
        new.weft_dynamic_shared = dynamic_shared(new)
    ViewsInPlace().visit(new)
    return new


def _pure(node):
    """True when every call in expression ``node`` is pure (the vocabulary's word)."""
    from ..native.vocabulary import CALLS, called_name
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            entry = CALLS.get(called_name(n.func))
            if entry is None or not entry.pure:
                return False
    return True


def _refusal(fir, kind, loc, why):
    where = f"{loc.filename}:{loc.lineno}: " if loc is not None else ""
    return (f"{where}kernel '{fir.name}': its {kind} on CUDA needs {why}, which weft's "
            "cooperative CUDA tiles do not do yet (launch it with device='cpu')")


def run(state):
    if "cuda" not in state.options.targets or \
            not any(abi.tile_work for abi in state.abis.values()):
        return state
    owners = _owners(state.abis)
    funcs = tile_funcs(state)
    pure = pure_functions(state.defs)
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
            if kind == "adjoint":  # (a replay nothing reads keeps no stack of tiles alive)
                d = drop_dead_by_flow(copy.deepcopy(d), pure)
            new = rewrite(d, _arrays(fir, state.abis[k]), fir.tid_dims, funcs)
            if new.weft_dynamic_shared:
                abi = state.abis[k]
                state.abis[k] = dataclasses.replace(abi, dynamic_shared=abi.dynamic_shared + (
                    (kind, new.weft_dynamic_shared),))
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
