"""A launch recorded on a tape (:class:`Launch`): it runs its own adjoint, its tangent
(``tape.forward``) and its adjoint's tangent (``tape.hvp``), replaying its kernel from its
arguments or from snapshots of those overwritten since it ran (:func:`overwrite_snapshots`,
:func:`alias_snapshots`, :mod:`weft.runtime.hazards`). The tape (:mod:`weft.autodiff.tape`)
only calls it.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core import config
from ..core import types as T
from ..core.errors import KernelError, LaunchError
from . import hazards
from .args import adjoint_arrays, kernel_data, retain_grads, tangent_values, zeros_like_tangent
from .array import array
from .entries import adjoint_tangent, run_derivative


def overwrite_snapshots(ck, args, values, deferred=None):
    """Copies of the arrays the kernel reads and then overwrites (see ``weft.config``).

    An array it also writes at other threads' elements (a tree walk writing each body and
    reading its parent's, written earlier by the same thread) cannot be made exact by a copy
    from before the launch: its adjoint replays from the values after it, which is exact when
    every element read was written before it was read, or not written at all. Given a dict
    ``deferred`` (the launch runs now, not in a capture), such an array is copied into it and
    :func:`check_replay` tests that after the launch; otherwise it is refused."""
    import warnings
    mode = config.overwrite_gradients
    snaps = {}
    for name, read_line, write_line, own, exact in ck.abi.overwrites:
        i = ck.param_index(name)
        cpu = isinstance(values[i], np.ndarray)
        if name in ck.abi.replayed and cpu:
            snaps[i] = values[i].copy()  # the CPU adjoint replays its stores: exact
            continue
        if mode == "snapshot":
            # (CUDA adjoints do not replay stores: a copy there where every write is at the
            # thread's own element, exact when its reads come first)
            if (exact if cpu else own) or deferred is not None:
                data = values[i]
                (snaps if (exact if cpu else own) else deferred)[i] = data.copy() if cpu \
                    else kernel_data(args[i].to("cpu").to(args[i].device))
                continue
        why = ("" if mode != "snapshot" else " with writes at other threads' elements, which a "
               "snapshot cannot make exact;")
        msg = (f"array '{name}' is read (line {read_line}) and then overwritten (line "
               f"{write_line}) by this kernel;{why} the adjoint would replay from the "
               "overwritten values. Write to another array, or set "
               "wp.config.overwrite_gradients = 'snapshot'.")
        raise_or_warn(ck, msg, write_line, mode)
    return snaps


def raise_or_warn(ck, msg, line_no, mode):
    src = ck.kernel.parsed()
    line = src.lines[line_no - 1] if line_no <= len(src.lines) else None
    err = KernelError(msg, src.filename, line_no, len(line) - len(line.lstrip()) if line
                      else 0, line, ck.key)
    if mode == "warn":
        warnings.warn(str(err), stacklevel=4)
    else:
        raise err


def _host(data):
    return data if isinstance(data, np.ndarray) else data.copy_to_host()


def _device_like(host, data):
    if isinstance(data, np.ndarray):
        return host
    from numba import cuda
    return cuda.to_device(host)


def replay_start(ck, values, deferred):
    """Copies of the other arrays a launch with ``deferred`` arrays writes, taken before it runs,
    for :func:`check_replay`."""
    return {j: hazards.copy_of(values[j]) for j in (ck.param_index(n) for n in ck.abi.writes)
            if j not in deferred}


def check_replay(ck, dims, values, device, deferred, before):
    """After a launch that read and overwrote arrays at other threads' elements (``deferred``:
    parameter index -> copy from before it), test that its adjoint may replay from the values
    after it. The launch runs again from copies of what it wrote as they were before it
    (``before``, from :func:`replay_start`), the float elements of the deferred arrays that it
    changed set to NaN (integers start from their values after it), so that a read of one
    before the launch wrote it makes NaN where the launch made a number: then it read values
    it overwrote later, and it is refused (integer arrays must come out equal)."""
    from .entries import run
    trial = list(values)
    written = [ck.param_index(n) for n in ck.abi.writes]
    for j in written:
        if j not in deferred:
            trial[j] = before[j]
            continue
        old, new = _host(deferred[j]), _host(values[j])
        if old.dtype.kind not in "fc":
            trial[j] = _device_like(new.copy(), values[j])
            continue
        start = old.copy()
        start[~((old == new) | (np.isnan(old) & np.isnan(new)))] = np.nan
        trial[j] = _device_like(start, values[j])
    run(ck, "forward", dims, trial, device)
    for j in written:
        got, want = _host(trial[j]), _host(values[j])
        bad = (np.isnan(got) & ~np.isnan(want)) if got.dtype.kind in "fc" else \
            (got != want if j in deferred else np.zeros(1, bool))
        if bad.any():
            name = ck.params[j][0]
            names = {ck.params[i][0] for i in deferred}
            entry = next((o for o in ck.abi.overwrites if o[0] in names), None)
            line_no = entry[2] if entry else ck.kernel.parsed().first_line
            raise_or_warn(ck, f"array '{name}' came out different when the kernel ran again with "
                          "the elements it overwrote unknown (NaN): it read elements of an array "
                          "before overwriting them, at other threads' elements, which a snapshot "
                          "cannot make exact, so its adjoint would replay from the overwritten "
                          "values. Write to another array.", line_no, "error")


def atomic_start(ck, values):
    """Copies of the arrays whose old value the kernel's atomics return to it, taken before a
    taped launch, for :func:`atomic_moved`."""
    return {j: hazards.copy_of(values[j]) for j in (ck.param_index(n) for n, _ in
                                                    ck.abi.atomic_reads)}


def atomic_moved(ck, values, before, replayed=()):
    """``(name, line)`` of the first array of ``before`` that the launch changed, or None. The
    adjoint's replay reads such an element again where the kernel took the value an atomic
    returned, so it gets the value after the launch, not the one each thread got (a slot taken
    from a counter): exact only when the launch left the array as it was. ``replayed``: the
    counters whose atomics the derivatives perform again (``abi.atomic_replays``: a serial CPU
    launch, their copies from before it among the record's snapshots), never refused."""
    for name, line in ck.abi.atomic_reads:
        if name in replayed:
            continue
        j = ck.param_index(name)
        old, new = _host(before[j]), _host(values[j])
        if not np.array_equal(old, new, equal_nan=old.dtype.kind in "fc"):
            return name, line
    return None


def alias_snapshots(ck, args, values):
    """One launch reading and writing the same memory under two parameters
    (``wp.launch(k, inputs=[x], outputs=[x])``): the read side is copied first (see
    :mod:`weft.runtime.hazards`), so that the adjoint replays from the values before."""
    out = {}
    for r, w in hazards.aliased_params(ck, args):
        if r in out:
            continue
        rn, wn = ck.params[r][0], ck.params[w][0]
        if config.overwrite_gradients == "snapshot":
            out[r] = hazards.copy_of(values[r])
            continue
        msg = (f"kernel '{ck.key}' reads argument '{rn}' and writes argument '{wn}', which share "
               "memory: the adjoint would replay from the written values, so the gradient would "
               "be wrong. Pass distinct arrays, or set wp.config.overwrite_gradients = "
               "'snapshot'.")
        if config.overwrite_gradients == "warn":
            import warnings
            warnings.warn(msg, stacklevel=4)
        else:
            raise LaunchError(msg)
    return out


class Launch:
    """A launch recorded on a tape: it runs its own adjoint, replaying its kernel from its
    arguments, or from ``snapshots`` (parameter index -> data) of those that were overwritten
    since (see :mod:`weft.runtime.hazards`)."""

    __slots__ = ("compiled", "dims", "args", "device", "snapshots", "checks", "unreplayable")

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "a tape's record belongs to this process; send the tape's gradients")

    def __init__(self, compiled, dims, args, device, snapshots=None):
        self.compiled, self.dims, self.args, self.device = compiled, dims, list(args), device
        self.snapshots = snapshots or {}
        self.checks = {}  # parameter index -> CRC-32 of memory exposed to numpy
        # (array, line) whose atomic old values the adjoint cannot replay (atomic_moved)
        self.unreplayable = None

    @property
    def arrays(self):
        return [a for a in self.args if isinstance(a, array)]

    def describe(self):
        return f"the launch of kernel '{self.compiled.key}' (dim={self.dims})"

    def reads(self):
        """``(parameter index, array)`` of the memory the adjoint will read again."""
        args, snaps = self.args, self.snapshots
        return [(i, args[i]) for i in self.compiled.read_indices
                if i not in snaps and isinstance(args[i], array)]

    def backward_off(self):
        """Whether the adjoint is to be skipped: the kernel is declared
        ``enable_backward=False`` and ``wp.config.force_backward`` is off (Warp then warns and
        skips it; a kernel with nothing differentiable is skipped without a word)."""
        ck = self.compiled
        kernel = getattr(ck, "kernel", None)
        if kernel is None or config.force_backward:
            return False
        off = kernel.options.get("enable_backward")
        if off is None:
            off = kernel._module.options.get("enable_backward")
        if off is not False:
            return False
        if any(a.requires_grad for a in self.arrays):
            warnings.warn(
                f"Running the tape backwards may produce incorrect gradients because recorded "
                f"kernel {kernel.key} is configured with the option 'enable_backward=False' "
                f"(weft: set wp.config.force_backward = True, or WEFT_FORCE_BACKWARD=1, to "
                f"differentiate it anyway)", stacklevel=3)
        return True

    def refuse_unreplayable(self):
        """A launch that changed an array whose atomic old values its kernel used: its adjoint
        would replay every thread with the array's final values (a counter's final count for
        every slot), so the gradient would be wrong. Refused where a gradient flows."""
        if self.unreplayable is None or not any(a.requires_grad for a in self.arrays):
            return
        name, line = self.unreplayable
        op = "an atomic"
        src = self.compiled.kernel.parsed() if getattr(self.compiled, "kernel", None) else None
        if src is not None and 0 < line <= len(src.lines):
            import re
            m = re.search(r"\b(atomic_\w+)\s*\(", src.lines[line - 1])
            op = f"wp.{m.group(1)}" if m else op
        msg = (f"{self.describe()} uses the value {op} returns from array '{name}', which the "
               "launch changed: its adjoint replays each thread with the array's values after "
               "the launch, not the value the thread got (a slot taken from a counter), so the "
               "gradient would be wrong. weft does not record atomic results; compute the slots "
               "in a launch of their own, before the taped launches, and pass them in.")
        if src is None:
            raise KernelError(msg)
        raise_or_warn(self.compiled, msg, line, "error")

    def backward(self):
        if self.backward_off():
            return
        self.refuse_unreplayable()
        ck = self.compiled
        values = ck.bind(self.args, self.device)
        for i, crc in self.checks.items():
            if i not in self.snapshots and hazards.checksum(values[i]) != crc:
                raise LaunchError(
                    f"argument '{ck.params[i][0]}' of {self.describe()} was modified through "
                    "numpy after the launch, before backward: its adjoint cannot replay the "
                    "launch, so the gradient would be wrong. Modify a copy, or call backward "
                    "first.")
        replayed = ck.abi.replayed_in_copies
        for i, data in self.snapshots.items():
            # replay from the values before they were overwritten (a copy where the adjoint
            # replays the kernel's stores, or a counter's atomics, into it)
            values[i] = data.copy() if ck.params[i][0] in replayed else data
        adj = retain_grads(ck, self.args, adjoint_arrays(ck, self.args))
        run_derivative(ck, "adjoint", self.dims, values + adj, self.device, self.args)

    def hvp_backward(self, tangents, adjs, tadjs):
        """The reverse sweep of ``tape.hvp`` (:mod:`weft.autodiff.hvp`): the adjoint as in
        :meth:`backward` into scratch gradients ``adjs``, and its tangent along ``tangents``
        (the tangents of the arrays as this launch saw them; missing: zero) into ``tadjs``
        (both :class:`weft.autodiff.hvp.Shadows` of the arrays' gradients)."""
        if self.backward_off():
            return
        self.refuse_unreplayable()
        ck = self.compiled
        values = ck.bind(self.args, self.device)
        replayed = ck.abi.replayed_in_copies
        for i, data in self.snapshots.items():
            values[i] = data.copy() if ck.params[i][0] in replayed else data
        grads = adjoint_arrays(ck, self.args)
        scratch = [adjs.of(g) for g in grads]
        adj = retain_grads(ck, self.args, scratch)
        # a gradient the adjoint works on a copy of (retain_grad) has its tangent copied too
        tadj = [tadjs.of(g) if a is s else None if a is None else tadjs.of(g).copy()
                for g, s, a in zip(grads, scratch, adj)]
        tans = [tangents.get(a) if isinstance(a, array) else None for a in self.args]
        adjoint_tangent(ck, self.dims, self.args, values, adj, tans, tadj, self.device,
                        self.describe())

    def forward(self, tangents):
        """Forward mode over a tape (:meth:`weft.autodiff.tape.Tape.forward`): run the tangent
        kernel from the launch's arguments (its snapshots where they were overwritten since),
        reading the tangents of its arrays from ``tangents`` (missing: zero) and storing the
        tangents of the arrays it writes there. The primal arrays it writes are replaced by
        scratch copies, so no primal state changes."""
        self.refuse_unreplayable()
        ck = self.compiled
        values = ck.bind(self.args, self.device)
        for i, data in self.snapshots.items():
            values[i] = data
        written = {ck.param_index(n) for n in ck.abi.writes}
        tans, new = [], {}
        for i, ((n, t), a) in enumerate(zip(ck.params, self.args)):
            g = tangents.get(a) if isinstance(a, array) else None
            if i in written and isinstance(a, array):
                values[i] = hazards.copy_of(values[i])
                if T.is_differentiable(t):
                    g = array(g.numpy(), dtype=a.dtype, device=a.device) if g is not None \
                        else zeros_like_tangent(a)
                    new[i] = g
            tans.append(g)
        tan_values = tangent_values(ck, self.args, tans, {}, self.device)
        run_derivative(ck, "tangent", self.dims, values + tan_values, self.device, self.args,
                       tangents.get)
        for i, g in new.items():
            tangents[self.args[i]] = g
