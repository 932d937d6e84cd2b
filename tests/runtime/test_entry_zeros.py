"""Numba stores zero into every stack slot in the function's entry block; generated code's
lowering leaves that store out for a plain variable assigned on every path before any read, and
for a structure's slot that is zero-filled where it is made (``numba_lowering``, "zero stores
only where a variable may be read before it is assigned"). Checked here: the must-analysis on
small functions, Numba's zero for a variable read before any assignment, and a kernel of many
branches compiled anew with and without the change: the same bits, fewer entry stores."""
import numba
import numpy as np
import pytest
from numba.core.compiler import run_frontend

import weft as wp
from weft.runtime import numba_lowering
from weft.runtime.numba_lowering import read_before_assigned
from weft.runtime.numba_start import generated_code_compiler


def one_branch(c, v):
    y = 0.0
    if c:
        y = v
    return y


def maybe_assigned(c, v):
    if c:
        y = v
    return y


def both_branches(c, v):
    if c:
        y = v
    else:
        y = -v
    return y


def loop_carried(n, v):
    s = 0.0
    t = 0.0
    for k in range(n):
        if k > 1:
            s = s + t
        t = v * k
    return s


def _early(func):
    func_ir = run_frontend(func)
    return read_before_assigned(func_ir.blocks, min(func_ir.blocks))


def test_the_must_analysis():
    assert _early(one_branch) == frozenset()
    assert _early(maybe_assigned) == {"y"}
    assert _early(both_branches) == frozenset()
    # carried round the loop, assigned before it
    assert not {"s", "t"} & _early(loop_carried)


@pytest.mark.uncached  # compiles dispatchers of its own on every run
@pytest.mark.parametrize("on", [True, False])
def test_values_as_numba_gives_them(on):
    saved = numba_lowering.ENTRY_ZEROS_ONLY_WHERE_READ
    numba_lowering.ENTRY_ZEROS_ONLY_WHERE_READ = on
    try:
        compiled = {f: numba.njit(pipeline_class=generated_code_compiler())(f)
                    for f in (one_branch, maybe_assigned, both_branches, loop_carried)}
        assert compiled[one_branch](True, 2.5) == 2.5
        assert compiled[one_branch](False, 2.5) == 0.0
        # read before any assignment: Numba's zero, kept where the analysis finds the read
        assert compiled[maybe_assigned](True, 2.5) == 2.5
        assert compiled[maybe_assigned](False, 2.5) == 0.0
        assert compiled[both_branches](False, 2.5) == -2.5
        # s = t(1) + t(2) + ... + t(n - 2), t(k) = v k
        assert compiled[loop_carried](6, 0.5) == 0.5 * (1 + 2 + 3 + 4)
    finally:
        numba_lowering.ENTRY_ZEROS_ONLY_WHERE_READ = saved


@wp.kernel
def many_branches(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    if a[i] > 0.1:
        x = x * 1.5 + 0.25
    if a[i] > 0.3:
        x = x * 0.5 - 0.125
    if a[i] > 0.5:
        x = x * x
    if a[i] > 0.7:
        x = x * 2.0 + a[i]
    if a[i] > 0.9:
        x = x - 1.0
    out[i] = x


def _reference(a):
    """Value and derivative of many_branches per element, in float64."""
    x, dx = a.astype(np.float64), np.ones(len(a))
    for lo, f, df in ((0.1, lambda x, a: x * 1.5 + 0.25, lambda x, a, dx: 1.5 * dx),
                      (0.3, lambda x, a: x * 0.5 - 0.125, lambda x, a, dx: 0.5 * dx),
                      (0.5, lambda x, a: x * x, lambda x, a, dx: 2 * x * dx),
                      (0.7, lambda x, a: x * 2.0 + a, lambda x, a, dx: 2.0 * dx + 1.0),
                      (0.9, lambda x, a: x - 1.0, lambda x, a, dx: dx)):
        on = a > lo
        dx = np.where(on, df(x, a, dx), dx)
        x = np.where(on, f(x, a), x)
    return x, dx


def _launch_and_backward(a_np):
    n = len(a_np)
    a = wp.array(a_np, requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(many_branches, n, inputs=[a], outputs=[out])
    tape.backward(grads={out: np.ones(n, np.float32)})
    return a, out


@pytest.mark.parametrize("n", [100, 700])  # serial, threaded
def test_kernel_values_and_gradients(n):
    a_np = np.linspace(0.0, 1.0, n, dtype=np.float32)
    a_np = a_np[np.min(np.abs(a_np[:, None] - [0.1, 0.3, 0.5, 0.7, 0.9]), axis=1) > 1e-3]
    a, out = _launch_and_backward(a_np)
    x, dx = _reference(a_np)
    np.testing.assert_allclose(out.numpy(), x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), dx, rtol=1e-5, atol=1e-6)


def _compiled_anew(disp, on):
    """``disp`` compiled again by the generated-code pipeline with the change on or off:
    (dispatcher, the number of stores in the entry blocks of the LLVM it lowered)."""
    saved = numba_lowering.ENTRY_ZEROS_ONLY_WHERE_READ
    numba_lowering.ENTRY_ZEROS_ONLY_WHERE_READ = on
    stores = []
    fresh = numba.njit(pipeline_class=generated_code_compiler(), error_model="numpy",
                       nogil=True)(disp.py_func)
    sig = disp.signatures[0]
    from numba.core import codegen
    add = codegen.CPUCodeLibrary.add_ir_module

    def count(library, module):
        for fn in module.functions:
            if not fn.is_declaration and fn.blocks:
                stores.append(sum(1 for inst in fn.blocks[0].instructions
                                  if inst.opname == "store"))
        return add(library, module)

    codegen.CPUCodeLibrary.add_ir_module = count
    try:
        fresh.compile(sig)
    finally:
        codegen.CPUCodeLibrary.add_ir_module = add
        numba_lowering.ENTRY_ZEROS_ONLY_WHERE_READ = saved
    return fresh, sum(stores)


@pytest.mark.uncached  # compiles dispatchers of its own on every run
@pytest.mark.parametrize("kind", ["forward", "adjoint"])
def test_compiled_anew_with_and_without_the_same_bits(kind):
    n = 50
    a_np = np.linspace(0.0, 1.0, n, dtype=np.float32)
    _launch_and_backward(a_np)
    entry = many_branches.compiled("cpu").entry(kind, "serial")
    lean, lean_stores = _compiled_anew(entry, True)
    plain, plain_stores = _compiled_anew(entry, False)
    # one entry-block store for each branch's condition and each indexed array at least
    assert lean_stores + 10 <= plain_stores, (lean_stores, plain_stores)
    sig = entry.signatures[0]
    rng = np.random.default_rng(5)
    got = [(n,) if not isinstance(ty, numba.types.Array) else
           rng.uniform(0.0, 1.0, n).astype(np.float32) for ty in sig]
    want = [v if isinstance(v, tuple) else v.copy() for v in got]
    lean(*got)
    plain(*want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
