"""Shared fixtures of the geometry-core tests: the test grids and the cores compiled for the CPU."""
import os

import pytest

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "nvdb")
FILES = ("test_grid.nvdb", "test_int32_grid.nvdb", "test_vec_grid.nvdb", "torus.nvdb",
         "test_index_grid.nvdb")


def path(name):
    return os.path.join(DATA, name)


def read(name):
    with open(path(name), "rb") as f:
        return f.read()


@pytest.fixture(scope="session")
def vq():
    """``weft.native.geometry.volume_query`` compiled for the CPU (a namespace dict). Numba is imported
    here, not at module level: tests/conftest.py must set NUMBA_ENABLE_CUDASIM first."""
    from weft.native.geometry import volume_query
    return volume_query.compile_cpu()


@pytest.fixture(scope="session")
def hq():
    """``weft.native.geometry.hashgrid``'s query cores compiled for the CPU."""
    from weft.native.geometry import hashgrid
    return hashgrid.compile_cpu()


def pytest_collection_modifyitems(config, items):
    """The core tests compile the cores uncached by design (``compile_cpu(cache=False)``, each
    session): exempt from the warm-cache check."""
    for item in items:
        if {"vq", "hq"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cold)
