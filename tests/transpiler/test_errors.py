"""Every user mistake in kernel source is a KernelError naming file:line:col with a caret."""
import os

import pytest

import weft as wp
from tests.kernel_errors import kernel_error

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
    assert text.startswith(f"{__file__}:{line}:12: in kernel 'k_type_mismatch':\n")
    assert "(float32, float64)" in text and "signatures" in text
    src_line, caret = text.splitlines()[1:3]
    assert text.splitlines()[3].startswith(
        "Input types must be the same, got ['float32', 'float64']: no signature of '+' accepts")
    assert src_line.strip() == "a[i] = a[i] + b[i]  # MISMATCH"
    # the caret sits under the start of the offending expression
    assert caret.index("^") == src_line.index("a[i] + b[i]")


# (parameters, body lines, error class, message fragment, body line of the error); each case
# is compiled from a real file whose body starts on line 6 (tests/kernel_errors.py)
CASES = {
    "unknown name": ("a: wp.array(dtype=float)",
                     ["i = wp.tid()", "a[i] = undefined_thing * 2.0"],
                     wp.KernelNameError, "name 'undefined_thing' is not defined", 2),
    "unknown function": ("a: wp.array(dtype=float)",
                         ["i = wp.tid()", "a[i] = wp.missing_func(1.0)"],
                         AttributeError, "Could not find function wp.missing_func", 2),
    "unknown namespace": ("a: wp.array(dtype=float)",
                          ["i = wp.tid()", "a[i] = wp.foo.bar(1.0)"],
                          wp.KernelNameError, "`foo` is not an attribute of 'wp'", 2),
    "list display": ("a: wp.array(dtype=float)", ["i = wp.tid()", "x = [1.0, 2.0]"],
                     wp.KernelSyntaxError, "List constructs are not supported in kernels", 2),
    "dict display": ("a: wp.array(dtype=float)", ["i = wp.tid()", "x = {'a': 1.0}"],
                     wp.KernelSyntaxError, "Construct `ast.Dict` not supported in kernels", 2),
    "unsupported syntax": ("a: wp.array(dtype=float)",
                           ["i = wp.tid()", "with open('x'):", "    pass"],
                           wp.KernelSyntaxError, "'With' statements are not supported", 2),
    "wrong argument count": ("a: wp.array(dtype=float)",
                             ["i = wp.tid()", "a[i] = wp.lerp(a[i])"],
                             wp.KernelTypeError, "lerp() takes 3 arguments, got 1", 2),
    "builtin types": ("a: wp.array(dtype=float)", ["i = wp.tid()", "a[i] = wp.dot(a[i], a[i])"],
                      wp.KernelTypeError, "no signature of 'dot' accepts (float32, float32)", 2),
    "store type": ("a: wp.array(dtype=float)", ["i = wp.tid()", "a[i] = i"], wp.KernelTypeError,
                   "cannot store a value of type int32 into an array of float32", 2),
    "reassigned type": ("a: wp.array(dtype=float)",
                        ["i = wp.tid()", "x = 1.0", "x = i", "a[i] = x"], wp.KernelTypeError,
                        "cannot assign a value of type int32 to 'x' of type float32", 3),
    "missing annotation": ("a", ["i = wp.tid()"], wp.KernelTypeError,
                           "kernel parameter 'a' needs a type annotation", 0),
    "loop view after loop": ("a: wp.array(dtype=float), b: wp.array2d(dtype=float), n: int",
                             ["i = wp.tid()", "for j in range(n):", "    t = b[j]",
                              "a[i] = t[0]"], wp.KernelNameError,
                             "'t' is only defined inside a loop above", 4),
    "range of float": ("a: wp.array(dtype=float)",
                       ["i = wp.tid()", "for j in range(a[i]):", "    a[i] = 0.0"],
                       wp.KernelTypeError, "range() needs integers, got float32", 2),
    "loop over array": ("a: wp.array(dtype=float)", ["i = wp.tid()", "for x in a:", "    pass"],
                        wp.KernelSyntaxError, "kernels can only loop over range(...)", 2),
    "kernel returns": ("a: wp.array(dtype=float)", ["i = wp.tid()", "return a[i]"],
                       wp.KernelTypeError, "Warp kernels cannot return values", 2),
    "component name": ("a: wp.array(dtype=wp.vec3)",
                       ["i = wp.tid()", "v = a[i]", "a[i] = wp.vec3(v.q, 0.0, 0.0)"],
                       wp.KernelTypeError, "vec3f has no attribute 'q'", 3),
    "array in a tuple": ("a: wp.array(dtype=float), b: wp.array(dtype=float)",
                         ["i = wp.tid()", "p = (a, b)", "x, y = p", "a[i] = x[i] + y[i]"],
                         wp.KernelTypeError, "arrays cannot be put in tuples", 2),
    "too many indices": ("a: wp.array(dtype=float)", ["i = wp.tid()", "a[i] = a[i, i]"],
                         wp.KernelTypeError, "too many indices (2) for an array of 1 dimensions",
                         2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_user_mistakes_are_located_kernel_errors(tmp_path, case):
    params, body, cls, message, line = CASES[case]
    err = kernel_error(tmp_path, params, body)
    assert isinstance(err, cls), (type(err), str(err))
    assert message in str(err)
    assert err.lineno == (5 + line if line else 5) and err.filename.endswith("bad_kernel.py")
    assert str(err).startswith(f"{err.filename}:{err.lineno}:")


@wp.func
def two_args(x: float, y: float):
    return x + y


def test_func_called_from_python_runs_its_python_code_and_kernel_only_names_refuse():
    assert two_args(1.0, 2.0) == 3.0  # as in Warp
    with pytest.raises(TypeError, match="can only be called inside a kernel"):
        wp.tid()
    with pytest.raises(TypeError, match="can only be called inside a kernel"):
        wp.atomic_add(wp.zeros(1, dtype=float), 0, 1.0)


def test_error_is_raised_at_launch_before_running():
    a = wp.zeros(3, dtype=float)
    with pytest.raises(wp.KernelError):
        wp.launch(k_type_mismatch, dim=3, inputs=[a, wp.zeros(3, dtype=wp.float64)])


@wp.kernel
def k_str_precision(A: wp.array2d(dtype=float), C: wp.array2d(dtype=float), mode: str):
    a = wp.tile_load(A, shape=(4, 4))
    wp.tile_store(C, wp.tile_matmul(a, a, precision=mode))  # STR PRECISION


@wp.kernel
def k_str_unused(a: wp.array(dtype=float), label: str):
    a[wp.tid()] = 1.0


def test_a_str_parameter_is_refused_where_it_is_used_as_a_literal():
    """Warp declares a ``str`` parameter but cannot launch one (it cannot pack it), and its code
    generation refuses one passed where a literal is needed (``precision=``, a ValueError)."""
    err, text = _error(k_str_precision)
    assert isinstance(err, wp.KernelError) and isinstance(err, ValueError)
    line = _line_of("# STR PRECISION")
    assert text.startswith(f"{__file__}:{line}:")
    assert "precision must be a string literal, got a non-literal argument" in text
    assert "'mode' is a str parameter" in text
    err, text = _error(k_str_unused)
    assert isinstance(err, wp.KernelTypeError)
    assert "kernel parameter 'label: str'" in text and "strings as literals only" in text
    A = wp.zeros((4, 4), dtype=float)
    with pytest.raises(ValueError, match="got a non-literal argument"):  # at the launch, as Warp
        wp.launch_tiled(k_str_precision, dim=(1, 1), inputs=[A, A, "tf32"], block_dim=4)
