"""Fixtures of the tile tests (weft is imported in them, not here: a conftest named on the
command line loads before ``tests/conftest.py`` has chosen Numba's CUDA simulator)."""
import pytest


@pytest.fixture
def cpu_blocks():
    """Cooperative CPU blocks (``wp.config.enable_cpu_blocks``) for the test, restored after."""
    import weft as wp
    prev = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = True
    yield
    wp.config.enable_cpu_blocks = prev
