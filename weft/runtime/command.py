"""Warp's launch objects: ``cmd = wp.launch(kernel, dim, inputs=[...], record_cmd=True)`` checks
the launch and returns a :class:`Launch` without running it; ``cmd.launch()`` runs it, as often
as wanted, after ``set_dim``/``set_param_at_index``/``set_param_by_name``/``set_params`` where
the arguments change::

    cmd = wp.launch(step, n, inputs=[x, v, 0.01], record_cmd=True)
    for frame in range(100):
        cmd.set_param_by_name("dt", dts[frame])
        cmd.launch()

As in Warp, a command's launches are not recorded on a ``wp.Tape`` (launch through ``wp.launch``
to differentiate) and a launch inside a graph capture is captured. Every change is checked when
it is made (a wrong type, index or name raises then); ``launch()`` itself binds once and then
calls the kernel's entry directly, so replaying a command costs little more than the compiled
call.
"""
from __future__ import annotations

from ..core import config
from ..core.errors import LaunchError
from . import hazards
from .graph import _open as _captures_open
from .checks import launch_dims
from .dispatch import launch_now, prepare
from .entries import bound_forward


class Launch:
    """A recorded launch (Warp's ``wp.Launch``): made by ``wp.launch(..., record_cmd=True)``,
    or empty as ``wp.Launch(kernel, device)`` (no threads and no arguments yet: set them with
    ``set_dim`` and ``set_param_*``; the checks run once every argument is set, and at the
    latest at ``launch()``)."""

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "a recorded launch binds this process's arrays and compiled kernel; send "
               "the kernel and its arguments, and launch on the other side")

    def __init__(self, kernel, device=None, hooks=None, params=None, params_addr=None,
                 bounds=None, max_blocks=0, block_dim=256, adjoint=False):
        from . import device as D
        self.kernel = kernel
        self.device = D.get_device(device)
        self.adjoint = bool(adjoint)
        self.dims = (0,)
        self._args = list(params) if params is not None else [None] * len(self._names())
        self._adj = [None] * len(self._args)
        self._bound = None
        self._check()

    @classmethod
    def recorded(cls, kernel, dims, args, device, adjoint=False, adj_args=()):
        """The command of ``wp.launch(..., record_cmd=True)``, checked now."""
        cmd = cls.__new__(cls)
        cmd.kernel, cmd.device, cmd.adjoint, cmd.dims = kernel, device, bool(adjoint), dims
        cmd._args = list(args)
        cmd._adj = list(adj_args) or [None] * len(cmd._args)
        cmd._check()
        return cmd

    # ------------------------------------------------------------------------ changes
    def set_dim(self, dim):
        """Set the launch dimensions (an int or a tuple of up to 4 ints)."""
        old, self.dims = self.dims, launch_dims(dim, "Launch.set_dim")
        self._change(lambda: setattr(self, "dims", old))

    def set_param_at_index(self, index, value, adjoint=False):
        """Set argument ``index`` (its adjoint with ``adjoint=True``) to ``value``."""
        names = self._names()
        if not isinstance(index, int) or not 0 <= index < len(names):
            raise LaunchError(f"kernel '{self.kernel.key}' has {len(names)} parameters "
                              f"({', '.join(names)}): no parameter at index {index!r}")
        target = self._adj if adjoint else self._args
        old, target[index] = target[index], value
        self._change(lambda: target.__setitem__(index, old))

    def set_param_by_name(self, name, value, adjoint=False):
        """Set the argument named ``name`` (its adjoint with ``adjoint=True``)."""
        names = self._names()
        if name not in names:
            raise ValueError(f"Argument '{name}' not found in kernel '{self.kernel.key}'")
        self.set_param_at_index(names.index(name), value, adjoint)

    def set_params(self, values):
        """Set the arguments in order (the first ``len(values)`` of them)."""
        for i, v in enumerate(values):
            self.set_param_at_index(i, v)

    # weft packs no ctypes: the values are converted as set_param_* converts them
    def set_param_at_index_from_ctype(self, index, value, adjoint=False):
        self.set_param_at_index(index, value, adjoint)

    def set_param_by_name_from_ctype(self, name, value):
        self.set_param_by_name(name, value)

    def set_params_from_ctypes(self, values):
        self.set_params(values)

    # ------------------------------------------------------------------------ running
    def launch(self, stream=None):
        """Run the launch with the current dimensions and arguments."""
        if self.adjoint or _captures_open[0] or hazards._LIVE or config.verify_fp:
            # wp.launch(kernel, dims, inputs=args, adj_inputs=adj, device, adjoint,
            # record_tape=False), whose arguments are in order already
            launch_now(self.kernel, self.dims, list(self._args), self.device, self.adjoint,
                       self._given_adj(), (), False)
            return
        if self._bound is None:  # an argument was never set: the checks say which
            self._check(complete=True)
        fn, args = self._bound
        fn(*args) if args is not None else fn()

    def _change(self, undo):
        """Check the command after a change; undo the change if it is refused."""
        try:
            self._check()
        except Exception:
            undo()
            self._check()
            raise

    def _check(self, complete=False):
        """Every launch-time check, now (nothing runs), and the forward bound for ``launch``;
        a command with arguments still unset is checked when they are (``complete``: now)."""
        self._bound = None
        if not complete and any(a is None for a in self._args):
            return
        ck, _, values = prepare(self.kernel, self.dims, self._args, self.device)
        self._bound = bound_forward(ck, self.dims, values, self.device)

    def _given_adj(self):
        return self._adj if any(a is not None for a in self._adj) else []

    def _names(self):
        return [n for n, _ in self.kernel.declared]

    def __repr__(self):
        return f"<weft Launch of kernel '{self.kernel.key}' dim={self.dims}>"
