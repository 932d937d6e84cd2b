"""What ``wp.launch`` does once its arguments are in order (:func:`launch_now`, which
:func:`weft.runtime.launch.launch` and the launch commands of :mod:`.command` call): the checks
and the binding of the arguments (:func:`prepare`), then the adjoint launch, or the forward
launch recorded on the tapes that record (:mod:`weft.runtime.hooks`), captured in a graph
(:mod:`.captured`) or run (:mod:`.entries`).
"""
from __future__ import annotations

from ..core import config
from ..core import types as T
from ..core.errors import LaunchError
from ..stdlib.lanes import NeedsBlockDim
from . import background, hazards
from .args import (adjoint_arrays, explicit_adjoints, given_adjoints, grant_gradients,
                   retain_grads)
from .captured import capture_launch
from .checks import (check_constant_indices, check_dims, check_geometry_ids,
                     outside_guarded_indices, _size)
from .entries import run, run_derivative
from .graph import capturing
from .hooks import tapes as _tapes  # the live list of recording tapes
from .record import (Launch, alias_snapshots, atomic_moved, atomic_start, check_replay,
                     overwrite_snapshots, replay_start)


def compiled_of(kernel, device, args=None, dims=None):
    """The compiled kernel a launch on ``device`` with user arguments ``args`` over ``dims``
    runs (a generic kernel is compiled for the arguments' types; on CUDA, a kernel whose
    ``wp.tile(x)`` or ``untile`` work with the block's threads for the launch's block size)."""
    if getattr(kernel, "_weft_kind", None) != "kernel":
        what = getattr(kernel, "__name__", type(kernel).__name__)
        raise LaunchError(f"wp.launch needs a @wp.kernel, got {what!r} ({type(kernel).__name__})")
    kind = "cuda" if device.is_cuda else "cpu"
    types = None
    if not kernel.is_generic:  # the common case first: compiled already for the mode
        ck = kernel._compiled.get((kind, kernel.options.get("mode") or config.mode, None))
        if ck is not None:
            return ck
    else:
        from .generics import concrete_params
        types = concrete_params(kernel.key, kernel.declared, args)
    if kind == "cuda" and types in getattr(kernel, "_cuda_blocks", ()):
        return _for_block_size(kernel, dims, types)
    try:
        return kernel.compiled(kind, types=types)
    except NeedsBlockDim:
        if kind != "cuda" or dims is None:
            raise
        if getattr(kernel, "_cuda_blocks", None) is None:
            kernel._cuda_blocks = set()  # (compiled for the block size from now on)
        kernel._cuda_blocks.add(types)
        return _for_block_size(kernel, dims, types)


def _for_block_size(kernel, dims, types):
    """``kernel`` compiled for CUDA blocks of the size a launch over ``dims`` runs
    (:func:`weft.runtime.entries.block_threads`)."""
    from .entries import block_threads
    block = max(1, block_threads(dims))
    tiled = bool(getattr(dims, "tiled", False))
    return kernel.compiled("cuda", types=types,
                           lanes=(block, tiled, len(dims) - 1 if tiled else len(dims)))


def checked_mode(ck, dims, args):
    """The checked build a launch of release kernel ``ck`` with (flattened) ``args`` must run,
    or None. Warp's null arrays (None, unset struct members) have no elements, and a constant
    index on an access that may not run can lie outside its array (``if sparse: colind[0, k]``
    with colind empty): the ``guarded`` build checks the accesses at constant indices, and every
    access of the arrays passed null and of arrays that are not kernel parameters (views,
    locals, funcs' parameters), so such an access is an error if it runs, never a stray read or
    write; the rest compiles as in release. A kernel that makes null arrays itself runs the
    debug build (every access checked)."""
    if ck.abi.null_arrays:
        return "debug"
    nulls = [n for (n, t), a in zip(ck.params, args) if a is None and
             isinstance(t, T.ArrayType)]
    if nulls:
        return "guarded:" + ",".join(sorted(nulls))
    if ck.abi.guarded_indices and _size(dims) and outside_guarded_indices(ck, args):
        return "guarded"
    return None


def prepare(kernel, dims, args, device):
    """``(compiled kernel, arguments, bound values)`` of a launch of ``kernel`` over ``dims``
    with user arguments ``args``, after every launch-time check (nothing runs)."""
    ck = compiled_of(kernel, device, args, dims)
    args = ck.flatten(args)  # (struct members split; the arguments as they are otherwise)
    mode = checked_mode(ck, dims, args) if ck.abi.debug_sites is None else None
    if mode is not None:
        ck = kernel.compiled("cuda" if device.is_cuda else "cpu", mode=mode,
                             types=tuple(t for _, t in ck.user_params) if kernel.is_generic
                             else None)
    values = ck.bind(args, device)
    if ck.abi.geometry_ids:
        check_geometry_ids(ck, args, device)
    if ck.abi.const_indices and _size(dims):  # (a launch of no threads reads nothing)
        check_constant_indices(ck, args)
    check_dims(ck, dims, args)
    return ck, args, values


def launch_now(kernel, dims, args, device, adjoint, adj_inputs, adj_outputs, record_tape):
    """What ``wp.launch`` does once its arguments are in order (``dims`` a tuple of ints,
    ``args`` the list of inputs and outputs, ``device`` a Device): the adjoint launch, or the
    forward recorded on the innermost tape (``record_tape``), captured in a graph or run, after
    protecting the memory recorded launches will read again."""
    ck, args, values = prepare(kernel, dims, args, device)
    if adjoint:
        given = list(adj_inputs) + list(adj_outputs)
        adj = explicit_adjoints(ck, args, given) if given else adjoint_arrays(ck, args)
        values = values + retain_grads(ck, args, adj,
                                       given_adjoints(ck, args, given) if given else ())
        graph = capturing()
        if graph is not None:
            graph.record(lambda: run_derivative(ck, "adjoint", dims, values, device, args),
                         is_launch=True)
        else:
            run_derivative(ck, "adjoint", dims, values, device, args)
        return
    tapes = _tapes
    recording = record_tape and tapes
    snapshots, deferred = {}, {}
    if recording and config.grad_all_arrays:
        grant_gradients(ck, args)
    graph = capturing()
    if recording and ck.abi.overwrites:
        snapshots = overwrite_snapshots(ck, args, values, None if graph is not None else deferred)
    if recording:
        snapshots.update(alias_snapshots(ck, args, values))
    if recording and not device.is_cuda:  # backward will need the adjoint: compiled meanwhile
        background.request_adjoint(ck, dims, values, args)
    if graph is not None:  # recorded for capture_launch; nothing runs now (as Warp)
        return capture_launch(graph, ck, dims, values, args, device,
                              tapes[-1] if recording else None, snapshots)
    if hazards.watched():
        for name in ck.abi.writes:  # protect what recorded launches will read again
            a = args[ck.param_index(name)]
            hazards.before_write(a, f"a launch of kernel '{ck.key}'")
    before = replay_start(ck, values, deferred) if deferred else None
    atomics = atomic_start(ck, values) if recording and ck.abi.atomic_reads else None
    # counters whose atomics the derivatives hand out again (CPU): the threads run in one order
    counters = ck.abi.atomic_replays if atomics is not None and not device.is_cuda else ()
    run(ck, "forward", dims, values, device, "serial" if counters else None)
    if deferred:
        check_replay(ck, dims, values, device, deferred, before)
    if recording:
        rec = Launch(ck, dims, args, device, snapshots)
        if atomics is not None:
            rec.unreplayable = atomic_moved(ck, values, atomics, counters)
            for name in counters:
                j = ck.param_index(name)
                rec.snapshots[j] = atomics[j]  # the counter as the forward found it
        tapes[-1].record(rec)
