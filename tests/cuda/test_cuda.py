"""The CUDA target: results equal the CPU target's (under Numba's simulator in CI), every
generated CUDA function compiles to PTX for cc 9.0, and adjoint stack overflow is an error."""
import os
import sys

import numpy as np
import pytest

import weft as wp
from tests.cuda import launch_dims, without_simulator

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "data"))
import cuda_kernels as ck  # noqa: E402

pytestmark = pytest.mark.cudasim


def _cases(rng):
    n = 6
    x = rng.random((n, 3)) + 0.5
    return [
        (ck.step, n, lambda d: [wp.array(x, dtype=wp.vec3, device=d, requires_grad=True),
                                wp.array(np.ones((n, 3)), dtype=wp.vec3, device=d,
                                         requires_grad=True), 0.01],
         lambda d: [wp.zeros(n, dtype=wp.vec3, device=d, requires_grad=True)]),
        (ck.power_loop, n, lambda d: [wp.array(rng.random(n) + 0.5, dtype=float, device=d,
                                               requires_grad=True), 3],
         lambda d: [wp.zeros(n, dtype=float, device=d, requires_grad=True)]),
        (ck.damped, n, lambda d: [wp.array(np.linspace(0.5, 3.0, n), dtype=wp.float64,
                                           device=d, requires_grad=True)],
         lambda d: [wp.zeros(n, dtype=wp.float64, device=d, requires_grad=True)]),
        (ck.grid, (2, 3), lambda d: [wp.array(np.arange(6.0).reshape(2, 3) / 6, dtype=float,
                                              device=d, requires_grad=True),
                                     wp.mat22(1.0, 2.0, 0.5, -1.0)],
         lambda d: [wp.zeros((2, 3), dtype=float, device=d, requires_grad=True)]),
        (ck.half, n, lambda d: [wp.array(np.linspace(-1, 1, 2 * n).reshape(n, 2),
                                         dtype=wp.vec2h, device=d, requires_grad=True), 0.75],
         lambda d: [wp.zeros(n, dtype=wp.float16, device=d, requires_grad=True),
                    wp.zeros(1, dtype=wp.float16, device=d, requires_grad=True)]),
    ]


@pytest.mark.parametrize("index", range(5))
def test_cuda_matches_cpu_forward_adjoint_tangent(index):
    results = {}
    for dev in ("cpu", "cuda"):
        kernel, dim, make_in, make_out = _cases(np.random.default_rng(index))[index]
        inputs, outputs = make_in(dev), make_out(dev)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=dim, inputs=inputs, outputs=outputs, device=dev)
        seed = np.random.default_rng(7).random(outputs[0].numpy().shape)
        tape.backward(grads={outputs[0]: seed})
        grads = [a.grad.numpy().copy() for a in inputs if isinstance(a, wp.array)]
        arr = inputs[0]
        t = wp.jvp(kernel, dim, inputs=inputs, outputs=outputs, device=dev,
                   tangents={arr: np.ones(arr.numpy().shape)})
        results[dev] = (outputs[0].numpy().copy(), grads, t[outputs[0]].numpy().copy())
    cpu, gpu = results["cpu"], results["cuda"]
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-6, atol=1e-7)
    for g_gpu, g_cpu in zip(gpu[1], cpu[1]):
        # float16 gradients add up in half precision atomically: the simulator's threads
        # arrive in another order than the CPU's, and each sum rounds (half an ulp: 5e-4)
        tol = 1e-3 if g_cpu.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=tol, atol=1e-6)
    np.testing.assert_allclose(gpu[2], cpu[2], rtol=1e-5, atol=1e-6)
    assert np.abs(cpu[1][0]).sum() > 0  # the gradient is not trivially zero


def test_launch_configuration_fits_the_launch(monkeypatch):
    # a launch smaller than a block is one block of its size (the simulator runs a Python
    # thread per CUDA thread: 256 of them for a 4-element launch); larger ones use blocks of
    # 256, the last partly idle. Values and gradients are the same either way.
    from weft.runtime import entries
    seen = []
    call = entries.call_once

    def spy(ck_, kind, fn, dims, values, extra=()):
        seen.append((kind, *launch_dims(fn)))
        return call(ck_, kind, fn, dims, values, extra)
    monkeypatch.setattr(entries, "call_once", spy)
    for n, grid, block in ((5, 1, 5), (300, 2, 256)):
        seen.clear()
        x = np.linspace(-1, 1, n).astype(np.float32)
        xa = wp.array(x, device="cuda", requires_grad=True)
        loss = wp.zeros(1, dtype=float, device="cuda", requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(ck.reduce_sq, dim=n, inputs=[xa, loss], device="cuda")
        tape.backward(loss)
        assert seen == [("forward", (grid, 1, 1), (block, 1, 1)),
                        ("adjoint", (grid, 1, 1), (block, 1, 1))], seen
        np.testing.assert_allclose(loss.numpy()[0], (x.astype(np.float64) ** 2).sum(), rtol=1e-5)
        np.testing.assert_allclose(xa.grad.numpy(), 2 * x, rtol=1e-6)


def test_cuda_atomic_accumulation_matches_cpu():
    x = np.linspace(-1, 1, 37).astype(np.float32)
    out = {}
    for dev in ("cpu", "cuda"):
        xa = wp.array(x, device=dev, requires_grad=True)
        loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(ck.reduce_sq, dim=37, inputs=[xa, loss], device=dev)
        tape.backward(loss)
        out[dev] = (loss.numpy()[0], xa.grad.numpy().copy())
    np.testing.assert_allclose(out["cuda"][0], (x.astype(np.float64) ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(out["cuda"][1], 2 * x, rtol=1e-6)
    np.testing.assert_allclose(out["cpu"][1], out["cuda"][1])


_subprocess = without_simulator  # (its name in these tests)


PTX = """
import numpy as np, weft as wp, cuda_kernels as ck
from weft.runtime.ptx import compile_ptx
n = 4
v3 = wp.zeros(n, dtype=wp.vec3); f = wp.zeros(n, dtype=float); d = wp.zeros(n, dtype=wp.float64)
cases = {"step": (ck.step, [v3, v3, 0.1, v3]), "power_loop": (ck.power_loop, [f, 3, f]),
         "damped": (ck.damped, [d, d]), "reduce_sq": (ck.reduce_sq, [f, f]),
         "grid": (ck.grid, [wp.zeros((2, 2), dtype=float), wp.mat22(), wp.zeros((2, 2), dtype=float)]),
         "bodies": (ck.bodies, [wp.zeros(n, dtype=ck.Body), ck.Params(w=f), wp.zeros(n, dtype=ck.Body)]),
         "half": (ck.half, [wp.zeros(n, dtype=wp.vec2h), 0.5, wp.zeros(n, dtype=wp.float16),
                            wp.zeros(1, dtype=wp.float16)])}
# where the checks read which memory an atomic addresses, which NVVM's optimiser infers (and
# the loop stack's local memory): compiled at its level 3 whatever NUMBA_OPT says
for name, (k, args) in cases.items():
    opt = True if name in ("reduce_sq", "power_loop", "half") else None
    ptx = compile_ptx(k, args, dims=(2, 2) if name == "grid" else (n,), opt=opt)
    for kind, text in ptx.items():
        print(name, kind, ".target sm_90" in text, "atom.global.add.f32" in text, "local" in text,
              "atom.cas.b32" in text)
"""


@pytest.mark.ptx
def test_every_cuda_function_compiles_to_ptx_for_hopper():
    pytest.importorskip("numba.cuda")
    r = _subprocess(PTX)
    if "NvvmSupportError" in r.stderr or "libNVVM cannot be found" in r.stderr:
        pytest.skip("NVVM is not installed (pip install 'numba-cuda[cu13]')")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(((a, b), rest) for a, b, *rest in (ln.split() for ln in r.stdout.splitlines()))
    assert len(lines) == 21
    assert all(rest[0] == "True" for rest in lines.values())        # compiled for sm_90
    assert lines[("reduce_sq", "forward")][1] == "True"             # a real float atomic
    assert lines[("reduce_sq", "adjoint")][1] == "False"            # own-index: no atomics
    assert lines[("power_loop", "adjoint")][2] == "True"            # loop stack in local memory
    assert lines[("half", "forward")][3] == "True"      # float16 atomics: CAS on the 32-bit word
    assert lines[("half", "adjoint")][3] == "True"      # and the neighbour's gradient too


OVERFLOW = """
import numpy as np, weft as wp, cuda_kernels as ck
a = wp.array(np.full(4, 1.01), dtype=float, device="cuda", requires_grad=True)
out = wp.zeros(4, dtype=float, device="cuda", requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(ck.power_loop, dim=4, inputs=[a, 20], outputs=[out], device="cuda")
try:
    tape.backward(grads={out: np.ones(4)})
except RuntimeError as e:
    print("ERR", e)
"""


def test_adjoint_stack_overflow_is_an_error_not_a_wrong_gradient(tmp_path):
    r = _subprocess(OVERFLOW, NUMBA_ENABLE_CUDASIM="1", WEFT_CUDA_STACK="8",
                    WEFT_CACHE_DIR=str(tmp_path))
    assert "ERR adjoint of kernel 'power_loop': a loop ran more than 8 iterations" in r.stdout, \
        r.stdout + r.stderr[-2000:]


def test_random_streams_are_the_same_on_cuda():
    sys.path.insert(0, os.path.join(HERE, "..", "stdlib"))
    import test_random as tr
    with wp.ScopedDevice("cuda"):
        f, i, g = tr._run(n=3)
    f2, i2, g2 = tr._run(n=3)
    np.testing.assert_array_equal(f, f2)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_allclose(g, g2, rtol=2e-6)


FLOAT_ATOMICS_PTX = """
import re, sys
sys.path.append({stdlib!r})  # not tests/: its cuda/ would shadow the cuda package
import weft as wp
from weft.runtime.ptx import compile_ptx
from test_atomics import _float_lock_kernel
for dt in (wp.float16, wp.float32, wp.float64):
    args = [wp.zeros(1, dtype=dt), wp.zeros(1, dtype=dt), wp.zeros(4, dtype=dt)]
    ptx = compile_ptx(_float_lock_kernel(dt), args, kinds=("forward",), opt=True)["forward"]
    print(dt.__name__, *sorted(set(re.findall(r"atom\\.(?:global\\.)?(?:cas|exch)\\.b\\d+", ptx))))
"""


@pytest.mark.ptx
def test_float_cas_and_exchange_compile_to_cuda_atomics_on_bits():
    """Float atomic_cas/atomic_exch on the CUDA target work on the elements' bits (numba-cuda's
    own take integers only); float16 swaps the 32-bit word holding the element."""
    pytest.importorskip("numba.cuda")
    r = _subprocess(FLOAT_ATOMICS_PTX.format(stdlib=os.path.join(os.path.dirname(HERE), "stdlib")))
    if "NvvmSupportError" in r.stderr or "libNVVM cannot be found" in r.stderr:
        pytest.skip("NVVM is not installed (pip install 'numba-cuda[cu13]')")
    assert r.returncode == 0, r.stderr[-3000:]
    ops = {line.split()[0]: set(line.split()[1:]) for line in r.stdout.splitlines()}
    assert ops["float32"] == {"atom.global.cas.b32", "atom.global.exch.b32"}
    assert ops["float64"] == {"atom.global.cas.b64", "atom.global.exch.b64"}
    assert ops["float16"] == {"atom.cas.b32"}  # exchange and cas through the word
