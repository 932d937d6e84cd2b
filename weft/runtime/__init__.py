"""Layer 5: running kernels: arrays, devices, kernels and modules (loading, the kernel cache,
compiling ahead), argument packing, launches, graph capture, structs, builtins at Python scope
(``host``), and the geometry objects users build (``wp.Mesh``, ``wp.Bvh``, ``wp.HashGrid``,
``wp.Volume``) on the cores in ``weft.native.geometry``.

Imports core, native, stdlib and transpiler. It knows nothing of tapes: what whole-program
differentiation needs from a launch or an array write it asks through ``hooks``, which
``weft.autodiff`` fills. See ``docs/architecture.md``.
"""
