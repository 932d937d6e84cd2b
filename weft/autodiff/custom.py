"""Custom differentiable operations (Dr.Jit's ``CustomOp``): a Python computation with
derivatives written by hand, recorded on the tape as one node.

Subclass :class:`CustomOp` and call it with :func:`custom`::

    class Normalize(wp.CustomOp):
        def eval(self, v):                      # v: wp.array(dtype=wp.vec3), detached
            self.v = v
            self.out = wp.empty_like(v)
            wp.launch(normalize_kernel, dim=len(v), inputs=[v], outputs=[self.out])
            return self.out

        def forward(self):                      # tape.forward: tangents in -> tangents out
            self.set_grad_out(normalize_jvp(self.v, self.grad_in("v")))

        def backward(self):                     # tape.backward: adjoints out -> adjoints in
            self.set_grad_in("v", normalize_vjp(self.v, self.grad_out()))

    with tape:
        n = wp.custom(Normalize, v)             # one node on the tape

``eval`` runs on *detached* inputs (views of the same memory without gradients) with the active
tapes paused, so nothing it launches is recorded; its outputs get gradients when an input has
one. Inputs and outputs are arrays, numbers or PyTrees of them (:mod:`weft.pytree`); several
outputs are a tuple (``grad_out()`` and ``set_grad_out`` then take tuples). Numbers are
constants: their tangent is zero and a gradient given for them is dropped.

Inside ``backward``: ``grad_out()`` is the PyTree of the outputs' adjoints, and
``set_grad_in(name, value)`` *accumulates* ``value`` (arrays or numpy data of the input's
shape, a PyTree for a PyTree input) into the gradient of input ``name`` (an input without
gradient ignores it; an input given nothing gets nothing, as in Dr.Jit). Inside ``forward``:
``grad_in(name)`` is the PyTree of the input's tangents (zeros where none was seeded), and
``set_grad_out(value)`` gives the outputs' tangents, which is required: an output left without
one is an error. ``forward`` and ``backward`` may themselves record a ``wp.Tape``, call
``wp.jvp`` or other custom ops (AD inside AD). Errors name the op (``name()``).

If an input array is overwritten after the op and before ``backward`` (by a later launch or
copy), the tape's hazard tracking (:mod:`weft.runtime.hazards`) snapshots it and the detached
view the op kept is pointed at the snapshot, so ``backward`` reads the values ``eval`` saw.
"""
from __future__ import annotations

import contextlib
import inspect

import numpy as np

from ..core.errors import LaunchError
from ..core.pytree import flatten, match, unflatten
from ..runtime import hazards
from ..runtime.array import array
from ..runtime.array_ops import clone
from ..runtime.captured import capture_record
from ..runtime.graph import capturing
from .tape import active_tapes

__all__ = ["CustomOp", "custom", "paused_tapes"]


@contextlib.contextmanager
def paused_tapes():
    """No tape records inside the block (tapes opened inside it record as usual)."""
    stack = active_tapes()
    saved = list(stack)
    stack.clear()
    try:
        yield
    finally:
        stack[:] = saved


class CustomOp:
    """Base class of custom differentiable operations; see the module docstring."""

    def eval(self, *args, **kwargs):
        raise NotImplementedError(f"custom op '{self.name()}' defines no eval()")

    def forward(self):
        raise LaunchError(f"custom op '{self.name()}' has no forward mode: define forward() "
                          "(grad_in -> set_grad_out) to use it in tape.forward")

    def backward(self):
        raise LaunchError(f"custom op '{self.name()}' defines no backward() (grad_out -> "
                          "set_grad_in), so tape.backward cannot go through it")

    def name(self):
        """The op's name in errors (the class name unless overridden)."""
        return type(self).__name__

    # ---------------------------------------------------------- gradients (Dr.Jit's API)
    def _io(self):
        io = self.__dict__.get("_weft_io")
        if io is None:
            raise RuntimeError(f"custom op '{self.name()}': gradients are available inside "
                               "forward() and backward() of an op called with wp.custom()")
        return io

    def _need(self, phase, what):
        io = self._io()
        if io.phase != phase:
            now = f"in {io.phase}()" if io.phase else "outside forward() and backward()"
            raise RuntimeError(f"custom op '{self.name()}': {what} is for {phase}() (called "
                               f"{now})")
        return io

    def grad_in(self, name):
        """Forward mode: the tangent of input ``name`` (a PyTree like the input)."""
        io = self._need("forward", f"grad_in({name!r})")
        spec, arrays = io.input(name, f"grad_in({name!r})")
        if spec.kind == "const":
            return 0.0 if isinstance(spec.value, (int, float)) else None
        return unflatten(spec, [io.tangent_of(a) for a in arrays])

    def set_grad_out(self, value):
        """Forward mode: the tangents of the outputs (a PyTree like ``eval``'s result)."""
        io = self._need("forward", "set_grad_out()")
        values = match(io.out_spec, value, f"custom op '{self.name()}': set_grad_out()",
                       LaunchError)
        for k, (o, v) in enumerate(zip(io.outputs, values)):
            io.out_tangents[k] = None if v is None else _as_data(
                v, o, f"custom op '{self.name()}': the tangent given by set_grad_out() for "
                f"output {io.out_name(k)}")

    def grad_out(self):
        """Reverse mode: the adjoints of the outputs (a PyTree like ``eval``'s result)."""
        io = self._need("backward", "grad_out()")
        return unflatten(io.out_spec, [o.grad if o.grad is not None else _zeros(o)
                                       for o in io.outputs])

    def set_grad_in(self, name, value):
        """Reverse mode: accumulate ``value`` into the gradient of input ``name``."""
        io = self._need("backward", f"set_grad_in({name!r}, ...)")
        spec, arrays = io.input(name, f"set_grad_in({name!r}, ...)")
        what = f"custom op '{self.name()}': set_grad_in({name!r})"
        values = [value] if spec.kind == "array" else match(spec, value, what, LaunchError)
        for a, v in zip(arrays, values):
            if v is None:
                continue
            data = _as_data(v, a, f"{what}: the gradient given for input "
                            f"{io.in_name(name, a)}")
            if a.grad is not None:
                _accumulate(a.grad, data)


def _zeros(a):
    return array(np.zeros(a._data.shape, a._data.dtype), dtype=a.dtype, copy=False,
                 device=a.device)


def _host(data):
    return data if isinstance(data, np.ndarray) else data.copy_to_host()


def _as_data(v, a, what):
    """``v`` (an array, numpy data or a number) as numpy data of array ``a``'s storage shape
    and dtype; a wrong shape is a ``LaunchError`` saying ``what``."""
    if isinstance(v, array):
        data = _host(v._data)
    else:
        data = np.asarray(v)
    want = tuple(a._data.shape)
    if data.shape != want:
        if data.ndim == 0:
            return np.full(want, data, a._data.dtype)
        raise LaunchError(f"{what} has shape {_shape_of(data, v)}; the input/output has shape "
                          f"{a.shape} (dtype {getattr(a.dtype, '__name__', a.dtype)}, data "
                          f"{want})")
    return np.asarray(data, a._data.dtype)


def _shape_of(data, v):
    return f"{v.shape} (data {data.shape})" if isinstance(v, array) else f"{data.shape}"


def _accumulate(g, data):
    def add(d):
        d += data.astype(d.dtype, copy=False)
    g._write(add, "a custom op's set_grad_in")


class _IO:
    """What one call of a custom op knows about its inputs and outputs."""

    def __init__(self, op, inputs, detached, outputs, out_spec):
        self.op = op
        self.inputs = inputs            # name -> (spec, [arrays]) of the original inputs
        self.detached = detached        # name -> [detached views], aligned with the arrays
        self.outputs = outputs          # output arrays (flattened)
        self.out_spec = out_spec
        self.phase = None
        self.tangents = None            # forward mode: the tape's tangent dict
        self.out_tangents = {}

    def input(self, name, what):
        got = self.inputs.get(name)
        if got is None:
            raise LaunchError(f"custom op '{self.op.name()}': {what}: no input named {name!r} "
                              f"(its inputs: {', '.join(self.inputs) or 'none'})")
        return got

    def in_name(self, name, a):
        spec, arrays = self.inputs[name]
        if len(arrays) == 1:
            return repr(name)
        return f"{name!r} (array {next(k for k, b in enumerate(arrays) if b is a)} of "\
               f"{spec!r})"

    def out_name(self, k):
        return f"{k} of {self.out_spec!r}" if len(self.outputs) > 1 else "0"

    def tangent_of(self, a):
        t = self.tangents.get(a)
        return t if t is not None else _zeros(a)


class _Snapshots(dict):
    """``Node.snapshots``: when the hazard tracker copies an input the op read (it is about to
    be overwritten), the detached view the op kept is pointed at the copy."""

    def __init__(self, views):
        super().__init__()
        self.views = views

    def __setitem__(self, index, data):
        super().__setitem__(index, data)
        self.views[index]._data = data


class Node:
    """A custom op recorded on a tape (the tape record protocol: ``arrays``, ``backward``,
    ``forward(tangents)``, ``reads``, ``describe``)."""

    def __init__(self, op, io):
        self.op, self.io = op, io
        self.in_arrays = [a for _, arrays in io.inputs.values() for a in arrays]
        views = [v for name in io.inputs for v in io.detached[name]]
        self.snapshots = _Snapshots(views)
        self.checks = {}

    @property
    def arrays(self):
        return list({id(a): a for a in self.in_arrays + self.io.outputs}.values())

    def describe(self):
        return f"custom op '{self.op.name()}'"

    def reads(self):
        return [(k, a) for k, a in enumerate(self.in_arrays) if k not in self.snapshots]

    def io_arrays(self):
        """``(read, written)`` arrays (for ``wp.loop``'s search of a body's parameters)."""
        return list(self.in_arrays), list(self.io.outputs)

    def restart(self):
        """Read the inputs' own memory again (a graph replay has just run ``eval`` anew)."""
        for k in list(self.snapshots):
            self.snapshots.views[k]._data = self.in_arrays[k]._data
        self.snapshots.clear()
        self.checks.clear()

    def _check_unchanged(self):
        for k, crc in self.checks.items():
            if k not in self.snapshots and hazards.checksum(self.in_arrays[k]._data) != crc:
                raise LaunchError(f"an input of {self.describe()} was modified through numpy "
                                  "after the op, before backward: its derivative would read "
                                  "the new values. Modify a copy, or call backward first.")

    def backward(self):
        self._check_unchanged()
        self._run("backward", self.op.backward)

    def forward(self, tangents):
        io = self.io
        io.tangents, io.out_tangents = tangents, {}
        self._run("forward", self.op.forward)
        missing = [k for k in range(len(io.outputs)) if k not in io.out_tangents]
        if missing:
            raise LaunchError(f"{self.describe()}: forward() gave no tangent for output "
                              f"{io.out_name(missing[0])} (call set_grad_out with the "
                              "tangents of every output)")
        for k, o in enumerate(io.outputs):
            data = io.out_tangents[k]
            tangents[o] = _zeros(o) if data is None else array(
                data, dtype=o.dtype, device=o.device)
        io.tangents = None

    def _run(self, phase, fn):
        io = self.io
        io.phase = phase
        try:
            with paused_tapes():
                fn()
        finally:
            io.phase = None


def _detach(a):
    return array._wrap(a._data, a.dtype, a.device, ref=a)


def custom(op_cls, *args, **kwargs):
    """Call custom op class ``op_cls`` (a :class:`CustomOp` subclass) on the arguments of its
    ``eval``; on an active tape the call is recorded as one node. Returns ``eval``'s result."""
    if not (isinstance(op_cls, type) and issubclass(op_cls, CustomOp)):
        raise TypeError(f"wp.custom needs a subclass of wp.CustomOp, got {op_cls!r}")
    op = op_cls()
    try:
        bound = inspect.signature(op.eval).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"custom op '{op.name()}': the arguments do not match its eval(): "
                        f"{exc}") from None
    bound.apply_defaults()
    inputs, detached = {}, {}
    for name, value in bound.arguments.items():
        arrays, spec = flatten(value)
        views = [_detach(a) for a in arrays]
        inputs[name], detached[name] = (spec, arrays), views
        bound.arguments[name] = unflatten(spec, views)
    with paused_tapes():
        result = op.eval(*bound.args, **bound.kwargs)
        outputs, out_spec = flatten(result)
        outputs = _fresh_outputs(outputs, [a for _, arrs in inputs.values() for a in arrs])
    result = unflatten(out_spec, outputs)
    tapes = active_tapes()
    if tapes and outputs:
        wants_grad = any(a.requires_grad for _, arrs in inputs.values() for a in arrs)
        for o in outputs:
            if wants_grad and o.grad is None:
                o.requires_grad = True
        io = _IO(op, inputs, detached, outputs, out_spec)
        op._weft_io = io
        node = Node(op, io)
        tapes[-1].record(node)
        if capturing() is not None:
            capture_record(capturing(), tapes[-1], node)
    return result


def _fresh_outputs(outputs, in_arrays):
    """Outputs sharing memory with an input (``eval`` returned an input, or a view of one),
    or with an earlier output, are copied: an output must be its own array."""
    out, seen = [], []
    for o in outputs:
        if any(hazards.share_memory(o._data, x._data) for x in in_arrays + seen):
            o = clone(o, requires_grad=False)
        out.append(o)
        seen.append(o)
    return out

