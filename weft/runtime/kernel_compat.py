"""``wp.Kernel(func=..., key=..., module=..., options=...)``: Warp's constructor for kernels made
without the decorator (Warp's tests and programs build kernels per dtype this way)::

    k = wp.Kernel(func=scale_fn, key=f"scale_{dtype.__name__}")

It makes the same kernel ``@wp.kernel`` makes (an instance of weft's kernel class, and
``isinstance(k, wp.Kernel)`` holds for decorated kernels too). ``module`` is accepted and
ignored: weft compiles each kernel on its own.

Warp programs read ``kernel.module.options`` (Warp's per-module options) where weft's
``kernel.module`` is the generated Python module; for kernels made here, ``kernel.module`` is a
view that answers ``options``, ``name`` and ``load`` from :mod:`weft.runtime.modules` without
compiling anything, and everything else from the generated module (compiled on first such use).
This belongs in weft's kernel class; it lives here until the kernel runtime adopts it.
"""
from __future__ import annotations

import re

from . import kernel as _kernel
from .modules import get_module


class _KernelMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _kernel.Kernel)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _kernel.Kernel)


class Kernel(_kernel.Kernel, metaclass=_KernelMeta):
    """A kernel from a Python function (see the module docstring)."""

    def __init__(self, func=None, key=None, module=None, options=None, code_transformers=None,
                 source=None):
        if func is None:
            raise TypeError("wp.Kernel() needs the kernel function (func=...)")
        super().__init__(func, options)
        if key is not None:
            # weft names generated functions after the key, so it must be an identifier
            self.key = key if str(key).isidentifier() else re.sub(r"\W|^(?=\d)", "_", str(key))

    @property
    def module(self):
        return _ModuleView(self)

    @property
    def meta(self):
        if self._meta is None:
            _kernel.Kernel.module.fget(self)  # loads the generated module and its metadata
        return self._meta


class _ModuleView:
    """``kernel.module`` of a :class:`Kernel`: Warp's module options in front of weft's
    generated module (see the module docstring)."""

    __slots__ = ("_kernel",)

    def __init__(self, kernel):
        object.__setattr__(self, "_kernel", kernel)

    @property
    def _warp(self):
        return get_module(self._kernel.func.__module__)

    @property
    def options(self):
        return self._warp.options

    @property
    def name(self):
        return self._warp.name

    def load(self, device=None, block_dim=None):
        return self._warp.load(device, block_dim)

    def __getattr__(self, name):
        return getattr(_kernel.Kernel.module.fget(self._kernel), name)
