"""Fixtures of the tile tests."""
import pytest

import weft as wp


@pytest.fixture
def cpu_blocks():
    """Cooperative CPU blocks (``wp.config.enable_cpu_blocks``) for the test, restored after."""
    prev = wp.config.enable_cpu_blocks
    wp.config.enable_cpu_blocks = True
    yield
    wp.config.enable_cpu_blocks = prev
