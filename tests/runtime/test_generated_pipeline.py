"""Generated CPU modules compile through weft's Numba pipeline: Numba's nopython passes less
``InlineClosureLikes`` (closures, ``reduce``, stencils and array comprehensions, none of which
generated code has; its clean-up grows quadratically with a function's size), with weft's
``SimplifyGeneratedCode`` first and its ``ReconstructSSAByMentions`` for Numba's SSA pass. The
passes that run, and the values, are checked here; the suite runs every kernel through it."""
import numpy as np
from numba.core import untyped_passes
from numba.core.compiler import DefaultPassBuilder, Flags, StateDict
from numba.core.registry import CPUDispatcher

import weft as wp
from weft.runtime.numba_passes import ReconstructSSAByMentions, SimplifyGeneratedCode
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
    assert all(d._compiler.pipeline_class is generated_code_compiler() for d in dispatchers)
    # compiled without the C-callable wrapper (nothing calls them through one)
    from numba.core.registry import cpu_target
    compiler = generated_code_compiler()(cpu_target.typing_context, cpu_target.target_context,
                                         None, (), None, Flags(), {})
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
        elif p is not untyped_passes.InlineClosureLikes:
            expected.append(p)
    assert ours == expected
