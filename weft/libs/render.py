"""Stands for ``warp.render``, which weft does not provide. The module imports (Warp's examples
import it at the top and render only when asked), but constructing a renderer raises a clear
NotImplementedError: write frames with your own viewer from ``array.numpy()``."""
from .unsupported import REASONS


class _Renderer:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"weft.render.{type(self).__name__}: {REASONS['render']}")


class OpenGLRenderer(_Renderer):
    pass


class UsdRenderer(_Renderer):
    pass
