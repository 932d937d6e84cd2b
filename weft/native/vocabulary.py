"""The vocabulary of generated code: every call a generated module makes, one entry each.

Generated functions (forward, adjoint, tangent and second order, for every target) call a
fixed set of functions: numpy's math (``np.sin``) and two of the math module's
(``math.erf``); weft's helpers (``_wk.atomic_add``), among them the CUDA spellings of numpy's
math (``_wk.sin_f32``, libdevice) and the float32 functions of ``fast_math`` modules
(``_wk.fm_sin``); the scalar casts (``float32(x)``); a few Python builtins (``range``,
``abs``); Numba's CUDA intrinsics (``cuda.grid``); second order's own two helpers
(``_w2.like``). Each has one :class:`Entry` in :data:`CALLS`, keyed by its spelling in
generated code:

- ``pure``: evaluating it has no effect besides its value, so ``prune`` drops one whose value
  nothing reads (a call not marked pure is kept, whatever it does);
- ``arity``: its number of arguments (None: it varies);
- ``second``: how a tangent passes through it, for second order (None: it has no rule, and
  an active argument is reported):

  ============= ==============================================================================
  ``rule``      the tangent from ``derivative``
  ``zero``      its result carries no derivative (integers, rounding, random numbers, checks)
  ``cast``      the tangent is cast as the value is (``float32(x)``)
  ``same``      the tangent is the argument's (float16 rounding keeps the derivative, as Warp)
  ``alloc``     a new buffer (its tangent: zeros of the same shape)
  ``linear``    linear in its first argument, an array (a loop stack grown, a private buffer)
  ``accumulate`` adds (``atomic_add``) or subtracts its last argument into an array element
  ``reduce``    sums a private buffer into an array (``_wk.reduce_private``)
  ``launch``    runs a chunk function on the threads (``_wk.parallel_for``)
  ``insert``    ``tuple_insert(t, k, x)``: the tangent is the same write of the tangents
  ``linear:k``  linear in its argument ``k`` alone; the others are shapes, offsets or values it
                is piecewise constant in (``tile_sum_adj(t, g)``: ``g``'s tangent, ``t``'s shape)
  ``store``     writes its last argument into the array of its first (``store:k``: argument
                ``k``): the tangent is the same write of the tangents, zeros for a constant value
  ``bilinear``  linear in each of its first two arguments (``tile_matmul(a, b)``)
  ``joint``     linear in all its arguments together (``tile_diag_add(a, d)``)
  ``jvp``       a tile operation with a tangent function (:data:`TILE_JVP`)
  ``extreme``   ``tile_max``/``tile_min``: the tangent of the element the value comes from
  ============= ==============================================================================

- ``derivative`` (a :class:`Derivative`): for the differentiable math, written once, as small
  expression templates that both the first-order rules (:mod:`weft.stdlib.derivatives`, which
  :mod:`weft.stdlib.scalar`'s builtins call) and second order
  (:mod:`weft.transpiler.second_order_rules`) render;
- ``math``: for the spellings of a numpy math function, its numpy name (``cos`` for
  ``_wk.cos_f32``), and ``cuda``: the libdevice function CUDA code calls for it.

What the compiler knows of these calls derives from here: which are pure (``prune``), how a
target spells a math function (:func:`spelling`; ``targets``), the libdevice bindings of the
CUDA helpers (:data:`MATH`, :data:`ARITY2`), the casts a generated module imports from numpy
(:data:`SCALAR_CASTS`; ``assemble``), the derivative of every math call in both orders, and
second order's treatment of every call. ``tests/transpiler/test_vocabulary.py`` checks that
every call of a broad corpus of generated code has its entry here, with its arity.

A derivative template is a Python expression over the call's arguments (named by
``Derivative.args``), its result ``r``, names bound by ``Derivative.lets`` (computed once), the
seed ``g`` (a partial: one argument's adjoint contribution, linear in ``g``; the tangent is the
sum of the partials with ``g`` the arguments' tangents) or the tangents ``t_<arg>``
(``Derivative.jvp``: the tangent, where it is written otherwise). Functions are numpy math
functions by name (``cos(x)``, spelled for the target), numbers are constants of the first
argument's type; an argument that is a constant of the call (``complement``) decides a
conditional expression when the code is written. A call in a branch of a conditional is
computed before it (generated conditionals pick between values).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from . import tile_kernels as _tile_kernels


@dataclass(frozen=True)
class Derivative:
    """The derivative of a call (see the module's docstring for the templates)."""

    args: tuple                 # the arguments' names, in order
    partials: tuple             # per argument: its adjoint contribution (None: no derivative)
    jvp: Optional[str] = None   # the tangent over t_<arg>, when not the sum of the partials
    lets: tuple = ()            # ((name, template), ...), each computed once where used


@dataclass(frozen=True)
class Entry:
    """One call generated code makes (see the module's docstring)."""

    name: str
    pure: bool
    arity: Optional[int]
    second: Optional[str] = None
    derivative: Optional[Derivative] = None
    math: Optional[str] = None     # the numpy math function it spells
    cuda: Optional[str] = None     # ... and that function's libdevice name
    target: str = "cpu"            # whose spelling it is (see :func:`spelling`)


def _d(partials, args="x", jvp=None, lets=()):
    partials = (partials,) if isinstance(partials, str) else tuple(partials)
    return Derivative(tuple(args.split()), partials, jvp, tuple(lets))


#: zero almost everywhere (piecewise constant)
_FLAT = "flat"

# numpy's math functions, as the builtins' rules call them (``np.<name>``):
#   numpy name   libdevice    fast_math  derivative
_MATH_FUNCTIONS = (
    ("sin", "sin", True, _d("g * cos(x)")),
    ("cos", "cos", True, _d("g * -sin(x)")),
    ("tan", "tan", True, _d("g * (1.0 + r * r)")),
    ("exp", "exp", True, _d("g * r")),
    ("log", "log", True, _d("g * (1.0 / x)")),
    ("log2", "log2", True, _d("g * (1.4426950408889634 / x)")),
    ("log10", "log10", True, _d("g * (0.4342944819032518 / x)")),
    ("sqrt", "sqrt", False, _d("g * (0.5 / r)")),
    ("tanh", "tanh", True, _d("g * (1.0 - r * r)")),
    ("sinh", "sinh", True, _d("g * cosh(x)")),
    ("cosh", "cosh", True, _d("g * sinh(x)")),
    ("arcsin", "asin", False, _d("g * (1.0 / sqrt(1.0 - x * x))")),
    ("arccos", "acos", False, _d("g * (-1.0 / sqrt(1.0 - x * x))")),
    ("arctan", "atan", False, _d("g * (1.0 / (1.0 + x * x))")),
    ("arctan2", "atan2", False, _d(("g * x / d", "-g * y / d"), "y x",
                                   jvp="(t_y * x - t_x * y) / (x * x + y * y)",
                                   lets=(("d", "x * x + y * y"),))),
    ("floor", "floor", False, _FLAT),
    ("ceil", "ceil", False, _FLAT),
    ("trunc", "trunc", False, _FLAT),
    ("rint", "rint", False, _FLAT),
    ("abs", "fabs", False, _d("-g if x < 0.0 else g")),
    ("power", "pow", False, _d(("g * y * power(x, y - 1.0)",
                                "g * (log(x) if x > 0.0 else 0.0) * r"), "x y")),
    ("fmod", "fmod", False, _d(("g", "-g * trunc(x / y)"), "x y", jvp="t_x - t_y * trunc(x / y)")),
    ("copysign", "copysign", False, _d(("g if copysign(1.0, x) == copysign(1.0, y) else -g",
                                        None), "x y")),
    ("cbrt", "cbrt", False, _d("g * (0.3333333333333333 / (r * r))")),
)
_BINARY = {"arctan2", "power", "fmod", "copysign"}

#: numpy math name -> the libdevice base name CUDA code calls (``sinf``/``sin`` by precision,
#: bound by ``cuda_helpers`` as ``_wk.<name>_f32``/``_f64``)
MATH = {n: cuda for n, cuda, _, _ in _MATH_FUNCTIONS}
#: the numpy math functions of two arguments
ARITY2 = frozenset(_BINARY)
#: the float32 functions a ``fast_math`` CPU module calls from :mod:`weft.native.fastmath`
#: (as ``_wk.fm_<name>``): arithmetic only, so LLVM vectorises the loops calling them
FAST_MATH = frozenset(n for n, _, fast, _ in _MATH_FUNCTIONS if fast)
#: the scalar casts a generated module imports from numpy (``bool`` is ``bool_`` there, and
#: ``float16`` rounds a float32 to half precision: ``_wk.round_f16``)
SCALAR_CASTS = ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                "uint64", "float32", "float64")

#: the spellings of math: the CPU's (numpy's), a float32 call's in a ``fast_math`` CPU module,
#: CUDA's at each precision (libdevice, through ``cuda_helpers``)
TARGETS = ("cpu", "fast_math", "cuda_f32", "cuda_f64")


def spelling(fn, target="cpu"):
    """How generated code for ``target`` (one of :data:`TARGETS`) calls numpy math function
    ``fn`` (``"cos"``): ``np.cos``, ``_wk.fm_cos``, ``_wk.cos_f32``; numpy's where the target
    has no function of its own."""
    if target.startswith("cuda_") and fn in MATH:
        return f"_wk.{fn}_{target[5:]}"
    if target == "fast_math" and fn in FAST_MATH:
        return f"_wk.fm_{fn}"
    return f"np.{fn}"


# weft's helpers (``_wk.<name>``) besides math: name -> (pure, arity, second order)
_HELPERS = {
    # launches and their threads
    "launch_size": (True, 1, "zero"), "first_index": (True, 2, "zero"),
    "nonneg": (False, 1, "zero"), "assume_shape": (False, 3, "zero"),
    "thread_id": (False, 0, "zero"), "parallel_for": (False, 3, "launch"),
    "private_ok": (False, 1, "zero"), "private_buffer": (False, 2, "linear"),
    "reduce_private": (False, 2, "reduce"),
    # loop stacks
    "trip_count": (False, 3, "zero"), "grow": (False, 1, "linear"),
    "stack_slot": (False, 3, None),
    # debug mode: checked indices set the error word
    "chk": (False, 5, None), "inb": (False, 5, None),
    # integers and comparisons
    "int_div_trunc": (False, 2, "zero"), "int_floor_div": (False, 2, "zero"),
    "int_mod": (False, 2, "zero"), "bit_count": (False, 2, "zero"),
    "tuple_eq": (False, 2, "zero"), "tuple_ne": (False, 2, "zero"),
    "tuple_insert": (True, 3, "insert"),
    # a write at a run-time index (tangent: the same write of the tangents)
    "tuple_insert": (True, 3, "insert"),
    "round_half_away": (False, 1, "zero"),
    # float16: bits <-> float32, rounding
    "f2h": (False, 1, "zero"), "h2f": (False, 1, "same"), "round_f16": (False, 1, "same"),
    # random numbers
    "rand_pcg": (False, 1, "zero"), "u32": (False, 1, "zero"), "u32_add": (False, 2, "zero"),
    "rand_float": (False, 1, "zero"), "rand_int": (False, 1, "zero"),
    "rand_int_range": (False, 3, "zero"),
    # wp.expect_*: report a mismatch
    "expect_eq": (False, 2, "zero"), "expect_neq": (False, 2, "zero"),
    "expect_near": (False, 4, "zero"),
    # atomics (add and sub carry a tangent: the value's, added the same way)
    "atomic_add": (False, 3, "accumulate"), "atomic_sub": (False, 3, "accumulate"),
    "atomic_min": (False, 3, None), "atomic_max": (False, 3, None),
    "atomic_exch": (False, 3, None), "atomic_cas": (False, 4, None),
    "atomic_and": (False, 3, None), "atomic_or": (False, 3, None),
    "atomic_xor": (False, 3, None),
    "atomic_add_f16": (False, 3, None), "atomic_sub_f16": (False, 3, None),
    "atomic_min_f16": (False, 3, None), "atomic_max_f16": (False, 3, None),
    "atomic_exch_f16": (False, 3, None), "atomic_cas_f16": (False, 4, None),
}

#: the geometry queries by id (``_wk.geo_<name>``, :mod:`weft.native.geometry.kernel_api`):
#: they read registered objects (and the iterators advance their state), so none is pure; their
#: derivatives are the builtins' own rules (``_adj``/``_tan`` queries), not second order's
GEOMETRY = tuple("""
    bvh_group_root bvh_next bvh_next_batch bvh_query bvh_query_capsule hg_next hg_point_id
    hg_query mesh_eval mesh_eval_adj mesh_eval_tan mesh_furthest_point_no_sign mesh_get_index
    mesh_group_root mesh_next mesh_next_batch mesh_point mesh_point_no_sign mesh_point_sign_normal
    mesh_point_sign_parity mesh_point_sign_winding_number mesh_query_aabb mesh_ray
    mesh_ray_anyhit mesh_ray_count mesh_vertex mesh_vertex_adj mesh_vertex_tan tri_tri tri_tri_d
    vol_grad_d vol_grad_f vol_hess_d vol_hess_f vol_jac_v vol_lookup_d vol_lookup_f vol_lookup_i
    vol_lookup_index vol_lookup_v vol_sample_d vol_sample_f vol_sample_grad_d vol_sample_grad_f
    vol_sample_i vol_sample_v vol_store_d vol_store_f vol_store_i vol_store_v vol_voxel_count
    vol_xform vol_xform_adj
""".split())
#: ... and the volume queries of each value type (``_wk.geo_vol_lookup_vec3f``,
#: :mod:`weft.native.geometry.kernel_api_volume`)
VOLUME_TYPES = ("float32", "float64", "int32", "int64", "uint32", "vec3f", "vec3d", "vec4f",
                "vec4d")
VOLUME_TYPED = ("vol_lookup", "vol_store", "vol_corners", "vol_sample_int")
GEOMETRY += tuple(f"{op}_{t}" for t in VOLUME_TYPES for op in VOLUME_TYPED) + \
    ("vol_index_corners",)

#: the tile helpers (:mod:`weft.native.tiles`): pure but for the stores and the adjoint
#: adds into arrays (second order: :data:`TILE_SECOND`)
TILES = tuple("""
    tile_load1 tile_load2 tile_load3 tile_store1 tile_store2 tile_store3 tile_load_adj1
    tile_load_adj2 tile_load_adj3 tile_insert tile_zero_at tile_onehot tile_get_vec
    tile_transpose tile_full tile_fill tile_sum tile_sum_vec tile_max tile_min tile_argmax
    tile_argmin tile_extreme_adj tile_sum_adj tile_sum_vec_adj tile_matmul tile_matmul_acc
    tile_matmul_adj_a tile_matmul_adj_b tile_atomic_add1 tile_atomic_add2 tile_atomic_add3
    tile_reshape tile_broadcast tile_unbroadcast tile_stack_push tile_stack_pop tile_load4
    tile_store4 tile_load_adj4 tile_atomic_add4 tile_load_indexed1 tile_load_indexed2
    tile_store_indexed1 tile_store_indexed2 tile_load_indexed_adj1 tile_load_indexed_adj2
    tile_h2f tile_f2h tile_round_f16 tile_load_adj_h1 tile_load_adj_h2 tile_view1 tile_view2
    tile_view3 tile_view4 tile_sum_scalar tile_max_scalar tile_min_scalar tile_store_one
    tile_add_plain1 tile_add_plain2
""".split()) + tuple(f"tile_{n}" for n in _tile_kernels.TILE_KERNELS
                     if n not in ("argmin", "argmax", "matmul", "matmul_acc"))
TILE_EFFECTS = frozenset({"tile_store1", "tile_store2", "tile_store3", "tile_load_adj1",
                          "tile_load_adj2", "tile_load_adj3", "tile_atomic_add1",
                          "tile_atomic_add2", "tile_atomic_add3", "tile_stack_push",
                          "tile_store4", "tile_load_adj4", "tile_atomic_add4",
                          "tile_store_indexed1", "tile_store_indexed2",
                          "tile_load_indexed_adj1", "tile_load_indexed_adj2",
                          "tile_load_adj_h1", "tile_load_adj_h2",
                          "tile_stack_pop", "tile_store_one", "tile_add_plain1",
                          "tile_add_plain2"})

#: how a tangent passes through each tile helper, for second order (``tape.hvp``); a helper
#: absent here has no rule (an active argument is reported): the sort and the float16 helpers
TILE_SECOND = {
    **{f"tile_{op}{nd}": "linear" for nd in "1234" for op in ("load", "view")},
    **{f"tile_store{nd}": "store" for nd in "1234"},
    **{f"tile_{op}{nd}": "accumulate" for nd in "1234" for op in ("load_adj", "atomic_add")},
    "tile_add_plain1": "accumulate", "tile_add_plain2": "accumulate",
    "tile_load_indexed1": "linear", "tile_load_indexed2": "linear",
    "tile_store_indexed1": "store:-2", "tile_store_indexed2": "store:-2",
    "tile_load_indexed_adj1": "accumulate", "tile_load_indexed_adj2": "accumulate",
    "tile_store_one": "store",
    "tile_insert": "insert", "tile_zero_at": "linear", "tile_onehot": "linear:2",
    "tile_get_vec": "linear", "tile_transpose": "linear", "tile_full": "linear:1",
    "tile_fill": "linear:1", "tile_reshape": "linear", "tile_broadcast": "linear",
    "tile_unbroadcast": "linear",
    "tile_sum": "linear", "tile_sum_vec": "linear", "tile_sum_scalar": "linear",
    "tile_sum_adj": "linear:1", "tile_sum_vec_adj": "linear:1",
    "tile_max": "extreme", "tile_min": "extreme", "tile_max_scalar": "extreme",
    "tile_min_scalar": "extreme", "tile_extreme_adj": "linear:2",
    "tile_argmax": "zero", "tile_argmin": "zero",
    "tile_stack_push": "zero", "tile_stack_pop": "zero",
    "tile_matmul": "bilinear", "tile_matmul_adj_a": "bilinear", "tile_matmul_adj_b": "bilinear",
    "tile_matmul_acc": "jvp",
    "tile_cholesky": "jvp", "tile_lower_solve": "jvp", "tile_upper_solve": "jvp",
    "tile_cholesky_solve": "jvp", "tile_scan_max_inclusive": "jvp",
    "tile_cholesky_adj": "jvp", "tile_lower_solve_adj": "jvp", "tile_upper_solve_adj": "jvp",
    "tile_cholesky_solve_adj": "jvp", "tile_fft_adj": "linear", "tile_ifft_adj": "linear",
    "tile_scan_min_inclusive": "jvp",
    "tile_fft": "linear", "tile_ifft": "linear", "tile_scan_inclusive": "linear",
    "tile_scan_exclusive": "linear",
    **{f"tile_{n}_adj": "linear:1" for n in ("scan_inclusive", "scan_exclusive",
                                             "scan_max_inclusive", "scan_min_inclusive")},
    "tile_diag_add": "joint", "tile_diag_add_adj": "linear:2",
}
#: the tile operations of kind ``jvp``: name -> (its tangent function's spelling, whether that
#: takes the value after the arguments, the positions of the differentiable arguments), as
#: ``X_jvp(arguments..., [value,] tangents...)`` (:mod:`weft.native.tile_kernels`,
#: :mod:`weft.native.tile_second`)
TILE_JVP = {
    "tile_matmul_acc": ("_wk.tile_matmul_acc_jvp", False, (0, 1, 2)),
    "tile_cholesky": ("_wk.tile_cholesky_jvp", True, (0,)),
    "tile_lower_solve": ("_wk.tile_lower_solve_jvp", True, (0, 1)),
    "tile_upper_solve": ("_wk.tile_upper_solve_jvp", True, (0, 1)),
    "tile_cholesky_solve": ("_wk.tile_cholesky_solve_jvp", True, (0, 1)),
    "tile_scan_max_inclusive": ("_wk.tile_scan_max_inclusive_jvp", False, (0,)),
    "tile_scan_min_inclusive": ("_wk.tile_scan_min_inclusive_jvp", False, (0,)),
    # the adjoints of the factorisation and the solves (weft.native.tile_second, as _w2)
    **{f"tile_{n}_adj": (f"_w2.tile_{n}_adj_jvp", False, (0, 1, 2, 3)[:3 + (n != "cholesky")])
       for n in ("cholesky", "lower_solve", "upper_solve", "cholesky_solve")},
}

# calls by a plain name: Python's builtins and the casts: name -> (pure, arity, second order)
_NAMED = {
    "range": (True, None, "zero"), "len": (True, 1, "zero"), "slice": (False, 3, "zero"),
    "print": (False, None, "zero"), "float": (False, 1, "cast"),
    "bool": (True, 1, "zero"), "float16": (True, 1, "same"),
    **{c: (True, 1, "cast" if c.startswith("float") else "zero") for c in SCALAR_CASTS},
}


def _entries():
    out = {}

    def add(name, pure, arity, second=None, derivative=None, math=None, cuda=None,
            target="cpu"):
        out[name] = Entry(name, pure, arity, second, derivative, math, cuda, target)

    for n, cuda, fast, d in _MATH_FUNCTIONS:
        arity = 2 if n in _BINARY else 1
        second, d = ("zero", None) if d is _FLAT else ("rule", d)
        for target in TARGETS:
            if target != "fast_math" or fast:
                add(spelling(n, target), target == "cpu", arity, second, d, n, cuda, target)
    # numpy's scalar types called as casts (geometry queries take float32 and int32)
    for n in ("float32", "float64"):
        add(f"np.{n}", True, 1, "cast")
    for n in ("int32", "int64"):
        add(f"np.{n}", True, 1, "zero")
    for n in ("empty", "zeros"):
        add(f"np.{n}", True, 2, "alloc")
    # tiles (numpy arrays in CPU code): constructions, copies and reductions of whole tiles
    for n, arity, second in (("array", 1, "linear"), ("arange", 1, "zero"),
                             ("ascontiguousarray", 1, "linear"), ("transpose", 2, "linear"),
                             ("sum", 1, "linear")):
        add(f"np.{n}", True, arity, second)
    # the math module: erf and erfc (numpy has none)
    add("math.erf", True, 1, "rule", _d("g * 1.1283791670955126 * exp(-(x * x))"))
    add("math.erfc", True, 1, "rule", _d("g * -1.1283791670955126 * exp(-(x * x))"))
    # erfinv / erfcinv in float64 (complement: erfcinv); d/dx = +-sqrt(pi)/2 exp(r^2)
    add("_wk.erf_inverse", False, 2, "rule", _d(
        ("g * ((-0.886226925452758 if complement else 0.886226925452758) * exp(r * r))",
         None), "x complement"))
    for name, (pure, arity, second) in _HELPERS.items():
        add(f"_wk.{name}", pure, arity, second)
    for name in GEOMETRY:
        add(f"_wk.geo_{name}", False, None)
    for name in TILES:
        add(f"_wk.{name}", name not in TILE_EFFECTS, None, TILE_SECOND.get(name))
    for name, (pure, arity, second) in _NAMED.items():
        add(name, pure, arity, second)
    # Python's abs, min and max on scalars (min and max: the derivatives of the builtins)
    add("abs", True, 1, "rule", out["np.abs"].derivative)
    add("min", True, 2, "rule", _d(("g if x <= y else 0.0", "0.0 if x <= y else g"), "x y",
                                   jvp="t_x if x <= y else t_y"))
    add("max", True, 2, "rule", _d(("g if x >= y else 0.0", "0.0 if x >= y else g"), "x y",
                                   jvp="t_x if x >= y else t_y"))
    # CUDA: the thread's index, per-thread arrays
    add("cuda.grid", False, 1)
    add("cuda.local.array", False, 2)
    # second order's helpers (weft.native.second_helpers): typed constants and zeros
    add("_w2.like", False, 2)
    add("_w2.tzero", False, 1)
    add("_w2.tile_pick", True, 3)
    add("_w2.tile_pick_scalar", True, 3)
    for n, (fn, _, diff) in TILE_JVP.items():
        if fn.startswith("_w2."):
            add(fn, True, 2 * len(diff))
    return out


#: every call generated code makes, by its spelling there
CALLS = _entries()


def entry(name):
    """The entry of the call spelled ``name`` (``"np.sin"``, ``"_wk.atomic_add"``), or None."""
    return CALLS.get(name)


def called_name(func):
    """The spelling of a call's function node (``np.sin`` for ``np.sin(x)``; None when it is
    not a name or attribute path), the key of :data:`CALLS`."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = called_name(func.value)
        return None if base is None else base + "." + func.attr
    return None


def is_pure(name):
    """Whether the call spelled ``name`` has no effect besides its value."""
    e = CALLS.get(name)
    return e is not None and e.pure
