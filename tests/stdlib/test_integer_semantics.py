"""Integer and float ``%``, ``//`` and ``/`` with negative operands, as NVIDIA Warp 1.19 computes
them on the CPU (values printed by Warp for this kernel): ``%`` keeps the sign of the dividend
(C), ``//`` floors, integer ``/`` truncates toward zero."""
import numpy as np

import weft as wp


@wp.kernel
def ops(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array2d(dtype=int),
        fa: wp.array(dtype=float), fb: wp.array(dtype=float), fout: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = a[i] % b[i]
    out[i, 1] = a[i] // b[i]
    out[i, 2] = a[i] / b[i]
    fout[i, 0] = fa[i] % fb[i]
    fout[i, 1] = fa[i] // fb[i]


def test_matches_warp():
    a = np.array([-7, 7, -7, 7, 0], np.int32)
    b = np.array([2, -2, -2, 2, 3], np.int32)
    out = wp.zeros((5, 3), dtype=int)
    fout = wp.zeros((5, 2), dtype=float)
    wp.launch(ops, 5, inputs=[wp.array(a), wp.array(b), out, wp.array(a.astype(np.float32)),
                              wp.array(b.astype(np.float32)), fout])
    warp_int = [[-1, -4, -3], [1, -4, -3], [-1, 3, 3], [1, 3, 3], [0, 0, 0]]
    warp_float = [[-1.0, -4.0], [1.0, -4.0], [-1.0, 3.0], [1.0, 3.0], [0.0, 0.0]]
    np.testing.assert_array_equal(out.numpy(), warp_int)
    np.testing.assert_array_equal(fout.numpy(), warp_float)
