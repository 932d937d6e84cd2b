"""Warp packages that weft does not provide: importing them raises a clear ImportError."""

REASONS = {
    "render": "weft does not render: warp.render's OpenGL and USD viewers have no weft "
              "counterpart (run Warp's examples with --stage_path None or --headless); write "
              "frames with your own viewer from array.numpy()",
    "sim": "warp.sim is not part of weft (it left Warp itself in 1.10 for the Newton physics "
           "engine)",
    "fem": "weft does not include warp.fem (Warp's finite-element library)",
}


def refuse(name):
    """Raise the ImportError for ``weft.<name>`` (used by those stub modules)."""
    raise ImportError(f"weft.{name}: {REASONS[name]}", name=f"weft.{name}")
