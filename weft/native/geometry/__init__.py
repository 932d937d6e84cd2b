"""Cores of weft's geometry structures: host-side builds (compiled Numba code on flat numpy
arrays) and query algorithms written once as "portable" plain-Python functions that compile for
the CPU (``numba.njit``) and for CUDA (``cuda.jit(device=True)``) and also run uncompiled.

Modules (each documents its data layout):

- ``nanovdb``: reader of NanoVDB ``.nvdb`` files into flat arrays (``NanoVDBError`` on bad
  input), with ``nanovdb_format`` (constants, layouts, checked reads) and ``nanovdb_tree``
  (node arrays checked and re-packed)
- ``volume``: the host side of ``wp.Volume`` (load, allocate, metadata)
- ``volume_query``: portable volume queries (lookup, sample, gradient, store, transforms), on
  the traversal primitives of ``volume_traverse``
- ``hashgrid``: ``wp.HashGrid`` (parallel counting-sort build, neighbour query iterator)
"""
