"""Long chains of arithmetic are cut for LLVM's loop vectorizer (``numba_lowering._cut_chain``):
a value ending a chain of ``CHAIN_CUT_DEPTH`` operations passes through ``llvm.canonicalize``,
the identity on the result of an arithmetic operation. The launches' values, gradients and
tangents equal NumPy's float32 arithmetic done in the same order (bit for bit), and a function
compiled anew with the cuts has them in its LLVM and computes the same bits as one compiled
without them."""
import numba
import numpy as np
import pytest

import weft as wp
from weft.runtime import numba_lowering
from weft.runtime.numba_start import generated_code_compiler

CX = [1.0 + 0.01 * (k % 7) for k in range(60)]  # as written in the kernel below
DX = [0.125 * (k % 5) for k in range(60)]
CU = [1.0 - 0.01 * (k % 3) for k in range(20)]


@wp.kernel
def long_chain(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),
               y: wp.array(dtype=float), w: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x = a[i]
    u = v[i]
    x = x * 1.0 + 0.0
    x = x * 1.01 + 0.125
    x = x * 1.02 + 0.25
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.03 + 0.375
    x = x * 1.04 + 0.5
    x = x * 1.05 + 0.0
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.06 + 0.125
    x = x * 1.0 + 0.25
    x = x * 1.01 + 0.375
    u = u * 0.98 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.02 + 0.5
    x = x * 1.03 + 0.0
    x = x * 1.04 + 0.125
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.05 + 0.25
    x = x * 1.06 + 0.375
    x = x * 1.0 + 0.5
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.01 + 0.0
    x = x * 1.02 + 0.125
    x = x * 1.03 + 0.25
    u = u * 0.98 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.04 + 0.375
    x = x * 1.05 + 0.5
    x = x * 1.06 + 0.0
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.0 + 0.125
    x = x * 1.01 + 0.25
    x = x * 1.02 + 0.375
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.03 + 0.5
    x = x * 1.04 + 0.0
    x = x * 1.05 + 0.125
    u = u * 0.98 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.06 + 0.25
    x = x * 1.0 + 0.375
    x = x * 1.01 + 0.5
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.02 + 0.0
    x = x * 1.03 + 0.125
    x = x * 1.04 + 0.25
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.05 + 0.375
    x = x * 1.06 + 0.5
    x = x * 1.0 + 0.0
    u = u * 0.98 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.01 + 0.125
    x = x * 1.02 + 0.25
    x = x * 1.03 + 0.375
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.04 + 0.5
    x = x * 1.05 + 0.0
    x = x * 1.06 + 0.125
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.0 + 0.25
    x = x * 1.01 + 0.375
    x = x * 1.02 + 0.5
    u = u * 0.98 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.03 + 0.0
    x = x * 1.04 + 0.125
    x = x * 1.05 + 0.25
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.06 + 0.375
    x = x * 1.0 + 0.5
    x = x * 1.01 + 0.0
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.02 + 0.125
    x = x * 1.03 + 0.25
    x = x * 1.04 + 0.375
    u = u * 0.98 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.05 + 0.5
    x = x * 1.06 + 0.0
    x = x * 1.0 + 0.125
    u = u * 1.0 + wp.vec3(0.5, 0.25, 0.125)
    x = x * 1.01 + 0.25
    x = x * 1.02 + 0.375
    x = x * 1.03 + 0.5
    u = u * 0.99 + wp.vec3(0.5, 0.25, 0.125)
    y[i] = x
    w[i] = u


def _reference(a, v):
    f = np.float32
    x, u = a.copy(), v.copy()
    for k in range(60):
        x = x * f(CX[k]) + f(DX[k])
        if k % 3 == 2:
            u = u * f(CU[k // 3]) + np.array([0.5, 0.25, 0.125], f)
    gx = f(1.0)  # the adjoint multiplies by each factor, last first
    for c in reversed(CX):
        gx = gx * f(c)
    gu = f(1.0)
    for c in reversed(CU):
        gu = gu * f(c)
    return x, u, gx, gu


def _inputs(n):
    rng = np.random.default_rng(3)
    return (rng.uniform(0.5, 1.5, n).astype(np.float32),
            rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32))


def _launch_and_backward(a_np, v_np):
    """The kernel launched on a tape, then its adjoint with ones for both outputs' gradients:
    (a, v, y, w)."""
    n = len(a_np)
    a = wp.array(a_np, requires_grad=True)
    v = wp.array(v_np, dtype=wp.vec3, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    w = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(long_chain, n, inputs=[a, v], outputs=[y, w])
    tape.backward(grads={y: np.ones(n, np.float32), w: np.ones((n, 3), np.float32)})
    return a, v, y, w


@pytest.mark.parametrize("n", [100, 700])  # serial, threaded (config.serial_threshold 256)
def test_values_gradients_and_tangents_are_numpys_bits(n):
    a_np, v_np = _inputs(n)
    a, v, y, w = _launch_and_backward(a_np, v_np)
    x_ref, u_ref, gx, gu = _reference(a_np, v_np)
    np.testing.assert_array_equal(y.numpy(), x_ref)
    np.testing.assert_array_equal(w.numpy(), u_ref)
    np.testing.assert_array_equal(a.grad.numpy(), np.full(n, gx))
    np.testing.assert_array_equal(v.grad.numpy(), np.full((n, 3), gu))
    # analytic, in float64: the product of the factors
    np.testing.assert_allclose(a.grad.numpy(), np.prod(CX), rtol=1e-5)
    da = np.linspace(-1.0, 1.0, n).astype(np.float32)
    t = wp.jvp(long_chain, n, inputs=[a, v], outputs=[y, w], tangents={a: da})
    np.testing.assert_allclose(t[y].numpy(), da * np.prod(CX), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(t[w].numpy(), np.zeros((n, 3), np.float32))


def _compiled_anew(disp, cuts):
    """Generated function ``disp`` compiled again by the generated-code pipeline, in a
    dispatcher of its own (no cache), with the chains cut or not: (dispatcher, LLVM text)."""
    saved = numba_lowering.CHAIN_CUTS
    numba_lowering.CHAIN_CUTS = cuts
    try:
        fresh = numba.njit(pipeline_class=generated_code_compiler(), error_model="numpy",
                           nogil=True)(disp.py_func)
        sig = disp.signatures[0]
        fresh.compile(sig)
        return fresh, fresh.inspect_llvm(sig)
    finally:
        numba_lowering.CHAIN_CUTS = saved


def _arguments(sig, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for ty in sig:
        if isinstance(ty, numba.types.Array):
            shape = (n,) if ty.ndim == 1 else (n, 3)
            out.append(rng.uniform(0.5, 1.5, shape).astype(ty.dtype.name))
        else:  # the launch's dimensions
            out.append((n,))
    return out


def _serial(kernel, kind):
    """``kernel``'s serial twin for ``kind``, compiled for the types its launch passed: a
    small launch runs the threaded entry's chunk instead when that is compiled already
    (``background.serial_entry``), and then the twin is compiled here for the chunk's types."""
    from weft.runtime import background
    ck = kernel.compiled("cpu")
    entry = ck.entry(kind, "serial")
    if not entry.signatures:
        chunk = background.whole_launch(ck, ck.entry(kind, "cpu")).dispatcher
        entry.compile(chunk.signatures[0][2:])  # (start, end, then the entry's own)
    return entry


def _same_bits_with_and_without_cuts(entry, n, seed):
    """Generated function ``entry`` compiled anew with the cuts and without, each run on the
    same arguments: every array equal bit for bit. Returns both LLVM texts."""
    cut, cut_text = _compiled_anew(entry, True)
    plain, plain_text = _compiled_anew(entry, False)
    sig = entry.signatures[0]
    got, want = _arguments(sig, n, seed), _arguments(sig, n, seed)
    cut(*got)
    plain(*want)
    for g, e in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    return cut_text, plain_text


@pytest.mark.uncached  # compiles dispatchers of its own on every run
@pytest.mark.parametrize("kind", ["forward", "adjoint"])
def test_cut_functions_have_canonicalize_and_compute_the_same_bits(kind):
    n = 50
    a_np, v_np = _inputs(n)
    wp.launch(long_chain, n, inputs=[wp.array(a_np), wp.array(v_np, dtype=wp.vec3)],
              outputs=[wp.zeros(n, dtype=float), wp.zeros(n, dtype=wp.vec3)])
    if kind == "adjoint":
        _launch_and_backward(a_np, v_np)
    entry = _serial(long_chain, kind)
    cut_text, plain_text = _same_bits_with_and_without_cuts(entry, n, 1)
    assert "llvm.canonicalize" in cut_text and "llvm.canonicalize" not in plain_text


@wp.kernel
def short_chain(a: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a[i] * 2.0 + wp.sin(a[i])


@pytest.mark.uncached  # compiles a dispatcher of its own on every run
def test_a_short_kernel_has_no_cut():
    a = wp.array(np.ones(8, np.float32))
    y = wp.zeros(8, dtype=float)
    wp.launch(short_chain, 8, inputs=[a], outputs=[y])
    np.testing.assert_allclose(y.numpy(), 2.0 + np.sin(1.0), rtol=1e-6)
    _, text = _compiled_anew(_serial(short_chain, "forward"), True)
    assert "define" in text and "llvm.canonicalize" not in text


@pytest.mark.optimised  # what LLVM makes at level 3
@pytest.mark.uncached  # compiles a dispatcher of its own on every run
def test_the_cut_loop_is_still_vectorized():
    import re
    n = 50
    a_np, v_np = _inputs(n)
    wp.launch(long_chain, n, inputs=[wp.array(a_np), wp.array(v_np, dtype=wp.vec3)],
              outputs=[wp.zeros(n, dtype=float), wp.zeros(n, dtype=wp.vec3)])
    entry = _serial(long_chain, "forward")
    text, _ = _same_bits_with_and_without_cuts(entry, n, 2)
    # the launch's loop was vectorized across indices with the cuts in it
    assert re.search(r"llvm\.canonicalize\.v\d+f32", text), text[:2000]


# twenty lines of three updates each, as F64 and F16 list them
F64 = [(1.0 + 0.001 * k, 0.125 * (k % 3)) for k in range(60)]
F16 = [0.25 * (k % 4) for k in range(60)]


@wp.kernel
def long_chain_f16_f64(a: wp.array(dtype=wp.float16), b: wp.array(dtype=wp.float64),
                       y: wp.array(dtype=wp.float16), z: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = a[i]
    u = b[i]
    u = ((u * 1.0 + 0.0) * 1.001 + 0.125) * 1.002 + 0.25
    x = ((x + wp.float16(0.0)) + wp.float16(0.25)) + wp.float16(0.5)
    u = ((u * 1.003 + 0.0) * 1.004 + 0.125) * 1.005 + 0.25
    x = ((x + wp.float16(0.75)) + wp.float16(0.0)) + wp.float16(0.25)
    u = ((u * 1.006 + 0.0) * 1.007 + 0.125) * 1.008 + 0.25
    x = ((x + wp.float16(0.5)) + wp.float16(0.75)) + wp.float16(0.0)
    u = ((u * 1.009 + 0.0) * 1.01 + 0.125) * 1.011 + 0.25
    x = ((x + wp.float16(0.25)) + wp.float16(0.5)) + wp.float16(0.75)
    u = ((u * 1.012 + 0.0) * 1.013 + 0.125) * 1.014 + 0.25
    x = ((x + wp.float16(0.0)) + wp.float16(0.25)) + wp.float16(0.5)
    u = ((u * 1.015 + 0.0) * 1.016 + 0.125) * 1.017 + 0.25
    x = ((x + wp.float16(0.75)) + wp.float16(0.0)) + wp.float16(0.25)
    u = ((u * 1.018 + 0.0) * 1.019 + 0.125) * 1.02 + 0.25
    x = ((x + wp.float16(0.5)) + wp.float16(0.75)) + wp.float16(0.0)
    u = ((u * 1.021 + 0.0) * 1.022 + 0.125) * 1.023 + 0.25
    x = ((x + wp.float16(0.25)) + wp.float16(0.5)) + wp.float16(0.75)
    u = ((u * 1.024 + 0.0) * 1.025 + 0.125) * 1.026 + 0.25
    x = ((x + wp.float16(0.0)) + wp.float16(0.25)) + wp.float16(0.5)
    u = ((u * 1.027 + 0.0) * 1.028 + 0.125) * 1.029 + 0.25
    x = ((x + wp.float16(0.75)) + wp.float16(0.0)) + wp.float16(0.25)
    u = ((u * 1.03 + 0.0) * 1.031 + 0.125) * 1.032 + 0.25
    x = ((x + wp.float16(0.5)) + wp.float16(0.75)) + wp.float16(0.0)
    u = ((u * 1.033 + 0.0) * 1.034 + 0.125) * 1.035 + 0.25
    x = ((x + wp.float16(0.25)) + wp.float16(0.5)) + wp.float16(0.75)
    u = ((u * 1.036 + 0.0) * 1.037 + 0.125) * 1.038 + 0.25
    x = ((x + wp.float16(0.0)) + wp.float16(0.25)) + wp.float16(0.5)
    u = ((u * 1.039 + 0.0) * 1.04 + 0.125) * 1.041 + 0.25
    x = ((x + wp.float16(0.75)) + wp.float16(0.0)) + wp.float16(0.25)
    u = ((u * 1.042 + 0.0) * 1.043 + 0.125) * 1.044 + 0.25
    x = ((x + wp.float16(0.5)) + wp.float16(0.75)) + wp.float16(0.0)
    u = ((u * 1.045 + 0.0) * 1.046 + 0.125) * 1.047 + 0.25
    x = ((x + wp.float16(0.25)) + wp.float16(0.5)) + wp.float16(0.75)
    u = ((u * 1.048 + 0.0) * 1.049 + 0.125) * 1.05 + 0.25
    x = ((x + wp.float16(0.0)) + wp.float16(0.25)) + wp.float16(0.5)
    u = ((u * 1.051 + 0.0) * 1.052 + 0.125) * 1.053 + 0.25
    x = ((x + wp.float16(0.75)) + wp.float16(0.0)) + wp.float16(0.25)
    u = ((u * 1.054 + 0.0) * 1.055 + 0.125) * 1.056 + 0.25
    x = ((x + wp.float16(0.5)) + wp.float16(0.75)) + wp.float16(0.0)
    u = ((u * 1.057 + 0.0) * 1.058 + 0.125) * 1.059 + 0.25
    x = ((x + wp.float16(0.25)) + wp.float16(0.5)) + wp.float16(0.75)
    y[i] = x
    z[i] = u


def test_float64_and_float16_chains_keep_their_bits():
    _check_float64_and_float16_chains()


def _check_float64_and_float16_chains():
    """Launch (serial: config.serial_threshold is 256) and check the values; returns the
    forward's serial entry."""
    n = 200
    b_np = np.linspace(-1.0, 1.0, n)
    a = wp.array(np.zeros(n, np.float16), dtype=wp.float16)
    b = wp.array(b_np, dtype=wp.float64)
    y = wp.zeros(n, dtype=wp.float16)
    z = wp.zeros(n, dtype=wp.float64)
    wp.launch(long_chain_f16_f64, n, inputs=[a, b], outputs=[y, z])
    u = b_np.copy()
    for c, d in F64:
        u = u * c + d
    np.testing.assert_array_equal(z.numpy(), u)  # float64 arithmetic, the same bits
    np.testing.assert_array_equal(y.numpy(), np.full(n, sum(F16), np.float16))  # (exact)
    return _serial(long_chain_f16_f64, "forward")


@pytest.mark.uncached  # compiles a dispatcher of its own on every run
def test_cuts_are_float64_and_float32_never_float16():
    # Numba adds halves in float32 (``float16(x + c)``): that chain is cut on its float32
    # values, never as a half (x86 has no half arithmetic)
    entry = _check_float64_and_float16_chains()
    _, text = _compiled_anew(entry, True)
    assert "llvm.canonicalize.f64" in text and "llvm.canonicalize.f32" in text
    assert "canonicalize.f16" not in text


# sixty updates of one array element: LLVM forwards each store to the next load, one chain of
# additions through memory that the IR's variables do not show
CM = [1.0 + 0.01 * (k % 7) for k in range(60)]


def _memory_chain(folder):
    """The kernel ``y[i] = y[i] + a[i] * c`` for each ``c`` of ``CM`` (sixty statements: a
    loop would not be a chain of straight-line code), written to a module in ``folder``."""
    import importlib.util
    path = folder / "memory_chain_module.py"
    path.write_text("import weft as wp\n\n\n@wp.kernel\n"
                    "def memory_chain(a: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
                    "    i = wp.tid()\n" +
                    "".join(f"    y[i] = y[i] + a[i] * {c!r}\n" for c in CM))
    spec = importlib.util.spec_from_file_location("memory_chain_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.memory_chain


@pytest.mark.uncached  # compiles dispatchers of its own on every run
def test_a_chain_through_an_array_element_is_cut(tmp_path):
    memory_chain = _memory_chain(tmp_path)
    n = 50
    a_np, _ = _inputs(n)
    y0 = np.linspace(-1.0, 1.0, n).astype(np.float32)
    a, y = wp.array(a_np), wp.array(y0)
    wp.launch(memory_chain, n, inputs=[a], outputs=[y])
    f = np.float32
    want = y0.copy()
    for c in CM:
        want = want + a_np * f(c)
    np.testing.assert_array_equal(y.numpy(), want)
    entry = _serial(memory_chain, "forward")
    cut_text, plain_text = _same_bits_with_and_without_cuts(entry, n, 4)
    assert "llvm.canonicalize" in cut_text and "llvm.canonicalize" not in plain_text
