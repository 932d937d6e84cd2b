"""Numba's analyses on generated code without their quadratic time, and the installing of weft's
passes and analyses into Numba's core (and numba-cuda's copy).

Numba's front end costs about 1.5-2 ms per IR statement, and several of its passes (SSA
reconstruction, rewrites, legalization, variable lifetimes) walk every block once per variable,
so their time grows with blocks times variables (``docs/performance.md``, stop 53). Generated
code has more blocks and statements than it needs: ``numba_simplify`` makes them fewer, first.

Two of Numba's analyses give the same results here in less time (``tests/runtime/
test_numba_passes.py`` compares them, IR text and sets): SSA reconstruction
(:func:`reconstruct_ssa_blocks`, each variable's walks limited to the blocks that mention it)
and the live-variable map (:func:`compute_live_map`, used while generated code compiles), and
so do the walk over a statement's variables (:func:`_collect_vars`) and the typing of operators
on plain values, kept once answered (:func:`_resolve_function_type`). ``numba_lowering`` leaves
out the reference counting of values that hold no reference (CPU only).

numba-cuda runs its own copy of Numba's core; :func:`for_cuda` loads this module against it,
and ``numba_start`` gives its pipeline the passes that leave Numba's IR as it is (the PTX is
numba-cuda's own: ``tests/cuda/test_ptx_pipeline.py``).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import operator
import threading
from collections import defaultdict
from collections.abc import MutableMapping

from ..core.startup import collector_paused
from .dominance import defs_violators, post_dominator_chain
from .liveness import Bits, dead_maps, live_bits, names_of

#: the Numba core these passes work on: ``numba.core``, or numba-cuda's copy of it, whose IR
#: classes are its own (this module's text loaded a second time: :func:`for_cuda`)
CORE = globals().get("_WEFT_NUMBA_CORE", "numba.core")
analysis = importlib.import_module(CORE + ".analysis")
ir = importlib.import_module(CORE + ".ir")
ir_utils = importlib.import_module(CORE + ".ir_utils")
types = importlib.import_module("numba.core.types" if CORE == "numba.core" else "numba.cuda.types")
compute_cfg_from_blocks = analysis.compute_cfg_from_blocks
_typing_context = importlib.import_module(
    "numba.core.typing.context" if CORE == "numba.core" else "numba.cuda.typing.context")
_machinery = importlib.import_module(CORE + ".compiler_machinery")
FunctionPass = _machinery.FunctionPass
register_pass = _machinery.register_pass
#: what that core's own walks test statements' values against (numba-cuda's IR accepts
#: ``numba.core``'s classes too)
_VAR_TYPES = getattr(ir, "var_types", ir.Var)
_INST_TYPES = getattr(ir, "inst_types", ir.Inst)

_SSA_PARTS = ("_iterated_domfronts", "_find_defs_violators", "_CacheListVars", "_get_scope",
              "_run_block_rewrite", "_FreshVarHandler", "_FixSSAVars", "_compute_phi_locations",
              "_run_block_analysis", "_GatherDefsHandler", "OrderedSet")


def _mentions(blocks):
    """Variable name -> the labels of the blocks that define or read it, in block order."""
    where = {}
    for label, block in blocks.items():
        for stmt in block.body:
            for var in stmt.list_vars():
                seen = where.setdefault(var.name, [])
                if not seen or seen[-1] != label:
                    seen.append(label)
    return where


#: SSA violators found from the dominator tree (False: Numba's, for side-by-side measurement)
SSA_BY_TREE = True


def reconstruct_ssa_blocks(blocks):
    """Numba's SSA reconstruction (``numba.core.ssa._run_ssa``), the same result in less time.

    Numba renames the definitions of one violating variable at a time, and rewrites its uses,
    each time walking every statement of the function: time in violators times statements. The
    handlers only change statements that mention the variable, and the reaching definitions
    they look up come from the definition map, not from other blocks' statements. So here each
    variable's two walks visit only the blocks that mention it, in the same order; the other
    blocks are kept as they are. The renamed variables, the phis and their order are Numba's.
    """
    ssa = importlib.import_module(CORE + ".ssa")
    if not blocks:
        return {}
    if not all(hasattr(ssa, name) for name in _SSA_PARTS):  # another Numba: its own walk
        return ssa._run_ssa(blocks)
    cfg = compute_cfg_from_blocks(blocks)
    df_plus = ssa._iterated_domfronts(cfg)
    violators = defs_violators(ssa, blocks, cfg) if SSA_BY_TREE else \
        ssa._find_defs_violators(blocks, cfg)
    cache_list_vars = ssa._CacheListVars()
    where = _mentions(blocks) if violators else {}
    blocks = dict(blocks)
    scope = ssa._get_scope(blocks)  # (Numba's ``_make_states`` lists every block to find it)
    for varname in violators:
        labels = where.get(varname, ())
        states = {"scope": scope, "varname": varname}
        states["defmap"] = defmap = defaultdict(list)
        blocks.update(ssa._run_block_rewrite({label: blocks[label] for label in labels}, states,
                                             ssa._FreshVarHandler()))
        states = {"scope": scope, "varname": varname}
        states["defmap"] = defmap
        states["phimap"] = phimap = defaultdict(list)
        states["cfg"] = cfg
        states["phi_locations"] = ssa._compute_phi_locations(df_plus, defmap)
        fixed = ssa._run_block_rewrite({label: blocks[label] for label in labels}, states,
                                       ssa._FixSSAVars(cache_list_vars))
        blocks.update(fixed)
        for label, phis in phimap.items():
            block = blocks[label]
            if label not in fixed:  # a block only a phi mentions: Numba's walk copied it
                copied = ir.Block(scope=block.scope, loc=block.loc)
                copied.body = list(block.body)
                blocks[label] = block = copied
            block.body = phis + block.body
    if compute_cfg_from_blocks(blocks) != cfg:
        errors = importlib.import_module(CORE + ".errors")
        raise errors.CompilerError("CFG mutated in SSA pass")
    return blocks


@register_pass(mutates_CFG=False, analysis_only=False)
class ReconstructSSAByMentions(FunctionPass):
    """Numba's ``ReconstructSSA`` pass with :func:`reconstruct_ssa_blocks`."""

    _name = "weft_reconstruct_ssa"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        postproc = importlib.import_module(CORE + ".postproc")
        ReconstructSSA = importlib.import_module(CORE + ".untyped_passes").ReconstructSSA
        state.func_ir.blocks = reconstruct_ssa_blocks(state.func_ir.blocks)
        ReconstructSSA._patch_locals(self, state)
        state.func_ir._definitions = ir_utils.build_definitions(state.func_ir.blocks)
        postproc.PostProcessor(state.func_ir).run(emit_dels=False)
        return True


def compute_live_map(cfg, blocks, var_use_map, var_def_map):
    """Numba's ``analysis.compute_live_map``: the same sets, without its quadratic step.

    Numba's rule: a variable is live at a block's entry where the block uses it before defining
    it, or where it is live at a successor's entry, the block does not define it, and the
    variable is defined or used in some block that reaches this one (``def_reach``). Numba
    computes ``def_reach`` as a set per block by a fixed point: blocks times variables, about
    1 s per run on a 300-branch kernel, and a compile runs it about seven times.

    The last condition only ever stops a variable that is live at the function's entry: if no
    path from the entry reaches a use without passing a definition, every block from which
    such a path starts is reached from that definition. So the plain fixed point runs first
    (Numba's loop, less ``def_reach``); where variables are live at the entry, it runs again
    with each block's exceptions to the rule: those of these variables that no block reaching
    it mentions (a bit set per block of the blocks it reaches finds them, usually a few blocks
    before the kernel's loop).
    """
    names, live, _ = live_bits(cfg, blocks, var_use_map, var_def_map)
    return {label: names_of(names, live[label]) for label in blocks}


_numba_live_map = analysis.compute_live_map
if CORE == "numba.core":
    _compiling = threading.local()
else:  # numba-cuda's copy: one flag for both
    from .numba_passes import _compiling


def _live_map(cfg, blocks, var_use_map, var_def_map):
    """``analysis.compute_live_map`` once :func:`install_analyses` ran: :func:`compute_live_map`
    while this thread compiles generated code, Numba's own otherwise."""
    if getattr(_compiling, "depth", 0):
        return compute_live_map(cfg, blocks, var_use_map, var_def_map)
    return _numba_live_map(cfg, blocks, var_use_map, var_def_map)


def compute_dead_maps(cfg, blocks, live_map, var_def_map):
    """Numba's ``analysis.compute_dead_maps``: the same maps, in linear time.

    Numba's unions every block's live set into one by ``reduce(operator.or_, ...)``, which
    copies the growing union once per block: blocks times variables. On a chain of 600 ``if``
    statements that was 0.74 s of the forward's compile under the profiler (the post-processor
    runs it about seven times per compile). Here the sets are bits (``liveness``); the
    post-processor skips the sets altogether (:class:`_Lifetime`)."""
    names = Bits()
    live = {label: names.of(live_map[label]) for label in blocks}
    defs = {label: names.of(var_def_map[label]) for label in blocks}
    return _dead_maps_result(cfg, blocks, names, live, defs)


def _dead_maps_result(cfg, blocks, names, live, defs):
    internal, escaping, combined = dead_maps(cfg, blocks, names, live, defs)
    return analysis._dead_maps_result(internal=internal, escaping=escaping, combined=combined)


# -- the post-processor's entry variables, when they are read ----------------------------------
#
# Numba's post-processor (run after several passes: the SSA reconstruction, inlining, the
# rewrites) computes each block's live variables at entry (``block_entry_vars``): the live map,
# the dead maps and a third walk. Only object mode, generators and loop or ``with`` lifting read
# them. After SSA, a phi's incoming values count as used at the join, so in a loop around a
# chain of ``if`` statements every version of the variable the branches rebind is live in every
# block: a chunk of 2,000 ``if``s had 2,000 names live in each of its 6,000 blocks, 8 s of the
# forward's compile for sets nothing read. While generated code compiles (never a generator)
# the post-processor leaves them to be computed when first read (:class:`_EntryVars`, Numba's
# own computation then); the variable lifetimes it records are computed when read already.

_postproc = importlib.import_module(CORE + ".postproc")
_transforms = importlib.import_module(CORE + ".transforms")
_numba_postprocess = _postproc.PostProcessor.run


#: the post-processor's dead maps from live sets as bits (False: Numba's sets, for side-by-side
#: measurements)
LIFETIME_BITS = True


class _Lifetime(_postproc.VariableLifetime):
    """Numba's ``VariableLifetime``, whose dead maps come from the live sets as bits
    (``liveness``): the sets themselves are made only if read."""

    @functools.cached_property
    def _bits(self):
        usedefs = self.usedefs
        return live_bits(self.cfg, self._blocks, usedefs.usemap, usedefs.defmap)

    @functools.cached_property
    def livemap(self):
        names, live, _ = self._bits
        return {label: names_of(names, live[label]) for label in self._blocks}

    @functools.cached_property
    def deadmaps(self):
        return _dead_maps_result(self.cfg, self._blocks, *self._bits)


class _EntryVars(MutableMapping):
    """``FunctionIR.block_entry_vars`` as the post-processor makes it (block -> the variables
    live at its entry), computed from the lifetimes ``vlt`` of ``blocks`` when first read."""

    def __init__(self, vlt, blocks):
        self._pending = (vlt, blocks)
        self._sets = {}

    def _filled(self):
        if self._pending is not None:
            vlt, blocks = self._pending
            self._pending = None
            bev = analysis.compute_live_variables(vlt.cfg, blocks, vlt.usedefs.defmap,
                                                  vlt.deadmaps.combined)
            self._sets.update((block, bev[offset]) for offset, block in blocks.items())
        return self._sets

    def __getitem__(self, block):
        return self._filled()[block]

    def __setitem__(self, block, names):
        self._filled()[block] = names

    def __delitem__(self, block):
        del self._filled()[block]

    def __iter__(self):
        return iter(self._filled())

    def __len__(self):
        return len(self._filled())


def _postprocess(self, emit_dels=False, extend_lifetimes=False):
    """``PostProcessor.run``: Numba's, but while generated code compiles the entry variables
    are computed when first read (see above)."""
    func_ir = self.func_ir
    if not getattr(_compiling, "depth", 0) or func_ir.is_generator:
        return _numba_postprocess(self, emit_dels, extend_lifetimes)
    func_ir.blocks = _transforms.canonicalize_cfg(func_ir.blocks)
    vlt = (_Lifetime if LIFETIME_BITS else _postproc.VariableLifetime)(func_ir.blocks)
    func_ir.variable_lifetime = vlt
    func_ir.block_entry_vars = _EntryVars(vlt, func_ir.blocks)
    func_ir.generator_info = None
    if emit_dels:
        self._insert_var_dels(extend_lifetimes=extend_lifetimes)


@register_pass(mutates_CFG=False, analysis_only=True)
class AnnotateTypesUnforced(_machinery.AnalysisPass):
    """Numba's ``AnnotateTypes`` (the type annotation ``inspect_types`` prints, of a copy of the
    IR), without computing the post-processor's entry variables: ``FunctionIR.copy`` copies
    them, which computed :class:`_EntryVars` for nothing the annotation reads. The annotation
    is a :class:`KernelTypeAnnotation`. An adjoint
    keeps each forward value it needs (a branch's condition, say) from the replay through the
    reverse sweep, so in every block between, and Numba's computation of the entry variables is
    sets of all of them in every block: 0.16 s of a 1,000-``if`` kernel's adjoint, 4.5 s at
    3,000 (under the profiler)."""

    _name = "weft_annotate_types"

    def __init__(self):
        _machinery.AnalysisPass.__init__(self)

    def run_pass(self, state):
        from numba.core.typed_passes import AnnotateTypes
        func_ir = state.func_ir
        entry_vars = func_ir.block_entry_vars
        if isinstance(entry_vars, _EntryVars) and entry_vars._pending is not None:
            func_ir.block_entry_vars = {}  # what the copy gets: computed when read there
        try:
            AnnotateTypes.run_pass(self, state)
        finally:
            func_ir.block_entry_vars = entry_vars
        annotation = state.type_annotation
        if type(annotation) is _type_annotations.TypeAnnotation:
            annotation.__class__ = KernelTypeAnnotation
        return False


_type_annotations = importlib.import_module("numba.core.annotations.type_annotations")


class KernelTypeAnnotation(_type_annotations.TypeAnnotation):
    """The type annotation of a generated function, whose text is made only when asked for
    (``annotate()``). Numba's cache entry keeps ``str()`` of a function's annotation, the
    typed IR printed beside every source line: for a generated kernel most of the entry (the
    adjoint of a 3,000-statement chain: 7.0 of 11.2 MB), and printing it grows faster than the
    kernel (0.35 s at 1,000 statements, 1.2-4.0 s at 3,000). Here ``str()`` is a line saying
    how to get it; ``inspect_types()`` prints that line. The generated source is what weft
    gives to read."""

    def __str__(self):
        return (f"(weft: the type annotation of generated function {self.func_id.func_qualname} "
                "is not kept; .annotate() makes it)")


class _Labels(list):
    """A function's jump targets, sorted as Numba keeps them (``_ByteCode.labels``), with
    membership by a set: Numba's bytecode walk asks ``offset in labels`` once per instruction,
    a scan of the list, so its time grew with instructions times branches (1.2 of 26.6 s of a
    600-``if`` forward's compile under the profiler)."""
    __slots__ = ("_members",)

    def __init__(self, labels):
        super().__init__(labels)
        self._members = frozenset(self)

    def __contains__(self, offset):
        return offset in self._members


_controlflow = importlib.import_module(CORE + ".controlflow")
_numba_backbone = _controlflow.CFGraph.backbone


def _backbone(self):
    """``CFGraph.backbone`` from the immediate post-dominators (``dominance``), Numba's own
    where that does not apply."""
    found = post_dominator_chain(self)
    return _numba_backbone(self) if found is None else found


def _bytecode_init(self, func_id):
    _numba_bytecode_init(self, func_id)
    self.labels = _Labels(self.labels)


_bytecode = importlib.import_module(CORE + ".bytecode")
_numba_bytecode_init = _bytecode._ByteCode.__init__
_numba_dead_maps = analysis.compute_dead_maps


def install_analyses():
    """Route Numba's live-variable analysis through :func:`_live_map` (Numba's passes call it as
    ``analysis.compute_live_map``), statements' variable lists through :func:`_list_vars` and
    the typing of calls through :func:`_resolve_function_type` (once). Other compiles keep
    Numba's functions. The dead-variable maps (:func:`compute_dead_maps`) and the bytecode's
    jump targets (:class:`_Labels`) are the same for every compile, in less time."""
    if analysis.compute_live_map is not _live_map:
        analysis.compute_live_map = _live_map
    if analysis.compute_dead_maps is not compute_dead_maps:
        analysis.compute_dead_maps = compute_dead_maps
    if _postproc.PostProcessor.run is not _postprocess:
        _postproc.PostProcessor.run = _postprocess
    if _bytecode._ByteCode.__init__ is not _bytecode_init:
        _bytecode._ByteCode.__init__ = _bytecode_init
    if CORE == "numba.core" and _controlflow.CFGraph.backbone is not _backbone:
        _controlflow.CFGraph.backbone = _backbone  # (numba-cuda's graph has its own internals)
    if ir.Inst._rec_list_vars is not _list_vars:
        ir.Inst._rec_list_vars = _list_vars
    if _typing_context.BaseContext.resolve_function_type is not _resolve_function_type:
        _typing_context.BaseContext.resolve_function_type = _resolve_function_type


@contextlib.contextmanager
def compiling_generated_code():
    """Within: this thread compiles generated code (see :func:`_live_map`), with the cycle
    collector paused (``startup.collector_paused``)."""
    with collector_paused():
        _compiling.depth = getattr(_compiling, "depth", 0) + 1
        try:
            yield
        finally:
            _compiling.depth -= 1


# -- the variables of a statement ---------------------------------------------------------------
#
# Every analysis Numba runs between passes (use-defs, liveness, the ``del`` placement of its
# post-processor, about seven times per compile) asks each statement for its variables;
# ``Inst._rec_list_vars`` answers by a recursive walk of the statement's attributes with four
# ``isinstance`` tests per value (its location, names, constants...): 11% of a compile of the
# 4x4 determinant's module under the profiler. :func:`_list_vars` gives the same list, in the same
# order, deciding most values by their exact type first.

_LEAVES = frozenset({str, int, float, bool, type(None), type(len), ir.Loc, ir.Const, ir.Global,
                     ir.FreeVar, ir.Arg, ir.Scope, type(ir.UNDEFINED)})


def _collect_vars(val, out):
    """Append the variables in ``val`` (a statement's attributes, an expression's arguments) to
    ``out``, as Numba's walk lists them."""
    kind = type(val)
    if kind is dict:
        items = val.values()
    elif kind is list or kind is tuple:
        items = val
    else:
        items = (val,)
    for v in items:
        kind = type(v)
        if kind is ir.Var:
            out.append(v)
        elif kind in _LEAVES:
            continue
        elif kind is ir.Expr:  # its ``list_vars``: its arguments
            _collect_vars(v._kws, out)
        elif kind is dict or kind is list or kind is tuple:
            _collect_vars(v, out)
        elif isinstance(v, _VAR_TYPES):  # (what Numba's walk tests, in its order)
            out.append(v)
        elif isinstance(v, _INST_TYPES):
            out.extend(v.list_vars())
        elif isinstance(v, (list, tuple, dict)):
            _collect_vars(list(v.values()) if isinstance(v, dict) else list(v), out)


def _list_vars(self, val):
    """``Inst._rec_list_vars``: Numba's (``_numba_list_vars``) except while generated code
    compiles, then :func:`_collect_vars` (the same list)."""
    if getattr(_compiling, "depth", 0) <= 0 or not LEAN_TYPING:
        return _numba_list_vars(self, val)
    out = []
    _collect_vars(val, out)
    return out


_numba_list_vars = ir.Inst._rec_list_vars


# -- numba-cuda ---------------------------------------------------------------------------------

def for_cuda():
    """These passes for numba-cuda's copy of Numba's core (``numba.cuda.core``, with IR classes
    of its own): this module's text loaded once more with ``CORE`` set to it; None without
    numba-cuda. Its compile flag is this module's."""
    global _cuda_variant
    if _cuda_variant is None and CORE == "numba.core":
        import importlib.util
        import sys
        try:
            importlib.import_module("numba.cuda.core.ir")
        except ImportError:
            return None
        name = __name__.rsplit(".", 1)[0] + "._numba_passes_cuda"
        spec = importlib.util.spec_from_file_location(name, __file__)
        mod = importlib.util.module_from_spec(spec)
        mod._WEFT_NUMBA_CORE = "numba.cuda.core"
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _cuda_variant = mod
    return _cuda_variant


_cuda_variant = None


# -- the typing of operators ----------------------------------------------------------------------
#
# Numba types every ``+``, ``*``, ``<``... by trying the operator's typing templates in turn
# (dozens for ``operator.add``: arrays, sets, strings, NumPy scalars...), every time: the 4x4
# determinant's module asks 11,284 times for 60 distinct questions. On plain values (numbers and
# tuples of them, no literal types) the answer depends only on the typing context, the function
# type and the argument types, so while generated code compiles it is kept: the same
# ``Signature`` Numba returned, and the function type has recorded its implementation for
# those arguments when it first answered, as lowering expects.

_OPERATORS = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.neg, operator.pos, operator.not_, operator.lt, operator.le,
    operator.gt, operator.ge, operator.eq, operator.ne, operator.iadd, operator.isub,
    operator.imul, operator.itruediv})
_PLAIN = (types.Float, types.Integer, types.Boolean)
#: reading or writing an element of an array of plain values with plain indices: the answer
#: depends on the same three things (``a[i]`` is typed again for every statement that reads it:
#: 1,700 times for the adjoint of a 100-statement chain)
_ITEMS = frozenset({operator.getitem, operator.setitem})
_resolved = {}

#: the typing of operators is kept and statements' variables walked by :func:`_collect_vars`
#: (False: Numba's, for side-by-side measurements: ``benchmarks/bench_compile_passes.py``)
LEAN_TYPING = True


def _plain(ty):
    if isinstance(ty, types.Literal):
        return False
    if isinstance(ty, _PLAIN):
        return True
    return isinstance(ty, types.BaseTuple) and all(_plain(t) for t in ty.types)


def _keeps(op, args, kws):
    """Whether the typing of ``op`` on ``args`` is kept: an operator on plain values, no
    keywords, while generated code compiles (see above)."""
    if kws or not LEAN_TYPING or getattr(_compiling, "depth", 0) <= 0:
        return False
    try:
        if op in _OPERATORS:
            return all(_plain(a) for a in args)
        if op in _ITEMS:  # an array's element: the array, plain indices (and value)
            return len(args) >= 2 and isinstance(args[0], types.Array) and \
                _plain(args[0].dtype) and all(_plain(a) for a in args[1:])
        return False
    except TypeError:  # an unhashable key: not an operator
        return False


def _kept(store, key, answer):
    """``store[key]``, from ``answer()`` the first time (a None answer is not kept)."""
    sig = store.get(key)
    if sig is None:
        sig = answer()
        if sig is not None:
            store[key] = sig
    return sig


def _resolve_function_type(self, func, args, kws):
    """``BaseContext.resolve_function_type``: Numba's, its answer kept for operators on plain
    values while generated code compiles (see above)."""
    op = func.typing_key if isinstance(func, types.Function) else func
    if not _keeps(op, args, kws):
        return _numba_resolve(self, func, args, kws)
    return _kept(_resolved, (self, func, tuple(args)),
                 lambda: _numba_resolve(self, func, args, kws))


_numba_resolve = _typing_context.BaseContext.resolve_function_type
