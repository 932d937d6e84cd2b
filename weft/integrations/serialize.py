"""Pickling weft's objects, to send them to other processes (Dask workers, ``multiprocessing``).

What crosses a process boundary, and how:

- ``wp.array``: its data, dtype, shape, device alias, ``requires_grad`` and the contents of its
  ``.grad`` (a copy: a view arrives as an array of its own; :mod:`weft.runtime.array`).
- ``@wp.kernel`` and ``@wp.func``: by reference to their module when they are defined at the top
  level of an importable module (not ``__main__``); by source otherwise (``__main__``, a kernel
  made inside a function, a module registered with ``cloudpickle.register_pickle_by_value``):
  the function's source text, its line numbers and the values of the names it reads (globals
  and closure), re-declared in the receiving process. A reference also carries the source when
  the names it reads are simple values (modules, weft's names and types, numbers, numpy data,
  other kernels and funcs), so a worker that cannot import the module rebuilds it from source.
  The rebuilt kernel has the same cache key as the original: a worker on the same machine loads
  the machine code the client compiled. In one process, unpickling gives back the same object.
- value types: vectors, matrices, quaternions, transforms (``wp.types.vector(5, float)``
  included, through :mod:`weft.types`' names), ``@wp.struct`` classes and instances, PyTree
  containers (lists, tuples, dicts, dataclasses of arrays), a tape's ``gradients`` (a dict of
  arrays).
- what belongs to this process cannot cross and raises ``TypeError`` naming it (:func:`refuse`):
  a ``wp.Tape`` (its records hold compiled kernels and this process's memory: send its
  gradients), a graph capture, a recorded launch, geometry objects whose ``id`` is an address
  here (``wp.Mesh``, ``wp.Bvh``, ``wp.HashGrid``, ``wp.Volume``: build them on the worker).

Kernels and funcs reduce through :mod:`weft.stdlib.func_pickle` (their classes' module), the
runtime's objects through their own ``__reduce__``; :func:`refuse` is
:func:`weft.core.errors.refuse`.
"""
from ..core.errors import refuse
from ..stdlib.func_pickle import reduce_function
# the names pickles of kernels and funcs held before their reducers moved to
# weft.stdlib.func_pickle: such a pickle still loads
from ..stdlib.func_pickle import _Module, _resolve, _WeftName  # noqa: F401

__all__ = ["refuse", "reduce_function"]
