"""Pass ``tile_views``: a tile load that nothing can write over while the tile lives reads its
array in place, and a reduction to one element that is only stored or read is a scalar.

Invariant: in every generated function of a module with tiles, ``t = _wk.tile_loadN(a, ...)``
is ``t = _wk.tile_viewN(a, ...)`` (the same arguments) exactly when

- ``t`` is a name assigned once in the function (not a parameter, not rebound in a loop);
- every read of ``t`` is in a statement after the load in the same block;
- the statements from the load's next one to the last that reads ``t`` write nothing: no
  subscript is assigned, and every call is one the vocabulary marks pure or of a generated
  function of the module that writes nothing and calls only such (:func:`pure_functions`; a
  store, an atomic, an adjoint's add into an array, any other generated function are not);
- every read of ``t`` is an operand of an arithmetic operator or an argument of a helper whose
  result is a new array (``weft.native.tiles.FRESH``), so no other name can hold the view.

``tile_viewN`` returns the region itself when it is a C-contiguous array of the tile's shape,
else ``tile_loadN``'s copy (:mod:`weft.native.tile_memory`). Tiles are values (every helper returns
a new array and modifies no operand), so a view is indistinguishable from the copy unless the
array changes while the tile is read, which the rule above excludes, whatever arrays the launch
passes (two parameters may be one array). Replays in adjoint functions follow the same rule on
their own text. The pass runs only for modules whose kernels make tiles
(``KernelABI.tile_work``); in CUDA modules the pass ``cuda_tiles`` then copies every load, view
or not, into its tile's shared buffer.

A product into a tile of zeros made for it and read nowhere else (``c = tile_zeros(...);
tile_matmul(a, b, c)``) is the product itself (:func:`zero_products`).

And ``r = _wk.tile_sum(t)`` (``tile_max``, ``tile_min``), ``r`` assigned once and every read of it
the tile stored by ``_wk.tile_store1(a, o, r)`` or its element ``r[0]``, holds the element
itself (``tile_sum_scalar``; ``tile_store_one``; ``r``): the one-element tile's allocation cost
more than summing 256 elements (Warp's ``tile_store(s, tile_sum(t), offset=i)``).
"""
from __future__ import annotations

import ast

from ..native.vocabulary import called_name, is_pure
from .codegen import private_split, thread_row

_LOADS = {f"_wk.tile_load{n}": f"tile_view{n}" for n in (1, 2, 3, 4)}
_STORES = {f"_wk.tile_store{kind}{n}" for n in (1, 2, 3, 4) for kind in ("", "_indexed")}
#: the reductions to one element and their scalar forms
_ONE = {"_wk.tile_sum": "tile_sum_scalar", "_wk.tile_max": "tile_max_scalar",
        "_wk.tile_min": "tile_min_scalar"}


def _fresh():
    from ..native.tiles import FRESH
    return {"_wk." + n for n in FRESH}


def _blocks(body):
    """``body`` and every statement list nested in it."""
    yield body
    for st in body:
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list) and sub:
                yield from _blocks(sub)


def _reads(tree, name):
    """The ``(node, parent)`` of every read of ``name`` in statement ``tree``."""
    out = []
    stack = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if type(node) is ast.Name:
            if node.id == name and type(node.ctx) is ast.Load:
                out.append((node, parent))
            continue
        for child in ast.iter_child_nodes(node):
            stack.append((child, node))
    return out


class _Index:
    """One walk of a generated function: how often each name is bound (a parameter counts
    twice), the ``(node, parent)`` of each read of a name, each node's parent, and the plain
    assignments ``name = value``."""

    def __init__(self, fdef):
        self.stores, self.reads, self.parents, self.assigns = {}, {}, {}, []
        for node in ast.walk(fdef):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            kind = type(node)
            if kind is ast.Name:
                if type(node.ctx) is ast.Load:
                    self.reads.setdefault(node.id, []).append((node, self.parents.get(node)))
                else:
                    self.stores[node.id] = self.stores.get(node.id, 0) + 1
            elif kind is ast.arg:
                self.stores[node.arg] = self.stores.get(node.arg, 0) + 2
            elif kind is ast.Assign and len(node.targets) == 1 and \
                    type(node.targets[0]) is ast.Name:
                self.assigns.append(node)

    def once(self, name):
        return self.stores.get(name) == 1


_ALLOCS = {"np.zeros", "np.empty", "np.ones", "np.full"}


def _reshape_of(value):
    """``(name, ndim)`` when ``value`` is ``name.reshape(...)`` (``ndim``: the dimensions it
    asks for), else None: the element loops of tile arithmetic read tiles through these."""
    if type(value) is ast.Call and type(value.func) is ast.Attribute and \
            value.func.attr == "reshape" and type(value.func.value) is ast.Name and \
            not value.keywords and value.args:
        args = value.args
        if len(args) > 1:
            return value.func.value.id, len(args)
        if type(args[0]) is ast.Tuple:
            return value.func.value.id, len(args[0].elts)
        if type(args[0]) in (ast.Constant, ast.UnaryOp):   # 8, -1
            return value.func.value.id, 1
        return value.func.value.id, None   # a shape held by a name: dimensions unknown
    return None


def _locals(index, fresh):
    """Names assigned once a new array (an allocation, a ``fresh`` helper's result) or a name
    for one (``reshape``, plain assignment): writing their elements writes no kernel array."""
    out = set()
    for _ in range(2):   # a name may follow the one it is made from in the walk's order
        for st in index.assigns:
            if not index.once(st.targets[0].id):
                continue
            v = st.value
            src = _reshape_of(v)
            if (type(v) is ast.Call and called_name(v.func) in (_ALLOCS | fresh)) or \
                    (src is not None and src[0] in out) or (type(v) is ast.Name and v.id in out):
                out.add(st.targets[0].id)
    return out


def _adjoint_arrays(fdef, index):
    """The names of ``fdef``'s adjoint arrays: its parameters ``adj_<p>`` beside a parameter
    ``<p>`` (an adjoint entry's), and the names bound to an element or view of one (never a
    kernel's primal array)."""
    params = {a.arg for a in fdef.args.args}
    out = {p for p in params if p.startswith("adj_") and p[4:] in params}
    for _ in range(2):   # (a view of a view)
        for st in index.assigns:
            v = st.value
            if type(v) is ast.Subscript and type(v.value) is ast.Name and v.value.id in out:
                out.add(st.targets[0].id)
    return out


def _adjoint_reset(call, adjoints):
    """Whether ``call`` is a tile store's adjoint restarting its region of an adjoint array
    (``_wk.tile_storeN(adj_a, ...)``)."""
    a = call.args[0] if call.args else None
    return called_name(call.func) in _STORES and type(a) is ast.Name and a.id in adjoints


def _writes_nothing(st, local, adjoints=(), pure=()):
    """Whether statement ``st`` calls only pure functions (the vocabulary's, or the module's
    generated functions in ``pure``) and assigns no element but of ``local`` arrays (or resets
    a region of one of ``adjoints``: given for a load of a primal array, which a store into an
    adjoint array does not write)."""
    for node in ast.walk(st):
        kind = type(node)
        if kind is ast.Subscript and type(node.ctx) is not ast.Load:
            base = node.value
            if type(base) is not ast.Name or base.id not in local:
                return False
        elif kind is ast.Call and not is_pure(called_name(node.func)) and \
                called_name(node.func) not in pure and \
                _reshape_of(node) is None and not _adjoint_reset(node, adjoints):
            return False
        elif kind in (ast.Delete, ast.Global, ast.Nonlocal) or \
                (kind is ast.Attribute and type(node.ctx) is not ast.Load):
            return False
    return True


def _consumed(node, parent, ndim, fresh):
    """Whether a read of a tile (``ndim`` None) or of a reshaped name for it (``ndim`` its
    dimensions) only feeds a new value: an operand of an operator, an argument of a ``fresh``
    helper, one scalar element read by ``tile_extract`` (tagged ``weft_element``), or (a
    reshaped name) one element, indexed in every dimension."""
    if type(parent) in (ast.BinOp, ast.UnaryOp):
        return True
    if type(parent) is ast.Call and node in parent.args and called_name(parent.func) in fresh:
        return True
    if type(parent) is ast.Subscript and parent.value is node and \
            getattr(parent, "weft_element", False):   # one scalar element (tile_extract)
        return True
    if ndim is None or type(parent) is not ast.Subscript or parent.value is not node or \
            type(parent.ctx) is not ast.Load:
        return False
    index = parent.slice
    parts = index.elts if type(index) is ast.Tuple else [index]
    return len(parts) == ndim and not any(type(p) is ast.Slice for p in parts)


def _loads(fdef):
    """``(block, position, statement)`` of every candidate load ``t = _wk.tile_loadN(...)``."""
    for block in _blocks(fdef.body):
        for k, st in enumerate(block):
            if type(st) is ast.Assign and len(st.targets) == 1 and \
                    type(st.targets[0]) is ast.Name and type(st.value) is ast.Call and \
                    called_name(st.value.func) in _LOADS:
                yield block, k, st


def _viewable(index, block, k, local, fresh, adjoints, pure=()):
    """Whether the load ``block[k]`` may read its array in place (the module's rule)."""
    t = block[k].targets[0].id
    if not index.once(t):
        return False
    names = {t: None}         # the tile and the reshaped names for it -> their dimensions
    wanted = len(index.reads.get(t, ()))
    seen, last = 0, k
    for j in range(k + 1, len(block)):
        if seen == wanted:
            break
        st = block[j]
        src = _reshape_of(st.value) if type(st) is ast.Assign and len(st.targets) == 1 and \
            type(st.targets[0]) is ast.Name else None
        if src is not None and src[0] in names:
            alias = st.targets[0].id
            if not index.once(alias) or alias in names or src[1] is None:
                return False
            names[alias] = src[1]
            wanted += len(index.reads.get(alias, ()))
            seen, last = seen + 1, j
            continue
        for name, ndim in names.items():
            reads = _reads(st, name)
            if reads:
                if not all(_consumed(n, p, ndim, fresh) for n, p in reads):
                    return False
                seen, last = seen + len(reads), j
    src = block[k].value.args[0] if block[k].value.args else None
    resets = adjoints if type(src) is ast.Name and src.id not in adjoints else ()
    return seen == wanted and all(_writes_nothing(s, local, resets, pure)
                                  for s in block[k + 1:last + 1])


def _replace(parent, old, new):
    """Put ``new`` where ``parent`` holds ``old``."""
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for i, v in enumerate(value):
                if v is old:
                    value[i] = new
                    return


def _is_zero_index(index):
    """Whether ``index`` is ``0``, ``(0,)`` or a cast zero (``int32(0)``, as kernels write it)."""
    if type(index) is ast.Tuple and len(index.elts) == 1:
        index = index.elts[0]
    if type(index) is ast.Call and type(index.func) is ast.Name and len(index.args) == 1 and \
            not index.keywords and index.func.id in ("int32", "int64"):
        index = index.args[0]
    return type(index) is ast.Constant and type(index.value) is int and index.value == 0


def scalars(fdef, index=None):
    """``fdef`` with its one-element reductions that are only stored or read at ``[0]`` held
    as scalars (in place): ``r = _wk.tile_sum(t)`` is ``r = _wk.tile_sum_scalar(t)``,
    ``_wk.tile_store1(a, o, r)`` is ``_wk.tile_store_one(a, o, r)`` and ``r[0]`` is ``r``.
    The number made."""
    index = index or _Index(fdef)
    made = 0
    for st in index.assigns:
        r = st.targets[0].id
        if type(st.value) is not ast.Call or called_name(st.value.func) not in _ONE or \
                not index.once(r):
            continue
        reads = index.reads.get(r, [])
        stored = [p for n, p in reads if type(p) is ast.Call and
                  called_name(p.func) == "_wk.tile_store1" and len(p.args) == 3 and
                  p.args[2] is n and not p.keywords]
        first = [p for n, p in reads if type(p) is ast.Subscript and p.value is n and
                 type(p.ctx) is ast.Load and _is_zero_index(p.slice)]
        if not reads or len(stored) + len(first) != len(reads):
            continue
        st.value.func.attr = _ONE[called_name(st.value.func)]
        for call in stored:
            call.func.attr = "tile_store_one"
        for sub in first:
            _replace(index.parents[sub], sub, ast.Name(r, ast.Load()))
        made += 1
    return made


def pure_functions(defs):
    """The names of the module's generated functions that write no array and call only pure
    functions or each other (a ``@wp.func`` of values, as an n-body interaction): a call of
    one between a load and its last read keeps the load a view."""
    funcs = {d.name: d for d in defs if isinstance(d, ast.FunctionDef)}
    pure = set(funcs)
    changed = True
    while changed:
        changed = False
        for name in list(pure):
            if not all(_writes_nothing(st, (), (), pure) for st in funcs[name].body):
                pure.discard(name)
                changed = True
    return pure


def views(fdef, fresh, index=None, pure=()):
    """``fdef`` with its eligible loads made views (in place); the number made."""
    loads = list(_loads(fdef))
    if not loads:
        return 0
    index = index or _Index(fdef)
    local = _locals(index, fresh)
    adjoints = _adjoint_arrays(fdef, index)
    made = 0
    for block, k, st in loads:
        if _viewable(index, block, k, local, fresh, adjoints, pure):
            st.value.func.attr = _LOADS[called_name(st.value.func)]
            made += 1
    return made


def _is_one(node):
    """Whether ``node`` is the constant 1 (``1.0``, or cast: ``float32(1.0)``)."""
    if type(node) is ast.Call and type(node.func) is ast.Name and len(node.args) == 1 and \
            not node.keywords and node.func.id in ("float16", "float32", "float64"):
        node = node.args[0]
    return type(node) is ast.Constant and type(node.value) in (int, float) and node.value == 1


def zero_products(fdef, index=None):
    """``fdef`` with each product into a tile of zeros computed as the product (in place):
    ``c = np.zeros(...)`` then ``r = _wk.tile_matmul_acc(a, b, c, 1.0, 1.0)``, ``c`` assigned
    once and read only there, is ``r = _wk.tile_matmul(a, b)`` and ``c`` is not made (Warp's
    ``c = tile_zeros(...); tile_matmul(a, b, c)``). The same bits: the product ``p`` is summed
    from +0 (never -0), so ``1 * p + 1 * 0`` is ``p``. The number made."""
    index = index or _Index(fdef)
    zeros = {st.targets[0].id: st for st in index.assigns
             if type(st.value) is ast.Call and called_name(st.value.func) == "np.zeros"}
    made = 0
    for st in index.assigns:
        v = st.value
        if type(v) is not ast.Call or called_name(v.func) != "_wk.tile_matmul_acc" or \
                len(v.args) != 5 or v.keywords or type(v.args[2]) is not ast.Name:
            continue
        c = v.args[2].id
        if c not in zeros or not index.once(c) or len(index.reads.get(c, [])) != 1 or \
                not (_is_one(v.args[3]) and _is_one(v.args[4])):
            continue
        v.func.attr = "tile_matmul"
        del v.args[2:]
        made_of = zeros[c]
        block = index.parents[made_of]
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(block, field, None)
            if isinstance(stmts, list) and made_of in stmts:
                stmts.remove(made_of)
                if not stmts:
                    stmts.append(ast.Pass())
                break
        made += 1
    return made


_PLAIN_ADDS = {"_wk.tile_load_adj1": "tile_add_plain1", "_wk.tile_load_adj2": "tile_add_plain2"}


def private_tile_adds(fdef):
    """``fdef`` (a CPU chunk) with the gradient adds of its tile loads into arrays it has
    per-thread copies of (parameters ``_pv_<a>`` and ``_acc_<a>``, the analysis'
    ``private_accumulators``) made as a scalar load's are (in place): thread 0 adds into the
    array itself and thread ``_w`` into its copy, without atomics, and a thread without a copy
    adds atomically. The number made.

    ``_wk.tile_load_adj2(adj_a, o0, o1, g)`` is::

        if _pv_adj_a and _w == 0:
            _wk.tile_add_plain2(adj_a, o0, o1, g)
        elif _pv_adj_a and _w <= _acc_adj_a.shape[0]:
            _wk.tile_add_plain2(_acc_adj_a[_w - 1], o0, o1, g)
        else:
            _wk.tile_load_adj2(adj_a, o0, o1, g)

    The analysis makes an adjoint private only where every read of the parameter is a scalar
    load (its adds written so by ``codegen``) or a 1-D or 2-D tile load of the parameter
    itself, whose adjoint is one such call on ``adj_<a>`` by name."""
    params = {a.arg for a in fdef.args.args}
    private = {p[len("_pv_"):] for p in params
               if p.startswith("_pv_") and "_acc_" + p[len("_pv_"):] in params}
    if not private:
        return 0
    made = 0
    for block in list(_blocks(fdef.body)):
        for k, st in enumerate(block):
            if type(st) is not ast.Expr or type(st.value) is not ast.Call:
                continue
            call = st.value
            plain = _PLAIN_ADDS.get(called_name(call.func))
            if plain is None or not call.args or type(call.args[0]) is not ast.Name or \
                    call.args[0].id not in private:
                continue
            a = call.args[0].id

            def add(target, fn=plain, rest=call.args[1:]):
                return [ast.Expr(ast.Call(ast.Attribute(ast.Name("_wk", ast.Load()), fn,
                                                        ast.Load()), [target] + rest, []))]
            row = ast.Subscript(ast.Name(f"_acc_{a}", ast.Load()), thread_row(), ast.Load())
            block[k] = ast.copy_location(private_split(a, add(ast.Name(a, ast.Load())),
                                                       add(row), [st]), st)
            made += 1
    return made


def run(state):
    if not any(abi.tile_work for abi in state.abis.values()):
        return state
    fresh = _fresh()
    pure = pure_functions(state.defs)
    for d in state.defs:
        if isinstance(d, ast.FunctionDef):
            index = _Index(d)
            views(d, fresh, index, pure)  # renames calls only: the index stays true
            scalars(d, index)          # replaces subscripts
            zero_products(d, index)    # removes statements
            private_tile_adds(d)       # replaces statements: last
    return state
