"""Pass ``emit``: assemble the generated functions into one module and print it.

Invariant: ``state.source`` is a complete, importable Python module whose text depends only on
the input (deterministic), importing only math, numpy, numba and ``weft.stdlib.helpers``. Every
statement that came from the user's source ends with ``# file.py:LINE``. This is the only place
that calls ``ast.unparse``'s machinery.
"""
from __future__ import annotations

import ast
import os

from .. import __version__, types as T
from . import adjoint as A, tangent as TG
from .codegen import assign
from .exprs import NameGen, name
from .forward import Forward

CPU_KERNEL = "numba.njit(parallel=True, cache=True, error_model='numpy', nogil=True)"
CPU_FUNC = "numba.njit(cache=True, error_model='numpy', nogil=True)"
SCALARS = ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64")


class _Unparser(ast._Unparser):
    """``ast.unparse`` that appends ``# file:line`` to statements carrying ``_weft_loc``."""

    def __init__(self):
        super().__init__()
        self._pending = None

    def traverse(self, node):
        if isinstance(node, ast.stmt) and getattr(node, "_weft_loc", None) is not None:
            comment = "  # " + node._weft_loc.comment()
            if isinstance(node, (ast.If, ast.For, ast.While, ast.FunctionDef)):
                self._pending = comment
                super().traverse(node)
            else:
                super().traverse(node)
                self.write(comment)
            return
        super().traverse(node)

    def block(self, *, extra=None):
        if self._pending is not None:
            extra, self._pending = self._pending, None
        return super().block(extra=extra)


class _SplitLongTuples(ast.NodeTransformer):
    """``(x0, ..., x35)`` -> ``(x0, ..., x29) + (x30, ..., x35)``: CPython compiles a tuple
    display of more than 30 items through a list, and Numba's rewrite of that bytecode fails
    on a variable assigned twice (a 6x6 spatial matrix updated in an adjoint). Tuple
    concatenation is typed and optimised like the literal."""

    LIMIT = 30

    def visit_Tuple(self, node):
        self.generic_visit(node)
        if len(node.elts) <= self.LIMIT or not isinstance(node.ctx, ast.Load):
            return node
        chunks = [ast.Tuple(node.elts[i:i + self.LIMIT], ast.Load())
                  for i in range(0, len(node.elts), self.LIMIT)]
        out = chunks[0]
        for c in chunks[1:]:
            out = ast.BinOp(out, ast.Add(), c)
        return ast.copy_location(out, node)


def unparse(node):
    return _Unparser().visit(_SplitLongTuples().visit(node))


def _decorator(text):
    return ast.parse(text, mode="eval").body


def _function(fname, params, body, decorator, doc=None):
    if doc:
        body = [ast.Expr(ast.Constant(doc))] + body
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    return ast.FunctionDef(fname, args, body or [ast.Pass()], [_decorator(decorator)],
                           lineno=0)


def _names_for(fir):
    taken = {v.name for v in fir.params}
    from .ir import defined_vars
    taken |= {v.name for v in defined_vars(fir.body)}
    taken |= {"adj_" + n for n in list(taken)} | {"tan_" + n for n in list(taken)}
    return NameGen(taken)


def _prologue(fir):
    """Index variables of a kernel thread from the flat ``_tid``."""
    out = []
    if None in fir.tid_vars.values():
        out.append(assign("_first", ast.Call(ast.Attribute(name("_wk"), "first_index",
                                                           ast.Load()),
                                             [name("_tid"), name("_dim")], [])))
    axes = sorted({a for a in fir.tid_vars.values() if a is not None})
    dims = fir.tid_dims
    for a in axes:
        node = name("_tid")
        stride = None
        for d in range(a + 1, dims):
            term = ast.Subscript(name("_dim"), ast.Constant(d), ast.Load())
            stride = term if stride is None else ast.BinOp(stride, ast.Mult(), term)
        if stride is not None:
            node = ast.BinOp(node, ast.FloorDiv(), stride)
        if a > 0:
            node = ast.BinOp(node, ast.Mod(), ast.Subscript(name("_dim"), ast.Constant(a),
                                                             ast.Load()))
        out.append(assign(f"_i{a}", node))
    return out


def _thread_loop(fir, body, private=()):
    """The loop over launch indices, with per-thread accumulation buffers set up before it and
    added into their arrays after it (``private``: names of arrays only accumulated into)."""
    rng = ast.Call(ast.Attribute(name("numba"), "prange", ast.Load()),
                   [ast.Call(ast.Attribute(name("_wk"), "launch_size", ast.Load()),
                             [name("_dim")], [])], [])
    # prange may give an unsigned index: make it signed so index arithmetic stays integer
    head = [assign("_tid", ast.Call(name("int64"), [name("_p")], []))]
    before, after = [], []
    if private:
        head.append(assign("_w", ast.parse("numba.get_thread_id()", mode="eval").body))
    for a in private:
        setup = [assign(f"_pv_{a}", ast.Call(ast.Attribute(name("_wk"), "private_ok",
                                                           ast.Load()), [name(a)], [])),
                 assign(f"_acc_{a}", ast.Call(ast.Attribute(name("_wk"), "private_buffer",
                                                            ast.Load()),
                                              [name(a), name(f"_pv_{a}")], []))]
        reduce = [ast.If(name(f"_pv_{a}"), [ast.Expr(ast.Call(ast.Attribute(
            name("_wk"), "reduce_private", ast.Load()), [name(a), name(f"_acc_{a}")], []))], [])]
        before += setup
        after += reduce
    loop = ast.For(ast.Name("_p", ast.Store()), rng, head + _prologue(fir) +
                   (body or [ast.Pass()]), [])
    return before + [loop] + after


def kernel_params(fir):
    return [p.name for p in fir.params]


def kernel_adj_params(fir):
    """Adjoint arrays a kernel's ``__adj`` takes after its parameters."""
    return [f"adj_{p.name}" for p in fir.params
            if isinstance(p.type, T.ArrayType) and T.is_differentiable(p.type)]


def kernel_tan_params(fir):
    return TG.func_params(fir)[len(fir.params):]


def generate(fir, parts=("forward", "adjoint", "tangent"), target="cpu"):
    """The generated function definitions of one kernel or func."""
    out = []
    private_fwd, private_adj = [], []
    if fir.kind == "kernel" and target != "cuda":
        from .access import private_accumulators
        private_fwd, private_adj = private_accumulators(fir)
    loc = fir.source and fir.source.filename
    where = f"{os.path.basename(loc)}:{fir.source.first_line}" if loc else ""
    kernel = fir.kind == "kernel"
    base = f"{fir.name}__fwd" if kernel else fir.name
    if "forward" in parts:
        gen = Forward(fir, _names_for(fir))
        gen.private = set(private_fwd)
        body = gen.block(fir.body)
        if kernel:
            out.append(_function(base, ["_dim"] + kernel_params(fir),
                                 _thread_loop(fir, body, private_fwd),
                                 CPU_KERNEL, f"Forward kernel of '{fir.name}' ({where})."))
        else:
            out.append(_function(base, kernel_params(fir), body, CPU_FUNC,
                                 f"Func '{fir.name}' ({where})."))
    for kind in ("replay", "grad", "tangent"):
        rule = fir.custom.get(kind)
        if rule is not None and (kind != "grad" or "adjoint" in parts):
            body = Forward(rule, _names_for(rule)).block(rule.body)
            out.append(_function(rule.name, [p.name for p in rule.params], body, CPU_FUNC,
                                 f"The user's {kind} rule of '{fir.name}' ({where})."))
    if "adjoint" in parts and "grad" not in fir.custom:
        gen = A.Adjoint(fir, _names_for(fir))
        # per-thread buffers only pay off where accumulation would otherwise be atomic
        atomic = {f"adj_{p.name}" for p in gen.atomic_arrays}
        private_adj = [a for a in private_adj if a in atomic]
        gen.private = set(private_adj)
        body = gen.body()
        if kernel:
            out.append(_function(f"{fir.name}__adj", ["_dim"] + kernel_params(fir)
                                 + kernel_adj_params(fir), _thread_loop(fir, body, private_adj),
                                 CPU_KERNEL,
                                 f"Adjoint kernel of '{fir.name}': replays the forward body, "
                                 "then runs it backwards."))
        else:
            body.append(A.func_returns(fir))
            out.append(_function(f"{fir.name}__adj", A.func_signature(fir), body, CPU_FUNC,
                                 f"Adjoint of '{fir.name}': returns the adjoints of its "
                                 "differentiable parameters."))
    if "tangent" in parts and "tangent" in fir.custom:
        call_f = ast.Call(name(base), [name(p.name) for p in fir.params], [])
        call_t = ast.Call(name(fir.custom["tangent"].name),
                          [name(n) for n in TG.func_params(fir)], [])
        body = [ast.Return(ast.Tuple([call_f, call_t], ast.Load()))]
        out.append(_function(f"{fir.name}__jvp", TG.func_params(fir), body, CPU_FUNC,
                             f"Tangent of '{fir.name}' from the user's tangent rule."))
    elif "tangent" in parts:
        body = TG.Tangent(fir, _names_for(fir)).block(fir.body)
        if kernel:
            out.append(_function(f"{fir.name}__jvp", ["_dim"] + kernel_params(fir)
                                 + kernel_tan_params(fir), _thread_loop(fir, body), CPU_KERNEL,
                                 f"Tangent (forward-mode) kernel of '{fir.name}'."))
        else:
            if fir.ret_type is None:
                body.append(ast.Return(None))
            out.append(_function(f"{fir.name}__jvp", TG.func_params(fir), body, CPU_FUNC,
                                 f"Tangent of '{fir.name}': returns (value, tangent)."))
    return out


def _serial(fdef):
    """A kernel without threads (for small launches, where starting threads costs more)."""
    fdef.decorator_list = [_decorator(CPU_FUNC)]
    for st in fdef.body:
        if isinstance(st, ast.For) and isinstance(st.iter, ast.Call) and \
                ast.unparse(st.iter.func) == "numba.prange":
            st.iter.func = name("range")
    return fdef


def header(origin, target="cpu"):
    doc = ast.Expr(ast.Constant(
        f"Generated by weft {__version__} from {origin} for the {target.upper()} target.\n\n"
        "Do not edit: regenerate it with `weft transpile`. It needs numpy, numba and weft's "
        "stdlib helpers.\n"))
    # float16 values are float32 numbers rounded to half precision (Numba has no CPU float16)
    scalars = [ast.ImportFrom("numpy", [ast.alias(s) for s in SCALARS if s != "float16"], 0),
               ast.Assign([ast.Name("bool", ast.Store())], name("bool_"), lineno=0),
               ast.Assign([ast.Name("float16", ast.Store())], ast.Attribute(
                   name("_wk"), "round_f16", ast.Load()), lineno=0)]
    if target == "cuda":
        from .cuda import header_imports
        return [doc] + header_imports() + scalars
    if target == "serial":
        doc.value.value = doc.value.value.replace("target.", "target, without threads, for "
                                                  "small launches.")
    return [doc, ast.Import([ast.alias("math")]), ast.Import([ast.alias("numba")]),
            ast.Import([ast.alias("numpy", "np")]),
            ast.ImportFrom("weft.stdlib", [ast.alias("helpers", "_wk")], 0)] + scalars


def module_source(funcs, origin, target="cpu"):
    """Source of a module holding every function of ``funcs`` (callees first), for the
    ``"cpu"`` (numba.njit) or ``"cuda"`` (numba.cuda.jit) target."""
    body = header(origin, target)
    meta = {}
    for fir in funcs:
        defs = generate(fir, target=target)
        if target == "cuda":
            from .cuda import retarget
            defs = [retarget(d, fir.kind == "kernel") for d in defs]
        elif target == "serial" and fir.kind == "kernel":
            defs = [_serial(d) for d in defs]
        body.extend(defs)
        if fir.kind == "kernel":
            from .access import local_buffer_gradient, overwritten, stored
            meta[fir.name] = {"tid_dims": fir.tid_dims, "adj": kernel_adj_params(fir),
                              "tan": kernel_tan_params(fir), "overwrites": overwritten(fir),
                              "stores": stored(fir),
                              "no_derivative": local_buffer_gradient(fir)}
    body.append(ast.Assign([ast.Name("WEFT_KERNELS", ast.Store())],
                           ast.parse(repr(meta), mode="eval").body, lineno=0))
    mod = ast.Module(body, [])
    ast.fix_missing_locations(mod)
    return unparse(mod) + "\n"


def run(state):
    origin = ", ".join(sorted({os.path.basename(k.parsed().filename) for k in state.roots}))
    state.source = module_source(state.funcs, origin, state.options.get("target", "cpu"))
    return state
