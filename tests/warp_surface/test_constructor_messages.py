"""Vector and matrix constructors in kernels report Warp's messages for mismatched values;
constant shapes may be named; matrices' rows and columns at Python scope."""
import numpy as np
import pytest

import weft as wp

ROWS, COLS = 2, 3


def _fails(tmp_path, body, message, *params):
    src = "def kernel(" + ", ".join(params) + "):\n    " + body + "\n"
    path = str(tmp_path / f"ctor_{abs(hash(src))}.py")
    with open(path, "w") as f:
        f.write("import weft as wp\n" + src)
    scope = {}
    exec(compile("import weft as wp\n" + src, path, "exec"), scope)
    k = wp.Kernel(func=scope["kernel"])
    with pytest.raises(RuntimeError, match=message):
        k.compiled()


@pytest.mark.parametrize("body,message", [
    ("wp.types.vector(wp.types.vector(length=2, dtype=float), length=3, dtype=float)",
     r"incompatible vector of length 3 given when copy constructing a vector of length 2$"),
    ("wp.types.vector(1.0, 2.0, length=12345)",
     r"incompatible number of values given \(2\) when constructing a vector of length 12345$"),
    ("wp.types.vector()",
     r"the `length` argument must be specified when zero-initializing a vector$"),
    ("wp.vec3(wp.vec2(1.0, 2.0))",
     "incompatible vector of length 3 given when copy constructing a vector of length 2"),
    ("wp.types.matrix(1.0, 2.0, 3.0, shape=(2, 2), dtype=float)",
     r"incompatible number of values given \(3\) when constructing a matrix of shape \(2, 2\)$"),
    ("wp.types.matrix(1.0, 2.0, 3.0)",
     r"the `shape` argument must be specified when initializing a matrix by value$"),
    ("wp.mat33(wp.mat22(1.0, 2.0, 3.0, 4.0))",
     r"incompatible matrix of shape \(3, 3\) given when copy constructing a matrix of shape "
     r"\(2, 2\)"),
    ("wp.mat22(1.0, 2.0, 3.0)",
     r"incompatible number of values given \(3\) when constructing a matrix of shape \(2, 2\)$"),
])
def test_warps_messages(tmp_path, body, message):
    _fails(tmp_path, body, message)


def test_typed_values_must_match(tmp_path):
    _fails(tmp_path, "wp.vec2(x, x)",
           r"all values used to initialize this vector are expected to be of the type `float32`$",
           "x: wp.float64")
    _fails(tmp_path, "wp.types.matrix(x, shape=(3, 2), dtype=wp.float16)",
           r"the value used to fill this matrix is expected to be of the type `float16`$",
           "x: float")


@wp.kernel
def named_shape(out: wp.array(dtype=float)):
    m = wp.types.matrix(shape=(ROWS, COLS), dtype=float)
    out[0] = float(len(m)) + m[1, 2]


def test_named_constant_shape_and_python_scope_rows_and_columns():
    out = wp.zeros(1, dtype=float)
    wp.launch(named_shape, 1, inputs=[out])
    assert out.numpy()[0] == 2.0
    m = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    assert isinstance(m.get_col(0), wp.vec3) and list(m.get_col(0)) == [1.0, 4.0, 7.0]
    assert list(m.get_row(1)) == [4.0, 5.0, 6.0]
    m.set_col(2, wp.vec3(0.0, 0.0, 0.0))
    np.testing.assert_array_equal(np.array(m)[:, 2], [0.0, 0.0, 0.0])


def test_transform_from_the_wrong_number_of_scalars():
    @wp.kernel
    def k():
        wp.transform(1.0, 2.0, 3.0)

    with pytest.raises(RuntimeError, match=r"incompatible number of values given \(3\) when "
                       r"constructing a transform; expected 0, 1, or 7$"):
        wp.launch(k, dim=1)


def test_typed_constructors_accept_agreeing_shape_and_dtype_keywords():
    mat32d = wp.types.matrix((3, 2), wp.float64)

    @wp.kernel
    def k(o: wp.array(dtype=mat32d)):
        o[0] = mat32d(wp.float64(2.0), shape=(3, 2))
        o[1] = mat32d(wp.float64(3.0), dtype=wp.float64)

    o = wp.zeros(2, dtype=mat32d)
    wp.launch(k, 1, inputs=[o])
    assert (o.numpy()[0] == 2.0).all() and (o.numpy()[1] == 3.0).all()

    @wp.kernel
    def bad(o: wp.array(dtype=mat32d)):
        o[0] = mat32d(wp.float64(1.0), shape=(2, 3))

    with pytest.raises(wp.KernelError, match=r"has shape \(3, 2\), got shape=\(2, 3\)"):
        wp.launch(bad, 1, inputs=[o])
