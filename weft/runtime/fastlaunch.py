"""The small-launch fast path of ``wp.launch`` (:class:`FastLaunch`): what a release CPU
kernel needs to run a small 1-D launch without the general path's bookkeeping."""
from __future__ import annotations

from ..core import config
from . import device as D
from .background import ChunkSerial
from . import hazards
from .graph import _open as _captures_open
from .hooks import tapes as _tapes  # the live list of recording tapes, read directly


class FastLaunch:
    """The common small launch without its bookkeeping: a release CPU kernel launched on at
    most ``config.serial_threshold`` threads in one dimension, with no tape recording or
    holding records, no graph capture and no FP verification, runs its serial forward entry
    after the per-argument checks of :meth:`CompiledKernel.bind` (the same converters) and the
    size check of the arrays indexed by the thread index. Anything else (a conversion the fast
    converters do not take, another device, a struct, geometry id or constant-index parameter)
    takes the general path, which checks and reports."""

    __slots__ = ("fn", "chunk", "convs", "checks", "options")

    def __init__(self, ck, fn):
        self.fn = fn
        # a ChunkSerial: its chunk called here over the launch, one frame less
        self.chunk = fn.dispatcher if isinstance(fn, ChunkSerial) else None
        self.convs = [conv for _, _, conv in ck._converters]
        self.checks = ck.first_index_checks
        self.options = ck.kernel.options

    @staticmethod
    def enable(ck, fn):
        abi = ck.abi
        if (not ck.kernel.is_generic and not ck.has_structs and not abi.geometry_ids and
                not abi.const_indices and not abi.guarded_indices and abi.tid_dims <= 1 and
                abi.debug_sites is None and not abi.tile_work):  # tiles: cpu_target decides
            ck.kernel._fast = FastLaunch(ck, fn)  # release builds only: no error word passed

    def run(self, dim, inputs, outputs, device):
        """Launch and return True, or return False for the general path."""
        if (type(dim) is not int or not 0 <= dim < config.serial_threshold or _tapes
                or hazards._LIVE or _captures_open[0] or config.verify_fp
                or (self.options.get("mode") or config.mode) != "release"):
            return False
        if device is None:
            if D._current[-1] is not D._CPU:
                return False
        elif device is not D._CPU and device != "cpu":
            return False
        if type(inputs) is not list and type(inputs) is not tuple or \
                type(outputs) is not tuple and type(outputs) is not list:
            return False  # the general path checks them
        args = [*inputs, *outputs]
        convs = self.convs
        if len(args) != len(convs):
            return False
        values = []
        for conv, a in zip(convs, args):
            v = conv(a, D._CPU)
            if v is None:
                return False
            values.append(v)
        for i, k in self.checks:
            if values[i].shape[k] < dim:
                return False
        if self.chunk is not None:
            self.chunk(0, dim, (dim,), *values)
        else:
            self.fn((dim,), *values)
        return True
