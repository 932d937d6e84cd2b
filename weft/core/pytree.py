"""PyTree traversal: the containers weft looks into to find arrays (Dr.Jit's PyTrees).

A PyTree is a value built from

- ``list``, ``tuple`` and ``dict`` (exactly these types: subclasses, named tuples included, are
  leaves and not traversed, as in Dr.Jit, because their constructors may take other arguments);
- dataclass instances (every field);
- instances of classes with a ``WEFT_STRUCT = {'x': float, 'v': wp.vec3}`` annotation (the
  fields named there; Dr.Jit's ``DRJIT_STRUCT`` is read too);

whose leaves are ``wp.array`` objects (the differentiable part) or anything else (constants:
numbers, strings, ``None``, kept as they are). A container reached again while it is being
traversed is a cycle and raises ``RecursionError``.

This module knows arrays only by their ``_weft_array_`` marker, so that the runtime (tapes,
array creation) can use it without importing anything above it. The user-facing operations
(``weft.tree.grad``, ``detach``, ``zeros`` of a PyTree type, ...) are in :mod:`weft.tree`.

Example::

    @dataclasses.dataclass
    class State:
        x: wp.array(dtype=wp.vec3)
        v: wp.array(dtype=wp.vec3)
        t: float = 0.0

    arrays, spec = flatten(State(x, v, 0.5))      # [x, v], the structure with t = 0.5
    unflatten(spec, [x2, v2])                      # State(x2, v2, 0.5)
"""
from __future__ import annotations

import copy
import dataclasses
import typing

__all__ = ["is_array", "is_tree", "is_tree_type", "struct_fields", "leaves", "flatten",
           "unflatten", "map_tree", "pairs", "build", "TreeSpec", "TreeDict"]


def is_array(x):
    """Whether ``x`` is a ``wp.array`` instance (not the class, not an annotation)."""
    return getattr(x, "_weft_array_", False) and not isinstance(x, type) and \
        getattr(x, "_data", None) is not None


def struct_fields(cls):
    """The traversed fields of a ``WEFT_STRUCT`` (or ``DRJIT_STRUCT``) class as ``{name:
    type}``, or None for other classes."""
    for attr in ("WEFT_STRUCT", "DRJIT_STRUCT"):
        fields = getattr(cls, attr, None)
        if fields is not None:
            if not isinstance(fields, dict):
                raise TypeError(f"{cls.__name__}.{attr} must be a dict of field names to "
                                f"types, got {type(fields).__name__}")
            return fields
    return None


def is_tree_type(tp):
    """Whether instances of class ``tp`` are traversed as containers of named fields (a
    dataclass or a ``WEFT_STRUCT`` class)."""
    return isinstance(tp, type) and (struct_fields(tp) is not None or
                                     dataclasses.is_dataclass(tp))


def _node(x):
    """``(kind, keys, values)`` of a traversed container, or None for a leaf."""
    t = type(x)
    if t is list or t is tuple:
        return t.__name__, None, list(x)
    if t is dict:
        return "dict", list(x.keys()), list(x.values())
    if isinstance(x, type):
        return None
    fields = struct_fields(t)
    if fields is not None:
        names = list(fields)
        missing = [n for n in names if not hasattr(x, n)]
        if missing:
            raise AttributeError(f"{t.__name__} declares field {missing[0]!r} in WEFT_STRUCT "
                                 "but the instance has no such attribute")
        return "struct", names, [getattr(x, n) for n in names]
    if dataclasses.is_dataclass(t):
        names = [f.name for f in dataclasses.fields(x)]
        return "struct", names, [getattr(x, n) for n in names]
    return None


def is_tree(x):
    """Whether ``x`` is a traversed container (not a leaf)."""
    return _node(x) is not None


class TreeSpec:
    """The structure of a PyTree with its arrays taken out: containers, field names and the
    constant (non-array) leaves. ``unflatten(spec, arrays)`` puts arrays back."""

    __slots__ = ("kind", "keys", "children", "template", "value")

    def __init__(self, kind, keys=None, children=(), template=None, value=None):
        self.kind, self.keys, self.children = kind, keys, list(children)
        self.template, self.value = template, value

    @property
    def num_arrays(self):
        if self.kind == "array":
            return 1
        return sum(c.num_arrays for c in self.children)

    def __eq__(self, other):
        """Same containers, keys and number of arrays (constants are not compared: a loop body
        may advance a time field)."""
        if not isinstance(other, TreeSpec) or self.kind != other.kind or \
                self.keys != other.keys or len(self.children) != len(other.children):
            return False
        if self.kind == "struct" and type(self.template) is not type(other.template):
            return False
        return all(a == b for a, b in zip(self.children, other.children))

    __hash__ = None

    def __repr__(self):
        if self.kind == "array":
            return "*"
        if self.kind == "const":
            return repr(self.value)
        inner = ", ".join(repr(c) if k is None else f"{k}={c!r}"
                          for k, c in zip(self.keys or [None] * len(self.children),
                                          self.children))
        name = type(self.template).__name__ if self.kind == "struct" else self.kind
        return f"{name}({inner})"


def flatten(tree):
    """``(arrays, spec)``: the arrays of ``tree`` depth-first in order (fields in declaration
    order, dict entries in insertion order) and its :class:`TreeSpec`."""
    arrays = []
    spec = _flatten(tree, arrays, set())
    return arrays, spec


def _flatten(x, out, active):
    if is_array(x):
        out.append(x)
        return TreeSpec("array")
    node = _node(x)
    if node is None:
        return TreeSpec("const", value=x)
    if id(x) in active:
        raise RecursionError(f"weft.tree: the PyTree contains a cycle (a {type(x).__name__} "
                             "that contains itself)")
    active.add(id(x))
    kind, keys, values = node
    children = [_flatten(v, out, active) for v in values]
    active.discard(id(x))
    return TreeSpec(kind, keys, children, template=x if kind == "struct" else None)


def leaves(tree):
    """The arrays of ``tree`` in traversal order."""
    return flatten(tree)[0]


def unflatten(spec, arrays):
    """The PyTree of structure ``spec`` holding ``arrays`` (in :func:`flatten`'s order); a
    dataclass or ``WEFT_STRUCT`` object is a shallow copy of the original with the traversed
    fields replaced."""
    arrays = list(arrays)
    if len(arrays) != spec.num_arrays:
        raise ValueError(f"weft.tree: the structure {spec!r} holds {spec.num_arrays} arrays, "
                         f"got {len(arrays)}")
    it = iter(arrays)
    return _build(spec, it)


def _build(spec, it):
    kind = spec.kind
    if kind == "array":
        return next(it)
    if kind == "const":
        return spec.value
    values = [_build(c, it) for c in spec.children]
    if kind == "list":
        return values
    if kind == "tuple":
        return tuple(values)
    if kind == "dict":
        return dict(zip(spec.keys, values))
    obj = copy.copy(spec.template)
    for k, v in zip(spec.keys, values):
        object.__setattr__(obj, k, v)  # also for frozen dataclasses
    return obj


def map_tree(fn, tree, *others, what="weft.tree"):
    """A PyTree of ``tree``'s structure whose arrays are ``fn(a, *b)``, where ``b`` are the
    values at the same place in ``others`` (PyTrees of the same structure, see
    :func:`match`)."""
    arrays, spec = flatten(tree)
    rest = [match(spec, o, what) for o in others]
    return unflatten(spec, [fn(a, *bs) for a, *bs in zip(arrays, *rest)])


def pairs(mapping, what, error=TypeError):
    """``[(array, value)]`` from ``mapping`` (a dict or a sequence of pairs) whose keys are
    arrays or PyTrees of arrays; a PyTree key's value is a PyTree of the same structure
    (each array's value at the same place). Keys without arrays, and values of another
    structure, raise ``error``."""
    items = mapping.items() if isinstance(mapping, dict) else mapping
    out = []
    for item in items:
        try:
            key, value = item
        except (TypeError, ValueError):
            raise error(f"{what}: expected a dict or a sequence of (key, value) pairs, "
                        f"got an item {item!r}") from None
        if is_array(key):
            out.append((key, value))
            continue
        keys, spec = flatten(key)
        if not keys:
            raise error(f"{what}: keys must be wp.arrays or PyTrees of them, got "
                        f"{type(key).__name__} (no arrays in it)")
        if is_array(value) or not is_tree(value):
            if len(keys) != 1:
                raise error(f"{what}: the key {spec!r} holds {len(keys)} arrays but its "
                            f"value is a single {type(value).__name__}")
            out.append((keys[0], value))
            continue
        out += list(zip(keys, match(spec, value, what, error)))
    return out


def match(spec, value, what="weft.tree", error=ValueError):
    """The parts of ``value`` at the places where structure ``spec`` holds arrays: ``value``
    has the same containers (kinds and keys) and anything (arrays, numpy data, numbers) where
    ``spec`` has an array; constants of ``spec`` are not compared."""
    out = []
    _match(spec, value, out, what, error, "")
    return out


def _match(spec, value, out, what, error, where):
    if spec.kind == "array":
        out.append(value)
        return
    if spec.kind == "const":
        return
    node = _node(value)
    keys = spec.keys if spec.keys is not None else None
    if node is None or node[0] != spec.kind or node[1] != keys or \
            len(node[2]) != len(spec.children) or \
            (spec.kind == "struct" and type(value) is not type(spec.template)):
        got = type(value).__name__ if node is None else repr(flatten(value)[1])
        raise error(f"{what}: expected a value of structure {spec!r}{where and ' at ' + where}, "
                    f"got {got}")
    for k, (child, v) in enumerate(zip(spec.children, node[2])):
        _match(child, v, out, what, error, f"{where}[{keys[k] if keys else k!r}]")


class TreeDict(dict):
    """A dict keyed by arrays that also answers PyTree keys: ``d[tree]`` is the PyTree of
    ``d[array]`` for the tree's arrays (``tape.gradients[state]``). A missing array is a
    ``KeyError`` naming it."""

    def __getitem__(self, key):
        if is_array(key):
            return dict.__getitem__(self, key)
        info = getattr(type(key), "_wp_struct_", None)
        if info is not None:  # a wp.struct: the struct of its arrays' gradients (as Warp)
            return self._struct_gradients(key, info)
        arrays, spec = flatten(key)
        if not arrays and not is_tree(key):
            return dict.__getitem__(self, key)
        return unflatten(spec, [dict.__getitem__(self, a) for a in arrays])

    def _struct_gradients(self, value, info):
        out, found = type(value)(), False
        for name in info.fields:
            member = getattr(value, name)
            if is_array(member):
                grad = dict.get(self, member)
                found |= grad is not None
                setattr(out, name, grad)
            elif getattr(type(member), "_wp_struct_", None) is not None:
                try:
                    setattr(out, name, self._struct_gradients(member, type(member)._wp_struct_))
                    found = True
                except KeyError:
                    pass
        if not found:
            raise KeyError(f"no gradient recorded for any array of this {type(value).__name__}")
        return out

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key):
        if is_array(key) or not is_tree(key):
            return dict.__contains__(self, key)
        return all(dict.__contains__(self, a) for a in leaves(key))


# ----------------------------------------------------------------- building from a type

def field_types(tp):
    """``{name: type}`` of the fields of PyTree type ``tp`` (resolving string annotations)."""
    fields = struct_fields(tp)
    if fields is not None:
        return dict(fields)
    try:
        hints = typing.get_type_hints(tp)
    except Exception:  # noqa: BLE001 - unresolvable annotations: use them as written
        hints = {}
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(tp)}


def _is_array_annotation(ft):
    """``wp.array(dtype=...)`` or ``wp.array[...]`` used as a field annotation."""
    return (getattr(ft, "_weft_array_", False) and not isinstance(ft, type)) or \
        type(ft).__name__ == "ArrayType"


def build(tp, make, path=None):
    """An instance of PyTree type ``tp`` whose fields are built by ``make(type, path)``, which
    returns an array or raises ``TypeError`` for a field type it cannot build; nested PyTree
    types are built recursively.

    A ``WEFT_STRUCT`` class is constructed with no arguments and its declared fields (element
    types: ``{'x': float, 'v': wp.vec3}``) set. In a dataclass, fields annotated with an array
    type (``wp.array(dtype=wp.vec3)``) or a PyTree type are built, and so are fields of a value
    type (``float``, ``wp.vec3``) without a default; a field with a default keeps it
    (``t: float = 0.0`` stays a number); a field that can be neither is a ``TypeError``."""
    path = path or tp.__name__
    fields = struct_fields(tp)
    types = field_types(tp)
    if fields is not None:
        values = {name: _build_field(ft, make, f"{path}.{name}") for name, ft in types.items()}
        try:
            obj = tp()
        except TypeError as exc:
            raise TypeError(f"{path}: a WEFT_STRUCT class is built by calling it with no "
                            f"arguments, which failed: {exc}") from None
        for name, v in values.items():
            setattr(obj, name, v)
        return obj
    init, late = {}, {}
    for f in dataclasses.fields(tp):
        ft = types[f.name]
        has_default = f.default is not dataclasses.MISSING or \
            f.default_factory is not dataclasses.MISSING
        if has_default and not (_is_array_annotation(ft) or is_tree_type(ft)):
            continue
        value = _build_field(ft, make, f"{path}.{f.name}")
        (init if f.init else late)[f.name] = value
    obj = tp(**init)
    for name, v in late.items():
        object.__setattr__(obj, name, v)
    return obj


def _build_field(ft, make, where):
    return build(ft, make, where) if is_tree_type(ft) else make(ft, where)
