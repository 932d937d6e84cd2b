"""Pass ``cuda``: the generated functions, retargeted to ``numba.cuda.jit``.

The forward, adjoint and tangent generators produce target-neutral statements; this pass
rewrites their CPU framing for CUDA:

- kernels: the ``numba.prange`` thread loop becomes ``_tid = cuda.grid(1)`` and a bounds guard;
  ``@numba.njit(parallel=True)`` becomes ``@cuda.jit``; funcs become device functions;
- math: ``np.sin(x)`` becomes ``_wk.sin_f32(x)`` (libdevice ``sinf``) or ``_wk.sin_f64(x)`` by
  the argument's precision, since numba-cuda has no numpy ufuncs on scalars;
- per-thread loop stacks of the adjoint: ``np.empty(n)`` becomes
  ``cuda.local.array(CUDA_STACK, ...)``, a fixed size; every access goes through
  ``_wk.stack_slot``, which flags the launch's error word on overflow (the runtime then raises)
  instead of writing out of bounds. Adjoint kernels and adjoint funcs take that word as ``_err``.

Invariant: the output uses only ``cuda``, ``math``, numpy dtypes and
``weft.stdlib.cuda_helpers``; it has the same statements as the CPU source otherwise.
"""
from __future__ import annotations

import ast
import copy
import os

from .. import types as T
from ..stdlib.cuda_helpers import MATH

CUDA_STACK = int(os.environ.get("WEFT_CUDA_STACK", "1024"))


def _is(node, path):
    return ast.unparse(node) == path


class _Retarget(ast.NodeTransformer):
    def __init__(self, is_kernel, is_adjoint):
        self.is_kernel = is_kernel
        self.is_adjoint = is_adjoint
        self.stacks = set()

    # --- math -------------------------------------------------------------------------------
    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np"
                and f.attr in MATH):
            types = getattr(node, "_weft_types", None) or ()
            suffix = "f64" if any(T.scalar_of(t) is T.float64 for t in types) else "f32"
            new = ast.Call(ast.Attribute(ast.Name("_wk", ast.Load()), f"{f.attr}_{suffix}",
                                         ast.Load()), node.args, [])
            return ast.copy_location(new, node)
        if self.is_adjoint and isinstance(f, ast.Name) and f.id.endswith("__adj"):
            node.args.append(ast.Name("_err", ast.Load()))
        return node

    # --- stacks -----------------------------------------------------------------------------
    def visit_Assign(self, node):
        v = node.value
        if (isinstance(v, ast.Call) and _is(v.func, "np.empty") and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and not node.targets[0].id.startswith("_stk")):
            # a wp.alloc_local buffer: its size is a constant
            v.func = ast.Attribute(ast.Attribute(ast.Name("cuda", ast.Load()), "local",
                                                 ast.Load()), "array", ast.Load())
            return node
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.startswith("_stk") and isinstance(v, ast.Call)):
            name = node.targets[0].id
            if _is(v.func, "np.empty"):
                self.stacks.add(name)
                shape, dtype = v.args
                cap = ast.Constant(CUDA_STACK)
                new_shape = ast.Tuple([cap] + shape.elts[1:], ast.Load()) \
                    if isinstance(shape, ast.Tuple) else cap
                node.value = ast.Call(ast.Attribute(ast.Attribute(
                    ast.Name("cuda", ast.Load()), "local", ast.Load()), "array", ast.Load()),
                    [new_shape, dtype], [])
                return node
            if _is(v.func, "_wk.grow"):
                return None  # fixed-size stack: stack_slot guards every access
        self.generic_visit(node)
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        if not node.body:  # the grow statement of a while-loop stack was removed
            return None
        # the shadow view of an adjoint/tangent array: ``adj_v = adj_a[i]`` or None. numba-cuda
        # would type ``adj_v`` as Optional; on CUDA the runtime passes real (zero) arrays for
        # missing adjoints and tangents, so the view is always taken
        if (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.Assign)
                and isinstance(node.orelse[0].value, ast.Constant)
                and node.orelse[0].value.value is None and len(node.body) == 1):
            return node.body
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id.startswith("_stk"):
            sl = node.slice
            first = sl.elts[0] if isinstance(sl, ast.Tuple) else sl
            guarded = ast.Call(ast.Attribute(ast.Name("_wk", ast.Load()), "stack_slot",
                                             ast.Load()),
                               [first, ast.Constant(CUDA_STACK), ast.Name("_err", ast.Load())],
                               [])
            if isinstance(sl, ast.Tuple):
                sl.elts[0] = guarded
            else:
                node.slice = guarded
        return node


def _decorator(text):
    return ast.parse(text, mode="eval").body


def retarget(fdef, is_kernel):
    """A CUDA version of one generated FunctionDef (a deep copy; the input is unchanged)."""
    fdef = copy.deepcopy(fdef)
    is_adjoint = fdef.name.endswith("__adj")
    _Retarget(is_kernel, is_adjoint).visit(fdef)
    if is_adjoint:
        fdef.args.args.append(ast.arg("_err"))
    if is_kernel:
        fdef.decorator_list = [_decorator("cuda.jit(cache=True)")]
        body = []
        for st in fdef.body:
            if isinstance(st, ast.For) and _is(st.iter.func, "numba.prange"):
                index = st.target.id
                body.append(ast.Assign([ast.Name(index, ast.Store())],
                                       _decorator("cuda.grid(1)"), lineno=0))
                guard = ast.If(ast.Compare(ast.Name(index, ast.Load()), [ast.Lt()],
                                           [st.iter.args[0]]), st.body, [])
                body.append(guard)
            else:
                body.append(st)
        fdef.body = body
    else:
        fdef.decorator_list = [_decorator("cuda.jit(device=True, cache=True)")]
    return fdef


def header_imports():
    return [ast.Import([ast.alias("math")]),
            ast.ImportFrom("numba", [ast.alias("cuda")], 0),
            ast.Import([ast.alias("numpy", "np")]),
            ast.ImportFrom("weft.stdlib", [ast.alias("cuda_helpers", "_wk")], 0)]
