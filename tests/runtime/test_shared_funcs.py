"""A func several kernels call compiles once in a process (``weft/runtime/shared_funcs.py``):
each kernel's generated module defines it, and a definition whose text and globals match an
earlier module's is replaced by that module's dispatcher. Funcs that only look alike (the same
name with another body, the same text calling another callee) stay apart, and every kernel
computes its own values."""
import importlib.util

import numpy as np

import weft as wp


@wp.func
def _helper(x: float, k: float):
    y = x * k
    if y > 1.0:
        y = wp.sqrt(y)
    return y + wp.sin(x)


@wp.kernel
def _k1(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = _helper(a[i], 2.0)


@wp.kernel
def _k2(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = _helper(a[i], 3.0) * 2.0


def _ref(x, k):
    y = x * k
    return np.where(y > 1.0, np.sqrt(y), y) + np.sin(x)


def _run(kernel, x):
    out = wp.zeros(len(x), dtype=float)
    wp.launch(kernel, len(x), inputs=[wp.array(x)], outputs=[out])
    return out.numpy()


def test_kernels_calling_one_func_share_its_dispatcher():
    x = np.linspace(0.0, 2.0, 7).astype(np.float32)
    np.testing.assert_allclose(_run(_k1, x), _ref(x, 2.0), rtol=1e-6)
    np.testing.assert_allclose(_run(_k2, x), 2.0 * _ref(x, 3.0), rtol=1e-6)
    m1, m2 = _k1.compiled("cpu").module, _k2.compiled("cpu").module
    assert m1 is not m2
    shared = m2._helper
    assert shared is m1._helper  # one dispatcher, compiled once for its one signature
    assert len(shared.overloads) == 1


_TEMPLATE = '''import weft as wp


@wp.func
def inner(x: float):
    return x * {factor}


@wp.func
def outer(x: float):
    return inner(x) + 1.0


@wp.func
def same_name(x: float):
    return x {op} 5.0


@wp.kernel
def k(a: wp.array(dtype=float), out: wp.array(dtype=float), other: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = outer(a[i])
    other[i] = same_name(a[i])
'''


def _module(tmp_path, name, **fill):
    path = tmp_path / f"{name}.py"
    path.write_text(_TEMPLATE.format(**fill))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_funcs_that_only_look_alike_stay_apart(tmp_path):
    # ``outer`` has the same text in both files but calls another ``inner``; ``same_name``
    # differs in its body: neither may be shared
    x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
    results = {}
    for name, factor, op in (("alike_a", 2.0, "+"), ("alike_b", 3.0, "*")):
        mod = _module(tmp_path, name, factor=factor, op=op)
        out, other = wp.zeros(5, dtype=float), wp.zeros(5, dtype=float)
        wp.launch(mod.k, 5, inputs=[wp.array(x)], outputs=[out, other])
        results[name] = (mod.k.compiled("cpu").module, out.numpy(), other.numpy())
    (ma, out_a, other_a), (mb, out_b, other_b) = results["alike_a"], results["alike_b"]
    np.testing.assert_allclose(out_a, x * 2.0 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(out_b, x * 3.0 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(other_a, x + 5.0, rtol=1e-6)
    np.testing.assert_allclose(other_b, x * 5.0, rtol=1e-6)
    assert ma.outer is not mb.outer and ma.inner is not mb.inner
    assert ma.same_name is not mb.same_name
