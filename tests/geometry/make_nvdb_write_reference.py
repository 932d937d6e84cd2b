"""Writes ``tests/geometry/nvdb_write_reference.py``: size and SHA-256 of the NanoVDB buffers
(``Volume.array()``) that NVIDIA Warp 1.19 builds for the volumes of ``CASES``, which
``test_nanovdb_write.py`` builds with weft and encodes with ``weft.native.geometry.nanovdb_write``.

Run with a Python that has Warp 1.19 installed, from the repository root::

    python tests/geometry/make_nvdb_write_reference.py tests/geometry/nvdb_write_reference.py
"""
import sys
import hashlib

import numpy as np

TILES = np.array([[0, 0, 0], [8, 0, 0], [-8, 0, 128], [0, 0, 5000], [3, 9, 17]], np.int32)
VOXELS = np.array([[1, 2, 3], [9, 9, 9], [7, 8, 9], [-1, 0, 0], [1, 2, 3], [-4097, 5, 300]],
                  np.int32)
DENSE = np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7) * 0.5 - 3.0


def cases(wp):
    """name -> a function making the volume with module ``wp`` (Warp or weft)."""
    return {
        "TILES_F": lambda: wp.Volume.allocate_by_tiles(wp.array(TILES, dtype=wp.int32), 0.5,
                                                       2.5, (1.0, 2.0, 3.0)),
        "TILES_INDEX": lambda: wp.Volume.allocate_by_tiles(wp.array(TILES, dtype=wp.int32),
                                                           (0.5, 1.0, 2.0), None),
        "TILES_VEC3D": lambda: wp.Volume.allocate_by_tiles(wp.array(TILES, dtype=wp.int32), 1.0,
                                                           wp.vec3d(1.0, 2.0, 3.0)),
        "TILES_INT64": lambda: wp.Volume.allocate_by_tiles(wp.array(TILES, dtype=wp.int32), 1.0,
                                                           wp.int64(-5)),
        "TILES_VEC4F": lambda: wp.Volume.allocate_by_tiles(wp.array(TILES, dtype=wp.int32), 1.0,
                                                           wp.vec4(1.0, 2.0, 3.0, 4.0)),
        "VOXELS": lambda: wp.Volume.allocate_by_voxels(wp.array(VOXELS, dtype=wp.int32), 0.25,
                                                       (0.0, 5.0, 10.0)),
        "NUMPY_F": lambda: wp.Volume.load_from_numpy(DENSE, (1.0, 2.0, 3.0), 0.5, -1.0),
    }


def digest(buf):
    return len(buf), hashlib.sha256(bytes(buf)).hexdigest()


def main():
    import warp as wp
    wp.config.quiet = True
    wp.init()
    lines = ['"""Size and SHA-256 of Warp 1.19\'s Volume.array() buffers '
             '(make_nvdb_write_reference.py)."""', "BUFFERS = {"]
    for name, make in cases(wp).items():
        vol = make()                      # keep it alive while its buffer is read
        lines.append(f"    {name!r}: {digest(vol.array().numpy())!r},")
    lines.append("}")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
