"""``wp.launch``: check arguments, run a generated kernel, record it on the tape
(``wp.jvp`` and the second-order launches: :mod:`.forward_mode`).

A recorded launch is a :class:`Launch`, which knows how to run its adjoint (``backward``); the
tape only calls it.
"""
from __future__ import annotations

import sys

import numpy as np

from ..core import config
from ..core import types as T
from ..core.errors import InternalError, KernelError, LaunchError
from . import device as D
from . import background, hazards
from .args import has_null_arrays, kernel_data
from .array import array
from .checks import (argument_list, check_constant_indices, check_dims,  # noqa: F401
                     check_geometry_ids, _size, index_error, launch_dims, verify_fp)
from .captured import capture_launch
from .fastlaunch import FastLaunch
from .graph import capturing
from .hooks import tapes as _tapes  # the live list of recording tapes

CUDA_BLOCK = 256


def compiled_of(kernel, device, args=None):
    """The compiled kernel a launch on ``device`` with user arguments ``args`` runs (a generic
    kernel is compiled for the arguments' types)."""
    if getattr(kernel, "_weft_kind", None) != "kernel":
        what = getattr(kernel, "__name__", type(kernel).__name__)
        raise LaunchError(f"wp.launch needs a @wp.kernel, got {what!r} ({type(kernel).__name__})")
    kind = "cuda" if device.is_cuda else "cpu"
    if not kernel.is_generic:  # the common case first: compiled already for the mode
        ck = kernel._compiled.get((kind, kernel.options.get("mode") or config.mode, None))
        if ck is not None:
            return ck
    else:
        from .generics import concrete_params
        return kernel.compiled(kind, types=concrete_params(kernel.key, kernel.declared, args))
    return kernel.compiled(kind)


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None,
           stream=None, adjoint=False, record_tape=True, record_cmd=False, max_blocks=0,
           block_dim=256):
    """Run ``kernel`` over ``dim`` threads (an int or a tuple of up to 4 ints).

    ``inputs`` and ``outputs`` are the kernel's arguments in order. With ``adjoint=True`` the
    adjoint kernel runs instead, accumulating into ``adj_inputs``/``adj_outputs`` (default: the
    arrays' ``.grad``). Inside ``with wp.Tape()`` the launch is recorded for ``backward``.
    """
    fast = getattr(kernel, "_fast", None)
    if fast is not None and not adjoint and not record_cmd and \
            fast.run(dim, inputs, outputs, device):
        return  # a small CPU launch with nothing to record or protect
    if type(inputs) is not list or type(outputs) is not tuple or adj_inputs or adj_outputs:
        inputs, outputs, adj_inputs, adj_outputs = (
            argument_list(kernel, n, v) for n, v in (("inputs", inputs), ("outputs", outputs),
                                                     ("adj_inputs", adj_inputs),
                                                     ("adj_outputs", adj_outputs)))
    dims = (dim,) if type(dim) is int and 0 <= dim < 2 ** 62 else launch_dims(dim)
    device = D.get_device(device)
    if record_cmd:  # Warp's launch objects: checked now, run by .launch()
        from .command import Launch as Command
        return Command.recorded(kernel, dims, [*inputs, *outputs], device, adjoint,
                                [*adj_inputs, *adj_outputs])
    ck, args, values = prepare(kernel, dims, [*inputs, *outputs], device)
    if adjoint:
        given = list(adj_inputs) + list(adj_outputs)
        adj = explicit_adjoints(ck, args, given) if given else adjoint_arrays(ck, args)
        values = values + retain_grads(ck, args, adj)
        graph = capturing()
        if graph is not None:
            graph.record(lambda: _run_derivative(ck, "adjoint", dims, values, device, args),
                         is_launch=True)
        else:
            _run_derivative(ck, "adjoint", dims, values, device, args)
        return
    tapes = _tapes
    recording = record_tape and tapes
    snapshots = {}
    if recording and ck.abi.overwrites:
        snapshots = overwrite_snapshots(ck, args, values)
    if recording:
        snapshots.update(alias_snapshots(ck, args, values))
    if recording and not device.is_cuda:  # backward will need the adjoint: compiled meanwhile
        background.request_adjoint(ck, dims, values, args)
    graph = capturing()
    if graph is not None:  # recorded for capture_launch; nothing runs now (as Warp)
        return capture_launch(graph, ck, dims, values, args, device,
                              tapes[-1] if recording else None, snapshots)
    if hazards.watched():
        for name in ck.abi.writes:  # protect what recorded launches will read again
            a = args[ck.param_index(name)]
            hazards.before_write(a, f"a launch of kernel '{ck.key}'")
    run(ck, "forward", dims, values, device)
    if recording:
        tapes[-1].record(Launch(ck, dims, args, device, snapshots))


def prepare(kernel, dims, args, device):
    """``(compiled kernel, arguments, bound values)`` of a launch of ``kernel`` over ``dims``
    with user arguments ``args``, after every launch-time check (nothing runs)."""
    ck = compiled_of(kernel, device, args)
    if ck.abi.debug_sites is None and (has_null_arrays(args) if ck.has_structs else
                                       any(a is None for a in args)):
        # Warp's null arrays (None, unset struct members) have no elements: the launch runs the
        # bounds-checked build, so an unguarded access is an error, never a stray read or write
        ck = kernel.compiled("cuda" if device.is_cuda else "cpu", mode="debug",
                             types=tuple(t for _, t in ck.user_params) if kernel.is_generic
                             else None)
    if ck.has_structs:
        args = ck.flatten(args)
    values = ck.bind(args, device)
    if ck.abi.geometry_ids:
        check_geometry_ids(ck, args, device)
    if ck.abi.const_indices and _size(dims):  # (a launch of no threads reads nothing)
        check_constant_indices(ck, args)
    check_dims(ck, dims, args)
    return ck, args, values


# ------------------------------------------------------------------------ running entries

def bound_forward(ck, dims, values, device):
    """``(fn, args)``: the forward of one launch, to be called later as ``fn(*args)`` exactly as
    :func:`run` would call it now (graph capture). Release CPU launches bind the entry itself;
    CUDA, debug builds and ``verify_fp`` go through :func:`run`."""
    if device.is_cuda or ck.abi.debug_sites is not None or config.verify_fp:
        return (lambda: run(ck, "forward", dims, values, device)), None
    return ck.entry("forward", cpu_target(ck, "forward", dims)), (dims, *values)


def cpu_target(ck, kind, dims):
    """``"serial"`` for launches too small to pay for the threads (and adjoints whose threads
    would share elements), else ``"cpu"``."""
    n = dims[0] if len(dims) == 1 else _size(dims)
    if n < config.serial_threshold:
        return "serial"
    if kind == "adjoint" and len(dims) > 1 and ck.abi.tid_dims <= 1:
        # wp.tid() into one name is the first index: threads share it, so the adjoint's
        # plain accumulation at "own" indices would race; run it without threads
        return "serial"
    return "cpu"


def run(ck, kind, dims, values, device):
    """Call the generated ``kind`` function of compiled kernel ``ck`` over ``dims``."""
    if kind != "forward" and ck.abi.no_derivative:
        src = ck.kernel.parsed()
        raise KernelError(ck.abi.no_derivative, src.filename, src.first_line, 0,
                          src.lines[src.first_line - 1], ck.key)
    if not device.is_cuda:
        target = cpu_target(ck, kind, dims)
        fn = ck.entry(kind, target)
        if kind == "forward" and target == "serial" and ck.kernel._fast is None:
            FastLaunch.enable(ck, fn)
        if target == "cpu" and fn not in ck.called and kind in ("forward", "adjoint") and \
                not ck.abi.tie_arrays:
            fn = background.tier(ck, kind, fn, dims, values)  # the serial twin meanwhile
        _call(ck, kind, fn, dims, values)
        return
    if _size(dims) == 0:
        return
    fn = ck.entry(kind, "cuda")
    if kind != "forward":
        values = cuda_shadows(ck, kind, values)
    blocks = (_size(dims) + CUDA_BLOCK - 1) // CUDA_BLOCK
    if kind != "adjoint":
        _call(ck, kind, fn[blocks, CUDA_BLOCK], dims, values)
        return
    from numba import cuda
    err = cuda.to_device(np.zeros(1, np.int32))
    _call(ck, kind, fn[blocks, CUDA_BLOCK], dims, values, [err])
    if err.copy_to_host()[0]:
        from ..transpiler.targets import CUDA_STACK
        raise RuntimeError(f"adjoint of kernel '{ck.key}': a loop ran more than {CUDA_STACK} "
                           "iterations in one thread, more than the CUDA target records; the "
                           "gradients of this launch are not valid. Set WEFT_CUDA_STACK to a "
                           "larger value (before importing weft).")


def _call(ck, kind, fn, dims, values, extra=()):
    if ck.abi.tie_arrays and kind != "forward":
        return _call_in_phases(ck, kind, fn, dims, values, extra)
    return _call_once(ck, kind, fn, dims, values, extra)


def _call_in_phases(ck, kind, fn, dims, values, extra):
    """A kernel with atomic min/max on float arrays: threads whose values tie share the
    derivative equally. The adjoint runs twice, counting the ties with no adjoint arrays, then
    sharing; the tangent runs twice, writing, then summing the tied tangents, which the runtime
    divides by the counts (``analyze.atomic_tie_sites``)."""
    n = len(ck.params)
    targets = [values[ck.param_index(name)] for name in ck.abi.tie_arrays]
    ties = [_zeros_like(t, np.int32) for t in targets]
    if kind == "adjoint":
        shadows = values[n:]
        scratch = [None if v is None or not ck.device_kind == "cuda" else _zeros_like(v, v.dtype)
                   for v in shadows]
        _call_once(ck, kind, fn, dims, values[:n] + scratch + [0] + ties, extra)
        _call_once(ck, kind, fn, dims, values + [1] + ties, extra)
        return
    sums = [_zeros_like(t, t.dtype) for t in targets]
    for phase in (0, 1):
        _call_once(ck, kind, fn, dims, values + [phase] + ties + sums, extra)
    tan_of = {p.name: v for p, v in zip([p for p in ck.abi.params if p.tangent is not None],
                                          values[n:])}
    for name, count, total in zip(ck.abi.tie_arrays, ties, sums):
        tan = tan_of.get(name)
        if tan is None:
            continue
        host = [a if isinstance(a, np.ndarray) else a.copy_to_host() for a in (tan, count, total)]
        tied = host[1] > 0
        host[0][tied] = host[2][tied] / host[1][tied]
        if not isinstance(tan, np.ndarray):
            tan.copy_to_device(host[0])


def _zeros_like(data, dtype):
    out = np.zeros(data.shape, dtype)
    if isinstance(data, np.ndarray):
        return out
    from numba import cuda
    return cuda.to_device(out)


def _call_once(ck, kind, fn, dims, values, extra=()):
    """Call one entry (``extra``: the target's error words); in debug builds pass the debug
    error word and raise what it reports; a failure to compile generated code is weft's bug,
    reported as such."""
    dbg = None
    if ck.abi.debug_sites is not None:
        dbg = np.zeros(4, np.int64)
        if ck.device_kind == "cuda":
            from numba import cuda
            dbg = cuda.to_device(dbg)
        extra = list(extra) + [dbg]
    _invoke(ck, kind, fn, dims, list(values) + list(extra))
    if dbg is not None:
        report = dbg if isinstance(dbg, np.ndarray) else dbg.copy_to_host()
        if report[0]:
            raise index_error(ck, kind, dims, report, values)
    if config.verify_fp:
        verify_fp(ck, kind, values)


def _invoke(ck, kind, fn, dims, values):
    """Call one entry; a failure to compile generated code is weft's bug, reported as such. The
    first call of an entry compiles it (or loads it from the cache): one that takes over a
    second says so, unless ``wp.config.quiet``."""
    first = fn not in ck.called
    try:
        if first:
            import time
            background.wait_for(ck, fn)  # its machine code may be on its way to the cache
            t0 = time.perf_counter()
            fn(dims, *values)
            ck.called.add(fn)
            took = time.perf_counter() - t0
            if took > config.compile_message_seconds and not config.quiet:
                where = getattr(fn, "__name__", kind)
                # Warp's wording ("Module ... load on device ... took ..."), which Warp's
                # tools and tests recognise
                print(f"Module {ck.key} {kind} load on device '{ck.device_kind}' took "
                      f"{took * 1e3:.0f} ms (weft: {where} compiled and ran; "
                      f"{ck.kernel.statement_count()} statements)", file=sys.stderr, flush=True)
        else:
            fn(dims, *values)
    except Exception as exc:
        from numba.core.errors import NumbaError
        if isinstance(exc, NumbaError):
            raise InternalError(f"the {kind} code generated for kernel '{ck.key}' does not "
                                f"compile:\n{exc}") from None
        raise


def cuda_shadows(ck, kind, values):
    """On CUDA, adjoint and tangent arrays that were not given (None) become zeroed scratch
    arrays: the CUDA target always takes views of them (``Target.optional_shadows``)."""
    from numba import cuda
    n = len(ck.params)
    primal = values[:n]
    shadows = [(p, getattr(p, "adjoint" if kind == "adjoint" else "tangent"))
               for p in ck.abi.params]
    out = list(primal)
    for (p, _), v in zip([s for s in shadows if s[1] is not None], values[n:]):
        if v is None:
            base = primal[ck.param_index(p.name)]
            v = cuda.to_device(np.zeros(base.shape, base.dtype))
        out.append(v)
    return out


# ------------------------------------------------------------------------ adjoints

def adjoint_arrays(ck, args):
    """The gradient arrays of ``args`` for the adjoint's parameters (None where none)."""
    out = []
    for p, a in zip(ck.abi.params, args):
        if p.adjoint is not None:
            g = a.grad if isinstance(a, array) else None
            out.append(None if g is None else kernel_data(g))
    return out


def explicit_adjoints(ck, args, given):
    """``adj_inputs + adj_outputs`` of ``launch(adjoint=True)``: one entry per argument, arrays
    of the argument's shape and dtype, or None: the argument's own ``.grad`` (as Warp)."""
    if len(given) != len(ck.params):
        raise LaunchError(f"kernel '{ck.key}': adj_inputs + adj_outputs must give one entry per "
                          f"argument ({len(ck.params)}), got {len(given)}")
    out = []
    for p, a, g in zip(ck.abi.params, args, given):
        if p.adjoint is None:
            continue
        if g is None and isinstance(a, array):
            g = a.grad
        if g is None or not isinstance(g, array):
            out.append(None)
            continue
        if g.shape != a.shape or g.dtype != a.dtype or g.device != a.device:
            raise LaunchError(f"kernel '{ck.key}': the adjoint given for argument "
                              f"'{p.name}' has shape {g.shape}, dtype {T.type_name(g.dtype)} on "
                              f"{g.device}; the argument has shape {a.shape}, dtype "
                              f"{T.type_name(a.dtype)} on {a.device}")
        out.append(kernel_data(g))
    return out


def retain_grads(ck, args, adj_values):
    """Warp's ``retain_grad``: the adjoint of a store zeroes the stored elements' gradient,
    except for arrays made with ``retain_grad=True``, whose adjoint then works on a copy."""
    if not ck.abi.stores:
        return adj_values
    slots = {p.name: k for k, p in enumerate(p for p in ck.abi.params if p.adjoint is not None)}
    out = list(adj_values)
    for name, accumulated in ck.abi.stores:
        a = args[ck.param_index(name)]
        k = slots.get(name)
        if k is None or out[k] is None or not getattr(a, "retain_grad", False):
            continue
        if accumulated:
            raise LaunchError(f"kernel '{ck.key}' both stores into and reads array '{name}', "
                              "which has retain_grad=True: weft cannot keep the gradient of the "
                              "stored elements and add the reads' gradient")
        g = out[k]
        if isinstance(g, np.ndarray):
            out[k] = g.copy()
        else:
            from numba import cuda
            out[k] = cuda.device_array_like(g)
            out[k].copy_to_device(g)
    return out


def overwrite_snapshots(ck, args, values):
    """Copies of the arrays the kernel reads and then overwrites (see ``weft.config``)."""
    import warnings
    mode = config.overwrite_gradients
    snaps = {}
    for name, read_line, write_line, own in ck.abi.overwrites:
        if mode == "snapshot" and own:
            i = ck.param_index(name)
            data = values[i]
            snaps[i] = data.copy() if isinstance(data, np.ndarray) else \
                kernel_data(args[i].to("cpu").to(args[i].device))
            continue
        why = ("" if mode != "snapshot" else " with writes at other threads' elements, which a "
               "snapshot cannot make exact;")
        msg = (f"array '{name}' is read (line {read_line}) and then overwritten (line "
               f"{write_line}) by this kernel;{why} the adjoint would replay from the "
               "overwritten values. Write to another array, or set "
               "wp.config.overwrite_gradients = 'snapshot'.")
        src = ck.kernel.parsed()
        line = src.lines[write_line - 1] if write_line <= len(src.lines) else None
        err = KernelError(msg, src.filename, write_line, len(line) - len(line.lstrip()) if line
                          else 0, line, ck.key)
        if mode == "warn":
            warnings.warn(str(err), stacklevel=3)
        else:
            raise err
    return snaps


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

    __slots__ = ("compiled", "dims", "args", "device", "snapshots", "checks")

    def __reduce__(self):
        from ..integrations.serialize import refuse
        refuse(self, "a tape's record belongs to this process; send the tape's gradients")

    def __init__(self, compiled, dims, args, device, snapshots=None):
        self.compiled, self.dims, self.args, self.device = compiled, dims, list(args), device
        self.snapshots = snapshots or {}
        self.checks = {}  # parameter index -> CRC-32 of memory exposed to numpy

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

    def backward(self):
        ck = self.compiled
        values = ck.bind(self.args, self.device)
        for i, crc in self.checks.items():
            if i not in self.snapshots and hazards.checksum(values[i]) != crc:
                raise LaunchError(
                    f"argument '{ck.params[i][0]}' of {self.describe()} was modified through "
                    "numpy after the launch, before backward: its adjoint cannot replay the "
                    "launch, so the gradient would be wrong. Modify a copy, or call backward "
                    "first.")
        for i, data in self.snapshots.items():
            values[i] = data  # replay from the values before they were overwritten
        adj = retain_grads(ck, self.args, adjoint_arrays(ck, self.args))
        _run_derivative(ck, "adjoint", self.dims, values + adj, self.device, self.args)

    def hvp_backward(self, tangents, adjs, tadjs):
        """The reverse sweep of ``tape.hvp`` (:mod:`weft.autodiff.hvp`): the adjoint as in
        :meth:`backward` into scratch gradients ``adjs``, and its tangent along ``tangents``
        (the tangents of the arrays as this launch saw them; missing: zero) into ``tadjs``
        (both :class:`weft.autodiff.hvp.Shadows` of the arrays' gradients)."""
        ck = self.compiled
        values = ck.bind(self.args, self.device)
        for i, data in self.snapshots.items():
            values[i] = data
        grads = adjoint_arrays(ck, self.args)
        scratch = [adjs.of(g) for g in grads]
        adj = retain_grads(ck, self.args, scratch)
        # a gradient the adjoint works on a copy of (retain_grad) has its tangent copied too
        tadj = [tadjs.of(g) if a is s else None if a is None else tadjs.of(g).copy()
                for g, s, a in zip(grads, scratch, adj)]
        tans = [tangents.get(a) if isinstance(a, array) else None for a in self.args]
        from ..autodiff.forward_mode import adjoint_tangent
        adjoint_tangent(ck, self.dims, self.args, values, adj, tans, tadj, self.device,
                        self.describe())

    def forward(self, tangents):
        """Forward mode over a tape (:meth:`weft.autodiff.tape.Tape.forward`): run the tangent
        kernel from the launch's arguments (its snapshots where they were overwritten since),
        reading the tangents of its arrays from ``tangents`` (missing: zero) and storing the
        tangents of the arrays it writes there. The primal arrays it writes are replaced by
        scratch copies, so no primal state changes."""
        from ..autodiff.forward_mode import tangent_values, zeros_like_tangent
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
        _run_derivative(ck, "tangent", self.dims, values + tan_values, self.device, self.args,
                        tangents.get)
        for i, g in new.items():
            tangents[self.args[i]] = g


def _run_derivative(ck, kind, dims, values, device, args, tangent_of=None):
    """:func:`run` of an adjoint or tangent launch; the meshes it queries expose the gradients
    (tangents) of their points to it meanwhile (``weft.runtime.geometry.mesh_derivatives``)."""
    if not ck.abi.geometry_ids:
        return run(ck, kind, dims, values, device)
    from .geometry import mesh_derivatives
    with mesh_derivatives(ck, args, grads=kind == "adjoint", tangent_of=tangent_of):
        run(ck, kind, dims, values, device)
