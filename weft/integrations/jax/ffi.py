"""weft kernels inside JAX through XLA's foreign-function interface: ``wp.jax_kernel`` and
``wp.jax_callable``."""
