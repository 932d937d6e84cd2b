"""Tests of the CUDA target (under Numba's simulator unless ``WEFT_TEST_REAL_CUDA=1``)."""


def launch_dims(launch):
    """The grid and block of a configured CUDA launch (``kernel[grid, block]``) as 3-tuples,
    from numba-cuda's launch configuration (``griddim``, ``blockdim``, as given) or the
    simulator's kernel (``grid_dim``, ``block_dim``, normalised already)."""
    if hasattr(launch, "griddim"):
        from numba.cuda.errors import normalize_kernel_dimensions
        return tuple(tuple(d) for d in normalize_kernel_dimensions(launch.griddim,
                                                                   launch.blockdim))
    return tuple(launch.grid_dim), tuple(launch.block_dim)
