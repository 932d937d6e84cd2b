"""Expressions and calls for the ``lower`` pass: name resolution, typing, builtin overloads."""
from __future__ import annotations

import ast
import builtins as py

from .. import types as T
from ..errors import KernelNameError, KernelSyntaxError, KernelTypeError
from ..stdlib import registry
from ..stdlib.random import is_draw
from . import ir
from .exprs import NameGen
from .lower_calls import CallLowering
from .lower_random import RandomLowering
from .lower_struct import STRUCTISH, StructArr, StructLowering, StructRef, StructVal
from .lower_values import ValueLowering, is_transform_part
from .source import error


class SpecialForm:
    """A name such as ``wp.tid`` or ``wp.atomic_add`` that the lowering handles itself."""

    def __init__(self, name, doc=""):
        self.name = name
        self.__doc__ = doc

    def __repr__(self):
        return f"<weft special form {self.name}>"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"wp.{self.name}() can only be called inside a kernel or func")


ATOMICS = {"atomic_add": "add", "atomic_sub": "sub", "atomic_min": "min", "atomic_max": "max",
           "atomic_exch": "exch", "atomic_cas": "cas", "atomic_and": "and", "atomic_or": "or",
           "atomic_xor": "xor"}


class ExprLowerer(RandomLowering, StructLowering, ValueLowering, CallLowering):
    BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
              ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul",
              ast.BitAnd: "bit_and", ast.BitOr: "bit_or", ast.BitXor: "bit_xor",
              ast.LShift: "lshift", ast.RShift: "rshift"}
    CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
              ast.NotEq: "ne"}

    def __init__(self, src, kind, ctx):
        self.src = src
        self.kind = kind
        self.ctx = ctx                 # the Specializer shared by one compilation
        taken = {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name)}
        taken |= {a.arg for a in src.tree.args.args}
        self.names = NameGen(taken)
        self.versions = {}
        self.env = {}
        self.block = []
        self.params = []
        self.callees = []
        self.ret_type = None
        self.tid_dims = 0
        self.tid_vars = {}             # Var -> launch axis (None: flattened index)
        self.last_temp = None
        self.loop_names_defined_inside = set()
        self.loop_returned = None      # set by a loop left through ``return``
        fn = src.pyfunc
        self.globals = dict(fn.__globals__)
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.globals[name] = cell.cell_contents
                except ValueError:
                    pass

    # ------------------------------------------------------------------------------ helpers
    def loc(self, node):
        return ir.Loc(self.src.filename, getattr(node, "lineno", self.src.first_line),
                      getattr(node, "col_offset", 0) + self.src.col_offset)

    def version_name(self, name):
        while True:
            n = self.versions.get(name, -1) + 1
            self.versions[name] = n
            cand = name if n == 0 else f"{name}_{n}"
            if cand not in self.names.taken or n == 0:
                self.names.taken.add(cand)
                return cand

    def new_version(self, name, type_):
        return ir.Var(self.version_name(name), type_)

    def new_temp(self, type_, hint="t"):
        return ir.Var(self.names.fresh(hint), type_)

    def emit(self, expr, type_, node):
        v = self.new_temp(type_)
        self.block.append(ir.Assign(v, expr, self.loc(node)))
        self.last_temp = v
        return v

    def is_fresh_temp(self, v):
        if isinstance(v.type, T.ArrayType) and v.type.local and self.block and \
                isinstance(self.block[-1], ir.Assign) and self.block[-1].dst is v:
            return True  # name the buffer after the user's variable
        return (v is self.last_temp and self.block and isinstance(self.block[-1], ir.Assign)
                and self.block[-1].dst is v and not isinstance(v.type, T.ArrayType))

    def fail(self, node, msg, cls=KernelTypeError):
        return error(self.src, node, msg, cls)

    # ------------------------------------------------------------------------------ names
    def resolve_global(self, node):
        """The Python object a Name/Attribute chain denotes outside the kernel, or None."""
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return None
            if node.id in self.globals:
                return self.globals[node.id]
            return getattr(py, node.id, None)
        if isinstance(node, ast.Attribute):
            base = self.resolve_global(node.value)
            if base is None:
                return None
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.fail(node, f"'{ast.unparse(node.value)}' has no attribute "
                                f"'{node.attr}'", KernelNameError) from None
        return None

    def python_constant(self, value, node):
        """An operand for a Python value captured from the enclosing scope."""
        if isinstance(value, py.bool):
            return ir.Const(value, T.bool)
        if isinstance(value, int):
            return ir.Const(value, T.int32, literal=True)
        if isinstance(value, float):
            return ir.Const(value, T.float32, literal=True)
        if T.is_scalar(type(value)) or (hasattr(value, "dtype") and getattr(value, "shape", 1) == ()):
            st = T.as_scalar_type(value.dtype)
            return ir.Const(value.item(), st)
        if isinstance(value, T.Composite):
            return ir.Const(tuple(value.reshape(-1).tolist()), type(value))
        raise self.fail(node, f"'{ast.unparse(node)}' ({type(value).__name__}) cannot be used as "
                        "a value in a kernel", KernelTypeError)

    def annotation_type(self, node):
        value = self.resolve_global(node)
        if value is None:
            raise self.fail(node, f"unknown type '{ast.unparse(node)}'", KernelNameError)
        return self.ctx.as_arg_type(value, lambda msg: self.fail(node, msg))

    # ------------------------------------------------------------------------------ expressions
    def lower_expr(self, node, allow_void=False):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.fail(node, f"'{type(node).__name__}' expressions are not supported in "
                            "kernels", KernelSyntaxError)
        out = method(node)
        if out is None and not allow_void:
            raise self.fail(node, "this call returns no value", KernelTypeError)
        return out

    def expr_Constant(self, node):
        if isinstance(node.value, (py.bool, int, float)):
            return self.python_constant(node.value, node)
        raise self.fail(node, f"constants of type {type(node.value).__name__} are not supported "
                        "in kernels", KernelTypeError)

    def expr_Name(self, node):
        v = self.env.get(node.id)
        if isinstance(v, StructRef):
            return self.read_struct(node.id, v.type, node)
        if v is not None:
            return v
        if node.id in self.loop_names_defined_inside:
            raise self.fail(node, f"'{node.id}' is only defined inside a loop above; define it "
                            "before the loop to use it after", KernelNameError)
        if node.id not in self.globals and not hasattr(py, node.id):
            raise self.fail(node, f"name '{node.id}' is not defined", KernelNameError)
        return self.python_constant(self.resolve_global(node), node)

    def expr_Attribute(self, node):
        base_global = self.resolve_global(node.value)
        if base_global is None:  # attribute of a kernel value
            key = self.struct_key(node)
            if key is not None:  # s.x, s.inner.y, s.arr
                if T.is_struct(key[1]) or isinstance(key[1], T.ArrayType) and \
                        T.is_struct(key[1].dtype):
                    return self.read_struct(key[0], key[1], node)
                v = self.env.get(key[0])
                if v is None:
                    raise self.fail(node, f"'{ast.unparse(node)}' is not set", KernelNameError)
                return v
            elem = self.struct_element(node)
            if elem is not None:  # a[i].x: load that member only
                m, idx = elem
                if isinstance(m, StructArr):
                    return self.load_element(m, idx)
                return self.emit(ir.Load(m, idx), m.type.dtype, node)
            base = self.lower_expr(node.value)
            if isinstance(base, StructVal):
                return self.member(base, node.attr, node)
            if isinstance(base, StructArr) and node.attr == "shape":
                base = self.first_member_array(base)
            if isinstance(base.type, T.ArrayType) and node.attr == "shape":
                return self.emit(ir.Prim(registry.lookup("array_shape"), [base]),
                                 T.TupleType((T.int32,) * base.type.ndim), node)
            if is_transform_part(base.type, node.attr):
                return self.transform_part(base, node.attr, node)
            index = self.component_index(base.type, node.attr, node)
            return self.apply_builtin("extract", [base, ir.Const(index, T.int32)], node)
        return self.python_constant(self.resolve_global(node), node)

    def component_index(self, t, attr, node):
        names = {"x": 0, "y": 1, "z": 2, "w": 3}
        if T.is_composite(t) and not T.is_matrix(t) and attr in names and names[attr] < t._length_:
            return names[attr]
        raise self.fail(node, f"{T.type_name(t)} has no attribute '{attr}'", KernelTypeError)

    def expr_BinOp(self, node):
        name = self.BINOPS.get(type(node.op))
        a = self.lower_expr(node.left)
        b = self.lower_expr(node.right)
        return self.apply_builtin(name, [a, b], node)

    def expr_UnaryOp(self, node):
        x = self.lower_expr(node.operand)
        if isinstance(node.op, ast.Not):
            return self.apply_builtin("bool_not", [self.truth(x, node)], node)
        name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}[type(node.op)]
        if isinstance(x, ir.Const) and x.literal and name == "neg":
            return ir.Const(-x.value, x.type, literal=True)
        return self.apply_builtin(name, [x], node)

    def truth(self, x, node):
        """A bool operand for a condition (numbers compare against zero, as in Warp)."""
        if x.type is T.bool:
            return x
        if T.is_scalar(x.type):
            return self.apply_builtin("ne", [x, ir.Const(0, x.type)], node)
        raise self.fail(node, f"a value of type {T.type_name(x.type)} cannot be used as a "
                        "condition", KernelTypeError)

    def lower_condition(self, node):
        return self.truth(self.lower_expr(node), node)

    def expr_BoolOp(self, node):
        # Warp evaluates both sides of ``and``/``or``
        name = "bool_and" if isinstance(node.op, ast.And) else "bool_or"
        acc = self.truth(self.lower_expr(node.values[0]), node.values[0])
        for v in node.values[1:]:
            acc = self.apply_builtin(name, [acc, self.truth(self.lower_expr(v), v)], node)
        return acc

    def expr_Compare(self, node):
        left = self.lower_expr(node.left)
        acc = None
        for op, right_node in zip(node.ops, node.comparators):
            name = self.CMPOPS.get(type(op))
            if name is None:
                raise self.fail(node, f"comparison '{type(op).__name__}' is not supported",
                                KernelSyntaxError)
            right = self.lower_expr(right_node)
            c = self.apply_builtin(name, [left, right], node)
            acc = c if acc is None else self.apply_builtin("bool_and", [acc, c], node)
            left = right
        return acc

    def expr_IfExp(self, node):
        c = self.lower_condition(node.test)
        a = self.lower_expr(node.body)
        b = self.lower_expr(node.orelse)
        return self.apply_builtin("where", [c, a, b], node)

    def expr_Tuple(self, node):
        items = [self.lower_expr(e) for e in node.elts]
        for e, i in zip(node.elts, items):
            if isinstance(i, STRUCTISH):
                raise self.fail(e, "structs cannot be put in tuples; return or pass them alone")
        items = [ir.Const(i.value, i.type) if isinstance(i, ir.Const) else i for i in items]
        return self.emit(ir.Prim(registry.lookup("make_tuple"), items),
                         T.TupleType(tuple(i.type for i in items)), node)

    def lower_return_value(self, node):
        v = self.lower_expr(node)
        if isinstance(v, STRUCTISH):
            return self.pack_struct_return(v, node)
        if isinstance(v, ir.Const) and v.literal:
            v = ir.Const(v.value, v.type)
        return v

    # ------------------------------------------------------------------------------ indexing
    def is_array_expr(self, node):
        """Whether ``node`` denotes an array or a view of one (``a``, ``s.arr``, ``a[i]`` of a
        2-D ``a``), as opposed to an element (``a[i]`` of a 1-D ``a``, whose ``[0, 0]`` is a
        component)."""
        return self.array_expr_ndim(node) is not None

    def array_expr_ndim(self, node):
        if isinstance(node, ast.Name) and node.id in self.env:
            t = self.env[node.id].type
            return t.ndim if isinstance(t, T.ArrayType) else None
        if isinstance(node, ast.Attribute):
            key = self.struct_key(node)
            return key[1].ndim if key is not None and isinstance(key[1], T.ArrayType) else None
        if isinstance(node, ast.Subscript):
            inner = self.array_expr_ndim(node.value)
            n = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
            return inner - n if inner is not None and inner > n else None
        return None

    def lower_indices(self, sl):
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.fail(e, "slices are not supported in kernels", KernelSyntaxError)
            i = self.adapt_literal(self.lower_expr(e), T.int32)
            if not T.is_int(i.type):
                raise self.fail(e, f"indices must be integers, got {T.type_name(i.type)}")
            out.append(i)
        return out

    def lower_array_index(self, node):
        """``a[i, j]`` (maybe through views ``a[i][j]``) -> (array Var, [index operands])."""
        base = self.lower_expr(node.value)
        idx = self.lower_indices(node.slice)
        if len(idx) > base.type.ndim:
            raise self.fail(node, f"too many indices ({len(idx)}) for an array of "
                            f"{base.type.ndim} dimensions")
        return base, idx

    def expr_Subscript(self, node):
        if self.is_array_expr(node.value):
            arr, idx = self.lower_array_index(node)
            if isinstance(arr, StructArr):
                if len(idx) != arr.type.ndim:
                    raise self.fail(node, "views of arrays of structs are not supported; "
                                    "index every dimension")
                return self.load_element(arr, idx)
            if len(idx) == arr.type.ndim:
                return self.emit(ir.Load(arr, idx), arr.type.dtype, node)
            view_t = T.ArrayType(arr.type.dtype, arr.type.ndim - len(idx))
            return self.emit(ir.Load(arr, idx), view_t, node)
        base = self.lower_expr(node.value)
        idx = self.lower_indices(node.slice)
        if isinstance(base.type, T.TupleType):
            if len(idx) != 1 or not isinstance(idx[0], ir.Const):
                raise self.fail(node, "tuples can only be indexed with a constant")
            return self.apply_builtin("tuple_get", [base], node, attrs={"index": idx[0].value})
        return self.apply_builtin("extract", [base] + idx, node)

    # ------------------------------------------------------------------------------ typing
    def adapt_literal(self, x, want):
        """A literal number takes the scalar type ``want`` when of the same kind."""
        if not (isinstance(x, ir.Const) and x.literal):
            return x
        st = T.scalar_of(want) if (T.is_scalar(want) or T.is_composite(want)) else None
        if st is None or st is T.bool:
            return x
        if T.is_float(st) and (T.is_float(x.type) or T.is_int(x.type)):
            return ir.Const(float(x.value), st, literal=True)
        if T.is_int(st) and T.is_int(x.type):
            return ir.Const(int(x.value), st, literal=True)
        return x

    _FOLD = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
             "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
             "bool_and": lambda a, b: a and b, "bool_or": lambda a, b: a or b,
             "bool_not": lambda a: not a}

    def apply_builtin(self, name, args, node, attrs=None):
        if name in self._FOLD and all(isinstance(a, ir.Const) and T.is_scalar(a.type)
                                      for a in args):
            # constant conditions (len(v) == 3, wp.constant flags) fold, so that an ``if`` on
            # them keeps only the branch taken, as in Warp
            return ir.Const(bool(self._FOLD[name](*[a.value for a in args])), T.bool)
        b = registry.lookup(name)
        attrs = attrs or {}
        types = [a.type for a in args]
        rtype = b.resolve(types, attrs)
        if rtype is None and any(isinstance(a, ir.Const) and a.literal for a in args):
            anchor = next((a.type for a in args if not (isinstance(a, ir.Const) and a.literal)),
                          None)
            if anchor is not None:
                args = [self.adapt_literal(a, anchor) for a in args]
                rtype = b.resolve([a.type for a in args], attrs)
        if rtype is None:
            given = ", ".join(T.type_name(t) for t in types)
            sigs = "\n".join("    " + s for s in b.sigs)
            label = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
                     "floordiv": "//", "pow": "**"}.get(name, name)
            raise self.fail(node, f"no signature of '{label}' accepts ({given}); "
                            f"signatures:\n{sigs}", KernelTypeError)
        args = [ir.Const(a.value, a.type) if isinstance(a, ir.Const) and a.literal else a
                for a in args]
        return self.emit(ir.Prim(b, args, dict(attrs)), rtype, node)

    # ------------------------------------------------------------------------------ calls
    def is_tid_call(self, node):
        return isinstance(node, ast.Call) and getattr(self.resolve_global(node.func), "name",
                                                      None) == "tid" and isinstance(
            self.resolve_global(node.func), SpecialForm)

    def assign_tid(self, target, call):
        if self.kind != "kernel":
            raise self.fail(call, "wp.tid() can only be used in kernels", KernelSyntaxError)
        if isinstance(target, ast.Name):
            v = self.emit(ir.Prim(registry.lookup("tid"), [], {"axis": None}), T.int32, call)
            self.tid_dims = max(self.tid_dims, 1)
            self.tid_vars[v] = None
            self.bind(target.id, v, target)
            return
        if isinstance(target, ast.Tuple) and 1 <= len(target.elts) <= 4:
            self.tid_dims = len(target.elts)
            for axis, t in enumerate(target.elts):
                v = self.emit(ir.Prim(registry.lookup("tid"), [], {"axis": axis}), T.int32, call)
                self.tid_vars[v] = axis
                self.assign(t, v, call)
            return
        raise self.fail(target, "wp.tid() unpacks into 1 to 4 names", KernelSyntaxError)

    def expr_Call(self, node):
        callee = self.resolve_global(node.func)
        if callee is None:
            raise self.fail(node.func, f"'{ast.unparse(node.func)}' is not callable in kernels",
                            KernelTypeError)
        if isinstance(callee, SpecialForm):
            return self.call_special(callee, node)
        if isinstance(callee, registry.Builtin):
            args = [self.lower_expr(a) for a in node.args]
            attrs = self.call_keywords(node, callee)
            return self.apply_builtin(callee.name, args, node, attrs)
        if getattr(callee, "_weft_kind", None) == "func":
            if callee.__module__ == "weft.stdlib.quat" and callee.__name__ in (
                    "quat_identity", "transform_identity"):
                return self.identity_of(callee.__name__, node)
            return self.call_func(callee, node)
        if getattr(callee, "_weft_kind", None) == "kernel":
            raise self.fail(node, "kernels cannot be called from kernels; use a wp.func",
                            KernelTypeError)
        py_map = {py.float: T.float32, py.int: T.int32, py.bool: T.bool}
        if callee in py_map or T.is_scalar(callee):
            t = py_map.get(callee, callee)
            if len(node.args) != 1:
                raise self.fail(node, f"{T.type_name(t)}() takes one argument")
            x = self.lower_expr(node.args[0])
            if isinstance(x, ir.Const) and x.literal:
                return ir.Const(x.value, t)
            return self.apply_builtin("cast", [x], node, {"type": t})
        if T.is_struct(callee):
            return self.construct_struct(callee, node)
        if T.is_composite(callee):
            args = [self.lower_expr(a) for a in node.args]
            args = [self.adapt_literal(a, callee) for a in args]
            return self.apply_builtin("construct", args, node, {"type": callee})
        if callee in (T.vector, T.matrix, T.quaternion, T.transformation):
            return self.generic_constructor(callee, node)
        named = {py.abs: "abs", py.min: "min", py.max: "max", py.round: "round", py.pow: "pow"}
        if callee in named:
            args = [self.lower_expr(a) for a in node.args]
            return self.apply_builtin(named[callee], args, node)
        if callee is py.len:
            x = self.lower_expr(node.args[0])
            if isinstance(x.type, T.ArrayType):
                shape = self.emit(ir.Prim(registry.lookup("array_shape"), [x]),
                                  T.TupleType((T.int32,) * x.type.ndim), node)
                return self.apply_builtin("tuple_get", [shape], node, attrs={"index": 0})
            if T.is_composite(x.type):
                return ir.Const(x.type._shape_[0], T.int32)
            raise self.fail(node, f"len() of {T.type_name(x.type)} is not supported")
        raise self.fail(node.func, f"'{ast.unparse(node.func)}' ({type(callee).__name__}) cannot "
                        "be called in kernels", KernelTypeError)

    def call_keywords(self, node, b):
        attrs = {}
        for kw in node.keywords:
            if b.attrs_rule is None or kw.arg not in b.attrs_rule:
                raise self.fail(kw, f"{b.name}() takes no keyword argument '{kw.arg}'")
            value = self.resolve_global(kw.value)
            if value is None and isinstance(kw.value, ast.Constant):
                value = kw.value.value
            attrs[kw.arg] = value
        if b.name == "identity":
            n = attrs.get("n") if "n" in attrs else (node.args[0].value if node.args and
                                                     isinstance(node.args[0], ast.Constant) else None)
            dtype = T.as_scalar_type(attrs.get("dtype", T.float32))
            attrs = {"type": T.matrix((n, n), dtype)}
        return attrs

    def call_special(self, sf, node):
        if sf.name in ("transform_set_translation", "transform_set_rotation"):
            return self.transform_set(sf.name, node)
        if is_draw(sf.name):
            return self.random_draw(sf, node)
        if sf.name == "alloc_local":
            return self.alloc_local(node)
        if sf.name == "tid":
            raise self.fail(node, "assign wp.tid() directly to names: tid = wp.tid() or "
                            "i, j = wp.tid()", KernelSyntaxError)
        if sf.name in ATOMICS:
            if len(node.args) < 3:
                raise self.fail(node, f"wp.{sf.name}(array, index..., value) needs an array, "
                                "indices and a value")
            arr = self.lower_expr(node.args[0])
            if not isinstance(arr.type, T.ArrayType):
                raise self.fail(node.args[0], f"wp.{sf.name} needs an array as first argument")
            cas = sf.name == "atomic_cas"
            idx_nodes = node.args[1:-2] if cas else node.args[1:-1]
            idx = [self.adapt_literal(self.lower_expr(a), T.int32) for a in idx_nodes]
            if len(idx) != arr.type.ndim or not all(T.is_int(i.type) for i in idx):
                raise self.fail(node, f"wp.{sf.name} needs {arr.type.ndim} integer indices")
            if cas and not T.is_int(arr.type.dtype):
                raise self.fail(node, "wp.atomic_cas(array, index..., compare, value) needs an "
                                f"array of integers, got one of {T.type_name(arr.type.dtype)}")
            if ATOMICS[sf.name] in ("and", "or", "xor") and arr.type.dtype not in (
                    T.int32, T.uint32, T.int64, T.uint64):
                raise self.fail(node, f"wp.{sf.name} needs an array of int32, uint32, int64 or "
                                f"uint64 (as on CUDA), got one of {T.type_name(arr.type.dtype)}")
            value = self.lower_expr(node.args[-1])
            value = self.coerce_store(arr, value, node.args[-1])
            compare = self.coerce_store(arr, self.lower_expr(node.args[-2]), node.args[-2]) \
                if cas else None
            dst = self.new_temp(arr.type.dtype)
            self.block.append(ir.AtomicRMW(ATOMICS[sf.name], arr, idx, value, dst, self.loc(node),
                                           compare))
            return dst
        raise self.fail(node, f"wp.{sf.name} is not supported here", KernelSyntaxError)

    def alloc_local(self, node):
        """``wp.alloc_local(dtype, size, value=0)``: a per-thread buffer (Dr.Jit's alloc_local)."""
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if len(args) < 2 and "size" not in kw:
            raise self.fail(node, "wp.alloc_local(dtype, size, value=0) needs a dtype and a size")
        dtype_node = args[0] if args else kw.get("dtype")
        size_node = args[1] if len(args) > 1 else kw.get("size")
        try:
            dtype = T.as_value_type(self.resolve_global(dtype_node))
        except TypeError:
            raise self.fail(dtype_node, "wp.alloc_local needs a value type") from None
        size = self.resolve_global(size_node) if not isinstance(size_node, ast.Constant) \
            else size_node.value
        if not isinstance(size, int) or size <= 0:
            raise self.fail(size_node, "the size of wp.alloc_local must be a positive integer "
                            "constant (a literal, or a global or wp.constant)")
        value_node = args[2] if len(args) > 2 else kw.get("value")
        value = 0 if value_node is None else (
            value_node.value if isinstance(value_node, ast.Constant) else
            self.resolve_global(value_node))
        if isinstance(value_node, ast.UnaryOp) and isinstance(value_node.operand, ast.Constant):
            value = -value_node.operand.value
        if not isinstance(value, (int, float)):
            raise self.fail(node, "the value of wp.alloc_local must be a number constant")
        t = T.ArrayType(dtype, 1, local=True, size=size)
        v = self.new_temp(t, "local")
        self.block.append(ir.Assign(v, ir.Prim(registry.lookup("alloc_local"), [],
                                               {"value": value}), self.loc(node)))
        return v

    def first_member_array(self, arr):
        m = next(iter(arr.members.values()))
        return self.first_member_array(m) if isinstance(m, StructArr) else m
