"""Shared machinery of the three code generators (forward, adjoint, tangent).

A generator turns IR statements into Python ``ast`` statements for one target
(:mod:`.targets`), reading the function's facts (:mod:`.analyze`). Every emitted statement
carries ``_weft_loc`` (the user's ``file:line``), from which the assemble pass writes the
user's source line above the statements it produced.
"""
from __future__ import annotations

import ast
import functools

from ..core import types as T
from ..core.errors import InternalError
from ..stdlib import ir
from ..stdlib.exprs import Builder, Ex, NameGen, const, name, zero


def located(stmt, loc):
    """``stmt`` marked as coming from source location ``loc`` (unless already marked)."""
    if getattr(stmt, "_weft_loc", None) is None:
        stmt._weft_loc = loc
    return stmt


def thread_row():
    """``_w - 1``: the row of thread ``_w``'s copy in a launch's per-thread buffers."""
    return ast.BinOp(name("_w"), ast.Sub(), ast.Constant(1))


def private_split(arr_name, direct, copy, shared, loc=None):
    """How a CPU chunk adds into array ``arr_name`` that the launch gave per-thread copies
    (``_pv_<a>``, ``_acc_<a>``): thread 0 runs ``direct`` (into the array), a thread with a copy
    ``copy`` (into ``_acc_<a>[_w - 1]``), any other ``shared`` (atomics). A branch per update:
    an array chosen once per thread would be a new array value per launch index, reference
    counted."""
    pv = name(f"_pv_{arr_name}")
    rows = ast.Subscript(ast.Attribute(name(f"_acc_{arr_name}"), "shape", ast.Load()),
                         ast.Constant(0), ast.Load())
    first = ast.BoolOp(ast.And(), [pv, ast.Compare(name("_w"), [ast.Eq()], [ast.Constant(0)])])
    mine = ast.BoolOp(ast.And(), [pv, ast.Compare(name("_w"), [ast.LtE()], [rows])])
    return located(ast.If(first, direct, [located(ast.If(mine, copy, shared), loc)]), loc)


def assign(target, value_node, loc=None):
    s = ast.Assign([ast.Name(target, ast.Store())] if isinstance(target, str) else [target],
                   value_node, lineno=0)
    s._weft_loc = loc
    return s


def tag(stmts, loc):
    for s in stmts:
        located(s, loc)
    return stmts


def diff(v):
    """Whether operand ``v`` carries a derivative: a value (not an array) of a differentiable
    type."""
    return not isinstance(v.type, T.ArrayType) and T.is_differentiable(v.type)


def names_for(fir):
    """The name generator of one function's generated code: every name of the IR is taken,
    and each variable gets the base of its adjoint and tangent names (``_t5`` -> ``adj_t5``,
    ``x_1`` -> ``adj_x_1``; the full name where the short one would collide)."""
    taken = {v.name for v in fir.params} | {v.name for v in ir.defined_vars(fir.body)}
    names = NameGen(taken)
    seen = set(taken)
    used = set()  # the bases given so far (names.bases' values)
    params = {v.name for v in fir.params}  # the ABI names parameters' shadows adj_<param>
    for n in sorted(taken):
        base = n[1:] if n.startswith("_") and not n.startswith("__") and n not in params else n
        if base != n and (base in seen or base in used):
            base = n
        if base == "ret":  # adj_ret is the incoming adjoint of a func's result
            base = "ret_"
        names.bases[n] = base
        used.add(base)
    for n in taken:
        names.taken.update((f"adj_{names.bases[n]}", f"tan_{names.bases[n]}"))
    return names


def is_none(n):
    return ast.Compare(name(n), [ast.Is()], [ast.Constant(None)])


def not_none(n):
    return ast.Compare(name(n), [ast.IsNot()], [ast.Constant(None)])


def index_node(parts):
    """Subscript slice for integer index nodes ``parts``."""
    if len(parts) == 1:
        return parts[0]
    return ast.Tuple(list(parts), ast.Load())


def storage_dtype_node(t):
    """``np.<dtype>`` of buffers the generated code allocates itself (loop stacks, thread-local
    arrays) for values of type ``t``: float16 values are held as float32 there."""
    st = T.scalar_of(t)
    nm = "bool_" if st is T.bool else "float32" if st is T.float16 else st.__name__
    return ast.Attribute(name("np"), nm, ast.Load())


def is_half(t):
    """Values of type ``t`` are float16 (held as float32 rounded to half precision)."""
    return not isinstance(t, (T.TupleType, T.ArrayType)) and T.scalar_of(t) is T.float16


def round_half(ex):
    """``float16(x)`` per component: round a float32 value to half precision (the generated
    module binds ``float16`` to ``_wk.round_f16``)."""
    def one(c):
        node = c.node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "float16":
            return c
        return Ex(ast.Call(name("float16"), [node], []), T.float16)
    if T.is_tile_type(ex.type):
        return Ex(wk_call("tile_round_f16", ex.node), ex.type)
    if T.is_composite(ex.type):
        from ..stdlib.exprs import tup
        return tup([one(c) for c in ex.atom().items()], ex.type)
    return one(ex)


def literal_int(node):
    """The value of ``node`` when it is an int literal (``3``, ``-1``: Numba types it
    ``Literal[int]``), else None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node, sign = node.operand, -1
    return sign * node.value if isinstance(node, ast.Constant) and type(node.value) is int \
        else None


def _constant_int(node):
    """Whether index ``node`` is an int constant (``3``, ``-1``, ``int32(3)``)."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
            isinstance(node.func, ast.Name) and node.func.id.startswith(("int", "uint")):
        node = node.args[0]
    return literal_int(node) is not None


def plain_int(value):
    """The int constant ``value`` as an argument Numba types ``int64``, not ``Literal[int]``: a
    jitted function called with a literal argument is compiled once per value (every checked
    access of a debug build compiled ``chk`` again for its site number: 1,702 sites in MuJoCo
    Warp's first step)."""
    return ast.Call(name("int64"), [ast.Constant(value)], [])


def wk_call(fn, *args):
    """``_wk.<fn>(args...)``: a call of the target's helper module."""
    return ast.Call(ast.Attribute(name("_wk"), fn, ast.Load()), list(args), [])


def component_indices(dtype):
    """Trailing numpy indices of each flat component of one element of ``dtype`` (a tile is
    written and read whole: ``stack[row] = tile``)."""
    shape = T.element_shape(dtype)
    if not shape or T.is_tile_type(dtype):
        return [()]
    if len(shape) == 1:
        return [(i,) for i in range(shape[0])]
    return [(i, j) for i in range(shape[0]) for j in range(shape[1])]


class Gen:
    """Base: operands to expressions, statement dispatch, builders for temporaries."""

    def __init__(self, fir, names, facts, target):
        self.fir = fir
        self.names = names
        self.facts = facts      # analyze.FuncFacts of fir
        self.target = target    # targets.Target
        self.private = set()    # arrays accumulated into per-thread copies (CPU kernels)
        # buffers weft allocates itself (thread-local arrays; the adjoint adds its loop stacks)
        # hold float16 values as float32
        self.plain_buffers = {p.name for p in fir.params
                              if isinstance(p.type, T.ArrayType) and p.type.local}
        for s in ir.walk(fir.body):
            if isinstance(s, ir.Assign) and isinstance(s.dst.type, T.ArrayType) and \
                    s.dst.type.local:
                self.plain_buffers.add(s.dst.name)

    def half_storage(self, arr_name, dtype):
        """Whether ``arr_name`` holds float16 elements as half bits (a uint16 view of a user
        array, its gradient or tangent), rather than as float32 (buffers weft allocates)."""
        return is_half(dtype) and arr_name not in self.plain_buffers

    def ex(self, o):
        if isinstance(o, ir.Var):
            return Ex(name(o.name), o.type)
        if isinstance(o, ir.Const):
            return const(o.value, o.type)
        raise InternalError(f"bad operand {o!r}")

    def idx_nodes(self, idx):
        out = []
        for i in idx:
            if isinstance(i, ir.Const):
                out.append(ast.Constant(int(i.value)))
            else:
                out.append(name(i.name))
        return out

    def build(self, fn, loc):
        """Run ``fn()`` (which builds Ex values) with a Builder; returns (stmts, result)."""
        b = Builder(self.names)
        with b.active():
            result = fn()
        return tag(b.stmts, loc), result

    # --------------------------------------------------------------- debug: checked accesses
    pass_kind = "forward"

    def checks(self, arr_name, loc, idx_nodes=()):
        """Whether accesses to ``arr_name`` at ``idx_nodes`` are checked (debug targets; user
        arrays and thread-local buffers, not weft's own stacks and per-thread buffers; in a
        guarded build only those at a constant index on some axis)."""
        t = self.target
        if not t.debug or loc is None or arr_name.startswith(("_stk", "_acc_")):
            return False
        if t.check_all or any(_constant_int(i) for i in idx_nodes):
            return True
        if not t.null_params:
            return False
        root = self.kernel_param(arr_name)  # (a view, a local, a func's parameter: checked)
        return root is None or root in t.null_params

    def kernel_param(self, arr_name):
        """The kernel parameter ``arr_name`` is (itself, its adjoint or its tangent); None for
        any other array (a view, a local, a func's parameter)."""
        return self._kernel_params.get(arr_name)

    @functools.cached_property
    def _kernel_params(self):
        if self.fir.kind != "kernel":
            return {}
        return {name: p.name for p in self.fir.params
                for name in (p.name, self.shadow("adj", p.name), self.shadow("tan", p.name))}

    def checked(self, arr_name, idx_nodes, loc, skip=()):
        """Index nodes clamped in range (loads and views), out-of-range ones reported; the
        positions in ``skip`` (slices) are left as they are."""
        if not self.checks(arr_name, loc, idx_nodes):
            return list(idx_nodes)
        site = self.target.site(self.display(arr_name), loc, self.pass_kind)
        return [i if k in skip else self.target.checked_index(arr_name, k, i, site)
                for k, i in enumerate(idx_nodes)]

    def guarded(self, arr_name, idx_nodes, loc, stmts, orelse=()):
        """``stmts`` (a store or an atomic) run only when every index is in range."""
        if not self.checks(arr_name, loc, idx_nodes):
            return stmts
        site = self.target.site(self.display(arr_name), loc, self.pass_kind)
        tests = [self.target.in_bounds(arr_name, k, i, site) for k, i in enumerate(idx_nodes)]
        cond = tests[0] if len(tests) == 1 else ast.BoolOp(ast.And(), tests)
        return [located(ast.If(cond, stmts, list(orelse)), loc)]

    def display(self, arr_name):
        """How an array is named in a debug report: the user's name (``s.arr`` for a struct
        member), a view by the array it views, an adjoint or tangent as such."""
        shadows = {self.shadow(p, n): (p, n) for n in self.names.bases for p in ("adj", "tan")}
        if arr_name in shadows:
            prefix, primal = shadows[arr_name]
            what = "the adjoint of " if prefix == "adj" else "the tangent of "
            return what + self.display(primal)
        root = self.facts.view_roots.get(arr_name)
        if root is not None:
            return f"a view of {root.replace('__', '.')}"
        return arr_name.replace("__", ".")

    def load_element(self, arr_name, idx_nodes, dtype, loc=None):
        """Expression reading one element (scalar or composite) of ``arr_name`` (at source
        location ``loc``: checked in debug targets)."""
        idx_nodes = self.checked(arr_name, idx_nodes, loc)
        comps = []
        half = self.half_storage(arr_name, dtype)
        for extra in component_indices(dtype):
            sl = index_node(list(idx_nodes) + [ast.Constant(e) for e in extra])
            c = ast.Subscript(name(arr_name), sl, ast.Load())
            comps.append(wk_call("h2f", c) if half else c)
        if not T.is_composite(dtype):
            return Ex(comps[0], dtype)
        return Ex(ast.Tuple(comps, ast.Load()), dtype)

    def store_element(self, arr_name, idx_nodes, value, loc, op=None, checked=True):
        """Statements writing (or, with ``op=ast.Add()``, accumulating) one element."""
        out = self._store(arr_name, idx_nodes, value, loc, op)
        return self.guarded(arr_name, idx_nodes, loc, out) if checked else out

    def _store(self, arr_name, idx_nodes, value, loc, op):
        out = []
        value = value if not T.is_composite(value.type) else value
        items = value.items() if T.is_composite(value.type) else [value]
        half = self.half_storage(arr_name, value.type)
        for extra, item in zip(component_indices(value.type), items):
            sl = index_node(list(idx_nodes) + [ast.Constant(e) for e in extra])
            target = ast.Subscript(name(arr_name), sl, ast.Store())
            if half:  # a = f2h(h2f(a) + v): a plain read-modify-write of the half bits
                v = item.node if op is None else ast.BinOp(
                    wk_call("h2f", ast.Subscript(name(arr_name), sl, ast.Load())), op,
                    item.node)
                s = ast.Assign([target], wk_call("f2h", v), lineno=0)
            elif op is None:
                s = ast.Assign([target], item.node, lineno=0)
            else:
                s = ast.AugAssign(target, op, item.node)
            out.append(located(s, loc))
        return out

    def atomic_element(self, fn, arr_name, idx_nodes, value, loc, dst=None, compare=None):
        """``_wk.atomic_<fn>`` per component; optionally bind the old value to ``dst``.

        Arrays in ``self.private`` (CPU kernels that only accumulate into them) are added into
        with a plain ``+=`` when the launch allotted copies (:func:`private_split`)."""
        if arr_name in self.private and fn in ("add", "sub") and dst is None:
            op = ast.Add() if fn == "add" else ast.Sub()
            idx = list(idx_nodes)
            direct = self.guarded(arr_name, idx, loc, self.store_element(
                arr_name, idx, value, loc, op=op, checked=False))
            copy = self.guarded(arr_name, idx, loc, self.store_element(
                f"_acc_{arr_name}", [thread_row()] + idx, value, loc, op=op, checked=False))
            shared = self._atomics(fn, arr_name, idx_nodes, value, loc, dst)
            return [private_split(arr_name, direct, copy, shared, loc)]
        return self._atomics(fn, arr_name, idx_nodes, value, loc, dst, compare)

    def _atomics(self, fn, arr_name, idx_nodes, value, loc, dst, compare=None):
        out = []
        olds = []
        items = value.items() if T.is_composite(value.type) else [value]
        suffix = "_f16" if self.half_storage(arr_name, value.type) else ""
        for extra, item in zip(component_indices(value.type), items):
            parts = list(idx_nodes) + [ast.Constant(e) for e in extra]
            idx = parts[0] if len(parts) == 1 else ast.Tuple(parts, ast.Load())
            args = [name(arr_name), idx, item.node] if compare is None else \
                [name(arr_name), idx, compare.node, item.node]
            olds.append(self.target.atomic(f"atomic_{fn}{suffix}", args))
        if dst is None:
            out += [located(ast.Expr(c), loc) for c in olds]
            return self.guarded(arr_name, idx_nodes, loc, out)
        if T.is_composite(value.type):
            out.append(assign(dst, ast.Tuple(olds, ast.Load()), loc))
        else:
            out.append(assign(dst, olds[0], loc))
        return self.guarded(arr_name, idx_nodes, loc, out,
                            [assign(dst, zero_node(value.type), loc)])

    def own_index(self, arr, idx):
        return self.facts.own_index(arr, idx)

    def call_generated(self, fname, args, pass_kind):
        """A call of generated function ``fname`` of ``pass_kind``: the target's extra
        arguments (error words) follow the arguments."""
        return ast.Call(name(fname), list(args) + [
            name(p) for p in self.target.extra_params(pass_kind)], [])

    def shadow(self, prefix, v):
        """The adjoint (``prefix="adj"``) or tangent (``"tan"``) name of a Var or name."""
        return self.names.shadow(prefix, v if isinstance(v, str) else v.name)

    def adj(self, v):
        return self.shadow("adj", v)

    def tan(self, v):
        return self.shadow("tan", v)


def zero_node(t):
    return zero(t).node


def adj_zero_node(t):
    """The initial value of an adjoint: -0.0, the exact identity of IEEE addition, so that
    LLVM folds the first accumulation ``-0.0 + x`` into ``x`` (``0.0 + x`` is not ``x`` for
    ``x = -0.0`` and stays an add without fast-math)."""
    from ..stdlib.exprs import const
    return const(-0.0, t).node
