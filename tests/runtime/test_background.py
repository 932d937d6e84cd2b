"""A launch recorded on a tape has its CPU adjoint compiled meanwhile by a helper process
(weft.runtime.background): backward loads it from the cache instead of compiling it here, the
gradients are the same, and with a warm cache (or the helper switched off) no helper runs."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SCRIPT = r"""
import json, sys
sys.path.insert(0, {here!r})
import numpy as np
import weft as wp
from weft.runtime import background, cache
import ahead_kernels as ak
wp.config.quiet = True
x = wp.array(np.arange(300, dtype=np.float32) / 100, requires_grad=True)
y = wp.zeros(300, dtype=float, requires_grad=True)
s = wp.zeros(1, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(ak.square, 300, inputs=[x, y])
    wp.launch(ak.total, 300, inputs=[y, s, 0.5])
tape.backward(s)
here = [c.rsplit(".", 1)[1] for c in cache.STATS["compiled"] if c.startswith("weft_generated.")]
print(json.dumps({{"here": sorted(here), "helper": background._proc is not None,
                  "grad": x.grad.numpy().tolist()}}))
"""


def _run(cache, **env):
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache), **env,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(here=HERE)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check_grad(res):
    import numpy as np
    np.testing.assert_allclose(res["grad"], np.arange(300) / 100, rtol=1e-6)


@pytest.mark.cold
def test_adjoints_compiled_by_the_helper(tmp_path):
    res = _run(tmp_path / "cache")
    _check_grad(res)
    assert res["helper"]
    # this process compiled the forwards; the helper the adjoints, loaded here from the cache
    assert res["here"] == ["square__fwd", "total__fwd"]
    warm = _run(tmp_path / "cache")  # a new process with a warm cache: no helper, no compile
    _check_grad(warm)
    assert not warm["helper"] and warm["here"] == []


@pytest.mark.cold
def test_helper_switched_off(tmp_path):
    res = _run(tmp_path / "cache", WEFT_BACKGROUND_COMPILE="0")
    _check_grad(res)
    assert not res["helper"]
    assert res["here"] == ["square__adj", "square__fwd", "total__adj", "total__fwd"]
