"""Compile less: dead assignments out of adjoints and tangents (``transpiler/prune.py``), tangents
that no input varies as constant zeros (``analyze.tangent_varied``), and structural zeros folded
in tangent rules (``exprs.structural_zero``); the results stay exact."""
import ast
import re

import numpy as np

import weft as wp
from weft.transpiler import prune


def _fdef(src):
    return ast.parse(src).body[0]


def _names(fdef):
    """The names bound by the assignments of ``fdef`` (not subscript stores)."""
    out = []
    for st in ast.walk(fdef):
        t = st.targets[0] if isinstance(st, ast.Assign) else getattr(st, "target", None)
        if isinstance(st, (ast.Assign, ast.AugAssign)) and isinstance(t, (ast.Name, ast.Tuple)):
            out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return out


def test_drop_dead_keeps_what_effects_read():
    f = _fdef(
        "def f(a, out, k):\n"
        "    x = a[0] * float32(2.0)\n"       # read by a store: kept
        "    y = np.sqrt(x)\n"                # read by nothing: dropped
        "    z = _wk.atomic_add(out, 0, x)\n"  # an effect: kept though z is unread
        "    acc = float32(0.0)\n"            # only read by its own update: dropped
        "    acc = acc + y\n"
        "    s = k\n"
        "    s += x\n"                        # read by the if test: kept
        "    if s > float32(0.0):\n"
        "        out[1] = x\n"
        "    if k > float32(1.0):\n"          # a branch left empty: dropped
        "        w = x * k\n"
        "    return out\n")
    prune.drop_dead(f)
    assert _names(f) == ["x", "z", "s", "s"]
    text = ast.unparse(f)
    assert "k > float32(1.0)" not in text and "out[1] = x" in text


def test_calls_count_as_pure_only_when_known_pure():
    g = _fdef("def g(a):\n    b = a * 2.0\n    return b\n")
    h = _fdef("def h(a, out):\n    out[0] = a\n    return a\n")
    pure = prune.pure_functions([g, h])
    assert pure == {"g"}
    f = _fdef("def f(a, out):\n    u = g(a)\n    v = h(a, out)\n    t = _wk.geo_query(a)\n"
              "    return a\n")
    prune.drop_dead(f, pure)
    assert _names(f) == ["v", "t"]


@wp.func
def _scale(v: wp.vec3, s: float):
    return v * s


@wp.kernel
def _k(x: wp.array(dtype=wp.vec3), k: float, out: wp.array(dtype=float),
       total: wp.array(dtype=float)):
    i = wp.tid()
    c = _scale(wp.vec3(1.0, 2.0, 3.0), 2.0)  # no input varies it
    y = _scale(x[i], k)                      # enters the result linearly
    o = wp.dot(y, c) + wp.dot(x[i], x[i])
    out[i] = o
    wp.atomic_add(total, 0, o)  # (re-reading out[i] would make the adjoint replay the store)


def test_generated_code_is_smaller_and_gradients_exact():
    def code(src):  # without the comments that quote the kernel's source lines
        return "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))
    adj = code(_k.source("adjoint"))
    tan = code(_k.source("tangent"))
    assert "adj_k =" not in adj                    # a kernel's scalar parameter: no adjoint
    assert "y = _scale(" not in adj                # no adjoint rule reads y: not replayed
    assert "c = _scale(" in adj                    # c is read (the adjoint of y in dot(y, c))
    assert not re.search(r"\badj_c\b", adj)       # but c depends on no input: no adjoint
    assert tan.count("_scale__jvp(") == 1          # for y only: c = _scale(...) plainly
    assert "* float32(0.0)" not in tan             # structural zeros folded
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(5, 3))
    kv = 0.7
    c = 2.0 * np.array([1.0, 2.0, 3.0])
    x = wp.array(xv.astype(np.float32), dtype=wp.vec3, requires_grad=True)
    out = wp.zeros(5, dtype=float, requires_grad=True)
    total = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_k, 5, inputs=[x, kv], outputs=[out, total])
    want = kv * xv @ c + (xv * xv).sum(1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    tape.backward(total)
    # d total / d x_i = k c + 2 x_i (analytic)
    np.testing.assert_allclose(x.grad.numpy(), kv * c + 2.0 * xv, rtol=1e-5, atol=1e-6)
    dx = rng.normal(size=(5, 3))
    out2 = wp.zeros(5, dtype=float)
    total2 = wp.zeros(1, dtype=float)
    xin = wp.array(xv.astype(np.float32), dtype=wp.vec3)
    t = wp.jvp(_k, 5, inputs=[xin, kv], outputs=[out2, total2],
               tangents={xin: dx.astype(np.float32), "k": 0.5})
    want_t = (kv * dx @ c + 0.5 * xv @ c) + 2.0 * (xv * dx).sum(1)
    np.testing.assert_allclose(t[out2].numpy(), want_t, rtol=1e-5, atol=1e-6)


@wp.func
def _branchy(x: float, mode: int):
    # ``t`` is bound in two branches and read in neither's future: no merge is needed
    r = x
    if mode == 0:
        t = x * 2.0
        r = t + 1.0
    elif mode == 1:
        t = x * x
        u = t - 3.0
        r = u * 0.5
    return r


@wp.kernel
def _branchy_kernel(x: wp.array(dtype=float), mode: wp.array(dtype=int),
                    out: wp.array(dtype=float)):
    i = wp.tid()
    m = mode[i]
    if m == 0:
        only_here = x[i] * 3.0
        out[i] = only_here
    else:
        unread = x[i] + 100.0  # noqa: F841 (bound, never read: dead but in debug builds)
        out[i] = _branchy(x[i], m - 1)


def test_forward_code_carries_no_dead_merges_and_stays_exact():
    # a name bound on one path is given a value on the others and merged after the ``if``;
    # where nothing reads it, the forward (kernel and func) no longer carries either
    src = _branchy_kernel.source("all")
    start = src.index("def _branchy(")
    func = src[start:src.index("\ndef ", start + 4)]
    start = src.index("def _branchy_kernel__fwd_serial(")
    body = src[start:src.index("\ndef ", start + 4)]
    assert not re.search(r"\b[tu](_\d+)? = float32\(0\.0\)", func)  # no value on other paths
    assert len(re.findall(r"^\s+t(_\d+)? = ", func, re.M)) == 2  # the two branches' own
    assert not re.search(r"\bonly_here(_\d+)? = float32\(0\.0\)", body)
    assert not re.search(r"^\s+unread(_\d+)? = ", body, re.M)
    xv = np.linspace(-1.0, 2.0, 6).astype(np.float32)
    mv = np.array([0, 1, 2, 3, 0, 2], np.int32)
    x = wp.array(xv, requires_grad=True)
    out = wp.zeros(6, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_branchy_kernel, 6, inputs=[x, wp.array(mv)], outputs=[out])
    want = np.where(mv == 0, 3 * xv, np.where(mv == 1, 2 * xv + 1,
                                              np.where(mv == 2, 0.5 * (xv * xv - 3), xv)))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    tape.backward(grads={out: wp.array(np.ones(6, np.float32))})
    dwant = np.where(mv == 0, 3.0, np.where(mv == 1, 2.0, np.where(mv == 2, xv, 1.0)))
    np.testing.assert_allclose(x.grad.numpy(), dwant, rtol=1e-6)


def test_debug_builds_keep_the_forward_as_written():
    # debug mode checks every access as the kernel wrote it, read or not
    @wp.kernel(mode="debug")
    def dead_read(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        unread = x[i + 10]  # noqa: F841
        out[i] = x[i]

    assert re.search(r"^\s+unread(_\d+)? = ", dead_read.source("forward"), re.M)
    import pytest
    with pytest.raises(wp.KernelIndexError):
        wp.launch(dead_read, 2, inputs=[wp.zeros(2, dtype=float)],
                  outputs=[wp.zeros(2, dtype=float)])


def test_adding_negative_zero_into_an_array_is_dropped():
    f = _fdef(
        "def f(a, adj_a, adj_v, i, g):\n"
        "    adj_t = float32(-0.0)\n"                     # nothing added to it
        "    if adj_a is not None:\n"
        "        adj_a[i] += adj_t\n"                     # adds -0.0: dropped, then the if
        "    adj_w = (float32(-0.0), float32(-0.0))\n"
        "    adj_v[i, 0] += adj_w[0]\n"                   # a component of a zero tuple
        "    adj_u = float32(-0.0)\n"
        "    adj_u = adj_u + g\n"                         # bound twice: not a zero
        "    adj_a[i] += adj_u\n"
        "    adj_p = float32(0.0)\n"
        "    adj_a[i] += adj_p\n"                         # +0.0 turns -0.0 into +0.0: kept
        "    adj_a[_wk.atomic_add(adj_a, 0, g)] += adj_t\n"  # an index with an effect: kept
        "    return a\n")
    prune.drop_dead(f)
    text = ast.unparse(f)
    assert "adj_a is not None" not in text and "adj_v[i, 0]" not in text
    assert "adj_a[i] += adj_u" in text and "adj_a[i] += adj_p" in text
    assert "atomic_add" in text


@wp.kernel
def _gated(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if a[i] > 0.5:      # a is read for the test only: its adjoint gets nothing
        out[i] = b[i] * 2.0
    else:
        out[i] = b[i] * b[i]


def test_gradients_of_an_array_read_only_in_tests_stay_as_they_were():
    def code(src):
        return "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))
    assert "adj_a[" not in code(_gated.source("adjoint"))
    av = np.array([0.2, 0.9, 0.4, 0.7], np.float32)
    bv = np.array([1.5, -2.0, 3.0, 0.25], np.float32)
    a = wp.array(av, requires_grad=True)
    b = wp.array(bv, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    start = np.array([-0.0, 0.0, 3.5, -1.25], np.float32)  # -0.0 and +0.0 keep their signs
    a.grad.assign(start)
    tape = wp.Tape()
    with tape:
        wp.launch(_gated, 4, inputs=[a, b, out])
    tape.backward(grads={out: np.ones(4, np.float32)})
    assert a.grad.numpy().tobytes() == start.tobytes()
    np.testing.assert_allclose(b.grad.numpy(), np.where(av > 0.5, 2.0, 2.0 * bv), rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), np.where(av > 0.5, 2.0 * bv, bv * bv), rtol=1e-6)
