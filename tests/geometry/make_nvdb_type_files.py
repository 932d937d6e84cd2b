"""Writes ``tests/data/nvdb/warp_<type>.nvdb``: small grids of the value types the shipped files
lack (double, int64, uint32, Vec3d, Vec4f, Vec4d), built and saved by NVIDIA Warp 1.19 (its own
NanoVDB writer, ZIP codec), with values that vary per voxel.

Run with a Python that has Warp 1.19 installed, from the repository root::

    python tests/geometry/make_nvdb_type_files.py tests/data/nvdb

then regenerate ``volume_reference.py`` (``make_volume_reference.py``).
"""
import os
import sys

import numpy as np

TILES = np.array([[-8, 0, 0], [0, 0, 0], [0, 8, -8], [4096, 0, 0]], dtype=np.int32)


def main(out):
    import warp as wp
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def fill(vid: wp.uint64, ijk: wp.array2d(dtype=wp.int32), vals: wp.array(dtype=wp.float64),
             which: int):
        t = wp.tid()
        i = ijk[t, 0]
        j = ijk[t, 1]
        k = ijk[t, 2]
        x = vals[t]
        if which == 0:
            wp.volume_store(vid, i, j, k, x)
        elif which == 1:
            wp.volume_store(vid, i, j, k, wp.int64(x))
        elif which == 2:
            wp.volume_store(vid, i, j, k, wp.uint32(wp.abs(x)))
        elif which == 3:
            wp.volume_store(vid, i, j, k, wp.vec3d(x, -x, wp.float64(0.5) * x))
        elif which == 4:
            wp.volume_store(vid, i, j, k, wp.vec4f(wp.float32(x), wp.float32(-x), 1.0,
                                                   wp.float32(x) * 0.25))
        elif which == 5:
            wp.volume_store(vid, i, j, k, wp.vec4d(x, -x, wp.float64(1.0), wp.float64(0.25) * x))

    cases = [("double", wp.float64(-1.5)), ("int64", wp.int64(-7)), ("uint32", wp.uint32(3)),
             ("Vec3d", wp.vec3d(1.0, 2.0, 3.0)), ("Vec4f", wp.vec4f(0.5, 1.5, 2.5, 3.5)),
             ("Vec4d", wp.vec4d(-1.0, 0.0, 1.0, 2.0))]
    for which, (name, bg) in enumerate(cases):
        v = wp.Volume.allocate_by_tiles(wp.array(TILES, dtype=wp.int32),
                                        voxel_size=(0.5, 0.25, 2.0), bg_value=bg,
                                        translation=(1.0, -2.0, 0.5), device="cpu")
        ijk = v.get_voxels().numpy()
        vals = (np.sin(ijk[:, 0] * 0.7) * 100 + ijk[:, 1] * 3.25 - ijk[:, 2]).astype(np.float64)
        wp.launch(fill, len(ijk), inputs=[v.id, wp.array(ijk, dtype=wp.int32),
                                          wp.array(vals, dtype=wp.float64), which], device="cpu")
        v.save_to_nvdb(os.path.join(out, f"warp_{name}.nvdb"), codec="zip")


if __name__ == "__main__":
    main(sys.argv[1])
