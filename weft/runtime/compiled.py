"""One kernel compiled for one kind of device: its generated module, its ABI, its entry
functions, and how launch arguments become the entries' arguments.

This is the runtime's only view of a compiled kernel; it reads the module's ``WEFT_ABI`` (the
typed contract of :mod:`weft.transpiler.abi`) and the kernel's declared parameter types, never
the transpiler's internals.
"""
from __future__ import annotations

import re

from ..core import config
from ..core.errors import LaunchError
from ..transpiler.abi import flat_leaves
from . import args as A
from .checks import _size


class CompiledKernel:
    """``kernel`` compiled for ``device_kind`` (``"cpu"``: entries for the ``cpu`` and
    ``serial`` targets; ``"cuda"``)."""

    def __init__(self, kernel, device_kind, module, types=None):
        self.kernel = kernel
        self.key = kernel.key
        self.device_kind = device_kind
        self.module = module
        self.abi = module.WEFT_ABI[kernel.key]
        self.user_params = list(kernel.declared) if types is None else [
            (n, t) for (n, _), t in zip(kernel.declared, types)]
        self.params = [leaf for n, t in self.user_params for leaf in flat_leaves(t, n)]
        if [n for n, _ in self.params] != [p.name for p in self.abi.params]:
            from ..core.errors import InternalError
            raise InternalError(f"kernel '{self.key}': the generated module's parameters "
                                f"{[p.name for p in self.abi.params]} do not match the "
                                f"declared ones {[n for n, _ in self.params]}")
        self.types = dict(self.params)
        self._index = {n: k for k, (n, _) in enumerate(self.params)}
        self.has_structs = any(A.is_structish(t) for _, t in self.user_params)
        self._entries = {}
        self.called = set()  # entries called once (compiled or loaded by Numba)
        self._converters = [(n, t, A.fast_converter(t)) for n, t in self.params]
        self.read_indices = [self._index[n] for n in self.abi.reads]
        # (argument index, name, [(array dimension, launch axis)]) for launch.check_dims
        self.thread_indexed = [(self._index[name], name, [(k, axis or 0) for k, axis in
                                                          enumerate(axes)])
                               for name, axes in self.abi.thread_indexed]
        # (argument index, dimension) of the arrays every thread indexes by its first launch
        # index: even the fast path checks they cover a 1-D launch
        self.first_index_checks = [(self._index[name], k)
                                   for name, axes in self.abi.thread_indexed
                                   for k, axis in enumerate(axes) if not axis]

    #: how to load the module that also holds the kernel's tangent functions, when
    #: ``module`` leaves them out (a CPU release module: ``Kernel._load_module``)
    load_tangents = None

    def entry(self, kind, target):
        """The generated ``kind`` (forward, adjoint, tangent) function for ``target``."""
        fn = self._entries.get((kind, target))
        if fn is None:
            module = self.tangent_module() if kind == "tangent" else self.module
            fn = self._entries[(kind, target)] = getattr(module, self.abi.entries[kind][target])
        return fn

    def tangent_module(self):
        """The generated module holding this kernel's tangent functions: ``module`` itself,
        or one built (or loaded from the cache) on first use, with every function of
        ``module`` and the kernel's tangents (what ``weft transpile`` writes)."""
        if self.load_tangents is None:
            return self.module
        mod = getattr(self, "_tangent_module", None)
        if mod is None:
            mod = self._tangent_module = self.load_tangents()
        return mod

    def param_index(self, name):
        return self._index[name]

    def hvp_module(self):
        """The generated module of this kernel's adjoint-tangent entries (``tape.hvp``,
        ``wp.jvp(..., adjoint=True)``; :mod:`weft.transpiler.second_order`), built once and
        cached like the kernel's own module."""
        mod = getattr(self, "_hvp_module", None)
        if mod is not None:
            return mod
        from . import cache
        from ..transpiler.pipeline import second_order_source
        from ..transpiler.second_order import SecondOrderError
        name = self.module.__name__.split(".", 1)[1] + "__hvp"

        def build():
            try:
                return second_order_source(self.module.__weft_source__, self.abi)
            except SecondOrderError as exc:
                raise LaunchError(f"tape.hvp: kernel '{self.key}' has no second-order code: "
                                  f"{exc}") from None
        mod = self._hvp_module = cache.load_or_build(name, build)
        return mod

    # ------------------------------------------------------------------------ arguments
    def where(self, name):
        return f"kernel '{self.key}' argument '{name.replace('__', '.')}'"

    def flatten(self, args):
        """The user's arguments -> the generated kernel's arguments (struct members split)."""
        if not self.has_structs:
            return args
        if len(args) != len(self.user_params):
            raise self.count_error(len(args), self.user_params)
        out = []
        for (n, t), a in zip(self.user_params, args):
            A.flatten_value(self.where(n), t, a, out)
        return out

    def count_error(self, got, params):
        return LaunchError(f"kernel '{self.key}' takes {len(params)} arguments "
                           f"({', '.join(n for n, _ in params)}), got {got}")

    def bind(self, args, device):
        """The generated kernel's argument values for ``args`` (flattened; checked)."""
        convs = self._converters
        if len(args) != len(convs):
            raise self.count_error(len(args), self.params)
        out = []
        for (n, t, conv), a in zip(convs, args):
            v = conv(a, device)
            out.append(A.convert_arg(self.where(n), t, a, device) if v is None else v)
        return out


def function_source(src, fname):
    """The text of function ``fname`` (with its decorators) in module source ``src``, after
    the text of the chunk function it hands to the threads (``_wk.parallel_for(chunk, ...)``,
    the threaded CPU entries), which holds the kernel's body."""
    lines = src.splitlines()
    out = []
    inside = False
    for i, line in enumerate(lines):
        if line.startswith(f"def {fname}("):
            inside = True
            k = i
            while k > 0 and lines[k - 1].startswith("@"):
                k -= 1
            out += lines[k:i]
        elif inside and line and not line[0].isspace():
            break
        if inside:
            out.append(line)
    text = "\n".join(out) + "\n"
    launch = re.search(r"_wk\.parallel_for\((\w+),", text)
    if launch:
        text = function_source(src, launch.group(1)) + "\n" + text
    return text


#: a tiled launch runs threaded from this many tile elements per thread of a plain launch's
#: ``serial_threshold`` (a tile element costs a few instructions, a plain thread tens): 64
#: blocks of 16x16 tiles run on every core, 4 blocks of 8x8 tiles serially
TILE_ELEMENTS_PER_THREAD = 4


def cpu_target(ck, kind, dims):
    """``"serial"`` for launches too small to pay for the threads (and adjoints whose threads
    would share elements), else ``"cpu"``."""
    n = dims[0] if len(dims) == 1 else _size(dims)
    if ck.abi.tile_work:  # a launch index is a block working on tiles: weigh its elements
        if n * ck.abi.tile_work < TILE_ELEMENTS_PER_THREAD * config.serial_threshold:
            return "serial"
    elif n < config.serial_threshold:
        return "serial"
    if kind != "forward" and ck.abi.atomic_replays:
        # the replay hands out a counter's slots again: threads in the recorded forward's order
        return "serial"
    if kind == "adjoint" and len(dims) > 1 and ck.abi.tid_dims <= 1:
        # wp.tid() into one name is the first index: threads share it, so the adjoint's
        # plain accumulation at "own" indices would race; run it without threads
        return "serial"
    return "cpu"
