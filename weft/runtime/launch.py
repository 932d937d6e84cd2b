"""``wp.launch``: check arguments once per signature, convert them, run the generated kernel."""
from __future__ import annotations

import numpy as np

from .. import types as T
from ..errors import LaunchError
from . import device as D
from .. import config
from .array import array
from .tape import _stack as _tape_stack


def _dims(dim):
    if isinstance(dim, (int, np.integer)):
        dims = (int(dim),)
    else:
        dims = tuple(int(d) for d in dim)
    if not 1 <= len(dims) <= 4 or any(d < 0 for d in dims):
        raise LaunchError(f"launch dim must be 1 to 4 non-negative integers, got {dim!r}")
    return dims


def user_param_types(kernel):
    """(name, type) of each kernel parameter as declared, from its annotations."""
    cached = getattr(kernel, "_user_param_types", None)
    if cached is None:
        from ..transpiler.abi import declared_params
        cached = [(n, t) for n, t, _ in declared_params(kernel.parsed(), generic_ok=False)]
        kernel._user_param_types = cached
    return cached


def param_types(kernel):
    """(name, type) of each parameter of the generated kernel: the declared ones, with struct
    parameters split into one per member (``s__x``) and arrays of structs into one array per
    member, as the lowering pass does (see :mod:`weft.runtime.struct`)."""
    cached = getattr(kernel, "_param_types", None)
    if cached is None:
        from ..transpiler.abi import flat_leaves
        cached = []
        for n, t in user_param_types(kernel):
            cached.extend(flat_leaves(t, n))
        kernel._param_types = cached
        kernel._has_structs = len(cached) != len(user_param_types(kernel)) or any(
            _is_structish(t) for _, t in user_param_types(kernel))
    return cached


def flat_leaves_of(t, name):
    from ..transpiler.abi import flat_leaves
    return flat_leaves(t, name)


def _is_structish(t):
    return T.is_struct(t) or isinstance(t, T.ArrayType) and T.is_struct(t.dtype)


def flatten_args(kernel, args):
    """The user's arguments -> the generated kernel's arguments (struct members split out)."""
    param_types(kernel)
    if not kernel._has_structs:
        return args
    ups = user_param_types(kernel)
    if len(args) != len(ups):
        raise LaunchError(f"kernel '{kernel.key}' takes {len(ups)} arguments "
                          f"({', '.join(n for n, _ in ups)}), got {len(args)}")
    out = []
    for (n, t), a in zip(ups, args):
        _flatten_value(kernel, n, t, a, out)
    return out


def _flatten_value(kernel, name, t, a, out):
    where = f"kernel '{kernel.key}' argument '{name.replace('__', '.')}'"
    if T.is_struct(t):
        if not isinstance(a, t):
            raise LaunchError(f"{where}: expected a {t.__name__} struct, got "
                              f"{type(a).__name__}")
        for f, ft in T.struct_fields(t).items():
            v = getattr(a, f)
            if isinstance(ft, T.ArrayType) and v is None:
                raise LaunchError(f"{where}: member '{f}' (an array) is not set")
            _flatten_value(kernel, f"{name}__{f}", ft, v, out)
        return
    if isinstance(t, T.ArrayType) and T.is_struct(t.dtype):
        if not isinstance(a, array) or a.dtype is not t.dtype or a.ndim != t.ndim:
            got = f"an array of {T.type_name(a.dtype)}" if isinstance(a, array) else \
                type(a).__name__
            raise LaunchError(f"{where}: expected an array of {t.dtype.__name__} with {t.ndim} "
                              f"dimension(s), got {got}")
        for f, ft in T.struct_fields(t.dtype).items():
            _flatten_value(kernel, f"{name}__{f}", T.ArrayType(ft, t.ndim), a.field(f), out)
        return
    out.append(a)


def convert_arg(kernel, pname, ptype, value, device):
    """The value the generated kernel receives for one argument (raises LaunchError)."""
    where = f"kernel '{kernel.key}' argument '{pname}'"
    if isinstance(ptype, T.ArrayType):
        if value is None:
            raise LaunchError(f"{where}: expected an array, got None")
        if not isinstance(value, array):
            raise LaunchError(f"{where}: expected a wp.array of {T.type_name(ptype.dtype)}, got "
                              f"{type(value).__name__}")
        if value.dtype != ptype.dtype:
            raise LaunchError(f"{where}: expected an array of {T.type_name(ptype.dtype)}, got "
                              f"an array of {T.type_name(value.dtype)}")
        if value.ndim != ptype.ndim:
            raise LaunchError(f"{where}: expected an array of {ptype.ndim} dimension(s), got "
                              f"{value.ndim}")
        if value.device != device:
            raise LaunchError(f"{where}: the array is on device '{value.device}' but the launch "
                              f"is on '{device}'")
        return kernel_data(value)
    if T.is_composite(ptype):
        try:
            vals = np.asarray(value, dtype=T.numpy_dtype(ptype)).reshape(-1)
        except (TypeError, ValueError):
            vals = None
        if vals is None or vals.size != ptype._length_:
            raise LaunchError(f"{where}: expected a {T.type_name(ptype)}, got {value!r}")
        return kernel_tuple(vals)
    if T.is_scalar(ptype):
        if isinstance(value, array) or isinstance(value, (list, tuple, np.ndarray)) and \
                np.ndim(value) > 0:
            raise LaunchError(f"{where}: expected a {T.type_name(ptype)} scalar, got "
                              f"{type(value).__name__}")
        if T.is_int(ptype) and isinstance(value, (float, np.floating)):
            raise LaunchError(f"{where}: expected an integer ({T.type_name(ptype)}), got "
                              f"{value!r}")
        try:
            return kernel_scalar(ptype, value)
        except (TypeError, ValueError):
            raise LaunchError(f"{where}: expected a {T.type_name(ptype)}, got {value!r}") from None
    raise LaunchError(f"{where}: unsupported parameter type {T.type_name(ptype)}")


# Numba has no CPU float16: kernels see float16 array elements as their uint16 bits (the
# generated code converts with ``_wk.h2f``/``_wk.f2h``) and float16 values as float32.

def half_bits(data):
    """Array ``data`` (numpy or device) as a kernel takes it: float16 viewed as uint16."""
    return data.view(np.uint16) if data.dtype == np.float16 else data


def kernel_data(a):
    """What a generated kernel receives for wp.array ``a`` (or its gradient or tangent)."""
    return half_bits(a._data)


def kernel_scalar(ptype, value):
    """A scalar argument as the kernel takes it (float16 as a float32 rounded to half)."""
    if ptype is T.float16:
        return np.float32(np.float16(value))
    return ptype._np_(value)


def kernel_tuple(values):
    """The components of a vector, matrix, ... argument as the kernel takes them."""
    return tuple(values.astype(np.float32) if values.dtype == np.float16 else values)


def _fast_converter(ptype):
    """A check-and-convert for the common case, or None; falls back to ``convert_arg``."""
    if T.scalar_of(ptype.dtype if isinstance(ptype, T.ArrayType) else ptype) is T.float16:
        return lambda v, device: None  # the general path converts float16
    if isinstance(ptype, T.ArrayType):
        dt, nd = ptype.dtype, ptype.ndim

        def conv(v, device):
            if type(v) is array and v.dtype is dt and v._ndim == nd and v.device is device:
                return v._data
            return None
        return conv
    if T.is_float(ptype):
        np_t = ptype._np_

        def conv(v, device):
            return np_t(v) if type(v) is float or type(v) is np_t else None
        return conv
    if T.is_int(ptype):
        np_t = ptype._np_

        def conv(v, device):
            return np_t(v) if type(v) is int else None
        return conv
    return lambda v, device: None


def _binder(kernel):
    ptypes = param_types(kernel)
    convs = [(n, t, _fast_converter(t)) for n, t in ptypes]

    def bind(args, device):
        if len(args) != len(convs):
            raise LaunchError(f"kernel '{kernel.key}' takes {len(convs)} arguments "
                              f"({', '.join(n for n, _, _ in convs)}), got {len(args)}")
        out = []
        for (n, t, conv), a in zip(convs, args):
            v = conv(a, device)
            out.append(convert_arg(kernel, n, t, a, device) if v is None else v)
        return out

    return bind


def pack(kernel, args, device):
    """The generated kernel's argument values for ``args`` (checked; raises LaunchError)."""
    bind = kernel.__dict__.get("_bind")
    if bind is None:
        bind = kernel._bind = _binder(kernel)
    return bind(args, device)


def grads_of(kernel, args, names_wanted, prefix):
    """The gradient (or tangent) arrays matching ``names_wanted`` (``adj_x``) for ``args``."""
    ptypes = param_types(kernel)
    by_name = {f"{prefix}{n}": (t, a) for (n, t), a in zip(ptypes, args)}
    out = []
    for nm in names_wanted:
        t, a = by_name[nm]
        g = a.grad if isinstance(a, array) else None
        out.append(None if g is None else kernel_data(g))
    return out


def retain_grads(kernel, args, adj_values):
    """Warp's ``retain_grad``: the adjoint of a store zeroes the stored elements' gradient,
    except for arrays made with ``retain_grad=True``, whose adjoint then works on a copy."""
    stores = kernel.meta.get("stores") or ()
    if not stores:
        return adj_values
    names = [n for n, _ in param_types(kernel)]
    slots = {n[4:]: k for k, n in enumerate(kernel.meta["adj"])}
    out = list(adj_values)
    for name, accumulated in stores:
        a = args[names.index(name)]
        k = slots.get(name)
        if k is None or out[k] is None or not getattr(a, "retain_grad", False):
            continue
        if accumulated:
            raise LaunchError(f"kernel '{kernel.key}' both stores into and reads array "
                              f"'{name}', which has retain_grad=True: weft cannot keep the "
                              "gradient of the stored elements and add the reads' gradient")
        g = out[k]
        if isinstance(g, np.ndarray):
            out[k] = g.copy()
        else:
            from numba import cuda
            out[k] = cuda.device_array_like(g)
            out[k].copy_to_device(g)
    return out


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None,
           stream=None, adjoint=False, record_tape=True, record_cmd=False, max_blocks=0,
           block_dim=256):
    """Run ``kernel`` over ``dim`` threads (an int or a tuple of up to 4 ints).

    ``inputs`` and ``outputs`` are the kernel's arguments in order. With ``adjoint=True`` the
    adjoint kernel runs instead, accumulating into ``adj_inputs``/``adj_outputs`` (default: the
    arrays' ``.grad``). Inside ``with wp.Tape()`` the launch is recorded for ``backward``.
    """
    dims = (dim,) if type(dim) is int and dim >= 0 else _dims(dim)
    device = D.get_device(device)
    args = [*inputs, *outputs]
    if kernel.__dict__.get("_has_structs", True):
        args = flatten_args(kernel, args)
    values = pack(kernel, args, device)
    if (not adjoint and not _tape_stack and device.alias == "cpu" and len(dims) == 1
            and dims[0] < config.serial_threshold):
        fast = kernel._serial_forward  # the common small launch: no further checks needed
        if fast is not None:
            fast(dims, *values)
            return
    meta = kernel.meta
    tid_dims = meta["tid_dims"]
    if tid_dims > 1 and len(dims) != tid_dims:
        raise LaunchError(f"kernel '{kernel.key}' unpacks wp.tid() into {tid_dims} indices but "
                          f"was launched with dim={dims}")
    if adjoint:
        adj = list(adj_inputs) + list(adj_outputs)
        if adj:
            if kernel._has_structs:
                raise LaunchError(f"kernel '{kernel.key}' has struct parameters: give their "
                                  "gradients through the arrays' .grad, not adj_inputs")
            adj_arrays = _explicit_adjoints(kernel, args, adj, meta["adj"])
        else:
            adj_arrays = grads_of(kernel, args, meta["adj"], "adj_")
        adj_arrays = retain_grads(kernel, args, adj_arrays)
        run(kernel, "adjoint", dims, values + adj_arrays, device)
        return
    snapshots = None
    if record_tape and _tape_stack and meta["overwrites"]:
        snapshots = _overwrite_snapshots(kernel, meta["overwrites"], args, values)
    run(kernel, "forward", dims, values, device)
    if record_tape and _tape_stack:
        _tape_stack[-1].record_launch(kernel, dims, args, device, snapshots)


CUDA_BLOCK = 256


def _size(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _overwrite_snapshots(kernel, hazards, args, values):
    """Copies of the arrays ``kernel`` reads and then overwrites (see ``weft.config``)."""
    import warnings

    from .. import config
    from ..errors import KernelError
    mode = config.overwrite_gradients
    names = [n for n, _ in param_types(kernel)]
    src = kernel.parsed()
    snaps = {}
    for name, read_line, write_line, own in hazards:
        if mode == "snapshot" and own:
            i = names.index(name)
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
        line = src.lines[write_line - 1] if write_line <= len(src.lines) else None
        err = KernelError(msg, src.filename, write_line, len(line) - len(line.lstrip()) if line
                          else 0, line, kernel.key)
        if mode == "warn":
            warnings.warn(str(err), stacklevel=3)
        else:
            raise err
    return snaps


def run(kernel, kind, dims, values, device):
    """Call the generated ``kind`` function of ``kernel`` on ``device`` over ``dims``."""
    if kind != "forward" and kernel.meta.get("no_derivative"):
        from ..errors import KernelError
        src = kernel.parsed()
        raise KernelError(kernel.meta["no_derivative"], src.filename, src.first_line, 0,
                          src.lines[src.first_line - 1], kernel.key)
    if not device.is_cuda:
        n = dims[0] if len(dims) == 1 else _size(dims)
        target = "serial" if n < config.serial_threshold else "cpu"
        if kind == "adjoint" and len(dims) > 1 and kernel.meta["tid_dims"] <= 1:
            # wp.tid() into one name is the first index: threads share it, so the adjoint's
            # plain accumulation at "own" indices would race; run it without threads
            target = "serial"
        fn = kernel.entry(kind, target)
        if kind == "forward" and target == "serial" and kernel.meta["tid_dims"] <= 1:
            kernel._serial_forward = fn
        fn(dims, *values)
        return
    n = 1
    for d in dims:
        n *= d
    if n == 0:
        return
    fn = kernel.entry(kind, "cuda")
    if kind != "forward":
        values = _cuda_shadows(kernel, kind, values)
    blocks = (n + CUDA_BLOCK - 1) // CUDA_BLOCK
    if kind != "adjoint":
        fn[blocks, CUDA_BLOCK](dims, *values)
        return
    from numba import cuda
    err = cuda.to_device(np.zeros(1, np.int32))
    fn[blocks, CUDA_BLOCK](dims, *values, err)
    if err.copy_to_host()[0]:
        from ..transpiler.cuda import CUDA_STACK
        raise RuntimeError(f"adjoint of kernel '{kernel.key}': a loop ran more than "
                           f"{CUDA_STACK} iterations in one thread, more than the CUDA target "
                           "records; the gradients of this launch are not valid. Set "
                           "WEFT_CUDA_STACK to a larger value (before importing weft).")


def _cuda_shadows(kernel, kind, values):
    """On CUDA, adjoint and tangent arrays that were not given (None) become zeroed scratch
    arrays: the CUDA code always takes views of them (see weft.transpiler.cuda)."""
    from numba import cuda
    names = [n for n, _ in param_types(kernel)]
    primal = dict(zip(names, values))
    extra = kernel.meta["adj" if kind == "adjoint" else "tan"]
    out = list(values[:len(names)])
    for name, v in zip(extra, values[len(names):]):
        if v is None:
            base = primal[name[4:]]
            v = cuda.to_device(np.zeros(base.shape, base.dtype))
        out.append(v)
    return out


def _explicit_adjoints(kernel, args, adj, names):
    ptypes = param_types(kernel)
    if len(adj) != len(ptypes):
        raise LaunchError(f"kernel '{kernel.key}': adj_inputs + adj_outputs must give one entry "
                          f"per argument ({len(ptypes)}), got {len(adj)}")
    by_name = {f"adj_{n}": a for (n, _), a in zip(ptypes, adj)}
    return [kernel_data(by_name[n]) if isinstance(by_name[n], array) else None for n in names]


def jvp(kernel, dim, inputs=(), outputs=(), tangents=None, device=None):
    """Forward mode: run the tangent kernel of ``kernel`` and return output tangents.

    ``tangents`` maps input arrays (or parameter names, for float scalars and vectors) to their
    tangent; arrays without one have tangent zero. Returns a dict mapping every output array
    to its tangent array (same shape and dtype)::

        t = wp.jvp(step, 1000, inputs=[x, v, 0.01], outputs=[x_out], tangents={x: dx})
        dx_out = t[x_out].numpy()
    """
    dims = _dims(dim)
    device = D.get_device(device)
    user_args = list(inputs) + list(outputs)
    args = flatten_args(kernel, user_args)
    values = pack(kernel, args, device)
    tangents = dict(tangents or {})
    by_id = {id(k): v for k, v in tangents.items() if not isinstance(k, str)}
    out_ids = {id(o) for o in outputs}
    # the tangent array of each user array (outputs get a zero one), flattened like the args
    user_tans, outs = [], {}
    for (n, t), a in zip(user_param_types(kernel), user_args):
        given = by_id.get(id(a)) if isinstance(t, T.ArrayType) else None
        if isinstance(t, T.ArrayType) and T.is_differentiable(t):
            if given is None and id(a) in out_ids:
                given = zeros_like_tangent(a)
            if given is not None:
                given = given if isinstance(given, array) else array(given, dtype=a.dtype,
                                                                     device=device)
                if given.shape != a.shape:
                    raise LaunchError(f"tangent of argument '{n}' has shape {given.shape}, "
                                      f"expected {a.shape}")
                if given.device != device:
                    given = given.to(device)
                if id(a) in out_ids:
                    outs[id(a)] = (a, given)
        user_tans.append(given)
    flat_tans = _flatten_tangents(kernel, user_tans)
    tan_values = {}
    for (n, t), a, given in zip(param_types(kernel), args, flat_tans):
        if isinstance(t, T.ArrayType):
            if given is None and id(a) in by_id:  # an array member of a struct argument
                given = by_id[id(a)]
                given = given if isinstance(given, array) else array(given, dtype=a.dtype,
                                                                     device=device)
            if T.is_differentiable(t):
                tan_values[f"tan_{n}"] = None if given is None else kernel_data(given)
        elif T.is_differentiable(t):
            given = tangents.get(n, by_id.get(id(a)) if not isinstance(a, (int, float)) else None)
            if given is None:
                given = np.zeros(t._length_) if T.is_composite(t) else 0
            tan_values[f"tan_{n}"] = convert_arg(kernel, f"tan_{n}", t, given, device)
    run(kernel, "tangent", dims, values + [tan_values[n] for n in kernel.meta["tan"]], device)
    return {a: g for a, g in outs.values()}


def _flatten_tangents(kernel, user_tans):
    """Tangent arrays aligned with the flattened parameters: an array of structs' tangent (an
    array of the same structs) splits into member views like the array itself."""
    if not kernel._has_structs:
        return user_tans
    out = []
    for (n, t), g in zip(user_param_types(kernel), user_tans):
        for key, lt in flat_leaves_of(t, n):
            if g is None or not isinstance(t, T.ArrayType):
                out.append(None)
                continue
            view = g
            for f in key[len(n) + 2:].split("__") if key != n else []:
                view = view.field(f)
            out.append(view)
    return out


def zeros_like_tangent(a):
    return array(np.zeros_like(a.numpy()), dtype=a.dtype, copy=False, device=a.device)
