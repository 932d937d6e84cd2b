"""Integer ``%`` and ``//`` keep their type (weft's helpers compute in 64 bits): a vec4i built of
``(d + 1) % n`` is indexed with a runtime index (MuJoCo Warp's ``_polygon_quad``). This was an
internal error (a Numba tuple of int32 and int64 components). Values are Warp 1.19's for the
same kernel."""
import numpy as np

import weft as wp


@wp.func
def quad(n: int) -> wp.vec4i:
    d = int(3)
    c = int(2)
    res = wp.vec4i(0, 1, c, d)
    for a in range(n):
        d = (d + 1) % n
        c = (c + 5) // 2
        res = wp.vec4i(a, 1, c, d)
    return res


@wp.kernel
def quads(n: int, out: wp.array(dtype=int), small: wp.array(dtype=wp.int8)):
    q = quad(n)
    for i in range(4):
        out[i] = q[i]
    s = wp.int8(7) % wp.int8(n)  # a narrow integer stays narrow
    small[0] = s // wp.int8(2)


def test_integer_mod_and_floordiv_keep_their_type():
    out = wp.zeros(4, dtype=int)
    small = wp.zeros(1, dtype=wp.int8)
    wp.launch(quads, 1, inputs=[5, out, small])
    np.testing.assert_array_equal(out.numpy(), [4, 1, 4, 3])
    assert small.numpy()[0] == 1
