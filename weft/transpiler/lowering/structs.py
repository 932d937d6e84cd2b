"""Structs in the lowering: every struct is split into its members.

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

from ...core import types as T
from ...core.errors import KernelNameError, KernelTypeError
from ...stdlib import registry
from ...stdlib import ir
from ..abi import flat_leaves, is_struct_array
from .literals import typed


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


class TupleVal:
    """A tuple holding a struct while lowering (``geom1, geom2``, what a func returning
    ``Tuple[Geom, Geom]`` gives): its items, each an operand, a StructVal or a TupleVal. A tuple
    of plain values is an ordinary IR value instead (``make_tuple``)."""

    def __init__(self, items):
        self.items = list(items)
        self.type = T.TupleType(tuple(i.type for i in self.items))


class TupleRef:
    """Environment marker of a variable holding a :class:`TupleVal`; its items live in the
    environment under ``key__0``, ``key__1``, ... (a struct item as a struct variable)."""

    def __init__(self, n, key):
        self.n, self.key = n, key
        self.type = ("tuple", n)


STRUCTISH = (StructVal, StructArr)


# ------------------------------------------------------------------------- environment
def struct_marker(ctx, name, t):
    m = ctx.struct_markers.get((name, t))
    if m is None:
        m = ctx.struct_markers[(name, t)] = StructRef(t, name)
    return m

def bind_tuple(ctx, name, value, node):
    """``name = <tuple holding a struct>``: every item under ``name__k``."""
    old = ctx.env.get(name)
    if old is not None and not (isinstance(old, TupleRef) and old.n == len(value.items)):
        raise ctx.fail(node, f"cannot assign a tuple of {len(value.items)} values to "
                       f"'{name}', which holds another kind of value", KernelTypeError)
    key = ("tuple", name, len(value.items))
    m = ctx.struct_markers.get(key)
    if m is None:
        m = ctx.struct_markers[key] = TupleRef(len(value.items), name)
    ctx.env[name] = m
    for k, item in enumerate(value.items):
        sub = f"{name}__{k}"
        if isinstance(item, StructVal):
            bind_struct(ctx, sub, item, node)
        elif isinstance(item, TupleVal):
            bind_tuple(ctx, sub, item, node)
        elif isinstance(item, StructArr):
            raise ctx.fail(node, "arrays of structs cannot be put in tuples")
        else:
            ctx.bind(sub, item, node)

def read_tuple(ctx, key, ref, node):
    """The TupleVal of tuple variable ``key``."""
    items = []
    for k in range(ref.n):
        sub = f"{key}__{k}"
        v = ctx.env.get(sub)
        if isinstance(v, StructRef):
            items.append(read_struct(ctx, sub, v.type, node))
        elif isinstance(v, TupleRef):
            items.append(read_tuple(ctx, sub, v, node))
        elif v is None:
            raise ctx.fail(node, f"'{key}' is not defined on every path to here",
                           KernelNameError)
        else:
            items.append(v)
    return TupleVal(items)

def bind_struct_param(ctx, name, t):
    """A struct parameter: one parameter Var per member, and the marker."""
    for key, lt in flat_leaves(t, name):
        v = ir.Var(key, lt)
        ctx.versions[key] = 0
        ctx.names.taken.add(key)
        ctx.env[key] = v
        ctx.params.append(v)
    ctx.env[name] = struct_marker(ctx, name, t)

def read_struct(ctx, key, t, node):
    """The StructVal/StructArr of the variable (or member path) ``key`` of type ``t``."""
    members = {}
    fields = T.struct_fields(t.dtype if is_struct_array(t) else t)
    shared = (t.dtype if is_struct_array(t) else t)._wp_struct_.shared
    for f, ft in fields.items():
        sub = f"{key}__{f}"
        if is_struct_array(t) and f not in shared:
            ft = T.ArrayType(ft, t.ndim)
        if T.is_struct(ft) or is_struct_array(ft):
            members[f] = read_struct(ctx, sub, ft, node)
        else:
            members[f] = ctx.env.get(sub)
            if members[f] is None and not isinstance(ft, T.ArrayType):
                raise ctx.fail(node, f"'{key.replace('__', '.')}.{f}' is not defined on "
                                "every path to here", KernelNameError)
    return (StructArr if is_struct_array(t) else StructVal)(t, members)

def bind_struct(ctx, name, value, node):
    """``name = <struct value>``: bind every member."""
    old = ctx.env.get(name)
    if old is not None and old.type is not value.type and old.type != value.type:
        raise ctx.fail(node, f"cannot assign a value of type {T.type_name(value.type)} to "
                        f"'{name}' of type {T.type_name(old.type)}")
    ctx.env[name] = struct_marker(ctx, name, value.type)
    bind_members(ctx, name, value, node)

def bind_members(ctx, key, value, node):
    for f, m in value.members.items():
        sub = f"{key}__{f}"
        if isinstance(m, STRUCTISH):
            bind_members(ctx, sub, m, node)
        elif m is None:
            ctx.env.pop(sub, None)
        elif not isinstance(m, _Lazy) and isinstance(m.type, T.ArrayType):
            ctx.env[sub] = m  # arrays are aliased, never copied
        else:
            ctx.bind(sub, force(ctx, m, node), node)

def force(ctx, m, node):
    if isinstance(m, _Lazy):
        return ctx.emit(ir.Load(m.arr, m.idx), m.arr.type.dtype, node)
    return m

def struct_leaves(ctx, value, node, what):
    """The member operands of a struct value, in :func:`flat_leaves` order. An array member
    never set is Warp's null array (an empty array: a func may be passed it, and read it only
    where it tests first, as Warp)."""
    out = []
    fields = T.struct_fields(value.type.dtype if is_struct_array(value.type) else value.type)
    for f, m in value.members.items():
        if isinstance(m, STRUCTISH):
            out.extend(struct_leaves(ctx, m, node, what))
        elif m is None:
            ft = fields[f]
            if not isinstance(ft, T.ArrayType) or T.is_struct(ft.dtype) or \
                    getattr(ft, "local", False):
                raise ctx.fail(node, f"array member '{f}' of this {T.type_name(value.type)} "
                               f"is not set, so it cannot be {what}")
            out.append(ctx.emit(ir.Prim(registry.lookup("null_array"), [], {"type": ft}),
                                ft, node))
        else:
            out.append(force(ctx, m, node))
    return out

def expand_struct_names(ctx, names):
    """Loop-carried names: a struct variable stands for its (non-array) members."""
    out = []
    for n in names:
        v = ctx.env.get(n)
        if isinstance(v, StructRef):
            if is_struct_array(v.type):
                continue
            out.extend(k for k, t in flat_leaves(v.type, n)
                       if not isinstance(t, T.ArrayType) and k in ctx.env)
        elif isinstance(v, TupleRef):  # a tuple holding structs: its items
            out.extend(expand_struct_names(ctx, [f"{n}__{k}" for k in range(v.n)]))
        else:
            out.append(n)
    return out

# ------------------------------------------------------------------------- expressions
def member(ctx, value, attr, node):
    fields = T.struct_fields(value.type.dtype if is_struct_array(value.type) else value.type)
    if attr not in fields:
        st = value.type.dtype if is_struct_array(value.type) else value.type
        raise ctx.fail(node, no_member(st, node, attr), KernelNameError)
    m = value.members[attr]
    if m is None:
        raise ctx.fail(node, f"array member '{attr}' of this {T.type_name(value.type)} is "
                        "not set")
    return force(ctx, m, node)

def no_member(st, node, attr=None):
    """weft's message for a missing member, then Warp's (``s.z``: ```z` is not an attribute of
    's' (module.State)``)."""
    attr = attr if attr is not None else node.attr
    where = ast.unparse(node.value) if isinstance(node, ast.Attribute) else "the struct"
    return (f"struct {T.type_name(st)} has no member '{attr}': `{attr}` is not an attribute "
            f"of '{where}' ({getattr(st, '__module__', '')}.{getattr(st, '__qualname__', st)})")


def struct_key(ctx, node):
    """``(key, type)`` for a Name/Attribute chain naming a struct variable or one of its
    members (``s``, ``s.inner``, ``s.inner.x``), else None."""
    if isinstance(node, ast.Name):
        v = ctx.env.get(node.id)
        return (node.id, v.type) if isinstance(v, StructRef) else None
    if isinstance(node, ast.Attribute):
        base = struct_key(ctx, node.value)
        if base is None or not T.is_struct(base[1]):
            return None
        fields = T.struct_fields(base[1])
        if node.attr not in fields:
            raise ctx.fail(node, no_member(base[1], node), KernelNameError)
        return f"{base[0]}__{node.attr}", fields[node.attr]
    return None

def struct_element(ctx, node):
    """``(member array or StructArr, indices)`` for ``a[i]``, ``a[i].inner`` ... of an
    array of structs, else None."""
    if isinstance(node, ast.Subscript) and ctx.is_array_expr(node.value):
        arr, idx = ctx.array_index(node)
        if isinstance(arr, StructArr):
            if len(idx) != arr.type.ndim:
                raise ctx.fail(node, "views of arrays of structs are not supported; index "
                                "every dimension")
            return arr, idx
        return None
    if isinstance(node, ast.Attribute):
        base = struct_element(ctx, node.value)
        if base is None:
            return None
        arr, idx = base
        if not isinstance(arr, StructArr):  # a[i].v.y: a component of a member's value
            return None
        return member(ctx, arr, node.attr, node), idx
    return None

def load_element(ctx, arr, idx):
    """``a[i]`` of an array of structs: a StructVal whose members load on first use."""
    shared = arr.type.dtype._wp_struct_.shared  # one array for every element
    members = {f: (load_element(ctx, m, idx) if isinstance(m, StructArr) else
                   m if f in shared else _Lazy(m, idx))
               for f, m in arr.members.items()}
    return StructVal(arr.type.dtype, members)

def store_element(ctx, arr, idx, value, node):
    """``a[i] = s`` or ``a[i].inner = s``: store every member."""
    if not isinstance(value, StructVal) or value.type is not arr.type.dtype:
        raise ctx.fail(node, f"cannot store a value of type {T.type_name(value.type)} into "
                        f"an array of {T.type_name(arr.type.dtype)}")
    for f, m in arr.members.items():
        v = value.members[f]
        if isinstance(m, StructArr):
            store_element(ctx, m, idx, v, node)
        else:
            ctx.block.append(ir.Store(m, idx, ctx.store_coerced(m, force(ctx, v, node),
                                                                 node), ctx.loc(node)))

def construct_struct(ctx, t, node):
    """``S()`` / ``S(x, v=...)`` in a kernel: members zero unless given."""
    fields = T.struct_fields(t)
    args = [ctx.expr(a) for a in node.args]
    if len(args) > len(fields):
        raise ctx.fail(node, f"{t.__name__}() takes at most {len(fields)} arguments")
    given = dict(zip(fields, args))
    for kw in node.keywords:
        if kw.arg not in fields:
            raise ctx.fail(kw, f"struct {t.__name__} has no member '{kw.arg}'",
                            KernelNameError)
        given[kw.arg] = ctx.expr(kw.value)
    members = {}
    for f, ft in fields.items():
        if f in given:
            members[f] = check_member(ctx, t, f, ft, given[f], node)
        else:
            members[f] = zero_member(ctx, ft, node)
    return StructVal(t, members)

def zero_member(ctx, ft, node):
    if T.is_struct(ft):
        return StructVal(ft, {f: zero_member(ctx, t, node)
                              for f, t in T.struct_fields(ft).items()})
    if isinstance(ft, T.ArrayType):
        return None
    if T.is_scalar(ft):
        return ir.Const(0, ft)
    return ctx.apply("construct", [], node, {"type": ft})

def check_member(ctx, t, f, ft, value, node):
    value = ctx.adapt_literal(value, ft) if not isinstance(value, STRUCTISH) else value
    if isinstance(value, ir.Const) and value.literal:
        value = ir.Const(value.value, value.type)
    if value.type is not ft and value.type != ft:
        raise ctx.fail(node, f"member '{f}' of {t.__name__} has type {T.type_name(ft)}, "
                        f"got {T.type_name(value.type)}")
    return value

def assign_struct_attr(ctx, target, value, stmt):
    """``s.x = v``, ``s.inner.x = v``, ``a[i].x = v``; True when ``target`` is one."""
    key = struct_key(ctx, target.value)
    if key is not None:
        if not T.is_struct(key[1]):
            return False
        fields = T.struct_fields(key[1])
        if target.attr not in fields:
            raise ctx.fail(target, f"struct {T.type_name(key[1])} has no member "
                            f"'{target.attr}'", KernelNameError)
        ft = fields[target.attr]
        value = check_member(ctx, key[1], target.attr, ft, value, stmt)
        sub = f"{key[0]}__{target.attr}"
        if isinstance(value, STRUCTISH):
            bind_members(ctx, sub, value, stmt)
        elif isinstance(ft, T.ArrayType):
            ctx.env[sub] = value
        else:
            ctx.bind(sub, value, stmt)
        return True
    elem = struct_element(ctx, target)
    if elem is None:
        return False
    arr, idx = elem
    if isinstance(arr, StructArr):
        store_element(ctx, arr, idx, value, stmt)
    else:
        value = ctx.store_coerced(arr, value, stmt)
        ctx.block.append(ir.Store(arr, idx, value, ctx.loc(stmt)))
    return True

# ------------------------------------------------------------------------- funcs
# A func returning a struct, or a tuple holding one, returns the tuple of its plain leaves (in
# flat_leaves order, items in order); its *layout* (``ctx.ret_struct``) says how the caller
# builds the value back:
#   ("value",)                 the next leaf of the returned tuple
#   ("param", k)               an array member: the func's k-th (flattened) parameter, which
#                              the caller passes and so already holds (arrays are aliased,
#                              never copied, so none is returned)
#   ("unset",)                 an array member never set
#   ("struct", cls, {f: ...})  a struct, member by member
#   ("tuple", [...])           a tuple, item by item

def pack_struct_return(ctx, value, node):
    """The returned IR tuple of struct (or tuple) ``value``; sets ``ctx.ret_struct``."""
    leaves = []
    layout = _return_layout(ctx, value, node, leaves)
    if ctx.ret_struct is not None and ctx.ret_struct != layout:
        raise ctx.fail(node, "this func returns a struct whose array members differ between "
                       "its returns (or values of other types); return the same arrays on "
                       "every path", KernelTypeError)
    ctx.ret_struct = layout
    leaves = [typed(v) for v in leaves]
    return ctx.emit(ir.Prim(registry.lookup("make_tuple"), leaves),
                    T.TupleType(tuple(v.type for v in leaves)), node)

def _return_layout(ctx, value, node, leaves):
    if isinstance(value, StructArr):
        raise ctx.fail(node, "funcs cannot return arrays of structs")
    if isinstance(value, TupleVal):
        return ("tuple", tuple(_return_layout(ctx, i, node, leaves) for i in value.items))
    if isinstance(value, StructVal):
        members = []
        for f, m in value.members.items():
            if isinstance(m, STRUCTISH):
                members.append((f, _return_layout(ctx, m, node, leaves)))
            elif m is None:
                members.append((f, ("unset",)))
            elif not isinstance(m, _Lazy) and isinstance(m.type, T.ArrayType):
                k = next((k for k, p in enumerate(ctx.params) if p is m), None)
                if k is None:
                    raise ctx.fail(node, f"member '{f}' of the returned "
                                   f"{T.type_name(value.type)} is an array that is not one of "
                                   "the func's array parameters (a view or a local array): "
                                   "funcs can return only arrays passed to them",
                                   KernelTypeError)
                members.append((f, ("param", k)))
            else:
                leaves.append(force(ctx, m, node))
                members.append((f, ("value",)))
        return ("struct", value.type, tuple(members))
    leaves.append(typed(value))
    return ("value",)

def unpack_struct_return(ctx, layout, packed, node, args=()):
    """The value a call returning ``layout`` (see above) gives: ``packed``, the IR tuple the
    call returned, and ``args``, the call's flattened arguments."""
    counter = iter(range(len(packed.type.types)))

    def build(lay):
        kind = lay[0]
        if kind == "value":
            return ctx.apply("tuple_get", [packed], node, attrs={"index": next(counter)})
        if kind == "param":
            return args[lay[1]]
        if kind == "unset":
            return None
        if kind == "struct":
            return StructVal(lay[1], {f: build(m) for f, m in lay[2]})
        return TupleVal([build(i) for i in lay[1]])
    return build(layout)

def flatten_call_args(ctx, args, node, fname="a func"):
    out = []
    for a in args:
        if isinstance(a, TupleVal):
            raise ctx.fail(node, f"a tuple holding a struct cannot be passed to {fname}(); "
                           "pass its items", KernelTypeError)
        if isinstance(a, STRUCTISH):
            out.extend(struct_leaves(ctx, a, node, "passed to a func"))
        else:
            out.append(a)
    return out



def first_member_array(arr):
    m = next(iter(arr.members.values()))
    return first_member_array(m) if isinstance(m, StructArr) else m
