"""``warp.examples``'s helper: where the example programs find their assets (meshes, volumes).

weft ships no assets. ``get_asset_directory()`` returns ``$WEFT_ASSET_DIR`` when set (point it
at Warp's ``warp/examples/assets`` folder, or any folder with the files an example opens).
"""
from __future__ import annotations

import os


def get_asset_directory():
    path = os.environ.get("WEFT_ASSET_DIR")
    if not path:
        raise FileNotFoundError(
            "weft.examples.get_asset_directory(): weft ships no example assets; set "
            "WEFT_ASSET_DIR to a folder holding them (Warp's are in the warp-lang wheel under "
            "warp/examples/assets)")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"WEFT_ASSET_DIR={path!r} is not a directory")
    return path
