"""Kernels for tests/runtime/test_load_module.py and test_background.py (a module of their own,
loaded ahead), and the program both run in a new process: ``run_program``."""
import json
import os
import subprocess
import sys

import weft as wp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel
def total(y: wp.array(dtype=float), s: wp.array(dtype=float), scale: float):
    i = wp.tid()
    wp.atomic_add(s, 0, scale * y[i])


PROGRAM = r"""
import json, sys
sys.path.insert(0, {here!r})
import numpy as np
import weft as wp
from weft.runtime import background, cache
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
{settle}
tape.backward(s)
extra = None
{after}
late = [c for c in cache.STATS["compiled"] if c.startswith("weft_generated.")
        and c not in ahead]
print(json.dumps({{"ahead": ahead, "late": late, "helper": background._proc is not None,
                  "s": float(s.numpy()[0]), "grad": x.grad.numpy().tolist(), "extra": extra}}))
"""


def run_program(cache, load="", settle="", after="", **env):
    """Run ``PROGRAM`` (``load``: a statement before the launches, ``settle``: one before the
    backward pass, ``after``: statements after it, which may set ``extra``) in a new process
    with cache ``cache``: ``{"ahead", "late"}`` (generated functions compiled in that process
    before and after the launches began), ``"helper"`` (a background helper started), the
    loss ``"s"``, the gradient ``"grad"`` and ``"extra"``."""
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache), **env,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    program = PROGRAM.format(here=HERE, load=load, settle=settle, after=after)
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_values(res):
    """The loss 0.5 sum x^2 and its gradient x, for x = 0, 0.01, ..., 2.99."""
    import numpy as np
    import pytest
    x = np.arange(300, dtype=np.float64) / 100
    assert res["s"] == pytest.approx(0.5 * (x * x).sum(), rel=1e-5)
    np.testing.assert_allclose(res["grad"], x, rtol=1e-6)
