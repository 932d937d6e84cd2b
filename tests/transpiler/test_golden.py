"""Generated source is deterministic and pinned: compare with golden files.

After an intended change to the generators, regenerate them with
``WEFT_UPDATE_GOLDEN=1 python -m pytest tests/transpiler/test_golden.py`` and review the diff.
"""
import os

import pytest

from . import golden_kernels as gk

HERE = os.path.join(os.path.dirname(__file__), "golden")


def _body(src):
    # the header names weft's version; the code below it is what is pinned
    return src.split('"""', 2)[2]


@pytest.mark.parametrize("kernel,target", [(gk.step, "cpu"), (gk.power_loop, "cpu"),
                                           (gk.power_loop, "cuda")])
def test_generated_source_matches_golden(kernel, target):
    src = _body(kernel.source("all", target=target))
    path = os.path.join(HERE, f"{kernel.key}_{target}.py.txt")
    if os.environ.get("WEFT_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(src)
    with open(path) as f:
        assert src == f.read(), f"generated source of {kernel.key} changed; see {path}"
