"""The contract between the transpiler and the runtime: what a kernel's parameters are, and
what the generated functions of a kernel take and are called.

The runtime reads a kernel's parameter types with :func:`declared_params` (from annotations:
nothing is lowered), splits struct arguments with :func:`flat_leaves`, and drives the generated
functions through the :class:`KernelABI` that every generated module records for each of its
kernels (``WEFT_ABI``). It never reaches into the transpiler's internals.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field

from ..core import types as T


# ---------------------------------------------------------------------------- parameter types

def value_type_of(value, fail):
    """The kernel type an annotation object denotes (None: generic, ``typing.Any``); ``fail``
    builds the error for anything else."""
    if value is typing.Any or isinstance(value, typing.TypeVar):
        return None
    if getattr(value, "_wp_generic_", False):  # vector(length=Any, ...): any matching value
        return value
    if isinstance(value, T.TileStackType):
        return value
    if isinstance(value, (T.ArrayType, T.TileType)):
        if value.dtype is T.bfloat16:
            raise fail("weft does not support bfloat16 arrays (use float16 or float32)")
        return value
    at = getattr(value, "_weft_array_type_", None)
    if at is not None:
        return at
    if getattr(value, "_wp_struct_", None) is not None:
        return value
    try:
        return T.as_value_type(value)
    except TypeError:
        raise fail(f"'{getattr(value, '__name__', value)}' is not a kernel type") from None


def declared_params(src, generic_ok):
    """``[(name, type or None, ast.arg)]`` of the parameters of parsed function ``src`` (a
    :class:`~weft.transpiler.state.Source`), from its annotations."""
    from ..core.errors import KernelSyntaxError, KernelTypeError
    from .source import error
    out = []
    for a in src.tree.args.args:
        if a.annotation is None:
            if not generic_ok:
                raise error(src, a, f"kernel parameter '{a.arg}' needs a type annotation",
                            KernelTypeError)
            out.append((a.arg, None, a))
            continue
        value = src.pyfunc.__annotations__.get(a.arg)
        if isinstance(value, str):
            scope = dict(src.pyfunc.__globals__)
            fn = src.pyfunc
            for n, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
                try:
                    scope[n] = cell.cell_contents
                except ValueError:
                    pass
            try:
                value = eval(value, scope)  # noqa: S307 - the user's own annotation
            except Exception as exc:  # noqa: BLE001
                raise error(src, a.annotation, f"cannot evaluate annotation: {exc}",
                            KernelTypeError) from None
        if value is str:
            raise _string_parameter(src, a)
        out.append((a.arg, value_type_of(value, lambda m, a=a: error(
            src, a.annotation, m, KernelTypeError)), a))
    if src.tree.args.vararg or src.tree.args.kwarg or src.tree.args.kwonlyargs:
        raise error(src, src.tree, "*args, **kwargs and keyword-only parameters are not "
                    "supported", KernelSyntaxError)
    return out


def _string_parameter(src, a):
    """The error for a ``str`` parameter: kernels take strings as literals only (Warp cannot
    launch one either: it has no way to pack it). Where the body passes the parameter as an
    argument that must be a literal (``tile_matmul(..., precision=mode)``), that argument is
    the one reported, as Warp's code generation reports it."""
    import ast

    from ..core.errors import KernelTypeError, KernelValueError
    from .source import error
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if isinstance(kw.value, ast.Name) and kw.value.id == a.arg:
                    fn = ast.unparse(node.func).rsplit(".", 1)[-1]
                    return error(src, kw.value, f"{fn}() {kw.arg} must be a string literal, got "
                                 f"a non-literal argument ('{a.arg}' is a str parameter)",
                                 KernelValueError)
    return error(src, a.annotation, f"kernel parameter '{a.arg}: str': a kernel takes strings "
                 "as literals only (write the string in the kernel, or pass it through "
                 "wp.constant or wp.static)", KernelTypeError)


def is_generic(t):
    """Whether declared parameter type ``t`` leaves something to the argument: ``Any``, a
    TypeVar (``wp.Float``), an array of ``Any`` dtype, ``vector(length=Any, ...)``."""
    if t is None or getattr(t, "_wp_generic_", False):
        return True
    if isinstance(t, T.ArrayType):
        return is_generic(t.dtype) or t.dtype is typing.Any or isinstance(t.dtype,
                                                                          typing.TypeVar)
    return False


def fits(declared, actual):
    """Whether a value of concrete type ``actual`` may be passed to a parameter declared
    ``declared`` (generic or not): ``Any`` takes anything, a TypeVar its constraints, an array
    of ``Any`` any array of its ndim, ``vector(length=Any, dtype=float32)`` any float32 vector."""
    if declared is None or declared is typing.Any:
        return True
    if isinstance(declared, T.ArrayType):
        return isinstance(actual, T.ArrayType) and actual.ndim == declared.ndim and \
            _element_fits(declared.dtype, actual.dtype)
    return not isinstance(actual, T.ArrayType) and _element_fits(declared, actual)


def _element_fits(declared, actual):
    if declared is typing.Any:
        return True
    if isinstance(declared, typing.TypeVar):
        constraints = declared.__constraints__
        return not constraints or any(_scalar_or_none(c) is T.scalar_of(actual)
                                      for c in constraints)
    if getattr(declared, "_wp_generic_", False):
        if not T.is_composite(actual) or actual._wp_kind_ != declared._wp_kind_ or \
                len(declared._shape_) != len(actual._shape_):
            return False
        dt = declared._wp_scalar_type_
        return all(d is typing.Any or d == a for d, a in zip(declared._shape_, actual._shape_)) \
            and (dt is typing.Any or isinstance(dt, typing.TypeVar) or dt is T.scalar_of(actual))
    return declared == actual


def _scalar_or_none(t):
    try:
        return T.as_scalar_type(t)
    except TypeError:  # bfloat16: a name, not a kernel type
        return None


def is_struct_array(t):
    return isinstance(t, T.ArrayType) and T.is_struct(t.dtype)


def flat_leaves(t, prefix):
    """``[(name, type)]`` of the ordinary values a value of type ``t`` named ``prefix`` splits
    into (itself when it is not a struct or an array of structs): struct members are
    ``prefix__member``, an array of structs one array per member."""
    if T.is_struct(t):
        out = []
        for f, ft in T.struct_fields(t).items():
            out.extend(flat_leaves(ft, f"{prefix}__{f}"))
        return out
    if is_struct_array(t):
        out = []
        for f, ft in T.struct_fields(t.dtype).items():
            if f in t.dtype._wp_struct_.shared:  # one array for every element
                out.append((f"{prefix}__{f}", ft))
                continue
            if isinstance(ft, T.ArrayType):
                raise TypeError(f"struct {t.dtype.__name__} has an array member '{f}' and cannot "
                                "be an array dtype")
            out.extend(flat_leaves(T.ArrayType(ft, t.ndim), f"{prefix}__{f}"))
        return out
    return [(prefix, t)]


# ---------------------------------------------------------------------------- the kernel ABI

@dataclass(frozen=True)
class ParamABI:
    """One parameter of the generated kernel (struct members already split out): its name,
    and the names of its adjoint and tangent parameters (None when it has none)."""

    name: str
    adjoint: typing.Optional[str] = None
    tangent: typing.Optional[str] = None


@dataclass(frozen=True)
class KernelABI:
    """What the generated functions of one kernel take and are called.

    Each entry (``forward``, ``adjoint``, ``tangent``) takes the launch dimensions, then every
    parameter, then (adjoint, tangent) the adjoint or tangent arrays and scalars of the
    parameters that have one, in parameter order; the CUDA adjoint also takes an error word.
    ``overwrites`` lists the arrays the kernel reads and then overwrites (name, read line, write
    line, writes only at the thread's own element); ``stores`` the differentiable arrays it
    stores into (name, also accumulated into); ``no_derivative`` why it has no adjoint (or
    None); ``thread_indexed`` the arrays every thread accesses at its launch indices (name, the
    launch axis of each index, None for the first), which must cover the launch; ``reads`` and
    ``writes`` the array parameters whose memory it reads (its adjoint reads again) and
    writes. Debug builds (``debug_sites`` not None) check every array access: each entry then
    takes an error word ``_dbg`` last (int64[4]: site + 1, index, axis, axis length) and
    ``debug_sites[site]`` says (array, file:line, source line, pass). A kernel with
    ``tie_arrays`` (the targets of its float ``atomic_min``/``atomic_max``) has adjoint and
    tangent entries that run twice, taking after the shadows a phase (0: count ties, 1: share)
    and a tie-count array per target (int32, the target's shape), the tangent also a tangent-sum
    array per target; after the tangent's phase 1 the runtime sets each target's tangent to
    sum / count where the count is not zero. ``geometry_ids`` lists (parameter, kind) of the
    ``uint64`` parameters used as ids of geometry objects (checked live at launch);
    ``const_indices`` (parameter, axis, lowest, highest, line) the constant indices the kernel
    uses on its array parameters (checked against the shapes at launch), ``guarded_indices``
    those of accesses that may not run (under a branch, in a loop): one outside its array makes
    the launch run the debug build, which reports the access only if it runs. ``null_arrays``: the
    kernel (or a func it calls) makes Warp's null arrays (an unset array member of a struct
    passed to a func), so it launches its debug build, as a launch given ``None`` for an array
    does: a read of one is then an error, never a stray read. ``replayed``: the arrays whose
    stores the CPU adjoint replays, restoring what they overwrote as its reverse sweep passes
    them (it takes a private copy of each, as it was before the launch). ``atomic_reads``:
    (parameter, line) of the arrays whose old value an atomic returns to the kernel (a slot
    taken from a counter): the adjoint's replay reads the element again, so a taped launch that
    changes such an array cannot be differentiated exactly (:mod:`weft.runtime.record`), except
    ``atomic_replays``: integer counters whose atomics the CPU adjoint and tangent perform
    again on a copy from before the launch, the launch and its derivatives running their threads
    in one order (serial). ``tile_work``: the element count of the largest tile the kernel makes
    (0 for a kernel without tiles): each launch index of a tiled kernel is a block's work.
    ``lane_tiles`` (CUDA): ``(axis, why)`` for each launch index a tile operation depends on:
    a launch in which it differs between the threads of a block is refused
    (:func:`weft.transpiler.cuda_lanes.lane_tiles`). ``dynamic_shared`` (CUDA): ``(kind,
    bytes)`` for each entry whose tiles need more than the 48 KiB of static shared memory a
    block has: they are carved from dynamic shared memory, which its launch gives and opts in
    to (:func:`weft.transpiler.cuda_tile_memory.dynamic_shared`)."""

    kernel: str
    tid_dims: int
    params: tuple
    entries: dict = field(default_factory=dict)
    overwrites: tuple = ()
    stores: tuple = ()
    no_derivative: typing.Optional[str] = None
    thread_indexed: tuple = ()
    reads: tuple = ()
    writes: tuple = ()
    debug_sites: typing.Optional[tuple] = None
    tie_arrays: tuple = ()
    geometry_ids: tuple = ()
    const_indices: tuple = ()
    null_arrays: bool = False
    replayed: tuple = ()
    guarded_indices: tuple = ()
    atomic_reads: tuple = ()
    atomic_replays: tuple = ()
    tile_work: int = 0
    lane_tiles: tuple = ()
    dynamic_shared: tuple = ()

    def __repr__(self):  # the dataclass's, without the CUDA tile fields when empty
        return f"{type(self).__qualname__}(" + ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
            if f.name not in ("lane_tiles", "dynamic_shared") or getattr(self, f.name)) + ")"

    @property
    def replayed_in_copies(self):
        """The arrays whose derivatives write into the copy taken before the launch (replayed
        stores, counters handed out again): each run gets a fresh copy of it."""
        return self.replayed + self.atomic_replays

    @property
    def adjoint_params(self):
        return tuple(p.adjoint for p in self.params if p.adjoint is not None)

    @property
    def tangent_params(self):
        return tuple(p.tangent for p in self.params if p.tangent is not None)

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)
