"""MuJoCo Warp's ``step`` on the CPU: first step cold and warm, and later steps, weft against Warp.

    python benchmarks/bench_mjwarp_step.py [--steps 200] [--impl weft,warp] [--model pendulum|cartpole]

Each implementation runs the same program in new processes: once with empty kernel caches
(cold), then again against the caches that run filled (warm). The program builds the model
(``put_model``, ``put_data``), times its first ``mjwarp.step`` (which compiles, or loads, every
kernel the step launches), then ``--steps`` more. weft runs MuJoCo Warp through
``weft.as_warp()``; Warp runs it as installed. The final ``qpos`` of the two is printed and
must agree. Needs ``mujoco`` and ``mujoco-warp`` (see the README); Warp's rows need
``warp-lang``.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODELS = {
    "pendulum": """
<mujoco model="pendulum">
  <option timestep="0.01"/>
  <worldbody>
    <body name="pole" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.02"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.6" size="0.04" mass="0.3"/>
    </body>
  </worldbody>
</mujoco>
""",
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _example_model():
    """The cart-pole of ``examples/mjwarp_gradients.py`` (its ``XML``), read without importing
    it (the example hands ``import warp`` to weft when imported)."""
    import ast
    with open(os.path.join(ROOT, "examples", "mjwarp_gradients.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "XML"
                                                for t in node.targets):
            return node.value.value
    raise SystemExit("examples/mjwarp_gradients.py has no XML")


CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
if os.environ["BENCH_IMPL"] == "weft":
    import weft
    weft.as_warp()
import mujoco
import mujoco_warp as mjw
import warp as wp
wp.config.quiet = True
mjm = mujoco.MjModel.from_xml_string(os.environ["BENCH_XML"])
mjd = mujoco.MjData(mjm)
mjd.qpos[-1] = 0.3
with wp.ScopedDevice("cpu"):
    m = mjw.put_model(mjm)
    d = mjw.put_data(mjm, mjd)
    t1 = time.perf_counter()
    mjw.step(m, d)
    wp.synchronize()
    t2 = time.perf_counter()
    n = int(os.environ["BENCH_STEPS"])
    for _ in range(n):
        mjw.step(m, d)
    wp.synchronize()
    t3 = time.perf_counter()
print(json.dumps({"setup": t1 - t0, "first": t2 - t1, "later_ms": (t3 - t2) / n * 1e3,
                  "qpos": d.qpos.numpy()[0].tolist()}))
"""


def run(impl, caches, xml, steps):
    env = dict(os.environ, BENCH_IMPL=impl, BENCH_XML=xml, BENCH_STEPS=str(steps))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both start from cached bytecode, as users do
    if impl == "weft":
        env["WEFT_CACHE_DIR"] = os.path.join(caches, "weft")
        env["NUMBA_CACHE_DIR"] = os.path.join(caches, "numba")
    else:
        env["WARP_CACHE_PATH"] = os.path.join(caches, "warp")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{impl} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process"] = wall
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--model", choices=["pendulum", "cartpole"], default="pendulum",
                    help="cartpole: the gradient example's model")
    ap.add_argument("--impl", default="weft,warp",
                    help="which to run, in order (Warp's rows only where warp-lang is installed)")
    args = ap.parse_args()
    import importlib.util
    impls = [i for i in args.impl.split(",")
             if i == "weft" or (i == "warp" and importlib.util.find_spec("warp") is not None)]
    xml = MODELS["pendulum"] if args.model == "pendulum" else _example_model()
    rows = {}
    for impl in impls:
        with tempfile.TemporaryDirectory(prefix=f"bench-mjw-{impl}-") as caches:
            os.makedirs(os.path.join(caches, "weft"), mode=0o700)
            cold = run(impl, caches, xml, args.steps)
            warm = run(impl, caches, xml, args.steps)
        rows[impl] = (cold, warm)
    print(f"MuJoCo Warp step, {args.model}, CPU; seconds (whole process in parentheses)\n")
    both = impls == ["weft", "warp"]
    print("| | " + " | ".join(impls) + (" | weft/Warp |" if both else " |"))
    print("|---|" + "---:|" * (len(impls) + both))

    def line(label, get, fmt):
        vals = [get(rows[i]) for i in impls]
        cells = [fmt(v) for v in vals]
        ratio = f" {vals[0][0] / vals[1][0]:.2f}x |" if impls == ["weft", "warp"] else ""
        print(f"| {label} | " + " | ".join(cells) + " |" + ratio)

    line("first step, cold", lambda r: (r[0]["first"], r[0]["process"]),
         lambda v: f"{v[0]:.2f} ({v[1]:.1f})")
    line("first step, warm", lambda r: (r[1]["first"], r[1]["process"]),
         lambda v: f"{v[0]:.2f} ({v[1]:.1f})")
    line(f"later steps (ms, mean of {args.steps})", lambda r: (r[1]["later_ms"],),
         lambda v: f"{v[0]:.2f}")
    qpos = {i: rows[i][1]["qpos"] for i in impls}
    print("\nfinal qpos: " + "; ".join(f"{i} {[round(q, 6) for q in v]}"
                                      for i, v in qpos.items()))
    if both and max(abs(a - b) for a, b in zip(qpos["weft"], qpos["warp"])) > 1e-4:
        raise SystemExit("the two final states differ")


if __name__ == "__main__":
    main()
