"""Funcs that take, make or return tiles, inlined into the CUDA kernels that call them (a step of
the pass ``cuda_tiles``).

On CUDA a tile is a buffer in its block's shared memory that all of the block's threads write
between barriers, and the pass makes a kernel's tile operations cooperative statement by
statement. A func's generated function makes its tiles as values (``np.zeros``, the CPU's form)
and returns them, which a numba-cuda device function cannot do. So each call of such a func in a
kernel's CUDA function is replaced by the func's generated body before the pass rewrites the
kernel: the body's names renamed apart (``u`` becomes ``u__i0``), its parameters replaced by the
call's arguments (or bound to them, where the body assigns the parameter), and its final
``return`` made an assignment to the call's targets. A tuple of results read by index
(``_c0 = f__adj(...)``, then ``_c0[0]``: an adjoint's results) becomes one name per element.
Funcs the inlined body calls are inlined in turn. The pass then rewrites the inlined statements as
the kernel's own: a tile the func makes gets its buffer in the kernel's shared memory, and a tile
passed to the func is the caller's buffer (as on the CPU, where the func receives the caller's
array).

What cannot be inlined raises :class:`Unsupported` (the kernel is refused on CUDA with the
reason): a func returning from more than one place, a call inside an expression, a tuple of
results used whole.
"""
from __future__ import annotations

import ast
import copy
import itertools

from ..core import types as T
from ..stdlib import ir
from .cuda_tile_code import Unsupported, _assign


def _own_tiles(fir):
    if any(isinstance(p.type, (T.TileType, T.TileStackType)) for p in fir.params):
        return True
    for s in ir.walk(fir.body):
        v = getattr(s, "dst", None)
        if v is not None and isinstance(v.type, (T.TileType, T.TileStackType)) or \
                isinstance(s, ir.Effect) and s.builtin.name == "tile_sync":
            return True
    return False


def tile_funcs(state):
    """The generated functions (by name) of the funcs that take, make or return tiles, or call
    a func that does."""
    memo = {}

    def uses(fir):
        if id(fir) not in memo:
            memo[id(fir)] = False  # (a cycle: answered by the other funcs)
            memo[id(fir)] = _own_tiles(fir) or any(uses(f) for f in fir.callees)
        return memo[id(fir)]

    out = {}
    for d in state.defs:
        fir = state.owners.get(getattr(d, "name", None))
        if isinstance(d, ast.FunctionDef) and fir is not None and fir.kind != "kernel" and \
                uses(fir):
            out[d.name] = d
    return out


def _called(node, funcs):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in funcs


class _Inliner:
    def __init__(self, fdef, funcs):
        self.funcs = funcs
        self.taken = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)}
        self.count = itertools.count()
        self.tuples = {}  # a call's target -> the names of its results' elements
        self.loc = None   # the source line of the statement being inlined

    def fresh(self):
        while True:
            sfx = f"__i{next(self.count)}"
            if not any(t.endswith(sfx) for t in self.taken):
                return sfx

    def block(self, stmts, depth=0):
        out = []
        for s in stmts:
            self.loc = getattr(s, "_weft_loc", self.loc)
            value = s.value if isinstance(s, (ast.Assign, ast.Expr)) else None
            if _called(value, self.funcs):
                out += self.expand(s, value, depth)
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.block(getattr(s, field), depth))
            heads = [getattr(s, f) for f in ("test", "iter", "value", "targets", "target")
                     if getattr(s, f, None) is not None]
            if any(_called(n, self.funcs) for h in heads
                   for n in ast.walk(h if isinstance(h, ast.AST) else ast.Tuple(h))):
                raise Unsupported("a func using tiles called inside an expression")
            out.append(s)
        return out

    def expand(self, s, call, depth):
        fd = self.funcs[call.func.id]
        params = [a.arg for a in fd.args.args]
        if depth > 32:
            raise Unsupported(f"funcs using tiles that call each other without end "
                              f"('{fd.name}')")
        if call.keywords or len(call.args) != len(params):
            raise Unsupported(f"a call of '{fd.name}' that does not pass each parameter once")
        body = copy.deepcopy(fd.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        ret = body.pop().value if body and isinstance(body[-1], ast.Return) else None
        if any(isinstance(n, ast.Return) for st in body for n in ast.walk(st)):
            raise Unsupported(f"a func using tiles that returns from more than one place "
                              f"('{fd.name}')")
        stored = {n.id for st in body for n in ast.walk(st)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        sfx = self.fresh()
        subst, out = {}, []
        for p, a in zip(params, call.args):
            if p not in stored and isinstance(a, (ast.Name, ast.Constant)):
                subst[p] = a
            else:
                out.append(_assign(p + sfx, a))
                stored.add(p)
        renamed = stored | set(params)
        self.taken |= {n + sfx for n in renamed}

        class Rename(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id in subst:
                    new = copy.deepcopy(subst[node.id])
                    if isinstance(new, ast.Name):
                        new.ctx = node.ctx
                    return new
                if node.id in renamed:
                    return ast.Name(node.id + sfx, node.ctx)
                return node

        out += [Rename().visit(st) for st in body]
        ret = Rename().visit(ret) if ret is not None else None
        out = self.block(out, depth + 1)
        if isinstance(s, ast.Expr):
            return out
        target = s.targets[0] if len(s.targets) == 1 else None
        if isinstance(target, ast.Tuple):
            if not (isinstance(ret, ast.Tuple) and len(ret.elts) == len(target.elts)):
                raise Unsupported(f"results of '{fd.name}' unpacked into other names")
            return out + [ast.Assign([t], v, lineno=0) for t, v in zip(target.elts, ret.elts)]
        if not isinstance(target, ast.Name) or ret is None:
            raise Unsupported(f"the result of '{fd.name}' assigned to '{ast.unparse(s)}'")
        if isinstance(ret, ast.Tuple):  # an adjoint's results, read as ``_c0[k]``
            names = [f"{target.id}__r{k}" for k in range(len(ret.elts))]
            self.tuples[target.id] = names
            self.taken |= set(names)
            return out + [_assign(n, v) for n, v in zip(names, ret.elts)]
        return out + [ast.Assign([target], ret, lineno=0)]

    def elements(self, fdef):
        """``_c0[k]`` of a tuple of results made its element's name."""
        tuples = self.tuples

        class Elements(ast.NodeTransformer):
            def visit_Subscript(self, node):
                if isinstance(node.value, ast.Name) and node.value.id in tuples and \
                        isinstance(node.slice, ast.Constant) and \
                        type(node.slice.value) is int and \
                        0 <= node.slice.value < len(tuples[node.value.id]):
                    return ast.Name(tuples[node.value.id][node.slice.value], node.ctx)
                return self.generic_visit(node)

        Elements().visit(fdef)
        for n in ast.walk(fdef):
            if isinstance(n, ast.Name) and n.id in tuples:
                raise Unsupported("a func's tuple of results used whole")


def inline_tile_funcs(fdef, funcs):
    """Generated CUDA function ``fdef`` (changed in place) with every call of a func of
    ``funcs`` (:func:`tile_funcs`) replaced by the func's body."""
    if not funcs or not any(_called(n, funcs) for n in ast.walk(fdef)):
        return fdef
    inl = _Inliner(fdef, funcs)
    try:
        fdef.body = inl.block(fdef.body)
        inl.elements(fdef)
    except Unsupported as exc:
        exc.loc = inl.loc
        raise
    return fdef
