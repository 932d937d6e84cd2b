"""The float32 transcendentals of ``fast_math`` modules (``weft/stdlib/fastmath.py``): accuracy
against NumPy in float64, C's special values, derivatives through kernels (reverse, forward and
second order) against analytic values, and the point of them: the kernel's loop vectorises."""
import re
import sys

import numpy as np
import pytest

import weft as wp
from weft.native import fastmath
from weft.native.vocabulary import FAST_MATH

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2] / "benchmarks"))
import accuracy_fastmath  # noqa: E402

wp.set_module_options({"fast_math": True})


def test_the_names_the_transpiler_uses_are_the_functions_there_are():
    assert set(fastmath.FAST) == FAST_MATH


def test_accuracy_within_about_half_an_ulp():
    # correctly rounded but for ties closer than the polynomials' 5e-11: 0.51 ulp measured;
    # 1 ulp leaves room for a machine without fused multiply-adds
    for name, rng, fast, libm in accuracy_fastmath.function_table(20000):
        assert fast <= 1.0, (name, rng, fast)
        assert fast <= libm + 0.5, (name, rng, fast, libm)


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 88.8, -104.0, -1.0,
                    3e38], np.float32)


@pytest.mark.parametrize("name", sorted(FAST_MATH))
def test_special_values_follow_c(name):
    out = np.empty_like(SPECIAL)
    accuracy_fastmath.compiled_loop(fastmath.FAST[name])(SPECIAL, out)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(SPECIAL.astype(np.float64)).astype(np.float32)
    if name in ("sin", "cos", "tan"):
        want[-1] = np.nan          # beyond 2**60: NaN, not a wrong number (documented)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    fin = ~np.isnan(want)
    np.testing.assert_allclose(out[fin], want[fin], rtol=2e-7, atol=0)
    np.testing.assert_array_equal(np.signbit(out[fin]), np.signbit(want[fin]))


def test_large_arguments_reduce_exactly():
    x = np.float32([1e5, 12345678.0, 1e8, 2.0 ** 40, -3.0e9])
    for name in ("sin", "cos", "tan"):
        out = np.empty_like(x)
        accuracy_fastmath.compiled_loop(fastmath.FAST[name])(x, out)
        ref = getattr(np, name)(x.astype(np.float64))
        assert np.all(np.abs(out - ref) <= np.spacing(np.abs(ref).astype(np.float32))), name


# one kernel per function: y = f(x); the adjoint and tangent give f'(x)
DERIV = {"sin": np.cos, "cos": lambda x: -np.sin(x), "tan": lambda x: 1 / np.cos(x) ** 2,
         "exp": np.exp, "log": lambda x: 1 / x, "log2": lambda x: 1 / (x * np.log(2)),
         "log10": lambda x: 1 / (x * np.log(10)), "tanh": lambda x: 1 - np.tanh(x) ** 2,
         "sinh": np.cosh, "cosh": np.sinh}


@wp.kernel
def all_funcs(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i, 0] = wp.sin(v)
    y[i, 1] = wp.cos(v)
    y[i, 2] = wp.tan(v)
    y[i, 3] = wp.exp(v)
    y[i, 4] = wp.log(v)
    y[i, 5] = wp.log2(v)
    y[i, 6] = wp.log10(v)
    y[i, 7] = wp.tanh(v)
    y[i, 8] = wp.sinh(v)
    y[i, 9] = wp.cosh(v)


ORDER = ["sin", "cos", "tan", "exp", "log", "log2", "log10", "tanh", "sinh", "cosh"]


def test_kernel_calls_them_and_values_and_derivatives_match():
    assert all_funcs.fast_math
    src = all_funcs.source("all")
    assert all(f"_wk.fm_{f}(" in src for f in ORDER)
    xs = np.linspace(0.1, 1.4, 64).astype(np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros((64, 10), dtype=float, requires_grad=True)
    wp.launch(all_funcs, dim=64, inputs=[x], outputs=[y])
    x64 = xs.astype(np.float64)
    want = np.stack([getattr(np, f)(x64) for f in ORDER], 1)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-7)
    for k, f in enumerate(ORDER):
        seed = np.zeros((64, 10), np.float32)
        seed[:, k] = 1.0
        x.grad.zero_()
        y.grad.assign(seed)
        wp.launch(all_funcs, dim=64, inputs=[x], outputs=[y], adjoint=True)
        np.testing.assert_allclose(x.grad.numpy(), DERIV[f](x64), rtol=2e-6, err_msg=f)
    tape = wp.Tape()                                 # forward mode: the tangent kernel
    with tape:
        wp.launch(all_funcs, dim=64, inputs=[x], outputs=[y])
    t = tape.forward({x: np.ones(64)})
    np.testing.assert_allclose(t[y].numpy(), np.stack([DERIV[f](x64) for f in ORDER], 1),
                               rtol=2e-6)


@wp.kernel
def sin_energy(x: wp.array(dtype=float), e: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(e, 0, wp.sin(x[i]) * wp.exp(x[i]))


def test_second_order_through_fast_math():
    xs = np.linspace(-1.0, 1.0, 16).astype(np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    e = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sin_energy, dim=16, inputs=[x], outputs=[e])
    v = np.linspace(0.5, 2.0, 16)
    hv = tape.hvp(e, {x: v})
    x64 = xs.astype(np.float64)
    want = 2.0 * np.cos(x64) * np.exp(x64) * v       # (sin x e^x)'' = 2 cos x e^x
    np.testing.assert_allclose(hv[x].numpy(), want, rtol=2e-5, atol=1e-6)


@wp.kernel
def vec_kernel(x: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.vec3(wp.sin(v[0]) * wp.exp(v[1]), wp.cos(v[1]), wp.tanh(v[2])) * wp.length(v)


@pytest.mark.optimised  # what LLVM makes at level 3
@pytest.mark.cold  # compiles the chunk again to read its IR, on a warm cache too
def test_the_loop_vectorises():
    """What fast_math is for: with call-free math, constant vec3 strides and non-negative
    launch indices, LLVM vectorises the kernel's loop (vector types in the chunk's IR)."""
    n = 1000
    x = wp.array(np.random.default_rng(0).uniform(-1, 1, (n, 3)).astype(np.float32),
                 dtype=wp.vec3)
    y = wp.zeros(n, dtype=wp.vec3)
    wp.launch(vec_kernel, dim=n, inputs=[x], outputs=[y])
    xs = x.numpy().astype(np.float64)
    want = np.stack([np.sin(xs[:, 0]) * np.exp(xs[:, 1]), np.cos(xs[:, 1]), np.tanh(xs[:, 2])],
                    1) * np.linalg.norm(xs, axis=1)[:, None]
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    chunk = vec_kernel.compiled("cpu").module.vec_kernel__fwd_chunk
    disp = getattr(chunk, "weft_chunk_of", chunk)
    # the IR of code loaded from the cache cannot be inspected: compile the chunk again
    import numba
    fresh = numba.njit(**{k: v for k, v in disp.targetoptions.items()
                          if k not in ("cache", "nopython")})(disp.py_func)
    ir = "\n".join(fresh.inspect_llvm(s) for s in disp.signatures if fresh.compile(s) or True)
    assert ir and re.search(r"<(4|8|16) x (float|double)>", ir), "the loop did not vectorise"
    assert not re.search(r"@(llvm\.)?(sin|cos|exp|tanh)f?[.(]", ir), "libm calls remain"
