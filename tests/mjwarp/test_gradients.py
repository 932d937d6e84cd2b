"""MuJoCo Warp's ``step`` differentiated by weft (``examples/mjwarp_gradients.py``): the gradients
of a cart-pole rollout against central differences of MuJoCo's own float64 steps and against
MuJoCo's one-step derivatives (``mjd_transitionFD``) chained along the trajectory.

Needs ``mujoco`` and ``mujoco-warp`` (installed as the README says, without Warp; CI installs
them so): skipped without them. Each run is a subprocess, where ``weft.as_warp()`` gives MuJoCo
Warp's ``import warp`` to weft. Two runs of the same example:

- **interpreted** (CI): ``NUMBA_DISABLE_JIT=1``, so weft's generated forward and adjoint
  modules, the same source Numba compiles, run as Python (about a minute, against tens of
  minutes of cold compiles of MuJoCo Warp's 140 modules);
- **compiled** (marked ``mjwarp``, ``python -m pytest -m mjwarp``): the same rollout with every
  kernel compiled by Numba, as users run it.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.mjwarp
def test_rollout_gradients_match_finite_differences_and_mjd_transition_fd(request):
    expr = request.config.getoption("markexpr") or ""
    if "mjwarp" not in expr or "not mjwarp" in expr:
        pytest.skip("MuJoCo Warp's compiled gradients run only with -m mjwarp")
    check_rollout({})


@pytest.mark.uncached  # plain Python, a fresh cache of its own
def test_rollout_gradients_interpreted(tmp_path):
    """The generated code run as Python: the same gradients, values and checks."""
    check_rollout({"NUMBA_DISABLE_JIT": "1", "WEFT_CACHE_DIR": str(tmp_path)},
                  drop=("WEFT_EXPECT_WARM",))  # nothing is compiled: its own, fresh cache


def check_rollout(extra_env, drop=()):
    pytest.importorskip("mujoco")
    pytest.importorskip("mujoco_warp")
    code = ("import json, sys; sys.path.insert(0, 'examples'); import mjwarp_gradients as g; "
            "loss, grads, final = g.weft_gradients(); "
            "ref = g.mujoco_rollout(g.QPOS0, g.QVEL0, g.CTRL); "
            "tl = lambda xs: [x.tolist() for x in xs]; "
            "print(json.dumps([loss, tl(grads), tl(final), [ref[0].tolist(), ref[1].tolist(), "
            "ref[2]], tl(g.finite_differences()), tl(g.transition_gradients())]))")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    for name in drop:
        env.pop(name, None)
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=3600)
    assert out.returncode == 0, out.stderr[-4000:]
    loss, grads, final, (qpos, qvel, loss64), fd, chained = json.loads(
        out.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(final[0], qpos, rtol=0, atol=2e-5)  # float32 steps
    np.testing.assert_allclose(final[1], qvel, rtol=0, atol=2e-4)
    np.testing.assert_allclose(loss, loss64, rtol=0, atol=2e-4)
    for got, want, other in zip(grads, fd, chained):
        np.testing.assert_allclose(want, other, rtol=1e-5, atol=1e-7)  # MuJoCo's two agree
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4)
