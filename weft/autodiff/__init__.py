"""Layer 6: whole-program differentiation on top of launches: the tape (``tape``,
``tape_graph``), forward mode (``forward_mode``, ``wp.jvp``), Jacobians and Hessian-vector
products (``jacobian``, ``hvp``), and the Dr.Jit layer: PyTrees of arrays (``tree``), custom
differentiable ops (``custom``), checkpointed loops (``loop``, ``checkpoint``).

Imports the layers below (core, native, stdlib, transpiler, runtime). The runtime reaches the
tape only through the hooks this layer registers (``weft.runtime.hooks``). See
``docs/architecture.md``.
"""
