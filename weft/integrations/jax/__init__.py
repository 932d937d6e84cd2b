"""JAX interop: ``wp.from_jax``, ``wp.to_jax`` and the dtype and device conversions."""
