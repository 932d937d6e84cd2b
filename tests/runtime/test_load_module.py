"""wp.load_module / wp.force_load compile a module's kernels ahead of their launches (forward
and adjoint, for contiguous arrays with gradients), here or shared with worker processes; the
launches then compile nothing, and a new process loads everything from the cache."""
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
from weft.runtime import cache
import ahead_kernels as ak
wp.config.quiet = True
{load}
ahead = [c for c in cache.STATS["compiled"] if c.startswith("weft_generated.")]
x = wp.array(np.arange(300, dtype=np.float32) / 100, requires_grad=True)
y = wp.zeros(300, dtype=float, requires_grad=True)
s = wp.zeros(1, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(ak.square, 300, inputs=[x, y])
    wp.launch(ak.total, 300, inputs=[y, s, 0.5])
tape.backward(s)
late = [c for c in cache.STATS["compiled"] if c.startswith("weft_generated.")
        and c not in ahead]
print(json.dumps({{"ahead": ahead, "late": late, "s": float(s.numpy()[0]),
                  "grad": x.grad.numpy().tolist()}}))
"""


def _run(load, cache, **extra):
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache), **extra,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(here=HERE, load=load)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check_values(res):
    import numpy as np
    x = np.arange(300, dtype=np.float64) / 100
    assert res["s"] == pytest.approx(0.5 * (x * x).sum(), rel=1e-5)
    np.testing.assert_allclose(res["grad"], x, rtol=1e-6)  # d/dx 0.5 x^2


@pytest.mark.cold
@pytest.mark.parametrize("load", ["wp.load_module(ak, max_workers=2)",
                                  "wp.load_module(ak)", "wp.force_load(modules=[ak])"])
def test_launches_after_load_compile_nothing(tmp_path, load):
    res = _run(load, tmp_path / "cache")
    _check_values(res)
    assert res["late"] == []  # every entry the launches call was compiled (or loaded) ahead
    if "max_workers" in load:  # the worker process compiled its share into the cache
        assert len(res["ahead"]) <= 4
    else:  # the forward and adjoint of both kernels, compiled here
        assert len(res["ahead"]) == 4
    again = _run(load, tmp_path / "cache")  # a new process: all from the cache
    _check_values(again)
    assert again["ahead"] == [] and again["late"] == []


@pytest.mark.cold
def test_without_load_the_launches_compile(tmp_path):
    res = _run("", tmp_path / "cache", WEFT_BACKGROUND_COMPILE="0")  # all compiled here
    _check_values(res)
    assert res["ahead"] == [] and len(res["late"]) == 4
