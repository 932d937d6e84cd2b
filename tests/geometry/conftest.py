"""Shared fixtures of the geometry-core tests: the test grids and the cores compiled for the CPU."""
import os

import pytest

from tests.geometry.mesh_fixtures import cached_jits

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
    return volume_query.compile_for(*cached_jits(volume_query.CPU_JIT_OPTIONS))


@pytest.fixture(scope="session")
def hq():
    """``weft.native.geometry.hashgrid``'s query cores compiled for the CPU."""
    from weft.native.geometry import hashgrid
    return hashgrid.compile_for(*cached_jits(hashgrid.CPU_JIT_OPTIONS))

