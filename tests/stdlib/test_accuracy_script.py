"""benchmarks/accuracy.py on a few points: weft's sin and exp, evaluated in kernels, are within
a few ulp of mpmath in float32 and float64, the float32 kernels call float32 libm functions,
and the script's error measure reads one ulp as one ulp."""
import importlib.util
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def accuracy():
    path = os.path.join(ROOT, "benchmarks", "accuracy.py")
    spec = importlib.util.spec_from_file_location("weft_benchmark_accuracy", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod               # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def results(accuracy, tmp_path_factory):
    out = tmp_path_factory.mktemp("accuracy") / "accuracy.md"
    # 200 points: below the serial threshold, so each kernel compiles once, serially
    res = accuracy.main(["--points", "200", "--only", "sin,exp", "--quiet",
                         "--write", str(out)])
    return {(r["case"].label, r["dtype"]): r for r in res}, out.read_text()


@pytest.mark.parametrize("dtype, bound", [("float64", 1.0), ("float32", 2.0)])
@pytest.mark.parametrize("name", ["sin", "exp"])
def test_within_a_few_ulp(results, name, dtype, bound):
    r = results[0][(name, dtype)]
    s = r["stats"]
    assert s["n"] == 200 and s["nonfinite"] == 0
    assert s["ulp_max"] < bound, s
    assert s["ulp_mean"] < 0.5, s                   # most results correctly rounded
    assert s["exact"] > 0.9, s
    eps = float(np.finfo(dtype).eps)
    assert s["rel_max"] < bound * eps, s            # relative error agrees with the ulps


@pytest.mark.parametrize("name", ["sin", "exp"])
def test_float32_kernels_call_float32_libm(accuracy, results, name):
    """float32 builtins compute in float32 (``sinf``), not in float64 and rounded."""
    calls32 = results[0][(name, "float32")]["calls"]
    calls64 = results[0][(name, "float64")]["calls"]
    assert calls32 and not accuracy.calls_double(calls32), calls32
    assert name + "f" in calls32 and name in calls64, (calls32, calls64)


def test_document(results):
    text = results[1]
    assert text.startswith("# Accuracy of the transcendental builtins")
    assert "| sin | (-8192, 8192) | Dr.Jit |" in text
    assert "python benchmarks/accuracy.py --write docs/accuracy.md" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_error_measure(accuracy, dtype):
    """A result one ulp off the correctly rounded value measures about one ulp (0.5 to 1.5,
    as the exact value lies within half an ulp of the rounded one); the exact one at most 0.5."""
    import mpmath
    x = np.linspace(0.1, 3.0, 50).astype(dtype)
    hi, lo = accuracy.reference("sin", [x], 40)
    exact = (hi + lo).astype(dtype)
    off = np.nextafter(exact, dtype(np.inf))
    s0 = accuracy.error_stats(exact, hi, lo, [x], dtype)
    s1 = accuracy.error_stats(off, hi, lo, [x], dtype)
    assert s0["ulp_max"] <= 0.5 and s0["exact"] == 1.0
    assert 0.5 <= s1["ulp_max"] <= 1.5 and 0.5 <= s1["ulp_mean"] <= 1.5 and s1["exact"] == 0.0
    with mpmath.workdps(40):
        assert float(mpmath.sin(mpmath.mpf(float(x[7]))) - mpmath.mpf(hi[7])) == lo[7]
