"""Typed expression building for the code generators and the builtin rules.

An :class:`Ex` pairs a Python ``ast`` expression with its weft type. Arithmetic on ``Ex``
objects emits the right code for the types: scalars become ``ast.BinOp``; vectors and matrices
(flat tuples in generated code) become tuple literals of per-component expressions. Operands that
would be evaluated more than once are first bound to a temporary through the active
:class:`Builder`, so generated code never recomputes a subexpression.

Builtin rules are written with these objects, e.g. the adjoint of ``sin`` is
``adj * call("math.cos", x)``.
"""
from __future__ import annotations

import ast
import collections
import contextlib
import contextvars
import math

import numpy as np

from ..core import types as T
from ..core.errors import InternalError

_builder = contextvars.ContextVar("weft_builder")
_target = contextvars.ContextVar("weft_target", default=None)


@contextlib.contextmanager
def targeting(target):
    """Context: math calls built by :func:`call` are spelled for ``target``
    (:mod:`weft.transpiler.targets`)."""
    token = _target.set(target)
    try:
        yield target
    finally:
        _target.reset(token)


class Builder:
    """Collects statements while an expression is built; names temporaries deterministically."""

    def __init__(self, names):
        self.names = names  # shared NameGen of the function being generated
        self.stmts = []

    def let(self, ex, hint="r"):
        """Bind ``ex`` to a fresh name and return an ``Ex`` naming it."""
        if isinstance(ex.node, ast.Tuple):
            # keep tuples literal, but bind each non-trivial component
            elts = [self.let(c, hint).node if not _simple(c.node) else c.node for c in ex.items()]
            return Ex(ast.Tuple(elts, ast.Load()), ex.type)
        if _simple(ex.node):
            return ex
        name = self.names.fresh(hint)
        self.stmts.append(ast.Assign([ast.Name(name, ast.Store())], ex.node, lineno=0))
        return Ex(ast.Name(name, ast.Load()), ex.type)

    def active(self):
        """Context: expressions built inside bind their temporaries through this builder."""
        return _Active(self)


class _Active:
    """:meth:`Builder.active` (a class: a generator-based context manager cost a tenth of
    generating a large kernel)."""

    __slots__ = ("builder", "token")

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.token = _builder.set(self.builder)
        return self.builder

    def __exit__(self, *exc):
        _builder.reset(self.token)
        return False


class NameGen:
    """Fresh deterministic names ``_t0, _t1, ...`` per prefix. A fresh ``_t3`` is never one
    whose bare form ``t3`` is taken, so that its adjoint can be called ``adj_t3``."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        self.counts = {}
        self.bases = {}   # variable name -> the base of its shadows (adj_<base>, tan_<base>)

    def fresh(self, hint="t"):
        while True:
            n = self.counts.get(hint, 0)
            self.counts[hint] = n + 1
            name = f"_{hint}{n}"
            if name not in self.taken and name[1:] not in self.taken:
                self.taken.add(name)
                return name

    def shadow(self, prefix, name):
        """The name of ``name``'s adjoint (``prefix="adj"``) or tangent (``"tan"``)."""
        return f"{prefix}_{self.bases.get(name, name)}"

    def scratch(self):
        """A throw-away copy: it hands out the names this generator would, and what it takes
        or sets is not seen here. Costs the number of hints, not of names (a deep copy per
        statement made generating a function quadratic in its size)."""
        s = NameGen.__new__(NameGen)
        s.taken = SetOverlay(self.taken)
        s.counts = dict(self.counts)
        s.bases = collections.ChainMap({}, self.bases)
        return s


class SetOverlay:
    """A set seen through: ``base``'s members and those added here (``base`` unchanged)."""

    def __init__(self, base):
        self.base, self.own = base, set()

    def __contains__(self, x):
        return x in self.own or x in self.base

    def add(self, x):
        self.own.add(x)

    def update(self, xs):
        self.own.update(xs)


def _simple(node):
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return isinstance(node.slice, ast.Constant)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
        return isinstance(node.args[0], ast.Constant)  # typed constant like float32(1.0)
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    return False


_LOAD = ast.Load()  # one context object for every read (as CPython's parser shares it)


def name(n, ctx=ast.Load):
    return ast.Name(n, _LOAD if ctx is ast.Load else ctx())


def attr_path(path):
    """``"math.sin"`` -> ast for ``math.sin``."""
    parts = path.split(".")
    node = ast.Name(parts[0], ast.Load())
    for p in parts[1:]:
        node = ast.Attribute(node, p, ast.Load())
    return node


def _arith(op):
    """``Ex``'s operator methods for the ``ast`` operator class ``op``: ``(__op__, __rop__)``."""
    return (lambda self, o: self._bin(o, op()), lambda self, o: self._bin(o, op(), True))


class Ex:
    """A typed expression. See the module docstring."""

    __slots__ = ("node", "type")

    def __init__(self, node, type_):
        self.node = node
        self.type = type_

    def __repr__(self):
        return f"Ex({ast.unparse(self.node)}: {T.type_name(self.type)})"

    # --- components -------------------------------------------------------------------------
    @property
    def length(self):
        if isinstance(self.type, T.TupleType):
            return len(self.type.types)
        return self.type._length_

    def comp(self, i):
        if isinstance(self.type, T.TupleType):
            st = self.type.types[i]
        else:
            st = T.scalar_of(self.type)
        if isinstance(self.node, ast.Tuple):
            return Ex(self.node.elts[i], st)
        return Ex(ast.Subscript(self.node, ast.Constant(i), ast.Load()), st)

    def items(self):
        return [self.comp(i) for i in range(self.length)]

    def atom(self, hint="r"):
        """This expression, bound to a name unless it is already cheap to repeat."""
        if _simple(self.node):
            return self
        b = _builder.get(None)
        if b is None:
            raise InternalError("expression needs a temporary but no builder is active")
        return b.let(self, hint)

    # --- arithmetic ---------------------------------------------------------------------------
    def _bin(self, other, op, reverse=False):
        other = lift(other, T.scalar_of(self.type))
        a, b = (other, self) if reverse else (self, other)
        return binop(op, a, b)

    __add__, __radd__ = _arith(ast.Add)
    __sub__, __rsub__ = _arith(ast.Sub)
    __mul__, __rmul__ = _arith(ast.Mult)
    __truediv__, __rtruediv__ = _arith(ast.Div)

    def __neg__(self):
        if _structural(self.node):
            return self
        if T.is_tile_type(self.type):
            return Ex(ast.UnaryOp(ast.USub(), self.node), self.type)
        if T.is_composite(self.type):
            s = self.atom()
            return tup([-c for c in s.items()], self.type)
        return Ex(wrap_int(ast.UnaryOp(ast.USub(), self.node), self.type), self.type)


_NARROW_INTS = (T.int8, T.uint8, T.int16, T.uint16, T.int32, T.uint32)


def wrap_int(node, t):
    """``node`` as a value of scalar type ``t``: Numba computes 8-, 16- and 32-bit integer
    arithmetic in 64 bits, so a result that may leave the type's range (``uint32(5) - 17``,
    an int32 overflow) is wrapped back to it, as C and Warp do, before ``%``, ``>>``, ``//`` or
    a comparison can see the wide value."""
    if t in _NARROW_INTS:
        return ast.Call(name(t.__name__), [node], [])
    return node


def structural_zero(type_):
    """The tangent of a value that no input varies (:func:`analyze.tangent_varied`): a zero
    that arithmetic folds away (``x * 0`` is 0 and ``x + 0`` is ``x`` even where ``x`` is
    inf or NaN: the derivative along the direction is exactly zero, it is not a product)."""
    z = zero(type_)
    stack = [z.node]  # a constant: calls, names, numbers and tuples of them
    while stack:
        node = stack.pop()
        node.weft_zero = True
        kind = type(node)
        if kind is ast.Call:
            stack.append(node.func)
            stack += node.args
        elif kind is ast.Tuple:
            stack += node.elts
        elif kind is ast.UnaryOp:
            stack.append(node.operand)
        elif kind is ast.Attribute:
            stack.append(node.value)
        elif kind is not ast.Name and kind is not ast.Constant:
            stack += ast.iter_child_nodes(node)
    return z


def _structural(node):
    return getattr(node, "weft_zero", False)


def _fold(op, a, b, out_t):
    """``a op b`` when an operand is a structural zero and the result is known without it,
    else None."""
    za, zb = _structural(a.node), _structural(b.node)
    if not (za or zb):
        return None
    if isinstance(op, ast.Mult) or (isinstance(op, ast.Div) and za):
        return structural_zero(out_t)
    if isinstance(op, (ast.Add, ast.Sub)) and zb and a.type == out_t:
        return a
    if isinstance(op, ast.Add) and za and b.type == out_t:
        return b
    if isinstance(op, ast.Sub) and za and b.type == out_t:
        return -b
    return None


_SCALARS = frozenset(T.scalar_types) | {T.bool}


def binop(op, a, b):
    """``a op b`` for scalars, and componentwise for composites (scalars broadcast); integer
    results wrap to their type's width. Structural zeros (:func:`structural_zero`) fold."""
    if a.type in _SCALARS and b.type in _SCALARS:  # most operations: the scalar case below
        folded = _fold(op, a, b, a.type)
        if folded is not None:
            return folded
        return Ex(wrap_int(ast.BinOp(a.node, op, b.node), a.type), a.type)
    if T.is_tile_type(a.type) or T.is_tile_type(b.type):  # numpy's elementwise arithmetic on arrays
        out_t = a.type if T.is_tile_type(a.type) else b.type
        folded = _fold(op, a, b, out_t)
        if folded is not None:
            return folded
        return Ex(ast.BinOp(a.node, op, b.node), out_t)
    ca, cb = T.is_composite(a.type), T.is_composite(b.type)
    folded = _fold(op, a, b, a.type if ca or not cb else b.type)
    if folded is not None:
        return folded
    if not ca and not cb:
        return Ex(wrap_int(ast.BinOp(a.node, op, b.node), a.type), a.type)
    out_t = a.type if ca else b.type
    a, b = a.atom(), b.atom()
    n = out_t._length_
    comps = []
    for i in range(n):
        x = a.comp(i) if ca else a
        y = b.comp(i) if cb else b
        st = T.scalar_of(out_t)
        folded = _fold(op, x, y, st)
        comps.append(folded if folded is not None else
                     Ex(wrap_int(ast.BinOp(x.node, op, y.node), st), st))
    return tup(comps, out_t)


def tup(items, type_):
    return Ex(ast.Tuple([i.node for i in items], ast.Load()), type_)


def const(value, type_):
    """A constant of scalar or composite ``type_`` written so Numba types it exactly."""
    if isinstance(type_, T.TupleType):
        return tup([const(value, t) for t in type_.types], type_)
    if T.is_tile_type(type_):
        return tile_const(value, type_)
    if T.is_composite(type_):
        vals = np.asarray(value, dtype=T.numpy_dtype(type_)).reshape(-1)
        if vals.size == 1 and type_._length_ != 1:
            vals = np.full(type_._length_, vals[0])
        return tup([const(v, T.scalar_of(type_)) for v in vals], type_)
    if type_ is T.bool:
        return Ex(ast.Constant(bool(value)), type_)
    kind = type(value)  # (-0.0 and 0.0 are equal keys but for their signs; 1 and 1.0 differ)
    key = (type_, value) if kind is int else (type_, value, math.copysign(1.0, value)) \
        if kind is float else None
    made = _CONSTS.get(key) if key is not None else None
    if made is None:
        made = _scalar_const(value, type_)
        if key is not None and len(_CONSTS) < 100_000:
            _CONSTS[key] = made
    fn, arg = made
    arg = ast.Call(name("float"), [ast.Constant(arg)], []) if isinstance(arg, str) else \
        ast.Constant(arg)
    return Ex(ast.Call(name(fn), [arg], []), type_)


_CONSTS = {}  # (type, an int, or a float and its sign) -> what _scalar_const made of it


def _scalar_const(value, type_):
    """``(the cast's name, its argument)`` of a scalar constant: the argument a number, or
    the string ``float`` reads (inf, nan). numpy's conversions cost more than the rest of
    generating an assignment, so :func:`const` keeps what they made."""
    if T.is_int(type_) and isinstance(value, (int, np.integer)):
        bits = 8 * T.numpy_dtype(type_).itemsize  # C's conversion, as Warp: uint32(-1) wraps
        value = int(value) & ((1 << bits) - 1)
        if T.numpy_dtype(type_).kind == "i" and value >= 1 << (bits - 1):
            value -= 1 << bits
    v = T.numpy_dtype(type_).type(value)
    if T.is_float(type_):
        f = float(v)
        return type_.__name__, repr(f) if math.isnan(f) or math.isinf(f) else f
    return type_.__name__, int(v)


def tile_const(value, type_):
    """A tile of ``type_`` with every component ``value``: ``np.zeros(shape, dtype)``, plus
    ``value`` when it is not zero."""
    shape = ast.Tuple([ast.Constant(d) for d in T.element_shape(type_)], ast.Load())
    st = T.scalar_of(type_)
    node = ast.Call(attr_path("np.zeros"), [shape, tile_dtype(st)], [])
    if value != 0:
        node = ast.BinOp(node, ast.Add(), const(value, st).node)
    return Ex(node, type_)


def tile_dtype(st):
    """``np.<type>`` of the arrays holding tiles of scalar type ``st``: float16 tiles hold
    float32 values rounded to half (Numba has no half arithmetic)."""
    return attr_path("np.bool_" if st is T.bool else "np.float32" if st is T.float16 else
                     f"np.{st.__name__}")


def zero(type_):
    return const(0, type_)


def lift(x, scalar_type):
    """Python numbers become typed constants of ``scalar_type``; ``Ex`` passes through."""
    if isinstance(x, Ex):
        return x
    if isinstance(x, (int, float, bool, np.number)):
        return const(x, scalar_type)
    raise InternalError(f"cannot use {x!r} in a generated expression")


def call(path, *args, type_=None):
    """``path(*args)``, e.g. ``call("np.cos", x)``; result type defaults to the first arg's.
    Math functions (``np.*``, ``math.*``) are spelled by the target being generated for (CUDA
    calls libdevice at the arguments' precision)."""
    nodes = [a.node for a in args]
    target = _target.get()
    if target is not None and path.startswith(("np.", "math.")):
        node = target.math(path, nodes, tuple(a.type for a in args))
        node.weft_math = path  # a pure math call (the adjoint may move it: adjoint.py)
    else:
        node = ast.Call(attr_path(path), nodes, [])
    return Ex(node, type_ if type_ is not None else args[0].type)


def mapc(fn, *args, type_=None):
    """Apply scalar ``fn`` per component when args are composite (scalar args broadcast)."""
    comp_t = next((a.type for a in args if T.is_composite(a.type)), None)
    if comp_t is None:
        return fn(*args)
    args = [a.atom() for a in args]
    items = [fn(*[a.comp(i) if T.is_composite(a.type) else a for a in args])
             for i in range(comp_t._length_)]
    out_t = type_ or comp_t
    if items and T.scalar_of(out_t) is not items[0].type and type_ is None:
        out_t = T.vector(comp_t._length_, items[0].type) if T.is_vector(comp_t) else out_t
    return tup(items, out_t)


def cast(x, type_):
    """Convert scalar ``x`` to scalar ``type_`` (``float32(x)``)."""
    if x.type is type_:
        return x
    return Ex(ast.Call(name(type_.__name__), [x.node], []), type_)


def select(c, a, b):
    """``a if c else b`` (both evaluated; they are names or constants)."""
    return Ex(ast.IfExp(c.node, a.node, b.node), a.type)


def total(items):
    """Sum of a list of scalar Ex as one left-folded expression (structural zeros left out)."""
    kept = [it for it in items if not _structural(it.node)]
    if not kept:
        return structural_zero(items[0].type)
    items = kept
    acc = items[0]
    for it in items[1:]:
        acc = Ex(ast.BinOp(acc.node, ast.Add(), it.node), acc.type)
    return acc


def dot(a, b):
    if _structural(a.node) or _structural(b.node):
        return structural_zero(T.scalar_of(a.type))
    a, b = a.atom(), b.atom()
    return total([structural_zero(x.type) if _structural(x.node) or _structural(y.node) else
                  Ex(ast.BinOp(x.node, ast.Mult(), y.node), x.type)
                  for x, y in zip(a.items(), b.items())])
