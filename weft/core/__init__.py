"""Layer 1, the bottom: settings, errors, the disk cache, timers, PyTree traversal, and the value
types of the kernel language (scalars, vectors, matrices, quaternions, transforms, arrays'
types: ``scalars``, ``typecore``, ``typeinfo``, ``values``, and ``types``, the public
``wp.types``).

Imports no other layer of weft. Every layer above may import it. See ``docs/architecture.md``.
"""
