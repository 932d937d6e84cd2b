"""Pass ``second_order``: the tangent (forward mode) of generated code, for forward-over-reverse.

Invariant: ``state.second_source`` is an importable module holding the module ``state.source``
and, for each kernel of ``state.abis``, the tangent of its CPU adjoint entries (``k__adj`` ->
``k__adj__hvp``) along every tangent and adjoint parameter. It runs on demand
(:mod:`weft.autodiff.hvp`, through ``pipeline.second_order_source``), on the text of a module
built earlier (perhaps in another process: the text is what the cache keeps).

weft's adjoint kernels are generated Python functions built from a small vocabulary: scalar
arithmetic, flat tuples for vectors and matrices, NumPy math calls, array loads and stores,
``_wk`` helpers (atomics, private accumulation buffers), loops with their stacks, and calls
to the other generated functions of the module. This module differentiates such a function
once more, source to source: every *active* variable ``v`` (one whose value depends on an
active parameter) gets a tangent ``tn_v`` computed beside it, every active array (a parameter
or a loop stack) a tangent array written where it is written. The adjoint kernel's tangent
along the primal tangents ``dx`` is what a Hessian-vector product needs: with the adjoint
seeded by ``dL/dy``, ``tn_adj_x`` accumulates ``(d^2 L / dx^2) dx`` (:mod:`weft.autodiff.hvp`).

Activity is flow-insensitive (a variable is active when any of its assignments is), which is
exact for the single-assignment-like code the generators write. Generated callees are
specialised per set of active arguments (``f__tn_101``). How a tangent passes through each
call is its entry's ``second`` in the vocabulary of generated code
(:mod:`weft.native.vocabulary`), the derivative of a math call the one declared there
(:mod:`.second_order_rules`). An active value reaching a call with no rule is a
:class:`SecondOrderError` naming it; nothing is silently dropped.

Typed constants come from ``_w2.like(x, c)`` (``c`` cast to the type of ``x``) and zeros of
an inactive value's structure from ``_w2.tzero(x)`` (:mod:`weft.native.second_helpers`), so the
tangents have exactly the primal types (float32 code stays float32).
"""
from __future__ import annotations

import ast

from ..native.vocabulary import CALLS, TILE_JVP, called_name
from .second_order_rules import _METHODS, _add, _bin, _c, _call, _kind_at, _method, _mul, _n
from .second_order_rules import _keep_comments, _neg, _restore_comments, _root, _sub
from .second_order_rules import tangent as rule_tangent

PREFIX = "tn_"


def _kind(name):
    """How a tangent passes through a call of ``name``: its entry's ``second`` (see
    :mod:`weft.native.vocabulary`), None when it has none."""
    e = CALLS.get(name)
    return None if e is None else e.second


class SecondOrderError(Exception):
    """The generated code reaches something with no second-order rule."""


class Module:
    """The generated module's functions by name and their tangent versions, built on demand."""

    def __init__(self, tree):
        self.tree = tree
        self.funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        self.built = {}  # (name, active params) -> (new name, returns active) or None (building)
        self.out = []  # new FunctionDefs

    def tangent_of(self, name, active, new_name=None, insert_at=None):
        """The tangent of function ``name`` with ``active`` parameter names: ``(new name,
        returns active)``. Tangent parameters follow the primal ones, or are inserted at
        position ``insert_at`` (after ``_dim`` and the ABI's parameters for kernels)."""
        key = (name, tuple(active))
        done = self.built.get(key)
        if done is not None:
            return done
        fdef = self.funcs[name]
        params = [a.arg for a in fdef.args.args]
        mask = "".join("1" if p in active else "0" for p in params)
        new_name = new_name or f"{name}__tn_{mask}"
        fn = Function(self, fdef, [p for p in params if p in active])
        body, returns = fn.transform()
        tan_params = [ast.arg(PREFIX + p) for p in params if p in active]
        args = list(fdef.args.args)
        at = len(args) if insert_at is None else insert_at
        args = args[:at] + tan_params + args[at:]
        new = ast.FunctionDef(new_name, ast.arguments([], args, None, [], [], None, []), body,
                              [_c(d) for d in fdef.decorator_list], None, None)
        new.lineno = 0
        self.out.append(new)
        self.built[key] = (new_name, returns)
        return self.built[key]


class Function:
    """One function's activity analysis and tangent code."""

    def __init__(self, module, fdef, active_params):
        self.module = module
        self.fdef = fdef
        self.active = set(active_params)
        self.fresh = 0
        nodes = list(ast.walk(fdef))  # (walked once: the names, then the statements)
        names = {n.id for n in nodes if isinstance(n, ast.Name)}
        names |= {a.arg for a in fdef.args.args}
        self._stmts = [n for n in nodes if isinstance(n, ast.stmt)]
        if any(n.startswith(PREFIX) for n in names):
            raise SecondOrderError(f"function '{fdef.name}' already uses names starting with "
                                   f"{PREFIX!r}")
        self.callees = {}  # id(Call node) -> (new name, returns active) for active calls
        self.returns = False
        # views (``v = x.reshape(...)``): writing either writes both, so both are active or
        # neither
        self.views = [(s.targets[0].id, s.value.func.value.id) for s in self._stmts
                      if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and
                      len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and
                      _method(s.value) is not None and _method(s.value)[1] in _METHODS]
        self._analyse()

    # ------------------------------------------------------------------ activity
    def _analyse(self):
        while True:
            before = (len(self.active), self.returns, len(self.callees))
            for s in self._stmts:
                self._visit_stmt(s)
            for v, x in self.views:
                if v in self.active or x in self.active:
                    self.active |= {v, x}
            if (len(self.active), self.returns, len(self.callees)) == before:
                return

    def _visit_stmt(self, s):
        if isinstance(s, ast.Assign):
            if self.is_active(s.value):
                for t in s.targets:
                    self._mark_target(t)
        elif isinstance(s, ast.AugAssign):
            if self.is_active(s.value):
                self._mark_target(s.target)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            name = called_name(s.value.func)
            kind, at = _kind_at(_kind(name), -1)
            if kind in ("accumulate", "reduce", "store"):
                values = s.value.args[1:] if kind != "store" else [s.value.args[at]]
                if any(self.is_active(a) for a in values):
                    self._mark_target(s.value.args[0])
            else:
                self.is_active(s.value)
        elif isinstance(s, ast.Return) and s.value is not None:
            if self.is_active(s.value):
                self.returns = True

    def _mark_target(self, t):
        if isinstance(t, ast.Name):
            self.active.add(t.id)
        elif isinstance(t, ast.Subscript):
            self._mark_target(t.value)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._mark_target(e)
        else:
            raise SecondOrderError(f"assignment to {ast.dump(t)}")

    def is_active(self, e):
        if isinstance(e, ast.Name):
            return e.id in self.active
        if isinstance(e, ast.Constant):
            return False
        if isinstance(e, ast.Subscript):
            return self.is_active(e.value)
        if isinstance(e, ast.BinOp):
            return any([self.is_active(e.left), self.is_active(e.right)])
        if isinstance(e, ast.UnaryOp):
            return not isinstance(e.op, (ast.Not, ast.Invert)) and self.is_active(e.operand)
        if isinstance(e, (ast.Compare, ast.BoolOp)):
            return False
        if isinstance(e, ast.IfExp):
            return any([self.is_active(e.body), self.is_active(e.orelse)])
        if isinstance(e, (ast.Tuple, ast.List)):
            return any([self.is_active(x) for x in e.elts])
        if isinstance(e, ast.Call):
            return self._call_active(e)
        if isinstance(e, ast.Attribute):
            return False  # module attributes (np.float32)
        raise SecondOrderError(f"expression {ast.unparse(e)}")

    def _call_active(self, e):
        name = called_name(e.func)
        kind, at = _kind_at(_kind(name), 0)
        if kind == "launch":
            return self._launch_active(e)
        args_active = [self.is_active(a) for a in e.args]
        method = _method(e)
        if method is not None and name not in CALLS:
            if not self.is_active(method[0]):
                return False
            if method[1] not in _METHODS:
                raise SecondOrderError(f"no second-order rule for the method '{method[1]}' of "
                                       "an active array")
            return True
        if name in self.module.funcs:
            if not any(args_active):
                return False
            params = [a.arg for a in self.module.funcs[name].args.args]
            active = [p for p, on in zip(params, args_active) if on]
            got = self.module.tangent_of(name, active)
            self.callees[id(e)] = got
            return got[1]
        if kind in ("zero", "alloc"):
            return False
        if kind in ("linear", "extreme"):
            return args_active[at]
        if kind == "insert":  # _wk.tuple_insert(t, k, x): linear in t and x together
            return args_active[0] or args_active[2]
        if kind == "bilinear":
            return args_active[0] or args_active[1]
        if kind == "jvp":
            return any(args_active[p] for p in TILE_JVP[name[4:]][2])
        if not any(args_active):
            return False
        if kind in ("cast", "same", "rule", "joint"):
            return True
        raise SecondOrderError(f"no second-order rule for '{name or ast.unparse(e.func)}'")

    def _launch_active(self, e):
        """``_wk.parallel_for(chunk, n, (args...))``: the chunk is called with ``(lo, hi,
        *args)``; with active arguments its tangent runs instead (it returns nothing)."""
        chunk, _, args = e.args
        if not (isinstance(chunk, ast.Name) and chunk.id in self.module.funcs and
                isinstance(args, ast.Tuple)):
            raise SecondOrderError(f"launch {ast.unparse(e)}")
        on = [self.is_active(a) for a in args.elts]
        if any(on):
            params = [a.arg for a in self.module.funcs[chunk.id].args.args][2:]
            self.callees[id(e)] = self.module.tangent_of(
                chunk.id, [p for p, a in zip(params, on) if a])
        return False

    def launch(self, e, pre, hoist):
        """The tangent chunk launched with the primal arguments, then their tangents."""
        chunk, n, args = e.args
        new, _ = self.callees[id(e)]
        prims, tans = [], []
        for a in args.elts:
            pa, ta = self.dx(a, pre, hoist)
            prims.append(pa)
            if self.is_active(a):
                tans.append(ta if ta is not None else self.zero_of(pa))
        return ast.Call(e.func, [_n(new), n, ast.Tuple(prims + tans, ast.Load())], []), None

    # ------------------------------------------------------------------ code
    def transform(self):
        body = self.block(self.fdef.body)
        return body, self.returns

    def block(self, stmts):
        out = []
        for s in stmts:
            out += self.stmt(s)
        return out or [ast.Pass()]

    def tmp(self):
        self.fresh += 1
        return f"_h2_{self.fresh}"

    def stmt(self, s):
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.AugAssign):
            return self.aug(s)
        if isinstance(s, ast.Expr):
            return self.expr_stmt(s)
        if isinstance(s, ast.If):
            return [ast.If(s.test, self.block(s.body), self.block(s.orelse) if s.orelse else [])]
        if isinstance(s, ast.For):
            return [ast.For(s.target, s.iter, self.block(s.body),
                            self.block(s.orelse) if s.orelse else [], None)]
        if isinstance(s, ast.While):
            return [ast.While(s.test, self.block(s.body),
                              self.block(s.orelse) if s.orelse else [])]
        if isinstance(s, ast.Return):
            if not self.returns:
                return [s]
            pre = []
            prim, tan = self.dx(s.value, pre)
            return pre + [ast.Return(ast.Tuple([prim, tan or self.zero_of(prim)], ast.Load()))]
        if isinstance(s, (ast.Pass, ast.Break, ast.Continue, ast.Raise, ast.Assert)):
            return [s]
        raise SecondOrderError(f"statement {ast.unparse(s)}")

    def assign(self, s):
        if len(s.targets) != 1:
            raise SecondOrderError(f"chained assignment {ast.unparse(s)}")
        target = s.targets[0]
        pre = []
        prim, tan = self.dx(s.value, pre)
        if isinstance(target, ast.Name):
            if target.id not in self.active:
                return pre + [ast.Assign([target], prim)]
            if tan is None:
                tan = self.zero_of(prim)
            return pre + [ast.Assign([ast.Name(PREFIX + target.id, ast.Store())], tan),
                          ast.Assign([target], prim)]
        if isinstance(target, ast.Subscript):
            base = target.value
            if not (isinstance(base, ast.Name) and base.id in self.active):
                return pre + [ast.Assign([target], prim)]
            tt = ast.Subscript(ast.Name(PREFIX + base.id, ast.Load()), _c(target.slice),
                               ast.Store())
            return pre + [ast.Assign([tt], tan or self.zero_of(prim)), ast.Assign([target], prim)]
        if isinstance(target, ast.Tuple):
            if not any(isinstance(t, ast.Name) and t.id in self.active for t in target.elts):
                return pre + [ast.Assign([target], prim)]
            h = self.tmp()
            out = pre + [ast.Assign([ast.Name(h, ast.Store())], prim),
                         ast.Assign([ast.Name(PREFIX + h, ast.Store())],
                                    tan or self.zero_of(_n(h)))]
            for k, t in enumerate(target.elts):
                if not isinstance(t, ast.Name):
                    raise SecondOrderError(f"assignment {ast.unparse(s)}")
                if t.id in self.active:
                    out.append(ast.Assign([ast.Name(PREFIX + t.id, ast.Store())],
                                          ast.Subscript(_n(PREFIX + h), ast.Constant(k),
                                                        ast.Load())))
                out.append(ast.Assign([t], ast.Subscript(_n(h), ast.Constant(k), ast.Load())))
            return out
        raise SecondOrderError(f"assignment {ast.unparse(s)}")

    def aug(self, s):
        target = s.target
        base = target.value if isinstance(target, ast.Subscript) else target
        if not (isinstance(base, ast.Name) and base.id in self.active):
            return [s]
        if not isinstance(s.op, (ast.Add, ast.Sub)):
            # a *= b and friends: as a plain assignment
            load = _c(target)
            load.ctx = ast.Load()
            return self.assign(ast.Assign([target], ast.BinOp(load, s.op, s.value)))
        pre = []
        prim, tan = self.dx(s.value, pre)
        out = list(pre)
        if tan is not None:
            tt = ast.Name(PREFIX + base.id, ast.Store()) if target is base else \
                ast.Subscript(_n(PREFIX + base.id), _c(target.slice), ast.Store())
            out.append(ast.AugAssign(tt, s.op, tan))
        return out + [ast.AugAssign(target, s.op, prim)]

    def expr_stmt(self, s):
        e = s.value
        if not isinstance(e, ast.Call):
            return [s]  # docstrings
        name = called_name(e.func)
        kind, at = _kind_at(_kind(name), -1)
        if kind in ("accumulate", "store"):
            # the same add (or store) of the value's tangent into the array's tangent; a store
            # of a constant stores zeros there
            arr = e.args[0]
            if not (isinstance(_root(arr), ast.Name) and _root(arr).id in self.active):
                return [s]
            pre = []
            at = at % len(e.args)
            prim, tan = self.dx(e.args[at], pre)
            _, tarr = self.dx(arr, pre)
            args = list(e.args)
            args[at] = prim
            out = list(pre)
            if tan is None and kind == "store":
                tan = self.zero_of(prim)
            if tan is not None:
                targs = [_c(a) for a in e.args]
                targs[0], targs[at] = tarr, tan
                out.append(ast.Expr(ast.Call(_c(e.func), targs, [])))
            return out + [ast.Expr(ast.Call(e.func, args, []))]
        if kind == "reduce":
            arr, acc = e.args[0], e.args[1]
            if isinstance(arr, ast.Name) and arr.id in self.active:
                return [s, ast.Expr(ast.Call(_c(e.func), [_n(PREFIX + arr.id),
                                                          _n(PREFIX + acc.id)], []))]
            return [s]
        pre = []
        prim, _ = self.dx(e, pre)
        return pre + [ast.Expr(prim)]

    # ------------------------------------------------------------------ expressions
    def zero_of(self, prim):
        """A zero tangent with the structure and types of primal expression ``prim``."""
        if isinstance(prim, (ast.Tuple, ast.List)):
            return ast.Tuple([self.zero_of(e) for e in prim.elts], ast.Load())
        if isinstance(prim, ast.Constant) and prim.value is None:
            return ast.Constant(None)  # an absent (adjoint) array
        if isinstance(prim, ast.Call):
            kind = _kind(called_name(prim.func))
            if kind == "cast" and prim.args and isinstance(
                    prim.args[0].operand if isinstance(prim.args[0], ast.UnaryOp)
                    else prim.args[0], ast.Constant):
                return ast.Call(_c(prim.func), [ast.Constant(0.0)], [])
            if kind == "alloc":
                z = _call("np.zeros", *[_c(a) for a in prim.args])
                z.keywords = [_c(k) for k in prim.keywords]
                return z
        return _call("_w2.tzero", _c(prim))

    def dx(self, e, pre, hoist=True):
        """``(primal, tangent)`` expressions of ``e`` (tangent None: zero). Calls of generated
        functions with active arguments are bound first (appended to ``pre``) when ``hoist``;
        inside conditional expressions they are not (the branch not taken must not run)."""
        if isinstance(e, ast.Call) and id(e) in self.callees:
            return self.call(e, pre, hoist)
        if not self.is_active(e):
            return e, None
        if isinstance(e, ast.Name):
            return e, _n(PREFIX + e.id)
        if isinstance(e, ast.Subscript):
            pv, tv = self.dx(e.value, pre, hoist)
            prim = ast.Subscript(pv, e.slice, ast.Load())
            if isinstance(tv, ast.Tuple) and isinstance(e.slice, ast.Constant) and \
                    isinstance(e.slice.value, int):
                return prim, tv.elts[e.slice.value]
            return prim, ast.Subscript(tv, _c(e.slice), ast.Load())
        if isinstance(e, (ast.Tuple, ast.List)):
            parts = [self.dx(x, pre, hoist) for x in e.elts]
            prim = ast.Tuple([p for p, _ in parts], ast.Load())
            return prim, ast.Tuple([t if t is not None else self.zero_of(p) for p, t in parts],
                                   ast.Load())
        if isinstance(e, ast.UnaryOp):
            p, t = self.dx(e.operand, pre, hoist)
            prim = ast.UnaryOp(e.op, p)
            if isinstance(e.op, ast.USub):
                return prim, None if t is None else _neg(t)
            return prim, t
        if isinstance(e, ast.BinOp):
            return self.binop(e, pre, hoist)
        if isinstance(e, ast.IfExp):
            pb, tb = self.dx(e.body, pre, False)
            po, to = self.dx(e.orelse, pre, False)
            prim = ast.IfExp(e.test, pb, po)
            return prim, ast.IfExp(_c(e.test), tb if tb is not None else self.zero_of(pb),
                                   to if to is not None else self.zero_of(po))
        if isinstance(e, ast.Call):
            return self.call(e, pre, hoist)
        raise SecondOrderError(f"expression {ast.unparse(e)}")

    def binop(self, e, pre, hoist):
        a, ta = self.dx(e.left, pre, hoist)
        b, tb = self.dx(e.right, pre, hoist)
        prim = ast.BinOp(a, e.op, b)
        op = e.op
        if isinstance(op, ast.Add) and (isinstance(a, ast.Tuple) or isinstance(b, ast.Tuple)):
            # tuple concatenation (long vectors and matrices are built in pieces)
            return prim, _bin(ta if ta is not None else self.zero_of(a), ast.Add(),
                              tb if tb is not None else self.zero_of(b))
        if isinstance(op, ast.Add):
            return prim, _add(ta, tb)
        if isinstance(op, ast.Sub):
            return prim, _sub(ta, tb)
        if isinstance(op, ast.Mult):
            return prim, _add(_mul(ta, b), None if tb is None else _bin(_c(a), ast.Mult(), tb))
        if isinstance(op, ast.Div):
            if tb is None:
                return prim, _bin(ta, ast.Div(), _c(b))
            q = _bin(_c(a), ast.Div(), _c(b))
            return prim, _bin(_sub(ta, _bin(q, ast.Mult(), tb)), ast.Div(), _c(b))
        raise SecondOrderError(f"no second-order rule for the operator in {ast.unparse(e)}")

    def call(self, e, pre, hoist):
        name = called_name(e.func)
        kind, at = _kind_at(_kind(name), 0)
        if kind == "launch":
            return self.launch(e, pre, hoist)
        method = _method(e)
        if method is not None and name not in CALLS:  # x.reshape(...): the same view
            pv, tv = self.dx(method[0], pre, hoist)
            return (ast.Call(ast.Attribute(pv, method[1], ast.Load()), e.args, e.keywords),
                    ast.Call(ast.Attribute(tv, method[1], ast.Load()),
                             [_c(a) for a in e.args], [_c(k) for k in e.keywords]))
        if name in self.module.funcs:
            new, returns = self.callees[id(e)]
            params = [a.arg for a in self.module.funcs[name].args.args]
            args, tans = [], []
            for p, a in zip(params, e.args):
                pa, ta = self.dx(a, pre, hoist)
                args.append(pa)
                if self.is_active(a):
                    tans.append(ta if ta is not None else self.zero_of(pa))
            c = ast.Call(_n(new), args + tans, [])
            if not returns:
                return c, None
            if hoist:
                h = self.tmp()
                pre.append(ast.Assign([ast.Name(h, ast.Store())], c))
                return (ast.Subscript(_n(h), ast.Constant(0), ast.Load()),
                        ast.Subscript(_n(h), ast.Constant(1), ast.Load()))
            return (ast.Subscript(c, ast.Constant(0), ast.Load()),
                    ast.Subscript(_c(c), ast.Constant(1), ast.Load()))
        parts = [self.dx(a, pre, hoist) for a in e.args]
        args = [p for p, _ in parts]
        tans = [t for _, t in parts]
        prim = ast.Call(e.func, args, e.keywords)
        if kind in ("zero", "alloc"):
            return prim, None
        if kind == "cast":
            return prim, ast.Call(_c(e.func), [tans[0]], []) if tans[0] is not None else None
        if kind == "same":
            return prim, tans[0]
        if kind == "linear":
            targs = [_c(a) for a in args]
            targs[at] = tans[at]
            return prim, ast.Call(_c(e.func), targs, [])
        if kind == "joint":
            return prim, ast.Call(_c(e.func), [t if t is not None else self.zero_of(a)
                                               for a, t in zip(args, tans)], [])
        if kind == "bilinear":  # f(ta, b) + f(a, tb)
            terms = []
            for k in (0, 1):
                if tans[k] is not None:
                    targs = [_c(a) for a in args]
                    targs[k] = tans[k]
                    terms.append(ast.Call(_c(e.func), targs, []))
            return prim, terms[0] if len(terms) == 1 else _add(*terms)
        if kind in ("extreme", "jvp"):
            if hoist:  # the value, computed once
                h = self.tmp()
                pre.append(ast.Assign([ast.Name(h, ast.Store())], prim))
                prim = _n(h)
            if kind == "extreme":  # the tangent where the value is (first such element)
                pick = "_w2.tile_pick" if "scalar" not in name else "_w2.tile_pick_scalar"
                return prim, _call(pick, _c(args[0]), _c(prim), tans[0])
            fn, with_value, diff = TILE_JVP[name[4:]]
            targs = [_c(a) for a in args] + ([_c(prim)] if with_value else []) + \
                [tans[p] if tans[p] is not None else self.zero_of(args[p]) for p in diff]
            return prim, _call(fn, *targs)
        if kind == "insert":
            t, k, x = args
            return prim, ast.Call(_c(e.func), [tans[0] if tans[0] is not None else
                                               self.zero_of(t), _c(k),
                                               tans[2] if tans[2] is not None else
                                               self.zero_of(x)], [])
        if kind != "rule":
            raise SecondOrderError(f"no second-order rule for '{name}'")
        return prim, rule_tangent(name, prim, args, tans)


# ---------------------------------------------------------------------- modules

def tangent_module(source, entries):
    """The source of a module holding ``source`` (a generated module) and the tangents of its
    functions: ``entries`` is a list of ``(function name, new name, active parameter names,
    insert_at)``; callees are specialised as needed."""
    try:
        tree = ast.parse(_keep_comments(source))
    except SyntaxError:  # a comment where no statement can stand: drop the comments
        tree = ast.parse(source)
    mod = Module(tree)
    for name, new_name, active, insert_at in entries:
        mod.tangent_of(name, active, new_name, insert_at)
    body = [s for s in tree.body if not (isinstance(s, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "WEFT_ABI" for t in s.targets))]
    imports = ast.parse("from weft.native import second_helpers as _w2").body
    for f in mod.out:  # (the parsed body has its locations: only the new functions lack some)
        ast.fix_missing_locations(f)
    new = ast.Module(imports + body + mod.out, [])
    header = ('"""Second-order (tangent of adjoint) functions generated by weft from the module '
              'below; see weft.transpiler.second_order."""\n')
    return header + _restore_comments(ast.unparse(new))


def entries_of(abi):
    """The functions ``tape.hvp`` runs for a kernel of ABI ``abi``, as :func:`tangent_module`
    takes them: its CPU adjoint entries, once each, along the tangents of its parameters and
    their adjoints (the tangent parameters inserted after ``_dim``, the parameters and the
    adjoints)."""
    active = [p.name for p in abi.params if p.tangent is not None] + \
        [p.adjoint for p in abi.params if p.adjoint is not None]
    insert_at = 1 + len(abi.params) + sum(p.adjoint is not None for p in abi.params)
    return [(name, name + "__hvp", active, insert_at)
            for name in dict.fromkeys(abi.entries["adjoint"][t] for t in ("cpu", "serial"))]


def run(state):
    entries = [e for abi in state.abis.values() for e in entries_of(abi)]
    state.second_source = tangent_module(state.source, entries)
    return state
