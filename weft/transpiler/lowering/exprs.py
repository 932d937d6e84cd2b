"""Expressions: names, attributes and components, operators, conditions, indexing."""
from __future__ import annotations

import ast

from ...core import types as T
from ...core.errors import KernelNameError, KernelSyntaxError, KernelTypeError, KernelValueError
from ...stdlib import registry
from ...stdlib import ir, tiles
from . import calls, literals, structs
from .structs import StructArr, StructRef, StructVal, TupleRef, TupleVal

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul",
          ast.BitAnd: "bit_and", ast.BitOr: "bit_or", ast.BitXor: "bit_xor",
          ast.LShift: "lshift", ast.RShift: "rshift"}
CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
          ast.NotEq: "ne"}
COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}
TRANSFORM_PARTS = {"p": (0, 3), "q": (3, 4)}  # first component and length in a transform


def lower_expr(ctx, node, allow_void=False):
    handler = EXPRESSIONS.get(type(node))
    if handler is None:
        if isinstance(node, ast.List):
            raise ctx.fail(node, "List constructs are not supported in kernels. Use vectors "
                           "like `wp.vec3()` for small fixed-size collections, or "
                           "`wp.zeros(shape=N, dtype=...)` for stack-allocated arrays. "
                           "(In weft: wp.alloc_local(dtype, size).)",
                           KernelSyntaxError)
        raise ctx.fail(node, f"Construct `ast.{type(node).__name__}` not supported in kernels.",
                       KernelSyntaxError)
    out = handler(ctx, node)
    if out is None and not allow_void:
        raise ctx.fail(node, "this call returns no value", KernelTypeError)
    return out


def expr_constant(ctx, node):
    if isinstance(node.value, (bool, int, float)):
        return literals.python_constant(ctx, node.value, node)
    raise ctx.fail(node, f"constants of type {type(node.value).__name__} are not supported in "
                   "kernels", KernelTypeError)


def expr_name(ctx, node):
    v = ctx.env.get(node.id)
    if isinstance(v, StructRef):
        return structs.read_struct(ctx, node.id, v.type, node)
    if isinstance(v, TupleRef):
        return structs.read_tuple(ctx, node.id, v, node)
    if v is not None:
        if id(v) in ctx.literal_vars and ctx.const_vars[id(v)][0] is v:
            # a name bound to a literal is that literal (weakly typed, exact) until rebound,
            # as Warp's constants: ``x = 0.1; wp.float64(x)`` is 0.1 in double precision
            return ir.Const(ctx.const_vars[id(v)][1], v.type, literal=True)
        return v
    if node.id in ctx.defined_in_loops:
        raise ctx.fail(node, f"'{node.id}' is only defined inside a loop above; define it "
                       "before the loop to use it after", KernelNameError)
    value = literals.resolve_global(ctx, node)
    if value is None and node.id not in ctx.globals:
        raise ctx.fail(node, f"Referencing undefined symbol: {node.id} (name '{node.id}' is "
                       "not defined)", KernelNameError)
    return literals.python_constant(ctx, value, node)


def expr_attribute(ctx, node):
    if literals.resolve_global(ctx, node.value) is not None:
        return literals.python_constant(ctx, literals.resolve_global(ctx, node), node)
    key = structs.struct_key(ctx, node)
    if key is not None:  # s.x, s.inner.y, s.arr
        if T.is_struct(key[1]) or structs.is_struct_array(key[1]):
            return structs.read_struct(ctx, key[0], key[1], node)
        v = ctx.env.get(key[0])
        if v is None:
            raise ctx.fail(node, f"'{ast.unparse(node)}' is not set", KernelNameError)
        return v
    elem = structs.struct_element(ctx, node)
    if elem is not None:  # a[i].x: load that member only
        m, idx = elem
        if isinstance(m, StructArr):
            return structs.load_element(ctx, m, idx)
        return ctx.emit(ir.Load(m, idx), m.type.dtype, node)
    base = lower_expr(ctx, node.value)
    if isinstance(base, StructVal):
        return structs.member(ctx, base, node.attr, node)
    if isinstance(base, StructArr) and node.attr == "shape":
        base = structs.first_member_array(base)
    if isinstance(base.type, T.ArrayType) and node.attr == "ndim":
        return ir.Const(base.type.ndim, T.int32)
    if T.is_composite(base.type) and node.attr == "length":  # Warp's type length (r * c)
        return ir.Const(base.type._length_, T.int32)
    if isinstance(base.type, T.ArrayType) and node.attr == "shape":
        return ctx.emit(ir.Prim(registry.lookup("array_shape"), [base]),
                        T.TupleType((T.int32,) * base.type.ndim), node)
    if is_transform_part(base.type, node.attr):
        start, n = TRANSFORM_PARTS[node.attr]
        comps = [ctx.apply("extract", [base, ir.Const(start + k, T.int32)], node)
                 for k in range(n)]
        return ctx.apply("construct", comps, node, {"type": part_type(base.type, node.attr)})
    index = component_index(ctx, base.type, node.attr, node)
    return ctx.apply("extract", [base, ir.Const(index, T.int32)], node)


def component_index(ctx, t, attr, node):
    if T.is_composite(t) and not T.is_matrix(t) and attr in COMPONENTS and \
            COMPONENTS[attr] < t._length_:
        return COMPONENTS[attr]
    raise ctx.fail(node, f"{T.type_name(t)} has no attribute '{attr}'", KernelTypeError)


def is_transform_part(t, attr):
    return T.is_composite(t) and t._wp_kind_ == "transformation" and attr in TRANSFORM_PARTS


def part_type(t, attr):
    """The type of ``t.p`` (a vec3) or ``t.q`` (a quaternion) of transform type ``t``."""
    st = T.scalar_of(t)
    return T.vector(3, st) if attr == "p" else T.quaternion(st)


def with_component(ctx, value, attr, new, node):
    """A copy of ``value`` with component ``attr`` (``v.x``, or a transform's ``t.p``/``t.q``)
    replaced by ``new``."""
    if not is_transform_part(value.type, attr):
        index = component_index(ctx, value.type, attr, node)
        return ctx.apply("insert", [value, ir.Const(index, T.int32), new], node)
    start, n = TRANSFORM_PARTS[attr]
    want = part_type(value.type, attr)
    new = literals.adapt_literal(new, want)
    if new.type != want:
        raise ctx.fail(node, f"t.{attr} of a {T.type_name(value.type)} takes a "
                       f"{T.type_name(want)}, got {T.type_name(new.type)}")
    for k in range(n):
        c = ctx.apply("extract", [new, ir.Const(k, T.int32)], node)
        value = ctx.apply("insert", [value, ir.Const(start + k, T.int32), c], node)
    return value


def expr_binop(ctx, node):
    a = lower_expr(ctx, node.left)
    b = lower_expr(ctx, node.right)
    if isinstance(node.op, ast.Mult) and all(
            T.is_composite(x.type) and x.type._wp_kind_ == "transformation" for x in (a, b)):
        from ...stdlib.funcs import BUILTIN_FUNCS  # t1 * t2 composes transforms, as Warp
        return ctx.call_func(BUILTIN_FUNCS["transform_multiply"], node, [a, b], 2)
    return ctx.apply(BINOPS[type(node.op)], [a, b], node)


def expr_unaryop(ctx, node):
    x = lower_expr(ctx, node.operand)
    if isinstance(node.op, ast.Not):
        return ctx.apply("bool_not", [truth(ctx, x, node)], node)
    name = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}[type(node.op)]
    if isinstance(x, ir.Const) and x.literal and name == "neg":
        return ir.Const(-x.value, x.type, literal=True)
    return ctx.apply(name, [x], node)


def truth(ctx, x, node):
    """A bool operand for a condition (numbers compare against zero, as in Warp)."""
    if x.type is T.bool:
        return x
    if T.is_scalar(x.type):
        return ctx.apply("ne", [x, ir.Const(0, x.type)], node)
    if isinstance(x.type, T.ArrayType):  # Warp: an array is false when null (launched None)
        shape = ctx.emit(ir.Prim(registry.lookup("array_shape"), [x]),
                         T.TupleType((T.int32,) * x.type.ndim), node)
        first = ctx.apply("tuple_get", [shape], node, attrs={"index": 0})
        return ctx.apply("ne", [first, ir.Const(0, T.int32)], node)
    raise ctx.fail(node, f"a value of type {T.type_name(x.type)} cannot be used as a "
                   "condition", KernelTypeError)


def lower_condition(ctx, node):
    return truth(ctx, lower_expr(ctx, node), node)


def expr_boolop(ctx, node):
    """``and``/``or`` short-circuit, as in Python and Warp 1.19 (``if arr and arr[i] == 0``
    never reads a null array); constants fold, so a compile-time condition keeps one branch."""
    is_and = isinstance(node.op, ast.And)
    acc = truth(ctx, lower_expr(ctx, node.values[0]), node.values[0])
    for v in node.values[1:]:
        if isinstance(acc, ir.Const):
            if bool(acc.value) != is_and:
                return ir.Const(bool(acc.value), T.bool)  # decided: the rest is not evaluated
            acc = truth(ctx, lower_expr(ctx, v), v)
            continue
        res = ctx.new_temp(T.bool, "cond")
        ctx.add(ir.Assign(res, ir.Copy(acc), ctx.loc(node)))
        go = res if is_and else ctx.apply("bool_not", [res], node)
        with ctx.in_block(dict(ctx.env)) as body:
            val = truth(ctx, lower_expr(ctx, v), v)
            ctx.add(ir.Assign(res, ir.Copy(val), ctx.loc(node)))
        ctx.add(ir.If(go, body, [], ctx.loc(node)))
        acc = res
    return acc


def expr_compare(ctx, node):
    left = lower_expr(ctx, node.left)
    acc = None
    for op, right_node in zip(node.ops, node.comparators):
        name = CMPOPS.get(type(op))
        if name is None:
            raise ctx.fail(node, f"comparison '{type(op).__name__}' is not supported",
                           KernelSyntaxError)
        right = lower_expr(ctx, right_node)
        c = ctx.apply(name, list(comparable(ctx, left, right, node)), node)
        acc = c if acc is None else ctx.apply("bool_and", [acc, c], node)
        left = right
    return acc


def comparable(ctx, a, b, node):
    """A float compared with an integer (``d < radius``, ``d: float``, ``radius: int``) is
    compared in the float's type, as Warp does."""
    if T.is_scalar(a.type) and T.is_scalar(b.type) and a.type != b.type:
        if T.is_float(a.type) and T.is_int(b.type) and not isinstance(b, ir.Const):
            return a, ctx.apply("cast", [b], node, {"type": a.type})
        if T.is_float(b.type) and T.is_int(a.type) and not isinstance(a, ir.Const):
            return ctx.apply("cast", [a], node, {"type": b.type}), b
    return a, b


def check_component_index(ctx, t, idx, node):
    """Constant indices into a vector, matrix or quaternion must be in range; a negative one
    counts from the end, as in Python and Warp (``q[-1]``). Returns the indices, normalized."""
    if not T.is_composite(t):
        return idx
    shape = t._shape_ if len(idx) > 1 or len(t._shape_) == 1 else t._shape_[:1]
    out = list(idx)
    for k, (i, n) in enumerate(zip(idx, shape)):
        if isinstance(i, ir.Const) and -n <= int(i.value) < 0:
            out[k] = i = ir.Const(int(i.value) + n, i.type)
        if isinstance(i, ir.Const) and not 0 <= int(i.value) < n:
            raise ctx.fail(node, f"index {i.value} is out of range for {T.type_name(t)} "
                           f"({-n} to {n - 1})", KernelTypeError)
    return out


def expr_ifexp(ctx, node):
    """``a if c else b``: a select of the two values when they are plain arithmetic; when a
    branch calls or reads (``a[i] if i < n else 0.0``), only the branch taken runs, as Python
    and Warp (no out-of-range read, no second atomic)."""
    zero = _branch_zero(ctx, node) if any(
        _may_act(ctx, n) for part in (node.body, node.orelse) for n in ast.walk(part)) else None
    if zero is not None:
        tmp = f"_ifexp{node.lineno}_{node.col_offset}"
        ctx.bind(tmp, zero, node)  # typed as the branches (a literal takes the other's type)
        stmt = ast.If(node.test, [ast.Assign([ast.Name(tmp, ast.Store())], node.body)],
                      [ast.Assign([ast.Name(tmp, ast.Store())], node.orelse)])
        for n in ast.walk(stmt):
            if not hasattr(n, "lineno"):
                ast.copy_location(n, node)
        ctx.lower_stmt(stmt)
        return ctx.env[tmp]
    c = lower_condition(ctx, node.test)
    a = lower_expr(ctx, node.body)
    b = lower_expr(ctx, node.orelse)
    return ctx.apply("where", [c, a, b], node)


def _may_act(ctx, n):
    """Whether evaluating ``n`` can do more than compute: read an array (maybe out of range
    where the condition guards it), or call something other than a pure builtin or a type."""
    if isinstance(n, ast.Subscript):
        return is_array_expr(ctx, n.value)
    if not isinstance(n, ast.Call):
        return False
    try:
        callee = ctx.resolve(n.func)
    except Exception:  # noqa: BLE001 - reported where it is lowered
        return True
    return not (isinstance(callee, (registry.Builtin, type)) or callee in (abs, min, max, round,
                                                                          pow))


def _branch_zero(ctx, node):
    """A zero of the type both branches of ``node`` give (lowered on the side, to learn it),
    or None when they are not scalars or vectors (then both are evaluated, as a select)."""
    with ctx.in_block(dict(ctx.env)):
        a = lower_expr(ctx, node.body)
        b = lower_expr(ctx, node.orelse)
    literal_a = isinstance(a, ir.Const) and a.literal
    t = b.type if literal_a and not (isinstance(b, ir.Const) and b.literal) else a.type
    if T.is_scalar(t):
        return ir.Const(False if t is T.bool else 0 if T.is_int(t) else 0.0, t)
    if T.is_composite(t):
        return ir.Const(tuple([0.0 if T.is_float(T.scalar_of(t)) else 0] * t._length_), t)
    return None


def expr_tuple(ctx, node):
    items = [lower_expr(ctx, e) for e in node.elts]
    for e, i in zip(node.elts, items):
        if isinstance(i, StructArr):
            raise ctx.fail(e, "arrays of structs cannot be put in tuples", KernelTypeError)
        if isinstance(getattr(i, "type", None), T.ArrayType):  # (Warp cannot build them either)
            raise ctx.fail(e, "arrays cannot be put in tuples: use each array by its name",
                           KernelTypeError)
    if any(isinstance(i, (StructVal, TupleVal)) for i in items):
        return TupleVal(items)  # kept item by item (lowering/structs.py)
    items = [literals.typed(i) for i in items]
    return ctx.emit(ir.Prim(registry.lookup("make_tuple"), items),
                    T.TupleType(tuple(i.type for i in items)), node)


def lower_return_value(ctx, node):
    v = lower_expr(ctx, node)
    if isinstance(v, (StructVal, StructArr, TupleVal)):
        return structs.pack_struct_return(ctx, v, node)
    return literals.typed(v)


# ---------------------------------------------------------------------------- indexing

def is_array_expr(ctx, node):
    """Whether ``node`` denotes an array or a view of one (``a``, ``s.arr``, ``a[i]`` of a 2-D
    ``a``), as opposed to an element (``a[i]`` of a 1-D ``a``, whose ``[0, 0]`` is a
    component)."""
    return array_expr_ndim(ctx, node) is not None


def array_expr_ndim(ctx, node):
    if isinstance(node, ast.Name) and node.id in ctx.env:
        t = ctx.env[node.id].type
        return t.ndim if isinstance(t, T.ArrayType) else None
    if isinstance(node, ast.Attribute):
        key = structs.struct_key(ctx, node)
        return key[1].ndim if key is not None and isinstance(key[1], T.ArrayType) else None
    if isinstance(node, ast.Subscript):
        inner = array_expr_ndim(ctx, node.value)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        n = sum(1 for e in elts if not isinstance(e, ast.Slice))  # axes indexed away
        if inner is None or (inner <= n and n == len(elts)):
            return None
        return inner - n
    return None


def lower_indices(ctx, sl, slices=False):
    """The index operands of a subscript; with ``slices``, ``start:stop:step`` entries (array
    views) become slice values."""
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    out = []
    for e in elts:
        if isinstance(e, ast.Slice):
            if not slices:
                raise ctx.fail(e, "slices are only supported when reading a view of an array "
                               "(v = a[1:3]) or components of a vector or matrix",
                               KernelSyntaxError)
            out.append(lower_slice(ctx, e))
            continue
        out.append(lower_index(ctx, e))
    return out


def lower_index(ctx, e):
    i = literals.adapt_literal(lower_expr(ctx, e), T.int32)
    if not T.is_int(i.type):
        raise ctx.fail(e, f"indices must be integers, got {T.type_name(i.type)}")
    return i


def lower_slice(ctx, e):
    """``start:stop:step`` of an array view: a slice value (Python's clamping, negative
    starts and steps as NumPy); a literal zero step is an error, a zero step at run time
    raises in the launch."""
    parts = [lower_index(ctx, x) for x in (e.lower, e.upper, e.step) if x is not None]
    if e.step is not None and isinstance(parts[-1], ir.Const) and parts[-1].value == 0:
        raise ctx.fail(e.step, "Slice step cannot be zero", KernelValueError)
    present = tuple(x is not None for x in (e.lower, e.upper, e.step))
    return ctx.emit(ir.Prim(registry.lookup("make_slice"), parts, {"present": present}),
                    T.SliceType(), e)


def is_slice(v):
    return isinstance(getattr(v, "type", None), T.SliceType)


def lower_array_index(ctx, node, slices=False):
    """``a[i, j]`` (maybe through views ``a[i][j]``) -> (array Var, [index operands])."""
    base = lower_expr(ctx, node.value)
    idx = lower_indices(ctx, node.slice, slices)
    if len(idx) > base.type.ndim:
        raise ctx.fail(node, "Incorrect number of indices specified for array indexing: "
                       f"too many indices ({len(idx)}) for an array of "
                       f"{base.type.ndim} dimensions")
    return base, idx


def expr_subscript(ctx, node):
    if is_array_expr(ctx, node.value):
        arr, idx = lower_array_index(ctx, node, slices=True)
        kept = sum(1 for i in idx if is_slice(i))  # axes a slice keeps
        if isinstance(arr, StructArr):
            if len(idx) != arr.type.ndim or kept:
                raise ctx.fail(node, "views of arrays of structs are not supported; index every "
                               "dimension")
            return structs.load_element(ctx, arr, idx)
        if len(idx) == arr.type.ndim and not kept:
            return ctx.emit(ir.Load(arr, idx), arr.type.dtype, node)
        view_t = T.ArrayType(arr.type.dtype, arr.type.ndim - len(idx) + kept)
        return ctx.emit(ir.Load(arr, idx), view_t, node)
    shape_axis = padded_shape_axis(ctx, node)
    if shape_axis is not None:
        return shape_axis
    base = lower_expr(ctx, node.value)
    if T.is_tile_type(getattr(base, "type", None)):
        return tiles.subscript(ctx, base, node.slice, node)
    if T.is_composite(base.type) and has_slice(node.slice):
        return read_components(ctx, base, node.slice, node)
    idx = lower_indices(ctx, node.slice)
    if isinstance(base, TupleVal):
        if len(idx) != 1 or not isinstance(idx[0], ir.Const) or \
                not -len(base.items) <= idx[0].value < len(base.items):
            raise ctx.fail(node, f"tuples of {len(base.items)} values can only be indexed "
                           "with a constant", KernelTypeError)
        return base.items[idx[0].value]
    if isinstance(base.type, T.TupleType):
        if len(idx) != 1 or not isinstance(idx[0], ir.Const) or \
                not 0 <= idx[0].value < len(base.type.types):
            raise ctx.fail(node, f"tuples of {len(base.type.types)} values can only be indexed "
                           "with a constant from 0")
        return ctx.apply("tuple_get", [base], node, attrs={"index": idx[0].value})
    idx = check_component_index(ctx, base.type, idx, node)
    return ctx.apply("extract", [base] + idx, node)


def padded_shape_axis(ctx, node):
    """``a.shape[k]`` for a constant ``k`` from ``a.ndim`` up to 3: 0, as Warp (whose arrays
    carry four extents); None for any other subscript."""
    v = node.value
    if not (isinstance(v, ast.Attribute) and v.attr == "shape" and is_array_expr(ctx, v.value)
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int):
        return None
    ndim = array_expr_ndim(ctx, v.value)
    return ir.Const(0, T.int32) if ndim <= node.slice.value < 4 else None


# ---------------------------------------------------------------------------- slices

def has_slice(sl):
    return any(isinstance(e, ast.Slice) for e in (sl.elts if isinstance(sl, ast.Tuple) else [sl]))


def selection(ctx, t, sl, node):
    """The components ``v[sl]`` selects of a value of composite type ``t``: ``(dims, picks)``,
    ``dims`` the lengths of the sliced axes, ``picks`` the index operands of each component in
    row-major order (slice bounds are constants, as in Warp)."""
    elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    shape = t._shape_
    if len(elts) > len(shape):
        raise ctx.fail(node, f"too many indices for {T.type_name(t)}")
    elts += [ast.Slice(None, None, None)] * (len(shape) - len(elts))
    axes, dims = [], []
    for e, n in zip(elts, shape):
        if isinstance(e, ast.Slice):
            bounds = [None if b is None else literals.static_value(ctx, b, "a slice bound")
                      for b in (e.lower, e.upper, e.step)]
            if not all(b is None or isinstance(b, int) for b in bounds):
                raise ctx.fail(e, "slice bounds in kernels must be integer constants")
            picks = [ir.Const(i, T.int32) for i in range(*slice(*bounds).indices(n))]
            axes.append(picks)
            dims.append(len(picks))
        else:
            i = literals.adapt_literal(lower_expr(ctx, e), T.int32)
            if not T.is_int(i.type):
                raise ctx.fail(e, f"indices must be integers, got {T.type_name(i.type)}")
            (i,) = check_component_index(ctx, T.vector(n, T.scalar_of(t)), [i], e)
            axes.append([i])
    combos = [[]]
    for picks in axes:
        combos = [c + [p] for c in combos for p in picks]
    return dims, combos


def sliced_type(t, dims):
    st = T.scalar_of(t)
    return T.vector(dims[0], st) if len(dims) == 1 else T.matrix(tuple(dims), st)


def read_components(ctx, base, sl, node):
    """``v[1:]``, ``m[:2]``, ``m[:2, 3]``: a vector or matrix of the selected components."""
    dims, combos = selection(ctx, base.type, sl, node)
    comps = [ctx.apply("extract", [base] + c, node) for c in combos]
    return ctx.apply("construct", comps, node, {"type": sliced_type(base.type, dims)})


def write_components(ctx, base, sl, value, node):
    """``v[1:] = x``: a copy of ``base`` with the selected components set to those of ``x``
    (Warp's checks and messages)."""
    dims, combos = selection(ctx, base.type, sl, node)
    want = sliced_type(base.type, dims)
    kind = "vector" if len(dims) == 1 else "matrix"
    if not T.is_composite(value.type) or T.is_matrix(value.type) != (kind == "matrix"):
        raise ctx.fail(node, f"The provided value is expected to be a {kind} of "
                       f"{'length' if kind == 'vector' else 'shape'} "
                       f"{dims[0] if kind == 'vector' else tuple(dims)}, with dtype "
                       f"{T.type_name(T.scalar_of(base.type))}.", KernelValueError)
    if T.scalar_of(value.type) != T.scalar_of(base.type):
        raise ctx.fail(node, f"The provided {kind} is expected to be of "
                       f"{'length' if kind == 'vector' else 'shape'} "
                       f"{dims[0] if kind == 'vector' else tuple(dims)} with dtype "
                       f"{T.type_name(T.scalar_of(base.type))}.", KernelValueError)
    if value.type._shape_ != want._shape_:
        raise ctx.fail(node, f"The length of the provided {kind} ({value.type._length_}) isn't "
                       f"compatible with the given slice (expected {want._length_}).",
                       KernelValueError)
    for k, c in enumerate(combos):
        item = ctx.apply("extract", [value] + [ir.Const(x, T.int32) for x in divmod(
            k, dims[1])] if len(dims) == 2 else [value, ir.Const(k, T.int32)], node)
        base = ctx.apply("insert", [base] + c + [item], node)
    return base


EXPRESSIONS = {ast.Constant: expr_constant, ast.Name: expr_name, ast.Attribute: expr_attribute,
               ast.BinOp: expr_binop, ast.UnaryOp: expr_unaryop, ast.BoolOp: expr_boolop,
               ast.Compare: expr_compare, ast.IfExp: expr_ifexp, ast.Tuple: expr_tuple,
               ast.Subscript: expr_subscript, ast.Call: calls.expr_call}
