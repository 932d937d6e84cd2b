"""Layer 7a: libraries written with weft's kernels, under Warp's module names: ``utils``
(scans, sorts, run-length encoding), ``optim`` (SGD, Adam), ``sparse`` (BSR matrices), and the
stand-ins for Warp modules weft does not have yet (``render``, ``fem``, ``sim``: a clear
ImportError, from ``unsupported``). Users reach them as ``weft.utils``, ``weft.optim``, ... (``warp.utils``, ...).

Imports the layers below; independent of ``weft.integrations``. See ``docs/architecture.md``.
"""
