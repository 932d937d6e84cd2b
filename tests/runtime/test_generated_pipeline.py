"""Generated CPU modules compile through weft's Numba pipeline: Numba's nopython passes less
``InlineClosureLikes`` (closures, ``reduce``, stencils and array comprehensions, none of which
generated code has; its clean-up grows quadratically with a function's size), with weft's
``SimplifyGeneratedCode`` first, its ``ReconstructSSAByMentions`` for Numba's SSA pass, and
lowering that counts references only for values holding them (``DropPlainDels``). The
passes that run, and the values, are checked here; the suite runs every kernel through it."""
import numpy as np
from numba.core import typed_passes, untyped_passes
from numba.core.compiler import DefaultPassBuilder, Flags, StateDict
from numba.core.registry import CPUDispatcher

import weft as wp
from weft.runtime.numba_lowering import DropPlainDels, lowering_pass
from weft.runtime.numba_passes import AnnotateTypesUnforced, ReconstructSSAByMentions
from weft.runtime.numba_simplify import SimplifyGeneratedCode
from weft.runtime.numba_start import generated_code_compiler


@wp.func
def twice(v: wp.vec3):
    return v * 2.0


@wp.kernel
def scale_rows(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3), n: int):
    i = wp.tid()
    s = wp.vec3()
    for _ in range(n):
        s = s + twice(x[i])
    y[i] = s


def test_every_function_of_a_module_uses_the_pipeline_and_computes_the_same():
    x = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3,
                 requires_grad=True)
    y = wp.zeros(4, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale_rows, 4, inputs=[x, y, 3])
    tape.backward(grads={y: np.ones((4, 3), np.float32)})
    np.testing.assert_array_equal(y.numpy(), 6.0 * np.arange(12).reshape(4, 3))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 6.0))
    ck = scale_rows.compiled("cpu")
    mod = ck.entry("forward", "serial").py_func.__globals__
    dispatchers = [getattr(v, "weft_chunk_of", v) for v in mod.values()
                   if not isinstance(v, type(np))]
    dispatchers = [d for d in dispatchers if isinstance(d, CPUDispatcher)]
    assert len(dispatchers) >= 8  # the func, its adjoint and tangent, the kernel's entries
    # the class made at the first compile (numba_start._CompilerAtFirstCompile)
    from weft.runtime.numba_start import _CompilerAtFirstCompile
    assert all(d._compiler.pipeline_class is _CompilerAtFirstCompile for d in dispatchers)
    # compiled without the C-callable wrapper (nothing calls them through one)
    from numba.core.registry import cpu_target
    compiler = _CompilerAtFirstCompile(cpu_target.typing_context, cpu_target.target_context,
                                       None, (), None, Flags(), {})
    assert type(compiler) is generated_code_compiler()
    assert compiler.state.flags.no_cfunc_wrapper and not Flags().no_cfunc_wrapper
    state = StateDict()
    state.flags = Flags()
    state.func_ir = None
    full = [p for p, _ in DefaultPassBuilder.define_nopython_pipeline(state).passes]

    class Probe(generated_code_compiler()):
        def __init__(self):
            self.state = state
    ours = [p for p, _ in Probe().define_pipelines()[0].passes]
    assert untyped_passes.InlineClosureLikes in full
    expected = []
    for p in full:
        if p is untyped_passes.IRProcessing:
            expected.append(SimplifyGeneratedCode)
        if p is untyped_passes.ReconstructSSA:
            expected.append(ReconstructSSAByMentions)
        elif p is typed_passes.NativeLowering:
            expected.append(lowering_pass())
        elif p is typed_passes.AnnotateTypes:
            expected.append(AnnotateTypesUnforced)
        elif p is not untyped_passes.InlineClosureLikes:
            expected.append(p)
        if p is typed_passes.IRLegalization:
            expected.append(DropPlainDels)
    assert ours == expected
    assert issubclass(lowering_pass(), typed_passes.NativeLowering)


@wp.func
def row_sum(r: wp.array(dtype=float)):
    return r[0] + r[1] + r[2]


@wp.kernel
def views_and_tiles(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    row = a[i]              # a view: a counted reference, copied and released
    m = wp.mat33(row[0], row[1], row[2], 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)  # plain values
    t = wp.tile_load(a[i], shape=3)   # a tile: memory of its own
    out[i] = row_sum(row) + wp.determinant(m) + wp.tile_sum(t)[0]


def test_lowering_counts_references_of_arrays_and_only_of_them():
    """``DropPlainDels`` and the lowering pass leave Numba's reference counting of arrays (views,
    tiles) exactly as it was: after the first launch (compiles and caches),
    launches allocate and free the same number of blocks; plain values are counted nowhere
    (types holding a reference in a member are counted, as Numba counts them)."""
    from numba.core import types
    from numba.core.registry import cpu_target
    from numba.core.runtime import _nrt_python, rtsys

    from weft.runtime.numba_lowering import refcounted
    ctx = cpu_target.target_context
    f32 = types.float32
    arr = types.Array(f32, 1, "A")
    assert refcounted(ctx, arr) and refcounted(ctx, types.Tuple((f32, arr)))
    assert refcounted(ctx, types.Tuple((types.UniTuple(f32, 3), types.Tuple((f32, arr)))))
    assert not refcounted(ctx, types.UniTuple(types.UniTuple(f32, 4), 4))
    assert not refcounted(ctx, types.int64) and not refcounted(ctx, types.boolean)

    a = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=float, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)

    def run():
        tape = wp.Tape()
        with tape:
            wp.launch(views_and_tiles, 4, inputs=[a, out])
        tape.backward(grads={out: np.ones(4, np.float32)})
        return tape

    run().zero()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(5):
            run().zero()
        after = rtsys.get_allocation_stats()
    finally:
        _nrt_python.memsys_disable_stats()
    assert after.alloc - before.alloc == after.free - before.free
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
    assert after.alloc > before.alloc  # the tiles were allocated (and freed)
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    det = np.linalg.det(np.stack([np.vstack([r, [1, 2, 3], [4, 5, 6]]) for r in x]))
    np.testing.assert_allclose(out.numpy(), 2 * x.sum(1) + det, rtol=1e-5)
