"""wp.static evaluated when a kernel is declared, as Warp does: once per occurrence, with side
effects run once, values in the cache key, Python-scope calls of funcs that use it, struct
values, len() of local vectors, local constants, and Warp's error messages. Also ddot, trace,
diag and get_diag of matrices larger than 4 (found through Warp's static test)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import weft as wp


def test_side_effect_runs_once_at_declaration_and_each_occurrence_keeps_its_value():
    counter = {"n": 0.0}

    def bump():
        counter["n"] += 1.0
        return counter["n"]

    @wp.kernel
    def k(out: wp.array(dtype=float)):
        x = wp.static(bump())
        y = wp.static(bump())
        out[0] = x * 10.0 + y

    assert counter["n"] == 2.0  # evaluated by the decorator, not at launch
    out = wp.zeros(1, dtype=float)
    wp.launch(k, 1, inputs=[out])
    wp.launch(k, 1, inputs=[out])
    assert counter["n"] == 2.0
    assert out.numpy()[0] == 12.0
    assert set(k.adj.resolved_static_expressions) == {"wp.static(bump())"}  # Warp's keys: text
    assert not k.adj.has_unresolved_static_expressions


def test_nested_static_is_evaluated_once_and_alias_keeps_its_value():
    calls = []

    def inner():
        calls.append(1)
        return 3

    alias = wp.static

    @wp.kernel
    def k(out: wp.array(dtype=int)):
        out[0] = wp.static(1 + wp.static(inner()))
        out[1] = alias(7)

    assert len(calls) == 1
    out = wp.zeros(2, dtype=int)
    wp.launch(k, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [4, 7])


@wp.func
def _plus_two():
    return wp.static(40 + 2)


def test_func_using_static_runs_at_python_scope_and_in_kernels():
    assert wp.static(5) == 5
    assert _plus_two() == 42  # a func's own Python code, wp.static included

    @wp.kernel
    def k(out: wp.array(dtype=int)):
        c = 3
        out[0] = wp.static(_plus_two() + c)  # a local constant is visible
        out[1] = _plus_two()

    out = wp.zeros(2, dtype=int)
    wp.launch(k, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [45, 42])


def test_len_of_locals_loop_variables_and_break_in_a_loop_not_unrolled():
    @wp.kernel
    def k(v1: wp.vec2, out: wp.array(dtype=int)):
        v2 = wp.vec3()
        t = wp.transform_identity(float)
        out[0] = wp.static(len(v1) + len(v2) + len(t))
        idx = 1
        for i in range(2):
            for i in range(3):  # noqa: B007 - Python's rule: the inner loop's last value
                pass
            out[idx] = wp.static(i)
            idx += 1
        for j in range(wp.static(True)):
            out[3] = wp.static(1 + wp.static(2)) + j
            break

    assert k.adj.has_unresolved_static_expressions
    out = wp.zeros(4, dtype=int)
    wp.launch(k, 1, inputs=[wp.vec2(), out])
    np.testing.assert_array_equal(out.numpy(), [12, 2, 2, 3])


@wp.struct
class _Params:
    m: wp.mat22
    v: wp.vec3
    i: int


def _make_params():
    p = _Params()
    p.m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    p.v = wp.vec3(5.0, 6.0, 7.0)
    p.i = 8
    return p


def test_struct_value_from_python():
    @wp.kernel
    def k(out: wp.array(dtype=float)):
        p = wp.static(_make_params())
        out[0] = p.m[1, 0] + p.v[2] + float(p.i)

    out = wp.zeros(1, dtype=float)
    wp.launch(k, 1, inputs=[out])
    assert out.numpy()[0] == 3.0 + 7.0 + 8.0


def test_errors_use_warps_messages():
    with pytest.raises(wp.KernelError, match=r"Error evaluating static expression: "
                       r"(float )?division by zero"):
        @wp.kernel
        def bad(out: wp.array(dtype=float)):
            out[0] = wp.static(1.0 / 0.0)

    @wp.kernel
    def uses_param(i: int, out: wp.array(dtype=int)):
        out[0] = wp.static(i * 2)

    with pytest.raises(wp.KernelError, match="name 'i' is not defined. Make sure all "
                       "variables used in the static expression are constant"):
        wp.launch(uses_param, 1, inputs=[3, wp.zeros(1, dtype=int)])

    with pytest.raises(wp.KernelError, match="a Warp array cannot be created inside"):
        @wp.kernel
        def makes_array(out: wp.array(dtype=int)):
            out[0] = wp.static(wp.zeros(3))[0]

    class Opaque:
        pass

    @wp.kernel
    def opaque(out: wp.array(dtype=int)):
        x = wp.static(Opaque())  # noqa: F841

    with pytest.raises(wp.KernelError, match="unsupported value: value of type"):
        wp.launch(opaque, 1, inputs=[wp.zeros(1, dtype=int)])


SCRIPT = textwrap.dedent('''
    import sys
    import weft as wp
    VALUE = float(sys.argv[1])

    def value():
        return VALUE

    @wp.kernel
    def k(out: wp.array(dtype=float)):
        out[0] = wp.static(value())

    out = wp.zeros(1, dtype=float)
    wp.launch(k, 1, inputs=[out])
    print(out.numpy()[0], wp.get_module(__name__).hash_module()[:12])
''')


def test_warm_cache_sees_the_new_static_value(tmp_path, monkeypatch):
    """The value is in the cache key: a second process with another value must not reuse the
    first one's module (the function ``value`` itself did not change)."""
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    env = dict(__import__("os").environ, WEFT_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script), v], capture_output=True, text=True,
                           env=env, check=True).stdout.split() for v in ("1.5", "2.5", "1.5")]
    assert [r[0] for r in runs] == ["1.5", "2.5", "1.5"]
    assert runs[0][1] == runs[2][1] != runs[1][1]  # Module.hash_module follows the value


def test_matrix_contractions_beyond_four():
    vec6 = wp.types.vector(6, float)
    mat66 = wp.types.matrix((6, 6), float)

    @wp.kernel
    def k(a: wp.array(dtype=mat66), d: wp.array(dtype=vec6), o: wp.array(dtype=float),
          m: wp.array(dtype=mat66), g: wp.array(dtype=vec6)):
        o[0] = wp.trace(a[0]) + wp.ddot(a[0], a[0])
        m[0] = wp.diag(d[0])
        g[0] = wp.get_diag(a[0])

    rng = np.random.default_rng(0)
    A = rng.random((1, 6, 6)).astype(np.float32)
    D = rng.random((1, 6)).astype(np.float32)
    a = wp.array(A, dtype=mat66, requires_grad=True)
    d = wp.array(D, dtype=vec6, requires_grad=True)
    o = wp.zeros(1, dtype=float, requires_grad=True)
    m, g = wp.zeros(1, dtype=mat66), wp.zeros(1, dtype=vec6)
    tape = wp.Tape()
    with tape:
        wp.launch(k, 1, inputs=[a, d], outputs=[o, m, g])
    np.testing.assert_allclose(o.numpy()[0], np.trace(A[0]) + (A[0] ** 2).sum(), rtol=1e-6)
    np.testing.assert_array_equal(m.numpy()[0], np.diag(D[0]))
    np.testing.assert_array_equal(g.numpy()[0], np.diag(A[0]))
    tape.backward(grads={o: np.ones(1, np.float32)})
    np.testing.assert_allclose(a.grad.numpy()[0], np.eye(6) + 2 * A[0], rtol=1e-6)
