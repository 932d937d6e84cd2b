"""Launches of cooperative CPU blocks (``wp.config.enable_cpu_blocks`` and ``block_dim > 1`` on
the CPU, as Warp's fibers): the kernel compiled for the block size
(:mod:`weft.transpiler.lanes`), run once per block. A kernel whose lanes never interact is
launched as usual (one lane per block): :func:`launch_lanes` returns False for it.
"""
from __future__ import annotations

from ..core.errors import KernelError
from . import device as D
from .checks import (argument_list, check_constant_indices, check_dims, check_geometry_ids,
                     launch_dims, _size)
from .compiled import cpu_target
from .entries import _call
from .hooks import tapes as _tapes


def launch_lanes(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, adjoint,
                 record_tape, block_dim, tiled):
    """Run ``kernel`` with cooperative blocks of ``block_dim`` lanes; False when the launch
    should run as usual instead (a CUDA device, a kernel whose lanes never interact)."""
    device = D.get_device(device)
    if device.is_cuda:
        return False
    if getattr(kernel, "_weft_kind", None) != "kernel":
        return False  # wp.launch's own checks say what is wrong
    if block_dim > 1024:
        raise ValueError(f"block_dim must be at most 1024 on CPU, got {block_dim}")
    dims = tuple(dim) if tiled else ((dim,) if type(dim) is int else launch_dims(dim))
    inputs, outputs = (argument_list(kernel, n, v) for n, v in (("inputs", inputs),
                                                                ("outputs", outputs)))
    args = [*inputs, *outputs]
    types = None
    if kernel.is_generic:
        from .generics import concrete_params
        types = concrete_params(kernel.key, kernel.declared, args)
    ck = kernel.compiled("cpu", types=types, lanes=(int(block_dim), bool(tiled), len(dims)))
    if getattr(ck, "lanes", None) is None:
        return False
    if adjoint and ck.abi.no_derivative:
        src = kernel.parsed()
        raise KernelError(ck.abi.no_derivative, src.filename, src.first_line, 0,
                          src.lines[src.first_line - 1], ck.key)
    if ck.has_structs:
        args = ck.flatten(args)
    values = ck.bind(args, device)
    if ck.abi.geometry_ids:
        check_geometry_ids(ck, args, device)
    run_dims = dims + (int(block_dim),) if tiled else dims
    if ck.abi.const_indices and _size(run_dims):
        check_constant_indices(ck, args)
    check_dims(ck, dims + (1,) if tiled else dims, args)
    if adjoint:
        from .args import adjoint_arrays, explicit_adjoints, given_adjoints, retain_grads
        from .entries import run_derivative
        given = list(adj_inputs) + list(adj_outputs)
        adj = explicit_adjoints(ck, args, given) if given else adjoint_arrays(ck, args)
        values = values + retain_grads(ck, args, adj,
                                       given_adjoints(ck, args, given) if given else ())
        run_derivative(ck, "adjoint", run_dims, values, device, args)
        return True
    from .graph import capturing
    graph = capturing()
    if graph is not None:  # recorded in the graph (run at its replays), as any launch
        from .captured import capture_launch
        capture_launch(graph, ck, run_dims, values, args, device,
                       _tapes[-1] if record_tape and _tapes else None, {})
        return True
    if record_tape and _tapes:
        from .record import Launch
        _tapes[-1].record(Launch(ck, run_dims, args, device, {}))
    if _size(run_dims) == 0:
        return True
    blocks = (_size(run_dims) + block_dim - 1) // block_dim
    target = cpu_target(ck, "forward", (blocks,))  # blocks over the cores
    _call(ck, "forward", ck.entry("forward", target), run_dims, values)
    return True
