"""``wp.Tape``: records launches and runs their adjoints backwards.

Example::

    tape = wp.Tape()
    with tape:
        wp.launch(step, dim=n, inputs=[x, v, 0.01], outputs=[x_out])
        wp.launch(loss_kernel, dim=n, inputs=[x_out, loss])
    tape.backward(loss)          # seeds loss.grad with 1
    x.grad.numpy()

A record is any object with ``backward()`` and ``arrays`` (the arrays whose gradients it reads
or writes): a recorded launch (:class:`weft.runtime.record.Launch`) or a Python callback
(:meth:`Tape.record_func`). The tape itself knows nothing about kernels.
"""
from __future__ import annotations

from ..core.errors import LaunchError
from ..core.pytree import TreeDict, pairs
from ..runtime import hazards
from ..runtime.array import array
from ..runtime.graph import capturing
from ..runtime.hooks import active_tape, tapes as _stack  # noqa: F401  (the runtime reads them)
from .seeds import seed_gradient, tangent_seed


def active_tapes():
    """The tapes recording now, innermost last (the list itself: empty when none). The list is
    :data:`weft.runtime.hooks.tapes`, where the runtime finds the tapes to record on."""
    return _stack


class Tape:
    """Records launches made inside ``with tape:`` for reverse-mode differentiation."""

    def __init__(self):
        self.launches = []
        self.scopes = []  # (launch index, name, metadata) at a begin, (index, None, None) at an end
        self.gradients = TreeDict()  # also answers PyTree and struct keys: tape.gradients[state]
        self.loss = None
        self.reads = hazards.ReadSet()  # memory the records' adjoints read again

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "its records hold this process's compiled kernels and memory; send its "
               "results instead: the gradients (tape.gradients, wp.grad(params) or each "
               "array's .grad) pickle as arrays")

    def __enter__(self):
        if _stack:  # as Warp (a custom op's backward pauses the tapes and may open its own)
            raise RuntimeError("entering a tape while one is already active: tapes do not nest")
        _stack.append(self)
        return self

    def __exit__(self, *exc):
        _stack.remove(self)
        return False

    def record(self, rec):
        """Append a record (see the module docstring). A record with ``reads()`` has the
        memory it lists protected against later writes until ``reset``
        (:mod:`weft.runtime.hazards`)."""
        self.launches.append(rec)
        self.register_reads(rec)

    def register_reads(self, rec, again=False):
        """Protect the memory ``rec`` will read again (and checksum what numpy may write);
        ``again`` when a graph replay has just run its launch anew."""
        for index, arr in rec.reads() if hasattr(rec, "reads") else ():
            self.reads.add(hazards.memory_range(arr._data), (rec, index, arr), again)
            if getattr(arr, "_exposed", False):
                rec.checks[index] = hazards.checksum(arr._data)
        hazards.watch(self)

    def record_func(self, backward, arrays, forward=None, hvp=None):
        """Record a Python callback run during ``backward`` (Warp's ``Tape.record_func``);
        ``forward(tangents)``, when given, is its forward mode (see :meth:`forward`), and
        ``hvp(tangents, adjs, tadjs)`` its step of :meth:`hvp` (see :mod:`weft.autodiff.hvp`)."""
        self.record(_Func(backward, arrays, forward, hvp))

    def forward(self, tangents):
        """Forward mode over the recorded program: ``tangents`` maps input arrays to their
        tangents (arrays or numpy data of the array's shape); every record runs its tangent in
        recording order. Returns ``{array: tangent}`` for every array the records wrote (an
        array written twice carries the tangent of its last write). Primal arrays are not
        changed."""
        _not_captured("tape.forward")
        state = {}
        for a, g in pairs(tangents or {}, "forward(tangents=...)", LaunchError):
            state[a] = tangent_seed(a, g)
        written = []
        for rec in self.launches:
            fwd = getattr(rec, "forward", None)
            if fwd is None:
                what = rec.describe() if hasattr(rec, "describe") else "a recorded callback"
                raise LaunchError(f"tape.forward: {what} has no forward mode (record_func "
                                  "callbacks need a forward= function)")
            before = dict(state)
            fwd(state)
            written += [a for a, g in state.items() if before.get(a) is not g]
        return TreeDict((a, state[a]) for a in dict.fromkeys(written))

    def backward(self, loss=None, grads=None):
        """Run the adjoints of the recorded launches in reverse order.

        ``loss``: a one-element array whose gradient is seeded with 1. ``grads``: a dict
        mapping arrays to the gradients to seed them with instead (arrays or numpy data of the
        array's shape); keys may be PyTrees of arrays with values of the same structure, and
        ``grads`` a list of ``(key, value)`` pairs (for unhashable keys such as dataclasses).
        """
        if loss is not None:
            if not isinstance(loss, array):
                raise LaunchError(f"backward(loss): loss must be a wp.array, got "
                                  f"{type(loss).__name__}")
            if loss.grad is None:
                raise LaunchError("backward(loss): the loss array was created without "
                                  "requires_grad=True, so it has no gradient to seed")
            self.loss = loss
            loss.grad.fill_(1)
        for a, g in pairs(grads or {}, "backward(grads=...)", LaunchError):
            seed_gradient(a, g)
        graph = capturing()  # as Warp: during a graph capture the adjoints are captured
        for rec in reversed(self.launches):
            for a in rec.arrays:  # as Warp: the gradients backward used are the ones zero() clears
                if a.grad is not None:
                    self.gradients[a] = a.grad
            if graph is not None:
                graph.record(rec.backward)
            else:
                rec.backward()

    def hvp(self, loss, vectors, return_grad=False, grads=None):
        """Hessian-vector products of the recorded program: ``vectors`` maps input arrays to
        directions ``v`` (arrays or numpy data of the array's shape; PyTrees as in
        ``backward(grads=...)``); returns ``{input: H v}`` with ``H`` the Hessian of ``loss``
        (a one-element array) with respect to all the inputs together, and with
        ``return_grad=True`` also ``{input: gradient}``. ``grads=`` seeds output gradients
        as in :meth:`backward` (``loss`` None): the Hessian is then that of ``<outputs,
        seeds>``. Forward over reverse on scratch gradients: ``.grad`` is left alone (see
        :mod:`weft.autodiff.hvp`)."""
        _not_captured("tape.hvp")
        from .hvp import hvp
        return hvp(self, loss, vectors, return_grad, grads)

    def jacobian(self, inputs, outputs, mode="auto", envs=None, sparsity=None):
        """The Jacobian of ``outputs`` with respect to ``inputs`` (arrays or lists of them) of
        the recorded program, dense or, with ``sparsity=``, sparse; ``mode`` "rev", "fwd" or
        "auto"; ``envs=N`` for N independent environments (see :mod:`weft.autodiff.jacobian`)."""
        _not_captured("tape.jacobian")
        from .jacobian import jacobian
        return jacobian(self, inputs, outputs, mode, envs, sparsity)

    def record_scope_begin(self, scope_name, metadata=None):
        """Begin a named group of launches (shown by :meth:`visualize`)."""
        self.scopes.append((len(self.launches), scope_name, {} if metadata is None else metadata))

    def record_scope_end(self, remove_scope_if_empty=True):
        """End the innermost group; an empty one is dropped with ``remove_scope_if_empty``."""
        depth = sum(1 if name is not None else -1 for _, name, _ in self.scopes)
        if depth <= 0:
            raise RuntimeError("ended tape scope, but scope not present")
        last = self.scopes[-1]
        if remove_scope_if_empty and last[1] is not None and last[0] == len(self.launches):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.launches), None, None))

    def visualize(self, filename=None, simplify_graph=True, hide_readonly_arrays=False,
                  array_labels=None, choose_longest_node_name=True, ignore_graph_scopes=False,
                  track_inputs=None, track_outputs=None, track_input_names=None,
                  track_output_names=None, graph_direction="LR"):
        """The recorded launches as GraphViz ``dot`` text (written to ``filename`` when given):
        kernels, the arrays they read and write, repeated launches folded (``simplify_graph``),
        scopes as clusters (see :mod:`weft.autodiff.tape_graph`)."""
        from .tape_graph import visualize
        return visualize(self, filename, simplify_graph, hide_readonly_arrays, array_labels,
                         choose_longest_node_name, ignore_graph_scopes, track_inputs,
                         track_outputs, track_input_names, track_output_names, graph_direction)

    def zero(self):
        """Zero the gradients used by ``backward`` so far (Warp's semantics: a tape that has not
        run backward yet zeros nothing)."""
        for g in self.gradients.values():
            g.zero_()

    def reset(self):
        """Forget the recorded launches and scopes and zero the gradients (which stay in
        ``gradients``, as in Warp)."""
        self.zero()
        self.launches = []
        self.scopes = []
        self.loss = None
        self.reads = hazards.ReadSet()
        hazards.unwatch(self)


def _not_captured(what):
    if capturing() is not None:
        raise LaunchError(f"{what} returns its results now, so it cannot be part of a graph "
                          "capture: call it after wp.capture_launch (tape.backward can be "
                          "captured)")


class _Func:
    def __init__(self, backward, arrays, forward=None, hvp=None):
        self.backward = backward
        self.arrays = [a for a in arrays if isinstance(a, array)]
        if forward is not None:
            self.forward = forward
        if hvp is not None:
            self.hvp_backward = hvp
