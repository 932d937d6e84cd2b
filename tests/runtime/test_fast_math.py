"""Warp's ``fast_math`` module option: kernels compile with Numba's ``fastmath=True``, the option
is read per module (``wp.set_module_options``, or ``module_options`` of a ``module="unique"``
kernel), it is part of the cache key, and a new process reloads the right variant warm."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import weft as wp

from . import fast_math_kernels as fmk

# fast math may reassociate and contract (FMA) float32 arithmetic: a few ulp per operation
RTOL, ATOL = 1e-5, 1e-6


@wp.kernel
def smooth(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * wp.exp(v) + wp.cos(v) * wp.log(1.0 + v * v) + wp.tanh(v) * wp.sqrt(2.0 + v)


@wp.kernel(module="unique", module_options={"fast_math": True})
def smooth_unique(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * wp.exp(v) + wp.cos(v) * wp.log(1.0 + v * v) + wp.tanh(v) * wp.sqrt(2.0 + v)


def _run(kernel, n=2000):
    """Values and gradients (of sum(y)) of ``kernel`` on fixed inputs in (-1, 1)."""
    xs = np.random.default_rng(3).uniform(-1.0, 1.0, n).astype(np.float32)
    x = wp.array(xs, dtype=float, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=n, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.array(np.ones(n, np.float32), dtype=float)})
    return y.numpy(), x.grad.numpy()


def _decorators(kernel):
    return [ln for ln in kernel.source("all").splitlines() if ln.startswith("@numba.njit")]


def test_option_is_read_per_module():
    assert wp.get_module_options(fmk.__name__)["fast_math"] is True
    assert wp.get_module_options(__name__)["fast_math"] is False
    assert fmk.smooth.fast_math and not smooth.fast_math and smooth_unique.fast_math
    assert smooth_unique.module.options["fast_math"] is True  # its own options
    for k in (fmk.smooth, smooth_unique):
        decos = _decorators(k)
        assert decos and all("fastmath=True" in d for d in decos)
    assert not any("fastmath" in d for d in _decorators(smooth))


def test_fast_math_values_and_gradients_close_to_default():
    y0, g0 = _run(smooth)
    for k in (fmk.smooth, smooth_unique):
        y1, g1 = _run(k)
        np.testing.assert_allclose(y1, y0, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(g1, g0, rtol=RTOL, atol=ATOL)


def test_cache_key_follows_the_option():
    name_off = smooth.compiled("cpu").module.__name__
    name_on = fmk.smooth.compiled("cpu").module.__name__
    assert "_fastmath_" in name_on and "_fastmath" not in name_off
    assert name_off.rsplit("_", 1)[1] != name_on.rsplit("_", 1)[1]  # the hashes differ


def test_toggling_recompiles():
    mod = "weft_test.fast_math.toggle"

    def f(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = wp.sin(a[i])

    f.__module__ = mod
    k = wp.Kernel(f, key="toggle_sin")
    a = wp.array(np.full(8, 0.5, np.float32), dtype=float)
    wp.launch(k, dim=8, inputs=[a])
    off = k.compiled("cpu").module.__name__
    wp.set_module_options({"fast_math": True}, mod)
    wp.launch(k, dim=8, inputs=[a])
    on = k.compiled("cpu").module.__name__
    wp.set_module_options({"fast_math": False}, mod)
    assert k.compiled("cpu").module.__name__ == off and off != on and "_fastmath_" in on
    np.testing.assert_allclose(a.numpy(), np.sin(np.sin(np.float32(0.5))), rtol=1e-6)


def test_module_options_need_unique():
    def g(a: wp.array(dtype=float)):
        pass

    with pytest.raises(ValueError, match='module="unique"'):
        wp.kernel(module_options={"fast_math": True})(g)
    with pytest.raises(ValueError, match="unknown module_options"):
        wp.kernel(module="unique", module_options={"fastmath": True})(g)


PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np, weft as wp
    from weft.runtime.cache import STATS
    wp.set_module_options({"fast_math": sys.argv[1] == "on"})
    @wp.kernel
    def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(x[i]) * wp.exp(x[i])
    n = 64
    x = wp.array(np.linspace(-1, 1, n, dtype=np.float32), dtype=float, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k, dim=n, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.array(np.ones(n, np.float32), dtype=float)})
    print(k.compiled("cpu").module.__name__)
    print(y.numpy().tolist(), x.grad.numpy().tolist())
    print(len(STATS["transpiled"]), len(STATS["compiled"]))
""")


def test_new_process_reloads_the_variant_warm(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "WEFT_EXPECT_WARM"}
    env["WEFT_CACHE_DIR"] = str(tmp_path / "cache")

    def run(flag):
        r = subprocess.run([sys.executable, str(path), flag], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
        return r.stdout.splitlines()

    on1, on2, off = run("on"), run("on"), run("off")
    assert "_fastmath_" in on1[0] and on1[:-1] == on2[:-1]
    assert on1[-1] != "0 0" and on2[-1] == "0 0"   # the warm run neither transpiles nor compiles
    assert "_fastmath" not in off[0] and off[-1] != "0 0"   # the other variant is built anew
    y_on, g_on = (np.array(v) for v in eval(on1[1].replace("] [", "], [")))
    y_off, g_off = (np.array(v) for v in eval(off[1].replace("] [", "], [")))
    np.testing.assert_allclose(y_on, y_off, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(g_on, g_off, rtol=RTOL, atol=ATOL)
