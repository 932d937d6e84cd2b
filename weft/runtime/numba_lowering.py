"""Lowering of generated CPU code without reference counting of plain values.

Numba's lowering treats every variable as if it might hold a reference; generated code is
mostly tuples of floats, which hold none. :class:`DropPlainDels` and :func:`lowering_pass`
leave those out (see below); arrays, tiles and anything holding one are counted as Numba
counts them (``tests/runtime/test_generated_pipeline.py`` checks the NRT's allocations and
frees). Used by ``numba_start.generated_code_compiler``; numba-cuda's pipeline keeps its own
lowering (NVVM then emits other code, which no test here can run).
"""
from __future__ import annotations

from numba.core import ir
from numba.core.compiler_machinery import AnalysisPass, register_pass

# -- lowering without reference counting of plain values -----------------------------------------
#
# Numba's lowering treats every variable as if it might hold a reference: legalization inserts a
# ``del`` after each variable's last use (half the statements of generated code), lowering a
# ``del`` loads the variable and stores zero into its slot, and every copy (``incref``), store
# over an old value and ``del`` (``decref``) walks the value's type, emitting an
# ``extract_value`` for every member of a tuple, recursively (a ``mat44`` copy: 16), before it
# finds nothing to count. Generated code is mostly tuples of floats. For values of a type that
# holds no NRT reference, the statements and the instructions go; arrays and anything holding
# one keep Numba's treatment exactly.

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
