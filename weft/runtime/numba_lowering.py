"""Lowering of generated CPU code without reference counting of plain values.

Numba's lowering treats every variable as if it might hold a reference; generated code is
mostly tuples of floats, which hold none. :class:`DropPlainDels` and :func:`lowering_pass`
leave those out (see below); arrays, tiles and anything holding one are counted as Numba
counts them (``tests/runtime/test_generated_pipeline.py`` checks the NRT's allocations and
frees). Used by ``numba_start.generated_code_compiler``; numba-cuda's pipeline keeps its own
lowering (NVVM then emits other code, which no test here can run).

Lowering also asks again what typing answered (an operator's call type) or what it found
missing (an ``__array__`` implementation of a plain array type): :func:`install_kept_lowering`
answers those from what was found before, while generated code compiles: the call types in
numba-cuda's lowering too (it uses numba.core's function types), the misses on the CPU only
(numba-cuda's target context has a base class of its own).
"""
from __future__ import annotations

import contextlib

from llvmlite import ir as llir
from numba.core import ir, types
from numba.core.base import BaseContext
from numba.core.types.functions import BaseFunction
from numba.core.compiler_machinery import AnalysisPass, register_pass

from . import numba_passes

# -- lowering without reference counting of plain values -----------------------------------------
#
# Numba's lowering treats every variable as if it might hold a reference: legalization inserts a
# ``del`` after each variable's last use (half the statements of generated code), lowering a
# ``del`` loads the variable and stores zero into its slot, and every copy (``incref``), store
# over an old value and ``del`` (``decref``) walks the value's type, emitting an
# ``extract_value`` for every member of a tuple, recursively (a ``mat44`` copy: 16), before it
# finds nothing to count. Generated code is mostly tuples of floats. For values of a type that
# holds no NRT reference, the statements and the instructions go; arrays and anything holding
# one keep Numba's treatment exactly. That includes the load of a variable's old value before
# each store (to decref it): for a plain value it was dead, but as a read of the variable
# before its definition it made LLVM's SROA place phis of the slot's initial zero at the joins
# between the function's entry and the definition (SROA on a kernel of 1,000 ``if``
# statements: 2.1 -> 1.5 s).

_REFCOUNTED = {}

#: the lowering of plain values is used (False: Numba's, for side-by-side measurements in one
#: process: ``benchmarks/bench_compile_passes.py``)
LEAN_LOWERING = True


def refcounted(context, ty):
    """Whether a value of Numba type ``ty`` holds a reference the NRT counts, itself or in a
    member (what Numba's ``get_meminfos`` walks: the data model and its members, recursively)."""
    found = _REFCOUNTED.get(ty)
    if found is None:
        model = context.data_model_manager[ty]
        found = model.has_nrt_meminfo() or any(refcounted(context, member)
                                               for member, _getter in model.traverse(None))
        _REFCOUNTED[ty] = found
    return found


@register_pass(mutates_CFG=False, analysis_only=False)
class DropPlainDels(AnalysisPass):
    """After legalization (which inserts them): the ``del`` of each variable whose type holds
    no counted reference (see above); lowering such a ``del`` does nothing but store zero. (An
    ``AnalysisPass`` as legalization is: Numba refuses ``del``s after a ``FunctionPass``.)"""

    _name = "weft_drop_plain_dels"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        if not LEAN_LOWERING:
            return False
        context = state.targetctx
        typemap = state.typemap
        changed = False
        for block in state.func_ir.blocks.values():
            body = [stmt for stmt in block.body
                    if not (isinstance(stmt, ir.Del) and stmt.value in typemap and
                            not refcounted(context, typemap[stmt.value]))]
            if len(body) != len(block.body):
                block.body = body
                changed = True
        return changed


def lowering_pass():
    """The lowering pass of generated code: Numba's, whose ``incref`` and ``decref`` skip values
    that hold no counted reference (see above)."""
    global _LoweringPass
    if _LoweringPass is None:
        from numba.core import lowering
        from numba.core.typed_passes import NativeLowering

        class Lower(lowering.Lower):
            def incref(self, typ, val):
                if not LEAN_LOWERING or refcounted(self.context, typ):
                    super().incref(typ, val)

            def decref(self, typ, val):
                if not LEAN_LOWERING or refcounted(self.context, typ):
                    super().decref(typ, val)

            def storevar(self, value, name, argidx=None):
                # Numba loads the old value of a stack-stored variable before each store, to
                # decref it: dead for a plain value, yet a read of the variable before its
                # definition, which LLVM's SROA answered with phis from the function's entry
                # (the slot's zero) at every join on the way (see below)
                if not LEAN_LOWERING or argidx is not None or (
                        name in self._singly_assigned_vars and not self._disable_sroa_like_opt):
                    return super().storevar(value, name, argidx)
                fetype = self.typeof(name)
                if refcounted(self.context, fetype):
                    return super().storevar(value, name, argidx)
                self._alloca_var(name, fetype)
                ptr = self.getvar(name)
                if value.type != ptr.type.pointee:
                    raise AssertionError(f"Storing {value.type} to ptr of {ptr.type.pointee} "
                                         f"('{name}'). FE type {fetype}")
                self.builder.store(value, ptr)

            def alloca(self, name, type):
                # Numba stores zero into every slot in the entry block (so that a read
                # before any assignment reads zero): left out for a plain value assigned on
                # every path before any read (see below). With debug information (Numba's
                # NUMBA_DEBUGINFO) Numba's, which also describes the variable to a debugger
                if not (LEAN_LOWERING and ENTRY_ZEROS_ONLY_WHERE_READ) or \
                        self._disable_sroa_like_opt or refcounted(self.context, type):
                    return super().alloca(name, type)
                early = getattr(self, "weft_read_early", None)
                if early is None:
                    early = self.weft_read_early = read_before_assigned(self.blocks,
                                                                        self.firstblk)
                if name in early:
                    return super().alloca(name, type)
                lltype = self.context.get_value_type(type)
                with self.builder.goto_entry_block():
                    return self.builder.alloca(lltype, name=name)

            def lower(self):
                # (once: the wrapper below asks again)
                self.weft_entry = QUICK_ENTRIES and _launches_threads(self.func_ir)
                self.weft_depths = {}
                with _unoptimised(self.library, self.weft_entry), _fill_at_use_only():
                    super().lower()

            def lower_inst(self, inst):
                super().lower_inst(inst)
                if CHAIN_CUTS and isinstance(inst, ir.SetItem):
                    # (a chain through memory: see _chain_depth)
                    self.weft_depths[("stored", inst.target.name, inst.index.name)] = \
                        self.weft_depths.get(inst.value.name, 0)

            def lower_assign(self, ty, inst):
                value = super().lower_assign(ty, inst)
                if CHAIN_CUTS:
                    value = _cut_chain(self, ty, inst, value)
                return value

            def create_cpython_wrapper(self, release_gil=False):
                quick = self.weft_entry or QUICK_ENTRIES and _is_chunk(self.func_ir)
                with _unoptimised(self.library, quick):
                    super().create_cpython_wrapper(release_gil)

            def _lower_call_normal(self, fnty, expr, signature):
                where = _by_symbol(fnty)
                if where is None or expr.target is not None or signature.recvr:
                    return super()._lower_call_normal(fnty, expr, signature)
                args = self.fold_call_args(fnty, signature, expr.args, expr.vararg, expr.kws)
                return call_by_symbol(self.context, self.builder, fnty.dispatcher, where,
                                      signature, args)

        @register_pass(mutates_CFG=True, analysis_only=False)
        class LowerGeneratedCode(NativeLowering):
            """Numba's ``NativeLowering`` with the ``Lower`` above."""

            _name = "weft_native_lowering"

            @property
            def lowering_class(self):
                return Lower

        _LoweringPass = LowerGeneratedCode
    return _LoweringPass


_LoweringPass = None


# -- zero stores only where a variable may be read before it is assigned -------------------------
#
# Numba's ``alloca_once`` stores zero into every variable's stack slot in the function's entry
# block, so that a read before any assignment reads zero. Every slot then has at least two
# stores, and LLVM's promotion of slots to registers (SROA, mem2reg) takes its general path for
# each: it places phis at the iterated dominance frontier of the slot's stores, and the entry
# block's store makes it walk the dominator tree from the root, for every slot: time slots x
# blocks, where generated code has a slot per variable that crosses a block. For a plain value
# assigned on every path before any read, the zero can never be read: its store is left out (a
# must-analysis over the Numba IR's blocks, :func:`read_before_assigned`); a variable that may be
# read first keeps it, and so reads zero as in Numba. Numba also asks for a zero-filled slot for
# every structure it builds (an array's, to index it: one per ``a[i]``), storing zero both in the
# entry block and where it is built: :func:`_fill_at_use_only` keeps only the second, which every
# read follows. Measured on the adjoint of ``bench_compile_scaling``'s ``branches`` at 1,000
# statements (compiled anew, alternated with and without, one process): SROA 4.4 -> 0.46 s, LLVM
# 7.0 -> 2.85 s, the whole compile 12.2 -> 9.45 s CPU.

#: the entry block's zero stores only for variables that may be read before assignment (False:
#: Numba's, for side-by-side measurements)
ENTRY_ZEROS_ONLY_WHERE_READ = True


def read_before_assigned(blocks, entry):
    """The names of variables that some path from ``entry`` through the Numba IR ``blocks``
    (label -> ``ir.Block``) reads before assigning (a forward must-analysis of assignment: a
    variable is assigned at a block's start when every path to the block assigns it)."""
    from numba.core.analysis import compute_use_defs

    use_defs = compute_use_defs(blocks)
    names = sorted({name for used in use_defs.usemap.values() for name in used})
    if not names:
        return frozenset()
    bit = {name: 1 << k for k, name in enumerate(names)}
    full = (1 << len(names)) - 1
    defs = {label: sum(bit[name] for name in defined if name in bit)
            for label, defined in use_defs.defmap.items()}
    succs = {label: [target for target in block.terminator.get_targets() if target in blocks]
             for label, block in blocks.items()}
    preds = {label: [] for label in blocks}
    for label, targets in succs.items():
        for target in targets:
            preds[target].append(label)
    # assigned at each block's end: everything to begin with (the meet of a must-analysis),
    # lowered to the fixed point; a block no path reaches assigns nothing on entry
    out = {label: full for label in blocks}

    def assigned_on_entry(label):
        if label == entry or not preds[label]:
            return 0
        assigned = full
        for pred in preds[label]:
            assigned &= out[pred]
        return assigned

    work = list(blocks)
    queued = set(work)
    while work:
        label = work.pop()
        queued.discard(label)
        new = assigned_on_entry(label) | defs[label]
        if new != out[label]:
            out[label] = new
            for target in succs[label]:
                if target not in queued:
                    queued.add(target)
                    work.append(target)
    early = set()
    for label, used in use_defs.usemap.items():
        assigned = assigned_on_entry(label)
        early.update(name for name in used if not assigned & bit[name])
    return frozenset(early)


_numba_alloca_once = None


@contextlib.contextmanager
def _fill_at_use_only():
    """Within: ``cgutils.alloca_once(..., zfill=True)`` stores zero where it is called and
    not also in the entry block (see above). Numba asks for it for every structure it builds
    (an array's, to index it: one per ``a[i]``), whose slot is then read only after the zero
    and the value stored there."""
    global _numba_alloca_once
    if not (LEAN_LOWERING and ENTRY_ZEROS_ONLY_WHERE_READ):
        yield
        return
    from numba.core import cgutils, debuginfo
    if _numba_alloca_once is None:
        _numba_alloca_once = cgutils.alloca_once

    def alloca_once(builder, ty, size=None, name='', zfill=False):
        if not zfill:
            return _numba_alloca_once(builder, ty, size=size, name=name, zfill=False)
        if isinstance(size, int):
            size = llir.Constant(cgutils.intp_t, size)
        with debuginfo.suspend_emission(builder):
            with builder.goto_entry_block():
                ptr = builder.alloca(ty, size=size, name=name)
            builder.store(ptr.type.pointee(None), ptr)
        return ptr

    cgutils.alloca_once = alloca_once
    try:
        yield
    finally:
        cgutils.alloca_once = _numba_alloca_once


# -- long chains of arithmetic cut for LLVM's loop vectorizer -----------------------------------
#
# LLVM 22's loop vectorizer (llvmlite 0.46) infers the type of each recipe of a loop body with a
# fresh cache whenever its common-subexpression step hashes or compares one
# (``VPlanTransforms::cse``): each such query walks the recipe's whole cone of operands, back to
# loads, constants, casts and calls, so a body where values depend on values N statements before
# (an adjoint's sums, a chain of updates) takes time N squared. Measured on
# ``bench_compile_scaling``'s chain of 1,000 statements: 6.5 of the adjoint's 15.5 s compile in
# ``LoopVectorizePass``, 13.8x its 300-statement time. Without the vectorizer the launch's
# indices run 15x slower there, so it stays; instead a value at the end of a chain of
# ``CHAIN_CUT_DEPTH`` or more operations (counted on the Numba IR as it is lowered: one per
# operation or copy, a load, an argument or a constant starting at zero) passes through
# ``llvm.canonicalize``, whose result type the vectorizer knows without looking further. For the
# result of an arithmetic operation it is the identity (the value is canonical already: the same
# bits); it costs one multiplication by 1.0 per cut, about one in ``CHAIN_CUT_DEPTH`` operations
# of a long chain. A copy is cut too: where branches join, the vectorizer's blend of the two
# values infers its type from one of them, so a chain that runs through the joins of many ``if``
# statements (the value left as it was on one side) is cut where the join's variable is copied
# (a copy counts one: it is where the blend will be). A load of an array element stored before at
# the same index variable continues the stored value's chain: LLVM forwards the store to the
# load, so an adjoint's ``adj_a[i] += v`` in every statement is one chain of additions. Functions
# without such chains (every ordinary kernel) are lowered as before.

#: long chains are cut (False: as Numba lowers them, for side-by-side measurements)
CHAIN_CUTS = True
CHAIN_CUT_DEPTH = 50


def _chain_depth(lower, value):
    """The number of operations before ``value`` (an IR assignment's value) since a load, an
    argument, a constant or a cut."""
    depths = lower.weft_depths
    if isinstance(value, ir.Var):  # (one: at a join, a blend)
        return depths.get(value.name, 0) + 1
    if not isinstance(value, ir.Expr):
        return 0
    if value.op in ("getitem", "static_getitem") and \
            isinstance(lower.typeof(value.value.name), types.Buffer):
        # a load; where the same array was stored at the same index variable before, LLVM
        # forwards the stored value to it, continuing that value's chain (``adj_a[i] += v``
        # once per statement of an adjoint: one chain of additions through the whole sweep)
        index = getattr(value, "index", None)
        if not isinstance(index, ir.Var):
            return 0
        return depths.get(("stored", value.value.name, index.name), 0)
    return 1 + max((depths.get(v.name, 0) for v in value.list_vars()), default=0)


def _canonicalize(builder, ty, value):
    """``value`` of Numba type ``ty`` with each floating-point member through
    ``llvm.canonicalize``, or None where it has none."""
    if ty in (types.float32, types.float64):  # (not float16: x86 has no half arithmetic)
        fn = builder.module.declare_intrinsic("llvm.canonicalize", [value.type])
        return builder.call(fn, [value])
    if not isinstance(ty, types.BaseTuple) or not isinstance(value.type, llir.Aggregate):
        return None
    out, changed = value, False
    for k, member in enumerate(ty.types):
        done = _canonicalize(builder, member, builder.extract_value(value, k))
        if done is not None:
            out, changed = builder.insert_value(out, done, k), True
    return out if changed else None


def _cut_chain(lower, ty, inst, value):
    """The lowered ``value`` of assignment ``inst``, through ``llvm.canonicalize`` where it ends
    a chain of ``CHAIN_CUT_DEPTH`` operations (see above)."""
    depth = _chain_depth(lower, inst.value)
    if depth >= CHAIN_CUT_DEPTH:  # (only an operation or a copy counts)
        done = _canonicalize(lower.builder, ty, value)
        if done is not None:
            value, depth = done, 0
    name = inst.target.name
    lower.weft_depths[name] = max(depth, lower.weft_depths.get(name, 0))
    return value


# -- weft's own helpers called by symbol --------------------------------------------------------
#
# A call from one Numba function to another links the callee's code library into the caller's:
# when the caller is finalised, LLVM optimises and emits the callee's whole code again, inside
# the caller's module. For the tile helpers (an FFT, a product, a load with padding: each a
# few hundred lines of IR with the helpers it calls) that was most of a tile kernel's compile:
# Warp's FFT example's three tiled kernels each had a final module of 0.6-0.9 MB of IR, 1.5-2.1 s
# of LLVM apiece. The tile helpers (``weft.native.tiles.TILE_HELPERS``) are compiled
# (or loaded from the shipped store or the cache) once, on their own; generated code calls
# their machine code through a symbol registered with LLVM, as a threaded entry calls its chunk
# (``weft.native.threads``), and a cached caller registers it again before it is loaded
# (Numba's ``reload_init``). The call cannot be inlined: these helpers each run a whole tile
# operation, so the call is a few nanoseconds of work that takes hundreds.

#: weft's marked helpers are called by symbol (False: linked as Numba links them, for
#: side-by-side measurements)
HELPERS_BY_SYMBOL = True

_published_helpers = set()


def _by_symbol(fnty):
    """``(module, name)`` where a dispatcher to call by symbol is bound, or None (a call to
    link as Numba does): the tile helpers (``weft.native.tiles.TILE_HELPERS``)."""
    global _bound
    if not HELPERS_BY_SYMBOL or type(fnty).__name__ != "Dispatcher":
        return None
    if _bound is None:
        import sys
        tiles = sys.modules.get("weft.native.tiles")
        if tiles is None:  # no tile helper is loaded: none is called
            return None
        _bound = {id(v): (tiles.__name__, n) for n in tiles.TILE_HELPERS
                  for v in (getattr(tiles, n),) if hasattr(v, "overloads")}
    return _bound.get(id(getattr(fnty, "dispatcher", None)))


_bound = None


def _helper_symbol(where, argtys, restype):
    """The stable name of a helper's machine code for ``argtys``: its binding and the hash of
    its types (the same in every process)."""
    import hashlib
    key = hashlib.sha1(repr((tuple(argtys), restype)).encode()).hexdigest()[:20]
    return f"weft_helper.{where[0]}.{where[1]}.{key}"


def publish_helper(module, name, argtys):
    """Compile (or load) helper ``module.name`` for ``argtys`` and register its machine code
    under its symbol; returns ``(compile result, symbol)``. Also the ``reload_init`` of a
    cached caller (before its machine code is loaded)."""
    import sys
    from llvmlite import binding as llvm
    if module not in sys.modules:
        __import__(module)
    disp = getattr(sys.modules[module], name)
    argtys = tuple(argtys)
    cres = disp.overloads.get(argtys)
    if cres is None:
        disp.compile(argtys)
        cres = disp.overloads[argtys]
    symbol = _helper_symbol((module, name), argtys, cres.signature.return_type)
    if symbol not in _published_helpers:
        llvm.add_symbol(symbol, cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name))
        _published_helpers.add(symbol)
    return cres, symbol


def call_by_symbol(context, builder, disp, where, sig, args):
    """Code calling helper ``disp`` (bound at ``where``) for ``sig`` through its symbol: Numba's
    call of a compiled function (``imputils.user_function``) without linking its library."""
    import functools
    from numba.core import cgutils
    from numba.core.imputils import fix_returning_optional, impl_ret_new_ref
    cres, symbol = publish_helper(where[0], where[1], sig.args)
    context.active_code_library._reload_init.add(
        functools.partial(_reload_helper, where[0], where[1], tuple(sig.args)))
    fndesc = cres.fndesc
    fnty = context.call_conv.get_function_type(fndesc.restype, fndesc.argtypes)
    fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
    status, retval = context.call_conv.call_function(builder, fn, fndesc.restype,
                                                     fndesc.argtypes, args)
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)
    retval = fix_returning_optional(context, builder, sig, status, retval)
    return impl_ret_new_ref(context, builder, fndesc.restype, retval)


def _reload_helper(module, name, argtys):
    publish_helper(module, name, argtys)


# -- threaded entries left to LLVM's quick code generation ---------------------------------------
#
# A kernel's threaded entry (``k__fwd``, ``k__adj``, ``k__jvp``) only unpacks its arguments and
# hands the chunk function to the threads (``_wk.parallel_for``, which calls the chunk by its
# symbol), with per-thread buffers made and summed by helpers where an adjoint needs them. Yet
# LLVM optimised it and its CPython wrapper as the chunk itself: about 140 ms of LLVM per entry
# for a small kernel, as much as its chunk. Its functions are marked ``optnone`` (LLVM's
# optimiser skips them; its code generator takes its quick path), and the helpers it calls
# stay optimised in their own functions. Measured: 60 ms less LLVM per entry; a call of the
# entry (unboxing, then the threads) 0.1-0.2 us slower than the optimised one, within a launch
# of 15-25 us. A chunk's CPython wrapper too: the threads call the chunk by its symbol, never
# through it, and LLVM spent 25-35% of a small chunk's time optimising it.

#: the threaded entries are left unoptimised (False: optimised as other functions, for
#: side-by-side measurements)
QUICK_ENTRIES = True


def _launches_threads(func_ir):
    """Whether a generated function hands a chunk to the threads (``_wk.parallel_for``)."""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            value = getattr(stmt, "value", None)
            if isinstance(value, ir.Expr) and value.op == "getattr" and \
                    value.attr == "parallel_for":
                return True
    return False


def _is_chunk(func_ir):
    """Whether a generated function is a chunk (its module's name for it holds the
    ``_wk.chunk`` reference the threads are handed)."""
    func = func_ir.func_id.func
    held = getattr(func, "__globals__", {}).get(func.__name__)
    return getattr(held, "weft_chunk_of", None) is not None


@contextlib.contextmanager
def _unoptimised(library, active):
    """Within (when ``active``): the LLVM modules added to ``library`` have their functions
    marked ``optnone`` (and ``noinline``, which LLVM requires beside it). ``Lower`` uses it for
    a threaded entry's code and wrapper, and for a chunk's wrapper: the threads call a chunk
    by its symbol, so its wrapper runs only where Python calls a chunk itself."""
    if not active:
        yield
        return
    add = library.add_ir_module

    def add_unoptimised(module):
        for fn in module.functions:
            if not fn.is_declaration:
                fn.attributes.discard("alwaysinline")
                fn.attributes.add("noinline")
                fn.attributes.add("optnone")
        return add(module)

    library.add_ir_module = add_unoptimised
    try:
        yield
    finally:
        del library.add_ir_module


# -- answers lowering asks for again ----------------------------------------------------------
#
# Lowering asks again: ``Lower.lower_binop`` (numba-cuda's too) calls the operator's
# ``get_call_type`` for every ``+`` it lowers, which tries the templates once more and formats
# a message for each that does not match (1.6 of 13.7 s compiling a kernel of 300 ``if``
# statements). The same rule keeps those answers: operators, plain values, no keywords.

_kept_calls = {}


def _get_call_type(self, context, args, kws):
    """``BaseFunction.get_call_type``: Numba's, its answer kept for operators on plain values
    while generated code compiles (``numba_passes``). Numba's first answer records the
    implementation in ``self._impl_keys``, which later lookups read."""
    if not numba_passes._keeps(getattr(self, "typing_key", None), args, kws):
        return _numba_get_call_type(self, context, args, kws)
    return numba_passes._kept(_kept_calls, (context, self, tuple(args)),
                              lambda: _numba_get_call_type(self, context, args, kws))


_numba_get_call_type = None


# Every array a lowered statement reads or writes is wrapped in a structure whose constructor
# asks for an ``__array__`` implementation of the array's type (``arrayobj.make_array``). Plain
# arrays have none: Numba looks, refreshes its registries, looks again and fails, every time
# (0.9 ms each). While generated code compiles, a type found to have none is answered at once.

_numba_get_function = BaseContext.get_function
_array_misses = set()


def _get_function(self, fn, sig, _firstcall=True):
    """``BaseContext.get_function``: Numba's, but for an ``__array__`` lookup Numba failed
    before for the same context and argument types while generated code compiles (see
    above), which fails at once, as Numba's would."""
    if not (type(fn) is str and fn == "__array__") or not numba_passes.LEAN_TYPING or \
            getattr(numba_passes._compiling, "depth", 0) <= 0:
        return _numba_get_function(self, fn, sig, _firstcall)
    key = (self, tuple(sig.args))
    if key in _array_misses:
        raise NotImplementedError(f"No definition for lowering {fn}{sig}")
    try:
        return _numba_get_function(self, fn, sig, _firstcall)
    except NotImplementedError:
        _array_misses.add(key)
        raise


def install_kept_lowering():
    """Route ``BaseFunction.get_call_type`` through :func:`_get_call_type` and
    ``BaseContext.get_function`` through :func:`_get_function` (once; numba.core's classes:
    ``numba_start`` calls this beside ``numba_passes.install_analyses`` for either core, and
    numba-cuda's lowering shares the function types)."""
    global _numba_get_call_type
    if BaseFunction.get_call_type is not _get_call_type:
        _numba_get_call_type = BaseFunction.get_call_type
        BaseFunction.get_call_type = _get_call_type
    if BaseContext.get_function is not _get_function:
        BaseContext.get_function = _get_function
