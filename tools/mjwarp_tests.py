"""Run MuJoCo Warp's own test files on the CPU under weft (or under Warp), and print per file
what passed (issue 39; results and causes in ``docs/mujoco-warp.md``).

    pip install mujoco absl-py "etils[epath]" && pip install --no-deps mujoco-warp==4.0.0
    pip install warp-lang==1.19.0           # only for --impl warp
    python tools/mjwarp_tests.py math_test io_test smooth_test            # under weft
    python tools/mjwarp_tests.py --impl warp math_test                    # under Warp

Each file runs in its own pytest process in MuJoCo Warp's installed package, with its own
``--cpu`` option. Under weft, ``tests/warp_compat/shim`` goes first on the path, so its
``import warp`` is weft (pytest's ``--import-mode=append`` keeps the installed warp-lang
behind it). ``tests/mjwarp/test_mjwarp_suite.py`` runs it as a test under ``-m mjwarp``
(an hour cold: CI, which installs MuJoCo Warp but never Warp, does not run it).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(package_dir, name, impl, timeout):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if impl == "weft":
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "tests", "warp_compat", "shim"),
                                             ROOT])
    cmd = [sys.executable, "-m", "pytest", os.path.join("_src", f"{name}.py"), "--cpu", "-q",
           "-p", "no:xdist", "-p", "no:cacheprovider", "--import-mode=append", "-rf"]
    try:
        out = subprocess.run(cmd, cwd=package_dir, env=env, capture_output=True, text=True,
                             timeout=timeout).stdout
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += "\ntimed out"
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", out)}
    causes = {}
    for line in out.splitlines():
        m = re.match(r"E\s+([\w.]+(?:Error|Exception)): (.*)", line)
        if m:
            causes[m.group(0)[:160]] = causes.get(m.group(0)[:160], 0) + 1
    return counts, causes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="test modules of mujoco_warp/_src (math_test, ...)")
    ap.add_argument("--impl", choices=["weft", "warp"], default="weft")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per file")
    a = ap.parse_args()
    spec = importlib.util.find_spec("mujoco_warp")
    if spec is None:
        sys.exit("mujoco-warp is not installed (pip install mujoco-warp==4.0.0)")
    package_dir = os.path.dirname(spec.origin)
    for name in a.files:
        counts, causes = run(package_dir, name, a.impl, a.timeout)
        print(f"{name:24s} passed {counts.get('passed', 0):4d} failed {counts.get('failed', 0):4d} "
              f"skipped {counts.get('skipped', 0):3d}", flush=True)
        for text, n in sorted(causes.items(), key=lambda kv: -kv[1])[:8]:
            print(f"    {n:4d}  {text}")


if __name__ == "__main__":
    main()
