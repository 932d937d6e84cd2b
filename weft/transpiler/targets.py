"""Targets: what differs between the CPU (threads or not) and CUDA in generated code.

The generators (:mod:`.forward`, :mod:`.adjoint`, :mod:`.tangent`) produce the same statements
for every target and ask the target object for everything target-specific: the frame of a
kernel (the loop over launch indices), decorators, math functions, atomics, thread-local
buffers and the per-thread stacks the adjoint records loops on. No target is made by rewriting
another's output.

- :class:`CpuParallel`: a kernel's loop over ``[_lo, _hi)`` as a plain ``numba.njit`` function
  (the *chunk*) and the entry, a small ``numba.njit`` wrapper handing it to Numba's threading
  layer (``_wk.parallel_for``, :mod:`weft.native.threads`; not ``prange``, whose parfor passes
  cost more to compile than the kernel itself); arrays a kernel only accumulates into get
  per-thread buffers, made by the wrapper and summed after the loop (a float atomic add is a
  compare-and-swap loop on x86).
- :class:`CpuSerial`: the same kernels without threads, for launches too small to pay for
  starting the thread pool (and for adjoints whose threads would share elements).
- :class:`Cuda`: ``numba.cuda.jit``; a thread per launch index from ``cuda.grid(1)``; math
  through libdevice at the argument's precision; stacks and buffers in ``cuda.local.array``
  (a stack has a fixed capacity, every access checked, overflow reported through an error word
  the adjoint takes last); adjoint and tangent arrays are always given (the runtime passes
  zeroed arrays for missing ones), so views of them are always taken.
"""
from __future__ import annotations

import ast
import os

from ..core import types as T
from ..native.vocabulary import CALLS, spelling
from .codegen import literal_int, plain_int, wk_call
from ..stdlib.exprs import attr_path, name

CUDA_STACK = int(os.environ.get("WEFT_CUDA_STACK", "1024"))


def _expr(text):
    return ast.parse(text, mode="eval").body




class Target:
    """Base: a target's spelling of everything the generators ask for. ``debug`` targets check
    every array access (``sites`` lists them: what the runtime reports for each);
    ``fast_math`` ones compile with Numba's ``fastmath=True`` (Warp's module option)."""

    name = ""
    debug = False
    check_all = False            # debug: every access checked; guarded: constant indices only
    null_params = frozenset()    # guarded: the kernel parameters passed null (all checked)
    fast_math = False
    sites = ()
    optional_shadows = True      # adjoint/tangent arrays may be None (tested at compile time)
    growable_stacks = True       # while-loop stacks can grow
    private_accumulators = False
    body_family = None           # targets of one family generate the same kernel bodies
    chunked = False              # entries are a chunk function and a wrapper (CpuParallel)
    entry_suffix = ""            # appended to kernel entry names (``k__fwd_serial``)
    helpers_module = "helpers"
    kernel_decorator = "numba.njit(cache=True, error_model='numpy', nogil=True)"
    func_decorator = kernel_decorator

    # -- module ------------------------------------------------------------------------------
    def imports(self):
        return [ast.Import([ast.alias("math")]), ast.Import([ast.alias("numba")]),
                ast.Import([ast.alias("numpy", "np")]),
                ast.ImportFrom("weft.native", [ast.alias(self.helpers_module, "_wk")], 0)]

    def configured(self, mode, sites, fast_math=False):
        """This target for compile ``mode`` (``"debug"``: accesses checked, recorded in the
        list ``sites`` shared by the targets of one module; ``"guarded"``, or
        ``"guarded:a,b"`` for a launch that passes null arrays ``a`` and ``b``: the accesses at
        a constant index, and every access of those arrays and of arrays that are not kernel
        parameters, the rest as in release), with ``fast_math`` or not."""
        guarded = mode.startswith("guarded")
        if mode != "debug" and not guarded and not fast_math:
            return self
        import copy
        t = copy.copy(self)
        if mode == "debug" or guarded:
            t.debug, t.sites, t.check_all = True, sites, mode == "debug"
        if guarded and ":" in mode:
            t.null_params = frozenset(mode.split(":", 1)[1].split(","))
        t.fast_math = bool(fast_math)
        return t

    # -- kernels ----------------------------------------------------------------------------
    def decorator(self, kernel):
        text = self.kernel_decorator if kernel else self.func_decorator
        if self.fast_math:  # LLVM's fast-math flags on every float operation of the module
            text = text[:-1] + ", fastmath=True)"
        return _expr(text)

    def extra_params(self, pass_kind):
        """Parameters every generated function of ``pass_kind`` takes last, and every call of
        one passes on: the debug error word ``_dbg``."""
        return ["_dbg"] if self.debug else []

    # -- debug checks -------------------------------------------------------------------------
    def site(self, array, loc, pass_kind):
        """Register a checked access (an int the error word reports)."""
        import linecache
        text = linecache.getline(loc.filename, loc.lineno).strip()
        self.sites.append((array, loc.comment(), text, pass_kind))
        return len(self.sites) - 1

    def checked_index(self, arr, k, index, site):
        """``index`` along axis ``k`` of array ``arr``, clamped in range, the error word set if
        it was not."""
        return wk_call("chk", _variable(index), _axis_len(arr, k), plain_int(site), plain_int(k),
                       name("_dbg"))

    def in_bounds(self, arr, k, index, site):
        """True when ``index`` is in range along axis ``k`` of ``arr`` (else the error word is
        set)."""
        return wk_call("inb", _variable(index), _axis_len(arr, k), plain_int(site), plain_int(k),
                       name("_dbg"))

    def thread_loop(self, prologue, body, private=(), blocks=None):
        """The kernel body run once per launch index, one after the other: ``prologue``
        computes the indices from the flat ``_tid`` (``private``: see :class:`CpuParallel`;
        ``blocks``: the block size of a kernel of cooperative CPU blocks, whose body runs
        once per block: :func:`launch_count`)."""
        rng = ast.Call(name("range"), [launch_count(blocks)], [])
        head = [_assign("_tid", self.launch_index())]
        return [ast.For(ast.Name("_p", ast.Store()), rng,
                        head + prologue + (body or [ast.Pass()]), [])]

    def launch_index(self):
        """``_tid``, the flat launch index, from the loop variable ``_p``."""
        return ast.Call(name("int64"), [name("_p")], [])

    def array_facts(self, arrays):
        """Statements at the top of a kernel function that tell the compiler what it cannot
        see of the ``arrays`` (name -> trailing element shape); none by default."""
        return []

    # -- operations --------------------------------------------------------------------------
    def math(self, path, args, types):
        """A call of math function ``path`` (``np.sin``, ``math.erf``, as the rules write it)
        on argument nodes of weft ``types``, spelled for the target
        (:func:`weft.native.vocabulary.spelling`); in a ``fast_math`` module, the float32
        transcendentals LLVM can vectorise (``weft.native.fastmath``)."""
        e = CALLS.get(path)
        if self.fast_math and e is not None and e.math and \
                all(T.scalar_of(t) is T.float32 for t in types):
            path = spelling(e.math, "fast_math")
        return ast.Call(attr_path(path), args, [])

    def atomic(self, fn, args):
        return wk_call(fn, *args)

    def local_array(self, shape, dtype_node):
        """A thread-local buffer of constant ``shape``."""
        return ast.Call(ast.Attribute(name("np"), "empty", ast.Load()), [shape, dtype_node], [])

    def stack_alloc(self, capacity, shape_tail, dtype_node):
        """A per-thread loop stack of ``capacity`` rows of shape ``shape_tail``."""
        shape = capacity if not shape_tail else ast.Tuple(
            [capacity] + [ast.Constant(d) for d in shape_tail], ast.Load())
        return ast.Call(ast.Attribute(name("np"), "empty", ast.Load()), [shape, dtype_node], [])

    def stack_grow(self, stack, count):
        """Statements making room for row ``count`` of a while-loop stack."""
        return [ast.If(ast.Compare(name(count), [ast.GtE()], [ast.Subscript(
            ast.Attribute(name(stack), "shape", ast.Load()), ast.Constant(0), ast.Load())]),
            [_assign(stack, wk_call("grow", name(stack)))], [])]

    def stack_row(self, index):
        """The index expression of a stack row (CUDA checks it against the capacity)."""
        return index


class CpuTarget(Target):
    """What both CPU targets tell LLVM so that it can vectorise a kernel's loop
    (:mod:`weft.native.vectorise`): launch indices are not negative, and arrays of vectors
    and matrices have their element's shape as constant trailing dimensions. The generators
    ask both the same: the serial one copies the bodies the parallel one generated
    (``generate._shareable``)."""

    body_family = "cpu"

    def launch_index(self):
        return wk_call("nonneg", super().launch_index())

    def array_facts(self, arrays):
        out = []
        for a, shape in arrays.items():
            if shape and len(shape) <= 2:
                dims = [ast.Constant(d) for d in shape] + [ast.Constant(0)] * (2 - len(shape))
                out.append(ast.Expr(wk_call("assume_shape", name(a), *dims)))
        return out


class CpuParallel(CpuTarget):
    name = "cpu"
    private_accumulators = True
    chunked = True

    def thread_loop(self, prologue, body, private=(), blocks=None):
        """The chunk's body: the launch indices ``[_lo, _hi)``; the per-thread buffers
        (``_pv_a``, ``_acc_a``) are its parameters, the thread's index read once."""
        head = [_assign("_tid", self.launch_index())]
        rng = ast.Call(name("range"), [name("_lo"), name("_hi")], [])
        loop = ast.For(ast.Name("_p", ast.Store()), rng, head + prologue + (body or [ast.Pass()]),
                       [])
        return ([_assign("_w", wk_call("thread_id"))] if private else []) + [loop]

    @staticmethod
    def chunk_params(private):
        return [f"_pv_{a}" for a in private] + [f"_acc_{a}" for a in private]

    def launch(self, chunk, params, private, blocks=None):
        """The entry's body: the buffers of the ``private`` arrays made, ``chunk`` run over
        the launch by the threads with ``params`` (the entry's own) and the buffers, the
        buffers summed."""
        before, after = [], []
        for a in private:
            before += [_assign(f"_pv_{a}", wk_call("private_ok", name(a))),
                       _assign(f"_acc_{a}", wk_call("private_buffer", name(a), name(f"_pv_{a}")))]
            after.append(ast.If(name(f"_pv_{a}"), [ast.Expr(wk_call(
                "reduce_private", name(a), name(f"_acc_{a}")))], []))
        args = ast.Tuple([name(p) for p in params + self.chunk_params(private)], ast.Load())
        run = ast.Expr(wk_call("parallel_for", name(chunk), launch_count(blocks), args))
        return before + [run] + after


class CpuSerial(CpuTarget):
    name = "serial"
    entry_suffix = "_serial"


class Cuda(Target):
    name = "cuda"
    optional_shadows = False
    growable_stacks = False
    helpers_module = "cuda_helpers"
    kernel_decorator = "cuda.jit(cache=True)"
    func_decorator = "cuda.jit(device=True, cache=True)"

    def imports(self):
        return [ast.Import([ast.alias("math")]),
                ast.ImportFrom("numba", [ast.alias("cuda")], 0),
                ast.Import([ast.alias("numpy", "np")]),
                ast.ImportFrom("weft.native", [ast.alias("cuda_helpers", "_wk")], 0)]

    def extra_params(self, pass_kind):
        return (["_err"] if pass_kind == "adjoint" else []) + super().extra_params(pass_kind)

    def thread_loop(self, prologue, body, private=(), blocks=None):
        guard = ast.If(ast.Compare(name("_p"), [ast.Lt()], [wk_call("launch_size", name("_dim"))]),
                       [_assign("_tid", ast.Call(name("int64"), [name("_p")], []))] + prologue +
                       (body or [ast.Pass()]), [])
        return [_assign("_p", _expr("cuda.grid(1)")), guard]

    def math(self, path, args, types):
        e = CALLS.get(path)
        if e is None or not e.math:
            return super().math(path, args, types)
        suffix = "f64" if any(T.scalar_of(t) is T.float64 for t in types) else "f32"
        return ast.Call(attr_path(spelling(e.math, "cuda_" + suffix)), args, [])

    def local_array(self, shape, dtype_node):
        return ast.Call(_expr("cuda.local.array"), [shape, dtype_node], [])

    def stack_alloc(self, capacity, shape_tail, dtype_node):
        shape = ast.Constant(CUDA_STACK) if not shape_tail else ast.Tuple(
            [ast.Constant(CUDA_STACK)] + [ast.Constant(d) for d in shape_tail], ast.Load())
        return ast.Call(_expr("cuda.local.array"), [shape, dtype_node], [])

    def stack_grow(self, stack, count):
        return []  # fixed capacity: stack_row guards every access

    def stack_row(self, index):
        return wk_call("stack_slot", index, ast.Constant(CUDA_STACK), name("_err"))


class Host(Target):
    """Plain Python, not compiled: builtins called at Python scope (``wp.quat_rpy(...)`` in a
    program) run their generated forward code once per call."""

    name = "host"
    kernel_decorator = func_decorator = None

    def decorator(self, kernel):
        return None


def launch_count(blocks=None):
    """How many times a kernel's body runs: once per launch index, or with cooperative CPU
    blocks of ``blocks`` lanes once per block (the last one perhaps partial)."""
    size = wk_call("launch_size", name("_dim"))
    if not blocks:
        return size
    return ast.BinOp(ast.BinOp(size, ast.Add(), ast.Constant(blocks - 1)), ast.FloorDiv(),
                     ast.Constant(blocks))


def _axis_len(arr, k):
    return ast.Subscript(ast.Attribute(name(arr), "shape", ast.Load()), ast.Constant(k),
                         ast.Load())


def _variable(index):
    """A constant index as an ``int64`` argument: a literal one compiles the check once per
    value (``a[1]``, ``a[-1]``... of a debug build: :func:`weft.transpiler.codegen.plain_int`)."""
    value = literal_int(index)
    return index if value is None else plain_int(value)


def _assign(target, value):
    return ast.Assign([ast.Name(target, ast.Store())], value, lineno=0)


TARGETS = {"cpu": CpuParallel(), "serial": CpuSerial(), "cuda": Cuda(), "host": Host()}
