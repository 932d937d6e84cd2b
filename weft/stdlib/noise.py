"""Perlin noise builtins (``noise``, ``pnoise``, ``curlnoise``) in the kernel language."""
import weft as wp  # noqa: F401  resolved when a kernel using these is compiled

FUNCS = {}
