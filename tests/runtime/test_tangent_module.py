"""A CPU release module leaves out its kernels' tangent functions (a third of a kernel's
generated code, which only forward mode runs); the first forward-mode launch loads the module
that holds them (``CompiledKernel.tangent_module``). What a user reads stays whole: ``source()``
is the module ``weft transpile`` writes."""
import ast

import numpy as np

import weft as wp


@wp.func
def _wave(x: float):
    return x * wp.sin(x)


@wp.kernel
def _lazy_tan(a: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = _wave(a[i]) * s


def _defined(source):
    return {d.name for d in ast.parse(source).body if isinstance(d, ast.FunctionDef)}


def _inputs():
    x = np.linspace(-1.0, 2.0, 8)
    a = wp.array(x.astype(np.float32), requires_grad=True)
    out = wp.zeros(8, dtype=float, requires_grad=True)
    return x, a, out


def test_release_module_leaves_out_the_kernel_tangents_and_jvp_loads_them():
    x, a, out = _inputs()
    wp.launch(_lazy_tan, 8, inputs=[a, 3.0], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 3.0 * x * np.sin(x), rtol=1e-6, atol=1e-6)
    ck = _lazy_tan.compiled("cpu")
    loaded = _defined(ck.module.__weft_source__)
    assert {"_lazy_tan__fwd", "_lazy_tan__adj", "_lazy_tan__fwd_serial"} <= loaded
    assert not {n for n in loaded if n.startswith("_lazy_tan__jvp")}
    assert "_wave__jvp" in loaded  # funcs keep theirs (weft's library modules stay the same)
    assert ck.abi.entries["tangent"]["cpu"] == "_lazy_tan__jvp"  # the ABI names it still

    # forward mode: d out / d a = s (sin x + x cos x), and d out / d s = x sin x
    ta = wp.array(np.ones(8, np.float32))
    got = wp.jvp(_lazy_tan, 8, inputs=[a, 3.0], outputs=[out], tangents={a: ta})
    np.testing.assert_allclose(got[out].numpy(), 3.0 * (np.sin(x) + x * np.cos(x)),
                               rtol=1e-5, atol=1e-5)
    got = wp.jvp(_lazy_tan, 8, inputs=[a, 3.0], outputs=[out], tangents={"s": 1.0})
    np.testing.assert_allclose(got[out].numpy(), x * np.sin(x), rtol=1e-5, atol=1e-5)
    whole = ck.tangent_module()
    assert whole is not ck.module and ck.tangent_module() is whole  # loaded once
    assert {"_lazy_tan__jvp", "_lazy_tan__jvp_chunk", "_lazy_tan__jvp_serial"} <= \
        _defined(whole.__weft_source__)
    assert _defined(whole.__weft_source__) - loaded == \
        {"_lazy_tan__jvp", "_lazy_tan__jvp_chunk", "_lazy_tan__jvp_serial"}

    # reverse mode still runs from the module without tangents
    tape = wp.Tape()
    with tape:
        wp.launch(_lazy_tan, 8, inputs=[a, 3.0], outputs=[out])
    tape.backward(grads={out: wp.array(np.ones(8, np.float32))})
    np.testing.assert_allclose(a.grad.numpy(), 3.0 * (np.sin(x) + x * np.cos(x)),
                               rtol=1e-5, atol=1e-5)


def test_source_is_the_whole_module():
    src = _lazy_tan.source("all")
    names = _defined(src)
    assert {"_lazy_tan__fwd", "_lazy_tan__adj", "_lazy_tan__jvp", "_wave__jvp"} <= names
    tangent = _lazy_tan.source("tangent")
    assert tangent.lstrip().startswith("@") and "def _lazy_tan__jvp(" in tangent
    # the forward and adjoint a launch runs are the whole module's, word for word
    from weft.runtime.compiled import function_source
    ck = _lazy_tan.compiled("cpu")
    for kind in ("forward", "adjoint"):
        assert _lazy_tan.source(kind) == function_source(ck.module.__weft_source__,
                                                         ck.abi.entries[kind]["cpu"])


@wp.kernel(mode="debug")
def _debug_tan(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = _wave(a[i])


def test_debug_module_keeps_its_tangents():
    # a debug module numbers the checked sites of all its functions: it stays whole, and its
    # tangent runs from it
    x, a, out = _inputs()
    ta = wp.array(np.ones(8, np.float32))
    got = wp.jvp(_debug_tan, 8, inputs=[a], outputs=[out], tangents={a: ta})
    np.testing.assert_allclose(got[out].numpy(), np.sin(x) + x * np.cos(x), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(out.numpy(), x * np.sin(x), rtol=1e-6, atol=1e-6)
    ck = _debug_tan.compiled("cpu", "debug")
    assert ck.tangent_module() is ck.module
    assert "_debug_tan__jvp" in _defined(ck.module.__weft_source__)
    from weft.runtime.kernel import _without_tangents
    assert _without_tangents("cpu", "release")
    assert not _without_tangents("cpu", "debug") and not _without_tangents("cuda", "release")
    assert not _without_tangents("cpu", "guarded:a")
