"""Layer 7b: weft inside other programs: pickling for other processes (``serialize``), Dask
(``distributed``, users' ``weft.distributed``) and the command-line transpiler (``cli``,
``python -m weft``).

Imports the layers below; independent of ``weft.libs``. See ``docs/architecture.md``.
"""
