"""A kernel's threaded entries (``k__fwd``, ``k__adj``, ``k__jvp``: unpack the arguments, hand
the chunk to the threads, sum per-thread buffers) and its chunks' CPython wrappers (never run by
the threads) are compiled without LLVM's optimiser (``numba_lowering._unoptimised``): those
LLVM functions are ``optnone``, the chunks themselves are optimised as before, and threaded
launches give the same values and gradients as the serial ones and as NumPy, forward, adjoint
(with per-thread buffers for a scattered gradient) and tangent; a chunk called from Python
through its wrapper gives the launch's values."""
import numba
import numpy as np
import pytest

import weft as wp
from weft.runtime.numba_lowering import _launches_threads
from weft.runtime.numba_start import generated_code_compiler

N = 600  # threaded (config.serial_threshold is 256)


@wp.kernel
def gather_scale(x: wp.array(dtype=float), idx: wp.array(dtype=int), s: float,
                 y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[idx[i]]
    y[i] = s * v * v + wp.sin(v)


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(50).astype(np.float32)
    idx = rng.integers(0, 50, n).astype(np.int32)
    return x, idx


def _run(n):
    x_np, idx_np = _inputs(n)
    x = wp.array(x_np, requires_grad=True)
    idx = wp.array(idx_np)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(gather_scale, n, inputs=[x, idx, 1.5], outputs=[y])
    tape.backward(grads={y: np.ones(n, np.float32)})
    dx = np.linspace(-1.0, 1.0, 50).astype(np.float32)
    t = wp.jvp(gather_scale, n, inputs=[x, idx, 1.5], outputs=[y], tangents={x: dx})
    return x_np, idx_np, y.numpy(), x.grad.numpy(), (dx, t[y].numpy())


def test_threaded_launches_compute_values_gradients_and_tangents():
    x_np, idx_np, y, gx, (dx, ty) = _run(N)
    v = x_np[idx_np].astype(np.float64)
    np.testing.assert_allclose(y, 1.5 * v * v + np.sin(v), rtol=2e-6, atol=1e-6)
    expected = np.zeros(50)
    np.add.at(expected, idx_np, 3.0 * v + np.cos(v))  # scattered: per-thread buffers summed
    np.testing.assert_allclose(gx, expected, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(ty, (3.0 * v + np.cos(v)) * dx[idx_np], rtol=2e-5, atol=1e-5)


@pytest.mark.optimised  # what LLVM makes at level 3
@pytest.mark.uncached  # compiles dispatchers of its own on every run (a warm cache's loaded
def test_entries_and_chunk_wrappers_are_optnone_chunks_are_not():  # code keeps no LLVM text)
    _run(N)
    ck = gather_scale.compiled("cpu")
    for kind in ("forward", "adjoint", "tangent"):
        entry = ck.entry(kind, "cpu")
        chunk = entry.py_func.__globals__[entry.py_func.__name__ + "_chunk"]
        chunk = getattr(chunk, "weft_chunk_of", chunk)
        marked, others = _optnone(_llvm_compiled_anew(entry))
        others = [n for n in others if not n.startswith("NRT_")]  # (the NRT's, linked in)
        assert len(marked) >= 2 and not others, (kind, others)  # entry, its wrapper, all
        marked, others = _optnone(_llvm_compiled_anew(chunk))
        # the chunk's CPython wrapper only (the threads call the chunk by its symbol)
        assert marked and all("7cpython" in n for n in marked), (kind, marked)  # (mangled)
        assert any("_chunk" in n for n in others), (kind, others)


def _optnone(text):
    """``(names of the functions defined in LLVM module text marked optnone, the others)``."""
    import llvmlite.binding as llvm
    marked, others = [], []
    for fn in llvm.parse_assembly(text).functions:
        if not fn.is_declaration:
            (marked if any(b"optnone" in a for a in fn.attributes) else others).append(fn.name)
    return marked, others


def _llvm_compiled_anew(disp):
    """The LLVM text of generated function ``disp``'s first signature, compiled again by the
    generated-code pipeline in a dispatcher of its own (no cache)."""
    fresh = numba.njit(pipeline_class=generated_code_compiler(), error_model="numpy",
                       nogil=True)(disp.py_func)
    sig = disp.signatures[0]
    fresh.compile(sig)
    return fresh.inspect_llvm(sig)


def test_threaded_and_serial_launches_agree():
    x_np, idx_np, y, gx, (dx, ty) = _run(N)
    # the first 200 launch indices again, serial (below the threshold), same inputs
    xs = wp.array(x_np, requires_grad=True)
    idx = wp.array(idx_np[:200])
    ys = wp.zeros(200, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(gather_scale, 200, inputs=[xs, idx, 1.5], outputs=[ys])
    tape.backward(grads={ys: np.ones(200, np.float32)})
    np.testing.assert_array_equal(ys.numpy(), y[:200])
    gs = np.zeros(50, np.float32)  # the serial adjoint's gradient, from each index's term
    v = x_np[idx_np[:200]]
    np.add.at(gs, idx_np[:200], np.float32(3.0) * v + np.cos(v))
    np.testing.assert_allclose(xs.grad.numpy(), gs, rtol=2e-5, atol=1e-5)
    ts = wp.jvp(gather_scale, 200, inputs=[xs, idx, 1.5], outputs=[ys], tangents={xs: dx})
    np.testing.assert_array_equal(ts[ys].numpy(), ty[:200])


def test_only_functions_that_launch_threads_are_found():
    from numba.core.compiler import run_frontend
    ck = gather_scale.compiled("cpu")
    entry = ck.entry("forward", "cpu").py_func
    serial = ck.entry("forward", "serial").py_func
    assert _launches_threads(run_frontend(entry))
    assert not _launches_threads(run_frontend(serial))


def test_a_chunk_called_from_python_through_its_quick_wrapper():
    from weft.runtime import entries
    x_np, idx_np = _inputs(N)
    x, idx = wp.array(x_np), wp.array(idx_np)
    y = wp.zeros(N, dtype=float)
    seen = []
    original = entries._invoke

    def spy(ck, kind, fn, dims, values):
        seen.append((fn, dims, values))
        return original(ck, kind, fn, dims, values)

    entries._invoke = spy
    try:
        wp.launch(gather_scale, N, inputs=[x, idx, 1.5], outputs=[y])
    finally:
        entries._invoke = original
    fn, dims, values = seen[-1]
    chunk = fn.py_func.__globals__[fn.py_func.__name__ + "_chunk"]
    launched = y.numpy().copy()
    y.zero_()
    chunk(0, N, dims, *values)  # the chunk's CPython wrapper, from Python
    np.testing.assert_array_equal(y.numpy(), launched)
    v = x_np[idx_np].astype(np.float64)
    np.testing.assert_allclose(launched, 1.5 * v * v + np.sin(v), rtol=2e-6, atol=1e-6)
