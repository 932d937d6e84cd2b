"""``wp.launch``: run a kernel over a grid of threads; inside ``with wp.Tape()`` the launch is
recorded (:class:`weft.runtime.record.Launch`, which knows how to run its adjoint: the tape only
calls it). Small CPU launches with nothing to record take :mod:`.fastlaunch`; the rest
:func:`weft.runtime.dispatch.launch_now`. ``wp.jvp`` and the second-order launches are in
:mod:`weft.autodiff.forward_mode`.
"""
from __future__ import annotations

from ..core import config as _config
from . import device as D
from ..core.errors import LaunchError
from .checks import argument_list, launch_dims
from .command import Launch as Command
from .dispatch import launch_now


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None,
           stream=None, adjoint=False, record_tape=True, record_cmd=False, max_blocks=0,
           block_dim=None):
    """Run ``kernel`` over ``dim`` threads (an int or a tuple of up to 4 ints).

    ``inputs`` and ``outputs`` are the kernel's arguments in order. With ``adjoint=True`` the
    adjoint kernel runs instead, accumulating into ``adj_inputs``/``adj_outputs`` (default: the
    arrays' ``.grad``). Inside ``with wp.Tape()`` the launch is recorded for ``backward``.
    With ``wp.config.enable_cpu_blocks`` and ``block_dim > 1`` a CPU launch runs cooperative
    blocks of ``block_dim`` lanes (:func:`weft.runtime.lanes.launch_lanes`).
    """
    if block_dim is not None and block_dim > 1 and _config.enable_cpu_blocks and \
            not record_cmd:
        from .lanes import launch_lanes
        done = launch_lanes(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device,
                            adjoint, record_tape, block_dim, False)
        if done:
            return None
    fast = getattr(kernel, "_fast", None)
    if fast is not None and not adjoint and not record_cmd and \
            fast.run(dim, inputs, outputs, device):
        return  # a small CPU launch with nothing to record or protect
    if type(inputs) is not list or type(outputs) is not tuple or adj_inputs or adj_outputs:
        inputs, outputs, adj_inputs, adj_outputs = (
            argument_list(kernel, n, v) for n, v in (("inputs", inputs), ("outputs", outputs),
                                                     ("adj_inputs", adj_inputs),
                                                     ("adj_outputs", adj_outputs)))
    dims = (dim,) if type(dim) is int and 0 <= dim < 2 ** 62 else \
        dim if type(dim) is Blocks else launch_dims(dim)
    device = D.get_device(device)
    if device.is_cuda and type(dims) is not Blocks:  # (the threads of a kernel's tile blocks)
        dims = Blocks(dims)
        dims.block_dim = block_dim
    if record_cmd:  # Warp's launch objects: checked now, run by .launch()
        return Command.recorded(kernel, dims, [*inputs, *outputs], device, adjoint,
                                [*adj_inputs, *adj_outputs])
    return launch_now(kernel, dims, [*inputs, *outputs], device, adjoint, adj_inputs,
                      adj_outputs, record_tape)


def launch_tiled(kernel, dim=None, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(),
                 device=None, stream=None, adjoint=False, record_tape=True, record_cmd=False,
                 max_blocks=0, block_dim=None, **kwargs):
    """Run a tiled kernel over a grid of ``dim`` blocks (Warp's ``wp.launch_tiled``): the grid
    gets a trailing dimension of the block's threads, so ``i, j, lane = wp.tid()`` names the
    block and the lane, and ``i, j = wp.tid()`` the block. On the CPU a block is one thread
    (Warp resolves ``block_dim`` to 1 there): the lane is always 0, and each block's tiles are
    worked by the thread that runs it, the blocks spread over every core."""
    if dim is None:
        raise RuntimeError("Launch dimensions 'dim' argument should be passed via. keyword "
                           "args for wp.launch_tiled()")
    if block_dim is None:
        raise RuntimeError("Launch block dimension 'block_dim' argument should be passed via. "
                           "keyword args for wp.launch_tiled()")
    dims = launch_dims(dim, "launch_tiled")
    if len(dims) > 3:
        raise RuntimeError("wp.launch_tiled() requires a grid with fewer than 4 dimensions")
    if block_dim is not None and block_dim > 1 and _config.enable_cpu_blocks and \
            not record_cmd:
        from .lanes import launch_lanes
        if launch_lanes(kernel, dims, inputs, outputs, adj_inputs, adj_outputs, device,
                        adjoint, record_tape, block_dim, True):
            return None
    if D.get_device(device).is_cuda:  # a block of block_dim threads, its tiles in shared memory
        if not 1 <= block_dim <= 1024:
            raise LaunchError(f"wp.launch_tiled: block_dim must be from 1 to 1024 on CUDA, got "
                              f"{block_dim}")
        grid = Blocks(dims + (int(block_dim),))
        grid.block_dim, grid.tiled = int(block_dim), True
    else:
        grid = dims + (1,)
    return launch(kernel, grid, inputs, outputs, adj_inputs, adj_outputs, device,
                  stream, adjoint, record_tape, record_cmd, max_blocks, None)


class Blocks(tuple):
    """The launch dimensions of a CUDA launch, with the threads of a tile block
    (``block_dim``; :func:`weft.runtime.entries.cuda_block`). A tiled one (``tiled``) is the
    grid of tile blocks, then the ``block_dim`` threads of each block (the last dimension)."""

    block_dim = None
    tiled = False
