"""Every user mistake in kernel source is a KernelError naming file:line:col with a caret."""
import os

import pytest

import weft as wp

THIS = os.path.basename(__file__)


def _error(kernel):
    with pytest.raises(wp.KernelError) as info:
        kernel.source()
    return info.value, str(info.value)


def _line_of(text):
    with open(__file__) as f:
        for n, line in enumerate(f, 1):
            if text in line and "_line_of" not in line:
                return n
    raise AssertionError(text)


@wp.kernel
def k_type_mismatch(a: wp.array(dtype=float), b: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a[i] = a[i] + b[i]  # MISMATCH


def test_type_mismatch_location_and_caret():
    err, text = _error(k_type_mismatch)
    assert isinstance(err, wp.KernelTypeError)
    line = _line_of("# MISMATCH")
    assert text.startswith(f"{__file__}:{line}:12: in kernel 'k_type_mismatch': ")
    assert "(float32, float64)" in text and "signatures" in text
    src_line, caret = text.splitlines()[-2:]
    assert src_line.strip() == "a[i] = a[i] + b[i]  # MISMATCH"
    # the caret sits under the start of the offending expression
    assert caret.index("^") == src_line.index("a[i] + b[i]")


@wp.kernel
def k_unknown_name(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = undefined_thing * 2.0  # noqa: F821


def test_unknown_name():
    err, text = _error(k_unknown_name)
    assert isinstance(err, wp.KernelNameError)
    assert "name 'undefined_thing' is not defined" in text
    assert f":{_line_of('undefined_thing * 2.0')}:" in text


@wp.kernel
def k_unsupported_syntax(a: wp.array(dtype=float)):
    i = wp.tid()
    with open("x"):  # WITH
        pass


def test_unsupported_syntax():
    err, text = _error(k_unsupported_syntax)
    assert isinstance(err, wp.KernelSyntaxError)
    assert "'With' statements are not supported" in text
    assert f":{_line_of('# WITH')}:5:" in text


@wp.func
def two_args(x: float, y: float):
    return x + y


@wp.kernel
def k_wrong_arg_count(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = two_args(a[i])


def test_wrong_argument_count_to_func():
    err, text = _error(k_wrong_arg_count)
    assert "two_args() takes 2 arguments, got 1" in text


@wp.kernel
def k_wrong_builtin_types(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.dot(a[i], a[i])


def test_builtin_with_wrong_types_lists_signatures():
    err, text = _error(k_wrong_builtin_types)
    assert "no signature of 'dot' accepts (float32, float32)" in text
    assert "dot(a: Vector, b: Vector) -> Scalar" in text


@wp.kernel
def k_store_wrong_type(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = i


def test_store_of_wrong_type():
    err, text = _error(k_store_wrong_type)
    assert "cannot store a value of type int32 into an array of float32" in text


@wp.kernel
def k_reassign_type(a: wp.array(dtype=float)):
    i = wp.tid()
    x = 1.0
    x = i
    a[i] = x


def test_reassign_with_other_type():
    err, text = _error(k_reassign_type)
    assert "cannot assign a value of type int32 to 'x' of type float32" in text


@wp.kernel
def k_missing_annotation(a):
    i = wp.tid()


def test_kernel_param_needs_annotation():
    err, text = _error(k_missing_annotation)
    assert "kernel parameter 'a' needs a type annotation" in text


@wp.kernel
def k_loop_local_after(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    for j in range(n):
        t = a[i] * 2.0
    a[i] = t


def test_loop_local_used_after_loop():
    err, text = _error(k_loop_local_after)
    assert "'t' is only defined inside a loop above" in text


@wp.kernel
def k_range_float(a: wp.array(dtype=float)):
    i = wp.tid()
    for j in range(a[i]):
        a[i] = 0.0


def test_range_needs_integers():
    err, text = _error(k_range_float)
    assert "range() needs integers, got float32" in text


@wp.kernel
def k_non_range_loop(a: wp.array(dtype=float)):
    i = wp.tid()
    for x in a:
        pass


def test_loops_only_over_range():
    err, text = _error(k_non_range_loop)
    assert "kernels can only loop over range(...)" in text


@wp.kernel
def k_kernel_returns_value(a: wp.array(dtype=float)):
    i = wp.tid()
    return a[i]


def test_kernel_cannot_return_value():
    err, text = _error(k_kernel_returns_value)
    assert "kernels cannot return a value" in text


@wp.kernel
def k_bad_attribute(a: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = a[i]
    a[i] = wp.vec3(v.q, 0.0, 0.0)


def test_bad_component_name():
    err, text = _error(k_bad_attribute)
    assert "vec3f has no attribute 'q'" in text


@wp.kernel
def k_too_many_indices(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i, i]


def test_too_many_indices():
    err, text = _error(k_too_many_indices)
    assert "too many indices (2) for an array of 1 dimensions" in text


def test_func_called_from_python_is_an_error():
    with pytest.raises(wp.KernelError, match="can only be called inside a kernel"):
        two_args(1.0, 2.0)


def test_error_is_raised_at_launch_before_running():
    a = wp.zeros(3, dtype=float)
    with pytest.raises(wp.KernelError):
        wp.launch(k_type_mismatch, dim=3, inputs=[a, wp.zeros(3, dtype=wp.float64)])
