"""Structs in the ``lower`` pass: every struct is split into its members.

No struct value ever reaches the IR. A struct variable ``s`` is an environment marker
(:class:`StructRef`) and one ordinary variable per member, ``s__x``, ``s__v``, ``s__arr``
(nested structs recurse: ``s__inner__y``). An array of structs is one strided array per member
(``a__x``, ``a__v``), which the runtime passes as views into the structured array, so
``a[i].x`` is a load from ``a__x``. Struct parameters of kernels and funcs become one parameter
per member; a func returning a struct returns the tuple of its members.

So loops carry, branches merge and the adjoint and tangent passes differentiate struct members
exactly as they do any variable: there is nothing struct-specific after this pass.

During lowering an expression of struct type evaluates to a :class:`StructVal` (members ->
operands, loaded lazily for ``a[i]`` so that ``a[i].x`` loads one member only) and one of
array-of-struct type to a :class:`StructArr` (members -> member arrays).
"""
from __future__ import annotations

import ast

from .. import types as T
from ..errors import KernelNameError
from ..stdlib import registry
from . import ir


def is_struct_array(t):
    return isinstance(t, T.ArrayType) and T.is_struct(t.dtype)


def flat_leaves(t, prefix):
    """``[(name, type)]`` of the ordinary values a value of type ``t`` named ``prefix`` splits
    into (itself when it is not a struct or an array of structs)."""
    if T.is_struct(t):
        out = []
        for f, ft in T.struct_fields(t).items():
            out.extend(flat_leaves(ft, f"{prefix}__{f}"))
        return out
    if is_struct_array(t):
        out = []
        for f, ft in T.struct_fields(t.dtype).items():
            if isinstance(ft, T.ArrayType):
                raise TypeError(f"struct {t.dtype.__name__} has an array member '{f}' and cannot "
                                "be an array dtype")
            out.extend(flat_leaves(T.ArrayType(ft, t.ndim), f"{prefix}__{f}"))
        return out
    return [(prefix, t)]


class StructRef:
    """Environment marker of a struct (or array-of-struct) variable; its members live in the
    environment under ``key__member``."""

    def __init__(self, type_, key):
        self.type = type_
        self.key = key


class _Lazy:
    """A member of ``a[i]`` not loaded yet."""

    def __init__(self, arr, idx):
        self.arr, self.idx = arr, idx


class StructVal:
    """A struct value while lowering: member name -> operand (None: an unset array member)."""

    def __init__(self, type_, members):
        self.type = type_
        self.members = members


class StructArr:
    """An array of structs while lowering: member name -> member array (or nested StructArr)."""

    def __init__(self, type_, members):
        self.type = type_
        self.members = members


STRUCTISH = (StructVal, StructArr)


class StructLowering:
    """Mixin of the expression lowerer (see the module docstring)."""

    # ------------------------------------------------------------------------- environment
    def struct_marker(self, name, t):
        markers = self.__dict__.setdefault("_struct_markers", {})
        m = markers.get((name, t))
        if m is None:
            m = markers[(name, t)] = StructRef(t, name)
        return m

    def bind_struct_param(self, name, t):
        """A struct parameter: one parameter Var per member, and the marker."""
        for key, lt in flat_leaves(t, name):
            v = ir.Var(key, lt)
            self.versions[key] = 0
            self.names.taken.add(key)
            self.env[key] = v
            self.params.append(v)
        self.env[name] = self.struct_marker(name, t)

    def read_struct(self, key, t, node):
        """The StructVal/StructArr of the variable (or member path) ``key`` of type ``t``."""
        members = {}
        fields = T.struct_fields(t.dtype if is_struct_array(t) else t)
        for f, ft in fields.items():
            sub = f"{key}__{f}"
            if is_struct_array(t):
                ft = T.ArrayType(ft, t.ndim)
            if T.is_struct(ft) or is_struct_array(ft):
                members[f] = self.read_struct(sub, ft, node)
            else:
                members[f] = self.env.get(sub)
                if members[f] is None and not isinstance(ft, T.ArrayType):
                    raise self.fail(node, f"'{key.replace('__', '.')}.{f}' is not defined on "
                                    "every path to here", KernelNameError)
        return (StructArr if is_struct_array(t) else StructVal)(t, members)

    def bind_struct(self, name, value, node):
        """``name = <struct value>``: bind every member."""
        old = self.env.get(name)
        if old is not None and old.type is not value.type and old.type != value.type:
            raise self.fail(node, f"cannot assign a value of type {T.type_name(value.type)} to "
                            f"'{name}' of type {T.type_name(old.type)}")
        self.env[name] = self.struct_marker(name, value.type)
        self.bind_members(name, value, node)

    def bind_members(self, key, value, node):
        for f, m in value.members.items():
            sub = f"{key}__{f}"
            if isinstance(m, STRUCTISH):
                self.bind_members(sub, m, node)
            elif m is None:
                self.env.pop(sub, None)
            elif not isinstance(m, _Lazy) and isinstance(m.type, T.ArrayType):
                self.env[sub] = m  # arrays are aliased, never copied
            else:
                self.bind(sub, self.force(m, node), node)

    def force(self, m, node):
        if isinstance(m, _Lazy):
            return self.emit(ir.Load(m.arr, m.idx), m.arr.type.dtype, node)
        return m

    def struct_leaves(self, value, node, what):
        """The member operands of a struct value, in :func:`flat_leaves` order."""
        out = []
        for f, m in value.members.items():
            if isinstance(m, STRUCTISH):
                out.extend(self.struct_leaves(m, node, what))
            elif m is None:
                raise self.fail(node, f"array member '{f}' of this {T.type_name(value.type)} is "
                                f"not set, so it cannot be {what}")
            else:
                out.append(self.force(m, node))
        return out

    def expand_struct_names(self, names):
        """Loop-carried names: a struct variable stands for its (non-array) members."""
        out = []
        for n in names:
            v = self.env.get(n)
            if isinstance(v, StructRef):
                if is_struct_array(v.type):
                    continue
                out.extend(k for k, t in flat_leaves(v.type, n)
                           if not isinstance(t, T.ArrayType) and k in self.env)
            else:
                out.append(n)
        return out

    # ------------------------------------------------------------------------- expressions
    def member(self, value, attr, node):
        fields = T.struct_fields(value.type.dtype if is_struct_array(value.type) else value.type)
        if attr not in fields:
            raise self.fail(node, f"struct {T.type_name(value.type)} has no member '{attr}'",
                            KernelNameError)
        m = value.members[attr]
        if m is None:
            raise self.fail(node, f"array member '{attr}' of this {T.type_name(value.type)} is "
                            "not set")
        return self.force(m, node)

    def struct_key(self, node):
        """``(key, type)`` for a Name/Attribute chain naming a struct variable or one of its
        members (``s``, ``s.inner``, ``s.inner.x``), else None."""
        if isinstance(node, ast.Name):
            v = self.env.get(node.id)
            return (node.id, v.type) if isinstance(v, StructRef) else None
        if isinstance(node, ast.Attribute):
            base = self.struct_key(node.value)
            if base is None or not T.is_struct(base[1]):
                return None
            fields = T.struct_fields(base[1])
            if node.attr not in fields:
                raise self.fail(node, f"struct {T.type_name(base[1])} has no member "
                                f"'{node.attr}'", KernelNameError)
            return f"{base[0]}__{node.attr}", fields[node.attr]
        return None

    def struct_element(self, node):
        """``(member array or StructArr, indices)`` for ``a[i]``, ``a[i].inner`` ... of an
        array of structs, else None."""
        if isinstance(node, ast.Subscript) and self.is_array_expr(node.value):
            arr, idx = self.lower_array_index(node)
            if isinstance(arr, StructArr):
                if len(idx) != arr.type.ndim:
                    raise self.fail(node, "views of arrays of structs are not supported; index "
                                    "every dimension")
                return arr, idx
            return None
        if isinstance(node, ast.Attribute):
            base = self.struct_element(node.value)
            if base is None:
                return None
            arr, idx = base
            if not isinstance(arr, StructArr):
                raise self.fail(node, f"{T.type_name(arr.type.dtype)} has no attribute "
                                f"'{node.attr}'")
            return self.member(arr, node.attr, node), idx
        return None

    def load_element(self, arr, idx):
        """``a[i]`` of an array of structs: a StructVal whose members load on first use."""
        members = {f: (self.load_element(m, idx) if isinstance(m, StructArr) else _Lazy(m, idx))
                   for f, m in arr.members.items()}
        return StructVal(arr.type.dtype, members)

    def store_element(self, arr, idx, value, node):
        """``a[i] = s`` or ``a[i].inner = s``: store every member."""
        if not isinstance(value, StructVal) or value.type is not arr.type.dtype:
            raise self.fail(node, f"cannot store a value of type {T.type_name(value.type)} into "
                            f"an array of {T.type_name(arr.type.dtype)}")
        for f, m in arr.members.items():
            v = value.members[f]
            if isinstance(m, StructArr):
                self.store_element(m, idx, v, node)
            else:
                self.block.append(ir.Store(m, idx, self.coerce_store(m, self.force(v, node),
                                                                     node), self.loc(node)))

    def construct_struct(self, t, node):
        """``S()`` / ``S(x, v=...)`` in a kernel: members zero unless given."""
        fields = T.struct_fields(t)
        args = [self.lower_expr(a) for a in node.args]
        if len(args) > len(fields):
            raise self.fail(node, f"{t.__name__}() takes at most {len(fields)} arguments")
        given = dict(zip(fields, args))
        for kw in node.keywords:
            if kw.arg not in fields:
                raise self.fail(kw, f"struct {t.__name__} has no member '{kw.arg}'",
                                KernelNameError)
            given[kw.arg] = self.lower_expr(kw.value)
        members = {}
        for f, ft in fields.items():
            if f in given:
                members[f] = self.check_member(t, f, ft, given[f], node)
            else:
                members[f] = self.zero_member(ft, node)
        return StructVal(t, members)

    def zero_member(self, ft, node):
        if T.is_struct(ft):
            return StructVal(ft, {f: self.zero_member(t, node)
                                  for f, t in T.struct_fields(ft).items()})
        if isinstance(ft, T.ArrayType):
            return None
        if T.is_scalar(ft):
            return ir.Const(0, ft)
        return self.apply_builtin("construct", [], node, {"type": ft})

    def check_member(self, t, f, ft, value, node):
        value = self.adapt_literal(value, ft) if not isinstance(value, STRUCTISH) else value
        if isinstance(value, ir.Const) and value.literal:
            value = ir.Const(value.value, value.type)
        if value.type is not ft and value.type != ft:
            raise self.fail(node, f"member '{f}' of {t.__name__} has type {T.type_name(ft)}, "
                            f"got {T.type_name(value.type)}")
        return value

    def assign_struct_attr(self, target, value, stmt):
        """``s.x = v``, ``s.inner.x = v``, ``a[i].x = v``; True when ``target`` is one."""
        key = self.struct_key(target.value)
        if key is not None:
            if not T.is_struct(key[1]):
                return False
            fields = T.struct_fields(key[1])
            if target.attr not in fields:
                raise self.fail(target, f"struct {T.type_name(key[1])} has no member "
                                f"'{target.attr}'", KernelNameError)
            ft = fields[target.attr]
            value = self.check_member(key[1], target.attr, ft, value, stmt)
            sub = f"{key[0]}__{target.attr}"
            if isinstance(value, STRUCTISH):
                self.bind_members(sub, value, stmt)
            elif isinstance(ft, T.ArrayType):
                self.env[sub] = value
            else:
                self.bind(sub, value, stmt)
            return True
        elem = self.struct_element(target)
        if elem is None:
            return False
        arr, idx = elem
        if isinstance(arr, StructArr):
            self.store_element(arr, idx, value, stmt)
        else:
            value = self.coerce_store(arr, value, stmt)
            self.block.append(ir.Store(arr, idx, value, self.loc(stmt)))
        return True

    # ------------------------------------------------------------------------- funcs
    def pack_struct_return(self, value, node):
        """A func returning a struct returns the tuple of its members."""
        if isinstance(value, StructArr):
            raise self.fail(node, "funcs cannot return arrays of structs")
        leaves = self.struct_leaves(value, node, "returned")
        if any(isinstance(v.type, T.ArrayType) for v in leaves):
            raise self.fail(node, "funcs cannot return structs with array members yet; pass "
                            "the struct in and read its arrays there")
        self.ret_struct = value.type
        leaves = [ir.Const(v.value, v.type) if isinstance(v, ir.Const) else v for v in leaves]
        return self.emit(ir.Prim(registry.lookup("make_tuple"), leaves),
                         T.TupleType(tuple(v.type for v in leaves)), node)

    def unpack_struct_return(self, t, packed, node):
        counter = iter(range(len(packed.type.types)))

        def build(tt):
            members = {}
            for f, ft in T.struct_fields(tt).items():
                if T.is_struct(ft):
                    members[f] = build(ft)
                else:
                    members[f] = self.apply_builtin("tuple_get", [packed], node,
                                                    attrs={"index": next(counter)})
            return StructVal(tt, members)
        return build(t)

    def flatten_call_args(self, args, node):
        out = []
        for a in args:
            if isinstance(a, STRUCTISH):
                out.extend(self.struct_leaves(a, node, "passed to a func"))
            else:
                out.append(a)
        return out

