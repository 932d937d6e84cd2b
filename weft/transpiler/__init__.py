"""Layer 4, the compiler: a kernel's source to Python source for its forward, adjoint, tangent
and second-order functions, as the list of passes in ``pipeline`` (lower, verify, analyze,
generate, prune, index_wraps, assemble, and second order), each a module stating its invariant.

Imports core, native (the vocabulary of emitted calls) and stdlib (the declarations it lowers);
never the runtime. See ``docs/architecture.md``.
"""
