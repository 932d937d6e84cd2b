#!/bin/bash
# Reproduces the open bug of stop 79 (docs/performance.md, "A failed compile, then wrong
# gradients"): with a warm cache, the files listed in failed_compile_sequence.txt run in one
# process, plus one test that makes numba.njit fail to type a function, then
# tests/tiles/test_cpu_blocks.py and tests/textures/test_textures.py report wrong gradients.
# Without the failing compile they pass.
#   bash tools/repro/failed_compile_then_wrong_gradients.sh   (from the repository root; twice:
#   the first run fills the cache)
set -e
cat > /tmp/weft_failed_compile_test.py <<'PY'
import numba, numpy as np, pytest
from numba.core.errors import TypingError
from weft.native import cuda_views


def test_a_failed_numba_compile():
    @numba.njit
    def of_a_transpose(a):
        return cuda_views._c_view(a.T, 12)
    with pytest.raises(TypingError):
        of_a_transpose(np.zeros((3, 4), np.float32))
PY
cp /tmp/weft_failed_compile_test.py tests/cuda/test_zz_failed_compile_repro.py
trap 'rm -f tests/cuda/test_zz_failed_compile_repro.py' EXIT
# the failing compile where the worker met it: right after tests/cuda/test_real_gpu_paths.py
# (placed after every other file, it does not reproduce)
files=$(grep -v '^#' tools/repro/failed_compile_sequence.txt | \
    sed 's|^tests/cuda/test_real_gpu_paths.py$|& tests/cuda/test_zz_failed_compile_repro.py|')
WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-repro-cache} python -m pytest -q -p no:cacheprovider \
    -m "not ptx and not uncached" $files
