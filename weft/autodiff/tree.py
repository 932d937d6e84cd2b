"""``weft.tree``: operations on PyTrees of arrays (lists, tuples, dicts, dataclasses and
``WEFT_STRUCT`` classes; the traversal rules are in :mod:`weft.pytree`).

Example::

    @dataclasses.dataclass
    class State:
        x: wp.array(dtype=wp.vec3)
        v: wp.array(dtype=wp.vec3)

    s = wp.zeros(State, 100)            # State of two zeroed vec3 arrays of 100 elements
    wp.enable_grad(s)                   # both arrays get gradients
    ...
    tape.backward(grads={s.x: ...})
    g = wp.grad(s)                      # State(x=s.x.grad, v=s.v.grad)
    s0 = wp.detach(s)                   # views of the same memory, no gradients
    s1 = wp.clone(s)                    # copies (recorded on an active tape)

``wp.grad`` keeps its kernel meaning: ``wp.grad(f)`` of a ``wp.func`` or builtin is the
gradient function used inside kernels.
"""
from __future__ import annotations

from ..core.pytree import (TreeDict, TreeSpec, build, flatten, is_array, is_tree, is_tree_type,  # noqa: F401
    leaves, map_tree, pairs, struct_fields, unflatten)
from ..runtime import array_ops
from ..runtime.array import array
from ..stdlib.lang import GradOf

map = map_tree  # noqa: A001 - weft.tree.map, as jax.tree.map

__all__ = ["leaves", "flatten", "unflatten", "map", "is_tree", "is_array", "enable_grad",
           "disable_grad", "grad", "set_grad", "detach", "clone", "zeros", "ones", "empty",
           "zeros_like", "TreeSpec", "TreeDict"]


def _arrays(trees, what):
    out = []
    for t in trees:
        out += leaves(t)
    return out


def enable_grad(*trees):
    """Give every array of the PyTrees a gradient (``requires_grad = True``); returns the
    (single) argument, so ``s = wp.enable_grad(wp.zeros(State, n))`` works."""
    for a in _arrays(trees, "enable_grad"):
        a.requires_grad = True
    return trees[0] if len(trees) == 1 else trees


def disable_grad(*trees):
    """Drop the gradients of every array of the PyTrees (``requires_grad = False``)."""
    for a in _arrays(trees, "disable_grad"):
        a.requires_grad = False
    return trees[0] if len(trees) == 1 else trees


def _zero_grad_of(a):
    return array_ops.zeros(a.shape, dtype=a.dtype, device=a.device)


def grad(x):
    """The PyTree of the gradients of ``x``'s arrays (each ``a.grad``, the array itself, not a
    copy; a fresh zero array for an array without gradient, as Dr.Jit's ``dr.grad``). Given a
    ``wp.func`` or builtin, the kernel-language ``wp.grad(f)`` instead."""
    if not is_array(x) and not is_tree(x):
        return GradOf(x)  # wp.grad(f): raises the kernel-language error for other values
    return map_tree(lambda a: a.grad if a.grad is not None else _zero_grad_of(a), x)


grad._weft_compile_time = True  # wp.grad(f) called in a kernel runs while compiling


def set_grad(tree, value):
    """Set the gradient of every array of ``tree`` to the value at the same place in
    ``value`` (a PyTree of the same structure, or one array / number for a single-array tree);
    arrays without a gradient get one."""
    for a, g in pairs([(tree, value)], "weft.set_grad"):
        if a.grad is None:
            a.requires_grad = True
        if isinstance(g, array):
            a.grad.assign(g)
        else:
            a.grad.fill_(g) if _is_number(g) else a.grad.assign(g)
    return tree


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def detach(tree):
    """``tree`` with each array replaced by a view of the same memory without gradient (writes
    through the view change the original; the tape records nothing for it)."""
    return map_tree(_detached, tree)


def _detached(a):
    return array._wrap(a._data, a.dtype, a.device, ref=a)


def clone(tree, device=None, requires_grad=None):
    """``wp.clone`` of every array of ``tree`` (new memory; recorded on an active tape)."""
    return array_ops.clone(tree, device=device, requires_grad=requires_grad)


def zeros(tp, shape=None, device=None, requires_grad=False):
    """An instance of PyTree type ``tp`` with zeroed arrays of ``shape`` (``wp.zeros(tp,
    shape)`` does the same)."""
    return array_ops.zeros(tp, shape, device=device, requires_grad=requires_grad)


def ones(tp, shape=None, device=None, requires_grad=False):
    """An instance of PyTree type ``tp`` with arrays of ones."""
    return array_ops.ones(tp, shape, device=device, requires_grad=requires_grad)


def empty(tp, shape=None, device=None, requires_grad=False):
    """An instance of PyTree type ``tp`` with (zeroed) arrays."""
    return array_ops.empty(tp, shape, device=device, requires_grad=requires_grad)


def zeros_like(tree, requires_grad=None):
    """``tree`` with each array replaced by zeros of its shape and dtype."""
    return array_ops.zeros_like(tree, requires_grad=requires_grad)
