"""The checks a launch makes before anything runs (dimensions, constant indices, geometry ids,
arrays indexed by the thread index) and the reports of debug and ``verify_fp`` runs."""
from __future__ import annotations

import numbers

import numpy as np

from ..core.errors import LaunchError
from .array import array


def _size(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def launch_dims(dim, who="launch"):
    """``dim`` (an int or a sequence of 1 to 4 ints, each at least 0) as a tuple of ints."""
    dims = (dim,) if isinstance(dim, (numbers.Integral, np.integer)) and not isinstance(
        dim, bool) else dim
    try:
        dims = tuple(dims)
    except TypeError:
        raise LaunchError(f"{who}: dim must be an int or a tuple of 1 to 4 ints, got "
                          f"{dim!r}") from None
    if not 1 <= len(dims) <= 4 or not all(
            isinstance(d, (numbers.Integral, np.integer)) and not isinstance(d, bool)
            for d in dims):
        raise LaunchError(f"{who}: dim must be an int or a tuple of 1 to 4 ints, got {dim!r}")
    dims = tuple(int(d) for d in dims)
    if any(d < 0 or d >= 2 ** 63 for d in dims) or _size(dims) >= 2 ** 63:
        raise LaunchError(f"{who}: dim {dim!r} is out of range (each from 0, the total "
                          "below 2**63)")
    return dims


def outside_guarded_indices(ck, args):
    """Whether a constant index of an access that may not run (``ck.abi.guarded_indices``)
    lies outside the array the kernel is launched with: then the launch runs the debug build,
    whose checks report the access only if it runs."""
    for name, axis, lo, hi, line in ck.abi.guarded_indices:
        shape = getattr(args[ck.param_index(name)], "shape", None)
        if shape is not None and axis < len(shape) and (lo < 0 or hi >= shape[axis]):
            return True
    return False


def check_constant_indices(ck, args):
    """Constant indices the kernel writes in its source (``a[5]``) must lie inside the shapes
    of the arrays it is launched with (release kernels do not check their indices)."""
    for name, axis, lo, hi, line in ck.abi.const_indices:
        a = args[ck.param_index(name)]
        shape = getattr(a, "shape", None)
        if shape is None or axis >= len(shape):
            continue
        bad = lo if lo < 0 else hi if hi >= shape[axis] else None
        if bad is not None:
            raise LaunchError(f"{ck.where(name)} is indexed with the constant {bad} on axis "
                              f"{axis} (line {line}), outside its shape {tuple(shape)}"
                              + (": negative indices are not wrapped" if bad < 0 else ""))


def check_geometry_ids(ck, args, device):
    """Every argument the kernel uses as a geometry id must be a live id of that kind (and the
    objects live in host memory: a real GPU cannot read them yet)."""
    from ..native.geometry.descriptors import check_id
    if device.is_cuda:
        from numba import config as numba_config
        if not numba_config.ENABLE_CUDASIM:
            raise LaunchError(f"kernel '{ck.key}' queries geometry objects, which weft keeps in "
                              "host memory: launch it on the CPU (device='cpu'); CUDA kernels "
                              "read them under Numba's CUDA simulator only")
    for name, kind in ck.abi.geometry_ids:
        msg = check_id(args[ck.param_index(name)], kind, ck.where(name))
        if msg is not None:
            raise LaunchError(msg)


def check_dims(ck, dims, args):
    """Launch-time checks of ``dims`` against the kernel: as many dimensions as ``wp.tid()``
    unpacks into, and arrays indexed by the thread's indices on every path at least as large
    as the launch (else the kernel would run past their end)."""
    tid_dims = ck.abi.tid_dims
    # a tiled launch (wp.launch_tiled) adds the block's lanes as a last dimension of 1 on the
    # CPU (``block_dim`` on CUDA: ``launch.Blocks``): ``i, j = wp.tid()`` then names the
    # block, as in Warp
    if tid_dims > 1 and len(dims) != tid_dims and not (len(dims) == tid_dims + 1 and (
            dims[-1] == 1 or getattr(dims, "tiled", False))):
        raise LaunchError(f"kernel '{ck.key}' unpacks wp.tid() into {tid_dims} indices but was "
                          f"launched with dim={dims}")
    for i, name, axes in ck.thread_indexed:
        a = args[i]
        if a is None and any((dims[axis] if axis < len(dims) else 0) > 0 for _, axis in axes):
            raise LaunchError(f"kernel '{ck.key}' indexes array '{name.replace('__', '.')}' by "
                              "the thread index on every thread, but it is None (a null "
                              "array: set it, or guard its use with `if arr:`)")
        if not isinstance(a, array):
            continue
        shape = a.shape
        for k, axis in axes:
            need = dims[axis] if axis < len(dims) else 0
            if k < len(shape) and shape[k] < need:
                raise LaunchError(
                    f"kernel '{ck.key}' indexes array '{name.replace('__', '.')}' by the thread "
                    f"index on every thread, but its dimension {k} has {shape[k]} elements and "
                    f"the launch has {need} threads along it (dim={dims})")


def index_error(ck, kind, dims, report, values):
    from ..core.errors import KernelAssertionError, KernelIndexError
    array, where, text, pass_kind = ck.abi.debug_sites[int(report[0]) - 1]
    index, axis, n = (int(v) for v in report[1:4])
    if axis == -1:  # a failed assert (see weft.transpiler.forward: kernel_assert)
        return KernelAssertionError(f"kernel '{ck.key}' ({pass_kind} pass, launch dim={dims}): "
                                    f"assertion failed\n    at {where}: {text}")
    why = "negative" if index < 0 else "out of bounds"
    base = array.split(" of ")[-1].replace(".", "__")  # the adjoint of s.x -> s__x
    shape = ""
    if base in ck.types and not array.startswith("a view"):
        shape = f" with shape {values[ck.param_index(base)].shape[:ck.types[base].ndim]}"
    return KernelIndexError(
        f"kernel '{ck.key}' ({pass_kind} pass, launch dim={dims}): index {index} is {why} for "
        f"axis {axis} of array '{array}'{shape} (length {n} along that axis)\n"
        f"    at {where}: {text}")


def verify_fp(ck, kind, values):
    """``wp.config.verify_fp``: the arrays a launch wrote hold no NaN or Inf."""
    from ..core.errors import KernelFloatError
    n = len(ck.params)
    if kind == "forward":
        written = [(name, values[ck.param_index(name)]) for name in ck.abi.writes]
    else:
        field = "adjoint" if kind == "adjoint" else "tangent"
        shadows = [p for p in ck.abi.params if getattr(p, field) is not None]
        written = [(f"{getattr(p, field)}", v) for p, v in zip(shadows, values[n:])]
    for name, data in written:
        if data is None or not np.issubdtype(data.dtype, np.floating):
            continue
        host = data if isinstance(data, np.ndarray) else data.copy_to_host()
        bad = ~np.isfinite(host)
        if bad.any():
            first = np.argwhere(bad)[0]
            raise KernelFloatError(f"kernel '{ck.key}' ({kind}): array '{name}' holds "
                                   f"{int(bad.sum())} non-finite value(s) (NaN or Inf), the first "
                                   f"at index {tuple(int(i) for i in first)}")


def argument_list(kernel, name, value):
    """``value`` given for ``wp.launch``'s ``name`` (``inputs``, ``outputs``, ``adj_inputs``,
    ``adj_outputs``) as a list or tuple of the kernel's arguments; an array, a single value or
    a mapping there is a ``LaunchError``."""
    if type(value) is list or type(value) is tuple:
        return value
    what = getattr(kernel, "key", None) or getattr(kernel, "__name__", "?")
    if not isinstance(value, (array, np.ndarray, str, bytes, dict, set, numbers.Number)):
        try:
            return list(value)
        except TypeError:
            pass
    got = "a wp.array" if isinstance(value, array) else type(value).__name__
    raise LaunchError(f"kernel '{what}': wp.launch's '{name}' takes a list or tuple of the "
                      f"kernel's arguments, got {got}; write {name}=[...] (an array argument "
                      "is one item of the list)")
