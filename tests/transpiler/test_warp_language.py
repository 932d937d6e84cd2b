"""Kernel-language features of Warp 1.19 that its tests and examples use: wp.static (with the
loops it unrolls), print / wp.printf / wp.expect_*, slices of vectors and matrices (read,
assigned, augmented, differentiated), transform * transform, matrix_from_rows/cols of any size.
Expected values are Warp's."""
import typing

import numpy as np
import pytest

import weft as wp

N = 3


@wp.func
def add(a: float, b: float):
    return a + b


@wp.func
def mul(a: float, b: float):
    return a * b


FUNCS = [add, mul]


@wp.kernel
def statics(out: wp.array(dtype=float)):
    s = float(0.0)
    for i in range(wp.static(N)):
        s += float(wp.static(i * 2))
    out[0] = s
    out[1] = wp.static(FUNCS[1])(3.0, 2.0)
    if wp.static(N == 3):
        out[2] = 1.0
    else:
        out[2] = 2.0
    for j in range(wp.static(len(FUNCS))):
        out[3] += wp.static(FUNCS[j])(2.0, 5.0)


def test_static_values_functions_conditions_and_unrolled_loops():
    out = wp.zeros(4, dtype=float)
    wp.launch(statics, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [6.0, 6.0, 1.0, 17.0])


@wp.kernel
def checks(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.expect_eq(a[i], 1.0)
    wp.expect_near(v[i], wp.vec3(1.0, 2.0, 3.0), 0.01)
    wp.expect_neq(i, 5)
    if i == 0:
        print("value", a[i])
        wp.printf("i=%d\n", i)


def test_print_and_expect_print_only_what_fails_once_per_launch(capfd):
    a = wp.array(np.array([1.0, 2.0], np.float32), requires_grad=True)
    v = wp.array(np.array([[1, 2, 3], [1, 2, 3.5]], np.float32), dtype=wp.vec3,
                 requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(checks, 2, inputs=[a, v])
    tape.backward(grads={a: np.ones(2, np.float32)})  # the adjoint prints nothing again
    out = capfd.readouterr().out
    assert out.count("value 1.0") == 1 and out.count("i= 0") == 1
    assert out.count("Error, expect_eq() failed:") == 1 and "Actual:  2.0" in out
    assert out.count("Error, expect_near() failed") == 1
    assert "expect_neq" not in out


@wp.func
def checked_at_both_scopes():
    v = wp.vec4(1.0, 2.0, 3.0, 4.0)
    v[-1] = 123.0
    wp.expect_eq(v[-1], 123.0)
    wp.expect_eq(v, wp.vec4(1.0, 2.0, 3.0, 0.0))  # fails: printed
    wp.expect_neq(v[0], 2.0)
    wp.expect_near(v[1], 2.0 + 1e-7)


def test_expect_at_python_scope_as_in_a_kernel(capfd):
    # Warp's tests call such funcs from Python too (test_vec's indexing tests)
    checked_at_both_scopes()
    out = capfd.readouterr().out
    assert out.count("Error, expect_eq() failed:") == 1 and "Actual:  [1.0, 2.0, 3.0, 123.0]" in out
    assert "expect_neq" not in out and "expect_near" not in out


def test_expect_of_two_types_is_a_kernel_error():
    @wp.kernel
    def k():
        wp.expect_neq(wp.vec3f(0.0, 0.0, 0.0), wp.vec2f(0.0, 0.0))

    with pytest.raises(wp.KernelError, match="Can't test equality for objects with different "
                       "types$"):
        wp.launch(k, dim=1)


@wp.kernel
def slices(arr_x: wp.array(dtype=wp.vec2), arr_y: wp.array(dtype=wp.vec4),
           m_out: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    y = arr_y[i]
    y[:2] = arr_x[i]
    y[1:-1] += arr_x[i][:2]
    y[3:1:-1] -= arr_x[i][0:]
    arr_y[i] = y
    m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    m_out[i] = m[1:, :2]


def test_vector_and_matrix_slices_with_gradients():
    x = wp.ones(1, dtype=wp.vec2, requires_grad=True)
    y = wp.zeros(1, dtype=wp.vec4, requires_grad=True)
    m = wp.zeros(1, dtype=wp.mat22)
    tape = wp.Tape()
    with tape:
        wp.launch(slices, 1, inputs=(x,), outputs=(y, m))
    np.testing.assert_array_equal(y.numpy(), [[1, 2, 0, -1]])
    np.testing.assert_array_equal(m.numpy(), [[[4, 5], [7, 8]]])
    y.grad = wp.ones_like(y)
    tape.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1]])


@pytest.mark.parametrize("body,message", [
    (["v = wp.vec4(1.0, 2.0, 3.0, 4.0)", "v[1:] = wp.vec3d(5.0, 6.0, 7.0)"],
     "The provided vector is expected to be of length 3 with dtype float32."),
    (["v = wp.vec4(1.0, 2.0, 3.0, 4.0)", "v[1:] = wp.float64(5.0)"],
     "The provided value is expected to be a vector of length 3, with dtype float32."),
    (["v = wp.vec4(1.0, 2.0, 3.0, 4.0)", "v[1:] = wp.vec2(5.0, 6.0)"],
     "The length of the provided vector (2) isn't compatible with the given slice "
     "(expected 3)."),
])
def test_slice_assignment_errors_are_warps(tmp_path, body, message):
    from tests.kernel_errors import kernel_error
    err = kernel_error(tmp_path, "", body)
    assert isinstance(err, ValueError) and str(err).endswith(message)


@wp.kernel
def compose(out: wp.array(dtype=wp.transform), m: wp.array(dtype=wp.mat22),
            c: wp.array(dtype=wp.types.matrix((3, 2), float))):
    a = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())
    out[0] = a * a
    m[0] = wp.matrix_from_rows(wp.vec2(1.0, 2.0), wp.vec2(3.0, 4.0))
    c[0] = wp.matrix_from_cols(wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0))


def test_transform_product_and_matrices_from_vectors():
    out, m = wp.zeros(1, dtype=wp.transform), wp.zeros(1, dtype=wp.mat22)
    c = wp.zeros(1, dtype=wp.types.matrix((3, 2), float))
    wp.launch(compose, 1, inputs=[out, m, c])
    np.testing.assert_array_equal(out.numpy(), [[2, 4, 6, 0, 0, 0, 1]])
    np.testing.assert_array_equal(m.numpy(), [[[1, 2], [3, 4]]])
    np.testing.assert_array_equal(c.numpy(), [[[1, 4], [2, 5], [3, 6]]])


def test_builtins_called_at_python_scope_give_warps_values():
    q = wp.quat_rpy(0.1, 0.2, 0.3)
    assert isinstance(q, wp.quatf)
    np.testing.assert_allclose(q, [0.03427080065011978, 0.10602051019668579,
                                   0.14357218146324158, 0.983347475528717], rtol=1e-6)
    np.testing.assert_allclose(wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0)),
                               [0.9362934231758118, 0.2896294891834259, -0.19866932928562164],
                               rtol=1e-6)
    v = wp.normalize(wp.vec3d(1.0, 2.0, 2.0))
    assert isinstance(v, wp.vec3d) and np.allclose(v, [1 / 3, 2 / 3, 2 / 3], rtol=1e-15)
    assert wp.sin(0.5) == np.float32(np.sin(np.float32(0.5)))
    assert wp.dot(wp.vec3(1.0, 2.0, 3.0), wp.vec3(1.0, 1.0, 1.0)) == 6.0
    np.testing.assert_array_equal(wp.identity(n=3, dtype=wp.float64), np.eye(3))
    assert isinstance(wp.identity(n=2, dtype=wp.float64), wp.mat22d)
    with pytest.raises(TypeError, match="at Python scope"):
        wp.normalize(wp.vec3(1.0, 2.0, 2.0), wp.vec3(1.0, 2.0, 2.0))


@wp.func
def square(x: float):
    return x * x


@wp.func
def grad_then_add(x: float):
    return x + wp.grad(square)(x)


@wp.func
def two(x: float, y: float):
    return x * y, x + y


@wp.func_grad(two)
def adj_two(x: float, y: float, adj_ret0: float, adj_ret1: float):
    wp.adjoint[x] += y * adj_ret0 + adj_ret1
    wp.adjoint[y] += x * adj_ret0 + adj_ret1


@wp.kernel
def derivatives(x: wp.array(dtype=float), y: wp.array(dtype=float), gx: wp.array(dtype=float),
                ga_y: wp.array(dtype=float), ga_x: wp.array(dtype=float),
                z: wp.array(dtype=float)):
    i = wp.tid()
    g = wp.grad(square)
    gx[i] = g(x[i])
    b, a = wp.grad(wp.atan2)(y[i], x[i])
    ga_y[i] = b
    ga_x[i] = a
    f = square
    p, s = two(x[i], y[i])
    z[i] = grad_then_add(x[i]) + f(1.0) + p * 2.0 + s * 3.0


def test_grad_in_kernels_function_locals_and_func_grad_of_several_results():
    x = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    y = wp.ones(4, dtype=float, requires_grad=True)
    outs = [wp.zeros(4, dtype=float, requires_grad=True) for _ in range(4)]
    tape = wp.Tape()
    with tape:
        wp.launch(derivatives, 4, inputs=[x, y], outputs=outs)
    xs = np.arange(4.0)
    np.testing.assert_allclose(outs[0].numpy(), 2 * xs)
    np.testing.assert_allclose(outs[1].numpy(), xs / (xs ** 2 + 1), rtol=1e-6)
    np.testing.assert_allclose(outs[2].numpy(), -1 / (xs ** 2 + 1), rtol=1e-6)
    np.testing.assert_allclose(outs[3].numpy(), 3 * xs + 1 + 2 * xs + 3 * (xs + 1))
    tape.backward(grads={outs[3]: np.ones(4, np.float32)})
    # z = 3x + 1 + 2xy + 3(x + y): wp.grad's value is a constant of the backward pass, so
    # d/dx = 1 (from x + grad) + 2y + 3 (the user's rule); d/dy = 2x + 3
    np.testing.assert_allclose(x.grad.numpy(), 1 + 2 + 3)
    np.testing.assert_allclose(y.grad.numpy(), 2 * xs + 3)


@pytest.mark.parametrize("body", [["f = square", "f = wp.sin", "a[0] = f(1.0)"],
                                  ["f = square", "f = 1.0", "a[0] = f"]])
def test_rebinding_a_function_local_is_an_error(tmp_path, body):
    from tests.kernel_errors import kernel_error
    src_line = "@wp.func\ndef square(x: float):\n    return x * x\n"
    err = kernel_error(tmp_path, "a: wp.array(dtype=float)", body, prelude=src_line)
    assert "rebinding function-valued local 'f'" in str(err)


_vec0 = wp.types.vector(0, float)
_vec2 = wp.types.vector(2, float)


@wp.kernel
def negative_indices(o: wp.array(dtype=wp.quat), x: wp.array(dtype=float),
                     flags: wp.array(dtype=int)):
    q = wp.quat(1.0, 2.0, 3.0, 4.0)
    q[-1] = 123.0 * x[0]
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    q[0] = m[-1, -2] + m[-1][0]
    o[0] = q
    flags[0] = int(q[123:] == _vec0())  # empty slices compare equal
    flags[1] = int(q[::-2] == _vec2(123.0, 2.0))


def test_negative_constant_indices_and_empty_vectors():
    o = wp.zeros(1, dtype=wp.quat, requires_grad=True)
    x = wp.array([1.0], dtype=float, requires_grad=True)
    flags = wp.zeros(2, dtype=int)
    tape = wp.Tape()
    with tape:
        wp.launch(negative_indices, 1, inputs=[o, x, flags])
    np.testing.assert_array_equal(o.numpy(), [[6.0, 2.0, 3.0, 123.0]])
    np.testing.assert_array_equal(flags.numpy(), [1, 1])
    tape.backward(grads={o: np.ones((1, 4), np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), [123.0])


@wp.kernel
def short_circuit(arr: wp.array(dtype=int), x: wp.array(dtype=wp.float64),
                  result: wp.array(dtype=int), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = x[i]
    if arr and i >= 0 and arr[i] == 0:  # a null array is false; arr[i] is then never read
        result[i] = -1
        return
    if not arr or i < 0 or arr[i] == 0:
        result[i] = 2
    if x[i] > 0.0 and (x[i] * x[i] > 0.5 or wp.sin(x[i]) > 0.9):
        out[i] = x[i] * x[i] * x[i]


@wp.struct
class _WithArray:
    data: wp.array(dtype=int)


@wp.kernel
def unset_member(s: _WithArray, out: wp.array(dtype=int)):
    out[0] = 7
    if s.data:
        out[0] = s.data[0]


def test_null_arrays_and_short_circuit_conditions():
    xv = np.array([1.0, -1.0, 2.0, 0.3])
    x = wp.array(xv, dtype=wp.float64, requires_grad=True)
    result = wp.zeros(4, dtype=int)
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(short_circuit, 4, inputs=[None, x, result, out])
    np.testing.assert_array_equal(result.numpy(), [2, 2, 2, 2])
    np.testing.assert_allclose(out.numpy(), [1.0, -1.0, 8.0, 0.3])
    tape.backward(grads={out: np.ones(4)})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 1.0, 12.0, 1.0])  # 3x^2 where cubed
    wp.launch(short_circuit, 4, inputs=[wp.array([0, 1, 0, 5], dtype=int), x, result, out])
    np.testing.assert_array_equal(result.numpy(), [-1, 2, -1, 2])
    s = _WithArray()  # Warp: an unset array member is a null array
    o = wp.zeros(1, dtype=int)
    wp.launch(unset_member, 1, inputs=[s, o])
    assert o.numpy()[0] == 7
    s.data = wp.array([42], dtype=int)
    wp.launch(unset_member, 1, inputs=[s, o])
    assert o.numpy()[0] == 42
    # an unguarded element of a null array is an error (the launch runs bounds-checked)
    with pytest.raises(IndexError, match="out of bounds"):
        wp.launch(unguarded, 1, inputs=[None, o])
    # the launches with a null array ran a build that checks that array's accesses (and those
    # at constant indices), not every access: x, result and out compile as in release
    import re
    src = short_circuit.compiled("cpu", mode="guarded:arr").module.__weft_source__
    assert re.search(r"\barr\[_wk\.chk\(i, arr\.shape\[0\]", src)
    assert not re.search(r"\b(x|result|out|adj_x|adj_out)\[_wk\.", src)
    assert not re.search(r"_wk\.inb\([^\n]*\b(result|out|adj_x)\.shape", src)
    src = unset_member.compiled("cpu", mode="guarded:s__data").module.__weft_source__
    assert "s__data[_wk.chk(int64(0), s__data.shape[0]" in src


@wp.kernel
def unguarded(arr: wp.array(dtype=int), out: wp.array(dtype=int)):
    out[0] = arr[5]


@wp.kernel
def row_in_one_branch(kind: wp.array(dtype=int), q: wp.array2d(dtype=float),
                      out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 1.0
    if kind[i] == 0:
        row = q[i]  # a view bound on this path only, read only here
        out[i] = row[0] + row[1]


@wp.kernel
def row_after_join(kind: wp.array(dtype=int), q: wp.array2d(dtype=float),
                   out: wp.array(dtype=float)):
    i = wp.tid()
    if kind[i] == 0:
        row = q[i]
    out[i] = 1.0
    if kind[i] == 0:
        out[i] = row[0] * 2.0  # the merged name: Warp's null array on the other path


def test_arrays_bound_on_some_paths_only():
    """A join gives such an array Warp's null array on the other paths; the kernel then runs
    its bounds-checked build only if something after the join reads the merged name (MuJoCo
    Warp's ``qpos = qpos_in[worldid]`` under a branch compiled in debug mode, 153 s)."""
    kind = wp.array([0, 1, 0], dtype=int)
    q = wp.array(np.arange(6.0).reshape(3, 2), dtype=float)
    out = wp.zeros(3, dtype=float)
    wp.launch(row_in_one_branch, 3, inputs=[kind, q, out])
    np.testing.assert_allclose(out.numpy(), [1.0, 1.0, 9.0])
    assert not row_in_one_branch.compiled("cpu").abi.null_arrays
    wp.launch(row_after_join, 3, inputs=[kind, q, out])
    np.testing.assert_allclose(out.numpy(), [0.0, 1.0, 8.0])
    assert row_after_join.compiled("cpu").abi.null_arrays


@wp.kernel
def loop_variable_after(gates: wp.array(dtype=int), n: int, out: wp.array(dtype=int)):
    total = int(0)
    for i in range(4):
        total += 7
        if gates[i] != 0:
            continue
        total += 11
    out[0] = total
    out[1] = i          # the last value, as in Python
    j = int(9)
    for j in range(n, 0):
        total += 1
    out[2] = j          # no iteration: unchanged
    for k in range(n):
        total += k
    k += 10             # Warp's test_codegen reuses it like this
    out[3] = k


def test_loop_variable_keeps_its_last_value_after_the_loop():
    out = wp.zeros(4, dtype=int)
    wp.launch(loop_variable_after, 1, inputs=[wp.array([0, 1, 0, 1], dtype=int), 3, out])
    np.testing.assert_array_equal(out.numpy(), [4 * 7 + 2 * 11, 3, 9, 12])


@wp.kernel
def static_continue(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    tid = wp.tid()
    value = float(0.0)
    for i in range(6):
        if wp.static(i % 2 == 0):
            continue
        value += float(i) * x[tid]
    out[tid] = value


def test_continue_under_a_static_condition_in_an_unrolled_loop():
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(static_continue, 2, inputs=[x, out])
    tape.backward(grads={out: wp.ones_like(out)})
    np.testing.assert_array_equal(out.numpy(), [9.0, 18.0])   # 1 + 3 + 5
    np.testing.assert_array_equal(x.grad.numpy(), [9.0, 9.0])


def test_runtime_continue_in_an_unrolled_loop_is_an_error():
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        for i in range(3):
            if wp.static(i > 0):
                x[0] = 1.0
            if x[i] > 0.0:
                continue
            x[i] = 2.0

    with pytest.raises(wp.KernelError, match="unrolled for wp.static"):
        wp.launch(k, 1, inputs=[wp.zeros(3, dtype=float)])


@wp.func
def annotated_int16(x: wp.int32) -> wp.int16:
    return wp.int8(x)


@wp.func
def annotated_pair(x: int) -> tuple[int, int]:
    return (x, 1.23)


@wp.func
def annotated_ok(x: int) -> tuple[int, float]:
    return (x, 1.23)


@pytest.mark.parametrize("func,message", [
    (annotated_int16, "annotated as `int16` but the code returns a value of type `int8`"),
    (annotated_pair, r"annotated as `tuple\[int, int\]` but the code returns a tuple with types "
                     r"`\(int32, float32\)`"),
    (annotated_ok, None)])
def test_return_annotations_are_checked(func, message):
    @wp.kernel
    def k(out: wp.array(dtype=int)):
        r = func(3)
        if wp.static(func is annotated_int16):
            out[0] = int(r)
        else:
            out[0] = int(r[0])

    out = wp.zeros(1, dtype=int)
    if message is None:
        wp.launch(k, 1, inputs=[out])
        assert out.numpy()[0] == 3
    else:
        with pytest.raises(wp.KernelError, match=message):
            wp.launch(k, 1, inputs=[out])


def _returning_kernel(ret):
    Ret = ret

    @wp.kernel
    def aliased(x: float) -> Ret:
        return

    return aliased


def test_kernels_return_nothing_whatever_the_cache_holds():
    # the same source annotated None, then float: the second must fail although the first
    # compiled (Warp's test_error_kernel_return_alias_unique_module_reuse)
    wp.launch(_returning_kernel(None), 1, inputs=[3.0])
    with pytest.raises(wp.KernelTypeError, match="Warp kernels cannot return values"):
        wp.launch(_returning_kernel(float), 1, inputs=[3.0])

    @wp.kernel
    def returns_none(x: float):
        return None

    with pytest.raises(wp.KernelTypeError, match=r"omit the return annotation or use `-> None`"):
        wp.launch(returns_none, 1, inputs=[3.0])


@wp.kernel
def keyword_builtins(out: wp.array(dtype=float)):
    out[0] = wp.pow(y=4.0, x=2.0)
    out[1] = wp.pow(2.0, y=3.0)
    out[2] = wp.clamp(5.0, low=0.0, high=1.5)
    out[3] = wp.where(True, value_if_false=3.0, value_if_true=7.0)
    out[4] = wp.length(a=wp.vec2(3.0, 4.0))


def test_builtins_take_keyword_arguments_by_warps_names():
    out = wp.zeros(5, dtype=float)
    wp.launch(keyword_builtins, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [16.0, 8.0, 1.5, 7.0, 5.0])

    @wp.kernel
    def bad(out: wp.array(dtype=float)):
        out[0] = wp.pow(2.0, z=1.0)

    with pytest.raises(wp.KernelError, match="unexpected keyword argument 'z'"):
        wp.launch(bad, 1, inputs=[out])


@wp.kernel
def python_scalar_types_through_wp(out: wp.array(dtype=float)):
    a = wp.float(0.5)
    out[0] = a + float(wp.int(2.7)) + float(wp.bool(3))


def test_python_scalar_types_named_through_wp():
    out = wp.zeros(1, dtype=float)
    wp.launch(python_scalar_types_through_wp, 1, inputs=[out])
    assert out.numpy()[0] == 3.5


@wp.kernel
def reversed_ranges(starts: wp.array(dtype=int), ends: wp.array(dtype=int),
                    steps: wp.array(dtype=int), counts: wp.array(dtype=int),
                    values: wp.array2d(dtype=int)):
    tid = wp.tid()
    count = int(0)
    for i in reversed(range(starts[tid], ends[tid], steps[tid])):
        if count < values.shape[1]:
            values[tid, count] = i
        count += 1
    counts[tid] = count


def test_reversed_range_is_pythons():
    cases = [(s, e, k) for s in range(-4, 5) for e in range(-4, 5) for k in (-3, -2, -1, 1, 2, 3)]
    cols = [wp.array([c[j] for c in cases], dtype=int) for j in range(3)]
    counts = wp.zeros(len(cases), dtype=int)
    values = wp.zeros((len(cases), 9), dtype=int)
    wp.launch(reversed_ranges, len(cases), inputs=[*cols, counts, values])
    for j, (s, e, k) in enumerate(cases):
        expected = list(reversed(range(s, e, k)))
        assert counts.numpy()[j] == len(expected), (s, e, k)
        assert list(values.numpy()[j, :len(expected)]) == expected, (s, e, k)


@wp.kernel
def named_literals(values: wp.array(dtype=wp.float64), counts: wp.array(dtype=int)):
    x = 0.1
    n = 3
    d = wp.vec3d(x, 0.0, 0.0)
    values[0] = d[0]
    values[1] = wp.float64(x)      # 0.1 in double precision, as Warp's constants
    y = x * 2.0                    # float32 arithmetic where nothing asks for more
    values[2] = wp.float64(y)
    f = wp.vec3f(4.0, 5.0, 6.0)
    sliced = f[0:n]                # a compile-time bound
    counts[0] = n
    counts[1] = int(sliced[2])
    x = 0.5                        # rebound: the new literal
    values[3] = wp.float64(x)


def test_names_bound_to_literals_read_as_the_literal():
    values = wp.zeros(4, dtype=wp.float64)
    counts = wp.zeros(2, dtype=int)
    wp.launch(named_literals, 1, inputs=[values, counts])
    np.testing.assert_array_equal(values.numpy(), [0.1, 0.1, np.float64(np.float32(0.2)), 0.5])
    np.testing.assert_array_equal(counts.numpy(), [3, 6])


@wp.struct
class Slot:
    value: float


@wp.func
def bump_index(counter: wp.array(dtype=int), i: int) -> int:
    wp.atomic_add(counter, 0, 1)
    return i


@wp.func
def bump_value(counter: wp.array(dtype=int), v: float) -> float:
    wp.atomic_add(counter, 1, 1)
    return v


@wp.kernel
def aug_assign_once(counter: wp.array(dtype=int), data: wp.array(dtype=Slot),
                    m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    data[bump_index(counter, i)].value += bump_value(counter, 5.0)
    m[bump_index(counter, i)][1] += wp.vec2(1.0, 2.0)


def test_augmented_assignment_evaluates_its_target_once():
    counter = wp.zeros(2, dtype=int)
    data = wp.zeros(1, dtype=Slot)
    m = wp.zeros(1, dtype=wp.mat22)
    wp.launch(aug_assign_once, 1, inputs=[counter, data, m])
    np.testing.assert_array_equal(counter.numpy(), [2, 1])   # two targets, one value call
    assert data.numpy()[0][0] == 5.0
    np.testing.assert_array_equal(m.numpy()[0], [[0.0, 0.0], [1.0, 2.0]])


@wp.func
def picked(a: float, b: float):
    return a * b


@wp.func
def picked(a: typing.Any, b: typing.Any):  # noqa: F811 - overloads, as Warp
    return a + b


@wp.func
def picked(a: int, b: int):  # noqa: F811
    return a - b


@wp.kernel
def overloads_by_literal_type(out_f: wp.array(dtype=float), out_i: wp.array(dtype=int),
                              out_v: wp.array(dtype=wp.vec2)):
    out_i[0] = picked(17, 25)            # int literals: the int overload (Warp's choice)
    out_f[0] = picked(7.0, 10.0)         # float literals: the float overload
    out_f[1] = picked(7.0, 10)           # mixed: the float overload, 10 adapting
    out_v[0] = picked(wp.vec2(1.0, 2.0), wp.vec2(10.0, 20.0))   # the generic one


def test_overloads_prefer_the_literals_own_types():
    out_f, out_i = wp.zeros(2, dtype=float), wp.zeros(1, dtype=int)
    out_v = wp.zeros(1, dtype=wp.vec2)
    wp.launch(overloads_by_literal_type, 1, inputs=[out_f, out_i, out_v])
    assert out_i.numpy()[0] == -8
    np.testing.assert_array_equal(out_f.numpy(), [70.0, 70.0])
    np.testing.assert_array_equal(out_v.numpy()[0], [11.0, 22.0])


@wp.kernel
def transforms_by_keyword(vs: wp.array(dtype=wp.vec3), qs: wp.array(dtype=wp.quat),
                          out: wp.array(dtype=wp.transform)):
    out[0] = wp.transform(p=vs[0], q=qs[0])
    out[1] = wp.transformation(q=qs[0], p=vs[0])
    out[2] = wp.transform(p=vs[0])          # the identity rotation, as at Python scope
    out[3] = wp.transformation(vs[0], q=qs[0])


def test_transform_constructors_take_p_and_q_keywords():
    q = np.array([0.0, 0.6, 0.0, 0.8])
    out = wp.zeros(4, dtype=wp.transform)
    wp.launch(transforms_by_keyword, 1, inputs=[wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3),
                                                wp.array([q], dtype=wp.quat), out])
    full = [1.0, 2.0, 3.0, *q]
    np.testing.assert_allclose(out.numpy(), [full, full, [1.0, 2.0, 3.0, 0, 0, 0, 1], full])

    @wp.kernel
    def bad(out: wp.array(dtype=wp.vec3)):
        out[0] = wp.vec3(x=1.0)

    with pytest.raises(wp.KernelError, match="takes no keyword 'x'"):
        wp.launch(bad, 1, inputs=[wp.zeros(1, dtype=wp.vec3)])


@wp.kernel
def negative_component_updates(out: wp.array(dtype=wp.transform)):
    t = wp.transform(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat(4.0, 5.0, 6.0, 7.0))
    t[3] *= 2.0
    t[-5] *= 2.0      # a constant index, negative: component 2
    t[-1] += 1.0
    out[0] = t


def test_augmented_assignment_to_negative_constant_components():
    out = wp.zeros(1, dtype=wp.transform)
    wp.launch(negative_component_updates, 1, inputs=[out])
    np.testing.assert_array_equal(out.numpy()[0], [1.0, 2.0, 6.0, 8.0, 5.0, 6.0, 8.0])


@wp.func
def _square(x: float):
    return x * x


def test_a_local_holding_a_gradient_cannot_be_rebound():
    @wp.kernel
    def by_tuple(out: wp.array(dtype=float)):
        g = wp.grad(_square)
        g, x = (1.0, 2.0)  # noqa: F841
        out[0] = x

    @wp.kernel
    def by_aug(out: wp.array(dtype=float)):
        g = wp.grad(_square)
        g += 1.0
        out[0] = 1.0

    for k in (by_tuple, by_aug):
        with pytest.raises(wp.KernelError, match="Cannot reassign local 'g'.*wp.grad"):
            wp.launch(k, 1, inputs=[wp.zeros(1, dtype=float)])


@wp.kernel
def ifexp_one_branch(x: float, result: wp.array(dtype=int)):
    wp.atomic_add(result, 0, 1) if x > 0.0 else wp.atomic_add(result, 1, 1)


@wp.kernel
def ifexp_guarded_read(a: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = a[i] * 2.0 if i < n else 0.0     # a[i] is not read where i >= n
    out[i + 3] = wp.sin(a[0]) if i == 0 else wp.float64(1.0)


def test_conditional_expressions_run_one_branch_when_it_acts():
    result = wp.zeros(2, dtype=int)
    wp.launch(ifexp_one_branch, 1, inputs=[1.0, result])
    np.testing.assert_array_equal(result.numpy(), [1, 0])
    a = wp.array([1.0, 2.0, 3.0], dtype=wp.float64, requires_grad=True)
    out = wp.zeros(6, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(ifexp_guarded_read, 3, inputs=[a, 2, out])
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 0.0, np.sin(1.0), 1.0, 1.0])
    tape.backward(grads={out: wp.array(np.ones(6))})
    np.testing.assert_allclose(a.grad.numpy(), [2.0 + np.cos(1.0), 2.0, 0.0])
